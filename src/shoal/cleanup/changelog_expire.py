"""Changelog expiration: removing long-lived changelogs and the files only they kept.

A table whose changelog outlives its snapshots (``changelog.num-retained.min``,
``changelog.num-retained.max`` or ``changelog.time-retained`` above its snapshot
counterpart) keeps each expired snapshot's JSON as ``changelog/changelog-<id>``
(:mod:`shoal.cleanup.expire`), with its changelog manifest list, the manifests in it
and the changelog files they add. They go by Paimon's rules (0.9 and 1.0,
``ExpireChangelogImpl``), run after snapshot expiration:

- the retention counts from the latest *snapshot*: the changelogs of the newest
  ``retain_min`` snapshot ids stay, and so do those at or above the next snapshot of
  any consumer (:mod:`shoal.core.consumers`), those beyond the newest ``retain_max`` go whatever
  their age; in between, changelogs go oldest first up to the first one committed at
  or after the age threshold (its own commit time). At most ``limit`` go per run
  (``snapshot.expire.limit``), and the newest long-lived changelog always stays;
- with each expired changelog go the changelog files its changelog manifest list adds,
  then the manifests and manifest lists it names that no keeper names. The keepers
  are the changelog kept next (``end``), every tag and the earliest snapshot: a
  manifest is used by an unbroken stretch of snapshots, so one still in use after the
  range is used by one of them. A tag of an expired changelog's snapshot keeps its
  manifest lists and changelog manifests (as snapshot expiration keeps them when
  changelogs expire with snapshots), but not its changelog files, which only a
  streaming read of that snapshot reads. Index manifests and index files are left to
  snapshot expiration, which removes them with the snapshots.

Order: everything is read first; then the changelog files of ``changelog/`` go, oldest
first, and the directory's ``EARLIEST`` hint moves; then the changelog files, the
manifests and the manifest lists. A crash at any point leaves every kept changelog,
snapshot and tag whole, and only files nothing references, for orphan cleanup. The
table's data files are never touched: with a changelog producer, a long-lived
changelog names only its changelog files (a table without one keeps its data files as
changelog, which shoal refuses, ``features.decoupled_changelog``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from shoal.core.paths import data_file_path
from shoal.core.snapshot_manager import EARLIEST
from shoal.core.store import FileStore
from shoal.errors import CorruptMetadataError
from shoal.format import manifest as M
from shoal.format.snapshot import Snapshot
from shoal.io import io_map

logger = logging.getLogger(__name__)

_UNREADABLE = (CorruptMetadataError, OSError)


def expire_changelogs(
    store: FileStore,
    *,
    retain_min: int,
    retain_max: int,
    threshold_ms: int,
    limit: int,
    delete: Callable[[Sequence[str]], int],
    consumers: Mapping[str, int],
) -> tuple[int, int, int, tuple[str, ...]]:
    """Expire the long-lived changelogs the retention lets go, none at or above the
    next snapshot of a consumer; returns how many went, with the changelog files and
    the manifest files deleted, and the consumers that kept changelogs the retention
    alone would have let go."""
    snapshots, changelogs = store.snapshots, store.changelogs
    latest_snapshot = snapshots.latest_id()
    latest, earliest = changelogs.latest_id(), changelogs.earliest_id()
    if latest_snapshot is None or latest is None or earliest is None:
        return 0, 0, 0, ()
    low = max(latest_snapshot - retain_max + 1, earliest)
    retained = min(latest_snapshot - retain_min + 1, earliest + limit, latest)
    floor = min(consumers.values(), default=retained)
    end = min(retained, floor)
    holders = (
        tuple(sorted(c for c, n in consumers.items() if n == floor)) if floor < retained else ()
    )
    for changelog_id in range(low, end + 1):
        found = changelogs.find(changelog_id)
        if found is not None and found.time_millis >= threshold_ms:
            end = changelog_id
            holders = ()  # the retention keeps it anyway
            break
    if holders:
        logger.info(
            "changelogs from %d on are kept for consumer(s) %s, which read snapshot %d next",
            floor,
            ", ".join(repr(c) for c in holders),
            floor,
        )
    if end <= earliest:
        if changelogs.hint(EARLIEST) is None:  # as snapshot expiration writes its own
            changelogs.write_hint(EARLIEST, earliest)
        return 0, 0, 0, holders
    return (*_expire_until(store, earliest, end, delete), holders)


def _expire_until(
    store: FileStore, earliest: int, end: int, delete: Callable[[Sequence[str]], int]
) -> tuple[int, int, int]:
    changelogs = store.changelogs
    found = io_map(changelogs.find, range(earliest, end + 1), concurrent=True)
    by_id = {c.id: c for c in found if c is not None}
    if end not in by_id:
        logger.info("changelog %d is gone (expired concurrently?); nothing to do", end)
        return 0, 0, 0
    tags = store.tags
    for _ in range(3):
        names = tags.names()
        keepers = [by_id[end], *(s for _, s in tags.tags())]
        earliest_snapshot = store.snapshots.earliest_id()
        if earliest_snapshot is not None:
            keepers.append(store.snapshots.snapshot(earliest_snapshot))
        if tags.names() == names:
            break
    expiring = [by_id[i] for i in range(earliest, end) if i in by_id]
    files, manifests, lists = _plan(store, expiring, keepers)
    for changelog in expiring:
        changelogs.delete(changelog.id)
    changelogs.write_hint(EARLIEST, end)
    deleted_files = delete(files) if files else 0
    deleted_manifests = delete(manifests) if manifests else 0
    deleted_manifests += delete(lists) if lists else 0
    logger.info(
        "expired changelogs %d..%d: deleted %d changelog files and %d manifest files",
        earliest,
        end - 1,
        deleted_files,
        deleted_manifests,
    )
    return len(expiring), deleted_files, deleted_manifests


def _plan(
    store: FileStore, expiring: list[Snapshot], keepers: list[Snapshot]
) -> tuple[list[str], list[str], list[str]]:
    """Paths of the changelog files, the manifests and the manifest lists to delete."""
    files: list[str] = []
    manifests: set[str] = set()
    lists: set[str] = set()
    for changelog in expiring:
        name = changelog.changelog_manifest_list
        if name:
            try:
                metas = store.manifests.read_list(name)
                entries = [e for m in metas for e in store.manifests.read_manifest(m.file_name)]
            except _UNREADABLE as exc:
                logger.warning("changelog %d cannot be read (%s)", changelog.id, exc)
            else:
                lists.add(name)
                manifests.update(m.file_name for m in metas)
                for entry in entries:
                    if entry.kind == M.KIND_ADD:
                        bucket = store.paths.bucket_dir(
                            store.partitions.path(entry.partition), entry.bucket
                        )
                        files.append(data_file_path(bucket, entry.file))
        for other in (changelog.delta_manifest_list, changelog.base_manifest_list):
            names = _list_if_there(store, other)
            if names is not None:
                lists.add(other)
                manifests.update(names)
    try:
        kept = _kept_names(store, keepers)
    except _UNREADABLE as exc:
        logger.warning("manifests in use cannot be read (%s); no manifest is deleted", exc)
        return files, [], []
    paths = store.paths
    return (
        files,
        [paths.manifest_path(n) for n in sorted(manifests - kept)],
        [paths.manifest_path(n) for n in sorted(lists - kept)],
    )


def _list_if_there(store: FileStore, name: str) -> list[str] | None:
    """The manifests a manifest list names; None when the list is gone (snapshot
    expiration deleted a long-lived changelog's data manifest lists) or unreadable."""
    if not name or not store.file_io.exists(store.paths.manifest_path(name)):
        return None
    try:
        return [m.file_name for m in store.manifests.read_list(name)]
    except _UNREADABLE as exc:
        logger.warning("manifest list %s cannot be read (%s)", name, exc)
        return None


def _kept_names(store: FileStore, keepers: list[Snapshot]) -> set[str]:
    """The manifest lists of ``keepers`` that are there, and the manifests they name.
    Raises when one that is there cannot be read."""
    kept: set[str] = set()
    for keeper in keepers:
        for name in (
            keeper.base_manifest_list,
            keeper.delta_manifest_list,
            keeper.changelog_manifest_list,
        ):
            if name and store.file_io.exists(store.paths.manifest_path(name)):
                kept.add(name)
                kept.update(m.file_name for m in store.manifests.read_list(name))
    return kept
