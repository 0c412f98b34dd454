"""Compacting a primary-key table: plan per bucket, rewrite in parallel, one commit.

The plan is made against the latest snapshot; the COMPACT commit deletes the input
files and adds the outputs. Commits that land meanwhile and leave the inputs alone
(appends, upserts, deletes, compactions of other files) do not conflict: compaction
keeps every row's sequence number, and the committer retries a lost snapshot id
itself. A concurrent commit that removed an input (another compaction, an overwrite,
a partition drop) makes the commit fail with CommitConflictError, before anything is
published; the compaction then plans again against the new latest snapshot, up to
``commit.max-retries`` times (so at most ``commit.max-retries`` + 1 attempts). A
bucket whose inputs are all still live keeps the files it was rewritten into; only
the other buckets are planned and rewritten again, and the outputs they replace are
deleted at once.

The files a compaction rewrote are its own uncommitted files while no snapshot names
them, and it deletes them when it gives up (or fails before committing), so a lost
race leaves no orphans. It deletes nothing when the outcome of its commit is unknown
(any error but CommitConflictError, such as an I/O error after the snapshot file may
have been written): a snapshot may name the files then, and orphan cleanup decides.

An event-time compaction runs alone (:func:`compact_with`): it does not commit when
another compaction committed after it planned. That is checked once the plan is made,
before any file is written, and again by the commit; either way it plans again.

The rewrite of the planned buckets goes through a :data:`RewriteAll` (by default
:func:`rewrite_locally`, on this machine's cores), so that a distributed job can run
it elsewhere while planning and the commit stay here.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from shoal import options as O
from shoal.compaction.rewrite import rewrite
from shoal.compaction.strategies import FullCompaction, strategy_for
from shoal.compaction.vectors import BucketVectors
from shoal.core import deletion_vectors as DVS
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries
from shoal.core.store import FileStore
from shoal.errors import (
    CommitConflictError,
    CorruptDataFileError,
    CorruptMetadataError,
    InvalidArgumentError,
    UnsupportedFeatureError,
)
from shoal.event_time.strategy import event_time_compaction
from shoal.format.data_file import DataFileMeta
from shoal.format.index_manifest import IndexFileMeta
from shoal.format.snapshot import CommitKind, Snapshot
from shoal.io import bounded_map, cpu_parallelism
from shoal.primary_key.runs import CompactStrategy, CompactUnit, sorted_runs
from shoal.write.commit import CommitRequest, FileStoreCommit, compaction_since
from shoal.write.files import CommitMessage

logger = logging.getLogger(__name__)

BucketKey = tuple[bytes, int]


@dataclass(frozen=True, slots=True)
class CompactResult:
    """What one compaction did: its snapshot (None when there was nothing to do), how
    many files it rewrote and wrote, and how many attempts it made (more than one when
    it lost races to concurrent commits and planned again)."""

    snapshot: Snapshot | None
    compacted_files: int
    written_files: int
    attempts: int = 1


@dataclass(frozen=True, slots=True)
class CompactTask:
    """One bucket's rewrite: the files to merge, the level they go to, and whether
    delete rows may go (picklable); on a table with deletion vectors what keeps them,
    on one that looks keys up without them (``changelog-producer`` = ``lookup``) the
    bucket's files above the output level (``upper``)."""

    partition: bytes
    bucket: int
    unit: CompactUnit
    drop_deletes: bool
    vectors: BucketVectors | None = None
    upper: tuple[DataFileMeta, ...] = ()

    @property
    def input_bytes(self) -> int:
        return sum(f.file_size for f in self.unit.files)


RewriteAll = Callable[[FileStore, Sequence[CompactTask]], list[CommitMessage]]
"""Rewrites every task and returns their commit messages, in the order of the tasks."""


def run_task(store: FileStore, task: CompactTask) -> CommitMessage:
    """Rewrite one task's bucket; the message deletes its inputs and adds the outputs."""
    return rewrite(
        store,
        task.partition,
        task.bucket,
        task.unit,
        drop_deletes=task.drop_deletes,
        vectors=task.vectors,
        upper=task.upper,
    )


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
    files = _bucket_files(store, snapshot, buckets)
    return _plan_buckets(store, files, strategy, _vector_files(store, snapshot))


