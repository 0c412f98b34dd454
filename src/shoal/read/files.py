"""Reading splits of append tables into Arrow.

All Parquet files of a plan written under the schema read (or one with the same
columns) are read as one ``pyarrow.dataset`` with that schema given up front (no
per-file schema inference), so reading is Arrow's own parallel Parquet scan; ORC and
Avro files go through their codecs (``format/data_formats``) into a scan of the same
shape. The row filter is pushed into it and applied exactly. Files written under
another schema are read, one dataset per schema, with their own columns and mapped
onto the schema read by field id (``format/evolution``); the filter's terms on
columns they hold unchanged are pushed into their scan, and the whole filter applies
after the mapping.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import Future, wait
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from shoal.core import predicate as P
from shoal.core.deletion_vectors import DeletionFile, VectorLoader
from shoal.core.kv import INSERT, UPDATE_AFTER, VALUE_KIND, KeyValueLayout
from shoal.core.plan import DataSplit
from shoal.core.store import FileStore
from shoal.errors import CorruptDataFileError, UnsupportedFeatureError
from shoal.format import data_formats, parquet
from shoal.format.evolution import FieldMapping, same_fields
from shoal.format.schema import TableSchema
from shoal.io import FileIO, in_background
from shoal.io.executor import io_pool
from shoal.primary_key.levels import run_files, sorted_runs
from shoal.primary_key.merge import BucketMerger

_FORMAT = ds.ParquetFileFormat()


def _dataset(file_io: FileIO, paths: list[str], schema: pa.Schema) -> ds.Dataset:
    # Times and timestamps in their stored units: a timestamp column stored as INT64
    # without annotation (beside INT96 ones) reads in the unit its precision implies.
    stored = parquet.read_schema(schema)
    return ds.dataset(paths, schema=stored, format=_FORMAT, filesystem=file_io.fs)


def _scanner(
    file_io: FileIO,
    paths: list[str],
    schema: pa.Schema,
    *,
    columns: list[str],
    row_filter: ds.Expression | None = None,
    filter_columns: set[str] | frozenset[str] = frozenset(),
    batch_size: int = 131_072,
) -> ds.Scanner:
    """A scan of the files ``paths`` (of one schema, in this order) as rows of
    ``schema``: ``columns`` of the rows ``row_filter`` (on ``filter_columns``) keeps.
    Parquet files are read as one ``pyarrow.dataset``; files of other formats
    (``format/data_formats``, by their names) one after another by their codec."""
    if all(p.endswith(".parquet") for p in paths):
        return _dataset(file_io, paths, schema).scanner(
            columns=columns, filter=row_filter, batch_size=batch_size
        )
    wanted = set(columns) | set(filter_columns)
    read = pa.schema([f for f in schema if f.name in wanted])
    batches = _file_batches(file_io, paths, read, batch_size)
    return ds.Scanner.from_batches(
        batches, schema=read, columns=columns, filter=row_filter, batch_size=batch_size
    )


def _file_batches(
    file_io: FileIO, paths: list[str], schema: pa.Schema, batch_size: int
) -> Iterator[pa.RecordBatch]:
    names = list(schema.names)
    for path in paths:
        fmt = data_formats.format_of(path)
        if fmt is None:
            raise CorruptDataFileError(f"{path}: not a data file of a format shoal reads")
        try:
            with file_io.open_input_file(path) as source:
                yield from fmt.read(source, schema, names, batch_size)
        except FileNotFoundError as exc:
            raise CorruptDataFileError(str(exc)) from None
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptDataFileError(f"{path}: {exc}") from None


def _filter_columns(dnf: P.Dnf | None, key_value: bool) -> set[str]:
    """The columns a scan's row filter reads (see :func:`_row_filter`)."""
    columns = set(P.columns_of(dnf)) if dnf is not None else set()
    return columns | {VALUE_KIND} if key_value else columns


@dataclass(frozen=True, slots=True)
class _Group:
    """Files written under one schema, read as one dataset: ``mapping`` is None when
    their columns are the target's (read as they are), else it maps them by field id;
    ``schema`` is the Arrow schema of their columns. A group of files with deleted rows
    has ``deletions``: per file its deletion vector (or None) and row count, by which
    one mask over the whole dataset is built."""

    paths: list[str]
    schema: pa.Schema
    mapping: FieldMapping | None = None
    deletions: tuple[tuple[DeletionFile | None, int], ...] | None = None
    delete_rows: bool = True  # some file may hold delete rows (key-value files)


