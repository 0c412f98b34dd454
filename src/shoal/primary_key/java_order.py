"""Values as Java sees them when Paimon's aggregate functions put them in a
``java.util.HashSet`` or ``HashMap``: which values are equal, each value's
``hashCode``, and the order a fresh hash table iterates them in.

Paimon's ``collect`` (distinct), ``merge_map`` and ``nested_update`` (with a nested
key) rebuild a hash table at every step of a fold and write its iteration order into
the merged array or map. A fresh ``HashMap`` iterates its buckets in index order (the
spread hash ``h ^ (h >>> 16)`` masked by the capacity), each bucket in insertion order;
its capacity starts at 16 and doubles when the size passes three quarters of it, or
when a bucket reaches nine entries while the capacity is below 64. A bucket of nine
or more entries at a capacity of 64 or more becomes a tree whose order shoal does not
reproduce: such a key is refused.

Equality and hash codes are those of the boxed values Paimon's getters return:
``Boolean``, ``Byte``, ``Short``, ``Integer`` (also DATE and TIME), ``Long``,
``Float`` and ``Double`` (by their canonical bits), ``BinaryString`` (Paimon's
MurmurHash3 of the UTF-8 bytes), and ``BinaryRow`` (of a nested key of fixed-width
fields).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal.errors import InvalidInputDataError
from shoal.format import types as T

# The element and key types whose Java hash codes shoal computes.
HASHABLE = {
    T.BOOLEAN,
    T.TINYINT,
    T.SMALLINT,
    T.INT,
    T.BIGINT,
    T.FLOAT,
    T.DOUBLE,
    T.DATE,
    T.TIME,
    T.CHAR,
    T.VARCHAR,
}
# Fixed-width types whose BinaryRow slot shoal lays out (nested keys).
ROW_KEY_TYPES = HASHABLE - {T.CHAR, T.VARCHAR}

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_SEED = 42


def hashable(t: T.DataType) -> bool:
    return isinstance(t, T.AtomicType) and t.root in HASHABLE


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return np.asarray((x << np.uint32(r)) | (x >> np.uint32(32 - r)))


def _mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    k = _rotl(k * _C1, 15) * _C2
    h = _rotl(h ^ k, 13)
    return np.asarray(h * np.uint32(5) + np.uint32(0xE6546B64))


def _fmix(h: np.ndarray, length: np.ndarray) -> np.ndarray:
    h = np.asarray(h ^ length.astype(np.uint32), dtype=np.uint32)
    h ^= h >> np.uint32(16)
    h = h * np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h = h * np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return np.asarray(h)


def murmur_bytes(values: pa.Array) -> np.ndarray:
    """Paimon's ``MurmurHashUtils.hashBytes`` of each (non-null) binary or string value:
    MurmurHash3 over the 4-byte words, then one mixing round per trailing byte (as a
    signed byte), seed 42; as uint32. Computed for all values at once, word by word."""
    values = values.cast(pa.binary()) if not pa.types.is_binary(values.type) else values
    n = len(values)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)
    offsets = offsets[values.offset : values.offset + n + 1].astype(np.int64)
    data = values.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    raw = np.concatenate([raw, np.zeros(4, np.uint8)])
    starts, lengths = offsets[:-1], np.diff(offsets)
    h = np.full(len(values), _SEED, dtype=np.uint32)
    words = lengths // 4
    with np.errstate(over="ignore"):
        for j in range(int(words.max()) if len(words) else 0):
            live = np.flatnonzero(words > j)
            at = starts[live] + 4 * j
            w = (
                raw[at].astype(np.uint32)
                | (raw[at + 1].astype(np.uint32) << np.uint32(8))
                | (raw[at + 2].astype(np.uint32) << np.uint32(16))
                | (raw[at + 3].astype(np.uint32) << np.uint32(24))
            )
            h[live] = _mix(h[live], w)
        tails = lengths % 4
        for j in range(3):
            live = np.flatnonzero(tails > j)
            at = starts[live] + 4 * words[live] + j
            byte = raw[at].astype(np.int8).astype(np.int32).astype(np.uint32)
            h[live] = _mix(h[live], byte)
        return _fmix(h, lengths)


def murmur_words(words: np.ndarray) -> np.ndarray:
    """Paimon's ``hashBytesByWords`` of each row of a uint32[n, w] matrix, as uint32."""
    h = np.full(words.shape[0], _SEED, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for i in range(words.shape[1]):
            h = _mix(h, words[:, i])
        return _fmix(h, np.full(words.shape[0], 4 * words.shape[1]))


def _bits(values: pa.Array) -> np.ndarray:
    """Each value as the integer Java's equals and hashCode see (floats by their
    canonical bits), as int64; nulls as 0."""
    t = values.type
    if pa.types.is_boolean(t):
        return np.asarray(values.fill_null(False).to_numpy(zero_copy_only=False), dtype=np.int64)
    if pa.types.is_floating(t):
        x = np.asarray(values.fill_null(0).to_numpy(zero_copy_only=False))
        nan = np.isnan(x)
        if pa.types.is_float32(t):
            b = x.astype(np.float32).view(np.int32).astype(np.int64)
            return np.where(nan, 0x7FC00000, b)
        b = x.astype(np.float64).view(np.int64)
        return np.where(nan, np.int64(0x7FF8000000000000), b)
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        values = values.cast(pa.int32())
    return np.asarray(values.fill_null(0).to_numpy(zero_copy_only=False)).astype(np.int64)


def hash_codes(values: pa.Array) -> np.ndarray:
    """Java's ``hashCode`` of each value (null: 0), as uint32."""
    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        h = murmur_bytes(values.cast(pa.binary()))
    elif pa.types.is_boolean(t):
        h = np.where(_bits(values) == 1, 1231, 1237).astype(np.uint32)
    else:
        b = _bits(values)
        if pa.types.is_int64(t) or pa.types.is_float64(t):
            u = b.view(np.uint64)
            h = (u ^ (u >> np.uint64(32))).astype(np.uint32)
        else:
            h = b.astype(np.int32).view(np.uint32)
    if values.null_count:
        h = np.where(_valid(values), h, 0).astype(np.uint32)
    return np.asarray(h, dtype=np.uint32)


def _valid(values: pa.Array) -> np.ndarray:
    return np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def value_ids(values: pa.Array) -> np.ndarray:
    """Integers equal exactly where the values are equal as Java's ``equals`` sees
    them (null equal to null); structs field by field.

    Raises:
        InvalidInputDataError: values of a type shoal compares only within lists or
            maps (nested lists and maps).
    """
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    t = values.type
    valid = _valid(values)
    if pa.types.is_struct(t):
        columns = [value_ids(values.field(i)) for i in range(t.num_fields)]
        stacked = np.stack([valid.astype(np.int64), *columns], axis=1)
        stacked[~valid, 1:] = 0
        _, inverse = np.unique(stacked, axis=0, return_inverse=True)
        return np.asarray(inverse, dtype=np.int64).reshape(-1)
    if pa.types.is_list(t) or pa.types.is_map(t) or pa.types.is_large_list(t):
        raise InvalidInputDataError(
            "an aggregate function compares nested arrays or maps, which shoal does not do"
        )
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t):
        encoded = pc.dictionary_encode(values.cast(pa.binary()))
        ids = np.asarray(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False))
        return np.asarray(ids, dtype=np.int64)
    if pa.types.is_decimal(t):
        ids = pc.dictionary_encode(values).indices.fill_null(-1)
        return np.asarray(ids.to_numpy(zero_copy_only=False), dtype=np.int64)
    bits = _bits(values)
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        bits = np.asarray(values.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False))
    _, inverse = np.unique(bits, return_inverse=True)
    ids = np.asarray(inverse, dtype=np.int64).reshape(-1) + 1
    return np.where(valid, ids, 0)


