"""Snapshot files and the EARLIEST/LATEST hints.

Hints are only hints: ``LATEST`` is trusted when no snapshot follows it, and
``EARLIEST`` when its snapshot exists and none precedes it; otherwise the directory
is listed, as Paimon's readers do. Snapshot files are immutable, so parsed snapshots are
cached for the life of the manager.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence

from shoal.core.paths import SNAPSHOT_PREFIX, PathFactory, id_of
from shoal.errors import CorruptMetadataError, SnapshotNotFoundError
from shoal.format.snapshot import Snapshot
from shoal.io import FileIO

logger = logging.getLogger(__name__)

EARLIEST = "EARLIEST"
LATEST = "LATEST"


class HintedFiles(ABC):
    """Files named ``<prefix><id>`` in one directory, read by id, with the directory's
    ``EARLIEST`` and ``LATEST`` hints (snapshots, long-lived changelogs)."""

    file_io: FileIO
    prefix: str

    @property
    @abstractmethod
    def directory(self) -> str:
        """The directory of the files and hints."""

    @abstractmethod
    def exists(self, file_id: int) -> bool:
        """Whether the file of ``file_id`` is there."""

    def list_ids(self) -> list[int]:
        """Ids of the files there are, sorted."""
        ids = []
        for status in self.file_io.list_status(self.directory):
            file_id = id_of(status.path.rsplit("/", 1)[-1], self.prefix)
            if file_id is not None and not status.is_dir:
                ids.append(file_id)
        return sorted(ids)

    def hint(self, name: str) -> int | None:
        """The id a hint file holds, if it is there and well formed."""
        try:
            text = self.file_io.read_bytes(f"{self.directory}/{name}").strip()
        except FileNotFoundError:
            return None
        return int(text) if text.isdigit() and len(text) <= 18 else None

    def write_hint(self, name: str, file_id: int) -> None:
        """Best effort: a hint that fails to update only costs readers a listing."""
        try:
            self.file_io.write_bytes(f"{self.directory}/{name}", str(file_id).encode())
        except OSError as exc:
            logger.warning("could not update the %s hint in %s: %s", name, self.directory, exc)

    def latest_id(self) -> int | None:
        hint = self.hint(LATEST)
        if hint is not None and self.exists(hint) and not self.exists(hint + 1):
            return hint
        ids = self.list_ids()
        return ids[-1] if ids else None

    def earliest_id(self) -> int | None:
        hint = self.hint(EARLIEST)
        if hint is not None and self.exists(hint) and not self.exists(hint - 1):
            return hint
        ids = self.list_ids()
        return ids[0] if ids else None


class SnapshotManager(HintedFiles):
    prefix = SNAPSHOT_PREFIX

    def __init__(self, file_io: FileIO, paths: PathFactory) -> None:
        self.file_io = file_io
        self.paths = paths
        self._cache: dict[int, Snapshot] = {}
        self._lock = threading.Lock()

    @property
    def directory(self) -> str:
        return self.paths.snapshot_dir

    def exists(self, snapshot_id: int) -> bool:
        return snapshot_id in self._cache or self.file_io.exists(
            self.paths.snapshot_path(snapshot_id)
        )

    def gone(self, snapshot_id: int) -> bool:
        """Whether the snapshot's file is no longer there (it expired, or a rollback
        removed it), asked of the filesystem rather than the cache. A reader that finds
        a file of a snapshot missing tells expiration from damage by this."""
        if self.file_io.exists(self.paths.snapshot_path(snapshot_id)):
            return False
        self.forget(snapshot_id)
        return True

    def superseded(self, snapshot_id: int) -> bool:
        """Whether a newer snapshot exists (or this one is gone): expiration may be
        deleting its files. Only such a snapshot can miss a file without the table
        being damaged; work planned on it plans again on the latest."""
        return self.exists(snapshot_id + 1) or self.gone(snapshot_id)

    def wait_until_gone(self, snapshot_id: int, timeout: float = 2.0) -> bool:
        """Whether the snapshot's file goes within ``timeout`` seconds. Expiration deletes
        a snapshot's files before the snapshot file: a missing file of a superseded
        snapshot that is still there is expiration at work, or damage."""
        deadline = time.monotonic() + timeout
        while not self.gone(snapshot_id):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    # --- snapshots ---------------------------------------------------------------------------
    def snapshot(self, snapshot_id: int) -> Snapshot:
        """The snapshot of that id. Raises SnapshotNotFoundError if it is not there."""
        cached = self._cache.get(snapshot_id)
        if cached is not None:
            return cached
        path = self.paths.snapshot_path(snapshot_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise SnapshotNotFoundError(
                f"snapshot {snapshot_id} does not exist (it may have expired); "
                "snapshots() lists the ones there are",
                snapshot_id=snapshot_id,
            ) from None
        except IsADirectoryError:
            raise CorruptMetadataError(path, "a directory stands in its place") from None
        snapshot = Snapshot.from_json(data, path)
        if snapshot.id != snapshot_id:
            raise CorruptMetadataError(path, f"holds snapshot id {snapshot.id}")
        with self._lock:
            self._cache[snapshot_id] = snapshot
        return snapshot

    def latest(self) -> Snapshot | None:
        """The latest snapshot. One that expires (or is rolled back) between finding
        its id and reading it is looked up again: there is a newer one."""
        for attempt in range(3):
            latest_id = self.latest_id()
            if latest_id is None:
                return None
            try:
                return self.snapshot(latest_id)
            except SnapshotNotFoundError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def find(self, snapshot_id: int) -> Snapshot | None:
        """Snapshot ``snapshot_id``, or None when there is none (expired, rolled back or
        never made). Raises CorruptMetadataError for a file that cannot be read."""
        try:
            return self.snapshot(snapshot_id)
        except SnapshotNotFoundError:
            return None

    def snapshots(self) -> Iterator[Snapshot]:
        """Every snapshot there is, oldest first (skipping any that expire meanwhile).
        Raises CorruptMetadataError at the first snapshot file that cannot be read."""
        for snapshot_id in self.list_ids():
            found = self.find(snapshot_id)
            if found is not None:
                yield found

    def survey(self) -> tuple[list[Snapshot], dict[int, CorruptMetadataError]]:
        """Every snapshot there is, oldest first, and apart from them the ones whose file
        cannot be read, by id with the error reading it raises.

        A damaged snapshot file spoils only its own snapshot: the others stay readable,
        and a listing that shows them (with the damaged ids) is what a user needs to
        pick the snapshot to roll back to. Snapshots that expire meanwhile are skipped."""
        readable: list[Snapshot] = []
        damaged: dict[int, CorruptMetadataError] = {}
        for snapshot_id in self.list_ids():
            try:
                found = self.find(snapshot_id)
            except CorruptMetadataError as exc:
                damaged[snapshot_id] = exc
                continue
            if found is not None:
                readable.append(found)
        return readable, damaged

    def earlier_or_equal_time_millis(self, time_millis: int) -> Snapshot | None:
        """The latest snapshot committed at or before ``time_millis`` (bisection over
        the ids from the hints; over the listed ids when one of those is missing: it
        expired meanwhile, or an interrupted rollback left a gap)."""
        earliest, latest = self.earliest_id(), self.latest_id()
        if earliest is None or latest is None:
            return None
        try:
            return self._bisect(range(earliest, latest + 1), time_millis)
        except SnapshotNotFoundError:
            return self._bisect(self.list_ids(), time_millis)

    def _bisect(self, ids: Sequence[int], time_millis: int) -> Snapshot | None:
        if not ids or self.snapshot(ids[0]).time_millis > time_millis:
            return None
        low, high = 0, len(ids) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.snapshot(ids[middle]).time_millis <= time_millis:
                low = middle
            else:
                high = middle - 1
        return self.snapshot(ids[low])

    # --- publishing --------------------------------------------------------------------------
    def try_publish(self, snapshot: Snapshot) -> bool:
        """Make ``snapshot`` visible by atomically creating its file; False if the id
        is taken. Then move the LATEST hint (and EARLIEST for the first snapshot).

        A snapshot follows the one before it (its id is that one's plus one). An id is
        also "taken" when expiration has freed it: a commit planned on a snapshot that
        was superseded and then expired (the attempt took longer than
        ``snapshot.time-retained``) would otherwise re-create an expired id beneath
        newer snapshots, and its rows would be in no later snapshot. Expiration deletes
        snapshot files oldest first, so such an id's predecessor is gone before the id
        is free: checked before the create, and again after it (an expiration may run
        in between), when the file just created is removed again."""
        previous = snapshot.id - 1
        if previous >= 1 and self.gone(previous):
            return False
        if previous == 0 and self.list_ids():
            return False  # a first snapshot, yet snapshots exist (or existed and expired)
        path = self.paths.snapshot_path(snapshot.id)
        if not self.file_io.try_create(path, snapshot.to_json().encode()):
            return False
        if previous >= 1 and self.gone(previous):
            # An expiration removed the predecessor and this id's former snapshot
            # between the check and the create: newer snapshots exist, so no commit
            # builds on this one, and it goes again.
            self.file_io.delete(path)
            return False
        with self._lock:
            self._cache[snapshot.id] = snapshot
        self.write_hint(LATEST, snapshot.id)
        if snapshot.id == 1:
            self.write_hint(EARLIEST, 1)
        return True

    def forget(self, snapshot_id: int) -> None:
        with self._lock:
            self._cache.pop(snapshot_id, None)
