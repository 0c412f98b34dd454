"""Reading splits of append tables into Arrow.

All files of a plan are read as one ``pyarrow.dataset`` with the table's schema
given up front (no per-file schema inference), so reading is Arrow's own parallel
Parquet scan; the row filter is pushed into it and applied exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.dataset as ds

from shoal.core import predicate as P
from shoal.core.kv import INSERT, UPDATE_AFTER, VALUE_KIND
from shoal.core.plan import DataSplit
from shoal.core.store import FileStore
from shoal.errors import CorruptDataFileError
from shoal.format import parquet
from shoal.io import FileIO
from shoal.primary_key.levels import run_paths, sorted_runs
from shoal.primary_key.merge import BucketMerger

_FORMAT = ds.ParquetFileFormat()


def _dataset(file_io: FileIO, splits: Sequence[DataSplit], schema: pa.Schema) -> ds.Dataset:
    paths = [p for split in splits for p in split.file_paths]
    # Times and timestamps in their stored units: a timestamp column stored as INT64
    # without annotation (beside INT96 ones) reads in the unit its precision implies.
    stored = parquet.read_schema(schema)
    return ds.dataset(paths, schema=stored, format=_FORMAT, filesystem=file_io.fs)


def _row_filter(
    schema: pa.Schema, dnf: P.Dnf | None, key_value: bool
) -> tuple[pa.Schema, ds.Expression | None]:
    """The dataset schema and row filter of a read. Key-value files (a primary-key
    table read without merging) may hold delete rows, which are not rows of the view."""
    expression = P.to_expression(dnf) if dnf is not None else None
    if not key_value:
        return schema, expression
    live = ds.field(VALUE_KIND).isin([INSERT, UPDATE_AFTER])
    schema = schema.append(pa.field(VALUE_KIND, pa.int8()))
    return schema, live if expression is None else expression & live


def read_table(
    file_io: FileIO,
    splits: Sequence[DataSplit],
    schema: pa.Schema,
    columns: Sequence[str] | None,
    dnf: P.Dnf | None,
    *,
    key_value: bool = False,
) -> pa.Table:
    """Every matching row of ``splits`` as one table with ``columns`` of ``schema``
    (``key_value``: the files are a primary-key table's, read without merging)."""
    projected = _project(schema, columns)
    if not splits:
        return projected.empty_table()
    dataset_schema, row_filter = _row_filter(schema, dnf, key_value)
    with _data_errors():
        table = _dataset(file_io, splits, dataset_schema).to_table(
            columns=list(projected.names), filter=row_filter
        )
    return _exact(table, projected)


def read_batches(
    file_io: FileIO,
    splits: Sequence[DataSplit],
    schema: pa.Schema,
    columns: Sequence[str] | None,
    dnf: P.Dnf | None,
    *,
    batch_size: int = 131_072,
    key_value: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Matching rows as a stream of batches; memory stays bounded by Arrow's read-ahead."""
    projected = _project(schema, columns)
    if not splits:
        return
    dataset_schema, row_filter = _row_filter(schema, dnf, key_value)
    with _data_errors():
        scanner = _dataset(file_io, splits, dataset_schema).scanner(
            columns=list(projected.names), filter=row_filter, batch_size=batch_size
        )
        for batch in scanner.to_batches():
            if batch.num_rows:
                yield _exact_batch(batch, projected)


@contextmanager
def _data_errors() -> Iterator[None]:
    """Missing or unreadable data files as a typed error naming the file."""
    try:
        yield
    except FileNotFoundError as exc:
        raise CorruptDataFileError(str(exc)) from None
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptDataFileError(str(exc)) from None


def _project(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    if columns is None:
        return schema
    return pa.schema([schema.field(c) for c in columns])


def _exact(table: pa.Table, schema: pa.Schema) -> pa.Table:
    if table.schema.equals(schema):
        return table
    return table.cast(schema)


def _exact_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if batch.schema.equals(schema):
        return batch
    return batch.cast(schema)


def merged_batches(
    store: FileStore,
    splits: Sequence[DataSplit],
    columns: Sequence[str] | None,
    dnf: P.Dnf | None,
) -> Iterator[pa.Table]:
    """Rows of a primary-key table's splits, merged per bucket (the real-time view).

    The filter applies after merging: a value filter applied before could let an
    older version of a row show through a newer one that fails it.
    """
    wanted = list(columns) if columns is not None else list(store.arrow_schema.names)
    needed = wanted + sorted(P.columns_of(dnf) - set(wanted))
    schema = _project(store.arrow_schema, wanted)
    merger = BucketMerger(store.file_io, store.layout, store.merge_settings, columns=needed)
    expression = P.to_expression(dnf) if dnf is not None else None
    for split in splits:
        paths = run_paths(sorted_runs(split.files, store.decode_key), split.bucket_path)
        for table in merger.merge(paths):
            if expression is not None:
                table = table.filter(expression)
            if table.num_rows:
                yield _exact(table.select(wanted), schema)


def read_merged(
    store: FileStore,
    splits: Sequence[DataSplit],
    columns: Sequence[str] | None,
    dnf: P.Dnf | None,
) -> pa.Table:
    # Buckets merge one after another: Arrow already decodes and sorts on all cores, and
    # merging several buckets at once only multiplies the memory.
    schema = _project(store.arrow_schema, columns)
    tables = list(merged_batches(store, splits, columns, dnf))
    return pa.concat_tables(tables) if tables else schema.empty_table()
