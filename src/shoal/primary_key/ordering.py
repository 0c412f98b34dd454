"""Ordering rows by key: columns in the numpy form that sorts like them, their stable
order, and where each key's rows begin in rows sorted by key (shared by the merge and
the merge engines)."""

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


def _packed_order(key: np.ndarray) -> np.ndarray | None:
    """The stable order of an integer key column, by one in-place sort of plain
    integers: each key (less the smallest) shifted above its row number, so equal keys
    keep their row order. None when the keys' span leaves too few bits for that."""
    n = len(key)
    if key.dtype.kind not in "iub" or n < 2:
        return None
    bits = (n - 1).bit_length()
    low, high = int(key.min()), int(key.max())
    if high - low >= 1 << (63 - bits):
        return None
    if key.dtype == np.uint64:
        packed = (key - np.uint64(low)).astype(np.int64)
    else:
        packed = key.astype(np.int64)
        packed -= low
    packed <<= bits
    packed |= np.arange(n, dtype=np.int64)
    packed.sort()
    packed &= (1 << bits) - 1
    return packed


def stable_order(key: np.ndarray) -> np.ndarray:
    """The stable order of a numeric key column (``np.argsort(key, kind="stable")``):
    for integers by one sort of packed integers, several times quicker."""
    packed = _packed_order(key)
    return packed if packed is not None else np.argsort(key, kind="stable")


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
