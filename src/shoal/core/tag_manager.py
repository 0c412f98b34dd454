"""Tags: reading, listing and creating ``tag/tag-<name>`` files.

Creation is an atomic create-if-absent, so of two writers creating one name exactly
one wins; replacing rewrites the file atomically. Removing a tag is maintenance (it
may free data files), in ``shoal.cleanup.tags``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from shoal.core.paths import TAG_PREFIX, PathFactory
from shoal.errors import (
    CorruptMetadataError,
    InvalidTagNameError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from shoal.format.snapshot import Snapshot
from shoal.format.tag import Tag, check_tag_path, decode_tag, encode_tag, validate_tag_name
from shoal.io import FileIO


class TagManager:
    def __init__(self, file_io: FileIO, paths: PathFactory) -> None:
        self.file_io = file_io
        self.paths = paths

    def names(self) -> list[str]:
        """Names of the tag files there are; other files in the folder are not tags."""
        out = []
        for status in self.file_io.list_status(self.paths.tag_dir):
            name = status.path.rsplit("/", 1)[-1]
            if name.startswith(TAG_PREFIX) and not status.is_dir:
                try:
                    check_tag_path(name[len(TAG_PREFIX) :])
                except InvalidTagNameError:
                    continue  # such as ``tag-`` or ``tag- ``: no tag can have that file
                out.append(name[len(TAG_PREFIX) :])
        return sorted(out)

    def exists(self, name: str) -> bool:
        return self.file_io.exists(self.paths.tag_path(name))

    def get(self, name: str) -> tuple[Tag, Snapshot]:
        """The tag and the snapshot it holds. Raises TagNotFoundError."""
        check_tag_path(name)
        path = self.paths.tag_path(name)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise TagNotFoundError(name) from None
        except IsADirectoryError:
            raise CorruptMetadataError(
                path, "a directory stands where the tag file should be"
            ) from None
        return decode_tag(name, data, path)

    def tags(self) -> list[tuple[Tag, Snapshot]]:
        """Every tag, ordered by snapshot id then name (skipping any removed meanwhile)."""
        found = []
        for name in self.names():
            try:
                found.append(self.get(name))
            except TagNotFoundError:
                continue
        return sorted(found, key=lambda pair: (pair[0].snapshot_id, pair[0].name))

    def create(
        self,
        name: str,
        snapshot: Snapshot,
        *,
        time_retained: timedelta | None = None,
        replace: bool = False,
        automatic: bool = False,
    ) -> Tag:
        """Write the tag file. Raises TagAlreadyExistsError unless ``replace``.

        ``automatic`` tags may have all-digit names (see ``validate_tag_name``)."""
        if automatic:
            check_tag_path(name)
        else:
            validate_tag_name(name)
        created = datetime.now() if time_retained is not None else None
        data = encode_tag(snapshot, created, time_retained).encode()
        path = self.paths.tag_path(name)
        if replace:
            self.file_io.overwrite(path, data)
        elif not self.file_io.try_create(path, data):
            raise TagAlreadyExistsError(name)
        return Tag(name, snapshot.id, created, time_retained)
