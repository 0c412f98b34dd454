"""Compiled loops that planning runs over millions of manifest records: hashing,
comparing and checking byte ranges of a buffer (names, partitions) without a Python
object each, and ordering and packing files into splits."""

from __future__ import annotations

import numba
import numpy as np

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@numba.njit(nogil=True, cache=True)
def hashes(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The 64-bit FNV-1a hash of each range (equal bytes, equal hashes)."""
    out = np.empty(starts.shape[0], dtype=np.uint64)
    for i in range(starts.shape[0]):
        h = _FNV_OFFSET
        for j in range(starts[i], starts[i] + lengths[i]):
            h = (h ^ np.uint64(buffer[j])) * _FNV_PRIME
        out[i] = h
    return out


@numba.njit(nogil=True, cache=True)
def all_equal(  # noqa: PLR0917 - the two sides' ranges
    buffer: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    other: np.ndarray,
    other_offsets: np.ndarray,
    index: np.ndarray,
) -> bool:
    """Whether each range of ``buffer`` holds the same bytes as the range ``index[i]``
    of ``other`` (its ranges one after another, ``other_offsets`` where each begins)."""
    for i in range(starts.shape[0]):
        k = index[i]
        begin = other_offsets[k]
        if other_offsets[k + 1] - begin != lengths[i]:
            return False
        s = starts[i]
        for j in range(lengths[i]):
            if buffer[s + j] != other[begin + j]:
                return False
    return True


@numba.njit(nogil=True, cache=True)
def name_facts(
    buffer: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    suffixes: np.ndarray,
    suffix_offsets: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Of file names (ranges of ``buffer``), in one pass: each one's hash (as
    :func:`hashes`), whether it ends with one of ``suffixes`` (those ranges one after
    another, ``suffix_offsets`` where each begins), and whether any is not a plain
    file name: empty, ``.`` or ``..``, or holding a ``/``, a ``\\`` or a NUL (see
    ``shoal.format.data_file.is_file_name``)."""
    n = starts.shape[0]
    hashed = np.empty(n, dtype=np.uint64)
    ends = np.zeros(n, dtype=np.bool_)
    unsafe = False
    for i in range(n):
        s = starts[i]
        length = lengths[i]
        if length == 0 or (length <= 2 and buffer[s] == 46 and buffer[s + length - 1] == 46):
            unsafe = True
        h = _FNV_OFFSET
        for j in range(s, s + length):
            b = buffer[j]
            if b == 47 or b == 92 or b == 0:  # noqa: PLR1714 - '/', '\\', NUL
                unsafe = True
            h = (h ^ np.uint64(b)) * _FNV_PRIME
        hashed[i] = h
        for k in range(suffix_offsets.shape[0] - 1):
            m = suffix_offsets[k + 1] - suffix_offsets[k]
            if m > length:
                continue
            same = True
            for j in range(m):
                if buffer[s + length - m + j] != suffixes[suffix_offsets[k] + j]:
                    same = False
                    break
            if same:
                ends[i] = True
                break
    return hashed, ends, unsafe


@numba.njit(nogil=True, cache=True)
def pack(group: np.ndarray, cost: np.ndarray, target: int, whole: bool) -> np.ndarray:
    """The split of each file (the files of a group together, in order): a split begins
    with each group, and within one when the next file would take the split past
    ``target`` (unless ``whole``)."""
    out = np.empty(group.shape[0], dtype=np.int64)
    split = -1
    weight = 0
    for i in range(group.shape[0]):
        if i == 0 or group[i] != group[i - 1] or (not whole and weight + cost[i] > target):
            split += 1
            weight = 0
        out[i] = split
        weight += cost[i]
    return out


@numba.njit(nogil=True, cache=True)
def order_by_group(
    group: np.ndarray, groups: int, sequence: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The rows ordered by ``group`` (a number below ``groups``; the groups in the order
    of their first row), the rows of a group by ``sequence`` (equal ones in row
    order); and each group's place in that order (-1: no row)."""
    n = group.shape[0]
    rank = np.full(groups, -1, dtype=np.int64)
    counts = np.zeros(groups + 1, dtype=np.int64)
    ranked = 0
    for i in range(n):
        g = group[i]
        if rank[g] < 0:
            rank[g] = ranked
            ranked += 1
        counts[rank[g] + 1] += 1
    starts = np.cumsum(counts)
    fill = starts[:-1].copy()
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        r = rank[group[i]]
        order[fill[r]] = i
        fill[r] += 1
    for r in range(ranked):
        lo = starts[r]
        hi = starts[r + 1]
        rows = order[lo:hi].copy()
        order[lo:hi] = rows[np.argsort(sequence[rows], kind="mergesort")]
    return order, rank


def joined(values: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``values`` one after another, and the offsets where each begins (one more than
    values)."""
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return np.frombuffer(b"".join(values), dtype=np.uint8), offsets


def _warm() -> None:
    """Load every loop for the types planning calls it with (from numba's cache once it
    has compiled them), so that no plan waits for it."""
    buffer = np.frombuffer(b"ab.c", dtype=np.uint8)
    starts = np.zeros(1, dtype=np.int64)
    lengths = np.ones(1, dtype=np.int64)
    offsets = np.array([0, 1], dtype=np.int64)
    hashes(buffer, starts, lengths)
    all_equal(buffer, starts, lengths, buffer, offsets, starts)
    name_facts(buffer, starts, lengths, buffer, offsets)
    pack(starts, lengths, 1, False)
    order_by_group(starts, 1, starts)


_warm()