def _vector_files(
    store: FileStore, snapshot: Snapshot
) -> Mapping[BucketKey, tuple[IndexFileMeta, ...]] | None:
    """Each bucket's deletion-vector index files, on a table with deletion vectors.

    Raises:
        UnsupportedFeatureError: the snapshot holds deletion vectors that the table's
            options do not enable (switched off with ``deletion-vectors.modifiable``):
            merging its files without them would bring deleted rows back.
    """
    if not store.is_primary_key:
        return None
    files = DVS.bucket_index_files(store, snapshot)
    if DVS.enabled(store.schema.options):
        return files
    if files:
        raise UnsupportedFeatureError(
            f"table {store.uri!r} holds deletion vectors but its options do not enable "
            "them; shoal compacts such files only with 'deletion-vectors.enabled' = 'true'",
            feature="deletion-vectors.enabled",
        )
    return None


def _bucket_files(
    store: FileStore, snapshot: Snapshot, buckets: Collection[BucketKey] | None
) -> dict[BucketKey, list[DataFileMeta]]:
    """The live files of each bucket (of ``buckets`` only, when given)."""
    partitions = None if buckets is None else {p for p, _ in buckets}
    files: dict[BucketKey, list[DataFileMeta]] = defaultdict(list)
    for entry in live_entries(store, snapshot, partitions=partitions):
        key = (entry.partition, entry.bucket)
        if buckets is None or key in buckets:
            files[key].append(entry.file)
    return files


