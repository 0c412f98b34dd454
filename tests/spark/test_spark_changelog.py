"""Reading a table's changelog through the ``shoal`` Spark source:
``incremental-between`` with Paimon's ``incremental-between-scan-mode`` and the
``<table>$audit_log`` path for the row kinds, ranges reaching into long-lived
changelogs (changelogs that outlive their snapshots)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import shoal
from shoal.errors import InvalidOptionError, UnsupportedFeatureError
from shoal.spark.datasource import ShoalDataSource
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), False),
        pa.field("id", pa.int64(), False),
        pa.field("v", pa.string()),
        pa.field("kind", pa.string()),
    ]
)
OPTIONS = {
    "bucket": "2",
    "changelog-producer": "input",
    "rowkind.field": "kind",
    "write-only": "true",
    "changelog.num-retained.max": "100",
    "changelog.time-retained": "2 h",
}


def batch(step: int, rows: list[tuple[str, str, int]]) -> pa.Table:
    """Rows (kind, dt, id) of one write."""
    return pa.table(
        {
            "dt": [r[1] for r in rows],
            "id": [r[2] for r in rows],
            "v": [f"s{step}-{i}" for i in range(len(rows))],
            "kind": [r[0] for r in rows],
        },
        schema=SCHEMA,
    )


@pytest.fixture
def changelog_table(catalog: shoal.Catalog) -> shoal.Table:
    """Six writes with every row kind, the first four snapshots expired into long-lived
    changelogs."""
    table = catalog.create_table(
        "db.cl", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=OPTIONS
    )
    writes = [
        [("+I", "a", 1), ("+I", "a", 2), ("+I", "b", 3)],
        [("-U", "a", 1), ("+U", "a", 1), ("-D", "b", 3)],
        [("+I", "b", 4), ("-D", "a", 2)],
        [("+I", "a", 5)],
        [("-U", "a", 5), ("+U", "a", 5), ("+I", "b", 6)],
        [("-D", "a", 1)],
    ]
    for step, rows in enumerate(writes):
        table.upsert(batch(step, rows))
    table.expire_snapshots(retain_max=2, older_than=datetime.now() + timedelta(seconds=1))
    assert table._store.changelogs.list_ids() == [1, 2, 3, 4]
    return table


def spark_read(spark: SparkSession, path: str, **options: str) -> pa.Table:
    return spark.read.format("shoal").options(**options).load(path).toArrow()


def ordered(rows: pa.Table) -> list[dict[str, Any]]:
    return sorted(rows.to_pylist(), key=lambda r: (r["dt"], r["id"], r["v"], r.get("rowkind")))


def test_changelog_reads_reach_into_long_lived_changelogs(
    spark: SparkSession, changelog_table: shoal.Table
) -> None:
    path = changelog_table.path
    for s in range(1, 7):
        between = {"incremental-between": f"{s - 1},{s}"}
        plain = spark_read(spark, path, **between)
        assert ordered(plain) == ordered(changelog_table.incremental(s - 1, s)), s
        audit = spark_read(spark, f"{path}$audit_log", **between)
        assert audit.column_names == ["rowkind", *SCHEMA.names]
        expected = changelog_table.incremental(s - 1, s, row_kind=True)
        assert ordered(audit) == ordered(expected), s
        explicit = spark_read(
            spark, f"{path}$audit_log", **between, **{"incremental-between-scan-mode": "changelog"}
        )
        assert ordered(explicit) == ordered(expected), s
    # Different buckets in one range: each bucket's file read as it is.
    store = changelog_table._store
    from shoal.read.incremental import changelog_entries

    one_file_each = [
        (a, b)
        for a in range(6)
        for b in range(a + 1, 7)
        if len({(e.partition, e.bucket) for e in changelog_entries(store, a, b)})
        == len(changelog_entries(store, a, b))
    ]
    for a, b in one_file_each:
        audit = spark_read(spark, f"{path}$audit_log", **{"incremental-between": f"{a},{b}"})
        assert ordered(audit) == ordered(changelog_table.incremental(a, b, row_kind=True))


def test_the_other_scan_modes(spark: SparkSession, changelog_table: shoal.Table) -> None:
    path = changelog_table.path
    for mode in ("delta", "diff"):
        rows = spark_read(
            spark,
            path,
            **{"incremental-between": "5,6", "incremental-between-scan-mode": mode},
        )
        expected = changelog_table.incremental(5, 6, scan_mode=mode)
        assert sorted_rows(rows, "dt", "id") == sorted_rows(expected, "dt", "id"), mode
    # A delta reaching into the long-lived changelogs: the snapshot is gone.
    with pytest.raises(shoal.SnapshotNotFoundError):
        reader(path, **{"incremental-between": "2,6", "incremental-between-scan-mode": "delta"})


def reader(path: str, **options: str) -> object:
    source = ShoalDataSource({"path": path, **options})
    planned = source.reader(source.schema())
    return planned.partitions()  # type: ignore[attr-defined]


def test_what_is_refused(changelog_table: shoal.Table, catalog: shoal.Catalog) -> None:
    path = changelog_table.path
    # Several changelog files of one bucket: Paimon's batch read merges them by key.
    with pytest.raises(UnsupportedFeatureError) as info:
        reader(path, **{"incremental-between": "0,6"})
    assert info.value.feature == "incremental-between-scan-mode"
    with pytest.raises(InvalidOptionError):
        reader(path, **{"incremental-between": "1,2", "incremental-between-scan-mode": "latest"})
    with pytest.raises(InvalidOptionError):
        reader(path, **{"incremental-between-scan-mode": "delta"})
    with pytest.raises(UnsupportedFeatureError):
        reader(f"{path}$snapshots")
    # The audit_log of a primary-key table's snapshot: its merged rows' kinds are not read.
    with pytest.raises(UnsupportedFeatureError):
        reader(f"{path}$audit_log")
    with pytest.raises(UnsupportedFeatureError):
        changelog_table.system_table("audit_log")


def test_audit_log_of_an_append_table(spark: SparkSession, catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.events", EVENTS_SCHEMA, partition_keys=["dt"])
    table.append(events(range(3), "d1"))
    table.append(events(range(3, 5), "d2"))
    ours = table.system_table("audit_log")
    assert ours.column_names == ["rowkind", *EVENTS_SCHEMA.names]
    assert set(ours.column("rowkind").to_pylist()) == {"+I"}
    assert sorted_rows(ours.drop(["rowkind"]), "id") == sorted_rows(table.to_arrow(), "id")
    read = spark_read(spark, f"{table.path}$audit_log")
    assert sorted_rows(read, "id") == sorted_rows(ours, "id")
    first = spark_read(spark, f"{table.path}$audit_log", **{"scan.snapshot-id": "1"})
    assert sorted_rows(first, "id") == sorted_rows(
        table.system_table("audit_log", snapshot_id=1), "id"
    )