def row_key_hashes(rows: pa.StructArray, names: tuple[str, ...]) -> np.ndarray:
    """``BinaryRow.hashCode`` of each row's projection on ``names`` (fixed-width
    fields), as uint32: the null bits and 8-byte slots laid out as Paimon's
    ``BinaryRow`` lays them, hashed by words."""
    n, arity = len(rows), len(names)
    width = ((arity + 63 + 8) // 64) * 8
    row = np.zeros((n, width + 8 * arity), dtype=np.uint8)
    for i, name in enumerate(names):
        column = rows.field(name)
        slot = width + 8 * i
        t = column.type
        bits = _bits(column)
        if pa.types.is_boolean(t) or pa.types.is_int8(t):
            size = 1
        elif pa.types.is_int16(t):
            size = 2
        elif pa.types.is_int64(t) or pa.types.is_float64(t):
            size = 8
        else:
            size = 4
        raw = bits.astype(np.int64).view(np.uint8).reshape(n, 8)[:, :size]
        row[:, slot : slot + size] = raw
        if column.null_count:
            nulls = ~_valid(column)
            row[nulls, slot : slot + 8] = 0
            row[nulls, (i + 8) >> 3] |= np.uint8(1 << ((i + 8) & 7))
    return murmur_words(np.ascontiguousarray(row).view("<u4"))


def hash_order(groups: np.ndarray, hashes: np.ndarray, count: int) -> np.ndarray:
    """The iteration order of fresh hash tables, one per group, into which the entries
    (sorted by group, in insertion order, keys distinct within a group) were put: a
    permutation of the entries.

    Raises:
        InvalidInputDataError: a group whose table would turn a bucket into a tree.
    """
    if not len(groups):
        return np.zeros(0, dtype=np.int64)
    spread = hashes ^ (hashes >> np.uint32(16))
    sizes = np.bincount(groups, minlength=count)
    capacity = np.full(count, 16, dtype=np.int64)
    while True:
        grow = sizes > capacity * 3 // 4
        if not grow.any():
            break
        capacity[grow] *= 2
    for small in (16, 32):
        crowded = _max_bin(groups, spread, np.full(count, small), count) >= 9
        capacity = np.where(crowded & (capacity <= small), small * 2, capacity)
    if (_max_bin(groups, spread, capacity, count) >= 9).any():
        raise InvalidInputDataError(
            "a key's merged values put nine or more entries in one bucket of Java's hash "
            "table, which Paimon then orders as a tree; shoal does not reproduce that order"
        )
    bucket = (spread & (capacity[groups] - 1).astype(np.uint32)).astype(np.int64)
    return np.asarray(np.lexsort((np.arange(len(groups)), bucket, groups)))


def _max_bin(
    groups: np.ndarray, spread: np.ndarray, capacity: np.ndarray, count: int
) -> np.ndarray:
    bucket = (spread & (capacity[groups] - 1).astype(np.uint32)).astype(np.int64)
    pairs, counts = np.unique(np.stack([groups, bucket], axis=1), axis=0, return_counts=True)
    out = np.zeros(count, dtype=np.int64)
    np.maximum.at(out, pairs[:, 0], counts)
    return out
