"""Every cleanup operation against a model: whatever the sequence of writes, tags,
expirations, rollbacks and orphan cleanups, every retained snapshot and every tag reads
back exactly the rows it had, no file they reach is ever missing (index manifests and
index files included), and after an orphan cleanup nothing they do not reach remains.

One machine per table kind: an append table (append, overwrite, drop partition, rows
marked deleted by deletion vectors), a primary-key table (upsert, delete, compact,
overwrite, drop partition), and a primary-key table with deletion vectors, whose
writes and compactions replace its vector files; each replaces hash index files
(``tests/index_commits``); primary-key tables with a changelog, kept with the snapshots
or longer (long-lived changelogs).
"""

from __future__ import annotations

import os
import tempfile
import time
from datetime import datetime, timedelta
from typing import ClassVar

import hypothesis.strategies as st
import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    precondition,
    rule,
)

import shoal
from tests.index_commits import delete_rows, live_files, rehash
from tests.reachability import reachable, stored

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
DAYS = ["2026-11-01", "2026-11-02"]
Row = tuple[str, int, int]
LATER = timedelta(days=1)


def _table_of(rows: list[Row]) -> pa.Table:
    return pa.table(
        {"dt": [r[0] for r in rows], "id": [r[1] for r in rows], "v": [r[2] for r in rows]},
        schema=SCHEMA,
    )


def _rows_of(table: pa.Table) -> list[Row]:
    return sorted((r["dt"], r["id"], r["v"]) for r in table.to_pylist())


def _age_every_file(root: str) -> None:
    """Make every file look two days old, so orphan cleanup's age guard passes."""
    old = time.time() - 2 * 86400
    for directory, _, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(directory, name), (old, old))


