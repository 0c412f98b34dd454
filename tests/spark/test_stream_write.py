"""Structured Streaming into shoal tables: ``writeStream.format("shoal")``.

Each micro-batch is one snapshot carrying the query's commit user and the batch id,
and a batch that was committed before is never committed again: not when Spark's
commit runs twice, not when a driver killed between the table commit and Spark's
checkpoint replays the batch. Input is a file source read with ``availableNow`` and
one file per trigger, so the batches are known in advance.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

import shoal
from shoal.core.store import FileStore
from shoal.errors import InvalidOptionError
from shoal.spark.source_options import SourceOptions, open_store
from shoal.spark.stream_write import ShoalStreamWriter, stream_commit_user
from shoal.spark.types import spark_schema
from shoal.spark.write import ShoalCommitMessage, ShoalWriter
from shoal.write.commit import new_commit_user
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows

pytestmark = pytest.mark.spark

EVENTS_DDL = "dt string, id bigint, name string, value double"
DRIVER = Path(__file__).with_name("stream_kill_driver.py")
ROOT = Path(__file__).resolve().parents[2]


def add_input(directory: Path, rows: pa.Table) -> None:
    """One more JSON file of ``rows``, newer than every file before it (the file source
    takes them by modification time)."""
    directory.mkdir(parents=True, exist_ok=True)
    index = len(list(directory.glob("*.json")))
    path = directory / f"part-{index:03d}.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows.to_pylist()))
    stamp = 1_700_000_000 + index * 10
    os.utime(path, (stamp, stamp))


def stream(spark: SparkSession, directory: Path) -> DataFrame:
    return spark.readStream.schema(EVENTS_DDL).option("maxFilesPerTrigger", 1).json(str(directory))


def run(df: DataFrame, table: shoal.Table, checkpoint: Path, mode: str = "append") -> None:
    """Every batch ``df`` has now, into ``table``."""
    query = (
        df.writeStream.format("shoal")
        .outputMode(mode)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start(table.path)
    )
    query.awaitTermination()
    assert query.exception() is None


def identifiers(table: shoal.Table) -> list[tuple[str, int]]:
    return [(s.commit_kind, s.commit_identifier) for s in table.snapshots()]


def users(table: shoal.Table) -> set[str]:
    return {s.commit_user for s in table.snapshots()}


def live_files(table: shoal.Table) -> set[str]:
    return {Path(p).name for p in table.system_table("files")["file_path"].to_pylist()}


def writer(table: shoal.Table, overwrite: bool = False, **options: str) -> ShoalStreamWriter:
    """The writer Spark makes for each batch (in the planning worker, and again in the
    commit worker), made here."""
    raw = {"path": table.path, "checkpointLocation": "/checkpoints/q", **options}
    schema = spark_schema(open_store(table.path).schema.fields)
    return ShoalStreamWriter(SourceOptions.parse(raw), schema, overwrite)


def files_of(message: Any) -> set[str]:
    assert isinstance(message, ShoalCommitMessage)
    return {f.file_name for m in message.messages for f in m.new_files}


# --- the commit, without Spark ----------------------------------------------------------------
@pytest.mark.parametrize("kind", ["append", "fixed buckets", "dynamic buckets"])
def test_a_batch_commits_once(catalog: shoal.Catalog, kind: str) -> None:
    keys = {"append": None, "fixed buckets": "2", "dynamic buckets": "-1"}[kind]
    table = catalog.create_table(
        "db.t",
        EVENTS_SCHEMA,
        primary_keys=None if keys is None else ["id"],
        options={} if keys is None else {"bucket": keys},
    )
    first = writer(table).write(iter(events(range(4)).to_batches()))
    writer(table).commit([first], 0)
    # Spark runs batch 0 again (its commit was not recorded): the tasks write again...
    again = writer(table).write(iter(events(range(4)).to_batches()))
    writer(table).commit([again], 0)
    assert identifiers(table) == [("APPEND", 0)]
    writer(table).commit([again], -1)  # an older batch is never committed either
    assert identifiers(table) == [("APPEND", 0)]
    later = writer(table).write(iter(events(range(3, 6)).to_batches()))
    writer(table).commit([later], 1)
    assert identifiers(table) == [("APPEND", 0), ("APPEND", 1)]
    rows = 6 if keys is not None else 7  # keys 0..5 once; an append table: 4 + 3 rows
    assert table.to_arrow().num_rows == rows
    assert len(users(table)) == 1
    # ... and the replay's files are referenced by no snapshot: orphan cleanup takes them
    replayed = files_of(again)
    assert not replayed & live_files(table)
    time.sleep(0.05)
    removed = table.remove_orphan_files(older_than=datetime.now(UTC))
    assert {Path(p).name for p in removed.paths} == replayed
    assert table.to_arrow().num_rows == rows


def test_the_compaction_after_a_batch_carries_its_identifier(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.pk",
        EVENTS_SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "num-sorted-run.compaction-trigger": "2"},
    )
    for batch in range(3):
        message = writer(table).write(iter(events(range(batch, batch + 2)).to_batches()))
        writer(table).commit([message], batch)
    # the compaction after batch 1 is batch 1's too, so batch 2 is not taken as committed
    assert identifiers(table)[:3] == [("APPEND", 0), ("APPEND", 1), ("COMPACT", 1)]
    assert identifiers(table)[3] == ("APPEND", 2)
    assert sorted(table.to_arrow()["id"].to_pylist()) == [0, 1, 2, 3]


def test_an_empty_append_batch_commits_nothing(events_table: shoal.Table) -> None:
    empty = writer(events_table).write(iter([]))
    writer(events_table).commit([empty], 0)
    assert identifiers(events_table) == []


def test_the_commit_user_is_the_checkpoints(events_table: shoal.Table) -> None:
    store = open_store(events_table.path)

    def user(**options: str) -> str:
        return stream_commit_user(SourceOptions.parse({"path": "t", **options}), store)

    same = {user(checkpointLocation=c) for c in ("/ck/q", "/ck/q/", "file:/ck/q", "file:///ck/q")}
    assert len(same) == 1
    assert user(checkpointLocation="s3://bucket/ck/q") not in same
    assert user(**{"commit-user": "nightly"}) == "nightly"
    # Paimon's commit.user-prefix, on a table written elsewhere, leads the derived user
    prefixed = replace(store.schema, options={**store.schema.options, "commit.user-prefix": "etl"})
    derived = stream_commit_user(
        SourceOptions.parse({"path": "t", "checkpointLocation": "/ck/q"}),
        FileStore(store.file_io, store.uri, store.root, prefixed),
    )
    assert derived == f"etl_{next(iter(same))}"
    assert new_commit_user({"commit.user-prefix": "etl"}).startswith("etl_")


def test_refused_before_anything_is_written(events_table: shoal.Table) -> None:
    with pytest.raises(InvalidOptionError, match="checkpointLocation") as no_checkpoint:
        writer(events_table, checkpointLocation="")
    assert "spark.sql.streaming.checkpointLocation" in str(no_checkpoint.value)
    with pytest.raises(InvalidOptionError, match="absolute path"):
        writer(events_table, checkpointLocation="checkpoints/q")
    with pytest.raises(InvalidOptionError, match="partitionOverwriteMode"):
        writer(events_table, True, partitionOverwriteMode="dynamic")
    schema = spark_schema(open_store(events_table.path).schema.fields)
    options = SourceOptions.parse({"path": events_table.path, "commit-user": "q"})
    with pytest.raises(InvalidOptionError, match="commit-user"):
        ShoalWriter(options, schema, False)  # a batch write's identifier would hide batches
    assert identifiers(events_table) == []


# --- queries ----------------------------------------------------------------------------------
def test_append(spark: SparkSession, events_table: shoal.Table, tmp_path: Path) -> None:
    source = tmp_path / "in"
    add_input(source, events(range(3), "d1"))
    add_input(source, events(range(3, 5), "d2"))
    run(stream(spark, source), events_table, tmp_path / "ck")
    assert identifiers(events_table) == [("APPEND", 0), ("APPEND", 1)]
    assert sorted_rows(events_table.to_arrow(), "id") == sorted_rows(
        pa.concat_tables([events(range(3), "d1"), events(range(3, 5), "d2")]), "id"
    )
    # the query goes on where it stopped, as the same commit user
    add_input(source, events(range(5, 6), "d2"))
    run(stream(spark, source), events_table, tmp_path / "ck")
    assert identifiers(events_table)[-1] == ("APPEND", 2)
    assert len(users(events_table)) == 1
    assert events_table.to_arrow().num_rows == 6


def test_upsert(spark: SparkSession, catalog: shoal.Catalog, tmp_path: Path) -> None:
    table = catalog.create_table(
        "db.pk", EVENTS_SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    source = tmp_path / "in"
    add_input(source, events(range(5), "d1"))
    add_input(source, events(range(3, 8), "d2"))
    run(stream(spark, source), table, tmp_path / "ck")
    assert [i for _, i in identifiers(table)] == [0, 1]
    rows = {r["id"]: r["dt"] for r in table.to_arrow().to_pylist()}
    assert rows == {0: "d1", 1: "d1", 2: "d1", 3: "d2", 4: "d2", 5: "d2", 6: "d2", 7: "d2"}


def test_complete_overwrites_the_table(
    spark: SparkSession, catalog: shoal.Catalog, tmp_path: Path
) -> None:
    counts = catalog.create_table("db.c", pa.schema([("dt", pa.string()), ("n", pa.int64())]))
    source = tmp_path / "in"
    add_input(source, events(range(3), "d1"))
    add_input(source, events(range(3, 5), "d2"))
    aggregate = stream(spark, source).groupBy("dt").count().withColumnRenamed("count", "n")
    run(aggregate, counts, tmp_path / "ck", mode="complete")
    assert identifiers(counts) == [("OVERWRITE", 0), ("OVERWRITE", 1)]
    assert sorted_rows(counts.to_arrow(), "dt") == [{"dt": "d1", "n": 3}, {"dt": "d2", "n": 2}]


def test_update_mode_is_refused_at_start(
    spark: SparkSession, catalog: shoal.Catalog, tmp_path: Path
) -> None:
    table = catalog.create_table(
        "db.pk", EVENTS_SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    add_input(tmp_path / "in", events(range(2)))
    with pytest.raises(Exception, match="does not support Update mode"):
        run(stream(spark, tmp_path / "in"), table, tmp_path / "ck", mode="update")
    assert identifiers(table) == []


def test_a_replayed_batch_is_skipped(
    spark: SparkSession, events_table: shoal.Table, tmp_path: Path
) -> None:
    source, checkpoint = tmp_path / "in", tmp_path / "ck"
    add_input(source, events(range(3), "d1"))
    add_input(source, events(range(3, 5), "d1"))
    run(stream(spark, source), events_table, checkpoint)
    # as if the driver had died between batch 1's commit and Spark's record of it
    for name in ("1", ".1.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    add_input(source, events(range(5, 7), "d2"))
    run(stream(spark, source), events_table, checkpoint)
    assert identifiers(events_table) == [("APPEND", 0), ("APPEND", 1), ("APPEND", 2)]
    assert sorted(events_table.to_arrow()["id"].to_pylist()) == list(range(7))
    # Spark did run batch 1 again: its files are on disk, in no snapshot
    on_disk = {p.name for p in Path(events_table.path).rglob("*.parquet")}
    assert on_disk - live_files(events_table)


def test_a_driver_killed_after_the_commit(
    spark: SparkSession, events_table: shoal.Table, tmp_path: Path
) -> None:
    source, checkpoint = tmp_path / "in", tmp_path / "ck"
    for i in range(3):
        add_input(source, events(range(i * 3, i * 3 + 3), f"d{i}"))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    driver = subprocess.run(
        [sys.executable, str(DRIVER), str(source), str(checkpoint), events_table.path],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert driver.returncode not in (0, 3), driver.stderr[-3000:]
    # batch 1 is in the table, but not in Spark's commit log: Spark will run it again
    assert identifiers(events_table) == [("APPEND", 0), ("APPEND", 1)]
    assert (checkpoint / "offsets" / "1").exists()
    assert not (checkpoint / "commits" / "1").exists()
    committed = live_files(events_table)
    run(stream(spark, source), events_table, checkpoint)  # the restart, from the checkpoint
    assert identifiers(events_table) == [("APPEND", 0), ("APPEND", 1), ("APPEND", 2)]
    assert (checkpoint / "commits" / "1").exists()
    assert sorted_rows(events_table.to_arrow(), "id") == sorted_rows(
        pa.concat_tables([events(range(i * 3, i * 3 + 3), f"d{i}") for i in range(3)]), "id"
    )
    # the replay of batch 1 wrote its files again; no snapshot references them
    on_disk = {p.name for p in Path(events_table.path).rglob("*.parquet")}
    replayed = on_disk - live_files(events_table)
    assert replayed
    assert committed <= live_files(events_table)
    time.sleep(0.05)
    removed = events_table.remove_orphan_files(older_than=datetime.now(UTC))
    assert {Path(p).name for p in removed.paths} >= replayed
    assert {p.name for p in Path(events_table.path).rglob("*.parquet")} == live_files(events_table)
