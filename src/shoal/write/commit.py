"""The committer: turns writers' commit messages into the next snapshot.

One attempt reads the latest snapshot, plans DELETE entries for an overwrite,
checks that every file it deletes is still live, writes the delta manifest, carries
the previous base and delta manifests into a new (merged) base list, and publishes
``snapshot-(N+1)`` by atomic create. On a table with an event-time column the
snapshot's properties carry the read-optimized freshness watermark, updated from the
commit's own entries (``freshness_watermark``); on every primary-key table they carry
the compaction backlog (``event_time.backlog``), updated likewise. If another writer
took that id first, or snapshot N expired while the attempt read it (an attempt slower than
``snapshot.time-retained``: its manifests are gone, or its successor's id was taken and
freed again, see ``SnapshotManager.try_publish``), the attempt's own manifests are
removed and the commit re-plans against the new latest snapshot, up to
``commit.max-retries`` times. Data files are never deleted here:
after a failed commit they may still be referenced, so orphan cleanup owns them. The
one exception is a CommitConflictError, raised only before anything is published:
then a compaction deletes the files it rewrote itself (``shoal.compaction.compact``).
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from shoal import options as O
from shoal.core import deletion_vectors as DVS
from shoal.core.manifest_merge import merge_manifests
from shoal.core.partition_time import refuse_expired_writes
from shoal.core.plan import live_entries, read_manifest_metas
from shoal.core.store import FileStore
from shoal.errors import (
    CommitConflictError,
    CorruptMetadataError,
    SequenceConflictError,
)
from shoal.event_time.backlog import backlog_after, with_backlog
from shoal.event_time.watermark import with_watermark
from shoal.format import manifest as M
from shoal.format.index_manifest import (
    IndexManifestEntry,
    combine_index_entries,
    encode_index_manifest,
)
from shoal.format.manifest import ManifestEntry, ManifestFileMeta
from shoal.format.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from shoal.write import bucket_sequences
from shoal.write.bucket_index import hash_entries
from shoal.write.files import CommitMessage

logger = logging.getLogger(__name__)

INDEX_MANIFEST_PREFIX = "index-manifest-"
# Paimon's table option naming the prefix of its writers' commit users. It changes no
# file but the snapshots' commitUser, which shoal's committers honour.
COMMIT_USER_PREFIX = "commit.user-prefix"

# An overwrite target: every partition, or the partitions a predicate accepts.
OverwriteScope = Callable[[bytes], bool]
WHOLE_TABLE: OverwriteScope = lambda _partition: True  # noqa: E731


@dataclass(frozen=True, slots=True)
class CommitRequest:
    """One commit: the writers' messages and what the commit must check.

    ``overwrite``: the partitions whose live files the commit replaces (the snapshot is
    then an OVERWRITE). ``allow_empty``: publish a snapshot even with nothing in it.
    ``check_sequences``: refuse when a concurrent writer added rows to a bucket this
    commit writes (primary-key writes, which then sequence again). ``alone_since``: a
    compaction planned on that snapshot, which must not commit if another compaction
    committed after it (event-time compactions run one at a time per table; writers
    are never held up). ``properties`` and ``watermark`` go into the snapshot.

    ``index_changes``: index files the commit adds and replaces (DELETE, ADD), applied
    to the previous snapshot's index manifest as Paimon combines them.
    ``index_base``: per partition, the hash index files a dynamic-bucket write assigned
    its keys from; if the latest snapshot's differ, a concurrent writer changed that
    index and the commit raises SequenceConflictError (the write assigns again). An
    overwrite or partition drop removes the index files of the partitions it replaces.
    The messages' own index files (a compaction's deletion vectors) join the changes.

    ``vector_base``: per bucket a compaction rewrote on a table with deletion vectors,
    the deletion-vector index files it read; if the latest snapshot's differ, or a
    data file its new vectors mark is no longer live, a concurrent commit changed what
    the vectors were made from and the commit raises CommitConflictError.
    """

    messages: Sequence[CommitMessage]
    kind: CommitKind = CommitKind.APPEND
    overwrite: OverwriteScope | None = None
    allow_empty: bool = False
    check_sequences: bool = False
    alone_since: int | None = None
    properties: Mapping[str, str] | None = None
    watermark: int | None = None
    index_changes: Sequence[IndexManifestEntry] = ()
    index_base: Mapping[bytes, frozenset[str]] | None = None
    vector_base: Mapping[tuple[bytes, int], frozenset[str]] | None = None


@dataclass(frozen=True, slots=True)
class _Attempt:
    snapshot: Snapshot
    written: list[str]


class FileStoreCommit:
    """Commits for one table; ``commit_user`` identifies the writer in snapshots, and
    every snapshot this committer publishes carries ``commit_identifier``.

    A batch writer's identifier is Paimon's ``BATCH_COMMIT_IDENTIFIER``. A streaming
    writer commits each of its batches with a committer of its own (stable) user and
    the batch's identifier, so :meth:`last_committed_identifier` tells after a restart
    which batches were committed already. The commit user defaults to a random UUID,
    after the table's ``commit.user-prefix`` and ``_`` when it has one (as Paimon
    makes it).
    """

    def __init__(
        self,
        store: FileStore,
        commit_user: str | None = None,
        commit_identifier: int = BATCH_COMMIT_IDENTIFIER,
    ) -> None:
        self.store = store
        self.commit_user = commit_user or new_commit_user(store.schema.options)
        self.commit_identifier = commit_identifier

    def last_committed_identifier(self) -> int | None:
        """The commit identifier of the newest snapshot this commit user published, or
        None when no snapshot kept is one of its: Paimon's ``filterCommitted``, which
        scans back from the latest snapshot. A user's snapshots that expired are not
        seen, so a streaming writer's last snapshot must outlive its restart."""
        snapshots = self.store.snapshots
        latest = snapshots.latest_id()
        if latest is None:
            return None
        for snapshot_id in range(latest, (snapshots.earliest_id() or 1) - 1, -1):
            snapshot = snapshots.find(snapshot_id)
            if snapshot is None:
                earliest = snapshots.earliest_id()
                if earliest is None or snapshot_id < earliest:
                    break  # expired while scanning: every older one is gone too
                continue  # rolled back while scanning
            if snapshot.commit_user == self.commit_user:
                return snapshot.commit_identifier
        return None

    def commit(self, request: CommitRequest) -> Snapshot | None:
        """Publish one snapshot holding the request's messages; None when there was
        nothing to commit.

        Raises:
            CommitConflictError: a file to delete is gone, another compaction committed
                since ``alone_since``, or every retry lost its race. Nothing was
                published then (every check runs before the atomic create, and an id
                lost is a snapshot not published), so the data files of ``messages``
                are in no snapshot: compaction deletes the ones it wrote. Any other
                error leaves the outcome open.
            SequenceConflictError: with ``check_sequences``, a concurrent writer added
                rows to a bucket this commit writes (nothing published).
            PartitionExpiredError: a write adds files to a partition that partition
                expiration (by values) drops.
        """
        messages, kind, overwrite = request.messages, request.kind, request.overwrite
        if kind != CommitKind.COMPACT:  # compaction only rewrites rows already there
            new_partitions = (m.partition for m in messages if m.new_files)
            refuse_expired_writes(self.store.partitions, self.store.options, new_partitions)
        changes = _entries_of(messages)
        if (
            not changes
            and not any(m.changelog_files for m in messages)
            and not request.index_changes
            and not any(m.new_index_files or m.deleted_index_files for m in messages)
            and overwrite is None
            and not request.allow_empty
        ):
            return None
        max_retries = self.store.options.get(O.COMMIT_MAX_RETRIES)
        for attempt in range(max_retries + 1):
            latest = self.store.snapshots.latest()
            try:
                entries = list(changes)
                if overwrite is not None:
                    entries = self._overwrite_deletes(latest, overwrite) + [
                        e for e in entries if e.kind == M.KIND_ADD
                    ]
                self._check_deletes(latest, [e for e in changes if e.kind == M.KIND_DELETE])
                if request.check_sequences:
                    self._check_sequences(latest, [e for e in changes if e.kind == M.KIND_ADD])
                if request.alone_since is not None:
                    self._check_no_compaction_since(request.alone_since, latest)
                if request.index_base is not None:
                    self._check_hash_index(latest, request.index_base)
                if request.vector_base is not None:
                    self._check_vectors(latest, request.vector_base, messages)
                result = self._try_once(
                    latest,
                    entries,
                    CommitKind.OVERWRITE if overwrite is not None else kind,
                    request,
                )
            except CorruptMetadataError:
                # A manifest of the snapshot this attempt read is gone: unless that is
                # still the latest (then the table is damaged), a newer one replaced it
                # and expiration is removing it: this attempt lost its race.
                if latest is None or not self.store.snapshots.superseded(latest.id):
                    raise
                logger.debug("snapshot %d expired while a commit read it; retrying", latest.id)
                continue
            if self.store.snapshots.try_publish(result.snapshot):
                logger.debug("committed snapshot %d", result.snapshot.id)
                return result.snapshot
            self.store.manifests.delete_uncommitted(result.written)
            logger.debug("snapshot id %d was taken; retrying", result.snapshot.id)
            time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise CommitConflictError(
            f"commit lost the race for a snapshot id {max_retries + 1} times against "
            "concurrent writers; retry the operation or raise 'commit.max-retries'"
        )

    def _overwrite_deletes(
        self, latest: Snapshot | None, scope: OverwriteScope
    ) -> list[ManifestEntry]:
        if latest is None:
            return []
        return [
            e.with_kind(M.KIND_DELETE)
            for e in live_entries(self.store, latest, partition_filter=scope)
        ]

    def _check_deletes(self, latest: Snapshot | None, deletes: list[ManifestEntry]) -> None:
        """Every file a commit deletes must still be live: a concurrent compaction or
        overwrite may have removed it, and deleting it twice would corrupt the table."""
        if not deletes:
            return
        partitions = {e.partition for e in deletes}
        live = set()
        if latest is not None:
            live = {e.identifier() for e in live_entries(self.store, latest, partitions=partitions)}
        for entry in deletes:
            if entry.with_kind(M.KIND_ADD).identifier() not in live:
                raise CommitConflictError(
                    f"file {entry.file.file_name} was removed by a concurrent commit; "
                    "re-plan the operation against the latest snapshot"
                )

    def _check_no_compaction_since(self, base: int, latest: Snapshot | None) -> None:
        found = compaction_since(self.store, base, latest)
        if found is not None:
            raise CommitConflictError(
                f"another compaction committed snapshot {found} while this one ran; "
                "this compaction is dropped, run it again to pick up what is left"
            )

    def _check_sequences(self, latest: Snapshot | None, adds: list[ManifestEntry]) -> None:
        """New rows of a primary-key table must sort after every row already in their
        bucket; a concurrent writer to the same bucket breaks that."""
        if latest is None or not adds:
            return
        lowest: dict[tuple[bytes, int], int] = {}
        for e in adds:
            key = (e.partition, e.bucket)
            lowest[key] = min(
                lowest.get(key, e.file.min_sequence_number), e.file.min_sequence_number
            )
        # the highest sequence number of each bucket: recorded in the snapshot, or read
        known = bucket_sequences.known_for(self.store, latest, {p for p, _ in lowest})
        for (partition, bucket), floor in lowest.items():
            high = known[partition].get(bucket)
            if high is not None and high >= floor:
                raise SequenceConflictError(
                    f"bucket {bucket} was written concurrently (its rows reach sequence "
                    f"number {high}); the write must be sequenced again"
                )

    def _check_hash_index(
        self, latest: Snapshot | None, base: Mapping[bytes, frozenset[str]]
    ) -> None:
        """The hash index files of each partition a dynamic-bucket write assigned in are
        still those it read: otherwise a concurrent writer may have put one of its new
        keys into another bucket."""
        now: dict[bytes, set[str]] = {}
        for e in hash_entries(self.store, latest):
            if e.partition in base:
                now.setdefault(e.partition, set()).add(e.index_file.file_name)
        for partition, names in base.items():
            if now.get(partition, set()) != names:
                raise SequenceConflictError(
                    f"the hash index of partition "
                    f"{self.store.partitions.path(partition) or '(the table)'} was changed by "
                    "a concurrent write; the buckets must be assigned again"
                )

    def _check_vectors(
        self,
        latest: Snapshot | None,
        base: Mapping[tuple[bytes, int], frozenset[str]],
        messages: Sequence[CommitMessage],
    ) -> None:
        """The deletion vectors of each bucket a compaction rewrote are still those it
        read, and every data file its new vectors mark is live after this commit."""
        now = DVS.bucket_index_files(self.store, latest)
        for key, names in base.items():
            if {f.file_name for f in now.get(key, ())} != names:
                raise CommitConflictError(
                    f"the deletion vectors of bucket {key[1]} were changed by a concurrent "
                    "commit; re-plan the compaction against the latest snapshot"
                )
        marked = {
            (m.partition, m.bucket, r.data_file_name)
            for m in messages
            for f in m.new_index_files
            for r in f.dv_ranges or ()
        }
        if not marked or latest is None:
            return
        live = {
            (e.partition, e.bucket, e.file.file_name)
            for e in live_entries(self.store, latest, partitions={p for p, _, _ in marked})
        }
        live -= {(m.partition, m.bucket, f.file_name) for m in messages for f in m.deleted_files}
        live |= {(m.partition, m.bucket, f.file_name) for m in messages for f in m.new_files}
        gone = marked - live
        if gone:
            raise CommitConflictError(
                f"file {next(iter(gone))[2]}, whose rows this compaction marked deleted, was "
                "removed by a concurrent commit; re-plan the compaction against the latest "
                "snapshot"
            )

    def _index_manifest(
        self, latest: Snapshot | None, request: CommitRequest, written: list[str]
    ) -> str | None:
        """The new snapshot's index manifest: the previous one when nothing changes it,
        else a new one (named in ``written``) of its entries with this commit's index
        changes, the files of the partitions an overwrite replaces removed."""
        previous_name = latest.index_manifest if latest is not None else None
        previous: list[IndexManifestEntry] = []
        if previous_name is not None:
            previous = self.store.manifests.read_index_manifest(previous_name)
        changes = list(request.index_changes) + _index_entries_of(request.messages)
        if request.overwrite is not None:
            scope = request.overwrite
            changes = [e.with_kind(M.KIND_DELETE) for e in previous if scope(e.partition)] + [
                e for e in changes if e.kind == M.KIND_ADD
            ]
        if not changes:
            return previous_name
        try:
            entries = combine_index_entries(previous, changes)
        except ValueError as exc:
            raise CommitConflictError(
                f"the index changes do not apply to snapshot {latest.id if latest else 0}: "
                f"{exc}; re-plan the operation against the latest snapshot"
            ) from None
        name = f"{INDEX_MANIFEST_PREFIX}{uuid.uuid4()}-0"
        data = encode_index_manifest(entries, self.store.manifests.compression)
        self.store.file_io.write_bytes(self.store.paths.manifest_path(name), data)
        written.append(name)
        return name

    def _try_once(
        self,
        latest: Snapshot | None,
        entries: list[ManifestEntry],
        kind: CommitKind,
        request: CommitRequest,
    ) -> _Attempt:
        store = self.store
        properties, watermark = request.properties, request.watermark
        if store.is_primary_key:  # the compaction backlog, read by freshness()
            backlog = backlog_after(store, latest, entries)
            if store.event_time_columns:  # the read-optimized freshness watermark
                properties = with_watermark(
                    store, latest, entries, properties, backlog.min_event_time
                )
            properties = with_backlog(store, latest, backlog, properties)
        if store.is_primary_key:  # each bucket's highest sequence number, read by writes
            known = bucket_sequences.after(store, latest, entries, learn=request.check_sequences)
            next_id = latest.id + 1 if latest is not None else 1
            properties = {**(properties or {}), **bucket_sequences.to_properties(known, next_id)}
        written: list[str] = []
        index_manifest = self._index_manifest(latest, request, written)
        delta_metas = store.manifests.write_manifests(entries)
        written.extend(m.file_name for m in delta_metas)
        try:
            previous: list[ManifestFileMeta] = (
                read_manifest_metas(store, latest) if latest is not None else []
            )
            merged = merge_manifests(
                store.manifests,
                previous,
                target_size=store.options.get(O.MANIFEST_TARGET_FILE_SIZE),
                min_count=store.options.get(O.MANIFEST_MERGE_MIN_COUNT),
                full_compaction_size=store.options.get(O.MANIFEST_FULL_COMPACTION_SIZE),
            )
        except CorruptMetadataError:
            store.manifests.delete_uncommitted(written)  # no snapshot names them
            raise
        written.extend(merged.written)
        base_name, base_size = store.manifests.write_list(merged.metas)
        delta_name, delta_size = store.manifests.write_list(delta_metas)
        written.extend([base_name, delta_name])
        changelog_name, changelog_size, changelog_records = None, None, None
        changelog = [] if request.overwrite is not None else _changelog_entries_of(request.messages)
        if changelog:
            # Paimon commits no changelog with an overwrite; its files stay unreferenced.
            changelog_metas = store.manifests.write_manifests(changelog)
            written.extend(m.file_name for m in changelog_metas)
            changelog_name, changelog_size = store.manifests.write_list(changelog_metas)
            written.append(changelog_name)
            changelog_records = sum(e.file.row_count for e in changelog)
        delta_records = sum(
            e.file.row_count if e.kind == M.KIND_ADD else -e.file.row_count for e in entries
        )
        previous_total = latest.total_record_count if latest is not None else 0
        if latest is not None and latest.watermark is not None:
            watermark = latest.watermark if watermark is None else max(watermark, latest.watermark)
        snapshot = Snapshot(
            id=latest.id + 1 if latest is not None else 1,
            schema_id=store.schema.id,
            commit_kind=kind.value,
            time_millis=int(time.time() * 1000),
            total_record_count=previous_total + delta_records,
            delta_record_count=delta_records,
            watermark=watermark,
            properties=dict(properties) if properties else None,
            base_manifest_list=base_name,
            delta_manifest_list=delta_name,
            commit_user=self.commit_user,
            commit_identifier=self.commit_identifier,
            base_manifest_list_size=base_size,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list=changelog_name,
            changelog_manifest_list_size=changelog_size,
            changelog_record_count=changelog_records,
            index_manifest=index_manifest,
        )
        return _Attempt(snapshot, written)


