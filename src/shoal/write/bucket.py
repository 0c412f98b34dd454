"""Bucket assignment, the same as Paimon's writers compute it.

A row's bucket is ``abs(h % buckets)`` (Java's remainder) where ``h`` is the 32-bit
MurmurHash3 of the bucket-key columns serialized as a BinaryRow (seed 42, hashed
word by word, finalized with the row's byte length). Agreeing on this hash is what
lets shoal and other Paimon writers write the same fixed-bucket table.

Keys made only of fixed-width columns are hashed for all rows at once with numpy;
other keys (strings, wide decimals and timestamps) are serialized row by row.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal.format import binary_row
from shoal.format import types as T

_SEED = 42
_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_MASK = 0xFFFFFFFF
_WORDS = struct.Struct("<I")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return h


def hash_row(row: bytes) -> int:
    """MurmurHash3 of a row's bytes (no arity prefix), as a signed 32-bit int."""
    h = _SEED
    for (word,) in _WORDS.iter_unpack(row):
        k = (word * _C1) & _MASK
        k = _rotl(k, 15)
        k = (k * _C2) & _MASK
        h ^= k
        h = _rotl(h, 13)
        h = (h * 5 + 0xE6546B64) & _MASK
    h = _fmix(h ^ len(row))
    return h - (1 << 32) if h & 0x80000000 else h


def bucket_of(hash_code: int, num_buckets: int) -> int:
    """The bucket of one row's hash; ``assign_buckets`` does the same for a column."""
    # Paimon takes abs() of Java's remainder, which equals abs(h) % n for every int.
    return abs(hash_code) % num_buckets


# --- vectorized ---------------------------------------------------------------------------------

_FIXED_WIDTH: dict[str, tuple[np.dtype[np.generic], int]] = {
    T.BOOLEAN: (np.dtype("u1"), 1),
    T.TINYINT: (np.dtype("i1"), 1),
    T.SMALLINT: (np.dtype("<i2"), 2),
    T.INT: (np.dtype("<i4"), 4),
    T.DATE: (np.dtype("<i4"), 4),
    T.BIGINT: (np.dtype("<i8"), 8),
    T.FLOAT: (np.dtype("<f4"), 4),
    T.DOUBLE: (np.dtype("<f8"), 8),
}


def _is_vectorizable(t: T.DataType) -> bool:
    if not isinstance(t, T.AtomicType):
        return False
    if t.root in _FIXED_WIDTH:
        return True
    if t.root in (T.TIMESTAMP, T.TIMESTAMP_LTZ):
        return binary_row.is_compact_timestamp(t.precision or 0)
    return False


def _slot_values(column: pa.ChunkedArray | pa.Array, t: T.AtomicType) -> np.ndarray:
    """The 8-byte slot contents of a fixed-width column as uint8[n, 8]."""
    n = len(column)
    out = np.zeros((n, 8), dtype=np.uint8)
    if t.root in (T.TIMESTAMP, T.TIMESTAMP_LTZ):
        # Epoch millis, floored (not truncated toward zero) as Paimon's Timestamp is.
        per_milli = {"s": -1000, "ms": 1, "us": 1000, "ns": 1_000_000}[column.type.unit]
        raw = pc.cast(column, pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        raw = np.asarray(raw, dtype=np.int64)
        values = raw * -per_milli if per_milli < 0 else np.floor_divide(raw, per_milli)
        out[:, :] = values.astype("<i8").view(np.uint8).reshape(n, 8)
        return out
    dtype, width = _FIXED_WIDTH[t.root]
    arrow_type = pa.int32() if t.root == T.DATE else None
    data = pc.cast(column, arrow_type) if arrow_type is not None else column
    if t.root == T.BOOLEAN:
        data = pc.cast(data, pa.uint8())
    values = np.asarray(data.fill_null(0).to_numpy(zero_copy_only=False)).astype(dtype)
    out[:, :width] = values.view(np.uint8).reshape(n, width)
    return out


def _hash_words(words: np.ndarray) -> np.ndarray:
    """MurmurHash3 of each row of a uint32[n, w] matrix, as int32[n]."""
    h = np.full(words.shape[0], _SEED, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for i in range(words.shape[1]):
            k = words[:, i] * np.uint32(_C1)
            k = (k << np.uint32(15)) | (k >> np.uint32(17))
            k = k * np.uint32(_C2)
            h ^= k
            h = (h << np.uint32(13)) | (h >> np.uint32(19))
            h = h * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= np.uint32(words.shape[1] * 4)
        h ^= h >> np.uint32(16)
        h = h * np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h = h * np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h.view(np.int32)


def assign_buckets(
    table: pa.Table, key_columns: Sequence[str], key_types: Sequence[T.DataType], num_buckets: int
) -> np.ndarray:
    """The bucket of every row of ``table``, as an int32 array."""
    hashes = key_hashes(table, key_columns, key_types)
    return (np.abs(hashes.astype(np.int64)) % num_buckets).astype(np.int32)


def key_hashes(
    table: pa.Table, key_columns: Sequence[str], key_types: Sequence[T.DataType]
) -> np.ndarray:
    """The MurmurHash3 of every row's key BinaryRow, as an int32 array (what Paimon's
    ``BinaryRow.hashCode`` gives: the bucket hash, and the dynamic-bucket index's)."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int32)
    if all(_is_vectorizable(t) for t in key_types):
        return _vectorized_hashes(table, key_columns, key_types)
    return _row_hashes(table, key_columns, key_types).astype(np.int32)


def _vectorized_hashes(
    table: pa.Table, key_columns: Sequence[str], key_types: Sequence[T.DataType]
) -> np.ndarray:
    n, arity = table.num_rows, len(key_columns)
    width = binary_row.bitset_width(arity)
    row = np.zeros((n, width + 8 * arity), dtype=np.uint8)
    for i, (name, t) in enumerate(zip(key_columns, key_types, strict=True)):
        column = table.column(name)
        assert isinstance(t, T.AtomicType)
        slot = width + 8 * i
        row[:, slot : slot + 8] = _slot_values(column, t)
        if column.null_count:
            nulls = np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            row[nulls, slot : slot + 8] = 0
            row[nulls, (i + 8) >> 3] |= np.uint8(1 << ((i + 8) & 7))
    return _hash_words(np.ascontiguousarray(row).view("<u4"))


def _row_hashes(
    table: pa.Table, key_columns: Sequence[str], key_types: Sequence[T.DataType]
) -> np.ndarray:
    columns = [
        _python_values(table.column(c), t) for c, t in zip(key_columns, key_types, strict=True)
    ]
    return np.fromiter(
        (
            hash_row(binary_row.encode_row(values, key_types))
            for values in zip(*columns, strict=True)
        ),
        dtype=np.int64,
        count=table.num_rows,
    )


def _python_values(column: pa.ChunkedArray, t: T.DataType) -> list[object]:
    if isinstance(t, T.AtomicType) and t.root in (T.TIMESTAMP, T.TIMESTAMP_LTZ):
        # as_py() cannot hold nanoseconds; go through microseconds, which BinaryRow keeps.
        column = pc.cast(column, pa.timestamp("us", tz=column.type.tz), safe=False)
    return list(column.to_pylist())
