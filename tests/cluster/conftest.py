"""Spark beyond one process: a standalone master with two workers, a Spark Connect
server, and for each a driver process (``spark_scenarios.py``) that the tests send
scenarios to. Each is started once per session and stopped at its end; the tables
live on the S3 tests' moto server."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.spark_processes import (
    Daemons,
    Runner,
    Standalone,
    clean_environment,
    start_connect_server,
    start_standalone,
)
from tests.s3.conftest import s3, s3_endpoint

__all__ = ["cluster", "cluster_driver", "connect_client", "s3", "s3_endpoint"]


def aws_environment(endpoint: str) -> dict[str, str]:
    """What the AWS SDKs need for the moto server (the ``s3`` fixture's values)."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
    }


def _runner_environment(conf: Path, endpoint: str) -> dict[str, str]:
    """The driver's environment: the S3 configuration is here for the work of the
    driver (planning, commits), not for the executors."""
    return clean_environment(conf, {**aws_environment(endpoint), "PYSPARK_PYTHON": sys.executable})


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """A standalone master and two workers (two cores, 2 GB each) on 127.0.0.1."""
    daemons = Daemons()
    try:
        yield start_standalone(daemons, tmp_path_factory.mktemp("standalone"))
    finally:
        daemons.stop()


@pytest.fixture(scope="session")
def cluster_driver(
    cluster: Standalone, s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runner]:
    """The driver of one application on the cluster, both executors registered."""
    root = tmp_path_factory.mktemp("cluster-driver")
    (root / "conf").mkdir()
    runner = Runner(
        ["--master", cluster.master_url],
        _runner_environment(root / "conf", s3_endpoint),
        root / "driver.log",
    )
    try:
        assert runner.receive() == "ready"
        yield runner
    finally:
        runner.close()


@pytest.fixture(scope="session")
def connect_client(s3_endpoint: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    """A Spark Connect server (``local[2]`` inside) and a client process connected to
    it."""
    root = tmp_path_factory.mktemp("connect")
    daemons = Daemons()
    try:
        url, _ = start_connect_server(daemons, root, aws_environment(s3_endpoint))
        (root / "client-conf").mkdir()
        runner = Runner(
            ["--remote", url],
            _runner_environment(root / "client-conf", s3_endpoint),
            root / "client.log",
        )
        try:
            assert runner.receive() == "ready"
            yield runner
        finally:
            runner.close()
    finally:
        daemons.stop()
