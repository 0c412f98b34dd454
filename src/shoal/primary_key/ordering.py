"""Ordering rows by key: columns in the numpy form that sorts like them, and where each
key's rows begin in rows sorted by key (shared by the merge and the merge engines)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def as_numbers(column: pa.ChunkedArray) -> np.ndarray | None:
    """A column as a numpy array that sorts like it, or None if it has no such form."""
    t = column.type
    if column.null_count:
        return None
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        column = pc.cast(column, pa.int64() if t.bit_width == 64 else pa.int32())
    elif not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
        return None
    return np.asarray(column.to_numpy(zero_copy_only=False))


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
