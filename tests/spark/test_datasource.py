"""The ``shoal`` Spark data source: reads equal shoal's own, writes read back in shoal.

Tables are tiny and every test shares the session of ``conftest.py``: a Spark action
costs about a second, so each test asks Spark only what it must.
"""

from __future__ import annotations

import pkgutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.functions import col, udf
from pyspark.sql.types import StructType

import shoal
from shoal.errors import (
    InvalidOptionError,
    SchemaMismatchError,
    UnknownOptionError,
    UnsupportedFeatureError,
)
from shoal.spark.datasource import ShoalDataSource, prepare_for_write, register_table
from shoal.spark.read import ShoalPartition, ShoalReader
from shoal.spark.source_options import (
    READ,
    STREAM_READ,
    STREAM_WRITE,
    USES,
    WRITE,
    SourceOptions,
    Use,
    open_store,
)
from shoal.spark.types import spark_schema
from shoal.spark.write import ShoalWriter
from tests.conftest import ALL_TYPES, EVENTS_SCHEMA, all_types_rows, events, sorted_rows

pytestmark = pytest.mark.spark

EVENTS_DDL = "dt string, id bigint, name string, value double"


def spark_rows(df: DataFrame, *keys: str) -> list[dict[str, Any]]:
    return sorted_rows(df.toArrow(), *keys)


def load(spark: SparkSession, path: str, **options: str) -> DataFrame:
    return spark.read.format("shoal").options(**options).load(path)


def frame(spark: SparkSession, rows: list[tuple[Any, ...]], slices: int = 1) -> DataFrame:
    """Rows of EVENTS_SCHEMA in ``slices`` partitions, in order (the first rows first)."""
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, slices), EVENTS_DDL)


def plan(path: str, schema: StructType | None = None, **options: str) -> ShoalReader:
    """The reader Spark would plan with, in this process."""
    source = ShoalDataSource({"path": path, **options})
    reader = source.reader(schema if schema is not None else source.schema())
    assert isinstance(reader, ShoalReader)
    return reader


def files_read(reader: ShoalReader) -> int:
    return sum(p.file_count for p in reader.partitions() if isinstance(p, ShoalPartition))


def data_files(table: shoal.Table) -> set[str]:
    return {str(p) for p in Path(table.path).rglob("*.parquet")}


@pytest.fixture
def pk_table(catalog: shoal.Catalog) -> shoal.Table:
    """A partitioned primary-key table with two buckets, after upserts, a delete and a
    full compaction, then more upserts (files at level 0 and at the top level)."""
    table = catalog.create_table(
        "db.pk",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2", "write-only": "true"},
    )
    table.upsert(events(range(10), "d1"))
    table.upsert(events(range(5, 15), "d2"))
    table.delete(events([1, 2], "d1").select(["dt", "id"]))
    table.compact("full")
    table.upsert(events([3, 40], "d1").set_column(2, "name", pa.array(["new3", "new40"])))
    return table


# --- reading -----------------------------------------------------------------------------------


def test_format_is_registered_by_itself_and_reads_an_append_table(
    spark: SparkSession, catalog: shoal.Catalog
) -> None:
    # Spark registers every top-level pyspark_* module's DefaultSource on its own.
    found = {m.name for m in pkgutil.iter_modules() if m.name.startswith("pyspark_")}
    assert "pyspark_shoal" in found
    table = catalog.create_table(
        "db.events",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        options={"bucket": "3", "bucket-key": "id"},
    )
    table.append(events(range(10), "d1"))
    table.append(events(range(10, 25), ["d1", "d2", "d3"] * 5))
    df = spark.read.format("shoal").option("path", table.path).load()
    assert df.schema == StructType.fromDDL(EVENTS_DDL)
    assert spark_rows(df, "id") == sorted_rows(table.to_arrow(), "id")


def test_primary_key_table_after_deletes_and_compaction(
    spark: SparkSession, pk_table: shoal.Table
) -> None:
    assert spark_rows(load(spark, pk_table.path), "dt", "id") == sorted_rows(
        pk_table.to_arrow(), "dt", "id"
    )
    optimized = load(spark, pk_table.path, **{"read-optimized": "true"})
    expected = pk_table.to_arrow(read_optimized=True)
    assert spark_rows(optimized, "dt", "id") == sorted_rows(expected, "dt", "id")
    assert expected.num_rows != pk_table.to_arrow().num_rows  # the views differ here


