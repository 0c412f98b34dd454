"""Expiration honours consumers: no snapshot or long-lived changelog at or above a
consumer's next snapshot goes, the result and the log name the consumers that held
them, and ``consumer.expiration-time`` deletes stale consumers first; the table's
consumer calls and the ``consumers`` system table."""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from shoal.table import Table
from tests.reachability import reachable, rows_of_every_root, stored

SCHEMA = pa.schema([("id", pa.int64())])
PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
LATER = datetime.now() + timedelta(days=1)  # every snapshot is older than this


def make(tmp_path: Path, name: str = "db.t", **options: str) -> Table:
    return shoal.Catalog(str(tmp_path)).create_table(name, SCHEMA, options=options)


def commits(table: Table, n: int) -> None:
    for i in range(n):
        table.overwrite(pa.table({"id": [i]}, schema=SCHEMA))  # each frees the last one's file


def ids(table: Table) -> list[int]:
    return [s.id for s in table.snapshots()]


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_no_snapshot_at_or_above_a_consumers_next_snapshot_expires(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    table = make(tmp_path)
    commits(table, 8)
    before = rows_of_every_root(table)
    table.reset_consumer("slow", 3)
    table.reset_consumer("fast", 6)
    with caplog.at_level(logging.INFO, logger="shoal.cleanup.expire"):
        result = table.expire_snapshots(retain_max=1, older_than=LATER)
    assert ids(table) == [3, 4, 5, 6, 7, 8]  # beyond retain_max too, as in Paimon
    assert result.expired_snapshots == 2
    assert result.held_by_consumers == ("slow",)
    assert "'slow'" in caplog.text
    assert "from 3 on" in caplog.text
    after = rows_of_every_root(table)
    assert after == {k: before[k] for k in after}
    assert stored(table) == reachable(table)
    # The slow consumer moves on: expiration follows it, and only it holds.
    table.reset_consumer("slow", 7)
    result = table.expire_snapshots(retain_max=1, older_than=LATER)
    assert ids(table) == [6, 7, 8]
    assert result.held_by_consumers == ("fast",)
    table.delete_consumer("fast")
    table.delete_consumer("slow")
    result = table.expire_snapshots(retain_max=1, older_than=LATER)
    assert ids(table) == [8]
    assert result.held_by_consumers == ()
    assert stored(table) == reachable(table)


def test_a_consumer_below_the_earliest_snapshot_stops_all_expiration(tmp_path: Path) -> None:
    table = make(tmp_path)
    commits(table, 6)
    table.expire_snapshots(retain_max=4, older_than=LATER)
    assert ids(table) == [3, 4, 5, 6]
    table._store.consumers.record("behind", 1)  # as Paimon's engines may leave it
    result = table.expire_snapshots(retain_max=1, older_than=LATER)
    assert ids(table) == [3, 4, 5, 6]
    assert result.held_by_consumers == ("behind",)


def test_consumers_hold_nothing_the_retention_keeps_anyway(tmp_path: Path) -> None:
    table = make(tmp_path)
    commits(table, 6)
    table.reset_consumer("reader", 4)
    # The age threshold keeps everything: the consumer held nothing back.
    result = table.expire_snapshots(retain_max=10, older_than=datetime(2000, 1, 1))
    assert (result.expired_snapshots, result.held_by_consumers) == (0, ())
    # retain_min keeps 5 and 6; the limit stops at 2: the consumer at 4 held nothing.
    result = table.expire_snapshots(retain_min=2, max_deletes=1, older_than=LATER)
    assert (ids(table), result.held_by_consumers) == ([2, 3, 4, 5, 6], ())
    result = table.expire_snapshots(retain_min=1, older_than=LATER)
    assert (ids(table), result.held_by_consumers) == ([4, 5, 6], ("reader",))


def test_commits_expire_stale_consumers_before_snapshots(tmp_path: Path) -> None:
    table = make(
        tmp_path,
        **{
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "2",
            "consumer.expiration-time": "1 h",
        },
    )
    commits(table, 3)
    assert ids(table) == [2, 3]
    table.reset_consumer("gone", 3)
    table.reset_consumer("live", 4)
    commits(table, 2)
    assert ids(table) == [3, 4, 5]  # snapshot 3 is held by "gone"
    age(Path(table.path) / "consumer" / "consumer-gone", 2 * 3600)
    commits(table, 1)
    # The commit's maintenance deleted "gone" first, then expired by "live".
    assert table.consumers() == {"live": 4}
    assert ids(table) == [4, 5, 6]
    assert stored(table) == reachable(table)


def test_explicit_expiration_expires_stale_consumers_first(tmp_path: Path) -> None:
    table = make(tmp_path, **{"consumer.expiration-time": "1 d", "write-only": "true"})
    commits(table, 5)
    table.reset_consumer("stale", 2)
    table.reset_consumer("fresh", 4)
    age(Path(table.path) / "consumer" / "consumer-stale", 2 * 86400)
    result = table.expire_snapshots(retain_max=1, older_than=LATER)
    assert result.expired_consumers == ("stale",)
    assert result.held_by_consumers == ("fresh",)
    assert ids(table) == [4, 5]
    assert table.consumers() == {"fresh": 4}


def test_without_the_option_consumers_never_expire(tmp_path: Path) -> None:
    table = make(tmp_path, **{"write-only": "true"})
    commits(table, 3)
    table.reset_consumer("old", 2)
    age(Path(table.path) / "consumer" / "consumer-old", 365 * 86400)
    result = table.expire_snapshots(retain_max=1, older_than=LATER)
    assert (result.expired_consumers, table.consumers(), ids(table)) == ((), {"old": 2}, [2, 3])


def test_long_lived_changelogs_at_or_above_a_consumer_stay(tmp_path: Path) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.pk",
        PK_SCHEMA,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "changelog-producer": "input",
            "write-only": "true",
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "1",
            "changelog.num-retained.max": "100",
            "changelog.time-retained": "1 d",
        },
    )
    for i in range(8):
        table.upsert(pa.table({"id": [i % 3], "v": [f"v{i}"]}, schema=PK_SCHEMA))
    table.expire_snapshots(older_than=LATER)
    assert table._store.changelogs.list_ids() == list(range(1, 8))
    expected = table.incremental(3, 8, scan_mode="changelog", row_kind=True).to_pylist()
    table.reset_consumer("stream", 4)  # a long-lived changelog is a valid position
    with table.update_schema() as update:
        update.set_option("changelog.num-retained.max", "2")
    result = table.expire_snapshots(older_than=LATER)
    # The retention alone keeps changelogs 7.. (2 counted from snapshot 8).
    assert table._store.changelogs.list_ids() == [4, 5, 6, 7]
    assert result.expired_changelogs == 3
    assert result.held_by_consumers == ("stream",)
    assert table.incremental(3, 8, scan_mode="changelog", row_kind=True).to_pylist() == expected
    table.delete_consumer("stream")
    table.expire_snapshots(older_than=LATER)
    assert table._store.changelogs.list_ids() == [7]