def _groups(store: FileStore, splits: Sequence[DataSplit], target: TableSchema) -> list[_Group]:
    """The files of ``splits`` by the schema they were written with: first all files
    whose columns are the target's, then each other schema's; the files of the splits
    that hold deletion vectors form groups of their own, one per schema."""
    alike: dict[int, bool] = {target.id: True}
    paths: dict[int | None, list[str]] = {None: []}
    masked: dict[int | None, list[tuple[str, DeletionFile | None, int]]] = {}
    delete_rows: set[int | None] = set()
    for split in splits:
        for i, (f, path) in enumerate(zip(split.files, split.file_paths, strict=True)):
            same = alike.get(f.schema_id)
            if same is None:
                same = alike[f.schema_id] = same_fields(
                    store.schema_of(f.schema_id).fields, target.fields
                )
            schema_id = None if same else f.schema_id
            if split.deletion_files:
                masked.setdefault(schema_id, []).append((path, split.deletion_of(i), f.row_count))
                if f.delete_row_count != 0:  # unknown, or some
                    delete_rows.add(schema_id)
            else:
                paths.setdefault(schema_id, []).append(path)
    groups = [_Group(paths.pop(None), target.arrow_schema())] if paths[None] else []
    paths.pop(None, None)
    mappings: dict[int, tuple[pa.Schema, FieldMapping]] = {}

    def mapped(schema_id: int | None) -> tuple[pa.Schema, FieldMapping | None]:
        if schema_id is None:
            return target.arrow_schema(), None
        if schema_id not in mappings:
            written = store.schema_of(schema_id)
            mappings[schema_id] = (
                written.arrow_schema(),
                FieldMapping(written.fields, target.fields),
            )
        return mappings[schema_id]

    for schema_id, group_paths in paths.items():
        groups.append(_Group(group_paths, *mapped(schema_id)))
    for schema_id, files in masked.items():
        deletions = tuple((d, n) for _, d, n in files)
        paths_of = [p for p, _, _ in files]
        groups.append(_Group(paths_of, *mapped(schema_id), deletions, schema_id in delete_rows))
    return groups


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
    store: FileStore,
    splits: Sequence[DataSplit],
    target: TableSchema,
    columns: Sequence[str] | None,
    dnf: P.Dnf | None,
    *,
    key_value: bool = False,
) -> pa.Table:
    """Every matching row of ``splits`` as one table with ``columns`` of ``target``
    (``key_value``: the files are a primary-key table's, read without merging)."""
    projected = _project(target.arrow_schema(), columns)
    if not splits:
        return projected.empty_table()
    loader = VectorLoader(store.file_io)
    tables = [
        _read_group(store.file_io, group, projected, dnf, key_value, loader=loader)
        for group in _groups(store, splits, target)
    ]
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def _read_group(
    file_io: FileIO,
    group: _Group,
    projected: pa.Schema,
    dnf: P.Dnf | None,
    key_value: bool,
    *,
    loader: VectorLoader,
) -> pa.Table:
    mapping = group.mapping
    if group.deletions is not None:
        return _read_masked(file_io, group, projected, dnf, key_value, loader=loader)
    if mapping is None:
        dataset_schema, row_filter = _row_filter(group.schema, dnf, key_value)
        with _data_errors():
            table = _scanner(
                file_io,
                group.paths,
                dataset_schema,
                columns=list(projected.names),
                row_filter=row_filter,
                filter_columns=_filter_columns(dnf, key_value),
            ).to_table()
        return _exact(table, projected)
    needed, sources = _mapped_columns(mapping, projected, dnf)
    pushed = _pushdown(mapping, dnf)
    dataset_schema, row_filter = _row_filter(group.schema, pushed, key_value)
    with _data_errors():
        table = _scanner(
            file_io,
            group.paths,
            dataset_schema,
            columns=sources,
            row_filter=row_filter,
            filter_columns=_filter_columns(pushed, key_value),
        ).to_table()
    return _mapped(table, group, needed, projected, dnf)


