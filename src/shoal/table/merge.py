"""Merge-on-read: the rows of one bucket of a primary-key table, one per key.

The bucket's sorted runs are read as streams of key-ordered batches and merged
batch-wise: the smallest of the runs' last buffered keys is a frontier below which
every run's rows are already buffered, so the rows up to it are resolved at once
(one vectorized sort by key and sequence, keeping each key's winner) while the rest
wait for the next round. Memory holds one batch per run, whatever the bucket's size.

Merge engines: ``deduplicate`` keeps each key's row with the highest sequence
(``sequence.field`` orders by that column first; ties go to the later write) and
drops the key when that row is a delete; ``first-row`` keeps each key's first row.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from shoal.errors import CorruptDataFileError
from shoal.io import FileIO
from shoal.table import kv
from shoal.table.kv import KeyValueLayout

DEDUPLICATE = "deduplicate"
FIRST_ROW = "first-row"
MERGE_ENGINES = (DEDUPLICATE, FIRST_ROW)


@dataclass(frozen=True, slots=True)
class MergeSettings:
    engine: str = DEDUPLICATE
    sequence_field: str | None = None
    ignore_delete: bool = False


def _run_batches(
    file_io: FileIO, paths: Sequence[str], columns: list[str], batch_rows: int
) -> Iterator[pa.Table]:
    for path in paths:
        try:
            with file_io.open_input_file(path) as source:
                parquet = pq.ParquetFile(source)
                for batch in parquet.iter_batches(batch_size=batch_rows, columns=columns):
                    if batch.num_rows:
                        yield pa.Table.from_batches([batch])
        except FileNotFoundError as exc:
            raise CorruptDataFileError(str(exc)) from None
        except (pa.ArrowInvalid, OSError) as exc:
            raise CorruptDataFileError(f"{path}: {exc}") from None


def _le_mask(table: pa.Table, keys: list[str], frontier: tuple[Any, ...]) -> pa.Array:
    """Rows whose key is at or below ``frontier`` (lexicographic over the key columns)."""
    mask = pc.less_equal(table.column(keys[-1]), frontier[-1])
    for name, value in zip(reversed(keys[:-1]), reversed(frontier[:-1]), strict=True):
        column = table.column(name)
        mask = pc.or_(pc.less(column, value), pc.and_(pc.equal(column, value), mask))
    return mask


def _last_key(table: pa.Table, keys: list[str]) -> tuple[Any, ...]:
    return tuple(table.column(k)[-1].as_py() for k in keys)


def group_starts(table: pa.Table, keys: list[str]) -> np.ndarray:
    """For a table sorted by key: True at the first row of each key."""
    n = table.num_rows
    starts = np.zeros(n, dtype=bool)
    if n:
        starts[0] = True
    if n > 1:
        for name in keys:
            column = table.column(name)
            changed = pc.not_equal(column.slice(1), column.slice(0, n - 1))
            starts[1:] |= np.asarray(changed.to_numpy(zero_copy_only=False), dtype=bool)
    return starts


def winners(rows: pa.Table, layout: KeyValueLayout, settings: MergeSettings) -> pa.Table:
    """Rows sorted by key, keeping each key's winning row under the merge engine."""
    keys = layout.key_columns
    order = "ascending" if settings.engine == FIRST_ROW else "descending"
    sort_keys = [(k, "ascending") for k in keys]
    if settings.sequence_field is not None and settings.engine != FIRST_ROW:
        sort_keys.append((settings.sequence_field, "descending"))
    sort_keys.append((kv.SEQUENCE_NUMBER, order))
    rows = rows.take(pc.sort_indices(rows, sort_keys=sort_keys))
    return rows.filter(pa.array(group_starts(rows, keys)))


class BucketMerger:
    """Merges the given files of one bucket.

    ``columns`` are the value columns to return (None: all); with ``keep_system``
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
    ) -> None:
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
        self.read_columns = system + values + extra
        self.output_columns = (system if keep_system else []) + values

    def merge(self, runs: Sequence[Sequence[str]]) -> Iterator[pa.Table]:
        """Rows of the runs (each a key-ordered list of file paths), one per key."""
        keys = self.layout.key_columns
        streams = [
            _run_batches(self.file_io, paths, self.read_columns, self.batch_rows) for paths in runs
        ]
        buffers: list[pa.Table | None] = [next(s, None) for s in streams]
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
            for i in active:
                table = buffers[i]
                assert table is not None
                cut = pc.sum(_le_mask(table, keys, frontier)).as_py() or 0
                if cut:
                    pieces.append(table.slice(0, cut))
                rest = table.slice(cut)
                buffers[i] = rest if rest.num_rows else next(streams[i], None)
            resolved = self._resolve(pa.concat_tables(pieces), single_run=False)
            if resolved.num_rows:
                yield resolved

    def _resolve(self, table: pa.Table, *, single_run: bool) -> pa.Table:
        """Each key's winning row (in key order) of rows from several runs."""
        settings = self.settings
        if settings.ignore_delete or settings.engine == FIRST_ROW:
            # first-row keeps the first row of a key for good: a later delete is ignored.
            table = table.filter(pc.invert(kv.is_retract(table.column(kv.VALUE_KIND))))
        if not single_run and table.num_rows:
            table = winners(table, self.layout, settings)
        if self.drop_deletes or not self.keep_system:
            table = table.filter(pc.invert(kv.is_retract(table.column(kv.VALUE_KIND))))
        return table.select(self.output_columns)
