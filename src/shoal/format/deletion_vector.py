"""Deletion-vector index files: the deleted row positions of data files.

A deletion-vector index file begins with a version byte (1), followed by one record
per data file, where the index manifest's range points (``offset``):

- a 32-bit vector (Paimon 0.9 on): a big-endian int ``size``, then ``size`` bytes
  (the big-endian magic number 1581511376 and a portable 32-bit Roaring bitmap), then
  the big-endian CRC-32 of those ``size`` bytes. The range's ``length`` is ``size``.
- a 64-bit vector (``deletion-vectors.bitmap64``, Paimon 1.x; Iceberg's layout): a
  big-endian int ``size``, then ``size`` bytes (the magic number 1681511377
  little-endian and a portable 64-bit Roaring bitmap), then the big-endian CRC-32 of
  those bytes. The range's ``length`` is ``size + 8``.

A vector holds the positions (from 0, in file order) of the rows of its data file that
are deleted. Decoding checks the version, the sizes, the magic number and the checksum;
anything else surfaces as :class:`DeletionVectorError`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from shoal.format import roaring

VERSION = 1
MAGIC_32 = 1581511376
MAGIC_64 = 1681511377

Positions = npt.NDArray[np.uint64]


class DeletionVectorError(ValueError):
    """The bytes are not a deletion vector of the format shoal reads."""


class UnknownDeletionVectorVersion(DeletionVectorError):
    """The index file's version byte is not one shoal reads."""

    def __init__(self, version: int) -> None:
        super().__init__(f"deletion-vector file version {version} is not one shoal reads (1)")
        self.version = version


def check_version(data: bytes | memoryview) -> None:
    if not len(data):
        raise DeletionVectorError("empty deletion-vector file")
    if data[0] != VERSION:
        raise UnknownDeletionVectorVersion(data[0])


def decode(data: bytes | memoryview, offset: int, length: int) -> Positions:
    """The deleted positions of the vector at ``offset`` of an index file's bytes
    ``data`` (the whole file, version byte included), ``length`` as the index manifest
    records it; sorted and unique."""
    check_version(data)
    if offset < 1 or offset + 8 > len(data):
        raise DeletionVectorError(f"offset {offset} is outside the file ({len(data)} bytes)")
    size, magic = struct.unpack_from(">ii", data, offset)
    end = offset + 4 + size
    if size < 4 or end + 4 > len(data):
        raise DeletionVectorError(f"vector size {size} at {offset} passes the file's end")
    body = memoryview(data)[offset + 4 : end]
    if magic == MAGIC_32:
        expected = size
    elif struct.unpack("<i", struct.pack(">i", magic))[0] == MAGIC_64:
        expected = size + 8
    else:
        raise DeletionVectorError(f"unknown deletion-vector magic number {magic}")
    if length != expected:
        raise DeletionVectorError(f"vector size {size} does not match its range length {length}")
    (crc,) = struct.unpack_from(">I", data, end)
    if zlib.crc32(body) != crc:
        raise DeletionVectorError(f"checksum mismatch of the vector at {offset}")
    try:
        if magic == MAGIC_32:
            values32, stop = roaring.decode32(body, 4)
            values = values32.astype(np.uint64)
        else:
            values, stop = roaring.decode64(body, 4)
    except roaring.RoaringFormatError as exc:
        raise DeletionVectorError(f"vector at {offset}: {exc}") from None
    if stop != size:
        raise DeletionVectorError(f"vector at {offset} holds {size - stop} bytes past its bitmap")
    return values


def encode_vector(positions: npt.ArrayLike, *, bitmap64: bool = False) -> bytes:
    """One vector's record (size, magic and bitmap, checksum) as Paimon writes it."""
    values = np.asarray(positions)
    if bitmap64:
        body = struct.pack("<i", MAGIC_64) + roaring.encode64(values.astype(np.uint64))
    else:
        # Paimon writes 32-bit bitmaps without run containers, 64-bit ones run-encoded
        body = struct.pack(">i", MAGIC_32) + roaring.encode32(values.astype(np.int64), runs=False)
    return struct.pack(">i", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def encode_file(
    vectors: Mapping[str, npt.ArrayLike], *, bitmap64: bool = False
) -> tuple[bytes, list[tuple[str, int, int, int]]]:
    """An index file of ``vectors`` (data file name → deleted positions) and, per data
    file in order, its range ``(name, offset, length, cardinality)``."""
    out = bytearray([VERSION])
    ranges: list[tuple[str, int, int, int]] = []
    for name, positions in vectors.items():
        values = roaring.sorted_distinct(positions, np.uint64)
        record = encode_vector(values, bitmap64=bitmap64)
        length = len(record) if bitmap64 else len(record) - 8
        ranges.append((name, len(out), length, len(values)))
        out += record
    return bytes(out), ranges
