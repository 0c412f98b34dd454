"""The data source, the SQL table functions and the distributed jobs run twice: on a
real standalone cluster (a master and two workers, each executor in a JVM of its own
with its own Python workers, reaching S3 only through ``spark.executorEnv.*``), and
from a Spark Connect client. The tables live on S3; every answer equals what shoal's
Python API gives on a twin table in this process."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

import pyarrow as pa
import pytest

from shoal.table import Table
from tests.cluster.cluster_cases import (
    DAY1,
    DAY2,
    DAY3,
    KEYED,
    WRITES,
    compact_answer,
    event_rows,
    history,
    orphan_cutoff,
    relative,
    snapshot_ids,
    sorted_rows,
    strays,
    table_rows,
    twins,
    write_both,
)
from tests.cluster.spark_processes import Runner, Standalone
from tests.conftest import EVENTS_SCHEMA
from tests.s3.s3_support import S3Env

pytestmark = pytest.mark.cluster


@pytest.fixture(params=["cluster", "connect"])
def driver(request: pytest.FixtureRequest) -> Runner:
    """The driver of a standalone cluster application, or a Spark Connect client."""
    fixture = "cluster_driver" if request.param == "cluster" else "connect_client"
    runner: Runner = request.getfixturevalue(fixture)
    return runner


def test_both_workers_run_executors(cluster: Standalone, cluster_driver: Runner) -> None:
    state = cluster.state()
    assert state["aliveworkers"] == 2
    (app,) = state["activeapps"]
    assert app["name"] == "shoal-cluster-tests"
    assert app["cores"] == 2  # one executor on each worker


@pytest.mark.parametrize("kind", ["append", "primary-key"])
def test_data_source_writes_and_reads(s3: S3Env, driver: Runner, kind: str) -> None:
    keyed = kind == "primary-key"
    options = {"primary_keys": ["dt", "id"], "options": KEYED} if keyed else {}
    on_spark, local = twins(s3, kind.replace("-", "_"), partition_keys=["dt"], **options)
    write_both((local,), WRITES)

    got = driver.run("write_read", writes=WRITES, path=on_spark.path)

    expected = table_rows(local)
    assert got["all"] == expected == table_rows(on_spark)
    assert got["count"] == len(expected) == (7 if keyed else 10)
    assert got["filtered"] == [r for r in expected if r["id"] >= 3 and r["dt"] == DAY1]
    assert len(snapshot_ids(on_spark)) == len(snapshot_ids(local)) == 2


def test_overwrite(s3: S3Env, driver: Runner) -> None:
    on_spark, local = twins(s3, "replaced", partition_keys=["dt"])
    write_both((on_spark, local), WRITES[:1])
    values = event_rows([20, 21], DAY3)
    local.overwrite(pa.Table.from_pylist(values, schema=EVENTS_SCHEMA))

    got = driver.run("overwrite", path=on_spark.path, values=values)

    assert got == table_rows(local) == table_rows(on_spark) == sorted_rows(values)


def test_compact(s3: S3Env, driver: Runner) -> None:
    on_spark, local = history(s3, "compacted")

    got = driver.run("compact", path=on_spark.path, strategy="full")

    assert got == compact_answer(local)
    assert got["kind"] == "COMPACT"
    assert got["compacted_files"] > got["written_files"] > 0
    assert table_rows(on_spark) == table_rows(local)


def test_expire_snapshots(s3: S3Env, driver: Runner) -> None:
    on_spark, local = history(s3, "expired")
    for table in (on_spark, local):  # the files compaction replaced go with their snapshots
        table.compact("full")

    got = driver.run("expire_snapshots", path=on_spark.path, retain_max=1)

    want = local.expire_snapshots(retain_min=1, retain_max=1)
    assert got == _as_json(want)
    assert got["expired_snapshots"] == 5
    assert got["deleted_data_files"] > 0
    assert snapshot_ids(on_spark) == snapshot_ids(local) == [6]
    assert table_rows(on_spark) == table_rows(local)
    assert _file_count(s3, on_spark) == _file_count(s3, local)


def _as_json(value: Any) -> dict[str, Any]:
    """A result dataclass as it comes back through JSON."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(value).items()}


def _file_count(s3: S3Env, table: Table) -> int:
    return len(s3.list_keys(table.path.split(f"s3://{s3.bucket}/", 1)[1] + "/"))