def _read_masked(
    file_io: FileIO,
    group: _Group,
    projected: pa.Schema,
    dnf: P.Dnf | None,
    key_value: bool,
    *,
    loader: VectorLoader,
) -> pa.Table:
    """The rows of files with deleted rows as one table: the files read as one dataset
    in file order (Arrow's parallel scan; positions count every row, so nothing is
    filtered in it) while their deletion vectors load; each batch, as the scan hands
    it over, is masked and filtered on the I/O pool while the scan decodes the next
    ones, so masking overlaps the read instead of following it."""
    plan = _MaskedRead.of(group, projected, dnf, key_value)
    pool = io_pool()
    parts: list[Future[pa.Table]] = []
    try:
        for batch, keep, start in _masked_scan(file_io, group, plan, loader):
            parts.append(pool.submit(plan.finish, batch, keep, start))
        tables = [part.result() for part in parts]
    finally:
        wait(parts)  # no masking outlives a failed read
    if not tables:
        return projected.empty_table()
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def _masked_tables(
    file_io: FileIO,
    group: _Group,
    projected: pa.Schema,
    dnf: P.Dnf | None,
    key_value: bool,
    *,
    loader: VectorLoader,
    batch_size: int = 131_072,
) -> Iterator[pa.Table]:
    """The rows of files with deleted rows, read as one dataset in file order: each
    batch masked and filtered as the next batches are read."""
    plan = _MaskedRead.of(group, projected, dnf, key_value)
    for batch, keep, start in _masked_scan(file_io, group, plan, loader, batch_size):
        rows = plan.finish(batch, keep, start)
        if rows.num_rows:
            yield rows


def _masked_scan(
    file_io: FileIO,
    group: _Group,
    plan: _MaskedRead,
    loader: VectorLoader,
    batch_size: int = 131_072,
) -> Iterator[tuple[pa.RecordBatch, np.ndarray, int]]:
    """The batches of the group's files in file order, each with the group's keep mask
    and the position of its first row (positions count every row, so nothing is
    filtered in the scan). The mask is built from the deletion vectors on a thread of
    its own while the scan reads; the files must hold the rows their manifests count."""
    total = sum(n for _, n in group.deletions or ())
    start = 0
    with in_background(lambda: _keep_mask(group, total, loader)) as mask, _data_errors():
        scanner = _scanner(
            file_io, group.paths, plan.dataset_schema, columns=plan.columns, batch_size=batch_size
        )
        for batch in scanner.to_batches():
            if start + batch.num_rows > total:
                break
            yield batch, mask.result(), start
            start += batch.num_rows
        else:
            if start == total:
                return
    raise CorruptDataFileError(
        f"the data files {group.paths} hold other than the {total} rows their manifests name"
    )


@dataclass(frozen=True, slots=True)
class _MaskedRead:
    """How a group with deletion vectors is read: the columns of its scan, and what
    applies to the rows after the mask."""

    group: _Group
    projected: pa.Schema
    dnf: P.Dnf | None
    dataset_schema: pa.Schema
    row_filter: ds.Expression | None
    needed: list[str]
    sources: list[str]
    columns: list[str]
    key_value: bool

    @staticmethod
    def of(group: _Group, projected: pa.Schema, dnf: P.Dnf | None, key_value: bool) -> _MaskedRead:
        mapping = group.mapping
        if mapping is None:
            needed = sources = list(projected.names)
            pushed = dnf
        else:
            needed, sources = _mapped_columns(mapping, projected, dnf)
            pushed = _pushdown(mapping, dnf)
        dataset_schema, _ = _row_filter(group.schema, pushed, key_value)
        row_filter = P.to_expression(pushed) if pushed is not None else None
        extra = sorted(P.columns_of(pushed) - set(sources)) if pushed is not None else []
        key_value = key_value and group.delete_rows
        if key_value:
            extra.append(VALUE_KIND)
        return _MaskedRead(
            group,
            projected,
            dnf,
            dataset_schema,
            row_filter,
            needed,
            sources,
            sources + extra,
            key_value,
        )

    def finish(self, batch: pa.RecordBatch, keep: np.ndarray, start: int) -> pa.Table:
        """``batch`` (the rows from ``start`` on of the group's files, in order) with
        the deleted ones and the filtered ones left out, as rows of the target."""
        keep = keep[start : start + batch.num_rows]
        if self.key_value:
            kinds = np.asarray(batch.column(VALUE_KIND))
            keep = keep & ((kinds == INSERT) | (kinds == UPDATE_AFTER))
        if not keep.all():
            batch = _filter_batch(batch, keep)
        rows = pa.Table.from_batches([batch])
        if self.row_filter is not None:
            rows = rows.filter(self.row_filter)
        rows = rows.select(self.sources)
        if self.group.mapping is None:
            return _exact(rows, self.projected)
        return _mapped(rows, self.group, self.needed, self.projected, self.dnf)


