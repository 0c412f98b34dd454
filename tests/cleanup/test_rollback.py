"""Rollback to a snapshot or a tag: later snapshots and tags go, no data file is deleted."""

from __future__ import annotations

import os

import pytest

import shoal
from tests.conftest import events


def _data_files(table: shoal.Table) -> set[str]:
    out = set()
    for root, _, names in os.walk(table.path):
        out.update(os.path.join(root, n) for n in names if n.endswith(".parquet"))
    return out


def test_rollback_to_snapshot(events_table: shoal.Table) -> None:
    for i in range(4):
        events_table.append(events([i]))
    events_table.create_tag("keep", snapshot_id=2)
    events_table.create_tag("later", snapshot_id=4)
    files = _data_files(events_table)
    target = events_table.rollback_to(snapshot_id=2)
    assert target.id == 2
    reopened = shoal.open_table(events_table.path)
    assert [s.id for s in reopened.snapshots()] == [1, 2]
    assert [t.name for t in reopened.list_tags()] == ["keep"]
    assert sorted(reopened.to_arrow().column("id").to_pylist()) == [0, 1]
    assert _data_files(events_table) == files  # orphan cleanup owns the rest
    assert reopened.append(events([9])).id == 3  # history continues from the target


def test_rollback_to_tag_restores_an_expired_snapshot(events_table: shoal.Table) -> None:
    for i in range(3):
        events_table.append(events([i]))
    events_table.create_tag("t1", snapshot_id=1)
    # As if expiration had removed snapshot 1 (the tag keeps its data alive).
    os.unlink(os.path.join(events_table.path, "snapshot", "snapshot-1"))
    reopened = shoal.open_table(events_table.path)
    assert reopened.to_arrow(tag="t1").column("id").to_pylist() == [0]
    reopened.rollback_to(tag="t1")
    again = shoal.open_table(events_table.path)
    assert [s.id for s in again.snapshots()] == [1]
    assert again.latest_snapshot().id == 1
    assert again.to_arrow().column("id").to_pylist() == [0]


def test_rollback_errors(events_table: shoal.Table) -> None:
    events_table.append(events([1]))
    with pytest.raises(shoal.SnapshotNotFoundError):
        events_table.rollback_to(snapshot_id=7)
    with pytest.raises(shoal.TagNotFoundError):
        events_table.rollback_to(tag="nope")
    with pytest.raises(shoal.InvalidArgumentError):
        events_table.rollback_to()
