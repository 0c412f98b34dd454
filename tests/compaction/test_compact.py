"""Compaction that loses a race to a concurrent commit: it plans again, keeps what is
still valid, and deletes what it rewrote when it gives up.

A concurrent commit is run at a chosen step of the compaction in one process (the
rewrite, the planning, the publication of the snapshot), through another handle on
the same table, as another process would. The race of real processes is in
``tests/reliability/test_compaction_race.py``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shoal
from shoal.compaction.compact import CompactTask, compact, rewrite_locally
from shoal.compaction.strategies import FullCompaction
from shoal.core.store import FileStore
from shoal.event_time.strategy import event_time_compaction
from shoal.io import LocalFileIO
from shoal.primary_key.runs import CompactStrategy, CompactUnit, SortedRun
from shoal.table import Table
from shoal.write.files import CommitMessage
from tests.reachability import reachable, stored

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("ts", pa.timestamp("ms")),
                    ("v", pa.string())])
OLD, NEW = "old", "new"  # two partitions, one bucket each


def rows(dt: str, ids: Sequence[int], v: str, hour: int = 1) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": list(ids),
                     "ts": [datetime(2026, 1, 1, hour)] * len(ids),
                     "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA)


def make(tmp_path: Path, options: dict[str, str] | None = None) -> shoal.Table:
    """Two partitions with three level-0 files each: partition ``old`` holds event
    times at 01:00, ``new`` at 09:00."""
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
        options={"bucket": "1", "write-only": "true", "compaction.event-time.field": "ts",
                 **(options or {})})
    for n in range(3):
        table.upsert(pa.concat_tables([rows(OLD, range(n, n + 4), f"o{n}-"),
                                       rows(NEW, range(n, n + 4), f"n{n}-", hour=9)]))
    return table


def view(table: shoal.Table, **kw: Any) -> list[dict[str, Any]]:
    return table.to_arrow(**kw).sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()


def data_files(table: shoal.Table) -> set[str]:
    """The data files in the table's bucket directories."""
    return {p for p in stored(table) if "/bucket-" in p}


def unreferenced(table: shoal.Table) -> set[str]:
    """Data files no snapshot or tag names: orphans."""
    return data_files(table) - reachable(table)


def bucket_of(table: shoal.Table, dt: str) -> tuple[bytes, int]:
    return (table._store.partitions.to_bytes((dt,)), 0)


@dataclass
class Rewrites:
    """A ``RewriteAll`` that records what each call rewrote and wrote, and runs
    ``meanwhile`` after the ``n``-th call: between the rewrite and the commit."""

    meanwhile: Callable[[int], object] = lambda n: None
    calls: list[list[str]] = field(default_factory=list)  # the partitions of each call
    written: list[str] = field(default_factory=list)  # paths of every file written

    def __call__(self, store: FileStore, tasks: Sequence[CompactTask]) -> list[CommitMessage]:
        messages = rewrite_locally(store, tasks)
        self.calls.append(sorted(store.partitions.to_dict(t.partition)["dt"] for t in tasks))
        for m in messages:
            bucket_dir = store.paths.bucket_dir(store.partitions.path(m.partition), m.bucket)
            self.written.extend(f"{bucket_dir}/{f.file_name}" for f in m.new_files)
        self.meanwhile(len(self.calls))
        return messages


def test_a_compaction_that_lost_one_bucket_rewrites_that_bucket_only(tmp_path: Path) -> None:
    table = make(tmp_path)
    other = shoal.open_table(table.path)  # another process
    late = pa.concat_tables([rows(OLD, [1, 100], "x"), rows(NEW, [1, 100], "x")])
    expected = {(r["dt"], r["id"]): r for r in view(table) + late.to_pylist()}

    def meanwhile(call: int) -> None:
        if call == 1:  # the other compacts partition "new", then writes to both
            compact(other._store, other._committer, FullCompaction(), [bucket_of(other, NEW)])
            other.upsert(late)

    rewrites = Rewrites(meanwhile)
    result = compact(table._store, table._committer, FullCompaction(), rewrite_all=rewrites)
    assert result.attempts == 2
    # partition "old" kept its first rewrite; "new" was planned again on the other's output
    assert rewrites.calls == [[NEW, OLD], [NEW]]
    assert result.compacted_files == 3 + 2  # old: three files; new: the other's and one
    kinds = [s.commit_kind for s in table.snapshots()]
    assert kinds == ["APPEND"] * 3 + ["COMPACT", "APPEND", "COMPACT"]
    assert view(table) == [expected[k] for k in sorted(expected)]
    first_new = [p for p in rewrites.written[:2] if "/dt=new/" in p]
    assert first_new
    assert not any(os.path.exists(p) for p in first_new)  # void, deleted at once
    assert not unreferenced(table)


