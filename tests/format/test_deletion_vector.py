"""Deletion vectors and their Roaring bitmaps: files Java Paimon 0.9 and 1.0 wrote,
round trips of every container kind (arrays, bitsets, runs; 32 and 64 bits), and
damaged bytes refused."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.format import deletion_vector as D
from shoal.format import roaring

# Index files Paimon 0.9 and 1.0 wrote (identical bytes): one vector each, at offset 1.
JAVA_FILES = {
    "01000000165e43f2d03a3000000100000000000000100000000100fa2b5192": (22, [1]),
    "01000000185e43f2d03a3000000100000000000100100000000000010050a75c34": (24, [0, 1]),
    "01000000185e43f2d03a30000001000000000001001000000017002400759ae3f5": (24, [23, 36]),
}


@pytest.mark.parametrize(("hex_bytes", "expected"), JAVA_FILES.items())
def test_vectors_java_wrote(hex_bytes: str, expected: tuple[int, list[int]]) -> None:
    length, positions = expected
    data = bytes.fromhex(hex_bytes)
    assert D.decode(data, 1, length).tolist() == positions
    # shoal writes the same bytes
    assert D.encode_file({"f": positions}) == (data, [("f", 1, length, len(positions))])


positions32 = st.one_of(
    st.lists(st.integers(0, 2**32 - 1), max_size=50),
    st.lists(st.integers(0, 300_000), max_size=300),
    # long runs and dense containers (bitsets)
    st.tuples(st.integers(0, 2**32 - 70_000), st.integers(1, 70_000), st.integers(1, 3)).map(
        lambda t: list(range(t[0], t[0] + t[1], t[2]))
    ),
)


@settings(max_examples=60, deadline=None)
@given(positions32, st.booleans())
def test_roaring32_round_trip(values: list[int], runs: bool) -> None:
    data = roaring.encode32(values, runs=runs)
    decoded, end = roaring.decode32(data + b"tail")
    assert decoded.tolist() == sorted(set(values))
    assert end == len(data)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=40) | positions32)
def test_roaring64_round_trip(values: list[int]) -> None:
    data = roaring.encode64(np.array(values, dtype=np.uint64))
    decoded, end = roaring.decode64(data)
    assert decoded.tolist() == sorted(set(values))
    assert end == len(data)


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.text("abc", min_size=1), positions32, max_size=4), st.booleans())
def test_index_file_round_trip(vectors: dict[str, list[int]], bitmap64: bool) -> None:
    data, ranges = D.encode_file(vectors, bitmap64=bitmap64)
    for name, offset, length, cardinality in ranges:
        decoded = D.decode(data, offset, length)
        assert decoded.tolist() == sorted(set(vectors[name]))
        assert cardinality == len(decoded)


def test_a_run_container_of_another_writer_reads() -> None:
    data = roaring.encode32([*range(10, 5000), 70_000], runs=True)
    assert struct.unpack_from("<I", data)[0] & 0xFFFF == roaring.SERIAL_COOKIE
    assert roaring.decode32(data)[0].tolist() == [*range(10, 5000), 70_000]


def test_an_unknown_file_version_is_refused() -> None:
    data = bytearray.fromhex(next(iter(JAVA_FILES)))
    data[0] = 2
    with pytest.raises(D.UnknownDeletionVectorVersion) as info:
        D.decode(bytes(data), 1, 22)
    assert info.value.version == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: b.__setitem__(20, b[20] ^ 1), "checksum"),
        (lambda b: b.__setitem__(5, 0), "magic"),
        (lambda b: b.__setitem__(4, 0x7F), "passes the file's end"),
        (lambda b: b.__delitem__(slice(-3, None)), "passes the file's end"),
    ],
)
def test_damaged_vectors_are_refused(change: object, message: str) -> None:
    data = bytearray.fromhex(next(iter(JAVA_FILES)))
    change(data)  # type: ignore[operator]
    with pytest.raises(D.DeletionVectorError, match=message):
        D.decode(bytes(data), 1, 22)


def test_a_length_other_than_the_range_says_is_refused() -> None:
    with pytest.raises(D.DeletionVectorError, match="range length"):
        D.decode(bytes.fromhex(next(iter(JAVA_FILES))), 1, 23)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        struct.pack("<I", 99),
        struct.pack("<II", roaring.SERIAL_COOKIE_NO_RUNCONTAINER, 70_000),
        struct.pack("<IIHHHH", roaring.SERIAL_COOKIE_NO_RUNCONTAINER, 2, 5, 0, 4, 0),
        struct.pack("<IIHHI", roaring.SERIAL_COOKIE_NO_RUNCONTAINER, 1, 0, 1, 16) + b"\x02\x00",
        struct.pack("<IIHHIHH", roaring.SERIAL_COOKIE_NO_RUNCONTAINER, 1, 0, 1, 16, 5, 3),
        struct.pack("<IBHHHHH", roaring.SERIAL_COOKIE, 1, 0, 3, 1, 65535, 9),
    ],
)
def test_damaged_bitmaps_are_refused(data: bytes) -> None:
    with pytest.raises(roaring.RoaringFormatError):
        roaring.decode32(data)
