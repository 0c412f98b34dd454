"""Roaring bitmaps in their portable serialization, as sorted numpy arrays.

A 32-bit bitmap is a cookie, a header of containers (a 16-bit key, the high half of
its values, and its cardinality) and the containers, each holding the low halves of
its values as an array (up to 4096 values), a 65536-bit set, or runs. The 64-bit
form (the one Iceberg's and Paimon's 64-bit deletion vectors use) is a little-endian
count of 32-bit bitmaps, each after the 32 high bits it covers. Decoding checks every
count and length against the bytes present and every container against its
cardinality; damage surfaces as :class:`RoaringFormatError`.
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt

SERIAL_COOKIE_NO_RUNCONTAINER = 12346
SERIAL_COOKIE = 12347
NO_OFFSET_THRESHOLD = 4
ARRAY_MAX = 4096
_BITSET_BYTES = 8192

U32Array = npt.NDArray[np.uint32]
U64Array = npt.NDArray[np.uint64]


class RoaringFormatError(ValueError):
    """The bytes are not a portable Roaring bitmap."""


def _need(data: bytes | memoryview, end: int) -> None:
    if end > len(data):
        raise RoaringFormatError(f"cut short: {end} bytes needed, {len(data)} present")


def decode32(data: bytes | memoryview, pos: int = 0) -> tuple[U32Array, int]:
    """The values of the 32-bit bitmap at ``pos``, sorted and unique, and the position
    after it."""
    _need(data, pos + 4)
    (cookie,) = struct.unpack_from("<I", data, pos)
    pos += 4
    run_flags: bytes | None = None
    if cookie & 0xFFFF == SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        flag_bytes = (size + 7) // 8
        _need(data, pos + flag_bytes)
        run_flags = bytes(data[pos : pos + flag_bytes])
        pos += flag_bytes
    elif cookie == SERIAL_COOKIE_NO_RUNCONTAINER:
        _need(data, pos + 4)
        (size,) = struct.unpack_from("<I", data, pos)
        pos += 4
    else:
        raise RoaringFormatError(f"unknown cookie {cookie}")
    if size > 65536:
        raise RoaringFormatError(f"{size} containers")
    _need(data, pos + 4 * size)
    header = np.frombuffer(data, dtype="<u2", count=2 * size, offset=pos).reshape(size, 2)
    keys = header[:, 0].astype(np.uint32)
    cards = header[:, 1].astype(np.int64) + 1
    pos += 4 * size
    if size and not bool(np.all(np.diff(keys.astype(np.int64)) > 0)):
        raise RoaringFormatError("container keys are not increasing")
    if run_flags is None or size >= NO_OFFSET_THRESHOLD:
        pos += 4 * size  # the offsets repeat what the sizes say
    parts: list[U32Array] = []
    for i in range(size):
        is_run = run_flags is not None and (run_flags[i // 8] >> (i % 8)) & 1
        card = int(cards[i])
        if is_run:
            low, pos = _runs(data, pos, card)
        elif card <= ARRAY_MAX:
            _need(data, pos + 2 * card)
            low = np.frombuffer(data, dtype="<u2", count=card, offset=pos).astype(np.uint32)
            pos += 2 * card
            if card > 1 and not bool(np.all(np.diff(low.astype(np.int64)) > 0)):
                raise RoaringFormatError("array container values are not increasing")
        else:
            _need(data, pos + _BITSET_BYTES)
            bits = np.frombuffer(data, dtype=np.uint8, count=_BITSET_BYTES, offset=pos)
            # a bool view: numpy finds the set positions of bools faster than of bytes
            low = np.flatnonzero(np.unpackbits(bits, bitorder="little").view(bool)).astype(
                np.uint32
            )
            pos += _BITSET_BYTES
            if len(low) != card:
                raise RoaringFormatError(f"bitset holds {len(low)} values, header says {card}")
        parts.append((keys[i] << np.uint32(16)) | low)
    values = np.concatenate(parts) if parts else np.empty(0, np.uint32)
    return values.astype(np.uint32, copy=False), pos


def _runs(data: bytes | memoryview, pos: int, card: int) -> tuple[U32Array, int]:
    _need(data, pos + 2)
    (count,) = struct.unpack_from("<H", data, pos)
    pos += 2
    _need(data, pos + 4 * count)
    pairs = np.frombuffer(data, dtype="<u2", count=2 * count, offset=pos).astype(np.int64)
    pos += 4 * count
    starts, lengths = pairs[0::2], pairs[1::2] + 1
    ends = starts + lengths
    if count and (
        int(ends[-1]) > 65536 or (count > 1 and not bool(np.all(starts[1:] > ends[:-1])))
    ):
        raise RoaringFormatError("runs overlap or pass the container's end")
    if int(lengths.sum()) != card:
        raise RoaringFormatError(f"runs hold {int(lengths.sum())} values, header says {card}")
    # values of all runs: each run's start repeated, plus the position within the run
    offsets = np.arange(card, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return (np.repeat(starts, lengths) + offsets).astype(np.uint32), pos


def decode64(data: bytes | memoryview, pos: int = 0) -> tuple[U64Array, int]:
    """The values of the 64-bit bitmap at ``pos``, sorted and unique, and the position
    after it."""
    _need(data, pos + 8)
    (count,) = struct.unpack_from("<Q", data, pos)
    pos += 8
    if count > (len(data) - pos) // 12:
        raise RoaringFormatError(f"{count} bitmaps in {len(data) - pos} bytes")
    parts: list[U64Array] = []
    previous = -1
    for _ in range(count):
        _need(data, pos + 4)
        (high,) = struct.unpack_from("<I", data, pos)
        if high <= previous:
            raise RoaringFormatError("bitmap keys are not increasing")
        previous = high
        low, pos = decode32(data, pos + 4)
        parts.append((np.uint64(high) << np.uint64(32)) | low.astype(np.uint64))
    values = np.concatenate(parts) if parts else np.empty(0, np.uint64)
    return values.astype(np.uint64, copy=False), pos


def sorted_distinct(values: npt.ArrayLike, dtype: type[np.generic]) -> np.ndarray:
    """``values`` as a sorted array of distinct ``dtype`` values; one pass when they
    already are (as positions read from a bitmap, or found in key order)."""
    v = np.asarray(values, dtype=dtype)
    if len(v) > 1 and not bool(np.all(v[1:] > v[:-1])):
        v = np.unique(v)
    return v


def _groups(highs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sorted ``highs``: the distinct values and the index of each one's first."""
    starts = (
        np.flatnonzero(np.concatenate(([True], highs[1:] != highs[:-1])))
        if len(highs)
        else np.zeros(0, np.int64)
    )
    return highs[starts], starts


