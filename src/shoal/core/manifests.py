"""Reading and writing manifest files and manifest lists.

Manifest files never change once written, so decoded ones are cached (bounded by
entry count): planning the next snapshot re-reads only manifests it has not seen.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any

from shoal.core.paths import PathFactory
from shoal.errors import CorruptMetadataError
from shoal.format import binary_row
from shoal.format import manifest as M
from shoal.format import types as T
from shoal.format.avro.strings import StringFinder
from shoal.format.index_manifest import IndexManifestEntry, decode_index_manifest
from shoal.format.manifest import ManifestEntry, ManifestFileMeta
from shoal.format.stats import SimpleStats
from shoal.io import FileIO, parallel_map

_CACHE_MAX_ENTRIES = 2_000_000
_INDEX_CACHE_MAX = 64  # index manifests kept decoded, the last read


class _EntryCache:
    """LRU of decoded manifests, bounded by their total number of entries. A key is a
    manifest's name, or its name and the partitions a filtered read kept."""

    def __init__(self, max_entries: int) -> None:
        self._max = max_entries
        self._size = 0
        self._items: OrderedDict[Hashable, list[ManifestEntry]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> list[ManifestEntry] | None:
        with self._lock:
            entries = self._items.get(key)
            if entries is not None:
                self._items.move_to_end(key)
            return entries

    def put(self, key: Hashable, entries: list[ManifestEntry]) -> None:
        with self._lock:
            if key in self._items or len(entries) > self._max:
                return
            self._items[key] = entries
            self._size += _weight(entries)
            while self._size > self._max:
                _, dropped = self._items.popitem(last=False)
                self._size -= _weight(dropped)


def _weight(entries: list[ManifestEntry]) -> int:
    return max(len(entries), 1)  # an empty result takes room too


Partitions = frozenset[bytes] | Callable[[bytes], bool] | None
"""The partitions a read keeps: a set of BinaryRow bytes, a predicate on them, or all."""


def _accepting(partitions: frozenset[bytes] | Callable[[bytes], bool]) -> Callable[[bytes], bool]:
    return partitions.__contains__ if isinstance(partitions, frozenset) else partitions


class ManifestStore:
    """Manifest I/O for one table: decoding with errors that name the file, and
    writing with rolling at the target size and partition statistics."""

    def __init__(
        self,
        file_io: FileIO,
        paths: PathFactory,
        partition_types: Sequence[T.DataType],
        decode_partition: Callable[[bytes], tuple[Any, ...]],
        *,
        compression: str = "zstd",
        target_size: int = 8 << 20,
    ) -> None:
        self.file_io = file_io
        self.paths = paths
        self.partition_types = list(partition_types)
        self._decode_partition = decode_partition
        self.compression = compression
        self.target_size = target_size
        self._entries = _EntryCache(_CACHE_MAX_ENTRIES)
        self._lists: dict[str, list[ManifestFileMeta]] = {}
        self._index: dict[str, list[IndexManifestEntry]] = {}

    # --- reading -----------------------------------------------------------------------------
    def read_bytes(self, name: str) -> bytes:
        """A manifest file's bytes. Raises CorruptMetadataError naming a missing one."""
        path = self.paths.manifest_path(name)
        try:
            return self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise CorruptMetadataError(path, "the file is missing") from None
        except IsADirectoryError:
            raise CorruptMetadataError(path, "a directory stands in its place") from None

    def read_list(self, name: str) -> list[ManifestFileMeta]:
        cached = self._lists.get(name)
        if cached is not None:
            return cached
        metas = M.decode_manifest_list(self.read_bytes(name), self.paths.manifest_path(name))
        self._lists[name] = metas
        return metas

    def read_index_manifest(self, name: str) -> list[IndexManifestEntry]:
        """The entries of an index manifest (cached: it never changes). Raises
        CorruptMetadataError naming the file."""
        cached = self._index.get(name)
        if cached is None:
            path = self.paths.manifest_path(name)
            cached = decode_index_manifest(self.read_bytes(name), path)
            if len(self._index) >= _INDEX_CACHE_MAX:
                del self._index[next(iter(self._index))]
            self._index[name] = cached
        return cached

    def read_manifest(self, name: str, partitions: Partitions = None) -> list[ManifestEntry]:
        """The manifest's entries; with ``partitions``, those of the partitions it
        names or accepts only (building only them, unless the whole manifest is cached
        already; a set's result is cached, a predicate's is not)."""
        cached = self._entries.get(name)
        if cached is not None:
            if partitions is None:
                return cached
            keep = _accepting(partitions)
            return [e for e in cached if keep(e.partition)]
        key = (name, partitions) if isinstance(partitions, frozenset) else name
        if partitions is not None and (some := self._entries.get(key)) is not None:
            return some
        path = self.paths.manifest_path(name)
        entries = M.decode_manifest(
            self.read_bytes(name), path, None if partitions is None else _accepting(partitions)
        )
        self._check_partitions(entries, path)
        if partitions is None or isinstance(partitions, frozenset):
            self._entries.put(key, entries)
        return entries

    def _check_partitions(self, entries: list[ManifestEntry], path: str) -> None:
        self.check_partitions({e.partition for e in entries}, path)

    def check_partitions(self, partitions: Iterable[bytes], path: str) -> None:
        """Every read decodes the entries' partitions (paths, filters): one that cannot
        be read is reported here, naming the manifest. Few per manifest, each decoded once."""
        arity = len(self.partition_types)
        for partition in partitions:
            try:
                self._decode_partition(partition)
                problem = None if binary_row.arity_of(partition) == arity else "of another arity"
            except ValueError as exc:
                problem = str(exc)
            if problem is not None:
                raise CorruptMetadataError(path, f"a partition value cannot be read ({problem})")

    def list_file_names(self, name: str, reader: M.ListNameReader | None = None) -> list[str]:
        """The manifests a manifest list names (decoding only the names when the list
        is not cached; with ``reader``, only the records it has not met before)."""
        cached = self._lists.get(name)
        if cached is not None:
            return [m.file_name for m in cached]
        return self._decode_names(
            name, M.manifest_list_file_names if reader is None else reader.names
        )

    def manifest_file_names(self, name: str) -> list[str]:
        """The data and extra files a manifest's entries name, ADD and DELETE alike."""
        cached = self._entries.get(name)
        if cached is not None:
            return list(_file_names(cached))
        return self._decode_names(name, M.manifest_file_names)

    def manifest_names_among(self, name: str, finder: StringFinder) -> set[str]:
        """The names of ``finder``'s set that a manifest's entries name, ADD and DELETE
        alike (found by :func:`shoal.format.manifest.manifest_names_among` when the
        manifest is not cached)."""
        cached = self._entries.get(name)
        if cached is not None:
            return finder.among(_file_names(cached))
        return M.manifest_names_among(self.read_bytes(name), finder, self.paths.manifest_path(name))

    def _decode_names(self, name: str, decode: Callable[[bytes, str], list[str]]) -> list[str]:
        return decode(self.read_bytes(name), self.paths.manifest_path(name))

    def read_manifests(
        self, metas: Sequence[ManifestFileMeta], partitions: Partitions = None
    ) -> list[list[ManifestEntry]]:
        """Entries of several manifests (of ``partitions`` only, when given), in the
        order given (read in parallel where the filesystem gains from it)."""
        if not self.file_io.concurrent_reads:
            return [self.read_manifest(m.file_name, partitions) for m in metas]
        return parallel_map(lambda m: self.read_manifest(m.file_name, partitions), metas)

    # --- writing -----------------------------------------------------------------------------
    def write_manifests(self, entries: Sequence[ManifestEntry]) -> list[ManifestFileMeta]:
        """Write ``entries`` into manifest files, rolling to a new file once one reaches
        the target size (so every file but the last is at least that big)."""
        if not entries:
            return []
        parts = self._roll(entries)
        if len(parts) == 1:
            return [self._write_one(*parts[0])]
        return parallel_map(lambda part: self._write_one(*part), parts)

    def _encode(self, entries: Sequence[ManifestEntry]) -> bytes:
        return M.encode_manifest(entries, self.compression)

    def _roll(
        self, entries: Sequence[ManifestEntry]
    ) -> list[tuple[Sequence[ManifestEntry], bytes]]:
        """``entries`` cut into runs that each encode to at least the target size (but the
        last), with their bytes. A file below the target counts as small to the merge, so
        files cut smaller (two halves of a manifest just over the target) would be merged
        and cut again by every commit: the whole table's manifests rewritten each time."""
        data = self._encode(entries)
        if len(data) <= self.target_size or len(entries) == 1:
            return [(entries, data)]
        per_entry = len(data) / len(entries)
        parts: list[tuple[Sequence[ManifestEntry], bytes]] = []
        start = 0
        while start < len(entries):
            # a little over the target, so that one encoding is usually enough
            end = start + max(1, math.ceil(self.target_size * 1.02 / per_entry))
            while True:
                chunk = entries[start:end]
                encoded = self._encode(chunk)
                if end >= len(entries) or len(encoded) >= self.target_size:
                    break
                end += max(1, math.ceil((self.target_size - len(encoded)) / per_entry))
            parts.append((chunk, encoded))
            start = end
        return parts

    def _write_one(self, entries: Sequence[ManifestEntry], data: bytes) -> ManifestFileMeta:
        name = self.paths.new_manifest_name()
        self.file_io.write_bytes(self.paths.manifest_path(name), data)
        meta = self._describe(name, len(data), entries)
        self._entries.put(name, list(entries))
        return meta

    def _describe(self, name: str, size: int, entries: Sequence[ManifestEntry]) -> ManifestFileMeta:
        added = sum(1 for e in entries if e.kind == M.KIND_ADD)
        buckets = [e.bucket for e in entries]
        levels = [e.file.level for e in entries]
        schema_id = max(e.file.schema_id for e in entries)
        return ManifestFileMeta(
            file_name=name,
            file_size=size,
            num_added_files=added,
            num_deleted_files=len(entries) - added,
            partition_stats=self.partition_stats(e.partition for e in entries),
            schema_id=schema_id,
            min_bucket=min(buckets),
            max_bucket=max(buckets),
            min_level=min(levels),
            max_level=max(levels),
        )

    def partition_stats(self, partitions: Iterable[bytes]) -> SimpleStats:
        """Min, max and null count of each partition field over ``partitions``."""
        arity = len(self.partition_types)
        mins: list[Any] = [None] * arity
        maxs: list[Any] = [None] * arity
        nulls = [0] * arity
        for data, count in Counter(partitions).items():
            for i, value in enumerate(self._decode_partition(data)):
                if value is None:
                    nulls[i] += count
                    continue
                if mins[i] is None or value < mins[i]:
                    mins[i] = value
                if maxs[i] is None or value > maxs[i]:
                    maxs[i] = value
        return SimpleStats.of(mins, maxs, nulls, self.partition_types)

    def write_list(self, metas: Sequence[ManifestFileMeta]) -> tuple[str, int]:
        """Write a manifest list; returns its name and size."""
        name = self.paths.new_manifest_list_name()
        data = M.encode_manifest_list(metas, self.compression)
        self.file_io.write_bytes(self.paths.manifest_path(name), data)
        self._lists[name] = list(metas)
        return name, len(data)

    def delete_uncommitted(self, names: Iterable[str]) -> None:
        """Remove manifests this writer wrote for a commit attempt that lost its race.

        Only files created by the failed attempt itself are passed here: no snapshot
        can reference them, so deleting them is the writer cleaning up after itself.
        """
        for name in names:
            self.file_io.delete(self.paths.manifest_path(name))


def _file_names(entries: Iterable[ManifestEntry]) -> Iterator[str]:
    """The data file and extra file names of ``entries``."""
    for entry in entries:
        yield entry.file.file_name
        yield from entry.file.extra_files
