"""Append tables written by Spark's own Parquet writer (``shoal.spark.write_parquet``):
the rows, the file layout, the statistics and the partitions are what shoal's own
writer would commit, pypaimon reads the result, and a write that does not fit
commits nothing and leaves no staging directory."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import DataFrame, SparkSession

import shoal
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries
from shoal.errors import SchemaMismatchError, UnsupportedFeatureError
from shoal.io import LocalFileIO
from shoal.spark import write_parquet, write_table
from shoal.spark.parquet_write import STAGING_PREFIX, why_not_parquet
from shoal.spark.source_options import open_store
from shoal.spark.types import spark_schema
from shoal.write.stats_collector import StatsCollector
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows
from tests.interop.pypaimon_oracle import PypaimonOracle

pytestmark = pytest.mark.spark

# Every type Spark's Parquet writer stores as shoal does, nulls in each.
PLAIN = pa.schema([
    pa.field("k", pa.int32(), nullable=False),
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("dec", pa.decimal128(10, 2)),
    ("small", pa.decimal128(5, 1)), ("wide", pa.decimal128(30, 4)), ("s", pa.string()),
    ("bin", pa.binary()), ("d", pa.date32()), ("ts6", pa.timestamp("us")),
    ("ltz", pa.timestamp("us", tz="UTC")), ("part", pa.string()), ("day", pa.date32()),
])  # fmt: skip


def plain_rows(n: int) -> pa.Table:
    def some(values: list[Any]) -> list[Any]:
        return [None if i % 5 == 4 else v for i, v in enumerate(values)]

    base = datetime(2026, 11, 1, 8, 30, 15, 123456)
    return pa.table({
        "k": list(range(n)),
        "b": some([i % 2 == 0 for i in range(n)]),
        "i8": some([i - 3 for i in range(n)]),
        "i16": some([i * 300 for i in range(n)]),
        "i64": some([i * 10**12 for i in range(n)]),
        "f32": some([i / 4 for i in range(n)]),
        "f64": some([i * 1.5 for i in range(n)]),
        "dec": some([Decimal(i * 101) / 100 for i in range(n)]),
        "small": some([Decimal(i) / 10 for i in range(n)]),
        "wide": some([Decimal(10**20 + i) / 10**4 for i in range(n)]),
        "s": some([f"name-{i}" for i in range(n)]),
        "bin": some([bytes([i]) * 3 for i in range(n)]),
        "d": some([date(2026, 1, 1) + timedelta(days=i) for i in range(n)]),
        "ts6": some([base + timedelta(seconds=i, microseconds=i) for i in range(n)]),
        "ltz": some([base + timedelta(hours=i) for i in range(n)]),
        "part": [None if i % 7 == 6 else f"p{i % 3}" for i in range(n)],
        "day": [date(2026, 11, 1 + i % 2) for i in range(n)],
    }, schema=PLAIN)  # fmt: skip


def spark_frame(spark: SparkSession, table: pa.Table, path: str, slices: int = 2) -> DataFrame:
    schema = spark_schema(open_store(path).schema.fields)
    rows = [tuple(r.values()) for r in table.to_pylist()]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, slices), schema)


def leftovers(path: str) -> list[Path]:
    return [p for p in Path(path).iterdir() if p.name.startswith(STAGING_PREFIX)]


def test_spark_writes_the_files_shoal_would_commit(
    spark: SparkSession, catalog: shoal.Catalog
) -> None:
    table = catalog.create_table("db.plain", PLAIN, partition_keys=["part", "day"])
    rows = plain_rows(40)
    snapshot = write_parquet(spark_frame(spark, rows, table.path), table.path)

    table = catalog.get_table("db.plain")
    assert table.latest_snapshot().id == snapshot.id == 1
    assert sorted_rows(table.to_arrow(), "k") == sorted_rows(rows, "k")
    assert leftovers(table.path) == []
    store = open_store(table.path)
    partitions = set()
    for split in table.scan().plan():
        for path in split.file_paths:
            written = pq.read_table(path)
            # One partition per file, in its bucket directory, under a data-file name.
            assert Path(path).parent.name == "bucket-0"
            assert Path(path).name.startswith("data-")
            assert path.endswith(".parquet")
            values = {(r["part"], r["day"]) for r in written.select(["part", "day"]).to_pylist()}
            assert len(values) == 1
            partitions |= values
    assert partitions == {(r["part"], r["day"]) for r in rows.to_pylist()}
    # The statistics committed are those shoal's own writer computes from the rows.
    latest = store.snapshots.latest()
    assert latest is not None
    for entry in live_entries(store, latest):
        bucket_dir = store.paths.bucket_dir(store.partitions.path(entry.partition), entry.bucket)
        path = data_file_path(bucket_dir, entry.file)
        collector = StatsCollector(store.schema.fields, store.stats_mode)
        collector.update(pq.read_table(path))
        expected, _ = collector.result(pq.read_metadata(path))
        assert entry.file.value_stats == expected
        # The partition committed is the one the file's rows hold.
        held = pq.read_table(path, columns=["part", "day"]).to_pylist()[0]
        assert store.partitions.decode(entry.partition) == (held["part"], held["day"])
        assert f"part={held['part'] or '__DEFAULT_PARTITION__'}/" in path
        assert entry.file.row_count == pq.read_metadata(path).num_rows
    # Stats pruning works on what Spark wrote.
    assert table.scan(filter=[[("k", "<", 3)]]).to_arrow().num_rows == 3
    in_p1 = sum(r["part"] == "p1" for r in rows.to_pylist())
    assert table.scan(filter=[[("part", "=", "p1")]]).to_arrow().num_rows == in_p1


def test_pypaimon_reads_a_table_spark_wrote(spark: SparkSession, tmp_path: Path) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    table = catalog.create_table("db.plain", PLAIN, partition_keys=["part"])
    rows = plain_rows(20)
    write_parquet(spark_frame(spark, rows, table.path), table.path)
    got = PypaimonOracle().read(tmp_path, "db.plain")
    assert sorted_rows(got.select(PLAIN.names), "k") == sorted_rows(rows, "k")


def test_overwrite_whole_table_and_present_partitions(
    spark: SparkSession, events_table: shoal.Table
) -> None:
    path = events_table.path
    events_table.append(events(range(10), "2026-11-01"))
    events_table.append(events(range(10, 20), "2026-11-02"))
    replacement = events(range(100, 105), "2026-11-02")
    write_parquet(
        spark_frame(spark, replacement, path),
        path,
        overwrite=True,
        dynamic_partition_overwrite=True,
    )
    kept = sorted_rows(shoal.open_table(path).to_arrow(), "id")
    assert [r["id"] for r in kept] == [*range(10), *range(100, 105)]
    write_parquet(spark_frame(spark, events(range(7, 9)), path), path, overwrite=True)
    assert [r["id"] for r in sorted_rows(shoal.open_table(path).to_arrow(), "id")] == [7, 8]
    assert leftovers(path) == []


def test_a_write_that_does_not_fit_commits_nothing(
    spark: SparkSession, catalog: shoal.Catalog
) -> None:
    table = catalog.create_table("db.plain", PLAIN, partition_keys=["part"])
    bad = spark.createDataFrame([(1, "x")], "k int, nope string")
    with pytest.raises(SchemaMismatchError):
        write_parquet(bad, table.path)
    # A null in a NOT NULL column is found in the footers, after Spark wrote them.
    rows = plain_rows(6)
    schema = spark_schema(open_store(table.path).schema.fields)
    nullable = spark.createDataFrame(
        [(None, *tuple(r.values())[1:]) for r in rows.to_pylist()],
        schema.__class__([f.__class__(f.name, f.dataType, True) for f in schema.fields]),
    )
    with pytest.raises(SchemaMismatchError, match="NOT NULL"):
        write_parquet(nullable, table.path)
    assert catalog.get_table("db.plain").latest_snapshot() is None
    assert leftovers(table.path) == []
    # The staged files went with the staging directory; none reached a bucket.
    assert not any(p.suffix == ".parquet" for p in Path(table.path).rglob("*"))


def test_spark_timestamp_setting_is_restored(
    spark: SparkSession, events_table: shoal.Table
) -> None:
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    try:
        write_parquet(spark_frame(spark, events(range(3)), events_table.path), events_table.path)
        assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "INT96"
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")


def test_other_tables_go_through_the_data_source(
    spark: SparkSession, catalog: shoal.Catalog
) -> None:
    keyed = catalog.create_table(
        "db.keyed", EVENTS_SCHEMA, primary_keys=["dt", "id"], options={"bucket": "2"}
    )
    assert why_not_parquet(open_store(keyed.path)) is not None
    with pytest.raises(UnsupportedFeatureError, match="data source"):
        write_parquet(spark_frame(spark, events(range(3)), keyed.path), keyed.path)
    assert write_table(spark_frame(spark, events(range(3)), keyed.path), keyed.path) is None
    assert write_table(spark_frame(spark, events(range(2)), keyed.path), keyed.path) is None
    assert shoal.open_table(keyed.path).to_arrow().num_rows == 3  # upserted
    plain = catalog.create_table("db.plain", EVENTS_SCHEMA)
    snapshot = write_table(spark_frame(spark, events(range(4)), plain.path), plain.path)
    assert snapshot is not None
    assert snapshot.id == 1


def test_a_failure_while_moving_leaves_only_orphans(
    spark: SparkSession, events_table: shoal.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = events_table.path
    events_table.append(events(range(5), "2026-11-01"))
    moves = 0
    rename = LocalFileIO.rename

    def fail_the_second(self: LocalFileIO, src: str, dst: str) -> None:
        nonlocal moves
        moves += 1
        if moves == 2:
            raise OSError("disk gone")
        rename(self, src, dst)

    monkeypatch.setattr(LocalFileIO, "rename", fail_the_second)
    two_partitions = events(range(10, 14), ["2026-11-01", "2026-11-02"] * 2)
    with pytest.raises(OSError, match="disk gone"):
        write_parquet(spark_frame(spark, two_partitions, path), path)
    monkeypatch.undo()
    table = shoal.open_table(path)
    assert table.latest_snapshot().id == 1
    assert [r["id"] for r in sorted_rows(table.to_arrow(), "id")] == list(range(5))
    assert leftovers(path) == []
    moved = table.remove_orphan_files(older_than=datetime.now())
    assert moved.deleted_count == 1  # the one file moved before the failure
    assert [r["id"] for r in sorted_rows(shoal.open_table(path).to_arrow(), "id")] == list(range(5))


def test_spark_writes_paimons_layout_whatever_the_session_says(
    spark: SparkSession, catalog: shoal.Catalog
) -> None:
    """Decimals up to precision 18 as INT32/INT64, timestamps as INT64 microseconds, no
    field ids: the layout shoal's writer (and Paimon's) gives each column, column by
    column, with the session's own Parquet settings set otherwise and restored after."""
    layout_conf = {
        "spark.sql.parquet.writeLegacyFormat": "true",
        "spark.sql.parquet.outputTimestampType": "INT96",
        "spark.sql.parquet.fieldId.write.enabled": "true",
    }
    for key, value in layout_conf.items():
        spark.conf.set(key, value)
    try:
        by_spark = catalog.create_table("db.spark", PLAIN)
        write_parquet(spark_frame(spark, plain_rows(6), by_spark.path), by_spark.path)
        assert {k: spark.conf.get(k) for k in layout_conf} == layout_conf
    finally:
        for key in layout_conf:
            spark.conf.unset(key)
    by_shoal = catalog.create_table("db.shoal", PLAIN)
    by_shoal.append(plain_rows(6))

    def leaves(table: shoal.Table) -> dict[str, tuple[Any, ...]]:
        path = next(p for split in table.scan().plan() for p in split.file_paths)
        schema = pq.read_metadata(path).schema
        assert "field_id=-1" in str(schema)
        assert all(f"field_id={i} " not in str(schema) for i in range(len(PLAIN)))
        return {
            c.path: (c.physical_type, str(c.logical_type), c.converted_type)
            for c in (schema.column(i) for i in range(len(schema)))
        }

    spark_leaves = leaves(catalog.get_table("db.spark"))
    assert spark_leaves == leaves(catalog.get_table("db.shoal"))
    assert spark_leaves["small"][0] == "INT32"
    assert spark_leaves["dec"][0] == "INT64"
    assert spark_leaves["wide"][0] == "FIXED_LEN_BYTE_ARRAY"
    assert spark_leaves["ts6"][0] == "INT64"
