"""Paimon's aggregate functions over VARBINARY columns holding serialized sketches:
the union of a key's values, in the bytes Paimon writes.

- ``rbm32``: Roaring bitmaps of 32-bit integers in their portable serialization;
  Paimon (``RoaringBitmap32``) runs ``runOptimize`` before it serializes, as
  :func:`shoal.format.roaring.encode32` does.
- ``rbm64``: RoaringBitmap's own ``Roaring64Bitmap`` serialization; Paimon
  (``RoaringBitmap64``) ors the input into the accumulator and runs ``runOptimize``,
  as :func:`shoal.format.roaring64_art.union` does, byte for byte.
- ``hll_sketch``: Apache DataSketches HLL sketches; Paimon (``HllSketchUtil``) reads
  the accumulator as a sketch and the input as a union (whose ``lgMaxK`` is the
  input's ``lgConfigK``), adds the first to the second and writes the result as a
  compact ``HLL_4`` sketch. Sketches of different ``lgConfigK`` are refused
  (``InvalidInputDataError``): the C++ union keeps other estimator state than Java's.
- ``theta_sketch``: DataSketches theta sketches; Paimon (``ThetaSketch``) adds both to
  a union of the default size (``lgK`` 12) and writes its compact, ordered result.
  DataSketches' C++ library leaves the sampling probability of a compact sketch's
  preamble at zero where Java writes 1.0; shoal writes Java's bytes.

A null value leaves the accumulator as it is, and a key's first non-null value is
kept as it is (Paimon's ``agg(null, x)`` returns ``x``). These functions take no
retractions. The union is computed key by key, only for keys with more than one
non-null value; the others keep their value without a loop.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import datasketches as ds
import numpy as np
import pyarrow as pa

from shoal.errors import InvalidInputDataError
from shoal.format import roaring, roaring64_art

SKETCHES = ("rbm32", "rbm64", "hll_sketch", "theta_sketch")


def _rbm32(acc: bytes, value: bytes) -> bytes:
    left, _ = roaring.decode32(acc)
    right, _ = roaring.decode32(value)
    return roaring.encode32(np.union1d(left, right), runs=True)


class _Unmatched(Exception):
    """Sketches whose union shoal does not compute as Java Paimon does."""


def _hll(acc: bytes, value: bytes) -> bytes:
    sketch = ds.hll_sketch.deserialize(acc)
    other = ds.hll_sketch.deserialize(value)
    if sketch.lg_config_k != other.lg_config_k:
        # DataSketches' C++ union downsamples to the smaller lgConfigK with other
        # estimator state than Java's, so the bytes (and later estimates) would differ.
        raise _Unmatched(
            f"HLL sketches of lgConfigK {sketch.lg_config_k} and {other.lg_config_k} meet "
            "in one key; shoal unites only sketches of one lgConfigK (Java Paimon's union "
            "of mixed precisions keeps estimator state shoal does not reproduce): write "
            "the column's sketches with one lgConfigK"
        )
    union = ds.hll_union(other.lg_config_k)
    union.update(other)
    union.update(sketch)
    return bytes(union.get_result(ds.tgt_hll_type.HLL_4).serialize_compact())


def _theta(acc: bytes, value: bytes) -> bytes:
    union = ds.theta_union()
    union.update(ds.compact_theta_sketch.deserialize(acc))
    union.update(ds.compact_theta_sketch.deserialize(value))
    out = bytearray(union.get_result(True).serialize())
    if out and out[0] & 0x3F >= 2:
        out[12:16] = struct.pack("<f", 1.0)  # p, as Java's compact sketches carry it
    return bytes(out)


_UNIONS: dict[str, Callable[[bytes, bytes], bytes]] = {
    "rbm32": _rbm32,
    "rbm64": roaring64_art.union,
    "hll_sketch": _hll,
    "theta_sketch": _theta,
}


def sketch_union(
    name: str,
    fn: str,
    values: pa.Array,
    rows: np.ndarray,
    groups: tuple[np.ndarray, int],
    *,
    reverse: np.ndarray | None = None,
) -> pa.Array:
    """The union (``fn``) of each group's non-null ``rows`` (sorted), one value per group
    (null for a group with none); ``groups``: each row's group, and how many. Rows
    marked in ``reverse`` (by row of ``values``) fold in as ``union(row, accumulator)``
    (Paimon's ``aggReversed``), the others as ``union(accumulator, row)``."""
    union = _UNIONS[fn]
    group_of, count = groups
    if not len(rows):
        return pa.nulls(count, values.type)
    counts = np.bincount(group_of[rows], minlength=count)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    firsts = np.where(counts > 0, rows[np.minimum(starts, len(rows) - 1)], -1)
    missing = firsts < 0
    out = values.take(pa.array(np.where(missing, 0, firsts), mask=missing)).cast(pa.binary())
    several = np.flatnonzero(counts > 1)
    if not len(several):
        return out.cast(values.type)
    merged = out.to_pylist()
    for g in several:  # keys with more than one sketch only
        picks = rows[starts[g] : starts[g] + counts[g]]
        parts = values.take(pa.array(picks)).cast(pa.binary()).to_pylist()
        acc = parts[0]
        flips = [False] * len(picks) if reverse is None else reverse[picks].tolist()
        try:
            for part, flip in zip(parts[1:], flips[1:], strict=True):
                acc = union(part, acc) if flip else union(acc, part)
        except _Unmatched as e:
            raise InvalidInputDataError(f"column {name!r} ({fn}): {e}", column=name) from e
        except (ValueError, RuntimeError, roaring.RoaringFormatError) as e:
            raise InvalidInputDataError(
                f"column {name!r} ({fn}) holds a value that is not a serialized sketch of "
                f"its kind: {e}",
                column=name,
            ) from e
        merged[g] = acc
    return pa.array(merged, pa.binary()).cast(values.type)