class CleanupModel(RuleBasedStateMachine):
    """The rows of every snapshot and tag, by id and name."""

    primary_key = False
    options: ClassVar[dict[str, str]] = {}
    tags = Bundle("tags")

    def __init__(self) -> None:
        super().__init__()
        self._dir = tempfile.TemporaryDirectory()
        self.table = shoal.Catalog(self._dir.name).create_table(
            "db.t",
            SCHEMA,
            partition_keys=["dt"],
            primary_keys=["dt", "id"] if self.primary_key else None,
            options={
                "bucket": "2" if self.primary_key else "-1",
                "num-sorted-run.compaction-trigger": "3",
                "manifest.merge-min-count": "3",
                **self.options,
            },
        )
        self.current: list[Row] = []
        self.snapshots: dict[int, list[Row]] = {}
        self.tag_rows: dict[str, tuple[int, list[Row]]] = {}
        self.unlifted: set[int] = set()
        self.counter = 0
        self.consumers: dict[str, int] = {}  # each consumer's next snapshot

    def teardown(self) -> None:
        self._dir.cleanup()

    # --- helpers -------------------------------------------------------------------------
    def _committed(self, unlifted: list[Row] | None = None) -> None:
        """Record the current rows for every snapshot the last operation committed
        (a write may be followed by a compaction: same rows). With deletion vectors a
        write's own snapshot reads ``unlifted`` (default: the rows before it) until
        its compaction lifts its level-0 files."""
        new = [s for s in self.table.snapshots() if s.id not in self.snapshots]
        if unlifted is None:
            unlifted = self.snapshots[max(self.snapshots)] if self.snapshots else []
        for snapshot in new:
            lifted = snapshot is new[-1] or "deletion-vectors.enabled" not in self.options
            self.snapshots[snapshot.id] = list(self.current if lifted else unlifted)
            if not lifted:
                self.unlifted.add(snapshot.id)

    def _settled(self) -> list[int]:
        """The snapshots a tag or rollback may take: with deletion vectors, not one
        whose level-0 files are still to be lifted (its rows would come back at the next
        compaction of their bucket, which the model does not follow)."""
        return sorted(set(self.snapshots) - self.unlifted)

    def _next_value(self) -> int:
        self.counter += 1
        return self.counter

    def _reopen(self) -> None:
        self.table = shoal.open_table(self.table.path)

    def _expire_end(self, keep: int) -> int:
        """The oldest snapshot expiration keeps: ``keep`` newest, none a consumer has
        still to read."""
        latest = max(self.snapshots)
        return min([latest - keep + 1, *self.consumers.values()])

    def _positions(self) -> list[int]:
        """Where a consumer may be put: a snapshot there is, or the next one."""
        return [*sorted(self.snapshots), max(self.snapshots, default=0) + 1]

    # --- writes --------------------------------------------------------------------------
    @rule(day=st.sampled_from(DAYS), ids=st.lists(st.integers(0, 5), min_size=1, max_size=4))
    def write(self, day: str, ids: list[int]) -> None:
        rows = [(day, i, self._next_value()) for i in ids]
        if self.primary_key:
            latest = {(r[0], r[1]): r for r in self.current}
            latest.update({(r[0], r[1]): r for r in rows})
            self.current = sorted(latest.values())
        else:
            self.current = sorted(self.current + rows)
        self.table.append(_table_of(rows))
        self._committed()

    @precondition(lambda self: self.primary_key)
    @rule(ids=st.lists(st.integers(0, 5), min_size=1, max_size=3), day=st.sampled_from(DAYS))
    def delete(self, ids: list[int], day: str) -> None:
        self.table.delete(_table_of([(day, i, 0) for i in ids]))
        self.current = [r for r in self.current if not (r[0] == day and r[1] in ids)]
        self._committed()

    @precondition(lambda self: self.primary_key)
    @rule()
    def compact(self) -> None:
        self.table.compact(strategy="full")
        self._committed()

    @rule(day=st.sampled_from(DAYS), ids=st.lists(st.integers(0, 5), max_size=3, unique=True))
    def overwrite(self, day: str, ids: list[int]) -> None:
        rows = [(day, i, self._next_value()) for i in ids]
        self.table.overwrite(_table_of(rows), partition={"dt": day})
        kept = [r for r in self.current if r[0] != day]
        self.current = sorted(kept + rows)
        self._committed(unlifted=kept)

    @rule(day=st.sampled_from(DAYS))
    def drop_partition(self, day: str) -> None:
        self.table.drop_partitions([{"dt": day}])
        self.current = [r for r in self.current if r[0] != day]
        self._committed()

    @precondition(lambda self: not self.primary_key and self.current)
    @rule(pick=st.integers(0, 100), positions=st.lists(st.integers(0, 100), min_size=1))
    def delete_rows_by_vector(self, pick: int, positions: list[int]) -> None:
        files = live_files(self.table)
        if not files:
            return
        entry = files[pick % len(files)]
        count = entry.file.row_count
        gone = delete_rows(self.table, entry, sorted({p % count for p in positions}))
        removed = set(_rows_of(gone))
        self.current = [r for r in self.current if r not in removed]
        self._committed()

    @precondition(lambda self: self.snapshots)
    @rule(pick=st.integers(0, 100), bucket=st.integers(0, 1))
    def replace_hash_index(self, pick: int, bucket: int) -> None:
        partitions = sorted({e.partition for e in live_files(self.table)})
        if not partitions:
            return
        rehash(self.table, partitions[pick % len(partitions)], bucket)
        self._committed()

    # --- tags ----------------------------------------------------------------------------
    @precondition(lambda self: self._settled())
    @rule(target=tags, pick=st.integers(0, 100))
    def create_tag(self, pick: int) -> str:
        ids = self._settled()
        snapshot_id = ids[pick % len(ids)]
        name = f"tag-{self._next_value()}"
        self.table.create_tag(name, snapshot_id=snapshot_id)
        self.tag_rows[name] = (snapshot_id, self.snapshots[snapshot_id])
        return name

    @rule(name=consumes(tags))
    def delete_tag(self, name: str) -> None:
        if name not in self.tag_rows:
            return  # removed by a rollback
        junk = stored(self.table) - reachable(self.table)
        self.table.delete_tag(name)
        del self.tag_rows[name]
        self._reopen()
        assert stored(self.table) - reachable(self.table) <= junk

    # --- cleanup -------------------------------------------------------------------------
    @rule(name=st.sampled_from(["a", "b"]), pick=st.integers(0, 100))
    def reset_consumer(self, name: str, pick: int) -> None:
        positions = self._positions()
        self.consumers[name] = positions[pick % len(positions)]
        self.table.reset_consumer(name, self.consumers[name])

    @precondition(lambda self: self.consumers)
    @rule(pick=st.integers(0, 100))
    def delete_consumer(self, pick: int) -> None:
        name = sorted(self.consumers)[pick % len(self.consumers)]
        self.table.delete_consumer(name)
        del self.consumers[name]

    @precondition(lambda self: self.snapshots)
    @rule(keep=st.integers(1, 4))
    def expire(self, keep: int) -> None:
        junk = stored(self.table) - reachable(self.table)
        self.table.expire_snapshots(retain_max=keep, older_than=datetime.now() + LATER)
        end = self._expire_end(keep)
        self.snapshots = {i: r for i, r in self.snapshots.items() if i >= end}
        self._reopen()
        # Expiration leaves behind nothing it made unreachable.
        assert stored(self.table) - reachable(self.table) <= junk

    @precondition(lambda self: self._settled())
    @rule(pick=st.integers(0, 100), to_tag=st.booleans())
    def rollback(self, pick: int, to_tag: bool) -> None:
        if to_tag and self.tag_rows:
            name = sorted(self.tag_rows)[pick % len(self.tag_rows)]
            target, rows = self.tag_rows[name]
            self.table.rollback_to(tag=name)
        else:
            ids = self._settled()
            target = ids[pick % len(ids)]
            rows = self.snapshots[target]
            self.table.rollback_to(snapshot_id=target)
        self.snapshots = {i: r for i, r in self.snapshots.items() if i < target}
        self.snapshots[target] = rows
        self.tag_rows = {n: v for n, v in self.tag_rows.items() if v[0] <= target}
        self.current = list(rows)
        self._reopen()

    @rule()
    def remove_orphan_files(self) -> None:
        _age_every_file(self.table.path)
        self.table.remove_orphan_files(older_than=datetime.now())
        self._reopen()
        assert stored(self.table) == reachable(self.table)

    # --- invariants ----------------------------------------------------------------------
    @invariant()
    def every_snapshot_and_tag_reads_its_rows(self) -> None:
        table = self.table
        assert [s.id for s in table.snapshots()] == sorted(self.snapshots)
        for snapshot_id, rows in self.snapshots.items():
            assert _rows_of(table.to_arrow(snapshot_id=snapshot_id)) == rows, snapshot_id
        assert sorted(t.name for t in table.list_tags()) == sorted(self.tag_rows)
        for name, (_, rows) in self.tag_rows.items():
            assert _rows_of(table.to_arrow(tag=name)) == rows, name
        assert _rows_of(table.to_arrow()) == self.current

    @invariant()
    def no_snapshot_a_consumer_has_to_read_is_gone(self) -> None:
        assert self.table.consumers() == dict(sorted(self.consumers.items()))
        floor = min(self.consumers.values(), default=None)
        if floor is not None:
            ids = {s.id for s in self.table.snapshots()}
            assert {i for i in self.snapshots if i >= floor} <= ids
            for snapshot_id in (i for i in self.snapshots if i >= floor):
                assert (
                    _rows_of(self.table.to_arrow(snapshot_id=snapshot_id))
                    == (self.snapshots[snapshot_id])
                )

    @invariant()
    def nothing_reachable_is_missing(self) -> None:
        missing = reachable(self.table) - stored(self.table)
        assert not missing