# --- the table's calls ------------------------------------------------------------------------
def test_reset_consumer_takes_snapshots_from_the_earliest_to_the_next(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.reset_consumer("new", 1)  # an empty table: the first snapshot to come
    table.delete_consumer("new")
    commits(table, 4)
    table.expire_snapshots(retain_max=2, older_than=LATER)
    assert ids(table) == [3, 4]
    for bad in (2, 6, 0, -1, "3", 3.0, None):
        with pytest.raises(shoal.InvalidArgumentError):
            table.reset_consumer("c", bad)  # type: ignore[arg-type]
    for bad_id in ("", "a/b", "../escape", "x\\y"):
        with pytest.raises(shoal.InvalidArgumentError):
            table.reset_consumer(bad_id, 3)
        with pytest.raises(shoal.InvalidArgumentError):
            table.delete_consumer(bad_id)
    assert table.consumers() == {}
    assert not (Path(table.path) / "consumer").exists() or not os.listdir(
        Path(table.path) / "consumer"
    )
    table.reset_consumer("c", 3)
    table.reset_consumer("d", 5)
    assert table.consumers() == {"c": 3, "d": 5}
    assert shoal.open_table(table.path).system_table("consumers").to_pylist() == [
        {"consumer_id": "c", "next_snapshot_id": 3},
        {"consumer_id": "d", "next_snapshot_id": 5},
    ]
    schema = table.system_table("consumers").schema
    assert [(f.name, f.type) for f in schema] == [
        ("consumer_id", pa.string()),
        ("next_snapshot_id", pa.int64()),
    ]
    table.delete_consumer("c")
    table.delete_consumer("c")  # none by that id: nothing to do, as in Paimon
    assert table.consumers() == {"d": 5}


def test_consumer_mode_at_least_once_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    with pytest.raises(shoal.UnsupportedFeatureError) as info:
        catalog.create_table("db.t", SCHEMA, options={"consumer.mode": "at-least-once"})
    assert info.value.feature == "consumer.mode"
    assert "exactly-once" in str(info.value)
    assert not (tmp_path / "db.db" / "t").exists()
    with pytest.raises(shoal.InvalidOptionError):
        catalog.create_table("db.t", SCHEMA, options={"consumer.mode": "sometimes"})
    table = catalog.create_table(
        "db.t", SCHEMA, options={"consumer.mode": "exactly-once", "consumer-id": "r"}
    )
    with pytest.raises(shoal.UnsupportedFeatureError), table.update_schema() as update:
        update.set_option("consumer.mode", "at-least-once")
    assert shoal.open_table(table.path).options["consumer.mode"] == "exactly-once"
