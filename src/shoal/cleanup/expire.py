"""Snapshot expiration: removing old snapshots and the files only they used.

Choosing the range. Of the snapshots ``earliest .. latest``, the newest
``retain_min`` always stay; those beyond the newest ``retain_max`` go whatever
their age; in between, snapshot ``s`` goes only when its successor ``s + 1`` was
committed before the age threshold, so the snapshot that was current at any moment
inside the retention window stays readable. At most ``limit`` go per run. No
snapshot at or above the smallest next snapshot of the table's consumers goes
(:mod:`shoal.core.consumers`; beyond ``retain_max`` too, as in Paimon), and the
result names the consumers that held snapshots back; consumers not advanced within
``consumer.expiration-time`` are deleted first. The result is a range
``[begin, end)``: ``end`` is the oldest snapshot kept.

What goes with them:

- Data files: a file stops being used by the snapshot whose delta manifest list
  holds its DELETE entry, so the deltas of ``(begin, end]`` name exactly the files
  that only the expired snapshots used. Entries are walked in commit order: a file
  deleted and then added again is kept, one added and then deleted goes, and so do
  its extra files. A file is still kept when the nearest tag older than the
  snapshot that deleted it holds it (a file live in any older tag was live
  continuously up to that deletion, so it is live in the nearest one). No
  snapshot after ``end`` can use it again: a commit adds only files it wrote (a
  file deleted and added back in one commit, as a level upgrade does, is walked
  above), and a rollback removes the snapshots after its target rather than
  re-adding files. So the snapshots kept are not read at all: the cost follows the
  snapshots expired, not the table's history.
- Changelog files: the ADD entries of the changelog manifest lists of
  ``[begin, end)``.
- Manifests and manifest lists of ``[begin, end)`` that neither snapshot ``end`` nor
  a tag in the range uses (a manifest is used by an unbroken stretch of snapshots,
  so a manifest of an expired snapshot still in use is used by ``end`` or by a tag
  inside the range, or by the last tag at or before ``begin``).
- By the same rule, the index manifests of ``[begin, end)`` and the index files they
  name (hash indexes, deletion vectors: ``cleanup/index_files``) that neither
  snapshot ``end`` nor such a tag names.
- The snapshot files, oldest first, then the ``EARLIEST`` hint.

When changelogs outlive snapshots (a ``changelog.*`` retention above its ``snapshot.*``
counterpart, Paimon's decoupled lifecycle) the changelog files, the changelog manifest
lists and their manifests stay, and each snapshot's JSON is kept as
``changelog/changelog-<id>`` (with the ``LATEST`` hint of that directory) just before
its snapshot file goes; data files, data manifests, index files and the other manifest
lists go by the rules above. The long-lived changelogs then expire by their own rules
(:mod:`shoal.cleanup.changelog_expire`).

Everything is read before anything is deleted, and a manifest that cannot be read
cancels the deletions that depend on it: its snapshot's data files, the index files
of an expired snapshot's index manifest, or all manifest and index deletion of the
run (a manifest or index manifest of ``end`` or of a tag). What is left behind then is
unreferenced, for orphan cleanup; nothing still referenced is ever deleted. The order
(data files, index files, manifests, then manifest lists and index manifests,
snapshot files, hint) means a crash at any point leaves every retained snapshot and
tag readable, and running expiration again finishes the job: each file that names
others goes after them, so a second run still finds them.

The deletes of data files, index files and metadata files go through a
:data:`BulkDelete` (by default :func:`delete_paths`: ``FileIO.delete_many``, batched
on object stores), so that a distributed job can run them elsewhere; each batch
finishes before the next starts, which keeps the order. Snapshot files go one at a
time, oldest first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from functools import partial
from typing import Any

from shoal import features
from shoal import options as O
from shoal.cleanup.auto_tags import expire_tags
from shoal.cleanup.changelog_expire import expire_changelogs
from shoal.cleanup.clock import epoch_millis
from shoal.cleanup.directories import ancestors, remove_empty_directories
from shoal.cleanup.index_files import index_file_paths, index_names
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries
from shoal.core.snapshot_manager import EARLIEST
from shoal.core.store import FileStore
from shoal.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    SnapshotNotFoundError,
    UnsupportedFeatureError,
)
from shoal.format import manifest as M
from shoal.format.manifest import ManifestEntry
from shoal.format.snapshot import Snapshot
from shoal.io import FileIO, io_map

logger = logging.getLogger(__name__)

# Metadata that cannot be read: missing, corrupt, or an I/O failure.
_UNREADABLE = (CorruptMetadataError, OSError)

BulkDelete = Callable[[Sequence[str]], int]
"""Deletes the files at the given paths and returns how many were there to delete;
it returns only when every delete is done."""


@dataclass(frozen=True, slots=True)
class ExpireResult:
    """What one expiration run removed."""

    expired_snapshots: int = 0
    deleted_data_files: int = 0
    deleted_manifest_files: int = 0  # manifests, manifest lists and index manifests
    deleted_index_files: int = 0
    kept_changelogs: int = 0  # expired snapshots kept as long-lived changelogs
    expired_changelogs: int = 0  # long-lived changelogs removed
    # The consumers whose next snapshot stopped expiration short of what the retention
    # let go (their unread snapshots stay), by id.
    held_by_consumers: tuple[str, ...] = ()
    # The consumers deleted first for not advancing within consumer.expiration-time.
    expired_consumers: tuple[str, ...] = ()

    def __add__(self, other: ExpireResult) -> ExpireResult:
        """Counts added, consumer ids joined."""
        merged: dict[str, Any] = {}
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            merged[f.name] = (
                tuple(sorted({*mine, *theirs})) if isinstance(mine, tuple) else mine + theirs
            )
        return ExpireResult(**merged)


@dataclass(frozen=True, slots=True)
class ExpireConfig:
    """The retention rules of one run, validated."""

    retain_min: int
    retain_max: int
    threshold_ms: int  # a snapshot whose successor is at least this new stays
    limit: int
    clean_empty_directories: bool = False
    # The changelog's retention (``changelog.*``, each falling back to the snapshot
    # value): above the snapshots', expired snapshots are kept as long-lived changelogs.
    changelog_retain_min: int | None = None
    changelog_retain_max: int | None = None
    changelog_threshold_ms: int | None = None
    # Consumers not modified since go before the snapshots (consumer.expiration-time).
    consumer_threshold_ms: int | None = None

    @property
    def decoupled(self) -> bool:
        """Whether changelogs outlive their snapshots (Paimon's ``ExpireConfig``)."""
        return (
            (self.changelog_retain_max or self.retain_max) > self.retain_max
            or (self.changelog_retain_min or self.retain_min) > self.retain_min
            or (self.changelog_threshold_ms or self.threshold_ms) < self.threshold_ms
        )

    @staticmethod
    def of(
        store: FileStore,
        *,
        retain_min: int | None = None,
        retain_max: int | None = None,
        older_than: datetime | None = None,
        max_deletes: int | None = None,
        now: datetime | None = None,
    ) -> ExpireConfig:
        """Arguments given override the table options. Raises InvalidArgumentError
        or InvalidOptionError before anything is read."""
        options = store.options
        for name, value in (
            ("retain_min", retain_min),
            ("retain_max", retain_max),
            ("max_deletes", max_deletes),
        ):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise InvalidArgumentError(f"{name} must be a positive integer, not {value!r}")
        if retain_max is None:
            retain_max = options.get(O.SNAPSHOT_NUM_RETAINED_MAX)
            if retain_min is None:
                O.validate(options.raw())  # the two options must agree
                retain_min = options.get(O.SNAPSHOT_NUM_RETAINED_MIN)
        elif retain_min is None:
            retain_min = min(options.get(O.SNAPSHOT_NUM_RETAINED_MIN), retain_max)
        if retain_max < retain_min:
            raise InvalidArgumentError(
                f"retain_max ({retain_max}) must not be less than retain_min ({retain_min})"
            )
        if older_than is not None and not isinstance(older_than, datetime):
            raise InvalidArgumentError(f"older_than must be a datetime, not {older_than!r}")
        threshold = older_than or (now or datetime.now()) - options.get(O.SNAPSHOT_TIME_RETAINED)
        changelog_time = options.get(O.CHANGELOG_TIME_RETAINED)
        changelog_min = options.get(O.CHANGELOG_NUM_RETAINED_MIN) or retain_min
        changelog_max = options.get(O.CHANGELOG_NUM_RETAINED_MAX) or retain_max
        if changelog_max < changelog_min:
            raise InvalidArgumentError(
                f"the changelog's retain_max ({changelog_max}) must not be less than its "
                f"retain_min ({changelog_min}); set {O.CHANGELOG_NUM_RETAINED_MAX.key}"
            )
        changelog_threshold = (
            threshold if changelog_time is None else (now or datetime.now()) - changelog_time
        )
        consumer_time = options.get(O.CONSUMER_EXPIRATION_TIME)
        consumer_threshold = (
            None if consumer_time is None else epoch_millis((now or datetime.now()) - consumer_time)
        )
        return ExpireConfig(
            retain_min=retain_min,
            retain_max=retain_max,
            threshold_ms=epoch_millis(threshold),
            limit=max_deletes or options.get(O.SNAPSHOT_EXPIRE_LIMIT),
            clean_empty_directories=options.get(O.SNAPSHOT_CLEAN_EMPTY_DIRECTORIES),
            changelog_retain_min=changelog_min,
            changelog_retain_max=changelog_max,
            changelog_threshold_ms=epoch_millis(changelog_threshold),
            consumer_threshold_ms=consumer_threshold,
        )


def expire_snapshots(
    store: FileStore,
    *,
    retain_min: int | None = None,
    retain_max: int | None = None,
    older_than: datetime | None = None,
    max_deletes: int | None = None,
    now: datetime | None = None,
    delete: BulkDelete | None = None,
) -> ExpireResult:
    """Expire tags whose retention has passed, then snapshots (arguments left as None
    come from the table options). ``delete`` deletes the data files and manifests
    (default: :func:`delete_paths` here)."""
    config = ExpireConfig.of(
        store,
        retain_min=retain_min,
        retain_max=retain_max,
        older_than=older_than,
        max_deletes=max_deletes,
        now=now,
    )
    expire_tags(store, now)
    return run_expiration(store, config, delete=delete)


def run_expiration(
    store: FileStore, config: ExpireConfig, *, delete: BulkDelete | None = None
) -> ExpireResult:
    """Expire the consumers not advanced within ``consumer.expiration-time``, then the
    snapshots ``config`` lets go (see the module docstring) below every remaining
    consumer's next snapshot, then, when changelogs outlive snapshots, the long-lived
    changelogs (:mod:`shoal.cleanup.changelog_expire`).

    Raises:
        UnsupportedFeatureError: the table keeps changelogs longer than snapshots but
            has no changelog producer, a lifecycle shoal does not implement.
    """
    decoupled = features.decoupled_changelog(store.schema.options)
    if decoupled is not None:
        feature, value = decoupled
        raise UnsupportedFeatureError(
            f"table {store.uri!r} keeps changelogs longer than snapshots ({feature.key} = "
            f"{value!r}) without a changelog producer, which shoal's expiration does not "
            "implement; expire it with Paimon's own engines, or give the changelog the "
            "snapshot retention",
            feature=feature.key,
        )
    delete = delete or partial(delete_paths, store.file_io)
    # Consumers first, as Paimon does, so that a stale one holds nothing back.
    expired_consumers: tuple[str, ...] = ()
    if config.consumer_threshold_ms is not None:
        expired_consumers = tuple(store.consumers.expire(config.consumer_threshold_ms))
    consumers = store.consumers.consumers()
    result = _expire_snapshots(store, config, delete, consumers)
    result += ExpireResult(expired_consumers=expired_consumers)
    if config.decoupled:
        assert config.changelog_retain_min is not None
        assert config.changelog_retain_max is not None
        assert config.changelog_threshold_ms is not None
        expired, data, manifests, held = expire_changelogs(
            store,
            retain_min=config.changelog_retain_min,
            retain_max=config.changelog_retain_max,
            threshold_ms=config.changelog_threshold_ms,
            limit=config.limit,
            delete=delete,
            consumers=consumers,
        )
        result += ExpireResult(
            deleted_data_files=data,
            deleted_manifest_files=manifests,
            expired_changelogs=expired,
            held_by_consumers=held,
        )
    return result


def _expire_snapshots(
    store: FileStore, config: ExpireConfig, delete: BulkDelete, consumers: Mapping[str, int]
) -> ExpireResult:
    snapshots = store.snapshots
    latest, earliest = snapshots.latest_id(), snapshots.earliest_id()
    if latest is None or earliest is None:
        return ExpireResult()
    end, held = _choose_end(store, config, earliest, latest, consumers)
    if end <= earliest:
        if snapshots.hint(EARLIEST) is None:
            snapshots.write_hint(EARLIEST, earliest)
        return ExpireResult(held_by_consumers=held)
    result = _expire_until(
        store, earliest, end, config.clean_empty_directories, delete=delete, keep=config.decoupled
    )
    return result + ExpireResult(held_by_consumers=held)


def _choose_end(
    store: FileStore,
    config: ExpireConfig,
    earliest: int,
    latest: int,
    consumers: Mapping[str, int],
) -> tuple[int, tuple[str, ...]]:
    """The oldest snapshot to keep, with the consumers that made it older than the
    retention alone would: a consumer's next snapshot and those after it stay, beyond
    ``retain_max`` too (Paimon's ``maxExclusive = min(maxExclusive, minNextSnapshot)``)."""
    force_below = max(latest - config.retain_max + 1, earliest)
    retained = min(latest - config.retain_min + 1, earliest + config.limit)
    end, holders = held_back(consumers, retained)
    for snapshot_id in range(force_below, end):
        if not _old_enough(store, config, snapshot_id):
            return snapshot_id, ()
    if holders and end >= force_below and not _old_enough(store, config, end):
        holders = ()  # the retention keeps that snapshot anyway
    if holders:
        _log_held("snapshots", end, holders)
    return end, holders


def _old_enough(store: FileStore, config: ExpireConfig, snapshot_id: int) -> bool:
    """Whether the age threshold lets ``snapshot_id`` go (its successor is older)."""
    successor = store.snapshots.find(snapshot_id + 1)
    return successor is not None and successor.time_millis < config.threshold_ms


def held_back(consumers: Mapping[str, int], end: int) -> tuple[int, tuple[str, ...]]:
    """``end`` (the oldest snapshot or changelog the retention keeps) lowered to the
    smallest next snapshot of ``consumers``, with the consumers at that snapshot when
    it is lower."""
    floor = min(consumers.values(), default=None)
    if floor is None or floor >= end:
        return end, ()
    return floor, tuple(sorted(c for c, n in consumers.items() if n == floor))


def _log_held(what: str, floor: int, holders: tuple[str, ...]) -> None:
    # So that a user asking why nothing (or less) expired finds the consumer.
    logger.info(
        "%s from %d on are kept for consumer(s) %s, which read snapshot %d next (delete or "
        "reset a consumer that no longer reads, or set consumer.expiration-time)",
        what,
        floor,
        ", ".join(repr(c) for c in holders),
        floor,
    )


@dataclass(frozen=True, slots=True)
class _Range:
    """The snapshots ``[begin, end)`` to expire, with what planning reads besides."""

    store: FileStore
    by_id: dict[int, Snapshot]  # the snapshots from ``begin`` to ``end``, inclusive
    begin: int
    end: int
    tagged: list[Snapshot]  # every tag's snapshot, by id
    keep_changelogs: bool = False  # the snapshots stay as long-lived changelogs


@dataclass(slots=True)
class _Plan:
    """The files one run deletes, decided before any is deleted."""

    data_files: list[str] = field(default_factory=list)
    manifests: list[str] = field(default_factory=list)
    manifest_lists: list[str] = field(default_factory=list)
    index_files: list[str] = field(default_factory=list)
    index_manifests: list[str] = field(default_factory=list)
    touched_buckets: set[str] = field(default_factory=set)


def _expire_until(
    store: FileStore,
    earliest: int,
    end: int,
    clean_empty_directories: bool,
    *,
    delete: BulkDelete,
    keep: bool = False,
) -> ExpireResult:
    """Expire ``[earliest, end)``; with ``keep`` each expired snapshot stays as a
    long-lived changelog, with its changelog manifests and files."""
    reads = store.file_io.concurrent_reads
    found = io_map(store.snapshots.find, range(earliest, end + 1), concurrent=reads)
    by_id = {s.id: s for s in found if s is not None}
    if end not in by_id:
        logger.info("snapshot %d is gone (expired concurrently?); nothing to do", end)
        return ExpireResult()
    # A gap means the snapshots below it were expired already, but their files
    # were not all removed (a run stopped half-way, or files removed by hand).
    missing = [i for i in range(earliest, end) if i not in by_id]
    begin = missing[-1] + 1 if missing else earliest
    leftovers = [i for i in by_id if i < begin]
    if leftovers:
        logger.warning(
            "snapshots %s lie below the missing snapshot %d; they go without their files, "
            "which orphan cleanup removes",
            leftovers,
            begin - 1,
        )
    tags = store.tags
    for _ in range(3):
        tag_names = tags.names()
        tagged = sorted((s for _, s in tags.tags()), key=lambda s: s.id)
        plan = _plan(_Range(store, by_id, begin, end, tagged, keep))
        # A tag created on an expiring snapshot meanwhile must be honoured: plan again.
        if tags.names() == tag_names:
            break
    else:
        raise InvalidArgumentError(
            "tags kept changing while expiration planned; run it again when tag creation is quieter"
        )
    deleted_data = _delete_some(delete, plan.data_files)
    if clean_empty_directories:
        _remove_empty_directories(store, plan.touched_buckets)
    # Manifests and index files before the lists and index manifests that name them,
    # in two steps: a run stopped in between can still find them when it runs again.
    deleted_index = _delete_some(delete, plan.index_files)
    deleted_manifests = _delete_some(delete, plan.manifests)
    deleted_manifests += _delete_some(delete, plan.manifest_lists + plan.index_manifests)
    for snapshot_id in sorted(leftovers) + list(range(begin, end)):
        if keep and snapshot_id >= begin:
            # Before the snapshot file goes: a crash in between leaves both, the same JSON.
            store.changelogs.keep(by_id[snapshot_id])
        store.file_io.delete(store.paths.snapshot_path(snapshot_id))
        store.snapshots.forget(snapshot_id)
    store.snapshots.write_hint(EARLIEST, end)
    expired = end - begin + len(leftovers)
    logger.info(
        "expired snapshots %d..%d: deleted %d data files, %d index files and %d manifest files",
        min([begin, *leftovers]),
        end - 1,
        deleted_data,
        deleted_index,
        deleted_manifests,
    )
    kept = end - begin if keep else 0
    return ExpireResult(expired, deleted_data, deleted_manifests, deleted_index, kept)


def _plan(expiring: _Range) -> _Plan:
    plan = _Plan()
    _plan_data_files(expiring, plan)
    _plan_changelog_files(expiring, plan)
    _plan_manifests(expiring, plan)
    return plan


# --- data files ----------------------------------------------------------------------------------
def _plan_data_files(expiring: _Range, plan: _Plan) -> None:
    store, begin, end = expiring.store, expiring.begin, expiring.end
    reads = store.file_io.concurrent_reads
    deltas = io_map(lambda s: _delta_entries(store, s), range(begin + 1, end + 1), concurrent=reads)
    # path -> the entry whose DELETE makes it a candidate, and every snapshot that
    # deleted it inside the range (each must pass the tag check).
    pending: dict[str, ManifestEntry] = {}
    deleted_by: dict[str, list[int]] = {}
    for snapshot_id, entries in zip(range(begin + 1, end + 1), deltas, strict=True):
        if entries is None:
            continue  # unreadable: its deletions are left for orphan cleanup
        for entry in entries:
            path = _entry_path(store, entry)
            if entry.kind == M.KIND_ADD:
                pending.pop(path, None)
            else:
                pending[path] = entry
                deleted_by.setdefault(path, []).append(snapshot_id)
    if not pending:
        return
    skippers = _TagSkippers(store, expiring.tagged)
    for path, entry in pending.items():
        if any(skippers.holds(s, path) for s in deleted_by[path]):
            continue
        bucket_dir = path.rsplit("/", 1)[0]
        plan.data_files.append(path)
        plan.data_files.extend(f"{bucket_dir}/{x}" for x in entry.file.extra_files)
        plan.touched_buckets.add(bucket_dir)


def _delta_entries(store: FileStore, snapshot_id: int) -> list[ManifestEntry] | None:
    """The entries of a snapshot's delta list in commit order; None if unreadable."""
    try:
        snapshot = store.snapshots.snapshot(snapshot_id)
        metas = store.manifests.read_list(snapshot.delta_manifest_list)
        return [e for m in metas for e in store.manifests.read_manifest(m.file_name)]
    except (*_UNREADABLE, SnapshotNotFoundError) as exc:
        logger.warning("snapshot %d: delta unreadable (%s); its files stay", snapshot_id, exc)
        return None


def _entry_path(store: FileStore, entry: ManifestEntry) -> str:
    bucket_dir = store.paths.bucket_dir(store.partitions.path(entry.partition), entry.bucket)
    return data_file_path(bucket_dir, entry.file)


class _TagSkippers:
    """For a snapshot, the data files live in the nearest tag older than it."""

    def __init__(self, store: FileStore, tagged: list[Snapshot]) -> None:
        self._store = store
        self._tagged = tagged
        self._live: dict[int, set[str] | None] = {}

    def holds(self, snapshot_id: int, path: str) -> bool:
        """Whether that tag holds ``path``; True when the tag cannot be read."""
        older = [s for s in self._tagged if s.id < snapshot_id]
        if not older:
            return False
        tag_snapshot = older[-1]
        if tag_snapshot.id not in self._live:
            self._live[tag_snapshot.id] = self._read(tag_snapshot)
        live = self._live[tag_snapshot.id]
        return live is None or path in live

    def _read(self, snapshot: Snapshot) -> set[str] | None:
        try:
            return {_entry_path(self._store, e) for e in live_entries(self._store, snapshot)}
        except _UNREADABLE as exc:
            logger.warning("the tag of snapshot %d cannot be read (%s)", snapshot.id, exc)
            return None


# --- changelog files -----------------------------------------------------------------------------
def _plan_changelog_files(expiring: _Range, plan: _Plan) -> None:
    store = expiring.store
    if expiring.keep_changelogs:
        return  # they stay with the long-lived changelogs
    for snapshot in (expiring.by_id[i] for i in range(expiring.begin, expiring.end)):
        if not snapshot.changelog_manifest_list:
            continue
        try:
            metas = store.manifests.read_list(snapshot.changelog_manifest_list)
            entries = [e for m in metas for e in store.manifests.read_manifest(m.file_name)]
        except _UNREADABLE as exc:
            logger.warning("snapshot %d: changelog cannot be read (%s)", snapshot.id, exc)
            continue
        plan.data_files.extend(_entry_path(store, e) for e in entries if e.kind == M.KIND_ADD)


# --- manifests -----------------------------------------------------------------------------------
def _plan_manifests(expiring: _Range, plan: _Plan) -> None:
    store, by_id, begin, end = expiring.store, expiring.by_id, expiring.begin, expiring.end
    tagged = expiring.tagged
    at_or_before_begin = [s.id for s in tagged if s.id <= begin]
    window_start = at_or_before_begin[-1] if at_or_before_begin else begin
    keepers = [by_id[end], *(s for s in tagged if window_start <= s.id < end)]
    kept: set[str] = set()
    try:
        for snapshot in keepers:
            lists, manifests = _manifest_names(store, snapshot, strict=True)
            kept.update(lists, manifests)
            kept.update(index_names(store, snapshot, strict=True).all())
    except _UNREADABLE as exc:
        logger.warning(
            "manifests in use cannot be read (%s); no manifest or index file is deleted", exc
        )
        return
    doomed_lists: set[str] = set()
    doomed_manifests: set[str] = set()
    doomed_index_manifests: set[str] = set()
    doomed_index_files: set[str] = set()
    for snapshot_id in range(begin, end):
        lists, manifests = _manifest_names(
            store, by_id[snapshot_id], strict=False, changelog=not expiring.keep_changelogs
        )
        doomed_lists.update(lists)
        doomed_manifests.update(manifests)
        index = index_names(store, by_id[snapshot_id], strict=False)
        if index.manifest:
            doomed_index_manifests.add(index.manifest)
        doomed_index_files.update(index.files)
    paths = store.paths
    plan.manifests.extend(paths.manifest_path(n) for n in sorted(doomed_manifests - kept))
    plan.manifest_lists.extend(paths.manifest_path(n) for n in sorted(doomed_lists - kept))
    plan.index_files.extend(index_file_paths(store, doomed_index_files - kept))
    plan.index_manifests.extend(
        paths.manifest_path(n) for n in sorted(doomed_index_manifests - kept)
    )


def _manifest_names(
    store: FileStore, snapshot: Snapshot, *, strict: bool, changelog: bool = True
) -> tuple[list[str], list[str]]:
    """The manifest lists of a snapshot (without its changelog list unless
    ``changelog``), and the manifests they name.

    An unreadable list raises when ``strict``; otherwise only its own name is given
    (the manifests it names stay for orphan cleanup). Statistics files are left
    alone, for orphan cleanup."""
    lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
    if changelog and snapshot.changelog_manifest_list:
        lists.append(snapshot.changelog_manifest_list)
    names: list[str] = []
    for name in lists:
        try:
            names.extend(m.file_name for m in store.manifests.read_list(name))
        except _UNREADABLE as exc:
            if strict:
                raise
            logger.warning("snapshot %d: manifest list cannot be read (%s)", snapshot.id, exc)
    return lists, names


# --- deleting ------------------------------------------------------------------------------------
def delete_paths(file_io: FileIO, paths: Sequence[str]) -> int:
    """Delete ``paths`` with ``FileIO.delete_many`` (batched on object stores, on the I/O
    pool); returns how many were there to delete. Raises OSError (``DeleteError``) when
    some could not be deleted, after trying them all."""
    return file_io.delete_many(paths)


def _delete_some(delete: BulkDelete, paths: list[str]) -> int:
    return delete(paths) if paths else 0


def _remove_empty_directories(store: FileStore, bucket_dirs: set[str]) -> None:
    """Remove the bucket directories left empty, then their partition directories
    up to the table root, deepest first (never a directory that is not empty). One
    already gone counts as removed: a run stopped between a bucket and its partition
    directory must reach the partition directory when it runs again."""
    removable = {d for b in bucket_dirs for d in ancestors(b, store.root)}
    remove_empty_directories(store.file_io, bucket_dirs, removable, missing_counts=True)