class PrimaryKeyCleanupModel(CleanupModel):
    primary_key = True


class DeletionVectorCleanupModel(CleanupModel):
    primary_key = True
    options: ClassVar[dict[str, str]] = {"deletion-vectors.enabled": "true"}


class ChangelogCleanupModel(CleanupModel):
    """Writes also add their input as changelog files: every retained snapshot's stay."""

    primary_key = True
    options = {"changelog-producer": "input"}  # noqa: RUF012


CHANGELOG_MAX = 6


class ChangelogRetentionCleanupModel(ChangelogCleanupModel):
    """Changelogs outlive their snapshots (``changelog.time-retained`` above the snapshot
    one, at most the six newest ids): expired snapshots are kept as long-lived
    changelogs, which read exactly the changes of their snapshot until changelog
    expiration (Paimon 0.9/1.0's rules, modelled here) or a rollback removes them; no
    file one of them reaches is ever deleted."""

    options = {  # noqa: RUF012
        "changelog-producer": "input",
        "changelog.num-retained.min": "1",
        "changelog.num-retained.max": str(CHANGELOG_MAX),
        "changelog.time-retained": "2 h",
        "write-only": "true",  # expiration runs only when the model says
    }

    def __init__(self) -> None:
        super().__init__()
        self.changes: dict[int, list[tuple[object, ...]]] = {}  # every snapshot's, by id
        self.kept: list[int] = []  # the long-lived changelogs

    def _committed(self, unlifted: list[Row] | None = None) -> None:
        new = [s.id for s in self.table.snapshots() if s.id not in self.snapshots]
        super()._committed(unlifted)
        for snapshot_id in new:
            self.changes[snapshot_id] = _changes(self.table, snapshot_id)

    @precondition(lambda self: self.snapshots)
    @rule(keep=st.integers(1, 4))
    def expire(self, keep: int) -> None:
        latest = max(self.snapshots)
        self.kept += [i for i in sorted(self.snapshots) if i < self._expire_end(keep)]
        super().expire(keep)
        if self.kept:
            # Every changelog is younger than its retention: those beyond the newest
            # CHANGELOG_MAX ids go, but never the newest long-lived one, nor one a
            # consumer has still to read.
            end = min(
                max(latest - CHANGELOG_MAX + 1, self.kept[0]),
                self.kept[-1],
                *self.consumers.values(),
            )
            self.kept = [i for i in self.kept if i >= end]

    def _positions(self) -> list[int]:
        return [*self.kept, *super()._positions()]

    @precondition(lambda self: self._settled())
    @rule(pick=st.integers(0, 100), to_tag=st.booleans())
    def rollback(self, pick: int, to_tag: bool) -> None:
        super().rollback(pick, to_tag)
        target = max(self.snapshots)
        self.kept = [i for i in self.kept if i <= target]
        self.changes = {i: c for i, c in self.changes.items() if i <= target}

    @invariant()
    def every_long_lived_changelog_reads_its_changes(self) -> None:
        assert self.table._store.changelogs.list_ids() == self.kept
        for changelog_id in self.kept:
            assert _changes(self.table, changelog_id) == self.changes[changelog_id], changelog_id


def _changes(table: shoal.Table, snapshot_id: int) -> list[tuple[object, ...]]:
    rows = table.incremental(snapshot_id - 1, snapshot_id, scan_mode="changelog", row_kind=True)
    return sorted(tuple(r.values()) for r in rows.to_pylist())


_SETTINGS = settings(
    max_examples=25,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestAppendTableCleanup = CleanupModel.TestCase
TestAppendTableCleanup.settings = _SETTINGS
TestPrimaryKeyTableCleanup = PrimaryKeyCleanupModel.TestCase
TestPrimaryKeyTableCleanup.settings = _SETTINGS
TestDeletionVectorTableCleanup = DeletionVectorCleanupModel.TestCase
TestDeletionVectorTableCleanup.settings = _SETTINGS
TestChangelogTableCleanup = ChangelogCleanupModel.TestCase
TestChangelogTableCleanup.settings = settings(_SETTINGS, max_examples=15)
TestChangelogRetentionCleanup = ChangelogRetentionCleanupModel.TestCase
TestChangelogRetentionCleanup.settings = settings(_SETTINGS, max_examples=15)
