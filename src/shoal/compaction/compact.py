"""Compacting a primary-key table: plan per bucket, rewrite in parallel, one commit.

The plan is made against the latest snapshot; the COMPACT commit deletes the input
files and adds the outputs. If a concurrent commit removed an input meanwhile (another
compaction, an overwrite), the commit fails with CommitConflictError and nothing
changes; appends that land meanwhile do not conflict, because compaction keeps every
row's sequence number.

The rewrite of the planned buckets goes through a :data:`RewriteAll` (by default
:func:`rewrite_locally`, on this machine's cores), so that a distributed job can run
it elsewhere while planning and the commit stay here.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from shoal import options as O
from shoal.compaction.event_time import event_time_compaction
from shoal.compaction.rewrite import rewrite
from shoal.compaction.runs import CompactStrategy, CompactUnit, sorted_runs
from shoal.compaction.strategies import strategy_for
from shoal.errors import (
    CommitConflictError,
    CorruptDataFileError,
    CorruptMetadataError,
    InvalidArgumentError,
)
from shoal.io import bounded_map, cpu_parallelism
from shoal.spec.data_file import DataFileMeta
from shoal.spec.snapshot import Snapshot
from shoal.table.commit import FileStoreCommit
from shoal.table.scan import live_entries
from shoal.table.store import FileStore
from shoal.table.write import CommitMessage

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
class CompactTask:
    """One bucket's rewrite: the files to merge, the level they go to, and whether
    delete rows may go (picklable)."""

    partition: bytes
    bucket: int
    unit: CompactUnit
    drop_deletes: bool

    @property
    def input_bytes(self) -> int:
        return sum(f.file_size for f in self.unit.files)


RewriteAll = Callable[[FileStore, Sequence[CompactTask]], list[CommitMessage]]
"""Rewrites every task and returns their commit messages, in the order of the tasks."""


def run_task(store: FileStore, task: CompactTask) -> CommitMessage:
    """Rewrite one task's bucket; the message deletes its inputs and adds the outputs."""
    return rewrite(store, task.partition, task.bucket, task.unit, drop_deletes=task.drop_deletes)


def rewrite_locally(store: FileStore, tasks: Sequence[CompactTask]) -> list[CommitMessage]:
    """Buckets compact in parallel, as many at once as the cores can feed (Arrow
    already spreads each merge and encode over the cores)."""
    return bounded_map(lambda t: run_task(store, t), tasks, cpu_parallelism())


def plan(
    store: FileStore,
    snapshot: Snapshot,
    strategy: CompactStrategy,
    buckets: Collection[BucketKey] | None = None,
) -> list[CompactTask]:
    """One task per bucket the strategy wants to compact."""
    partitions = None if buckets is None else {p for p, _ in buckets}
    files: dict[BucketKey, list[DataFileMeta]] = defaultdict(list)
    for entry in live_entries(store, snapshot, partitions=partitions):
        key = (entry.partition, entry.bucket)
        if buckets is None or key in buckets:
            files[key].append(entry.file)
    tasks = []
    for (partition, bucket), bucket_files in files.items():
        runs = sorted_runs(bucket_files, store.decode_key)
        unit = strategy.pick(runs, store.max_level)
        if unit is None or not unit.files:
            continue
        by_field = store.merge_settings.sequence_field is not None
        drop = _may_drop_deletes(unit, bucket_files, by_field)
        tasks.append(CompactTask(partition, bucket, unit, drop))
    return tasks


def _may_drop_deletes(
    unit: CompactUnit, bucket_files: list[DataFileMeta], ordered_by_field: bool
) -> bool:
    """Delete rows may go only into the top level, and only when every file left out
    of the merge is newer than every merged row: an older file left out could still
    hold a version of the key that the delete hides. With ``sequence.field`` rows are
    ordered by that column, which file sequence numbers say nothing about: then only
    a merge of every file may drop them."""
    if unit.output_level == 0:
        return False
    picked = {f.file_name for f in unit.files}
    if ordered_by_field:
        return all(f.file_name in picked for f in bucket_files)
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
    rewrite_all: RewriteAll = rewrite_locally,
) -> CompactResult:
    """Compact the table (or only ``buckets``) with ``strategy``; one COMPACT commit.

    When a concurrent commit removed a file this compaction rewrote, the work is
    planned again against the new latest snapshot (safe: nothing was committed, and
    the files written meanwhile are left to orphan cleanup), up to ``attempts``
    times; then the CommitConflictError propagates. An ``exclusive`` compaction does
    not commit when another compaction committed after it planned. ``rewrite_all``
    runs the planned rewrites.
    """
    for attempt in range(attempts):
        try:
            return _compact_once(
                store, committer, strategy, buckets, exclusive=exclusive, rewrite_all=rewrite_all
            )
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
    *,
    exclusive: bool,
    rewrite_all: RewriteAll,
) -> CompactResult:
    latest = store.snapshots.latest()
    if latest is None:
        return CompactResult(None, 0, 0)
    try:
        tasks = plan(store, latest, strategy, buckets)
        if not tasks:
            return CompactResult(None, 0, 0)
        messages = rewrite_all(store, tasks)
    except (CorruptMetadataError, CorruptDataFileError) as exc:
        if not store.snapshots.superseded(latest.id):
            raise
        # Its files went with it only once a newer snapshot had replaced them.
        raise CommitConflictError(
            f"snapshot {latest.id} expired while this compaction read it; plan again"
        ) from exc
    snapshot = committer.commit(
        messages, kind="COMPACT", allow_empty=True, alone_since=latest.id if exclusive else None
    )
    compacted = sum(len(m.deleted_files) for m in messages)
    written = sum(len(m.new_files) for m in messages)
    logger.info("compacted %d files into %d in %d buckets", compacted, written, len(tasks))
    return CompactResult(snapshot, compacted, written)


def compact_with(
    store: FileStore,
    committer: FileStoreCommit,
    strategy: str | None = None,
    event_time_threshold: datetime | int | None = None,
    *,
    rewrite_all: RewriteAll = rewrite_locally,
) -> CompactResult:
    """Compact with the strategy called ``strategy`` ("full", "universal",
    "event-time"; None: the ``compaction.strategy`` option), as ``Table.compact``
    does. An event-time compaction is exclusive and makes one attempt: it aborts with
    CommitConflictError when another compaction committed meanwhile. Raises
    InvalidArgumentError for an ``event_time_threshold`` with another strategy."""
    name = strategy or store.options.get(O.COMPACTION_STRATEGY)
    if name == "event-time":
        chosen = event_time_compaction(store, event_time_threshold)
        return compact(
            store, committer, chosen, attempts=1, exclusive=True, rewrite_all=rewrite_all
        )
    if event_time_threshold is not None:
        raise InvalidArgumentError(
            f"event_time_threshold applies to the event-time strategy, not {name!r}"
        )
    return compact(store, committer, strategy_for(name, store.options), rewrite_all=rewrite_all)
