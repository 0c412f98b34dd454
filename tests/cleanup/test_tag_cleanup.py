"""Deleting the tag of an expired snapshot removes exactly the files only it kept alive."""

from __future__ import annotations

import os

import shoal
from shoal.core.plan import live_entries
from tests.conftest import events


def _expire(table: shoal.Table, *snapshot_ids: int) -> None:
    """Remove snapshot files the way expiration would (their data stays here)."""
    for snapshot_id in snapshot_ids:
        os.unlink(os.path.join(table.path, "snapshot", f"snapshot-{snapshot_id}"))
    with open(os.path.join(table.path, "snapshot", "EARLIEST"), "w") as f:
        f.write(str(max(snapshot_ids) + 1))


def _files_of(table: shoal.Table, snapshot: shoal.Snapshot) -> set[str]:
    store = table._store
    return {
        f"{store.paths.bucket_dir(store.partitions.path(e.partition), e.bucket)}/"
        f"{e.file.file_name}"
        for e in live_entries(store, snapshot)
    }


def test_tag_of_expired_snapshot_takes_its_own_files(events_table: shoal.Table) -> None:
    t = events_table
    t.append(events([1], dt="2026-11-01"))                               # 1
    t.append(events([2], dt="2026-11-02"))                               # 2
    t.create_tag("t2")
    t.overwrite(events([3], dt="2026-11-01"), partition={"dt": "2026-11-01"})  # 3
    t.create_tag("t3")
    t.drop_partitions([{"dt": "2026-11-02"}])                            # 4
    t.append(events([5], dt="2026-11-05"))                               # 5
    t2_snapshot, t3_snapshot = t.snapshot(2), t.snapshot(3)
    only_t2 = _files_of(t, t2_snapshot) - _files_of(t, t3_snapshot)
    assert only_t2  # the file of row 1, overwritten in snapshot 3
    _expire(t, 1, 2, 3)
    t2_lists = [t2_snapshot.base_manifest_list, t2_snapshot.delta_manifest_list]

    reopened = shoal.open_table(t.path)
    reopened.delete_tag("t2")
    assert not any(os.path.exists(p) for p in only_t2)
    assert all(os.path.exists(p) for p in _files_of(t, t3_snapshot))
    manifest_dir = os.path.join(t.path, "manifest")
    assert not any(os.path.exists(os.path.join(manifest_dir, n)) for n in t2_lists)
    # Everything that remains still reads.
    assert reopened.to_arrow(tag="t3").column("id").to_pylist() == sorted(
        reopened.to_arrow(tag="t3").column("id").to_pylist()
    )
    assert sorted(reopened.to_arrow(tag="t3").column("id").to_pylist()) == [2, 3]
    assert sorted(reopened.to_arrow().column("id").to_pylist()) == [3, 5]
    assert sorted(reopened.to_arrow(snapshot_id=4).column("id").to_pylist()) == [3]


def test_tag_of_a_live_snapshot_or_a_shared_one_removes_only_the_tag(
    events_table: shoal.Table,
) -> None:
    t = events_table
    t.append(events([1]))
    for name in ("a", "b", "c"):
        t.create_tag(name)
    t.overwrite(events([2]))
    files = _files_of(t, t.snapshot(1))
    t.delete_tag("a")  # snapshot 1 is alive: only the tag file goes
    assert all(os.path.exists(p) for p in files)
    _expire(t, 1)
    reopened = shoal.open_table(t.path)
    reopened.delete_tag("b")  # "c" still holds snapshot 1
    assert all(os.path.exists(p) for p in files)
    assert reopened.to_arrow(tag="c").column("id").to_pylist() == [1]
    reopened.delete_tag("c")  # the last holder: its own files go
    assert not any(os.path.exists(p) for p in files)
    assert reopened.to_arrow().column("id").to_pylist() == [2]


def test_older_tag_keeps_files_the_deleted_tag_shared(events_table: shoal.Table) -> None:
    t = events_table
    t.append(events([1], dt="2026-11-01"))                                      # 1
    t.create_tag("old")
    t.append(events([2], dt="2026-11-02"))                                      # 2
    t.create_tag("mid")
    t.overwrite(events([3], dt="2026-11-01"), partition={"dt": "2026-11-01"})   # 3
    t.append(events([4], dt="2026-11-03"))                                      # 4
    shared = _files_of(t, t.snapshot(1))  # row 1's file: in "old" and "mid", gone at 3
    _expire(t, 1, 2, 3)
    reopened = shoal.open_table(t.path)
    reopened.delete_tag("mid")
    assert all(os.path.exists(p) for p in shared)
    assert reopened.to_arrow(tag="old").column("id").to_pylist() == [1]
