"""Removing tags.

A tag whose snapshot still exists holds nothing that the snapshot does not: removing
it removes the tag file only. Tags of snapshots that have already expired keep data
files alive on their own; their files are left in place here, never deleted on a
guess (orphan cleanup reclaims whatever no snapshot or tag reaches any more).
"""

from __future__ import annotations

from shoal.errors import TagAlreadyExistsError, TagNotFoundError
from shoal.spec.tag import Tag, validate_tag_name
from shoal.table.store import FileStore
from shoal.table.tag_manager import TagManager


def delete_tag(store: FileStore, name: str) -> Tag:
    """Remove tag ``name``; returns it. Raises TagNotFoundError."""
    tags = TagManager(store.file_io, store.paths)
    tag, _ = tags.get(name)
    if not store.file_io.delete(store.paths.tag_path(name)):
        raise TagNotFoundError(name)  # removed concurrently
    return tag


def rename_tag(store: FileStore, old: str, new: str) -> Tag:
    """Give tag ``old`` the name ``new``: the same file content under the new name,
    created atomically (TagAlreadyExistsError if taken), then ``old`` goes."""
    tags = TagManager(store.file_io, store.paths)
    tag, _ = tags.get(old)
    validate_tag_name(new)
    data = store.file_io.read_bytes(store.paths.tag_path(old))
    if not store.file_io.try_create(store.paths.tag_path(new), data):
        raise TagAlreadyExistsError(new)
    delete_tag(store, old)
    return Tag(new, tag.snapshot_id, tag.create_time, tag.time_retained)
