"""shoal from a Spark Connect client (``SparkSession.builder.remote``): the client
process has no SparkContext; the jobs size themselves from the server's
``spark.default.parallelism``. Reads, writes, table functions and jobs under Connect
are compared with the single-process answers in ``test_cluster_and_connect``."""

from __future__ import annotations

import pytest

from tests.cluster.spark_processes import Runner

pytestmark = pytest.mark.cluster


def test_a_connect_session_has_no_spark_context(connect_client: Runner) -> None:
    facts = connect_client.run("session_facts")
    assert facts == {
        "session": "pyspark.sql.connect.session.SparkSession",
        "default_parallelism": None,  # no SparkContext to ask
        "max_tasks": 4,  # two per unit of the server's spark.default.parallelism (2)
    }


def test_a_cluster_driver_knows_its_cores(cluster_driver: Runner) -> None:
    facts = cluster_driver.run("session_facts")
    assert facts == {
        "session": "pyspark.sql.session.SparkSession",
        "default_parallelism": 2,
        "max_tasks": 4,
    }
