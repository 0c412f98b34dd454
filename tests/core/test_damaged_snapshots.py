"""One damaged snapshot file hides no other snapshot: ``snapshots()`` lists the readable
ones, ``damaged_snapshots()`` and the ``snapshots`` system table name the damaged one,
reading at it still raises CorruptMetadataError, and a rollback below it works."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

import shoal
from tests.conftest import events

SNAPSHOTS = 4

DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda data: data[: len(data) // 2],
    "emptied": lambda _: b"",
    "garbage": lambda data: bytes((b * 7 + 13) % 256 for b in data),
}
WHERE = {"middle": 3, "latest": SNAPSHOTS}


@pytest.fixture
def table(events_table: shoal.Table) -> shoal.Table:
    for i in range(SNAPSHOTS):
        events_table.append(events(range(i * 10, i * 10 + 3)))
    events_table.create_tag("first", snapshot_id=1)
    return events_table


def damage(table: shoal.Table, snapshot_id: int, how: str) -> Path:
    path = Path(table.path) / "snapshot" / f"snapshot-{snapshot_id}"
    path.write_bytes(DAMAGE[how](path.read_bytes()))
    return path


def reopen(table: shoal.Table) -> shoal.Table:
    return shoal.open_table(table.path)


@pytest.mark.parametrize("where", sorted(WHERE))
@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_the_listing_shows_the_others_and_names_the_damaged_one(
    table: shoal.Table, caplog: pytest.LogCaptureFixture, how: str, where: str
) -> None:
    victim = WHERE[where]
    path = damage(table, victim, how)
    opened = reopen(table)
    others = [i for i in range(1, SNAPSHOTS + 1) if i != victim]

    with caplog.at_level(logging.WARNING, logger="shoal"):
        assert [s.id for s in opened.snapshots()] == others
    assert any(f"snapshot {victim}" in r.getMessage() for r in caplog.records)

    damaged = opened.damaged_snapshots()
    assert list(damaged) == [victim]
    assert isinstance(damaged[victim], shoal.CorruptMetadataError)
    assert damaged[victim].path == str(path)

    listed = opened.system_table("snapshots").to_pylist()
    assert [r["snapshot_id"] for r in listed] == list(range(1, SNAPSHOTS + 1))
    row = listed[victim - 1]
    assert row["status"] == "damaged"
    assert path.name in row["error"]
    assert "restore" in row["error"]
    assert row["commit_kind"] is None
    assert row["total_record_count"] is None
    for other in (r for r in listed if r["snapshot_id"] != victim):
        assert other["status"] == "ok"
        assert other["error"] is None
        assert other["total_record_count"] == other["snapshot_id"] * 3

    # Reading at the damaged snapshot still fails, naming its file.
    for read in (
        lambda: opened.to_arrow(snapshot_id=victim),
        lambda: opened.snapshot(victim),
    ):
        with pytest.raises(shoal.CorruptMetadataError) as info:
            read()
        assert info.value.path == str(path)


def test_a_damaged_middle_snapshot_leaves_the_latest_readable(table: shoal.Table) -> None:
    damage(table, 2, "truncated")
    opened = reopen(table)
    assert opened.to_arrow().num_rows == SNAPSHOTS * 3
    assert opened.to_arrow(snapshot_id=1).num_rows == 3
    assert opened.to_arrow(tag="first").num_rows == 3
    assert opened.latest_snapshot().id == SNAPSHOTS


def test_a_damaged_latest_snapshot_still_fails_what_reads_it(table: shoal.Table) -> None:
    path = damage(table, SNAPSHOTS, "emptied")
    opened = reopen(table)
    reads: list[Callable[[], object]] = [
        opened.to_arrow,
        opened.latest_snapshot,
        lambda: opened.scan().plan(),
        lambda: opened.system_table("files"),
        lambda: opened.system_table("partitions"),
    ]
    for read in reads:
        with pytest.raises(shoal.CorruptMetadataError) as info:
            read()
        assert info.value.path == str(path)
    # The tables that describe the table rather than a snapshot stay readable.
    assert opened.system_table("options").num_rows == 0
    assert opened.system_table("schemas").num_rows == 1
    assert opened.system_table("tags").column("tag_name").to_pylist() == ["first"]
    # Time travel to a damaged snapshot named explicitly fails for the others too.
    with pytest.raises(shoal.CorruptMetadataError):
        opened.system_table("tags", snapshot_id=SNAPSHOTS)
    assert opened.system_table("files", snapshot_id=2).num_rows == 2


@pytest.mark.parametrize("where", sorted(WHERE))
def test_rollback_below_the_damage_after_listing(table: shoal.Table, where: str) -> None:
    victim = WHERE[where]
    damage(table, victim, "garbage")
    opened = reopen(table)
    target = max(s.id for s in opened.snapshots() if s.id < min(opened.damaged_snapshots()))
    assert target == victim - 1

    assert opened.rollback_to(snapshot_id=target).id == target
    assert [s.id for s in opened.snapshots()] == list(range(1, target + 1))
    assert opened.damaged_snapshots() == {}
    assert set(opened.system_table("snapshots").column("status").to_pylist()) == {"ok"}
    assert opened.to_arrow().num_rows == target * 3
    assert opened.append(events(range(100, 101))).id == target + 1


def test_several_damaged_snapshots(table: shoal.Table) -> None:
    damage(table, 1, "emptied")
    damage(table, 3, "truncated")
    opened = reopen(table)
    assert [s.id for s in opened.snapshots()] == [2, 4]
    assert sorted(opened.damaged_snapshots()) == [1, 3]
    statuses = opened.system_table("snapshots").column("status").to_pylist()
    assert statuses == ["damaged", "ok", "damaged", "ok"]


def test_a_healthy_table_has_no_damaged_snapshots(table: shoal.Table) -> None:
    assert table.damaged_snapshots() == {}
    listed = table.system_table("snapshots")
    assert listed.column("status").to_pylist() == ["ok"] * SNAPSHOTS
    assert listed.column("error").null_count == SNAPSHOTS
