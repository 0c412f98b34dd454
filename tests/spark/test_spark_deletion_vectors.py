"""The Spark data source reads a primary-key table with deletion vectors, written by
Java Paimon, as Java reads it: Paimon's batch scan (files above level 0, unmerged,
their deleted rows masked), whatever the split packing, at every snapshot; and
incremental reads as Java reads ``incremental-between``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import shoal
from shoal.core import deletion_vectors as DVS
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import JavaPaimon

pytestmark = [pytest.mark.spark, pytest.mark.interop]

SCHEMA = pa.schema(
    [pa.field("p", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.int64())]
)


def rows(p: str, ids: list[int], v: int) -> pa.Table:
    return pa.table({"p": [p] * len(ids), "id": ids, "v": [v + i for i in ids]}, schema=SCHEMA)


def _sorted(records: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(records, key=lambda r: tuple((x is None, x) for x in r))


@pytest.fixture(scope="module")
def java_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[pa.Table]]:
    """The table, and Java's read of each of its snapshots then of the latest."""
    warehouse = tmp_path_factory.mktemp("dv")
    java = JavaPaimon("1.0")
    options = {"bucket": "2", "deletion-vectors.enabled": "true"}
    java.run(
        warehouse,
        [
            jp.create_table(
                "db.t", SCHEMA, partition_keys=["p"], primary_keys=["p", "id"], options=options
            ),
            jp.write("db.t", pa.concat_tables([rows("a", list(range(60)), 0), rows("b", [1], 0)])),
            jp.write("db.t", rows("a", list(range(0, 60, 3)), 100)),
            jp.write("db.t", rows("a", [4, 5, 7], 0), kind="DELETE"),
            jp.write("db.t", rows("b", [2, 9], 200)),
            jp.write("db.t", rows("a", [11, 12], 400), options={"write-only": "true"}),
        ],
    )
    table = shoal.open_table(str(warehouse / "db.db" / "t"))
    ids = [s.id for s in table.snapshots()]
    reads = [jp.read("db.t", options={"scan.snapshot-id": str(i)}) for i in ids]
    seen = java.run(warehouse, [*reads, jp.read("db.t")])
    return Path(table.path), seen


def test_spark_reads_as_java_reads(
    spark: SparkSession, java_table: tuple[Path, list[pa.Table]]
) -> None:
    path, seen = java_table
    table = shoal.open_table(str(path))
    store = table._store
    latest = store.snapshots.latest()
    assert latest is not None
    assert DVS.deletion_files(store, latest)  # some file has a vector
    expected = _sorted([tuple(r.values()) for r in seen[-1].to_pylist()])
    # a tiny split target: each file its own piece, packed with others' vectors
    for extra in ({}, {"source.split.target-size": "1 b"}):
        df = spark.read.format("shoal").options(**extra).load(str(path))
        assert _sorted([tuple(r) for r in df.collect()]) == expected, extra
    df = spark.read.format("shoal").load(str(path))
    filtered = _sorted([tuple(r) for r in df.filter("v >= 100").collect()])
    assert filtered == [r for r in expected if r[2] is not None and r[2] >= 100]
    for snapshot, java_rows in zip(table.snapshots(), seen, strict=False):
        df = (
            spark.read.format("shoal")
            .option("scan.snapshot-id", str(snapshot.id))
            .option("source.split.target-size", "1 b")
            .load(str(path))
        )
        got = _sorted([tuple(r) for r in df.collect()])
        assert got == _sorted([tuple(r.values()) for r in java_rows.to_pylist()]), snapshot.id


def test_spark_incremental_reads_read_as_java_reads_them(
    spark: SparkSession, java_table: tuple[Path, list[pa.Table]]
) -> None:
    """``incremental-between`` over snapshot ids (empty, as in Java: a delta skips the
    compactions that lift a write's level-0 files) and over tags."""
    path, _ = java_table
    table = shoal.open_table(str(path))
    ids = [s.id for s in table.snapshots()]
    for name, snapshot_id in [("early", ids[1]), ("middle", ids[5]), ("late", ids[-1])]:
        if name not in {t.name for t in table.list_tags()}:
            table.create_tag(name, snapshot_id=snapshot_id)
    ranges = ["1,3", f"0,{ids[-1]}", "early,middle", "early,late", "middle,late"]
    ops = [jp.read("db.t", options={"incremental-between": r}) for r in ranges]
    answers = JavaPaimon("1.0").run(path.parents[1], ops)
    for r, java_rows in zip(ranges, answers, strict=True):
        df = spark.read.format("shoal").option("incremental-between", r).load(str(path))
        got = _sorted([tuple(row) for row in df.collect()])
        assert got == _sorted([tuple(x.values()) for x in java_rows.to_pylist()]), r
    assert answers[3].num_rows > 0
