"""Paimon's aggregate functions as group-wise reductions over rows sorted by key.

Each function folds a key's rows in merge order (sequence order) as Paimon's
``FieldAggregator`` does, one row after another starting from null; here the fold
is computed for all keys at once: picks of a first or last row by index arithmetic
on the sorted groups, ``reduceat`` where the fold is associative (integer sums and
products wrap as Java's arithmetic does), Arrow's hash aggregates for min and max,
and, where only a left-to-right fold gives Java's exact result (float sums and
products, products with retractions), a fold that steps through the groups'
positions in lockstep.

Null handling is Paimon's: a null input leaves sum, product, min, max, listagg and
the boolean functions unchanged, so a key whose inputs are all null aggregates to
null. Retraction rows (-U, -D) subtract from sum, divide product, null last_value
(and last_non_null_value when the retracted value is not null); other functions
refuse them unless ``ignore-retract`` skips them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal.core.kv import FieldFunction
from shoal.errors import InvalidInputDataError
from shoal.primary_key.collection_aggregates import COLLECTIONS, collection_aggregate
from shoal.primary_key.decimal_aggregates import decimal_fold
from shoal.primary_key.sketch_aggregates import SKETCHES, sketch_union


@dataclass(frozen=True, slots=True)
class Groups:
    """Consecutive rows of one key: each group's first row, size and last row, and
    each row's group number."""

    starts: np.ndarray
    sizes: np.ndarray
    group_of: np.ndarray

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def lasts(self) -> np.ndarray:
        return np.asarray(self.starts + self.sizes - 1)

    @staticmethod
    def of(starts: np.ndarray, n: int) -> Groups:
        sizes = np.diff(np.append(starts, n))
        return Groups(starts, sizes, np.repeat(np.arange(len(starts)), sizes))


def pick(mask: np.ndarray, groups: Groups, *, last: bool) -> np.ndarray:
    """Per group, the index of its last (or first) row where ``mask`` holds; -1 if none."""
    if mask.all():  # no nulls: every group's own last (or first) row
        edges = groups.lasts if last else groups.starts
        return np.asarray(edges, dtype=np.int64)
    found = np.full(groups.count, -1, dtype=np.int64)
    rows = np.flatnonzero(mask)
    if len(rows):
        g = groups.group_of[rows]
        edge = np.ones(len(rows), dtype=bool)
        if last:
            edge[:-1] = g[1:] != g[:-1]
        else:
            edge[1:] = g[1:] != g[:-1]
        found[g[edge]] = rows[edge]
    return found


def take(values: pa.Array, indices: np.ndarray, null: np.ndarray | None = None) -> pa.Array:
    """``values`` at ``indices``, null where an index is -1 (or ``null`` holds)."""
    missing = indices < 0 if null is None else (indices < 0) | null
    return values.take(pa.array(np.where(missing, 0, indices), mask=missing))


def _valid(values: pa.Array) -> np.ndarray:
    if values.null_count == 0:
        return np.ones(len(values), dtype=bool)
    return np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _numbers(values: pa.Array) -> np.ndarray:
    zero = pa.scalar(False if pa.types.is_boolean(values.type) else 0, values.type)
    filled = values.fill_null(zero) if values.null_count else values
    return np.asarray(filled.to_numpy(zero_copy_only=False))


def _no_retract(name: str, function: FieldFunction, retract: np.ndarray) -> None:
    if retract.any():
        raise InvalidInputDataError(
            f"column {name!r} aggregates with {function.function}, which does not take "
            f"retractions (-U, -D rows), and the table holds one for a key with other rows; "
            f"Paimon refuses it too unless 'fields.{name}.ignore-retract' is 'true'",
            column=name,
        )


def aggregate(
    name: str, function: FieldFunction, values: pa.Array, retract: np.ndarray, groups: Groups
) -> pa.Array:
    """One column's aggregate of each group (rows in merge order), as an array with one
    value per group."""
    fn = function.function
    if fn == "primary-key":
        return values.take(pa.array(groups.lasts))
    if fn in COLLECTIONS:
        return collection_aggregate(name, function, values, retract, (groups.starts, groups.sizes))
    considered = ~retract if function.ignore_retract else np.ones(len(retract), dtype=bool)
    if fn not in ("sum", "product", "last_value", "last_non_null_value"):
        _no_retract(name, function, retract & considered)
    if fn == "last_value":
        at = pick(considered, groups, last=True)
        return take(values, at, retract[np.maximum(at, 0)])
    valid = _valid(values)
    if fn == "last_non_null_value":
        at = pick(considered & valid, groups, last=True)
        return take(values, at, retract[np.maximum(at, 0)])
    if fn == "first_value":
        return take(values, pick(considered, groups, last=False))
    if fn == "first_non_null_value":
        return take(values, pick(considered & valid, groups, last=False))
    rows = np.flatnonzero(considered & valid)
    present = np.zeros(groups.count, dtype=bool)
    present[groups.group_of[rows]] = True
    if fn in SKETCHES:
        return sketch_union(name, fn, values, rows, (groups.group_of, groups.count))
    if fn in ("sum", "product") and pa.types.is_decimal(values.type):
        out = decimal_fold(fn, values, rows, retract, _segments(rows, groups))
    elif fn in ("max", "min"):
        out = _extreme(values, rows, groups, fn)
    elif fn == "listagg":
        out = _listagg(values, rows, groups, function.delimiter)
    else:
        out = _fold(fn, values, rows, retract, groups)
    return pc.if_else(pa.array(present), out, pa.nulls(groups.count, values.type))


