"""Structured Streaming reads through the ``shoal`` source (``spark.readStream``): each
starting offset, append and primary-key tables (changelog and delta), admission
control, restarts from a checkpoint, and snapshots expiring under a query with and
without a consumer id."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

import shoal
from shoal.errors import InvalidOptionError, UnsupportedFeatureError
from shoal.spark.source_options import SourceOptions
from shoal.spark.stream_read import ShoalStreamReader

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), pa.field("v", pa.string())])
SPARK_SCHEMA = StructType([StructField("id", LongType()), StructField("v", StringType())])
FAR = datetime.now() + timedelta(days=1)  # expire_snapshots(older_than=FAR): all may go


def rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def append_table(catalog: shoal.Catalog) -> shoal.Table:
    return catalog.create_table("db.events", SCHEMA)


def keyed(catalog: shoal.Catalog, name: str, **options: str) -> shoal.Table:
    return catalog.create_table(
        name, SCHEMA, primary_keys=["id"], options={"bucket": "1", **options}
    )


class Run:
    """One streaming query into foreachBatch, batch by batch."""

    def __init__(self, checkpoint: Path) -> None:
        self.checkpoint = checkpoint
        self.batches: list[list[dict[str, Any]]] = []

    def _collect(self, frame: DataFrame, batch_id: int) -> None:
        self.batches.append(
            sorted(frame.toArrow().to_pylist(), key=lambda r: tuple(map(str, r.values())))
        )

    def start(
        self, spark: SparkSession, path: str, *, available_now: bool = True, **options: str
    ) -> Any:
        stream = spark.readStream.format("shoal").options(**options).load(path)
        writer = stream.writeStream.foreachBatch(self._collect).option(
            "checkpointLocation", str(self.checkpoint)
        )
        if available_now:
            writer = writer.trigger(availableNow=True)
        return writer.start()

    def once(self, spark: SparkSession, path: str, **options: str) -> list[list[dict[str, Any]]]:
        """Run an availableNow query to its end; the batches it read (empty ones left out)."""
        before = len(self.batches)
        query = self.start(spark, path, **options)
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()
        return [b for b in self.batches[before:] if b]

    @property
    def rows(self) -> list[dict[str, Any]]:
        return sorted(
            (r for b in self.batches for r in b), key=lambda r: tuple(map(str, r.values()))
        )


def ids(batches: list[list[dict[str, Any]]]) -> list[list[int]]:
    return [sorted(r["id"] for r in b) for b in batches]


# --- starting offsets ------------------------------------------------------------------------
def test_default_start_reads_the_table_then_its_commits_and_restarts_from_the_checkpoint(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    append_table.append(rows([1, 2], "a"))
    append_table.append(rows([3], "b"))
    run = Run(tmp_path / "cp")
    assert ids(run.once(spark, append_table.path)) == [[1, 2, 3]]
    append_table.append(rows([4], "c"))
    append_table.append(rows([5], "d"))
    assert ids(run.once(spark, append_table.path)) == [[4, 5]]  # only what is new
    assert ids(run.once(spark, append_table.path)) == []


def test_latest_reads_only_what_is_committed_after_the_start(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    append_table.append(rows([1], "a"))
    run = Run(tmp_path / "cp")
    assert run.once(spark, append_table.path, startingOffsets="latest") == []
    append_table.append(rows([2], "b"))
    assert ids(run.once(spark, append_table.path, startingOffsets="latest")) == [[2]]


def test_earliest_reads_the_earliest_snapshot_in_full_then_each_commit(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    for i in range(1, 5):
        append_table.append(rows([i], "a"))
    append_table.expire_snapshots(retain_max=2, older_than=FAR)  # snapshots 3 and 4 stay
    run = Run(tmp_path / "cp")
    query = run.start(
        spark,
        append_table.path,
        available_now=False,
        startingOffsets="earliest",
        maxFilesPerTrigger="1",
    )
    query.processAllAvailable()
    query.stop()
    # snapshot 3 in full (the files of commits 1 to 3, one batch however many), then 4
    assert ids([b for b in run.batches if b]) == [[1, 2, 3], [4]]


def test_a_snapshot_id_starts_at_that_commit(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    for i in range(1, 4):
        append_table.append(rows([i], "a"))
    assert ids(Run(tmp_path / "cp").once(spark, append_table.path, startingOffsets="2")) == [[2, 3]]


def test_a_tag_starts_with_its_data_then_the_commits_after_it(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    append_table.append(rows([1], "a"))
    append_table.append(rows([2], "b"))
    append_table.create_tag("t", snapshot_id=1)
    append_table.expire_snapshots(retain_max=1, older_than=FAR)  # snapshot 1 gone, tag kept
    append_table.append(rows([3], "c"))
    run = Run(tmp_path / "cp")
    assert ids(run.once(spark, append_table.path, startingOffsets="tag:t")) == [[1, 2, 3]]


def test_a_timestamp_starts_at_the_commits_made_from_then_on(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    append_table.append(rows([1], "a"))
    time.sleep(0.01)
    second = append_table.append(rows([2], "b"))
    append_table.append(rows([3], "c"))
    at = str(second.time_millis)
    assert ids(
        Run(tmp_path / "ms").once(spark, append_table.path, startingOffsets=f"timestamp:{at}")
    ) == [[2, 3]]
    iso = datetime.fromtimestamp(second.time_millis / 1000).astimezone().isoformat()
    got = Run(tmp_path / "iso").once(spark, append_table.path, startingOffsets=f"timestamp:{iso}")
    assert ids(got) == [[2, 3]]


def test_overwrites_add_no_rows_to_the_stream(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    append_table.append(rows([1], "a"))
    run = Run(tmp_path / "cp")
    assert run.once(spark, append_table.path, startingOffsets="latest") == []
    append_table.overwrite(rows([7], "o"))
    append_table.append(rows([2], "b"))
    assert ids(run.once(spark, append_table.path, startingOffsets="latest")) == [[2]]


# --- primary-key tables ----------------------------------------------------------------------
def test_a_primary_key_table_without_a_changelog_producer_streams_its_written_rows(
    spark: SparkSession, catalog: shoal.Catalog, tmp_path: Path
) -> None:
    table = keyed(catalog, "db.pk")
    table.upsert(rows([1, 2], "a"))
    run = Run(tmp_path / "cp")
    assert ids(run.once(spark, table.path)) == [[1, 2]]  # the merged table at the start
    table.upsert(rows([1], "b"))
    table.delete(pa.table({"id": [2]}, schema=pa.schema([SCHEMA.field("id")])))
    table.compact("full")  # adds no rows
    table.upsert(rows([1], "c"))
    assert run.once(spark, table.path) == [[{"id": 1, "v": "b1"}, {"id": 1, "v": "c1"}]]
    audit = Run(tmp_path / "audit").once(spark, table.path + "$audit_log", startingOffsets="2")
    assert audit == [
        [
            {"rowkind": "+I", "id": 1, "v": "b1"},
            {"rowkind": "+I", "id": 1, "v": "c1"},
            {"rowkind": "-D", "id": 2, "v": None},
        ]
    ]


def test_a_primary_key_table_with_a_changelog_producer_streams_its_changelog(
    spark: SparkSession, catalog: shoal.Catalog, tmp_path: Path
) -> None:
    table = keyed(catalog, "db.lookup", **{"changelog-producer": "lookup"})
    table.upsert(rows([1, 2], "a"))
    path = table.path + "$audit_log"
    run = Run(tmp_path / "cp")
    assert run.once(spark, path, startingOffsets="latest") == []
    table.upsert(rows([1, 3], "b"))
    assert run.once(spark, path, startingOffsets="latest") == [
        [
            {"rowkind": "+I", "id": 3, "v": "b3"},
            {"rowkind": "+U", "id": 1, "v": "b1"},
            {"rowkind": "-U", "id": 1, "v": "a1"},
        ]
    ]
    plain = Run(tmp_path / "plain").once(spark, table.path)  # latest-full: the merged table
    assert ids(plain) == [[1, 2, 3]]


def test_audit_log_streams_of_primary_key_tables_that_start_in_full_are_refused(
    catalog: shoal.Catalog,
) -> None:
    table = keyed(catalog, "db.pk")
    options = SourceOptions.parse({"path": table.path + "$audit_log"})
    schema = StructType([StructField("rowkind", StringType()), *SPARK_SCHEMA.fields])
    with pytest.raises(UnsupportedFeatureError, match="startingOffsets"):
        ShoalStreamReader(options, schema)


# --- admission control -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        ({"maxFilesPerTrigger": "2"}, [[1, 2], [3, 4], [5]]),
        ({"maxBytesPerTrigger": "1"}, [[1], [2], [3], [4], [5]]),
    ],
)
def test_admission_control_bounds_each_batch_by_whole_snapshots(
    spark: SparkSession,
    append_table: shoal.Table,
    tmp_path: Path,
    limit: dict[str, str],
    expected: list[list[int]],
) -> None:
    append_table.append(rows([0], "z"))
    for i in range(1, 6):
        append_table.append(rows([i], "a"))
    run = Run(tmp_path / "cp")
    query = run.start(spark, append_table.path, available_now=False, startingOffsets="2", **limit)
    query.processAllAvailable()
    query.stop()
    assert ids([b for b in run.batches if b]) == expected


def test_available_now_reads_every_snapshot_there_is_at_the_start(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    for i in range(1, 4):
        append_table.append(rows([i], "a"))
    got = Run(tmp_path / "cp").once(
        spark, append_table.path, startingOffsets="1", maxFilesPerTrigger="1"
    )
    assert sorted(i for b in ids(got) for i in b) == [1, 2, 3]


# --- expiration under a running query ---------------------------------------------------------
def test_a_snapshot_expiring_under_a_query_without_a_consumer_fails_it_naming_consumer_id(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    append_table.append(rows([1], "a"))
    run = Run(tmp_path / "cp")
    query = run.start(spark, append_table.path, available_now=False)
    query.processAllAvailable()
    for i in range(2, 5):
        append_table.append(rows([i], "b"))
    append_table.expire_snapshots(retain_max=1, older_than=FAR)
    with pytest.raises(StreamingQueryException, match=r"snapshot [23] of table .*consumer-id"):
        query.processAllAvailable()
    query.stop()


def test_a_consumer_id_keeps_the_snapshots_the_query_has_not_read(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    append_table.append(rows([1], "a"))
    run = Run(tmp_path / "cp")
    query = run.start(spark, append_table.path, available_now=False, **{"consumer-id": "etl"})
    query.processAllAvailable()
    consumers = append_table._store.consumers
    # recorded at the start, advanced as Spark commits each batch's offsets (which
    # Spark does when the next batch starts)
    held = consumers.next_snapshot("etl")
    assert held in (1, 2)
    for i in range(2, 5):
        append_table.append(rows([i], "b"))
    append_table.expire_snapshots(retain_max=1, older_than=FAR)
    assert append_table._store.snapshots.earliest_id() <= max(held, 2)
    query.processAllAvailable()
    query.stop()
    assert [r["id"] for r in run.rows] == [1, 2, 3, 4]
    # the stopped query's last batch was never committed to the source: its consumer
    # names that batch's first snapshot (here each snapshot i wrote the id i)
    last = [b for b in run.batches if b][-1]
    assert consumers.next_snapshot("etl") == min(r["id"] for r in last)


def test_a_new_query_under_a_consumer_starts_at_its_next_snapshot(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    for i in range(1, 4):
        append_table.append(rows([i], "a"))
    append_table._store.consumers.record("etl", 3)
    again = Run(tmp_path / "new").once(spark, append_table.path, **{"consumer-id": "etl"})
    assert ids(again) == [[3]]
    assert append_table._store.consumers.next_snapshot("etl") in (3, 4)
    fresh = Run(tmp_path / "ignore").once(
        spark, append_table.path, **{"consumer-id": "etl", "consumer.ignore-progress": "true"}
    )
    assert ids(fresh) == [[1, 2, 3]]


# --- options ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"scan.snapshot-id": "1"}, "scan.snapshot-id"),
        ({"versionAsOf": "1"}, "versionAsOf"),
        ({"scan.tag-name": "t"}, "scan.tag-name"),
        ({"incremental-between": "1,2"}, "incremental-between"),
        ({"read-optimized": "true"}, "read-optimized"),
        ({"startingOffsets": "v1"}, "startingOffsets"),
        ({"startingOffsets": "0"}, "startingOffsets"),
        ({"startingOffsets": "timestamp:2026-11-01T08:00:00"}, "startingOffsets"),
        ({"maxFilesPerTrigger": "0"}, "maxFilesPerTrigger"),
        ({"maxBytesPerTrigger": "lots"}, "maxBytesPerTrigger"),
        ({"consumer.ignore-progress": "yes"}, "consumer.ignore-progress"),
    ],
)
def test_stream_options_that_do_not_apply_are_refused_at_start(
    append_table: shoal.Table, options: dict[str, str], key: str
) -> None:
    parsed = SourceOptions.parse({"path": append_table.path, **options})
    with pytest.raises(InvalidOptionError) as raised:
        ShoalStreamReader(parsed, SPARK_SCHEMA)
    assert raised.value.key.startswith(key)
    assert "startingOffsets" in str(raised.value) or key != "scan.snapshot-id"


def test_a_refused_option_stops_the_query_before_it_reads(
    spark: SparkSession, append_table: shoal.Table, tmp_path: Path
) -> None:
    append_table.append(rows([1], "a"))
    query = Run(tmp_path / "cp").start(spark, append_table.path, **{"scan.snapshot-id": "1"})
    with pytest.raises(StreamingQueryException, match="startingOffsets"):
        query.awaitTermination(120)


def test_stream_options_on_a_batch_read_are_refused(
    spark: SparkSession, append_table: shoal.Table
) -> None:
    append_table.append(rows([1], "a"))
    frame = spark.read.format("shoal").option("startingOffsets", "latest").load(append_table.path)
    with pytest.raises(Exception, match="startingOffsets"):
        frame.collect()
