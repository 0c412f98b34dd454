"""The hash index of a dynamic-bucket table as one write sees and changes it.

A write loads, per partition it writes, the ``HASH`` index files that the snapshot it
is planned on names (or, for a partition an overwrite replaces, none: the new files
start the index afresh, as Paimon's overwrite does), assigns every row's key a bucket
(``write/dynamic_bucket``), and writes one new index file per bucket that got new
keys, holding all of its hashes. The changes it hands to the commit replace each such
bucket's previous file (DELETE, ADD); ``base`` names the files it read, so the commit
can refuse to publish over an index that a concurrent writer changed meanwhile.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from shoal.core.store import FileStore
from shoal.format import hash_index
from shoal.format.index_manifest import HASH_INDEX, IndexFileMeta, IndexManifestEntry
from shoal.format.manifest import KIND_ADD, KIND_DELETE
from shoal.format.snapshot import Snapshot
from shoal.io import parallel_map
from shoal.write.bucket import key_hashes
from shoal.write.dynamic_bucket import AssignSettings, PartitionIndex

INDEX_FILE_PREFIX = "index-"


def hash_entries(store: FileStore, snapshot: Snapshot | None) -> list[IndexManifestEntry]:
    """The ``HASH`` entries of ``snapshot``'s index manifest."""
    if snapshot is None or snapshot.index_manifest is None:
        return []
    entries = store.manifests.read_index_manifest(snapshot.index_manifest)
    return [e for e in entries if e.index_file.index_type == HASH_INDEX]


def read_hashes(store: FileStore, entry: IndexManifestEntry) -> np.ndarray:
    """The hashes of one hash index file. Raises CorruptMetadataError."""
    path = store.paths.index_path(entry.index_file.file_name)
    return hash_index.decode_hashes(
        store.file_io.read_bytes(path), path, entry.index_file.row_count
    )


class BucketIndex:
    """One write's view of the hash index of ``snapshot``; ``fresh`` accepts the
    partitions an overwrite replaces."""

    def __init__(
        self,
        store: FileStore,
        snapshot: Snapshot | None,
        fresh: Callable[[bytes], bool] | None = None,
    ) -> None:
        self.store = store
        self.settings = AssignSettings.of(store.schema.options)
        self._fresh = fresh
        self._by_partition: dict[bytes, list[IndexManifestEntry]] = {}
        for e in hash_entries(store, snapshot):
            self._by_partition.setdefault(e.partition, []).append(e)
        self._partitions: dict[bytes, PartitionIndex] = {}
        self._contents: dict[str, np.ndarray] = {}
        self._prefix = f"{INDEX_FILE_PREFIX}{uuid.uuid4()}-"
        self._counter = 0

    def _partition(self, partition: bytes) -> PartitionIndex:
        index = self._partitions.get(partition)
        if index is not None:
            return index
        files = [] if self._replaced(partition) else self._by_partition.get(partition, [])
        contents = parallel_map(lambda e: read_hashes(self.store, e), files)
        self._contents.update(
            (e.index_file.file_name, h) for e, h in zip(files, contents, strict=True)
        )
        hashes = np.concatenate([np.zeros(0, np.int32), *contents])
        buckets = np.concatenate(
            [np.zeros(0, np.int32)]
            + [np.full(len(h), e.bucket, np.int32) for e, h in zip(files, contents, strict=True)]
        )
        label = self.store.partitions.path(partition) or "(the table)"
        index = PartitionIndex(partition, self.settings, hashes, buckets, label)
        self._partitions[partition] = index
        return index

    def _replaced(self, partition: bytes) -> bool:
        return self._fresh is not None and self._fresh(partition)

    def assign(self, partition: bytes, rows: pa.Table) -> np.ndarray:
        """The bucket of every row of ``rows`` (all of ``partition``), in order."""
        hashes = key_hashes(rows, self.store.bucket_keys, self.store.bucket_key_types)
        return self._partition(partition).assign(hashes)

    def base(self) -> dict[bytes, frozenset[str]]:
        """The hash index files each partition this write assigned in had when it was
        planned (an overwritten partition: those it replaces)."""
        return {
            p: frozenset(e.index_file.file_name for e in self._by_partition.get(p, []))
            for p in self._partitions
        }

    def write_changes(self) -> list[IndexManifestEntry]:
        """Write a new index file for every bucket that got new keys (its old hashes
        and the new ones) and return the entries replacing the old files."""
        jobs: list[tuple[str, bytes, int, np.ndarray, IndexManifestEntry | None]] = []
        for partition, index in self._partitions.items():
            old = (
                {}
                if self._replaced(partition)
                else {e.bucket: e for e in self._by_partition.get(partition, [])}
            )
            for bucket, parts in index.added.items():
                name = f"{self._prefix}{self._counter}"
                self._counter += 1
                jobs.append((name, partition, bucket, np.concatenate(parts), old.get(bucket)))
        written = parallel_map(self._write_one, jobs)
        return [e for pair in written for e in pair]

    def _write_one(
        self, job: tuple[str, bytes, int, np.ndarray, IndexManifestEntry | None]
    ) -> list[IndexManifestEntry]:
        name, partition, bucket, added, old = job
        previous = None if old is None else self._contents[old.index_file.file_name]
        hashes = added if previous is None else np.concatenate([previous, added])
        data = hash_index.encode_hashes(hashes)
        self.store.file_io.write_bytes(self.store.paths.index_path(name), data)
        meta = IndexFileMeta(HASH_INDEX, name, len(data), len(hashes))
        out = [IndexManifestEntry(KIND_ADD, partition, bucket, meta)]
        if old is not None:
            out.insert(0, old.with_kind(KIND_DELETE))
        return out
