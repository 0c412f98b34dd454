"""Deletion vectors of a snapshot: which data files have deleted rows, and loading
those rows' positions.

A snapshot's index manifest names its deletion-vector index files; each holds the
vectors of some data files of one bucket (``format/deletion_vector``). Planning maps
every data file to its :class:`DeletionFile` (the index file and the vector's range),
which travels in the splits; readers load the positions, each index file once per
read.

On a primary-key table with ``deletion-vectors.enabled``, Paimon's batch scan reads
only the files above level 0, each on its own with its deleted rows masked, without
merging: a write's level-0 files become visible when compaction lifts them (and marks
the rows they replace as deleted). The statistics of values then prune single files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from shoal import options as O
from shoal.errors import CorruptMetadataError, UnsupportedFeatureError
from shoal.format import deletion_vector as DV
from shoal.format.index_manifest import DELETION_VECTORS_INDEX, IndexFileMeta, IndexManifestEntry
from shoal.format.manifest import KIND_ADD
from shoal.format.snapshot import Snapshot
from shoal.io import FileIO

if TYPE_CHECKING:
    from shoal.core.store import FileStore


@dataclass(frozen=True, slots=True)
class DeletionFile:
    """Where one data file's deletion vector lies: the index file's path, the vector's
    offset and length as the index manifest gives them, and the deleted row count
    when known."""

    path: str
    offset: int
    length: int
    cardinality: int | None = None


def enabled(options: Mapping[str, str]) -> bool:
    return O.DELETION_VECTORS_ENABLED.get(options)


def merges(store: FileStore, *, read_optimized: bool) -> bool:
    """Whether a batch read merges each bucket's files by key: the real-time view of
    a primary-key table, unless the table has deletion vectors (then Paimon's batch
    scan reads the files above level 0 unmerged, masked). The one rule every reader
    of shoal follows."""
    return store.is_primary_key and not read_optimized and not enabled(store.schema.options)


def index_entries(store: FileStore, snapshot: Snapshot) -> list[IndexManifestEntry]:
    """The entries of the snapshot's index manifest (none when it names none)."""
    if not snapshot.index_manifest:
        return []
    return store.manifests.read_index_manifest(snapshot.index_manifest)


def bucket_index_files(
    store: FileStore, snapshot: Snapshot | None
) -> dict[tuple[bytes, int], tuple[IndexFileMeta, ...]]:
    """(partition, bucket) → the deletion-vector index files of that bucket in
    ``snapshot``."""
    out: dict[tuple[bytes, int], list[IndexFileMeta]] = {}
    if snapshot is None:
        return {}
    for entry in index_entries(store, snapshot):
        if entry.kind == KIND_ADD and entry.index_file.index_type == DELETION_VECTORS_INDEX:
            out.setdefault((entry.partition, entry.bucket), []).append(entry.index_file)
    return {key: tuple(files) for key, files in out.items()}


def deletion_files(store: FileStore, snapshot: Snapshot) -> dict[str, DeletionFile]:
    """Data file name → its deletion vector's place, for the data files of ``snapshot``
    that have one."""
    out: dict[str, DeletionFile] = {}
    for entry in index_entries(store, snapshot):
        f = entry.index_file
        if entry.kind != KIND_ADD or f.index_type != DELETION_VECTORS_INDEX:
            continue
        if f.external_path:
            raise UnsupportedFeatureError(
                f"table {store.uri!r} holds deletion vectors in external paths "
                f"({f.external_path}), which shoal does not read yet",
                feature="external paths",
            )
        path = store.paths.index_path(f.file_name)
        for r in f.dv_ranges or ():
            out[r.data_file_name] = DeletionFile(path, r.offset, r.length, r.cardinality)
    return out


class VectorLoader:
    """Loads deletion vectors, reading each index file once (one loader per read)."""

    def __init__(self, file_io: FileIO) -> None:
        self._file_io = file_io
        self._files: dict[str, bytes] = {}

    def positions(self, deletion: DeletionFile) -> DV.Positions:
        data = self._files.get(deletion.path)
        if data is None:
            try:
                data = self._file_io.read_bytes(deletion.path)
            except FileNotFoundError:
                raise CorruptMetadataError(deletion.path, "the file is missing") from None
            self._files[deletion.path] = data
        try:
            return DV.decode(data, deletion.offset, deletion.length)
        except DV.UnknownDeletionVectorVersion as exc:
            raise UnsupportedFeatureError(
                f"{deletion.path}: {exc}; a newer Paimon must read this table",
                feature="deletion-vector file version",
            ) from None
        except DV.DeletionVectorError as exc:
            raise CorruptMetadataError(deletion.path, str(exc)) from None

    def deleted_positions(
        self, deletion: DeletionFile, row_count: int, data_path: str
    ) -> np.ndarray:
        """The positions (int64) of the data file's deleted rows, checked against its
        ``row_count`` rows and the index manifest's count."""
        positions = self.positions(deletion)
        if len(positions) and int(positions[-1]) >= row_count:
            raise CorruptMetadataError(
                deletion.path,
                f"the deletion vector of {data_path} names row {int(positions[-1])} of {row_count}",
            )
        if deletion.cardinality is not None and deletion.cardinality != len(positions):
            raise CorruptMetadataError(
                deletion.path,
                f"the deletion vector of {data_path} holds {len(positions)} rows, its "
                f"index manifest says {deletion.cardinality}",
            )
        return positions.astype(np.int64)


def index_file_names(entries: Iterable[IndexManifestEntry]) -> set[str]:
    return {e.index_file.file_name for e in entries}