def _plan_buckets(
    store: FileStore,
    files: dict[BucketKey, list[DataFileMeta]],
    strategy: CompactStrategy,
    vector_files: Mapping[BucketKey, tuple[IndexFileMeta, ...]] | None,
    skip: Collection[BucketKey] = (),
) -> list[CompactTask]:
    """One task per bucket the strategy picks files of. With ``vector_files`` (a table
    with deletion vectors: each bucket's index files), each task also carries what
    keeps its bucket's vectors (``compaction/vectors``), and delete rows go at every
    output level above 0, the rows they delete being marked."""
    tasks = []
    looks_up = store.merge_settings.lookup or store.options.get(O.CHANGELOG_PRODUCER) == "lookup"
    for (partition, bucket), bucket_files in files.items():
        if (partition, bucket) in skip:
            continue
        runs = sorted_runs(bucket_files, store.decode_key)
        unit = strategy.pick(runs, store.max_level)
        index_files = () if vector_files is None else vector_files.get((partition, bucket), ())
        if unit is None and index_files and isinstance(strategy, FullCompaction):
            with_vectors = {r.data_file_name for f in index_files for r in f.dv_ranges or ()}
            unit = strategy.pick_vectors(runs, store.max_level, with_vectors)
        if unit is None or not unit.files:
            continue
        if vector_files is None:
            by_field = store.merge_settings.sequence_field is not None
            drop = _may_drop_deletes(unit, bucket_files, by_field)
            upper: tuple[DataFileMeta, ...] = ()
            if looks_up and any(f.level == 0 for f in unit.files):
                upper = tuple(f for f in bucket_files if f.level > unit.output_level)
            tasks.append(CompactTask(partition, bucket, unit, drop, upper=upper))
            continue
        upper = tuple(f for f in bucket_files if f.level > unit.output_level)
        vectors = BucketVectors(index_files, upper)
        tasks.append(CompactTask(partition, bucket, unit, unit.output_level > 0, vectors))
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
    max_retries: int | None = None,
    exclusive: bool = False,
    rewrite_all: RewriteAll = rewrite_locally,
) -> CompactResult:
    """Compact the table (or only ``buckets``) with ``strategy``; one COMPACT commit.

    Each attempt plans against the latest snapshot, rewrites and commits. When the
    commit loses to a concurrent commit that removed a file this compaction rewrote,
    the compaction plans again against the new latest snapshot, keeping the rewritten
    buckets whose inputs are all still live. It makes at most ``max_retries`` + 1
    attempts; ``max_retries`` None means the table option ``commit.max-retries``
    (default 10), the bound of every re-planning commit. An ``exclusive`` compaction
    also plans again when another compaction committed after it planned (checked
    before it rewrites, and at the commit), and keeps nothing from a lost attempt.
    ``rewrite_all`` runs the planned rewrites.

    Returns:
        The result; ``attempts`` says how many attempts it took.

    Raises:
        CommitConflictError: every attempt lost its race. The files the compaction
            rewrote were in no snapshot and are deleted; the table is as if it had
            not run. Any other error of the commit propagates as it is and deletes
            nothing: the commit may have been published.
    """
    retries = store.options.get(O.COMMIT_MAX_RETRIES) if max_retries is None else max_retries
    attempts = retries + 1
    rewritten = _Rewritten(store)
    lost = ""
    try:
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                logger.info(
                    "compaction lost a race (%s); planning again, attempt %d of %d",
                    lost,
                    attempt,
                    attempts,
                )
            latest = store.snapshots.latest()
            if latest is None:  # an empty table
                rewritten.discard()
                return CompactResult(None, 0, 0, attempt)
            try:
                files = _bucket_files(store, latest, buckets)
                vector_files = _vector_files(store, latest)
                rewritten.keep_if_live(files, vector_files)
                tasks = _plan_buckets(
                    store, files, strategy, vector_files, skip=rewritten.buckets()
                )
                if not tasks and not rewritten.messages():
                    return CompactResult(None, 0, 0, attempt)
                if exclusive:
                    other = compaction_since(store, latest.id, store.snapshots.latest())
                    if other is not None:  # nothing written yet: plan again at once
                        lost = f"another compaction committed snapshot {other} meanwhile"
                        continue
                if tasks:
                    rewritten.add(tasks, rewrite_all(store, tasks))
            except (CorruptMetadataError, CorruptDataFileError):
                if not store.snapshots.superseded(latest.id):
                    raise
                # Its files went with it only once a newer snapshot had replaced them.
                lost = f"snapshot {latest.id} expired while this compaction read it"
                continue
            messages = rewritten.messages()
            try:
                snapshot = committer.commit(
                    CommitRequest(
                        messages,
                        kind=CommitKind.COMPACT,
                        allow_empty=True,
                        alone_since=latest.id if exclusive else None,
                        vector_base=rewritten.vector_base(),
                    )
                )
            except CommitConflictError as exc:
                # Nothing was published (FileStoreCommit.commit): the outputs are ours.
                lost = str(exc)
                if exclusive:
                    rewritten.discard()
                continue
            except BaseException:
                rewritten.forget()  # the outcome is unknown: a snapshot may name them
                raise
            rewritten.forget()  # committed
            compacted = sum(len(m.deleted_files) for m in messages)
            written = sum(len(m.new_files) for m in messages)
            logger.info(
                "compacted %d files into %d in %d buckets (attempt %d)",
                compacted,
                written,
                len(messages),
                attempt,
            )
            return CompactResult(snapshot, compacted, written, attempt)
    except Exception:
        rewritten.discard()  # failed before its commit: nothing names them
        raise
    rewritten.discard()
    raise CommitConflictError(
        f"compaction lost its race to concurrent commits {attempts} time(s) "
        f"(commit.max-retries is {retries}); the files it rewrote are removed and the "
        f"table is as before. Last conflict: {lost}. Run it again, or raise "
        "'commit.max-retries'",
        attempts=attempts,
    )


