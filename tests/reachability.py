"""What a table's snapshots and tags reach, and what lies in its directories: the two
sides of every cleanup invariant."""

from __future__ import annotations

import os

import pyarrow as pa

import shoal
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries, read_manifest_metas
from shoal.core.store import FileStore
from shoal.core.tag_manager import TagManager
from shoal.format.index_manifest import decode_index_manifest
from shoal.format.snapshot import Snapshot

# Directories whose files cleanup never removes, and the hint files.
_METADATA_DIRS = ("schema", "tag", "snapshot", "changelog", "consumer")


def roots(table: shoal.Table) -> list[Snapshot]:
    """Every snapshot and every tag's snapshot."""
    store = table._store
    tagged = [s for _, s in TagManager(store.file_io, store.paths).tags()]
    return list(store.snapshots.snapshots()) + tagged


def index_files_of(store: FileStore, snapshot: Snapshot) -> set[str]:
    """Paths of the snapshot's index manifest and of every index file it names (hash
    indexes, deletion vectors), read here without cleanup's code."""
    if not snapshot.index_manifest:
        return set()
    path = store.paths.manifest_path(snapshot.index_manifest)
    with open(path, "rb") as f:
        entries = decode_index_manifest(f.read(), path)
    return {path} | {store.paths.index_path(e.index_file.file_name) for e in entries}


def reachable(table: shoal.Table) -> set[str]:
    """Paths of the data files, extra files, manifests, manifest lists, index
    manifests and index files that a reader of some snapshot or tag needs."""
    store = table._store
    out: set[str] = set()
    for snapshot in roots(table):
        out.update(index_files_of(store, snapshot))
        for entry in live_entries(store, snapshot):
            partition = store.partitions.path(entry.partition)
            bucket_dir = store.paths.bucket_dir(partition, entry.bucket)
            out.add(data_file_path(bucket_dir, entry.file))
            out.update(f"{bucket_dir}/{x}" for x in entry.file.extra_files)
        metas = read_manifest_metas(store, snapshot)
        out.update(store.paths.manifest_path(m.file_name) for m in metas)
        out.add(store.paths.manifest_path(snapshot.base_manifest_list))
        out.add(store.paths.manifest_path(snapshot.delta_manifest_list))
        out.update(changelog_files_of(store, snapshot))
    for changelog in store.changelogs.changelogs():
        out.update(changelog_files_of(store, changelog))
    return out


def changelog_files_of(store: FileStore, snapshot: Snapshot) -> set[str]:
    """Paths of the snapshot's changelog manifest list, its manifests and the changelog
    files they add. A tag's changelog files go when its snapshot expires (as Paimon
    expires them; its manifests stay with the tag), so only a snapshot still there
    reaches them, or a long-lived changelog of it (a changelog that outlives its
    snapshot)."""
    name = snapshot.changelog_manifest_list
    if not name:
        return set()
    out = {store.paths.manifest_path(name)}
    metas = store.manifests.read_list(name)
    out.update(store.paths.manifest_path(m.file_name) for m in metas)
    holders = (store.snapshots.find(snapshot.id), store.changelogs.find(snapshot.id))
    if all(h is None or h.changelog_manifest_list != name for h in holders):
        return out  # expired (or restored from its tag without its changelog)
    for part in store.manifests.read_manifests(metas):
        for entry in part:
            partition = store.partitions.path(entry.partition)
            out.add(data_file_path(store.paths.bucket_dir(partition, entry.bucket), entry.file))
    return out


def stored(table: shoal.Table) -> set[str]:
    """Every file under the table but the snapshot, schema, tag and consumer files and hints."""
    root = table.path
    out = set()
    for directory, _, files in os.walk(root):
        relative = os.path.relpath(directory, root)
        if relative.split(os.sep)[0] in _METADATA_DIRS:
            continue
        out.update(os.path.join(directory, f) for f in files)
    return out


def changelog_rows(table: shoal.Table) -> dict[int, list[dict[str, object]]]:
    """The changelog of every long-lived changelog, by id: its rows with their kinds."""
    out = {}
    for changelog_id in table._store.changelogs.list_ids():
        rows = table.incremental(
            changelog_id - 1, changelog_id, scan_mode="changelog", row_kind=True
        )
        out[changelog_id] = _sorted(rows)
    return out


def rows_of_every_root(table: shoal.Table) -> dict[str, list[dict[str, object]]]:
    """The sorted rows of every snapshot (``"s<id>"``) and tag (``"t:<name>"``)."""
    out = {}
    for snapshot in table.snapshots():
        out[f"s{snapshot.id}"] = _sorted(table.to_arrow(snapshot_id=snapshot.id))
    for tag in table.list_tags():
        out[f"t:{tag.name}"] = _sorted(table.to_arrow(tag=tag.name))
    return out


def _sorted(rows: pa.Table) -> list[dict[str, object]]:
    return rows.sort_by([(n, "ascending") for n in rows.column_names]).to_pylist()