def test_time_travel_options(spark: SparkSession, pk_table: shoal.Table) -> None:
    pk_table.create_tag("v2", snapshot_id=2)
    millis = pk_table.snapshot(3).time_millis
    cases: list[tuple[dict[str, str], pa.Table]] = [
        ({"scan.snapshot-id": "1"}, pk_table.to_arrow(snapshot_id=1)),
        ({"scan.tag-name": "v2"}, pk_table.to_arrow(tag="v2")),
        ({"scan.timestamp-millis": str(millis)}, pk_table.to_arrow(timestamp_ms=millis)),
        # Spark's and Delta Lake's names
        ({"versionAsOf": "1"}, pk_table.to_arrow(snapshot_id=1)),
        ({"timestampAsOf": iso(millis)}, pk_table.to_arrow(timestamp_ms=millis)),
    ]
    for options, expected in cases:
        assert spark_rows(load(spark, pk_table.path, **options), "dt", "id") == sorted_rows(
            expected, "dt", "id"
        ), options
    with pytest.raises(InvalidOptionError):
        SourceOptions.parse({"path": "x", "scan.snapshot-id": "1", "scan.tag-name": "v2"})
    with pytest.raises(InvalidOptionError, match="versionAsOf"):
        SourceOptions.parse({"path": "x", "versionAsOf": "1", "scan.tag-name": "v2"})
    with pytest.raises(InvalidOptionError, match="time zone"):  # Spark's zone is not ours
        SourceOptions.parse({"path": "x", "timestampAsOf": "2026-11-01 08:00:00"})


def iso(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, UTC).isoformat()


@pytest.mark.parametrize(
    ("key", "error", "hint"),
    [
        ("scan.snapshotid", UnknownOptionError, "scan.snapshot-id"),
        ("versionasof_", UnknownOptionError, "versionAsOf"),
        ("scan.mode", UnsupportedFeatureError, "scan.mode"),
        ("overwriteSchema", UnknownOptionError, "no known key"),
    ],
)
def test_an_option_the_source_does_not_read_is_refused(
    spark: SparkSession, pk_table: shoal.Table, key: str, error: type[Exception], hint: str
) -> None:
    with pytest.raises(error, match=hint):
        SourceOptions.parse({"path": pk_table.path, key: "true"})
    with pytest.raises(Exception, match=f"(?i){key}"):  # through Spark, before any read
        load(spark, pk_table.path, **{key: "true"}).count()


@pytest.mark.parametrize(
    ("key", "value", "use"),
    [
        ("mergeSchema", "true", READ),
        ("write-buffer-size", "1 mb", STREAM_READ),
        ("timestamp-precision-truncate", "true", READ),
        ("partitionOverwriteMode", "dynamic", STREAM_WRITE),
        ("commit-user", "nightly", WRITE),
        ("checkpointLocation", "/checkpoints/q", READ),
        ("scan.snapshot-id", "1", WRITE),
        ("versionAsOf", "1", STREAM_READ),
        ("filter", "id > 1", WRITE),
        ("columns", "id", STREAM_WRITE),
        ("startingOffsets", "latest", READ),
        ("consumer-id", "dashboard", WRITE),
    ],
)
def test_an_option_given_where_nothing_reads_it_is_refused(
    pk_table: shoal.Table, key: str, value: str, use: Use
) -> None:
    options = SourceOptions.parse({"path": pk_table.path, key: value})
    with pytest.raises(InvalidOptionError, match=f"applies to a .*, not to a {use}") as raised:
        options.require_use(use)
    assert raised.value.key == key
    allowed = [u for u in (READ, STREAM_READ, WRITE, STREAM_WRITE) if u in USES[key.lower()]]
    for other in allowed:
        options.require_use(other)
    # A format bound to a table (register_table) fixes options for both reads and writes.
    SourceOptions.parse({"path": pk_table.path}, {key: value}).require_use(use)


def test_a_write_option_on_a_spark_read_is_refused(
    spark: SparkSession, pk_table: shoal.Table
) -> None:
    with pytest.raises(Exception, match=r"mergeSchema.*applies to a write or a stream write"):
        load(spark, pk_table.path, mergeSchema="true").count()


