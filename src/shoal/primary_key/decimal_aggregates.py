"""``sum`` and ``product`` of DECIMAL columns, as Paimon computes them with Java's
``BigDecimal``: exact on the unscaled values, at the column's precision and scale.

- ``sum`` adds (a retraction subtracts) exactly. Where the result has more digits
  than the precision, Paimon keeps the value as it is when the precision is at most
  18 (its compact form, a long), which the column's type cannot hold: shoal refuses
  such a merge; above 18 digits Paimon's ``Decimal.fromBigDecimal`` gives null, and
  the fold goes on from the next value as from a null.
- ``product`` multiplies and rounds half up to the scale (``setScale(scale,
  HALF_UP)``); a retraction divides exactly (``BigDecimal.divide``: a quotient
  without a finite decimal expansion, or a zero divisor, fails in Paimon and is
  refused here) and rounds the same way. A result beyond the precision is null.

The fold steps through the groups' values in lockstep (step j combines each group's
j-th value), on Python integers held in numpy object arrays.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pyarrow as pa

from shoal.errors import InvalidInputDataError


def unscaled(values: pa.Array) -> np.ndarray:
    """The unscaled integers of a decimal128 array (nulls as 0), as an object array."""
    words = np.frombuffer(values.buffers()[1], dtype="<u8")
    words = words[2 * values.offset : 2 * (values.offset + len(values))].reshape(-1, 2)
    low = words[:, 0].astype(object)
    high = words[:, 1].view(np.int64).astype(object)
    return np.asarray(high * (1 << 64) + low, dtype=object)


def from_unscaled(ints: np.ndarray, valid: np.ndarray, t: pa.DataType) -> pa.Array:
    """A decimal128 array of type ``t`` from unscaled integers, null where not ``valid``."""
    filled = np.where(valid, ints, 0).astype(object)
    low = np.asarray((filled & ((1 << 64) - 1)).astype(np.uint64))
    high = np.asarray((filled >> 64).astype(np.int64))
    data = np.stack([low, high.view(np.uint64)], axis=1).reshape(-1)
    mask = pa.array(valid).buffers()[1] if not valid.all() else None
    return pa.Array.from_buffers(t, len(ints), [mask, pa.py_buffer(data.tobytes())])


def _half_up(numerator: np.ndarray, denominator: int) -> np.ndarray:
    """numerator / denominator rounded half away from zero (Java's HALF_UP)."""
    magnitude = np.abs(numerator)
    q, r = magnitude // denominator, magnitude % denominator
    q = q + (2 * r >= denominator)
    return np.asarray(np.where(numerator < 0, -q, q), dtype=object)


def decimal_fold(
    fn: str,
    values: pa.Array,
    rows: np.ndarray,
    retract: np.ndarray,
    segments: tuple[np.ndarray, np.ndarray],
) -> pa.Array:
    """``fn`` (sum or product) of the non-null ``rows`` of each group; ``segments``:
    each group's first position among ``rows`` and how many it has."""
    t = values.type
    precision, scale = t.precision, t.scale
    limit = 10**precision
    x = unscaled(values)[rows] if len(rows) else np.zeros(0, dtype=object)
    r = retract[rows]
    starts, counts = segments
    count = len(counts)
    has = np.flatnonzero(counts > 0)
    acc = np.zeros(count, dtype=object)
    alive = np.zeros(count, dtype=bool)  # a non-null accumulator
    for j in range(int(counts.max()) if count else 0):
        live = has[counts[has] > j]
        at = starts[live] + j
        value, back, held = x[at], r[at], alive[live]
        current = acc[live]
        if fn == "sum":
            fresh = np.where(back, -value, value)
            combined = np.where(back, current - value, current + value)
            out = np.where(held, combined, fresh)
            beyond = held & (np.abs(out.astype(object)) >= limit)
            if precision <= 18 and beyond.any():
                raise InvalidInputDataError(
                    f"a DECIMAL({precision}, {scale}) sum exceeds the column's precision; "
                    "Paimon keeps such a value in its compact form, which the column's type "
                    "cannot hold, so shoal refuses the merge"
                )
        else:
            product = _half_up(current * value, 10**scale)
            combined = np.where(back, _divide(current, value, back & held, scale), product)
            out = np.where(held, combined, value)
            beyond = held & (np.abs(out.astype(object)) >= limit)
        acc[live] = np.where(beyond, 0, out)
        alive[live] = ~beyond
    present = np.zeros(count, dtype=bool)
    present[has] = True
    return from_unscaled(acc, alive & present, t)


def _divide(a: np.ndarray, b: np.ndarray, used: np.ndarray, scale: int) -> np.ndarray:
    """a / b as ``BigDecimal.divide`` then ``setScale(scale, HALF_UP)``, where ``used``."""
    out = np.zeros(len(a), dtype=object)
    for i in np.flatnonzero(used):  # retractions of products only
        if b[i] == 0:
            raise InvalidInputDataError(
                "a DECIMAL product's retraction divides by zero (Paimon fails on it too)"
            )
        quotient = Fraction(int(a[i]), int(b[i]))
        rest = quotient.denominator
        for prime in (2, 5):
            while rest % prime == 0:
                rest //= prime
        if rest != 1:
            raise InvalidInputDataError(
                "a DECIMAL product's retraction has no exact decimal quotient (Java's "
                "BigDecimal.divide fails on it, and so does Paimon's merge)"
            )
        scaled = quotient * 10**scale
        out[i] = _half_up(np.array([scaled.numerator], dtype=object), scaled.denominator)[0]
    return out
