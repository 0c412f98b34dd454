"""The dynamic-bucket hash index file: the key hashes of one bucket of one partition.

A file of type ``HASH`` in ``index/`` holds one 4-byte big-endian signed int per key
written to its bucket: the MurmurHash3 of the key's BinaryRow (the trimmed primary
key), as ``write/bucket.hash_row`` computes it. There is no header and no order; the
index manifest entry gives the count of hashes as the file's row count.
"""

from __future__ import annotations

import numpy as np

from shoal.errors import CorruptMetadataError

_BIG_ENDIAN_INT = np.dtype(">i4")


def encode_hashes(hashes: np.ndarray) -> bytes:
    """The bytes of a hash index file holding ``hashes`` (any integer array)."""
    return np.asarray(hashes, dtype=np.int64).astype(_BIG_ENDIAN_INT).tobytes()


def decode_hashes(
    data: bytes, path: str = "<hash index>", row_count: int | None = None
) -> np.ndarray:
    """The hashes of a hash index file, as int32 in file order.

    Raises:
        CorruptMetadataError: naming ``path``, when the length is no multiple of four
            bytes or the count differs from ``row_count`` (the index manifest's).
    """
    if len(data) % 4:
        raise CorruptMetadataError(
            path, f"a hash index holds 4-byte hashes, but the file has {len(data)} bytes"
        )
    hashes = np.frombuffer(data, dtype=_BIG_ENDIAN_INT).astype(np.int32)
    if row_count is not None and row_count != len(hashes):
        raise CorruptMetadataError(
            path, f"the index manifest counts {row_count} hashes, the file holds {len(hashes)}"
        )
    return hashes
