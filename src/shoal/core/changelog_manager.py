"""Long-lived changelogs: ``changelog/changelog-<id>`` and that directory's hints.

When a table keeps its changelog longer than its snapshots (Paimon's decoupled
changelog lifecycle: a ``changelog.*`` retention above its ``snapshot.*``
counterpart), snapshot expiration keeps an expired snapshot's JSON as
``changelog/changelog-<id>``, and the changelog manifest list and files it names stay
until changelog expiration removes them. The directory has its own ``EARLIEST`` and
``LATEST`` hints, read by the rules of the snapshot hints: a hint is trusted when its
file exists and none follows (precedes) it, otherwise the directory is listed.

A changelog file is written by create-if-absent and never rewritten: one that is
there already (an expiration stopped after writing it) holds the same snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from shoal.core.paths import CHANGELOG_FILE_PREFIX, PathFactory
from shoal.core.snapshot_manager import LATEST, HintedFiles
from shoal.errors import CorruptMetadataError, SnapshotNotFoundError
from shoal.format.snapshot import Snapshot
from shoal.io import FileIO

logger = logging.getLogger(__name__)


class ChangelogManager(HintedFiles):
    """The long-lived changelogs of one table (or branch)."""

    prefix = CHANGELOG_FILE_PREFIX

    def __init__(self, file_io: FileIO, paths: PathFactory) -> None:
        self.file_io = file_io
        self.paths = paths
        self._cache: dict[int, Snapshot] = {}

    @property
    def directory(self) -> str:
        return self.paths.changelog_dir

    def exists(self, changelog_id: int) -> bool:
        return changelog_id in self._cache or self.file_io.exists(
            self.paths.changelog_path(changelog_id)
        )

    # --- changelogs --------------------------------------------------------------------------
    def changelog(self, changelog_id: int) -> Snapshot:
        """The long-lived changelog of snapshot ``changelog_id`` (the snapshot's JSON).
        Raises SnapshotNotFoundError when there is none."""
        cached = self._cache.get(changelog_id)
        if cached is not None:
            return cached
        path = self.paths.changelog_path(changelog_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise SnapshotNotFoundError(
                f"snapshot {changelog_id} has expired and no long-lived changelog of it is "
                "kept (changelog.num-retained.*, changelog.time-retained)",
                snapshot_id=changelog_id,
            ) from None
        changelog = Snapshot.from_json(data, path)
        if changelog.id != changelog_id:
            raise CorruptMetadataError(path, f"holds snapshot id {changelog.id}")
        self._cache[changelog_id] = changelog
        return changelog

    def find(self, changelog_id: int) -> Snapshot | None:
        try:
            return self.changelog(changelog_id)
        except SnapshotNotFoundError:
            return None

    def changelogs(self) -> Iterator[Snapshot]:
        """Every long-lived changelog there is, oldest first (skipping any that expire
        meanwhile)."""
        for changelog_id in self.list_ids():
            found = self.find(changelog_id)
            if found is not None:
                yield found

    def keep(self, snapshot: Snapshot) -> None:
        """Keep ``snapshot`` as a long-lived changelog and move the ``LATEST`` hint. A
        changelog file already there (a run stopped after writing it) is left as it is."""
        path = self.paths.changelog_path(snapshot.id)
        if not self.file_io.try_create(path, snapshot.to_json().encode()):
            logger.info("changelog %d is kept already", snapshot.id)
        self.write_hint(LATEST, snapshot.id)

    def delete(self, changelog_id: int) -> None:
        self.file_io.delete(self.paths.changelog_path(changelog_id))
        self._cache.pop(changelog_id, None)