def test_an_upsert_meanwhile_is_no_conflict(tmp_path: Path) -> None:
    table = make(tmp_path)
    other = shoal.open_table(table.path)
    rewrites = Rewrites(lambda call: other.upsert(rows(OLD, [1, 50], "late")))
    result = compact(table._store, table._committer, FullCompaction(), rewrite_all=rewrites)
    assert result.attempts == 1
    assert len(rewrites.calls) == 1
    assert [s.commit_kind for s in table.snapshots()][-2:] == ["APPEND", "COMPACT"]
    by_key = {(r["dt"], r["id"]): r["v"] for r in view(table)}
    assert (by_key[OLD, 1], by_key[OLD, 50]) == ("late1", "late50")  # the upsert wins
    assert not unreferenced(table)


@pytest.mark.parametrize("retries", [0, 2])
def test_a_compaction_that_loses_every_attempt_deletes_what_it_rewrote(
    tmp_path: Path, retries: int
) -> None:
    table = make(tmp_path, {"commit.max-retries": str(retries)})
    other = shoal.open_table(table.path)

    def meanwhile(call: int) -> None:  # every time, the other compacts the same files
        other.compact("full")
        other.upsert(rows(OLD, [200 + call], "x"))  # and leaves something to compact

    rewrites = Rewrites(meanwhile)
    with pytest.raises(shoal.CommitConflictError, match=rf"{retries + 1} time") as caught:
        compact(table._store, table._committer, FullCompaction(), rewrite_all=rewrites)
    assert caught.value.attempts == retries + 1
    assert "commit.max-retries" in str(caught.value)
    assert len(rewrites.calls) == retries + 1
    assert rewrites.written
    assert not any(os.path.exists(p) for p in rewrites.written)
    # the table is what the other made of it, and nothing is left behind
    assert [s.commit_user for s in table.snapshots()][3:] == (
        [other._committer.commit_user] * 2 * (retries + 1))
    assert view(table) == view(other)
    assert not unreferenced(table)


class _ReplyLost(LocalFileIO):
    """The local disk, where publishing a snapshot creates its file and then fails, as
    a store whose reply is lost after the write: the commit's outcome is unknown."""

    def try_create(self, path: str, data: bytes) -> bool:
        created = super().try_create(path, data)
        if "/snapshot/snapshot-" in path:
            raise OSError(errno.EIO, "the reply of the store was lost", path)
        return created


def test_a_commit_of_unknown_outcome_deletes_nothing(tmp_path: Path) -> None:
    table = make(tmp_path)
    expected = view(table)
    compactor = Table._open(_ReplyLost(), table.path, table.path, None)
    with pytest.raises(OSError, match="reply"):
        compactor.compact("full")
    # the snapshot was published after all: the files it names must all be there
    latest = table.latest_snapshot()
    assert latest is not None
    assert latest.commit_kind == "COMPACT"
    assert not [p for p in reachable(table) if not os.path.exists(p)]
    assert view(table) == expected
    assert view(table, read_optimized=True) == expected


@dataclass
class _PlansWhile:
    """A strategy that lets ``meanwhile`` run while it plans (once)."""

    inner: CompactStrategy
    meanwhile: Callable[[], object]
    ran: bool = False

    def pick(self, runs: Sequence[SortedRun], max_level: int) -> CompactUnit | None:
        if not self.ran:
            self.ran = True
            self.meanwhile()
        return self.inner.pick(runs, max_level)


@pytest.mark.parametrize("retries", [0, None], ids=["refused", "plans-again"])
def test_the_one_compaction_at_a_time_rule_is_checked_before_anything_is_written(
    tmp_path: Path, retries: int | None
) -> None:
    table = make(tmp_path)
    other = shoal.open_table(table.path)
    before = data_files(table)
    expected = view(table)

    def compact_new() -> None:  # touches none of the files the event-time one picks
        compact(other._store, other._committer, FullCompaction(), [bucket_of(other, NEW)])

    strategy = _PlansWhile(event_time_compaction(table._store, datetime(2026, 1, 1, 3)),
                           compact_new)
    rewrites = Rewrites()

    def run() -> shoal.CompactResult:
        return compact(table._store, table._committer, strategy, max_retries=retries,
                       exclusive=True, rewrite_all=rewrites)

    if retries == 0:
        with pytest.raises(shoal.CommitConflictError, match="another compaction"):
            run()
        assert rewrites.calls == []  # refused before the rewrite
        assert [s.commit_kind for s in table.snapshots()][-1:] == ["COMPACT"]  # the other's
    else:
        result = run()
        assert result.attempts == 2
        assert rewrites.calls == [[OLD]]  # one rewrite, planned after the other committed
        assert [s.commit_kind for s in table.snapshots()][-2:] == ["COMPACT", "COMPACT"]
        assert {r["dt"] for r in view(table, read_optimized=True)} == {OLD, NEW}
    # nothing written but what the two compactions committed
    assert data_files(table) - before <= reachable(table)
    assert not unreferenced(table)
    assert view(table) == expected