def _filter_batch(batch: pa.RecordBatch, keep: np.ndarray) -> pa.RecordBatch:
    """``batch.filter(keep)``, the mask converted once for all columns. A fixed-width
    column without nulls is filtered without its validity bitmap (all set), which
    halves the work of filtering it."""
    mask = pa.array(keep, pa.bool_())
    columns = [pc.filter(_without_validity(column), mask) for column in batch.columns]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def _without_validity(array: pa.Array) -> pa.Array:
    """``array`` without a validity bitmap when it has one but no nulls and is of a
    fixed-width type of two buffers (validity, values); else ``array`` itself."""
    kind = array.type
    if array.null_count or not (pa.types.is_primitive(kind) and not pa.types.is_boolean(kind)):
        return array
    buffers = array.buffers()
    if len(buffers) != 2 or buffers[0] is None:
        return array
    return pa.Array.from_buffers(kind, len(array), [None, buffers[1]], offset=array.offset)


def _keep_mask(group: _Group, row_count: int, loader: VectorLoader) -> np.ndarray:
    """True for each of the ``row_count`` rows of the group's files (in order) that no
    vector deletes."""
    assert group.deletions is not None
    keep = np.ones(row_count, dtype=bool)
    start = 0
    for path, (deletion, count) in zip(group.paths, group.deletions, strict=True):
        if deletion is not None:
            keep[start + loader.deleted_positions(deletion, count, path)] = False
        start += count
    return keep


def _mapped_columns(
    mapping: FieldMapping, projected: pa.Schema, dnf: P.Dnf | None
) -> tuple[list[str], list[str]]:
    """The target columns a mapped read builds (projected, then filtered), and the
    file's columns it reads for them."""
    needed = list(projected.names) + sorted(P.columns_of(dnf) - set(projected.names))
    return needed, mapping.source_names(needed)


def _mapped(
    table: pa.Table, group: _Group, needed: list[str], projected: pa.Schema, dnf: P.Dnf | None
) -> pa.Table:
    """Rows read from files of another schema as rows of the target, filtered exactly."""
    assert group.mapping is not None
    table = _exact(table, _project(group.schema, table.column_names))
    rows = group.mapping.apply(table, needed)
    if dnf is not None:
        rows = rows.filter(P.to_expression(dnf))
    return _exact(rows.select(list(projected.names)), projected)


def _pushdown(mapping: FieldMapping, dnf: P.Dnf | None) -> P.Dnf | None:
    """A weaker filter that files of another schema can apply as they are read: the
    terms on columns they hold with the target's type, under their own names (the
    exact filter applies after mapping). None when some OR branch keeps no term."""
    if dnf is None:
        return None
    groups = []
    for group in dnf:
        kept = []
        for term in group:
            name = mapping.name_as_is(term.column)
            if name is not None:
                kept.append(P.Term(name, term.op, term.value))
        if not kept:
            return None
        groups.append(tuple(kept))
    return tuple(groups)


