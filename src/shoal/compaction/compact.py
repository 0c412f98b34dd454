"""Compacting a primary-key table: plan per bucket, rewrite in parallel, one commit.

The plan is made against the latest snapshot; the COMPACT commit deletes the input
files and adds the outputs. If a concurrent commit removed an input meanwhile (another
compaction, an overwrite), the commit fails with CommitConflictError and nothing
changes; appends that land meanwhile do not conflict, because compaction keeps every
row's sequence number.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass

from shoal.compaction.rewrite import rewrite
from shoal.compaction.runs import CompactStrategy, CompactUnit, sorted_runs
from shoal.errors import CommitConflictError
from shoal.io import bounded_map, cpu_parallelism
from shoal.spec.data_file import DataFileMeta
from shoal.spec.snapshot import Snapshot
from shoal.table.commit import FileStoreCommit
from shoal.table.scan import live_entries
from shoal.table.store import FileStore

logger = logging.getLogger(__name__)

BucketKey = tuple[bytes, int]


@dataclass(frozen=True, slots=True)
class CompactResult:
    """What one compaction did: its snapshot (None when there was nothing to do) and
    how many files it rewrote and wrote."""

    snapshot: Snapshot | None
    compacted_files: int
    written_files: int


@dataclass(frozen=True, slots=True)
class _Task:
    partition: bytes
    bucket: int
    unit: CompactUnit
    drop_deletes: bool


def plan(
    store: FileStore,
    snapshot: Snapshot,
    strategy: CompactStrategy,
    buckets: Collection[BucketKey] | None = None,
) -> list[_Task]:
    """One task per bucket the strategy wants to compact."""
    partition_filter = None
    if buckets is not None:
        partitions = {p for p, _ in buckets}
        partition_filter = partitions.__contains__
    files: dict[BucketKey, list[DataFileMeta]] = defaultdict(list)
    for entry in live_entries(store, snapshot, partition_filter=partition_filter):
        key = (entry.partition, entry.bucket)
        if buckets is None or key in buckets:
            files[key].append(entry.file)
    tasks = []
    for (partition, bucket), bucket_files in files.items():
        runs = sorted_runs(bucket_files, store.decode_key)
        unit = strategy.pick(runs, store.max_level)
        if unit is None or not unit.files:
            continue
        tasks.append(_Task(partition, bucket, unit, _may_drop_deletes(unit, bucket_files)))
    return tasks


def _may_drop_deletes(unit: CompactUnit, bucket_files: list[DataFileMeta]) -> bool:
    """Delete rows may go only into the top level, and only when every file left out
    of the merge is newer than every merged row: an older file left out could still
    hold a version of the key that the delete hides."""
    if unit.output_level == 0:
        return False
    picked = {f.file_name for f in unit.files}
    newest_merged = max(f.max_sequence_number for f in unit.files)
    return all(
        f.min_sequence_number > newest_merged for f in bucket_files if f.file_name not in picked
    )


def compact(
    store: FileStore,
    committer: FileStoreCommit,
    strategy: CompactStrategy,
    buckets: Collection[BucketKey] | None = None,
    *,
    attempts: int = 3,
    exclusive: bool = False,
) -> CompactResult:
    """Compact the table (or only ``buckets``) with ``strategy``; one COMPACT commit.

    When a concurrent commit removed a file this compaction rewrote, the work is
    planned again against the new latest snapshot (safe: nothing was committed, and
    the files written meanwhile are left to orphan cleanup), up to ``attempts``
    times; then the CommitConflictError propagates. An ``exclusive`` compaction does
    not commit when another compaction committed after it planned.
    """
    for attempt in range(attempts):
        try:
            return _compact_once(store, committer, strategy, buckets, exclusive)
        except CommitConflictError:
            if attempt + 1 == attempts:
                raise
            logger.info("compaction lost a race; planning again")
    raise AssertionError("unreachable")


def _compact_once(
    store: FileStore,
    committer: FileStoreCommit,
    strategy: CompactStrategy,
    buckets: Collection[BucketKey] | None,
    exclusive: bool,
) -> CompactResult:
    latest = store.snapshots.latest()
    if latest is None:
        return CompactResult(None, 0, 0)
    tasks = plan(store, latest, strategy, buckets)
    if not tasks:
        return CompactResult(None, 0, 0)
    # Buckets compact in parallel, as many at once as the cores can feed (Arrow already
    # spreads each merge and encode over the cores).
    messages = bounded_map(
        lambda t: rewrite(store, t.partition, t.bucket, t.unit, drop_deletes=t.drop_deletes),
        tasks,
        cpu_parallelism(),
    )
    snapshot = committer.commit(
        messages, kind="COMPACT", allow_empty=True, alone_since=latest.id if exclusive else None
    )
    compacted = sum(len(m.deleted_files) for m in messages)
    written = sum(len(m.new_files) for m in messages)
    logger.info("compacted %d files into %d in %d buckets", compacted, written, len(tasks))
    return CompactResult(snapshot, compacted, written)
