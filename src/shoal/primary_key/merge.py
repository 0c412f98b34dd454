"""Merge-on-read: the rows of one bucket of a primary-key table, one per key.

The bucket's sorted runs are read as streams of key-ordered batches and merged
batch-wise: the smallest of the runs' last buffered keys is a frontier below which
every run's rows are already buffered, so the rows up to it are resolved at once
(one vectorized sort by key and sequence, keeping each key's winner) while the rest
wait for the next round. Memory holds one batch per run, whatever the bucket's size.

Merge engines: ``deduplicate`` keeps each key's row with the highest sequence
(``sequence.field`` orders by that column first; ties go to the later write) and
drops the key when that row is a delete; ``first-row`` keeps each key's first row;
``aggregation`` and ``partial-update`` combine a key's rows into one (:mod:`engines`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal.core import kv
from shoal.core.kv import FIRST_ROW, KeyValueLayout, MergeSettings
from shoal.errors import CorruptDataFileError
from shoal.format import data_formats
from shoal.format.evolution import FieldMapping, convert, same_fields
from shoal.format.schema import TableSchema
from shoal.io import FileIO, parallel_map
from shoal.primary_key import engines
from shoal.primary_key.changelog import LEVEL, ChangelogMaker, newest_upper
from shoal.primary_key.levels import RunFile
from shoal.primary_key.ordering import as_numbers, group_starts, stable_order


def _run_batches(
    file_io: FileIO, files: Sequence[RunFile], reader: Callable[[int], _FileReader], batch_rows: int
) -> Iterator[pa.Table]:
    """Batches of a run's files in the merge's read schema (other writers mark
    nullability, or spell types, differently, and older files hold older schemas:
    every batch is brought to the table's own form). Each file is read in the format
    its name gives (``format/data_formats``)."""
    for file in files:
        read = reader(file.schema_id)
        fmt = data_formats.format_of(file.path)
        if fmt is None:
            raise CorruptDataFileError(f"{file.path}: not a data file of a format shoal reads")
        try:
            with file_io.open_input_file(file.path) as source:
                offset = 0
                batches = fmt.read(source, read.file_schema, read.columns, batch_rows)
                for batch in batches:
                    n = batch.num_rows
                    if file.deleted is not None:
                        batch = _unmarked(batch, file.deleted, offset)
                    offset += n
                    if batch.num_rows:
                        yield read.adapt(pa.Table.from_batches([batch]))
        except FileNotFoundError as exc:
            raise CorruptDataFileError(str(exc)) from None
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptDataFileError(f"{file.path}: {exc}") from None


def _unmarked(batch: pa.RecordBatch, deleted: np.ndarray, offset: int) -> pa.RecordBatch:
    """The rows of ``batch`` (at file row ``offset``) that ``deleted`` does not mark."""
    low, high = np.searchsorted(deleted, [offset, offset + batch.num_rows])
    if low == high:
        return batch
    keep = np.ones(batch.num_rows, dtype=bool)
    keep[deleted[low:high] - offset] = False
    return batch.filter(pa.array(keep))


class _FileReader:
    """How the files of one schema are read into the merge's read schema: the columns
    to read, and the mapping of a batch of them (by field id) onto the read schema."""

    def __init__(
        self, read_schema: pa.Schema, target: KeyValueLayout, written: KeyValueLayout
    ) -> None:
        self.read_schema = read_schema
        self.target = target
        self.written = written
        self.mapping: FieldMapping | None = None
        names = read_schema.names
        if written.schema.id == target.schema.id or same_fields(
            written.schema.fields, target.schema.fields
        ):
            self.columns = list(names)
            self.file_schema = read_schema
            return
        self.mapping = FieldMapping(written.schema.fields, target.schema.fields)
        system = len(target.key_columns) + 2
        self.values = names[system:]
        self.columns = [
            *written.key_columns,
            kv.SEQUENCE_NUMBER,
            kv.VALUE_KIND,
            *self.mapping.source_names(self.values),
        ]
        self.file_schema = written.file_schema

    def adapt(self, table: pa.Table) -> pa.Table:
        if self.mapping is None:
            return table
        keys = [
            convert(table.column(old), self.written.schema.field(old_name).type, t)
            for old, old_name, t in zip(
                self.written.key_columns,
                self.written.key_names,
                [self.target.schema.field(n).type for n in self.target.key_names],
                strict=True,
            )
        ]
        values = self.mapping.apply(table, self.values)
        columns = [
            *keys,
            table.column(kv.SEQUENCE_NUMBER),
            table.column(kv.VALUE_KIND),
            *values.columns,
        ]
        return pa.Table.from_arrays(columns, schema=self.read_schema)


def _le_mask(table: pa.Table, keys: list[str], frontier: tuple[Any, ...]) -> pa.Array:
    """Rows whose key is at or below ``frontier`` (lexicographic over the key columns)."""
    mask = pc.less_equal(table.column(keys[-1]), frontier[-1])
    for name, value in zip(reversed(keys[:-1]), reversed(frontier[:-1]), strict=True):
        column = table.column(name)
        mask = pc.or_(pc.less(column, value), pc.and_(pc.equal(column, value), mask))
    return mask


def _last_key(table: pa.Table, keys: list[str]) -> tuple[Any, ...]:
    return tuple(table.column(k)[-1].as_py() for k in keys)


def _starts(columns: list[np.ndarray]) -> np.ndarray:
    """For key columns in sorted order: True at the first row of each key."""
    n = len(columns[0])
    starts = np.zeros(n, dtype=bool)
    if n:
        starts[0] = True
    for column in columns:
        starts[1:] |= column[1:] != column[:-1]
    return starts


def _key_order(keys: list[np.ndarray]) -> np.ndarray:
    """The stable order of rows by their key columns."""
    if len(keys) == 1:
        return stable_order(keys[0])
    return np.lexsort(list(reversed(keys)))


def _winners_by_unique_sequence(
    keys: list[np.ndarray], sequence: np.ndarray, newest_first: bool
) -> np.ndarray | None:
    """Winner indices from a stable sort by key alone, when each key's rows come in
    strictly monotone sequence order (as the merge's runs, newest first, and a write's
    rows, oldest first, give them): the winner is then the key's first or last row.
    None otherwise (sequence numbers repeat within a key only from a faulty writer)."""
    order = _key_order(keys)
    if not len(order):
        return order
    starts = _starts([k[order] for k in keys])
    ordered = sequence[order]
    inner = ~starts[1:]
    ends = np.append(starts[1:], True)
    if not np.any((ordered[1:] >= ordered[:-1]) & inner):  # descending within each key
        return np.asarray(order[starts if newest_first else ends])
    if not np.any((ordered[1:] <= ordered[:-1]) & inner):  # ascending within each key
        return np.asarray(order[ends if newest_first else starts])
    return None


def winner_positions(
    rows: pa.Table, layout: KeyValueLayout, settings: MergeSettings
) -> np.ndarray | None:
    """Positions of each key's winning row, in key order, for the engines that keep
    one row of a key (None for those that combine rows)."""
    if settings.combines:
        return None
    keys = layout.key_columns
    newest_first = settings.engine != FIRST_ROW
    order_columns = list(keys)
    if settings.sequence_field is not None and newest_first:
        order_columns.append(settings.sequence_field)
    order_columns.append(kv.SEQUENCE_NUMBER)
    numbers = [as_numbers(rows.column(c)) for c in order_columns]
    if all(a is not None for a in numbers):
        arrays: list[np.ndarray] = [a for a in numbers if a is not None]
        key_arrays, tail = arrays[: len(keys)], arrays[len(keys) :]
        if len(tail) == 1:
            fast = _winners_by_unique_sequence(key_arrays, tail[0], newest_first)
            if fast is not None:
                return fast
        tail = [-a if newest_first else a for a in tail]
        order = np.lexsort([*reversed(tail), *reversed(key_arrays)])
        starts = _starts([a[order] for a in key_arrays])
        return np.asarray(order[starts])
    direction = "descending" if newest_first else "ascending"
    sort_keys = [(k, "ascending") for k in keys]
    sort_keys += [(c, direction) for c in order_columns[len(keys) :]]
    order_array = pc.sort_indices(rows, sort_keys=sort_keys)
    ordered_keys = rows.select(keys).take(order_array)
    starts = group_starts(ordered_keys, keys)
    return np.asarray(order_array.to_numpy()[starts])


def winners(
    rows: pa.Table, layout: KeyValueLayout, settings: MergeSettings, *, every_key: bool = False
) -> pa.Table:
    """Rows sorted by key, keeping each key's winning row under the merge engine (or,
    for the engines that combine rows, each key's combined row).

    Numeric keys sort in numpy (an integer key by one sort of plain integers, a
    lexicographic sort of plain arrays is about twice as fast as Arrow's multi-column
    sort); other keys sort in Arrow.
    """
    positions = winner_positions(rows, layout, settings)
    if positions is None:
        return engines.combine(rows, layout, settings, every_key=every_key)
    return rows.take(positions)


def _retracts(table: pa.Table, positions: np.ndarray) -> np.ndarray:
    """Which of the rows at ``positions`` remove their key (update-before, delete)."""
    kinds = np.asarray(table.column(kv.VALUE_KIND).to_numpy())[positions]
    return np.asarray((kinds == kv.UPDATE_BEFORE) | (kinds == kv.DELETE))


class BucketMerger:
    """Merges the given files of one bucket.

    Rows are those of ``layout``'s schema; a file written under another schema (found
    by ``schemas``, the store's ``schema_of``) is read with its own layout and mapped
    by field id. ``columns`` are the value columns to return (None: all); with ``keep_system``
    the output is in the data-file layout (keys, sequence, kind, values), as
    compaction writes it, and retractions are kept unless ``drop_deletes``.
    """

    def __init__(
        self,
        file_io: FileIO,
        layout: KeyValueLayout,
        settings: MergeSettings,
        *,
        columns: Sequence[str] | None = None,
        keep_system: bool = False,
        drop_deletes: bool = True,
        batch_rows: int = 65_536,
        schemas: Callable[[int], TableSchema] | None = None,
        changelog: ChangelogMaker | None = None,
        lookup_compaction: bool = False,
    ) -> None:
        """``changelog``: collects the changes of the keys merged (``primary_key/
        changelog``); a merge with it takes the ``extra`` runs as rows above level 0.
        ``lookup_compaction``: a compaction of level-0 files on a table that looks keys
        up, where (as in Paimon's ``LookupChangelogMergeFunctionWrapper``) even a key's
        only row goes through the merge engine."""
        self.file_io = file_io
        self.layout = layout
        self.settings = settings
        self.keep_system = keep_system
        self.drop_deletes = drop_deletes
        self.batch_rows = batch_rows
        values = list(layout.value_schema.names) if columns is None or keep_system else [*columns]
        system = [*layout.key_columns, kv.SEQUENCE_NUMBER, kv.VALUE_KIND]
        extra = []
        if settings.sequence_field is not None and settings.sequence_field not in values:
            extra.append(settings.sequence_field)
        file_schema = layout.file_schema
        self.read_schema = pa.schema([file_schema.field(c) for c in system + values + extra])
        self.output_columns = (system if keep_system else []) + values
        self._schemas = schemas
        self._readers: dict[int, _FileReader] = {}
        self.changelog = changelog
        self._every_key = lookup_compaction and settings.combines
        # Rows carry their level when the lookup merge or the changelog needs it.
        self._levels = changelog is not None or (settings.lookup and settings.combines)

    def _reader(self, schema_id: int) -> _FileReader:
        reader = self._readers.get(schema_id)
        if reader is None:
            schema = self.layout.schema
            if schema_id != schema.id and self._schemas is not None:
                schema = self._schemas(schema_id)
            written = self.layout if schema.id == self.layout.schema.id else KeyValueLayout(schema)
            reader = self._readers[schema_id] = _FileReader(self.read_schema, self.layout, written)
        return reader

    def rows_at(self, file: RunFile, positions: np.ndarray) -> pa.Table:
        """The file's rows at ``positions`` (sorted), in the merge's read schema."""
        whole = RunFile(file.path, file.schema_id)
        batches = list(_run_batches(self.file_io, [whole], self._reader, self.batch_rows))
        if not batches:
            return self.read_schema.empty_table()
        return pa.concat_tables(batches).take(pa.array(positions))

    def merge(
        self, runs: Sequence[Sequence[RunFile]], extra: Sequence[pa.Table] = ()
    ) -> Iterator[pa.Table]:
        """Rows of the runs (each a key-ordered list of files) and of the ``extra``
        runs (key-ordered tables in the read schema), one per key."""
        keys = self.layout.key_columns
        streams: list[Iterator[pa.Table]] = [
            _run_batches(self.file_io, files, self._reader, self.batch_rows) for files in runs
        ]
        streams += [iter([table]) for table in extra if table.num_rows]
        if self._levels:
            levels = [files[0].level if files else 0 for files in runs]
            levels += [_EXTRA_LEVEL] * (len(streams) - len(runs))
            streams = [_with_level(s, level) for s, level in zip(streams, levels, strict=True)]
        # Runs are read ahead together: Parquet decoding releases the GIL.
        buffers: list[pa.Table | None] = parallel_map(lambda s: next(s, None), streams)
        while True:
            active = [i for i, b in enumerate(buffers) if b is not None]
            if not active:
                return
            if len(active) == 1:
                i = active[0]
                table = buffers[i]
                while table is not None:
                    resolved = self._resolve(table, single_run=True)
                    if resolved.num_rows:
                        yield resolved
                    table = next(streams[i], None)
                return
            frontier = min(_last_key(buffers[i], keys) for i in active)
            pieces = []
            drained = []
            for i in active:
                table = buffers[i]
                assert table is not None
                cut = pc.sum(_le_mask(table, keys, frontier)).as_py() or 0
                if cut:
                    pieces.append(table.slice(0, cut))
                rest = table.slice(cut)
                buffers[i] = rest
                if not rest.num_rows:
                    drained.append(i)
            refills = parallel_map(lambda i: next(streams[i], None), drained)
            for i, refill in zip(drained, refills, strict=True):
                buffers[i] = refill
            # Rows of a single run are unique and sorted already: no sort needed.
            resolved = self._resolve(pa.concat_tables(pieces), single_run=len(pieces) == 1)
            if resolved.num_rows:
                yield resolved

    def _resolve(self, table: pa.Table, *, single_run: bool) -> pa.Table:
        """Each key's winning row (in key order) of rows from several runs."""
        settings = self.settings
        if settings.ignore_delete or settings.engine == FIRST_ROW:
            # first-row keeps the first row of a key for good: a later delete is ignored.
            table = table.filter(pc.invert(kv.is_retract(table.column(kv.VALUE_KIND))))
        drop = self.drop_deletes or not self.keep_system
        if self._levels:
            table = self._resolve_levels(table, single_run=single_run)
        elif not single_run and table.num_rows:
            positions = winner_positions(table, self.layout, settings)
            if positions is not None:
                # Only the winners' output columns are gathered, retractions left out.
                if drop:
                    positions = positions[~_retracts(table, positions)]
                return table.select(self.output_columns).take(positions)
            table = engines.combine(table, self.layout, settings)
        if drop:
            retract = kv.is_retract(table.column(kv.VALUE_KIND))
            if pc.any(retract).as_py():
                table = table.filter(pc.invert(retract))
        return table.select(self.output_columns)

    def _resolve_levels(self, table: pa.Table, *, single_run: bool) -> pa.Table:
        """Each key's merged row of rows that carry their level: of a key's rows above
        level 0 only the newest joins a lookup merge; the changelog sees the rows and
        the result."""
        levels = np.asarray(table.column(LEVEL).to_numpy(zero_copy_only=False))
        table = table.drop_columns([LEVEL])
        if not table.num_rows or (single_run and not self._every_key):
            result = table
        else:
            if not single_run and self.settings.lookup and self.settings.combines:
                keep = newest_upper(table, levels, self.settings)
                table, levels = table.filter(pa.array(keep)), levels[keep]
            result = winners(table, self.layout, self.settings, every_key=self._every_key)
        if self.changelog is not None:
            self.changelog.add(table, levels, result)
        return result


_EXTRA_LEVEL = 1 << 20
"""The level the merge gives rows of its ``extra`` runs: above every level."""


def _with_level(stream: Iterator[pa.Table], level: int) -> Iterator[pa.Table]:
    for table in stream:
        column = pa.array(np.full(table.num_rows, level, dtype=np.int32))
        yield table.append_column(LEVEL, column)