def test_a_read_is_pinned_to_the_snapshot_planned(pk_table: shoal.Table) -> None:
    reader = plan(pk_table.path)
    pinned = pk_table.latest_snapshot()
    pk_table.upsert(events([99], "d9"))
    assert reader.snapshot == pinned
    partitions = reader.partitions()
    assert {s.snapshot_id for p in partitions for s in p.splits} == {pinned.id}
    rows = pa.Table.from_batches([b for p in partitions for b in reader.read(p)])
    assert sorted_rows(rows, "dt", "id") == sorted_rows(
        pk_table.to_arrow(snapshot_id=pinned.id), "dt", "id"
    )


def test_incremental_between(
    spark: SparkSession, catalog: shoal.Catalog, pk_table: shoal.Table
) -> None:
    table = catalog.create_table("db.events", EVENTS_SCHEMA, partition_keys=["dt"])
    for i in range(4):
        table.append(events(range(i * 3, i * 3 + 3), f"d{i % 2}"))
    table.create_tag("t1", snapshot_id=1)
    table.create_tag("t3", snapshot_id=3)
    pk_table.create_tag("t1", snapshot_id=1)
    pk_table.create_tag("t5", snapshot_id=5)
    for t, between, expected in [
        (table, "1,3", table.incremental(1, 3)),
        (table, "t1,t3", table.incremental("t1", "t3")),
        (pk_table, "1,2", pk_table.incremental(1, 2)),
        (pk_table, "t1,t5", pk_table.incremental("t1", "t5")),
    ]:
        df = load(spark, t.path, **{"incremental-between": between})
        assert spark_rows(df, "dt", "id") == sorted_rows(expected, "dt", "id"), between


def test_empty_table_and_every_type(spark: SparkSession, catalog: shoal.Catalog) -> None:
    empty = catalog.create_table("db.empty", EVENTS_SCHEMA)
    assert load(spark, empty.path).toArrow().num_rows == 0
    table = catalog.create_table("db.types", ALL_TYPES, primary_keys=["k"], options={"bucket": "1"})
    table.upsert(all_types_rows(6))
    read = load(spark, table.path).toArrow()
    assert sorted_rows(read, "k") == sorted_rows(table.to_arrow(), "k")
    # and back: Spark's types cast into the table's
    copy = catalog.create_table("db.copy", ALL_TYPES, primary_keys=["k"], options={"bucket": "1"})
    spark.createDataFrame(read).write.format("shoal").mode("append").save(copy.path)
    assert sorted_rows(copy.to_arrow(), "k") == sorted_rows(table.to_arrow(), "k")


# --- filters -----------------------------------------------------------------------------------


def test_the_filter_option_prunes_partitions_and_files(pk_table: shoal.Table) -> None:
    everything = files_read(plan(pk_table.path))
    reader = plan(pk_table.path, filter="dt = 'd2' and id > 11")
    assert 0 < files_read(reader) < everything
    rows = pa.Table.from_batches([b for p in reader.partitions() for b in reader.read(p)])
    expected = pk_table.to_arrow(filter=[("dt", "=", "d2"), ("id", ">", 11)])
    assert sorted_rows(rows, "id") == sorted_rows(expected, "id")


def test_a_dataframe_with_the_filter_option_is_that_part_of_the_table(
    spark: SparkSession, pk_table: shoal.Table
) -> None:
    df = load(spark, pk_table.path, filter="dt = 'd1' or id in (5, 14)")
    expected = pk_table.to_arrow(filter=[[("dt", "=", "d1")], [("id", "in", [5, 14])]])
    assert spark_rows(df, "dt", "id") == sorted_rows(expected, "dt", "id")
    assert df.where("id > 4").count() == sum(1 for i in expected["id"].to_pylist() if i > 4)
    assert df.count() == expected.num_rows  # every query on it sees the same rows
    with pytest.raises(Exception, match="unknown column 'nope'"):
        load(spark, pk_table.path, filter="nope = 1").count()


def test_filter_pushdown_is_refused() -> None:
    with pytest.raises(UnsupportedFeatureError) as info:
        SourceOptions.parse({"path": "/t", "filter-pushdown": "true"})
    assert info.value.feature == "filter-pushdown"
    assert SourceOptions.parse({"path": "/t", "filter-pushdown": "false"}).filter is None