def test_remove_orphan_files(s3: S3Env, driver: Runner) -> None:
    on_spark, local = history(s3, "orphans")
    names = strays(s3, (on_spark, local))
    cutoff = orphan_cutoff()

    got = driver.run("remove_orphan_files", path=on_spark.path, older_than=cutoff.isoformat())

    want = local.remove_orphan_files(older_than=cutoff)
    assert relative(on_spark, got["paths"]) == relative(local, want.paths) == names
    assert (got["count"], got["bytes"]) == (want.deleted_count, want.deleted_bytes) == (2, 20)
    assert table_rows(on_spark) == table_rows(local)
    assert _file_count(s3, on_spark) == _file_count(s3, local)


def test_expire_partitions(s3: S3Env, driver: Runner) -> None:
    options = {"partition.expiration-time": "3650 d", "partition.timestamp-formatter": "yyyy-MM-dd"}
    on_spark, local = twins(s3, "aged", partition_keys=["dt"], options=options)
    write_both(
        (on_spark, local), [event_rows([1], DAY1) + event_rows([2], DAY2) + event_rows([3], DAY3)]
    )
    now = "2026-11-02T12:00:00"

    got = driver.run("expire_partitions", path=on_spark.path, expiration="1 d", now=now)

    want = local.expire_partitions("1 d", now=datetime.fromisoformat(now))
    assert got == want == [{"dt": DAY1}]
    assert (
        table_rows(on_spark) == table_rows(local) == event_rows([2], DAY2) + event_rows([3], DAY3)
    )


def test_table_functions(s3: S3Env, driver: Runner) -> None:
    on_spark, local = twins(s3, "functions")
    write_both((on_spark, local), WRITES[:1])
    local.append(pa.Table.from_pylist(event_rows([100], DAY2, "-sql"), schema=EVENTS_SCHEMA))
    want = local.expire_snapshots(retain_min=1, retain_max=1)

    got = driver.run("table_functions", path=on_spark.path, name="functions")

    assert got["selected"] == [r for r in table_rows(local) if r["id"] >= 5]
    assert got["snapshots"] == [
        {"snapshot_id": 1, "commit_kind": "APPEND"},
        {"snapshot_id": 2, "commit_kind": "APPEND"},
    ]
    assert got["expired"] == [
        {
            "expired_snapshots": want.expired_snapshots,
            "deleted_data_files": want.deleted_data_files,
            "deleted_manifest_files": want.deleted_manifest_files,
        }
    ]
    assert got["after"] == [{"snapshot_id": 2}]
    assert table_rows(on_spark) == table_rows(local)


@pytest.mark.parametrize("kind", ["append", "primary-key"])
def test_row_operations(s3: S3Env, driver: Runner, kind: str) -> None:
    keyed = kind == "primary-key"
    options = {"primary_keys": ["dt", "id"], "options": KEYED} if keyed else {}
    on_spark, local = twins(s3, f"rows_{kind.replace('-', '_')}", partition_keys=["dt"], **options)
    write_both((on_spark, local), WRITES[:1])
    where, update = f"dt = '{DAY1}' and id >= 3", '{"name": "one", "value": 0.25}'
    changes = event_rows([2, 9], DAY1, "-merged")
    want_deleted = local.delete_where(where)
    want_updated = local.update_where("id = 1", set={"name": "one", "value": 0.25})
    want = (
        local.merge(pa.Table.from_pylist(changes, schema=EVENTS_SCHEMA), on=["dt", "id"])
        .when_matched_update()
        .when_not_matched_insert()
        .execute_with_counts()
    )

    got = driver.run(
        "row_operations", path=on_spark.path, where=where, update=update, changes=changes
    )

    assert got["deleted"] == [
        {"snapshot_id": 2, "commit_kind": want_deleted.commit_kind, "rows_deleted": 2}
    ]
    assert got["updated"] == [
        {"snapshot_id": 3, "commit_kind": want_updated.commit_kind, "rows_updated": 1}
    ]
    assert got["merged"] == {"snapshot_id": 4, "updated": 1, "inserted": 1}
    assert (want.snapshot.id, want.updated, want.inserted) == (4, 1, 1)
    assert table_rows(on_spark) == table_rows(local)
