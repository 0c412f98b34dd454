"""Tags through the table API: creation rules, atomicity, rename, the tags table."""

from __future__ import annotations

import multiprocessing
import threading
from datetime import timedelta

import pyarrow as pa
import pytest

import shoal
from tests.conftest import events


def _try_create(path: str, name: str, results: list[str] | None = None) -> None:
    try:
        shoal.open_table(path).create_tag(name)
        outcome = "won"
    except shoal.TagAlreadyExistsError:
        outcome = "lost"
    if results is not None:
        results.append(outcome)
    else:
        raise SystemExit(0 if outcome == "won" else 3)


def test_create_rules(events_table: shoal.Table) -> None:
    with pytest.raises(shoal.SnapshotNotFoundError):
        events_table.create_tag("empty")
    events_table.append(events([1]))
    events_table.append(events([2]))
    assert events_table.create_tag("v1.0", snapshot_id=1).snapshot_id == 1
    assert events_table.create_tag("latest").snapshot_id == 2
    with pytest.raises(shoal.SnapshotNotFoundError):
        events_table.create_tag("nope", snapshot_id=9)
    with pytest.raises(shoal.TagAlreadyExistsError):
        events_table.create_tag("v1.0")
    assert events_table.create_tag("v1.0", snapshot_id=2, replace=True).snapshot_id == 2
    for bad in ("", "  ", "123", "a/b", "..", "a\\b"):
        with pytest.raises(shoal.InvalidTagNameError):
            events_table.create_tag(bad)
    assert [t.name for t in events_table.list_tags()] == ["latest", "v1.0"]


def test_one_winner_among_threads_and_processes(events_table: shoal.Table) -> None:
    events_table.append(events([1]))
    results: list[str] = []
    barrier = threading.Barrier(8)

    def racer() -> None:
        barrier.wait()
        _try_create(events_table.path, "race", results)

    threads = [threading.Thread(target=racer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["lost"] * 7 + ["won"]
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_try_create, args=(events_table.path, "race2"))
                 for _ in range(3)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=60)
    assert sorted(p.exitcode for p in processes) == [0, 3, 3]


def test_rename_keeps_everything_but_the_name(events_table: shoal.Table) -> None:
    events_table.append(events([1]))
    events_table.create_tag("a", time_retained=timedelta(days=2))
    events_table.create_tag("b")
    with pytest.raises(shoal.TagAlreadyExistsError):
        events_table.rename_tag("a", "b")
    before = {t.name: t for t in events_table.list_tags()}
    events_table.rename_tag("a", "c")
    after = {t.name: t for t in events_table.list_tags()}
    assert set(after) == {"b", "c"}
    assert (after["c"].snapshot_id, after["c"].create_time, after["c"].time_retained) == (
        before["a"].snapshot_id, before["a"].create_time, before["a"].time_retained)
    with pytest.raises(shoal.TagNotFoundError):
        events_table.rename_tag("a", "d")
    events_table.delete_tag("c")
    with pytest.raises(shoal.TagNotFoundError):
        events_table.delete_tag("c")


def test_time_travel_by_tag_on_a_primary_key_table(catalog: shoal.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = catalog.create_table("db.pk", schema, primary_keys=["id"], options={"bucket": "2"})
    table.upsert(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    table.create_tag("first")
    table.upsert(pa.table({"id": [1], "v": ["A"]}, schema=schema))
    table.delete(pa.table({"id": [2]}))
    table.compact("full")
    got = shoal.open_table(table.path).to_arrow(tag="first").sort_by("id").to_pylist()
    assert got == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]


def test_tags_system_table(events_table: shoal.Table) -> None:
    events_table.append(events([1, 2]))
    events_table.create_tag("kept", time_retained=timedelta(hours=25, minutes=1))
    rows = events_table.system_table("tags").to_pylist()
    assert len(rows) == 1
    row = rows[0]
    assert set(row) == {"tag_name", "snapshot_id", "schema_id", "commit_time",
                        "record_count", "create_time", "time_retained"}
    assert (row["tag_name"], row["snapshot_id"], row["record_count"]) == ("kept", 1, 2)
    assert row["time_retained"] == "PT25H1M"
    assert row["create_time"] is not None
