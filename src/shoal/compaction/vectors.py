"""Deletion vectors through the compaction of one bucket, as Paimon's lookup
compaction keeps them.

A batch read of a primary-key table with ``deletion-vectors.enabled`` takes the files
above level 0 as they are, less the rows their vectors mark (``core/deletion_vectors``).
A compaction keeps that true:

- it reads its inputs without the rows their vectors mark, and drops those vectors
  with the inputs;
- when level-0 files go up to level L > 0, each of their keys that no input above
  level 0 holds is looked up in the levels above L, lowest level first, and the live
  row found there is marked deleted: the merged row at level L replaces it. With a
  ``sequence.field`` the row found joins the merge, which may keep its values;
- delete rows are dropped at every output level above 0, since the rows they delete
  are marked.

Each key then has at most one unmarked row above level 0. The bucket's vectors, when
they changed, go into one new index file that replaces the bucket's old one; the
commit checks that the bucket's vectors are still those the compaction read and that
every file they mark is still live (``write/commit``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal import options as O
from shoal.core import kv
from shoal.core.deletion_vectors import DeletionFile, VectorLoader
from shoal.core.kv import KeyValueLayout
from shoal.core.paths import data_file_path
from shoal.core.store import FileStore
from shoal.errors import CorruptDataFileError
from shoal.format import data_formats
from shoal.format import deletion_vector as DV
from shoal.format.data_file import DataFileMeta
from shoal.format.evolution import convert
from shoal.format.index_manifest import DELETION_VECTORS_INDEX, DeletionVectorMeta, IndexFileMeta
from shoal.io import parallel_map

Vectors = dict[str, np.ndarray]
"""Data file name → the sorted positions (int64) of its deleted rows."""

_POSITION = "_LOOKUP_POSITION"
_ROW = "_LOOKUP_ROW"


@dataclass(frozen=True, slots=True)
class BucketVectors:
    """What the compaction of one bucket of a table with deletion vectors needs besides
    its inputs (picklable): the bucket's deletion-vector index files in the snapshot
    it was planned on, which its new vectors build on, and the bucket's live files
    above the output level, where level-0 keys are looked up."""

    index_files: tuple[IndexFileMeta, ...]
    upper_files: tuple[DataFileMeta, ...]


def load(store: FileStore, index_files: Sequence[IndexFileMeta]) -> Vectors:
    """Every vector of the given index files (one bucket's)."""
    loader = VectorLoader(store.file_io)
    out: Vectors = {}
    for f in index_files:
        path = store.paths.index_path(f.file_name)
        for r in f.dv_ranges or ():
            where = DeletionFile(path, r.offset, r.length, r.cardinality)
            out[r.data_file_name] = np.sort(loader.positions(where).astype(np.int64))
    return out


def merged(
    base: Mapping[str, np.ndarray],
    rewritten: Sequence[DataFileMeta],
    found: Mapping[str, np.ndarray],
) -> Vectors | None:
    """The bucket's vectors after a compaction: ``base`` without the ``rewritten``
    files' vectors, with the positions ``found`` added; None when nothing changed."""
    gone = {f.file_name for f in rewritten}
    if not (gone & base.keys()) and not any(len(p) for p in found.values()):
        return None
    out = {name: positions for name, positions in base.items() if name not in gone}
    for name, positions in found.items():
        if len(positions):
            old = out.get(name)
            out[name] = positions if old is None else _union(old, positions)
    return out


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted distinct values of two sorted arrays (a radix sort of int64)."""
    both: np.ndarray = np.sort(np.concatenate([a, b]), kind="stable")
    distinct: np.ndarray = both[np.concatenate([[True], both[1:] != both[:-1]])]
    return distinct


def write_index_file(store: FileStore, vectors: Mapping[str, np.ndarray]) -> IndexFileMeta | None:
    """One deletion-vector index file of ``vectors`` in ``index/`` (None for none)."""
    if not vectors:
        return None
    bitmap64 = store.options.get(O.DELETION_VECTORS_BITMAP64)
    data, ranges = DV.encode_file(dict(sorted(vectors.items())), bitmap64=bitmap64)
    name = f"index-{uuid.uuid4()}-0"
    store.file_io.write_bytes(store.paths.index_path(name), data)
    metas = tuple(DeletionVectorMeta(*r) for r in ranges)
    return IndexFileMeta(DELETION_VECTORS_INDEX, name, len(data), len(metas), metas)


_KEY_BATCH_ROWS = 1 << 20


def _columns(layout: KeyValueLayout, columns: list[str]) -> pa.Schema:
    schema = layout.file_schema
    return pa.schema([schema.field(c) for c in columns])


class KeyReader:
    """Reads the primary keys of one bucket's files, with their row positions and
    without the rows their vectors mark, in the table's key columns and types."""

    def __init__(
        self, store: FileStore, bucket_dir: str, vectors: Mapping[str, np.ndarray]
    ) -> None:
        self.store = store
        self.bucket_dir = bucket_dir
        self.vectors = vectors
        self.layout = store.layout

    def read(self, f: DataFileMeta, *, kinds: bool = False) -> pa.Table:
        target = self.layout
        written = target
        if f.schema_id != target.schema.id:
            written = KeyValueLayout(self.store.schema_of(f.schema_id))
        columns = [*written.key_columns, *([kv.VALUE_KIND] if kinds else [])]
        path = data_file_path(self.bucket_dir, f)
        fmt = data_formats.format_of(path)
        if fmt is None:
            raise CorruptDataFileError(f"{path}: not a data file of a format shoal reads")
        try:
            with self.store.file_io.open_input_file(path) as source:
                batches = fmt.read(source, written.file_schema, columns, _KEY_BATCH_ROWS)
                table = pa.Table.from_batches(list(batches), schema=_columns(written, columns))
        except FileNotFoundError as exc:
            raise CorruptDataFileError(str(exc)) from None
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptDataFileError(f"{path}: {exc}") from None
        arrays: list[pa.ChunkedArray] = [
            convert(table.column(c), written.schema.field(old).type, target.schema.field(new).type)
            for c, old, new in zip(
                written.key_columns, written.key_names, target.key_names, strict=True
            )
        ]
        names = list(target.key_columns)
        if kinds:
            arrays.append(table.column(kv.VALUE_KIND))
            names.append(kv.VALUE_KIND)
        arrays.append(pa.chunked_array([np.arange(table.num_rows, dtype=np.int64)]))
        names.append(_POSITION)
        out = pa.Table.from_arrays(arrays, names=names)
        deleted = self.vectors.get(f.file_name)
        if deleted is not None and len(deleted):
            keep = np.ones(table.num_rows, dtype=bool)
            keep[deleted] = False
            out = out.filter(pa.array(keep))
        return out

    def keys(self, files: Sequence[DataFileMeta], *, live_only: bool = False) -> pa.Table:
        """The distinct keys of ``files`` (with ``live_only``, of their rows that are
        no retraction)."""
        key_columns = list(self.layout.key_columns)
        tables = parallel_map(lambda f: self.read(f, kinds=live_only), files)
        if live_only:
            tables = [t.filter(pc.invert(kv.is_retract(t.column(kv.VALUE_KIND)))) for t in tables]
        if not tables:
            return pa.table({c: pa.array([], t) for c, t in _key_types(self.layout)})
        keys = pa.concat_tables([t.select(key_columns) for t in tables])
        return keys.group_by(key_columns, use_threads=False).aggregate([])


def _key_types(layout: KeyValueLayout) -> list[tuple[str, pa.DataType]]:
    schema = layout.file_schema
    return [(c, schema.field(c).type) for c in layout.key_columns]


def look_up(
    reader: KeyReader,
    keys: pa.Table,
    upper: Sequence[DataFileMeta],
) -> Vectors:
    """Where the live rows of ``keys`` lie in the ``upper`` files: each key in the
    lowest level that holds it (with vectors applied, a key has one live row above
    level 0)."""
    key_columns = list(reader.layout.key_columns)
    remaining = keys.append_column(_ROW, pa.array(np.arange(keys.num_rows, dtype=np.int64)))
    found: dict[str, list[np.ndarray]] = {}
    levels = sorted({f.level for f in upper})
    for level in levels:
        if not remaining.num_rows:
            break
        low, high = _key_range(remaining, key_columns)
        files = [f for f in upper if f.level == level and _overlaps(reader.store, f, low, high)]
        hit_rows: list[np.ndarray] = []
        for f, table in zip(files, parallel_map(reader.read, files), strict=True):
            # the keys looked up are few: the hash table is built on them (the right side)
            joined = table.join(remaining, keys=key_columns, join_type="inner", use_threads=False)
            if joined.num_rows:
                found.setdefault(f.file_name, []).append(joined.column(_POSITION).to_numpy())
                hit_rows.append(joined.column(_ROW).to_numpy())
        if hit_rows:
            hit = pa.array(np.concatenate(hit_rows))
            remaining = remaining.filter(pc.invert(pc.is_in(remaining.column(_ROW), hit)))
    return {name: np.sort(np.concatenate(parts)) for name, parts in found.items()}


def _key_range(
    keys: pa.Table, key_columns: list[str]
) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """The smallest and the largest of ``keys``."""
    order = pc.sort_indices(keys, sort_keys=[(c, "ascending") for c in key_columns])
    first, last = order[0].as_py(), order[-1].as_py()
    return (
        tuple(keys.column(c)[first].as_py() for c in key_columns),
        tuple(keys.column(c)[last].as_py() for c in key_columns),
    )


def _overlaps(
    store: FileStore, f: DataFileMeta, low: tuple[object, ...], high: tuple[object, ...]
) -> bool:
    """Whether the file's key range meets ``[low, high]`` (files of older schemas, whose
    key bytes may hold other types, are always read)."""
    if f.schema_id != store.schema.id:
        return True
    try:
        after = store.decode_key(f.min_key) > high
        return not (after or store.decode_key(f.max_key) < low)
    except TypeError:  # keys that do not compare as tuples: read the file
        return True
