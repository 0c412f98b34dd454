"""Rolling a table back to a snapshot or a tag.

Snapshots after the target go oldest first and the newest last: the latest snapshot
is the newest snapshot file, so until that last delete a reader sees the table as it
was, and after it as rolled back; never one of the snapshots in between. Then the
long-lived changelogs after the target go (a rollback to a tag of an expired snapshot
reaches below the earliest snapshot), newest first, and the changelog ``LATEST`` hint
moves (to ``-1`` when none is left, as Paimon writes it). Then the tags
of the dropped snapshots go (a crash before leaves them, still readable, and running
the rollback again removes them), then the hints move. A tag whose snapshot has
expired brings it back first: the tag file holds the whole snapshot. Data files,
manifests, index manifests and index files are never deleted here; once nothing
reaches them, orphan cleanup removes them. Run it while no writer commits to the table.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from shoal.core.snapshot_manager import EARLIEST, LATEST
from shoal.core.store import FileStore
from shoal.errors import InvalidArgumentError, SnapshotNotFoundError
from shoal.format.snapshot import Snapshot

logger = logging.getLogger(__name__)


def rollback(
    store: FileStore, *, snapshot_id: int | None = None, tag: str | None = None
) -> Snapshot:
    """Make the snapshot (or the tagged snapshot) the latest again; returns it."""
    if (snapshot_id is None) == (tag is None):
        raise InvalidArgumentError("rollback_to takes exactly one of snapshot_id and tag")
    snapshots = store.snapshots
    tags = store.tags
    if tag is not None:
        target = tags.get(tag)[1]
        if not snapshots.exists(target.id):
            # The tagged snapshot expired: the tag file restores it, without its
            # changelog, whose files expired with the snapshot (a streaming reader
            # would fail on them).
            restored = replace(
                target,
                changelog_manifest_list=None,
                changelog_manifest_list_size=None,
                changelog_record_count=None,
            )
            store.file_io.try_create(
                store.paths.snapshot_path(target.id), restored.to_json().encode()
            )
    else:
        assert snapshot_id is not None
        target = snapshots.snapshot(snapshot_id)
    latest = snapshots.latest_id()
    if latest is None:
        raise SnapshotNotFoundError("the table has no snapshot")
    for later in range(target.id + 1, latest + 1):  # the newest last: the switch
        store.file_io.delete(store.paths.snapshot_path(later))
        snapshots.forget(later)
    changelogs = store.changelogs
    later_changelogs = [i for i in changelogs.list_ids() if i > target.id]
    for later in reversed(later_changelogs):
        changelogs.delete(later)
    if later_changelogs:
        left = changelogs.list_ids()
        changelogs.write_hint(LATEST, left[-1] if left else -1)
    for later_tag, _ in tags.tags():
        if later_tag.snapshot_id > target.id:
            store.file_io.delete(store.paths.tag_path(later_tag.name))
    snapshots.write_hint(LATEST, target.id)
    # The old hint may name a snapshot just deleted, whose id the next commit reuses.
    snapshots.write_hint(EARLIEST, min(target.id, *snapshots.list_ids()))
    logger.info("rolled back from snapshot %s to %s", latest, target.id)
    return target
