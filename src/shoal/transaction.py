"""One write of one table, from its input to the committed snapshot.

Every operation that commits runs through :class:`Transaction`, in one order:

1. validate: the table's options parse, and shoal implements every feature the table
   uses for writes;
2. write the data files (invisible until committed);
3. commit one :class:`~shoal.write.commit.CommitRequest`; a primary-key write that a
   concurrent writer to the same bucket overtook is sequenced again from the new
   latest snapshot and committed again, up to ``commit.max-retries`` times;
4. after the commit point, :meth:`Transaction.after_commit`: the compaction of the
   buckets a primary-key write touched (unless ``write-only``; Paimon's
   ``num-sorted-run.compaction-trigger``), then the table's maintenance (automatic
   tags, tag, partition and snapshot expiration).

The error policy after the commit point: the snapshot is published, so nothing that
follows raises. A compaction or maintenance step that fails is logged and left to the
next write; a commit that succeeded is never reported as failed.

The Spark writers run steps 2 in tasks and the rest on the driver through the same
methods (:meth:`commit_written`, :meth:`commit_sequenced`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from shoal import options as O
from shoal.cleanup.maintain import maintain
from shoal.cleanup.partition_expire import expire_partitions
from shoal.compaction import compact as compaction
from shoal.compaction.compact import CompactResult, RewriteAll
from shoal.compaction.strategies import FullCompaction, universal_strategy_for
from shoal.core import deletion_vectors as DVS
from shoal.core import kv
from shoal.core.schema_update import columns_build, commit_schema
from shoal.core.store import FileStore
from shoal.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    SequenceConflictError,
)
from shoal.format import types as T
from shoal.format.index_manifest import IndexManifestEntry
from shoal.format.schema import TableSchema
from shoal.format.snapshot import CommitKind, Snapshot
from shoal.write.bucket_index import BucketIndex
from shoal.write.commit import WHOLE_TABLE, CommitRequest, FileStoreCommit, OverwriteScope
from shoal.write.conform import conform
from shoal.write.files import AppendWriter, CommitMessage
from shoal.write.keyed import KeyValueWriter, next_sequences

logger = logging.getLogger(__name__)

BucketKey = tuple[bytes, int]


@dataclass(frozen=True, slots=True)
class Sequenced:
    """A primary-key write ready to commit on one snapshot: its messages and, on a
    dynamic-bucket table, its hash index changes and the index files it assigned from
    (``CommitRequest.index_changes``, ``index_base``)."""

    messages: list[CommitMessage]
    index_changes: tuple[IndexManifestEntry, ...] = ()
    index_base: Mapping[bytes, frozenset[str]] | None = None


Sequencer = Callable[[Snapshot | None], Sequenced]
"""A primary-key write's commit messages, numbered above the rows that a snapshot
(the latest, at each attempt) holds in the buckets they write (and on a dynamic-bucket
table with their buckets assigned from that snapshot's hash index)."""


class Transaction:
    """The writes of one open table (``store``), each one atomic commit."""

    def __init__(self, store: FileStore, committer: FileStoreCommit | None = None) -> None:
        self.store = store
        self.committer = committer or FileStoreCommit(store)

    # --- writes --------------------------------------------------------------------------------
    def write(
        self, data: Any, *, kind: int = kv.INSERT, overwrite: OverwriteScope | None = None
    ) -> Snapshot:
        """Write ``data`` in one commit: appended to an append table, upserted into (or,
        with ``kind`` DELETE, deleted from) a primary-key table; with ``overwrite``,
        replacing the live files of those partitions.

        Raises:
            SchemaMismatchError: ``data`` does not fit the table (nothing written).
            InvalidArgumentError: an overwrite of some partitions got rows of others.
            SequenceConflictError: concurrent writers overtook every attempt.
        """
        store = self.store
        self.validate()
        if store.is_primary_key:
            keyed = KeyValueWriter(store, store.merge_settings, changelog=overwrite is None)
            keyed.write(data, kind)
            snapshot, buckets = self.commit_keyed(keyed, overwrite=overwrite)
        else:
            writer = AppendWriter(store)
            writer.write(data)
            messages = writer.prepare_commit()
            self._check_scope(messages, overwrite)
            snapshot = self.commit_written(messages, overwrite=overwrite)
            buckets = []
        self.after_commit(buckets, compact=overwrite is None)
        return snapshot

    def commit_keyed(
        self, keyed: KeyValueWriter, *, overwrite: OverwriteScope | None = None
    ) -> tuple[Snapshot, list[BucketKey]]:
        """Commit the rows ``keyed`` buffered (of any row kinds) as one primary-key
        write; returns the snapshot and the buckets written (for :meth:`after_commit`)."""
        store = self.store
        buckets = keyed.buckets

        def sequence(latest: Snapshot | None) -> Sequenced:
            nonlocal buckets
            if not keyed.dynamic:
                messages = keyed.prepare_commit(next_sequences(store, latest, buckets))
                self._check_scope(messages, overwrite)
                return Sequenced(messages)
            index = BucketIndex(store, latest, fresh=overwrite)
            assigned = keyed.assign(index)
            buckets = list(assigned)
            messages = keyed.prepare_commit(next_sequences(store, latest, buckets), assigned)
            self._check_scope(messages, overwrite)
            base = None if overwrite is not None else index.base()
            return Sequenced(messages, tuple(index.write_changes()), base)

        snapshot = self.commit_sequenced(sequence, overwrite=overwrite)
        return snapshot, buckets

    def drop(self, scope: OverwriteScope) -> Snapshot:
        """Remove the partitions ``scope`` accepts in one OVERWRITE commit of DELETE
        entries; their files stay until expiration finds them unused."""
        self.validate()
        snapshot = self.commit_written([], overwrite=scope)
        self.after_commit((), compact=False)
        return snapshot

    def compact(
        self,
        strategy: str | None,
        event_time_threshold: Any,
        *,
        rewrite_all: RewriteAll = compaction.rewrite_locally,
    ) -> CompactResult:
        """A compaction in one COMPACT commit (``shoal.compaction.compact_with``),
        then the table's maintenance."""
        self.validate()
        result = compaction.compact_with(
            self.store, self.committer, strategy, event_time_threshold, rewrite_all=rewrite_all
        )
        if result.snapshot is not None:
            self.after_commit((), compact=False)
        return result

    def expire_partitions(
        self, expiration_time: timedelta | str | None, now: datetime | None
    ) -> list[dict[str, Any]]:
        """Partition expiration as one OVERWRITE commit, then the table's maintenance."""
        dropped = expire_partitions(
            self.store, self.committer, expiration_time=expiration_time, now=now
        )
        if dropped:
            self.after_commit((), compact=False)
        return dropped

    # --- commits -------------------------------------------------------------------------------
    def commit_written(
        self, messages: Sequence[CommitMessage], *, overwrite: OverwriteScope | None = None
    ) -> Snapshot:
        """Commit files written already (an append table's, or any overwrite's)."""
        snapshot = self.committer.commit(
            CommitRequest(messages, overwrite=overwrite, allow_empty=True)
        )
        assert snapshot is not None  # allow_empty
        return snapshot

    def commit_sequenced(
        self, sequence: Sequencer, *, overwrite: OverwriteScope | None = None
    ) -> Snapshot:
        """Commit a primary-key write: ``sequence`` numbers its files above the rows of
        the latest snapshot, and again above a concurrent writer's rows whenever one
        overtook the attempt, up to ``commit.max-retries`` times. An overwrite replaces
        the buckets it writes, so only its own files are checked against each other."""
        store = self.store
        attempts = store.options.get(O.COMMIT_MAX_RETRIES) + 1
        for attempt in range(attempts):
            sequenced = self._sequenced(sequence)
            try:
                snapshot = self.committer.commit(
                    CommitRequest(
                        sequenced.messages,
                        overwrite=overwrite,
                        allow_empty=True,
                        check_sequences=overwrite is None,
                        index_changes=sequenced.index_changes,
                        index_base=sequenced.index_base,
                    )
                )
            except SequenceConflictError:
                if attempt + 1 == attempts:
                    raise
                # Another writer added rows to a bucket, or changed the hash index of a
                # partition: number (and assign) again above them.
                continue
            assert snapshot is not None  # allow_empty
            return snapshot
        raise AssertionError("unreachable")

    def _sequenced(self, sequence: Sequencer) -> Sequenced:
        """``sequence`` at the latest snapshot; a latest snapshot that expires while its
        manifests are read has a newer one, which is read instead."""
        snapshots = self.store.snapshots
        for attempt in range(3):
            latest = snapshots.latest()
            try:
                return sequence(latest)
            except CorruptMetadataError:
                if latest is None or not snapshots.superseded(latest.id) or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def after_commit(self, buckets: Collection[BucketKey], *, compact: bool) -> None:
        """What follows every commit of a write (the one post-commit policy): the
        compaction of ``buckets`` of a primary-key table when ``compact``, or always
        with deletion vectors, whose reads see no row in level 0 until it is lifted
        (unless ``write-only``); then the table's maintenance. The snapshot is
        published, so a failure here is logged, never raised: the next write tries
        again."""
        store = self.store
        compact = compact or DVS.enabled(store.schema.options)
        if compact and buckets and store.is_primary_key and not store.options.get(O.WRITE_ONLY):
            try:
                if full_compaction_due(store):
                    compaction.compact(store, self.committer, FullCompaction())
                else:
                    compaction.compact(
                        store, self.committer, universal_strategy_for(store.options), set(buckets)
                    )
            except Exception:
                logger.warning(
                    "compaction after the write to %s failed; the next write tries again",
                    store.uri,
                    exc_info=True,
                )
        try:
            maintain(store, self.committer)
        except Exception:
            logger.warning(
                "maintenance after the commit to %s failed; the next commit tries again",
                store.uri,
                exc_info=True,
            )

    def validate(self) -> None:
        """The table's options parse (maintenance after the commit must not fail on
        one), and shoal implements every feature the table uses for writes."""
        O.validate(self.store.schema.options)
        self.store.require_writable()

    def _check_scope(
        self, messages: Sequence[CommitMessage], overwrite: OverwriteScope | None
    ) -> None:
        if overwrite is None:
            return
        stray = [m for m in messages if not overwrite(m.partition)]
        if stray:
            raise InvalidArgumentError(
                f"the overwrite got rows of partition "
                f"{self.store.partitions.to_dict(stray[0].partition)}, which it does not "
                "replace; filter the data to the partitions it overwrites"
            )


def full_compaction_due(store: FileStore) -> bool:
    """Whether the write just committed is followed by a full compaction: with the
    ``full-compaction`` changelog producer, every ``full-compaction.delta-commits``
    writes (every write when it is not set), as Paimon's Flink writer does it every
    that many commits. The writes are counted back from the latest snapshot to the
    last compaction that wrote a changelog (one into the top level)."""
    if store.options.get(O.CHANGELOG_PRODUCER) != "full-compaction":
        return False
    every = max(store.options.get(O.FULL_COMPACTION_DELTA_COMMITS), 1)
    if every == 1:
        return True
    snapshots = store.snapshots
    latest, earliest = snapshots.latest_id(), snapshots.earliest_id()
    if latest is None or earliest is None:
        return False
    writes = 0
    for snapshot_id in range(latest, earliest - 1, -1):
        snapshot = snapshots.find(snapshot_id)
        if snapshot is None:
            break
        if snapshot.commit_kind == CommitKind.COMPACT and snapshot.changelog_manifest_list:
            break
        writes += snapshot.commit_kind == CommitKind.APPEND
        if writes >= every:
            return True
    return False


# --- schema evolution on write ---------------------------------------------------------------
def merge_new_columns(
    store: FileStore, data_schema: pa.Schema, rows: pa.Table | None = None
) -> TableSchema | None:
    """Add the columns of ``data_schema`` that the table lacks, as nullable columns in
    the data's order, in one schema version committed before any data file is written;
    returns it (None when the table has every column).

    The data is checked against the schema it would make first, every row of ``rows``
    when given (else the columns' types).

    Raises:
        SchemaMismatchError: the data does not fit the table even with the columns
            added (a column missing, a type that does not cast); nothing is written.
        SchemaConflictError: a concurrent schema change made the addition impossible.
    """
    latest = store.schemas.latest() or store.schema
    present = set(latest.field_names)
    columns = [
        (f.name, T.from_arrow(f.type, True, [0])) for f in data_schema if f.name not in present
    ]
    build = columns_build(columns)
    has_snapshots = store.snapshots.latest_id() is not None
    merged = build(latest, has_snapshots) or latest
    conform(rows if rows is not None else data_schema.empty_table(), merged.arrow_schema())
    return commit_schema(
        store.schemas,
        store.snapshots,
        build,
        base_id=latest.id,
        attempts=store.options.get(O.COMMIT_MAX_RETRIES) + 1,
    )


# --- what an overwrite replaces ---------------------------------------------------------------
def partition_scope(store: FileStore, specs: Sequence[Mapping[str, Any]]) -> OverwriteScope:
    """The partitions matching any of ``specs`` (each may name only some keys)."""
    codec = store.partitions
    wanted = [codec.spec_values(spec, complete=False) for spec in specs]

    def scope(partition: bytes) -> bool:
        values = codec.to_dict(partition)
        return any(all(values[k] == v for k, v in w.items()) for w in wanted)

    return scope


def written_scope(store: FileStore, written: Sequence[CommitMessage]) -> OverwriteScope:
    """A dynamic overwrite: the partitions ``written`` holds rows of (the whole table
    when it is not partitioned)."""
    if not store.schema.partition_keys:
        return WHOLE_TABLE
    return frozenset(m.partition for m in written).__contains__
