"""Planning a scan of a large table from manifest columns: the same splits as
:func:`shoal.core.plan.make_splits` over :func:`shoal.core.plan.live_entries`, in the
same order, without a Python object per file.

The manifests are decoded into columns (:mod:`shoal.format.manifest_columns`); the
files are chosen, merged, checked, ordered and packed into splits with array
operations; and each split decodes its files' whole entries only when a reader asks
for them (:class:`LazyFiles`). The entries that need the merge rule's closer look (a
DELETE, a name met twice, extra files, an embedded index, an external path, some
columns only) are decoded and merged as objects, as the ordinary planning does: in a
table's base manifests they are few.

A manifest's records are decoded whole only there and when a split's files are read,
so a record whose other fields are damaged is reported (CorruptMetadataError naming
the manifest) when its split is read, not when it is planned.

The ordinary planning stays the reference and does everything this leaves to it: a
table of fewer entries than :data:`shoal.core.plan.COLUMNAR_MIN_ENTRIES`, a filter on
data columns (file statistics), and manifests the columns do not read (another codec
or schema, damage: the ordinary reading says what is wrong).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from shoal import options as O
from shoal.core import plan as PL
from shoal.core import predicate as P
from shoal.core.deletion_vectors import DeletionFile
from shoal.errors import CorruptMetadataError
from shoal.format import collector, kernels
from shoal.format import manifest as M
from shoal.format import manifest_columns as C
from shoal.format.data_file import DataFileMeta
from shoal.format.manifest import ManifestFileMeta
from shoal.format.schema import TableSchema
from shoal.format.snapshot import Snapshot
from shoal.io import bounded_map

if TYPE_CHECKING:
    from shoal.core.store import FileStore


@dataclass(frozen=True, slots=True, eq=False)
class _Files:
    """The live files of a plan, in split order: each one's manifest and entry there."""

    parts: Sequence[C.Records]
    part: np.ndarray  # per file: the index of its manifest in ``parts``
    row: np.ndarray  # per file: its entry's number in that manifest

    def entries(self, lo: int, hi: int) -> tuple[DataFileMeta, ...]:
        parts = self.parts
        return tuple(
            parts[p].entry(r).file
            for p, r in zip(self.part[lo:hi].tolist(), self.row[lo:hi].tolist(), strict=True)
        )


class LazyFiles(Sequence[DataFileMeta]):
    """The files of one split, each decoded from its manifest record when first asked
    for. Pickles as a plain tuple of files."""

    __slots__ = ("_decoded", "_files", "_hi", "_lo")

    def __init__(self, files: _Files, lo: int, hi: int) -> None:
        self._files = files
        self._lo = lo
        self._hi = hi
        self._decoded: tuple[DataFileMeta, ...] | None = None

    def _all(self) -> tuple[DataFileMeta, ...]:
        if self._decoded is None:
            self._decoded = self._files.entries(self._lo, self._hi)
        return self._decoded

    def __len__(self) -> int:
        return self._hi - self._lo

    @overload
    def __getitem__(self, index: int) -> DataFileMeta: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[DataFileMeta, ...]: ...
    def __getitem__(self, index: int | slice) -> DataFileMeta | tuple[DataFileMeta, ...]:
        return self._all()[index]

    def __iter__(self) -> Iterator[DataFileMeta]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LazyFiles, tuple)):
            return self._all() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __add__(self, other: Sequence[DataFileMeta]) -> tuple[DataFileMeta, ...]:
        return self._all() + tuple(other)

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (self._all(),))

    def __repr__(self) -> str:
        return f"LazyFiles({len(self)} files)"


def plan(
    store: FileStore,
    snapshot: Snapshot,
    metas: Sequence[ManifestFileMeta],
    partition_dnf: P.Dnf | None,
    *,
    schema: TableSchema,
    whole_buckets: bool,
    levels: PL.Levels,
    deletions: Mapping[str, DeletionFile],
) -> list[PL.DataSplit] | None:
    """The splits of a read of ``snapshot`` planned from the columns of ``metas`` (the
    manifests whose partition statistics allow ``partition_dnf``, a filter on partition
    columns only), keeping the files whose level is within ``levels``; None when this
    planning leaves the read to the ordinary one (see the module's docstring)."""

    keep = None if partition_dnf is None else PL.partition_pruner(store, partition_dnf, None)

    def decode(meta: ManifestFileMeta) -> C.ManifestColumns | None:
        data = store.manifests.read_bytes(meta.file_name)
        return C.decode_columns(data, store.paths.manifest_path(meta.file_name), keep)

    if not metas:
        return []
    # a manifest per core at once: the compiled decoding leaves the interpreter, and
    # each holds its decompressed blocks meanwhile
    decoded = bounded_map(decode, metas, os.cpu_count() or 1)
    parts = [p for p in decoded if p is not None]
    if len(parts) != len(decoded):
        return None
    with collector.paused():
        planner = _Planner(store, snapshot.id, parts, schema, whole_buckets, levels, deletions)
        return planner.splits()


