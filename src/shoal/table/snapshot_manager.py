"""Snapshot files and the EARLIEST/LATEST hints.

Hints are only hints: ``LATEST`` is trusted when no snapshot follows it, and
``EARLIEST`` when its snapshot exists and none precedes it; otherwise the directory
is listed, as Paimon's readers do. Snapshot files are immutable, so parsed snapshots are
cached for the life of the manager.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

from shoal.errors import CorruptMetadataError, SnapshotNotFoundError
from shoal.io import FileIO
from shoal.spec.snapshot import Snapshot
from shoal.table.paths import SNAPSHOT_PREFIX, PathFactory

logger = logging.getLogger(__name__)

EARLIEST = "EARLIEST"
LATEST = "LATEST"


class SnapshotManager:
    def __init__(self, file_io: FileIO, paths: PathFactory) -> None:
        self.file_io = file_io
        self.paths = paths
        self._cache: dict[int, Snapshot] = {}
        self._lock = threading.Lock()

    # --- ids ---------------------------------------------------------------------------------
    def list_ids(self) -> list[int]:
        """Ids of the snapshot files there are, sorted."""
        ids = []
        for status in self.file_io.list_status(self.paths.snapshot_dir):
            name = status.path.rsplit("/", 1)[-1]
            if name.startswith(SNAPSHOT_PREFIX) and name[len(SNAPSHOT_PREFIX) :].isdigit():
                ids.append(int(name[len(SNAPSHOT_PREFIX) :]))
        return sorted(ids)

    def hint(self, name: str) -> int | None:
        """The snapshot id a hint file holds, if it is there and well formed."""
        try:
            text = self.file_io.read_bytes(f"{self.paths.snapshot_dir}/{name}").strip()
        except FileNotFoundError:
            return None
        return int(text) if text.isdigit() else None

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

    def exists(self, snapshot_id: int) -> bool:
        return snapshot_id in self._cache or self.file_io.exists(
            self.paths.snapshot_path(snapshot_id)
        )

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
        snapshot = Snapshot.from_json(data, path)
        if snapshot.id != snapshot_id:
            raise CorruptMetadataError(path, f"holds snapshot id {snapshot.id}")
        with self._lock:
            self._cache[snapshot_id] = snapshot
        return snapshot

    def latest(self) -> Snapshot | None:
        latest_id = self.latest_id()
        return None if latest_id is None else self.snapshot(latest_id)

    def snapshots(self) -> Iterator[Snapshot]:
        """Every snapshot there is, oldest first (skipping any that expire meanwhile)."""
        for snapshot_id in self.list_ids():
            try:
                yield self.snapshot(snapshot_id)
            except SnapshotNotFoundError:
                continue

    def earlier_or_equal_time_millis(self, time_millis: int) -> Snapshot | None:
        """The latest snapshot committed at or before ``time_millis`` (bisection)."""
        earliest, latest = self.earliest_id(), self.latest_id()
        if earliest is None or latest is None:
            return None
        if self.snapshot(earliest).time_millis > time_millis:
            return None
        low, high = earliest, latest
        while low < high:
            middle = (low + high + 1) // 2
            if self.snapshot(middle).time_millis <= time_millis:
                low = middle
            else:
                high = middle - 1
        return self.snapshot(low)

    # --- publishing --------------------------------------------------------------------------
    def try_publish(self, snapshot: Snapshot) -> bool:
        """Make ``snapshot`` visible by atomically creating its file; False if the id
        is taken. Then move the LATEST hint (and EARLIEST for the first snapshot)."""
        data = snapshot.to_json().encode()
        if not self.file_io.try_create(self.paths.snapshot_path(snapshot.id), data):
            return False
        with self._lock:
            self._cache[snapshot.id] = snapshot
        self.write_hint(LATEST, snapshot.id)
        if snapshot.id == 1:
            self.write_hint(EARLIEST, 1)
        return True

    def write_hint(self, name: str, snapshot_id: int) -> None:
        """Best effort: a hint that fails to update only costs readers a listing."""
        try:
            self.file_io.write_bytes(f"{self.paths.snapshot_dir}/{name}", str(snapshot_id).encode())
        except OSError as exc:
            logger.warning("could not update the %s hint: %s", name, exc)

    def forget(self, snapshot_id: int) -> None:
        with self._lock:
            self._cache.pop(snapshot_id, None)
