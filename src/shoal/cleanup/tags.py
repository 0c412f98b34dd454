"""Removing tags, and the files only a removed tag kept alive.

A tag whose snapshot still exists holds nothing that the snapshot does not: removing
it removes the tag file only. A tag whose snapshot has expired may be the last holder
of some data files, manifests, index manifests and index files. A file lives over one
unbroken stretch of snapshots (added once, deleted once; a manifest is carried from
list to list until merged away, an index manifest from snapshot to snapshot until an
index changes, see ``cleanup/index_files``), so a file of the removed tag that
anything else still uses is also used by one of the tag's two neighbours: the nearest
older tag, and the nearer of the next tag and the earliest snapshot. Exactly the tag's
files that neither neighbour uses are deleted.

A long-lived changelog of the tag's snapshot (a changelog that outlives its snapshot)
keeps the changelog manifest list and the manifests in it.

Order: the tag file goes first, then data files, then manifests, index files, the
tag's manifest lists and its index manifest. A crash at any point leaves files no
snapshot or tag references, for orphan cleanup; never a reference to a missing file.
When a neighbour's metadata (or the tag's own) cannot be read, nothing is deleted.
"""

from __future__ import annotations

import logging

from shoal.cleanup.index_files import index_file_paths, index_names
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries, read_manifest_metas
from shoal.core.store import FileStore
from shoal.errors import (
    CorruptMetadataError,
    SnapshotNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from shoal.format.snapshot import Snapshot
from shoal.format.tag import Tag, validate_tag_name
from shoal.io import LocalFileIO, io_map

logger = logging.getLogger(__name__)


def delete_tag(store: FileStore, name: str) -> Tag:
    """Remove tag ``name`` (and what only it kept alive); returns it.

    Raises TagNotFoundError.
    """
    tags = store.tags
    for attempt in range(3):
        tag, snapshot = tags.get(name)
        others = [(t, s) for t, s in tags.tags() if t.name != name]
        sole_holder = not store.snapshots.exists(snapshot.id) and all(
            t.snapshot_id != snapshot.id for t, _ in others
        )
        # Everything is read before anything is deleted: unreadable metadata deletes
        # nothing. A neighbour that expires (or whose tag goes) while it is read is
        # replaced by the next one: read them again.
        try:
            doomed = (
                _unreferenced(store, snapshot, _neighbours(store, snapshot, others))
                if sole_holder
                else ([], _restored_changelog(store, snapshot, others))
            )
            break
        except (CorruptMetadataError, SnapshotNotFoundError):
            if attempt == 2:
                raise
    if not store.file_io.delete(store.paths.tag_path(name)):
        raise TagNotFoundError(name)  # removed concurrently
    data_files, metadata_files = doomed
    file_io = store.file_io
    io_map(file_io.delete, data_files, concurrent=file_io.concurrent_deletes)
    io_map(file_io.delete, metadata_files, concurrent=file_io.concurrent_deletes)
    if sole_holder:
        logger.info(
            "tag %s of expired snapshot %d: deleted %d data files and %d metadata files",
            name,
            snapshot.id,
            len(data_files),
            len(metadata_files),
        )
    return tag


def _restored_changelog(
    store: FileStore, snapshot: Snapshot, others: list[tuple[Tag, Snapshot]]
) -> list[str]:
    """The changelog manifests of a tag whose snapshot a rollback restored without
    them (its changelog files had expired): no snapshot names them, and once no tag
    does either they go with the tag."""
    name = snapshot.changelog_manifest_list
    if not name or any(s.changelog_manifest_list == name for _, s in others):
        return []
    if _kept_as_changelog(store, snapshot):
        return []
    restored = store.snapshots.find(snapshot.id)
    if restored is None or restored.changelog_manifest_list == name:
        return []
    metas = store.manifests.read_list(name)
    paths = store.paths
    return [*(paths.manifest_path(m.file_name) for m in metas), paths.manifest_path(name)]


def _kept_as_changelog(store: FileStore, snapshot: Snapshot) -> bool:
    """Whether a long-lived changelog of the tagged snapshot names its changelog list
    (read afresh: changelog expiration may have removed it)."""
    kept = store.changelogs.find(snapshot.id)
    return kept is not None and kept.changelog_manifest_list == snapshot.changelog_manifest_list


def _neighbours(
    store: FileStore, snapshot: Snapshot, others: list[tuple[Tag, Snapshot]]
) -> list[Snapshot]:
    older = [s for t, s in others if t.snapshot_id < snapshot.id]
    newer = [s for t, s in others if t.snapshot_id > snapshot.id]
    earliest = store.snapshots.earliest_id()
    if earliest is not None and earliest > snapshot.id:
        newer.append(store.snapshots.snapshot(earliest))
    out = []
    if older:
        out.append(max(older, key=lambda s: s.id))
    if newer:
        out.append(min(newer, key=lambda s: s.id))
    return out


def _unreferenced(
    store: FileStore, snapshot: Snapshot, keep: list[Snapshot]
) -> tuple[list[str], list[str]]:
    """Paths of the data files, then of the manifests, index files, manifest lists and
    index manifest, of ``snapshot`` that none of ``keep`` uses."""
    kept_files = {e.identifier() for neighbour in keep for e in live_entries(store, neighbour)}
    kept_manifests = {
        m.file_name for neighbour in keep for m in read_manifest_metas(store, neighbour)
    }
    kept_index = {n for neighbour in keep for n in index_names(store, neighbour, strict=True).all()}
    index = index_names(store, snapshot, strict=True)
    codec, paths = store.partitions, store.paths
    data: list[str] = []
    for entry in live_entries(store, snapshot):
        if entry.identifier() in kept_files:
            continue
        bucket_dir = paths.bucket_dir(codec.path(entry.partition), entry.bucket)
        f = entry.file
        data.append(data_file_path(bucket_dir, f))
        data.extend(f"{bucket_dir}/{x}" for x in f.extra_files)
    manifests = [
        m.file_name
        for m in read_manifest_metas(store, snapshot)
        if m.file_name not in kept_manifests
    ]
    lists = [snapshot.base_manifest_list, snapshot.delta_manifest_list]
    if snapshot.changelog_manifest_list and not _kept_as_changelog(store, snapshot):
        # The tagged snapshot's own changelog list (no other snapshot names it); its
        # changelog files went when the snapshot expired, as Paimon expires them
        # (unless the snapshot's changelog outlives it, which then keeps them).
        changelog = store.manifests.read_list(snapshot.changelog_manifest_list)
        manifests += [m.file_name for m in changelog if m.file_name not in kept_manifests]
        lists.append(snapshot.changelog_manifest_list)
    if index.manifest and index.manifest not in kept_index:
        lists.append(index.manifest)
    index_files = index_file_paths(store, set(index.files) - kept_index)
    return data, [
        *(paths.manifest_path(n) for n in manifests),
        *index_files,
        *(paths.manifest_path(n) for n in lists),
    ]


def rename_tag(store: FileStore, old: str, new: str) -> Tag:
    """Give tag ``old`` the name ``new``. Raises TagNotFoundError, or
    TagAlreadyExistsError when ``new`` is taken.

    On the local disk the tag file is renamed, one step: a crash leaves the tag under
    one of its names, never both or neither (as Paimon renames it); a tag created
    under ``new`` by someone else between the check and the rename is replaced, as
    the filesystem has no rename that refuses an existing target. Object stores have
    no rename: the new name is created atomically (refusing a taken name), then the
    old one goes; a crash in between leaves both names on the one snapshot, and
    deleting the old one finishes the rename."""
    tags = store.tags
    tag, _ = tags.get(old)
    validate_tag_name(new)
    file_io = store.file_io
    old_path, new_path = store.paths.tag_path(old), store.paths.tag_path(new)
    if isinstance(file_io, LocalFileIO):
        if tags.exists(new):
            raise TagAlreadyExistsError(new)
        try:
            file_io.rename(old_path, new_path)
        except FileNotFoundError:
            raise TagNotFoundError(old) from None  # renamed or deleted concurrently
    else:
        if not file_io.try_create(new_path, file_io.read_bytes(old_path)):
            raise TagAlreadyExistsError(new)
        file_io.delete(old_path)
    return Tag(new, tag.snapshot_id, tag.create_time, tag.time_retained)