class _Planner:
    def __init__(  # noqa: PLR0917 - the read's settings
        self,
        store: FileStore,
        snapshot_id: int,
        parts: Sequence[C.ManifestColumns],
        schema: TableSchema,
        whole_buckets: bool,
        levels: PL.Levels,
        deletions: Mapping[str, DeletionFile],
    ) -> None:
        self.store = store
        self.snapshot_id = snapshot_id
        self.parts = parts
        self.schema = schema
        self.whole_buckets = whole_buckets
        self.levels = levels
        self.deletions = deletions
        sizes = [len(p) for p in parts]
        self.bounds = np.cumsum([0, *sizes])
        self.part = np.repeat(np.arange(len(parts), dtype=np.int32), sizes)
        self._columns: dict[Any, np.ndarray] = {}

    def column(self, field: Any) -> np.ndarray:
        """A field of every manifest's entries, one after another: a column's path, or
        the name of what the manifests computed (``name_hash``, ``partition_hash``,
        ``readable_name``). Each is joined once."""
        found = self._columns.get(field)
        if found is None:
            found = np.concatenate(
                [
                    p.column(field) if isinstance(field, tuple) else getattr(p, field)
                    for p in self.parts
                ]
            )
            self._columns[field] = found
        return found

    def splits(self) -> list[PL.DataSplit] | None:
        """The splits (the manifests hold the filter's partitions only)."""
        found = self._partitions()
        if found is None:
            return None
        partition_id, distinct = found
        live = self._merged(np.arange(len(partition_id)))
        level = self.column(C.LEVEL)[live]
        live = live[(level >= self.levels[0]) & (level <= self.levels[1])]
        self._check_readable(live)
        return self._packed(live, partition_id, distinct)

    def _partitions(self) -> tuple[np.ndarray, list[bytes]] | None:
        """Each row's partition as a number, and the distinct partitions' bytes; None
        when two partitions share a hash, or one does not decode (the ordinary reading
        names the manifest)."""
        by_hash: dict[int, bytes] = {}
        for part in self.parts:
            try:
                self.store.manifests.check_partitions(part.partitions.values(), part.path)
            except CorruptMetadataError:
                return None
            for h, value in part.partitions.items():
                if by_hash.setdefault(h, value) != value:
                    return None
        hashes = np.array(sorted(by_hash), dtype=np.uint64)
        partition_id = np.searchsorted(hashes, self.column("partition_hash"))
        return partition_id, [by_hash[h] for h in hashes.tolist()]

    def _entry(self, row: int) -> M.ManifestEntry:
        part = int(self.part[row])
        return self.parts[part].entry(row - int(self.bounds[part]))

    def _merged(self, rows: np.ndarray) -> np.ndarray:
        """The rows of ``rows`` (in order) whose files are live: Paimon's merge rule
        (``merge_entries``) applied as objects to the entries it could concern (a
        DELETE, a name whose hash is met twice, identities with more than a name), and
        every other ADD live as it is."""
        hashed = self.column("name_hash")[rows]
        order = np.argsort(hashed, kind="stable")
        same = hashed[order][1:] == hashed[order][:-1]
        twice = np.zeros(len(rows), dtype=bool)
        twice[order[1:][same]] = True
        twice[order[:-1][same]] = True
        flags = [C.EXTRA_FILES, C.EMBEDDED_INDEX, C.EXTERNAL_PATH, C.WRITE_COLS]
        flagged = (self.column(C.KIND)[rows] != M.KIND_ADD) | twice
        flagged |= _any_set([self.column(f)[rows] for f in flags])
        if not flagged.any():
            return rows
        closer = rows[flagged]
        entries = [self._entry(int(r)) for r in closer]
        row_of = {id(e): int(r) for e, r in zip(entries, closer, strict=True)}
        survivors = [row_of[id(e)] for e in M.merge_entries(entries) if e.kind == M.KIND_ADD]
        return np.sort(np.concatenate([rows[~flagged], np.array(survivors, dtype=np.int64)]))

    def _check_readable(self, live: np.ndarray) -> None:
        """``readable_file_check`` on every live file: of those named with an extension
        shoal reads, one per schema; every other one."""
        check = PL.readable_file_check(self.store, self.schema)
        plain = self.column("readable_name")[live]
        flagged = _any_set([self.column(f)[live] for f in (C.EXTERNAL_PATH, C.WRITE_COLS)])
        _, first = np.unique(self.column(C.SCHEMA_ID)[live], return_index=True)
        for row in np.concatenate([live[~plain | flagged], live[first]]).tolist():
            check(self._entry(row).file)

    def _packed(
        self, live: np.ndarray, partition_id: np.ndarray, distinct: list[bytes]
    ) -> list[PL.DataSplit]:
        """The live files grouped by partition and bucket (groups in the order of their
        first file), each group's files by sequence number and name, packed into splits
        as ``make_splits`` packs them."""
        if not len(live):
            return []
        store = self.store
        bucket = self.column(C.BUCKET)[live]
        buckets, bucket_index = np.unique(bucket, return_inverse=True)
        group = partition_id[live].astype(np.int64) * len(buckets) + bucket_index
        space = len(distinct) * len(buckets)
        keys = None
        if space > 4 * len(live) + 1024:  # numbered densely, the groups there are
            keys, group = np.unique(group, return_inverse=True)
            space = len(keys)
        sequence = self.column(C.MIN_SEQUENCE)[live]
        order, rank = kernels.order_by_group(group, space, sequence)
        live, group, sequence = live[order], group[order], sequence[order]
        group_of = rank[group]
        order = self._names_break_ties(group_of, sequence, live)
        live, group, group_of = live[order], group[order], group_of[order]
        open_cost = store.options.get(O.SPLIT_OPEN_FILE_COST)
        cost = np.maximum(self.column(C.FILE_SIZE)[live], open_cost)
        split_of = kernels.pack(
            group_of,
            cost.astype(np.int64),
            int(store.options.get(O.SPLIT_TARGET_SIZE)),
            self.whole_buckets,
        )
        deletions = self._deletion_files(live)
        with_deletions = np.array(sorted(deletions), dtype=np.int64)  # the files' places
        files = _Files(
            [p.records for p in self.parts], self.part[live], live - self.bounds[self.part[live]]
        )
        bounds = (np.flatnonzero(np.diff(split_of)) + 1).tolist()
        where: dict[int, tuple[dict[str, Any], int, str]] = {}
        out = []
        for lo, hi in pairwise([0, *bounds, len(live)]):
            key = int(group[lo])
            found = where.get(key)
            if found is None:
                place = key if keys is None else int(keys[key])
                partition = distinct[place // len(buckets)]
                b = int(buckets[place % len(buckets)])
                path = store.paths.bucket_dir(store.partitions.path(partition), b)
                found = where[key] = (store.partitions.to_dict(partition), b, path)
            values, b, path = found
            split = PL.DataSplit(
                store.uri, self.snapshot_id, values, b, path, LazyFiles(files, lo, hi)
            )
            if np.searchsorted(with_deletions, lo) < np.searchsorted(with_deletions, hi):
                found_deletions = tuple(deletions.get(i) for i in range(lo, hi))
                split = replace(split, deletion_files=found_deletions)
            out.append(split)
        return out

    def _deletion_files(self, live: np.ndarray) -> dict[int, DeletionFile]:
        """The deletion vectors of the files ``live``, by their place there: the files
        whose name's hash is one of the vectors' are decoded and looked up by name."""
        if not self.deletions or not len(live):
            return {}
        names = [name.encode() for name in self.deletions]
        data, offsets = kernels.joined(names)
        wanted = kernels.hashes(data, offsets[:-1], np.diff(offsets))
        candidates = np.flatnonzero(np.isin(self.column("name_hash")[live], wanted))
        out = {}
        for i in candidates.tolist():
            found = self.deletions.get(self._entry(int(live[i])).file.file_name)
            if found is not None:
                out[i] = found
        return out

    def _names_break_ties(
        self, group: np.ndarray, sequence: np.ndarray, live: np.ndarray
    ) -> np.ndarray:
        """The order of files sorted by group and sequence number in which the files
        of one group and one sequence number are ordered by name."""
        order = np.arange(len(live))
        same = (group[1:] == group[:-1]) & (sequence[1:] == sequence[:-1])
        if not same.any():
            return order
        run_starts = np.flatnonzero(same & ~np.concatenate([[False], same[:-1]]))
        for start in run_starts.tolist():
            end = start + 1
            while end < len(same) and same[end]:
                end += 1
            members = order[start : end + 1]
            names = [self._entry(int(live[m])).file.file_name for m in members]
            order[start : end + 1] = members[sorted(range(len(names)), key=names.__getitem__)]
        return order


def _any_set(columns: list[np.ndarray]) -> np.ndarray:
    out = np.zeros(len(columns[0]), dtype=bool)
    for column in columns:
        out |= column != 0
    return out