def new_commit_user(table_options: Mapping[str, str]) -> str:
    """A new commit user: a random UUID, after ``commit.user-prefix`` and ``_`` when the
    table sets it (Paimon's ``CoreOptions.createCommitUser``)."""
    prefix = table_options.get(COMMIT_USER_PREFIX)
    return f"{prefix}_{uuid.uuid4()}" if prefix is not None else str(uuid.uuid4())


def compaction_since(store: FileStore, base: int, latest: Snapshot | None) -> int | None:
    """The id of a COMPACT snapshot after ``base`` up to ``latest``, or None: the rule
    that event-time compactions run one at a time, checked before a compaction rewrites
    and again when it commits."""
    if latest is None:
        return None
    for snapshot_id in range(base + 1, latest.id + 1):
        # A snapshot expired meanwhile cannot be looked at; a compaction in it that
        # touched this one's files still fails the check of the files it deletes.
        found = store.snapshots.find(snapshot_id)
        if found is not None and found.commit_kind == CommitKind.COMPACT:
            return snapshot_id
    return None


def _entries_of(messages: Sequence[CommitMessage]) -> list[ManifestEntry]:
    entries: list[ManifestEntry] = []
    for m in messages:
        entries.extend(
            ManifestEntry(M.KIND_DELETE, m.partition, m.bucket, m.total_buckets, f)
            for f in m.deleted_files
        )
        entries.extend(
            ManifestEntry(M.KIND_ADD, m.partition, m.bucket, m.total_buckets, f)
            for f in m.new_files
        )
    return entries


def _changelog_entries_of(messages: Sequence[CommitMessage]) -> list[ManifestEntry]:
    """The changelog files of the messages, as ADD entries of the changelog manifest."""
    return [
        ManifestEntry(M.KIND_ADD, m.partition, m.bucket, m.total_buckets, f)
        for m in messages
        for f in m.changelog_files
    ]


def _index_entries_of(messages: Sequence[CommitMessage]) -> list[IndexManifestEntry]:
    """The index files the messages replace (DELETE) and add (ADD)."""
    out = []
    for m in messages:
        out += [
            IndexManifestEntry(M.KIND_DELETE, m.partition, m.bucket, f)
            for f in m.deleted_index_files
        ]
        out += [IndexManifestEntry(M.KIND_ADD, m.partition, m.bucket, f) for f in m.new_index_files]
    return out
