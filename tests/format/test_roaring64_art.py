"""RoaringBitmap's Roaring64Bitmap serialization: values survive a write and a read,
unions hold the union of the sets whichever side accumulates, and damaged bytes are
refused. Byte equality with Java's own unions is checked against Java Paimon in
tests/interop/test_java_aggregate_functions.py."""

from __future__ import annotations

import contextlib
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.format import roaring64_art as art
from shoal.format.roaring import RoaringFormatError

U64 = 1 << 64
# bases: low values, around 2^32, 2^48 and 2^63 (negative as Java longs), the top
BASES = [0, 1 << 32, (1 << 48) - 3, 1 << 63, (1 << 63) + (5 << 40), U64 - (1 << 20)]


@st.composite
def value_sets(draw: st.DrawFn) -> np.ndarray:
    values: set[int] = set()
    for _ in range(draw(st.integers(0, 5))):
        base = draw(st.sampled_from(BASES))
        shape = draw(st.sampled_from(["run", "dense", "sparse", "keys"]))
        if shape == "run":  # runs, up to a full container
            start = base + draw(st.integers(0, 1 << 17))
            values.update(v % U64 for v in range(start, start + draw(st.integers(1, 70_000))))
        elif shape == "dense":  # enough in one container for a bitset
            count = draw(st.integers(1, 6000))
            rng = np.random.default_rng(draw(st.integers(0, 2**32)))
            values.update((base + int(x)) % U64 for x in rng.integers(0, 1 << 16, count))
        elif shape == "sparse":  # values across many 48-bit high keys
            count = draw(st.integers(1, 300))
            rng = np.random.default_rng(draw(st.integers(0, 2**32)))
            spread = draw(st.sampled_from([1 << 24, 1 << 40, 1 << 63]))
            values.update((base + int(x)) % U64 for x in rng.integers(0, spread, count))
        else:  # consecutive high keys: a tree node of each size, up to 256 children
            count = draw(st.integers(1, 300))
            values.update((base + (i << 16) + i % 7) % U64 for i in range(count))
    return np.array(sorted(values), dtype=np.uint64)


@settings(max_examples=60, deadline=None)
@given(values=value_sets())
def test_values_survive_a_write_and_a_read(values: np.ndarray) -> None:
    data = art.encode(values)
    assert art.decode(data).tolist() == values.tolist()
    assert art.Bitmap64.decode(data).encode() == data  # a read keeps the layout as written


@settings(max_examples=40, deadline=None)
@given(left=value_sets(), right=value_sets(), more=value_sets())
def test_unions_hold_the_union_of_the_sets(
    left: np.ndarray, right: np.ndarray, more: np.ndarray
) -> None:
    a, b, c = art.encode(left), art.encode(right), art.encode(more)
    expected = np.union1d(np.union1d(left, right), more).tolist()
    assert art.decode(art.union(art.union(a, b), c)).tolist() == expected
    assert art.decode(art.union(c, art.union(b, a))).tolist() == expected
    # the layout of a union is one Java reads back as written: a second read keeps it
    merged = art.union(art.union(a, b), c)
    assert art.Bitmap64.decode(merged).encode() == merged


def test_empty_bitmap_is_one_byte_and_unions_with_anything() -> None:
    empty = art.encode(np.empty(0, np.uint64))
    assert empty == b"\x00"
    one = art.encode(np.array([U64 - 1], np.uint64))
    assert art.union(empty, one) == one
    assert art.union(one, empty) == one
    assert art.decode(empty).tolist() == []


def test_a_fresh_bitmap_lays_out_as_roaring_does() -> None:
    # 1, 2, 3 and 70000 in the first two containers; 2^32; 2^64 - 1 (-1 as a long).
    data = art.encode(np.array([1, 2, 3, 70_000, 1 << 32, U64 - 1], np.uint64))
    assert data[0] == 1
    assert struct.unpack_from("<q", data, 1)[0] == 4
    # the root: a Node4 of two children (high bytes 0x00 and 0xff), no prefix
    assert data[9:13] == bytes([0, 2, 0, 0])
    assert data[13:17] == bytes([0, 0, 0xFF, 0])
    # containers close with their count and the last block and slot used
    assert struct.unpack_from("<qii", data, len(data) - 16) == (4, 0, 3)


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d[:-1],  # cut short
        lambda d: d + b"\x00",  # trailing bytes
        lambda d: b"\x02" + d[1:],  # unknown tag
        lambda d: d[:1] + struct.pack("<q", 5) + d[9:],  # key count off
        lambda d: d[:9] + b"\x09" + d[10:],  # unknown node type
    ],
)
def test_damaged_bytes_are_refused(damage: object) -> None:
    data = art.encode(np.array([1, 2, 3, 70_000, 1 << 32, U64 - 1], np.uint64))
    with pytest.raises(RoaringFormatError):
        art.decode(damage(data))  # type: ignore[operator]


@settings(max_examples=200, deadline=None)
@given(values=value_sets(), cut=st.integers(0, 1 << 20), flip=st.integers(0, 1 << 20))
def test_any_damage_reads_or_is_refused(values: np.ndarray, cut: int, flip: int) -> None:
    data = bytearray(art.encode(values))
    data[flip % len(data)] ^= 0x5A
    for damaged in (bytes(data), bytes(data[: cut % len(data)])):
        with contextlib.suppress(RoaringFormatError):
            art.decode(damaged)