class _Rewritten:
    """This compaction's rewritten buckets that no snapshot names yet, by bucket: its
    own uncommitted files, which it deletes when they cannot be committed."""

    def __init__(self, store: FileStore) -> None:
        self._store = store
        self._messages: dict[BucketKey, CommitMessage] = {}
        self._vectors: dict[BucketKey, BucketVectors] = {}
        self._upper: dict[BucketKey, tuple[DataFileMeta, ...]] = {}

    def messages(self) -> list[CommitMessage]:
        return list(self._messages.values())

    def buckets(self) -> set[BucketKey]:
        return set(self._messages)

    def vector_base(self) -> dict[BucketKey, frozenset[str]] | None:
        """Per rewritten bucket of a table with deletion vectors, the index files its
        vectors were read from (``CommitRequest.vector_base``)."""
        if not self._vectors:
            return None
        return {
            key: frozenset(f.file_name for f in v.index_files) for key, v in self._vectors.items()
        }

    def add(self, tasks: Sequence[CompactTask], messages: Sequence[CommitMessage]) -> None:
        for task, message in zip(tasks, messages, strict=True):
            key = (task.partition, task.bucket)
            self._messages[key] = message
            if task.vectors is not None:
                self._vectors[key] = task.vectors
            if task.upper:
                self._upper[key] = task.upper

    def keep_if_live(
        self,
        live: Mapping[BucketKey, Sequence[DataFileMeta]],
        vector_files: Mapping[BucketKey, tuple[IndexFileMeta, ...]] | None,
    ) -> None:
        """Keep the buckets whose inputs (and, with deletion vectors, the files above
        the output and the bucket's vectors) are all as they were in ``live`` and
        ``vector_files``; delete the outputs of the others (a concurrent commit changed
        what they were made from: they are void)."""
        void = []
        for key, message in self._messages.items():
            names = {f.file_name for f in live.get(key, ())}
            # The files above the output where keys were looked up must be unchanged too.
            used = [*message.deleted_files, *self._upper.get(key, ())]
            vectors = self._vectors.get(key)
            if vectors is not None:
                used += vectors.upper_files
                now = () if vector_files is None else vector_files.get(key, ())
                if {f.file_name for f in now} != {f.file_name for f in vectors.index_files}:
                    void.append(key)
                    continue
            if not all(f.file_name in names for f in used):
                void.append(key)
        self._delete([self._messages.pop(key) for key in void])
        for key in void:
            self._vectors.pop(key, None)
            self._upper.pop(key, None)

    def discard(self) -> None:
        """Delete every output held (none was committed)."""
        self._delete(list(self._messages.values()))
        self.forget()

    def forget(self) -> None:
        """Let go of the outputs without deleting them: committed, or maybe committed."""
        self._messages.clear()
        self._vectors.clear()
        self._upper.clear()

    def _delete(self, messages: Sequence[CommitMessage]) -> None:
        store = self._store
        paths = []
        for m in messages:
            bucket_dir = store.paths.bucket_dir(store.partitions.path(m.partition), m.bucket)
            for f in (*m.new_files, *m.changelog_files):
                paths.append(data_file_path(bucket_dir, f))
                paths.extend(f"{bucket_dir}/{x}" for x in f.extra_files)
            paths.extend(store.paths.index_path(f.file_name) for f in m.new_index_files)
        if not paths:
            return
        try:
            store.file_io.delete_many(paths)
        except OSError as exc:
            logger.warning(
                "could not delete files a compaction rewrote and never committed; "
                "orphan cleanup removes them: %s",
                exc,
            )
        else:
            logger.debug("deleted %d files a compaction rewrote and never committed", len(paths))


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
    and ``shoal.spark.compact`` do, with :func:`compact`'s re-planning up to
    ``commit.max-retries`` times. An event-time compaction is exclusive: it commits
    only if no other compaction committed since it planned, and plans again
    otherwise. Raises InvalidArgumentError for an ``event_time_threshold`` with
    another strategy, CommitConflictError when every attempt lost its race."""
    name = strategy or store.options.get(O.COMPACTION_STRATEGY)
    if name == "event-time" and DVS.enabled(store.schema.options):
        raise UnsupportedFeatureError(
            f"table {store.uri!r} has deletion vectors: its reads see only files above "
            "level 0, where an event-time compaction's rows after the threshold cannot "
            "go; compact it with the 'universal' or 'full' strategy",
            feature="event-time compaction with deletion vectors",
        )
    if name == "event-time":
        chosen = event_time_compaction(store, event_time_threshold)
        return compact(store, committer, chosen, exclusive=True, rewrite_all=rewrite_all)
    if event_time_threshold is not None:
        raise InvalidArgumentError(
            f"event_time_threshold applies to the event-time strategy, not {name!r}"
        )
    return compact(store, committer, strategy_for(name, store.options), rewrite_all=rewrite_all)