def encode32(values: npt.ArrayLike, *, runs: bool = True) -> bytes:
    """The portable serialization of the 32-bit values (any order, repeats allowed);
    each container as an array, a bitset or (with ``runs``) runs, whichever is
    smallest, as Roaring's run optimization picks."""
    v = sorted_distinct(values, np.int64)
    if len(v) and (int(v[0]) < 0 or int(v[-1]) > 0xFFFFFFFF):
        raise ValueError("values must fit in 32 bits")
    keys, starts = _groups(v >> 16)
    bounds = [*starts.tolist(), len(v)]
    bodies: list[bytes] = []
    run_flags = bytearray((len(keys) + 7) // 8)
    for i in range(len(keys)):
        low = (v[bounds[i] : bounds[i + 1]] & 0xFFFF).astype(np.int64)
        body = _array_or_bitset(low)
        if runs:
            run_body = _run_body(low)
            if len(run_body) < len(body):
                body = run_body
                run_flags[i // 8] |= 1 << (i % 8)
        bodies.append(body)
    out = bytearray()
    has_runs = any(run_flags)
    if has_runs:
        out += struct.pack("<I", SERIAL_COOKIE | ((len(keys) - 1) << 16))
        out += run_flags
    else:
        out += struct.pack("<II", SERIAL_COOKIE_NO_RUNCONTAINER, len(keys))
    for i, key in enumerate(keys.tolist()):
        out += struct.pack("<HH", key, bounds[i + 1] - bounds[i] - 1)
    if not has_runs or len(keys) >= NO_OFFSET_THRESHOLD:
        offset = len(out) + 4 * len(keys)
        for body in bodies:
            out += struct.pack("<I", offset)
            offset += len(body)
    for body in bodies:
        out += body
    return bytes(out)


def _array_or_bitset(low: npt.NDArray[np.int64]) -> bytes:
    if len(low) <= ARRAY_MAX:
        return low.astype("<u2").tobytes()
    bits = np.zeros(65536, dtype=np.uint8)
    bits[low] = 1
    return np.packbits(bits, bitorder="little").tobytes()


def _run_body(low: npt.NDArray[np.int64]) -> bytes:
    breaks = np.flatnonzero(np.diff(low) != 1) + 1
    starts = low[np.concatenate(([0], breaks))]
    ends = low[np.concatenate((breaks - 1, [len(low) - 1]))]
    pairs = np.empty(2 * len(starts), dtype="<u2")
    pairs[0::2] = starts
    pairs[1::2] = ends - starts
    return struct.pack("<H", len(starts)) + pairs.tobytes()


def encode64(values: npt.ArrayLike, *, runs: bool = True) -> bytes:
    """The portable 64-bit serialization of non-negative 64-bit values."""
    v = sorted_distinct(values, np.uint64)
    highs = (v >> np.uint64(32)).astype(np.uint64)
    keys, starts = _groups(highs)
    bounds = [*starts.tolist(), len(v)]
    out = bytearray(struct.pack("<Q", len(keys)))
    for i, key in enumerate(keys.tolist()):
        out += struct.pack("<I", key)
        low = v[bounds[i] : bounds[i + 1]] & np.uint64(0xFFFFFFFF)
        out += encode32(low.astype(np.int64), runs=runs)
    return bytes(out)
