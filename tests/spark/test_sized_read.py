"""shoal.spark.read_table: a small table is broadcast in joins, a large one is not."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

import shoal
from shoal.errors import InvalidOptionError, UnknownOptionError
from shoal.spark import read_table
from shoal.spark.sized_read import THRESHOLD_CONF, broadcast_threshold, read_bytes
from shoal.spark.source_options import SourceOptions

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def small(catalog: shoal.Catalog) -> shoal.Table:
    table = catalog.create_table("db.small", SCHEMA, partition_keys=["dt"])
    for dt in ("a", "b"):
        ids = list(range(10))
        table.append(pa.table({"dt": [dt] * 10, "id": ids, "name": [f"{dt}{i}" for i in ids]}))
    return table


@contextlib.contextmanager
def threshold(spark: SparkSession, value: str) -> Iterator[None]:
    before = spark.conf.get(THRESHOLD_CONF)
    spark.conf.set(THRESHOLD_CONF, value)
    try:
        yield
    finally:
        spark.conf.set(THRESHOLD_CONF, before)


def physical_plan(df: DataFrame) -> str:
    """The plan Spark starts with (adaptive execution may change it while it runs)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain()
    return out.getvalue()


def join(spark: SparkSession, side: DataFrame) -> DataFrame:
    # Spark sizes a range at 8 bytes a row: 2M rows are above the default threshold,
    # so only the shoal side can be broadcast.
    return spark.range(2_000_000).join(side, "id")


def files_on_disk(table: shoal.Table, partition: str) -> int:
    return sum(p.stat().st_size for p in Path(table.path, partition).rglob("data-*"))


def test_a_plain_read_is_never_broadcast_by_size(spark: SparkSession, small: shoal.Table) -> None:
    plain = spark.read.format("shoal").load(small.path)
    plan = physical_plan(join(spark, plain))
    assert "SortMergeJoin" in plan
    assert "BroadcastHashJoin" not in plan


def test_a_small_table_is_broadcast(spark: SparkSession, small: shoal.Table) -> None:
    df = read_table(spark, small.path)
    joined = join(spark, df)
    assert "BroadcastHashJoin" in physical_plan(joined)
    assert "SortMergeJoin" not in physical_plan(joined)
    rows = sorted((r.id, r.name) for r in joined.collect())
    assert rows == sorted((i, f"{dt}{i}") for dt in "ab" for i in range(10))


def test_a_table_above_the_threshold_is_not(spark: SparkSession, small: shoal.Table) -> None:
    size = read_bytes(SourceOptions.parse({"path": small.path}))
    assert size == files_on_disk(small, "dt=a") + files_on_disk(small, "dt=b")
    with threshold(spark, f"{size - 1}b"):
        assert "BroadcastHashJoin" not in physical_plan(join(spark, read_table(spark, small.path)))
    with threshold(spark, f"{size}b"):  # Spark's rule: at or below the threshold
        assert "BroadcastHashJoin" in physical_plan(join(spark, read_table(spark, small.path)))
    with threshold(spark, "-1"):  # broadcasting by size switched off
        assert "BroadcastHashJoin" not in physical_plan(join(spark, read_table(spark, small.path)))


def test_the_size_is_that_of_the_files_the_read_covers(small: shoal.Table) -> None:
    def size(**options: str) -> int | None:
        return read_bytes(SourceOptions.parse({"path": small.path, **options}))

    assert size(filter="dt = 'a'") == files_on_disk(small, "dt=a")
    assert size(versionAsOf="1") == files_on_disk(small, "dt=a")  # snapshot 1: dt=a only
    assert size(**{"incremental-between": "1,2"}) is None  # not sized


def test_an_empty_table_is_sized_zero(spark: SparkSession, catalog: shoal.Catalog) -> None:
    empty = catalog.create_table("db.empty", SCHEMA)
    assert read_bytes(SourceOptions.parse({"path": empty.path})) == 0
    assert "BroadcastHashJoin" in physical_plan(join(spark, read_table(spark, empty.path)))


def test_options_are_checked_on_the_driver(spark: SparkSession, small: shoal.Table) -> None:
    with pytest.raises(UnknownOptionError, match=r"scan\.snapshot-id"):
        read_table(spark, small.path, **{"scan.snapshotid": "1"})
    df = read_table(spark, small.path, **{"scan.snapshot-id": "1", "columns": "id"})
    assert df.columns == ["id"]
    assert df.count() == 10


def test_spark_byte_sizes() -> None:
    assert broadcast_threshold("10485760b") == 10 << 20
    assert broadcast_threshold("10m") == broadcast_threshold("10MB") == 10 << 20
    assert broadcast_threshold("1g") == 1 << 30
    assert broadcast_threshold("123") == 123
    assert broadcast_threshold("-1") < 0
    assert broadcast_threshold(None) == 10 << 20
    for bad in ("ten", "1.5m", "10 parsecs"):
        with pytest.raises(InvalidOptionError, match=THRESHOLD_CONF):
            broadcast_threshold(bad)


def test_a_temporary_view_keeps_the_hint_for_sql(spark: SparkSession, small: shoal.Table) -> None:
    read_table(spark, small.path).createOrReplaceTempView("small_regions")
    spark.range(2_000_000).createOrReplaceTempView("many_ids")
    joined = spark.sql("SELECT * FROM many_ids JOIN small_regions USING (id)")
    assert "BroadcastHashJoin" in physical_plan(joined)