@pytest.mark.parametrize("pushdown", ["true", "false"])
def test_one_dataframe_under_different_filters(
    spark: SparkSession, pk_table: shoal.Table, pushdown: str
) -> None:
    """Reused, cached, unioned and self-joined, one DataFrame gives the rows shoal
    gives, whatever Spark's Python filter pushdown is set to."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", pushdown)
    try:
        table = pk_table.to_arrow()
        ids = table["id"].to_pylist()
        d2 = pk_table.to_arrow(filter=[("dt", "=", "d2")]).num_rows
        df = load(spark, pk_table.path)
        assert df.where("dt = 'd2'").count() == d2
        assert df.count() == table.num_rows
        assert df.where("id > 5").count() == sum(1 for i in ids if i > 5)
        assert df.union(df.where("dt = 'd2'")).count() == table.num_rows + d2
        joined = df.alias("a").join(df.where("dt = 'd2'").alias("b"), ["dt", "id"])
        assert joined.count() == d2
        assert df.alias("a").join(df.alias("b"), ["dt", "id"]).count() == table.num_rows
        cached = load(spark, pk_table.path).cache()
        try:
            assert cached.where("id < 3").count() == sum(1 for i in ids if i < 3)
            assert cached.count() == table.num_rows
        finally:
            cached.unpersist()
        spark.sql(
            f"CREATE OR REPLACE TEMPORARY VIEW shoal_f USING shoal OPTIONS (path '{pk_table.path}')"
        )
        assert spark.sql("SELECT count(*) AS n FROM shoal_f WHERE dt = 'd2'").first()["n"] == d2
        assert spark.sql("SELECT count(*) AS n FROM shoal_f").first()["n"] == table.num_rows
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")


# --- columns and packing -----------------------------------------------------------------------


def test_column_pruning_by_option_and_by_user_schema(
    spark: SparkSession, pk_table: shoal.Table
) -> None:
    expected = sorted_rows(pk_table.to_arrow(columns=["name", "id"]), "name", "id")
    by_option = load(spark, pk_table.path, columns="name,id")
    assert by_option.columns == ["name", "id"]
    assert spark_rows(by_option, "name", "id") == expected
    by_schema = spark.read.format("shoal").schema("NAME string, id bigint").load(pk_table.path)
    assert [r["NAME"] for r in spark_rows(by_schema, "NAME", "id")] == [r["name"] for r in expected]
    reader = plan(pk_table.path, StructType.fromDDL("name string"))
    batches = [b for p in reader.partitions() for b in reader.read(p)]
    assert {tuple(b.schema.names) for b in batches} == {("name",)}
    with pytest.raises(Exception, match="InvalidOptionError"):
        load(spark, pk_table.path, columns="nope").schema  # noqa: B018


def test_small_files_are_packed_into_few_partitions(
    spark: SparkSession, catalog: shoal.Catalog, pk_table: shoal.Table
) -> None:
    table = catalog.create_table("db.small", EVENTS_SCHEMA, partition_keys=["dt"])
    for i in range(20):
        table.append(events([i], f"d{i % 4}"))
    packed = plan(table.path).partitions()
    assert len(packed) == 1
    assert packed[0].file_count == 20
    assert load(spark, table.path).rdd.getNumPartitions() == 1
    two_per_task = plan(table.path, **{"source.split.target-size": "8 mb"}).partitions()
    assert [p.file_count for p in two_per_task] == [2] * 10
    # a merged bucket is never divided, however small the target
    buckets = plan(pk_table.path, **{"source.split.target-size": "1 b"}).partitions()
    seen = [(s.partition["dt"], s.bucket) for p in buckets for s in p.splits]
    assert len(seen) == len(set(seen))
    live = pk_table.system_table("files")
    assert sum(p.file_count for p in buckets) == live.num_rows


def test_a_table_with_enough_data_is_read_in_parallel_in_even_partitions(
    spark: SparkSession, catalog: shoal.Catalog
) -> None:
    table = catalog.create_table("db.spread", EVENTS_SCHEMA)
    for i in range(20):
        table.append(events([i]))
    cost = {"source.split.open-file-cost": "1 b"}
    schema = ShoalDataSource({"path": table.path}).schema()
    options = SourceOptions.parse({"path": table.path, **cost})
    reader = ShoalReader(options, schema, parallelism=4)
    assert [p.file_count for p in reader.partitions()] == [5] * 4  # not 20 in one
    capped = SourceOptions.parse({"path": table.path, **cost, "source.split.target-size": "1 b"})
    reader = ShoalReader(capped, schema, parallelism=4)
    assert [p.file_count for p in reader.partitions()] == [1] * 20
    shoal.spark.register(spark)  # tells the source the session's default parallelism, 2
    assert load(spark, table.path, **cost).rdd.getNumPartitions() == 2


# --- SQL ---------------------------------------------------------------------------------------


def test_sql_views_tables_and_inserts(spark: SparkSession, catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.sql", EVENTS_SCHEMA)
    table.append(events([1, 2]))
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW shoal_v USING shoal OPTIONS (path '{table.path}')")
    assert spark.sql("SELECT count(*) AS n FROM shoal_v").first()["n"] == 2
    spark.sql("INSERT INTO shoal_v VALUES ('2026-11-02', 3, 'n3', 1.5)")
    assert sorted(table.to_arrow()["id"].to_pylist()) == [1, 2, 3]

    # Spark's catalog hands a Python source none of a table's OPTIONS: the form of
    # CREATE TABLE that calls the source is refused (catalog_tables); one with a column
    # list calls no shoal code, and WITH gives the options back per query
    with pytest.raises(Exception, match="register_table"):
        spark.sql(f"CREATE TABLE shoal_ct USING shoal OPTIONS (path '{table.path}')")
    columns = "(dt string, id bigint, name string, value double)"
    spark.sql(f"CREATE TABLE shoal_ct {columns} USING shoal OPTIONS (path '{table.path}')")
    with_path = f"WITH ('path' = '{table.path}')"
    spark.sql(f"INSERT INTO shoal_ct {with_path} VALUES ('2026-11-02', 4, 'n4', 2.0)")
    travel = f"WITH ('path' = '{table.path}', 'scan.snapshot-id' = '2')"
    assert spark.sql(f"SELECT count(*) AS n FROM shoal_ct {travel}").first()["n"] == 3

    # a registered table needs no options at all
    assert register_table(spark, "shoal_rt", table.path) == "shoal_shoal_rt"
    spark.sql("INSERT INTO shoal_rt VALUES ('2026-11-03', 5, 'n5', 2.5)")
    assert spark.sql("SELECT count(*) AS n FROM shoal_rt").first()["n"] == 5
    spark.sql("INSERT OVERWRITE shoal_rt VALUES ('2026-11-03', 6, 'n6', 3.0)")
    assert table.to_arrow()["id"].to_pylist() == [6]
    assert [s.commit_kind for s in table.snapshots()][-1] == "OVERWRITE"


# --- writing -----------------------------------------------------------------------------------


def test_append_overwrite_and_dynamic_overwrite(
    spark: SparkSession, catalog: shoal.Catalog
) -> None:
    table = catalog.create_table(
        "db.w", EVENTS_SCHEMA, partition_keys=["dt"], options={"bucket": "2", "bucket-key": "id"}
    )
    table.append(events([1, 2], "d1"))
    table.append(events([3], "d2"))
    new = [("d2", 10, "x", 1.0), ("d3", 11, "y", 2.0)]

    frame(spark, new).write.format("shoal").mode("append").save(table.path)
    assert table.latest_snapshot().id == 3
    assert sorted(table.to_arrow()["id"].to_pylist()) == [1, 2, 3, 10, 11]

    dynamic = frame(spark, [("d2", 20, "z", 3.0)]).write.format("shoal").mode("overwrite")
    dynamic.option("dynamic-partition-overwrite", "true").save(table.path)
    assert sorted(table.to_arrow()["id"].to_pylist()) == [1, 2, 11, 20]

    spark_dynamic = frame(spark, [("d1", 30, "w", 4.0)]).write.format("shoal")
    spark_dynamic.mode("overwrite").option("partitionOverwriteMode", "dynamic").save(table.path)
    assert sorted(table.to_arrow()["id"].to_pylist()) == [11, 20, 30]

    static = frame(spark, new).write.format("shoal").mode("overwrite")
    static.option("partitionOverwriteMode", "static").save(table.path)
    assert table.latest_snapshot().id == 6
    assert table.latest_snapshot().commit_kind == "OVERWRITE"
    assert sorted(table.to_arrow()["id"].to_pylist()) == [10, 11]


@pytest.mark.parametrize("session_mode", ["dynamic", "static"])
def test_an_overwrite_of_a_partitioned_table_must_say_what_it_replaces(
    spark: SparkSession, catalog: shoal.Catalog, session_mode: str
) -> None:
    """Spark does not tell a Python source its session's partitionOverwriteMode, so an
    overwrite that names no mode is refused rather than guessed (a guess of 'static'
    under a 'dynamic' session would wipe the other partitions)."""
    table = catalog.create_table("db.w", EVENTS_SCHEMA, partition_keys=["dt"])
    table.append(events([1], "a"))
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", session_mode)
    try:
        with pytest.raises(Exception, match="partitionOverwriteMode"):
            frame(spark, [("b", 2, "x", 1.0)]).write.format("shoal").mode("overwrite").save(
                table.path
            )
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert table.latest_snapshot().id == 1
    assert table.to_arrow()["dt"].to_pylist() == ["a"]
    with pytest.raises(InvalidOptionError, match="contradicts"):
        SourceOptions.parse(
            {
                "path": table.path,
                "partitionOverwriteMode": "static",
                "dynamic-partition-overwrite": "true",
            }
        )


def test_upsert_orders_a_bucket_written_by_several_tasks(
    spark: SparkSession, pk_table: shoal.Table
) -> None:
    model = {(r["dt"], r["id"]): r for r in pk_table.to_arrow().to_pylist()}
    rows = [("d1", i, "first", 1.0) for i in range(10)] + [
        ("d1", i, "second", 2.0) for i in range(5, 15)
    ]
    before = pk_table.latest_snapshot().id
    frame(spark, rows, slices=2).write.format("shoal").mode("append").save(pk_table.path)
    assert pk_table.latest_snapshot().id == before + 1
    for dt, i, name, value in rows:  # the later task's row of a key wins
        model[(dt, i)] = {"dt": dt, "id": i, "name": name, "value": value}
    assert sorted_rows(pk_table.to_arrow(), "dt", "id") == sorted(
        model.values(), key=lambda r: (r["dt"], r["id"])
    )
    # rows written later still win over the Spark write, also after compaction
    pk_table.upsert(events([7], "d1"))
    model[("d1", 7)] = events([7], "d1").to_pylist()[0]
    pk_table.compact("full")
    assert sorted_rows(pk_table.to_arrow(), "dt", "id") == sorted(
        model.values(), key=lambda r: (r["dt"], r["id"])
    )


def test_overwrite_of_a_primary_key_table(spark: SparkSession, pk_table: shoal.Table) -> None:
    rows = [("d2", i, "again", 9.0) for i in (1, 2, 3)] + [("d2", 2, "last", 8.0)]
    keep = pk_table.to_arrow(filter=[("dt", "=", "d1")])
    writer = frame(spark, rows, slices=2).write.format("shoal").mode("overwrite")
    writer.option("dynamic-partition-overwrite", "true").save(pk_table.path)
    expected = [
        *keep.to_pylist(),
        {"dt": "d2", "id": 1, "name": "again", "value": 9.0},
        {"dt": "d2", "id": 2, "name": "last", "value": 8.0},
        {"dt": "d2", "id": 3, "name": "again", "value": 9.0},
    ]
    key = lambda r: (r["dt"], r["id"])  # noqa: E731
    assert sorted_rows(pk_table.to_arrow(), "dt", "id") == sorted(expected, key=key)


def test_commit_numbers_a_bucket_above_a_concurrent_writer(pk_table: shoal.Table) -> None:
    store = open_store(pk_table.path)
    writer = ShoalWriter(
        SourceOptions.parse({"path": pk_table.path}),
        spark_schema(store.schema.fields),
        overwrite=False,
    )
    mine = events([3, 4, 5], "d1").set_column(2, "name", pa.array(["mine"] * 3))
    message = writer.write(iter(mine.to_batches()))
    # another writer commits to the same buckets after this write was planned
    pk_table.upsert(events([4, 5, 6], "d1").set_column(2, "name", pa.array(["theirs"] * 3)))
    writer.commit([message])
    names = {r["id"]: r["name"] for r in pk_table.to_arrow(filter=[("dt", "=", "d1")]).to_pylist()}
    assert [names[i] for i in (3, 4, 5, 6)] == ["mine", "mine", "mine", "theirs"]
    # the files of the buckets both wrote were rewritten with higher numbers
    live = {Path(p).name for p in pk_table.system_table("files")["file_path"].to_pylist()}
    written = {f.file_name for m in message.messages for f in m.new_files}
    assert written - live


@pytest.mark.interop
def test_pypaimon_reads_a_spark_upsert(
    spark: SparkSession, catalog: shoal.Catalog, warehouse: str
) -> None:
    from tests.interop.pypaimon_oracle import PypaimonOracle

    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, primary_keys=["id"], options={"bucket": "2", "write-only": "true"}
    )
    table.upsert(events(range(6)))
    rows = [("d1", i, "a", 1.0) for i in range(8)] + [("d2", i, "b", 2.0) for i in range(4, 12)]
    frame(spark, rows, slices=2).write.format("shoal").mode("append").save(table.path)
    expected = sorted_rows(table.to_arrow(), "id")
    assert [r["name"] for r in expected] == ["a"] * 4 + ["b"] * 8
    assert sorted_rows(PypaimonOracle().read(warehouse, "db.t"), "id") == expected


def test_prepare_for_write_gives_one_file_per_bucket(
    spark: SparkSession, catalog: shoal.Catalog
) -> None:
    table = catalog.create_table(
        "db.b",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "3", "num-sorted-run.compaction-trigger": "2"},
    )
    rows = [(f"d{i % 2}", i, f"n{i}", float(i)) for i in range(60)]
    prepared = prepare_for_write(frame(spark, rows, slices=4), table.path)
    prepared.write.format("shoal").mode("append").save(table.path)
    files = table.system_table("files")
    buckets = list(zip(files["partition"].to_pylist(), files["bucket"].to_pylist(), strict=True))
    assert len(buckets) == len(set(buckets)) == 6
    assert table.to_arrow().num_rows == 60
    # a second run in each bucket reaches the trigger: the write is followed by a compaction
    prepared.write.format("shoal").mode("append").save(table.path)
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND", "APPEND", "COMPACT"]
    assert sorted_rows(table.to_arrow(), "id") == sorted_rows(
        pa.table(list(zip(*rows, strict=True)), schema=EVENTS_SCHEMA), "id"
    )
    with pytest.raises(SchemaMismatchError):
        prepare_for_write(frame(spark, rows).drop("name"), table.path)


def test_a_failed_task_leaves_the_table_unchanged(
    spark: SparkSession, catalog: shoal.Catalog
) -> None:
    table = catalog.create_table("db.f", EVENTS_SCHEMA, options={"bucket": "2", "bucket-key": "id"})
    table.append(events(range(3)))
    before, rows_before, files_before = table.latest_snapshot(), table.to_arrow(), data_files(table)

    @udf("bigint")
    def fail_on_seven(i: int) -> int:
        if i == 7:
            raise ValueError("injected failure")
        return i

    rows = [("d", i, "x", 1.0) for i in range(10)]
    failing = frame(spark, rows, slices=2).withColumn("id", fail_on_seven(col("id")))
    writer = failing.write.format("shoal").mode("append").option("write-buffer-size", "1")
    with pytest.raises(Exception, match="injected failure"):
        writer.save(table.path)
    assert table.latest_snapshot() == before
    assert table.to_arrow().equals(rows_before)
    # what the tasks wrote is referenced by no snapshot: orphan cleanup removes it
    assert data_files(table) >= files_before
    table.remove_orphan_files(older_than=datetime.now())
    assert data_files(table) == files_before
    assert load(spark, table.path).count() == 3


def test_schema_mismatch_writes_nothing(spark: SparkSession, catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.m", EVENTS_SCHEMA)
    extra = frame(spark, [("d", 1, "x", 1.0)]).withColumn("extra", col("id"))
    with pytest.raises(Exception, match="SchemaMismatchError"):
        extra.write.format("shoal").mode("append").save(table.path)
    wrong_type = frame(spark, [("d", 1, "x", 1.0)]).withColumn("id", col("name"))
    with pytest.raises(Exception, match="SchemaMismatchError"):
        wrong_type.write.format("shoal").mode("append").save(table.path)
    assert table.latest_snapshot() is None
    assert not data_files(table)