def _segments(rows: np.ndarray, groups: Groups) -> tuple[np.ndarray, np.ndarray]:
    """For rows (sorted indices) of the groups: each group's first position among them
    and how many it has (0 for a group with none)."""
    counts = np.bincount(groups.group_of[rows], minlength=groups.count)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return starts, counts


def _extreme(values: pa.Array, rows: np.ndarray, groups: Groups, fn: str) -> pa.Array:
    t = values.type
    out_index = np.full(groups.count, -1, dtype=np.int64)
    if not len(rows):
        return take(values, out_index)
    if pa.types.is_floating(t):
        # Java compares doubles as Double.compare: -0.0 < 0.0 < ... < NaN.
        x = _numbers(values)[rows].astype(np.float64)
        bits = np.where(np.isnan(x), np.float64("nan"), x).view(np.int64)
        order_key = np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits)
        starts, counts = _segments(rows, groups)
        has = counts > 0
        reduce = np.maximum if fn == "max" else np.minimum
        best = reduce.reduceat(order_key, starts[has])
        chosen = order_key == np.repeat(best, counts[has])
        # Equal keys are equal values: any chosen row of a group will do; keep the first
        # (Java keeps the accumulator on ties).
        at = rows[chosen]
        g = groups.group_of[at]
        first = np.ones(len(at), dtype=bool)
        first[1:] = g[1:] != g[:-1]
        out_index[g[first]] = at[first]
        return take(values, out_index)
    table = pa.table({"g": pa.array(groups.group_of[rows]), "v": values.take(pa.array(rows))})
    result = table.group_by("g", use_threads=False).aggregate([("v", fn)])
    position = np.full(groups.count, -1, dtype=np.int64)
    position[np.asarray(result.column("g").to_numpy())] = np.arange(result.num_rows)
    extremes = result.column(f"v_{fn}").combine_chunks()
    return take(extremes.cast(t), position)


def _listagg(values: pa.Array, rows: np.ndarray, groups: Groups, delimiter: str) -> pa.Array:
    _, counts = _segments(rows, groups)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    strings = values.take(pa.array(rows)).cast(pa.string())
    lists = pa.ListArray.from_arrays(pa.array(offsets), strings)
    return pc.binary_join(lists, delimiter).cast(values.type)


def _fold(
    fn: str, values: pa.Array, rows: np.ndarray, retract: np.ndarray, groups: Groups
) -> pa.Array:
    """sum, product, bool_and and bool_or of the non-null ``rows`` of each group."""
    x = _numbers(values)[rows]
    r = retract[rows]
    starts, counts = _segments(rows, groups)
    has = counts > 0
    out = np.zeros(groups.count, dtype=x.dtype)
    if not len(rows):
        return pa.array(out, values.type)
    seg_starts, seg_counts = starts[has], counts[has]
    integer = np.issubdtype(x.dtype, np.integer)
    with np.errstate(over="ignore"):
        if fn == "bool_and":
            out[has] = np.logical_and.reduceat(x, seg_starts)
        elif fn == "bool_or":
            out[has] = np.logical_or.reduceat(x, seg_starts)
        elif fn == "sum" and integer:
            out[has] = np.add.reduceat(np.where(r, -x, x), seg_starts)
        elif fn == "product" and integer and not r.any():
            out[has] = np.multiply.reduceat(x, seg_starts)
        else:
            out[has] = _stepwise(fn, x, r, seg_starts, seg_counts)
    return pa.array(out, values.type)


def _stepwise(
    fn: str, x: np.ndarray, r: np.ndarray, starts: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """Java's left-to-right fold of sum or product (retractions subtract or divide), for
    all groups in lockstep: step j combines each group's j-th value."""
    if fn == "sum":
        acc = np.where(r[starts], -x[starts], x[starts])
    else:
        acc = x[starts].copy()  # a retraction into a null product starts it at the value
    for j in range(1, int(counts.max())):
        live = np.flatnonzero(counts > j)
        at = starts[live] + j
        value, back = x[at], r[at]
        if fn == "sum":
            acc[live] = np.where(back, acc[live] - value, acc[live] + value)
        else:
            acc[live] = np.where(back, _java_divide(acc[live], value, back), acc[live] * value)
    return np.asarray(acc)


def _java_divide(a: np.ndarray, b: np.ndarray, used: np.ndarray) -> np.ndarray:
    """a / b as Java divides: integers truncate toward zero; floats are IEEE."""
    if not np.issubdtype(a.dtype, np.integer):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(a / b, dtype=a.dtype)
    if (used & (b == 0)).any():
        raise InvalidInputDataError(
            "a product's retraction divides by zero (Paimon fails on it too)"
        )
    safe = np.where(b == 0, 1, b)
    q = np.abs(a.astype(np.int64)) // np.abs(safe.astype(np.int64))
    q = np.where((a < 0) != (safe < 0), -q, q)
    return np.asarray(q.astype(a.dtype))


def column(values: Any) -> pa.Array:
    """A column (chunked or not) as one array."""
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