def read_batches(
    store: FileStore,
    splits: Sequence[DataSplit],
    target: TableSchema,
    columns: Sequence[str] | None,
    dnf: P.Dnf | None,
    *,
    batch_size: int = 131_072,
    key_value: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Matching rows as a stream of batches; memory stays bounded by Arrow's read-ahead."""
    projected = _project(target.arrow_schema(), columns)
    if not splits:
        return
    loader = VectorLoader(store.file_io)
    for group in _groups(store, splits, target):
        if group.deletions is not None:
            yield from _masked_batches(
                store.file_io,
                group,
                projected,
                dnf,
                key_value=key_value,
                loader=loader,
                batch_size=batch_size,
            )
            continue
        yield from _group_batches(
            store.file_io, group, projected, dnf, key_value=key_value, batch_size=batch_size
        )


def plain_dataset(
    store: FileStore,
    splits: Sequence[DataSplit],
    target: TableSchema,
    columns: Sequence[str] | None,
    dnf: P.Dnf | None,
) -> ds.Dataset | None:
    """The read of ``splits`` (append files) as one ``pyarrow.dataset`` of their Parquet
    files with ``columns`` of ``target`` and the rows ``dnf`` keeps, when that dataset
    gives exactly the rows :func:`read_batches` gives (in another order): no file with
    deleted rows, all written with the target's columns, in types read as they are
    stored (no cast of times or timestamps to their table unit), a filter only on
    columns read. Else None."""
    if not splits or any(s.deletion_files for s in splits):
        return None
    projected = _project(target.arrow_schema(), columns)
    if dnf is not None and not set(P.columns_of(dnf)) <= set(projected.names):
        return None
    groups = _groups(store, splits, target)
    if len(groups) != 1 or groups[0].mapping is not None or groups[0].deletions is not None:
        return None
    paths = groups[0].paths
    if not all(p.endswith(".parquet") for p in paths):
        return None
    if not parquet.read_schema(projected).equals(projected):
        return None
    dataset = ds.dataset(paths, schema=projected, format=_FORMAT, filesystem=store.file_io.fs)
    return dataset if dnf is None else dataset.filter(P.to_expression(dnf))


def _masked_batches(
    file_io: FileIO,
    group: _Group,
    projected: pa.Schema,
    dnf: P.Dnf | None,
    *,
    key_value: bool,
    loader: VectorLoader,
    batch_size: int,
) -> Iterator[pa.RecordBatch]:
    """The rows of files with deleted rows as a stream of batches."""
    for rows in _masked_tables(
        file_io, group, projected, dnf, key_value, loader=loader, batch_size=batch_size
    ):
        yield from rows.combine_chunks().to_batches()


def _group_batches(
    file_io: FileIO,
    group: _Group,
    projected: pa.Schema,
    dnf: P.Dnf | None,
    *,
    key_value: bool,
    batch_size: int,
) -> Iterator[pa.RecordBatch]:
    mapping = group.mapping
    needed, sources = list(projected.names), list(projected.names)
    pushed = dnf
    if mapping is not None:
        needed, sources = _mapped_columns(mapping, projected, dnf)
        pushed = _pushdown(mapping, dnf)
    dataset_schema, row_filter = _row_filter(group.schema, pushed, key_value)
    with _data_errors():
        scanner = _scanner(
            file_io,
            group.paths,
            dataset_schema,
            columns=sources,
            row_filter=row_filter,
            filter_columns=_filter_columns(pushed, key_value),
            batch_size=batch_size,
        )
        for batch in scanner.to_batches():
            if not batch.num_rows:
                continue
            if mapping is None:
                yield _exact_batch(batch, projected)
                continue
            rows = _mapped(pa.Table.from_batches([batch]), group, needed, projected, dnf)
            if rows.num_rows:
                yield from rows.combine_chunks().to_batches()


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
    target: TableSchema | None = None,
) -> Iterator[pa.Table]:
    """Rows of a primary-key table's splits, merged per bucket (the real-time view), as
    rows of ``target`` (by default the table's schema).

    The filter applies after merging: a value filter applied before could let an
    older version of a row show through a newer one that fails it.
    """
    target = target or store.schema
    layout = store.layout if target.id == store.schema.id else KeyValueLayout(target)
    arrow_schema = layout.value_schema
    wanted = list(columns) if columns is not None else list(arrow_schema.names)
    needed = wanted + sorted(P.columns_of(dnf) - set(wanted))
    schema = _project(arrow_schema, wanted)
    merger = BucketMerger(
        store.file_io, layout, store.merge_settings, columns=needed, schemas=store.schema_of
    )
    expression = P.to_expression(dnf) if dnf is not None else None
    for split in splits:
        if split.deletion_files:
            raise UnsupportedFeatureError(
                f"table {store.uri!r} holds deletion vectors but its options do not enable "
                "them; shoal merges such files only as Paimon reads them with "
                "'deletion-vectors.enabled' = 'true'",
                feature="deletion-vectors.enabled",
            )
        files = run_files(sorted_runs(split.files, store.decode_key), split.bucket_path)
        for table in merger.merge(files):
            if expression is not None:
                table = table.filter(expression)
            if table.num_rows:
                yield _exact(table.select(wanted), schema)


def read_merged(
    store: FileStore,
    splits: Sequence[DataSplit],
    columns: Sequence[str] | None,
    dnf: P.Dnf | None,
    target: TableSchema | None = None,
) -> pa.Table:
    # Buckets merge one after another: Arrow already decodes and sorts on all cores, and
    # merging several buckets at once only multiplies the memory.
    target = target or store.schema
    schema = _project(target.arrow_schema(), columns)
    tables = list(merged_batches(store, splits, columns, dnf, target))
    return pa.concat_tables(tables) if tables else schema.empty_table()
