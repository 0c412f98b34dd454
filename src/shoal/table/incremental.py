"""Incremental reads: what changed between two points of a table's history.

Between two snapshot ids ``(start, end]`` (a *delta*): the files that APPEND commits
in that range added, as Paimon's delta scan reads them (compactions rewrite rows
that are already there, and overwrites are not additions). Between two tags (a
*diff*): the files live at the end tag that were not live at the start tag.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shoal.errors import InvalidArgumentError
from shoal.spec import manifest as M
from shoal.spec.manifest import ManifestEntry
from shoal.spec.snapshot import Snapshot
from shoal.table.scan import live_entries

if TYPE_CHECKING:
    from shoal.table.store import FileStore


def delta_entries(store: FileStore, start: int, end: int) -> list[ManifestEntry]:
    """ADD entries of the APPEND snapshots after ``start`` up to ``end``.

    Raises SnapshotNotFoundError when a snapshot of the range has expired.
    """
    if end < start:
        raise InvalidArgumentError(f"incremental range ({start}, {end}] runs backwards")
    entries: list[ManifestEntry] = []
    for snapshot_id in range(start + 1, end + 1):
        snapshot = store.snapshots.snapshot(snapshot_id)
        if snapshot.commit_kind != "APPEND":
            continue
        metas = store.manifests.read_list(snapshot.delta_manifest_list)
        for part in store.manifests.read_manifests(metas):
            entries.extend(e for e in part if e.kind == M.KIND_ADD)
    return entries


def diff_entries(store: FileStore, start: Snapshot, end: Snapshot) -> list[ManifestEntry]:
    """Entries live in ``end`` and not in ``start``."""
    before = {e.identifier() for e in live_entries(store, start)}
    return [e for e in live_entries(store, end) if e.identifier() not in before]
