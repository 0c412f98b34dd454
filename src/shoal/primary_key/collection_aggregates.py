"""Paimon's aggregate functions over ARRAY and MAP columns: ``collect``,
``merge_map`` and ``nested_update``, folded for all keys at once.

The fold steps through each key's rows in lockstep (step j combines every key's j-th
row), holding each key's accumulated entries as flat arrays (key, element id, where
the element's value is, its Java hash); a step is a handful of vectorised sorts over
the entries of the keys it touches. What each function does, as Paimon 0.9 and 1.0
do it:

- ``collect``: the arrays concatenated in order. With ``fields.<f>.distinct`` each
  element is kept once; Paimon puts elements of a ROW type in a list (first
  occurrence order) and the others in a ``HashSet``, whose iteration order the merged
  array takes (:mod:`java_order`). A retraction removes one occurrence of each of its
  elements.
- ``merge_map``: the maps merged, later values winning, in the iteration order of
  the ``HashMap`` Paimon rebuilds at each step; a retraction removes its keys.
- ``nested_update``: the non-null rows of the arrays concatenated; with
  ``fields.<f>.nested-key`` a later row replaces the row of the same key, in
  ``HashMap`` order. A retraction removes every equal row (or the rows of its keys).

As in Paimon, the first non-null value of a fold is taken as it is (only later steps
deduplicate or reorder), except by a distinct ``collect``, which deduplicates it too.
A retraction into a null accumulator leaves it null; a null retraction into a
``collect`` or ``merge_map`` fails in Paimon and is refused here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal.core.kv import FieldFunction
from shoal.errors import InvalidInputDataError
from shoal.primary_key import java_order

COLLECTIONS = ("collect", "merge_map", "nested_update")


@dataclass(slots=True)
class _Entries:
    """Entries sorted by group, each group's in its order: the group, the element's
    (or map key's) id, where its value is among the flattened elements, its hash."""

    g: np.ndarray
    eid: np.ndarray
    src: np.ndarray
    h: np.ndarray

    def take(self, index: np.ndarray) -> _Entries:
        return _Entries(self.g[index], self.eid[index], self.src[index], self.h[index])

    @staticmethod
    def concat(parts: list[_Entries]) -> _Entries:
        return _Entries(
            np.concatenate([p.g for p in parts]),
            np.concatenate([p.eid for p in parts]),
            np.concatenate([p.src for p in parts]),
            np.concatenate([p.h for p in parts]),
        )


def _mode(function: FieldFunction, values: pa.Array) -> str:
    fn = function.function
    if fn == "merge_map":
        return "map"
    if fn == "nested_update":
        return "keyed" if function.nested_key else "rows"
    if not function.distinct:
        return "concat"
    return "ordered" if pa.types.is_struct(values.type.value_type) else "set"


def collection_aggregate(
    name: str,
    function: FieldFunction,
    values: pa.Array,
    retract: np.ndarray,
    groups: tuple[np.ndarray, np.ndarray],
) -> pa.Array:
    """One ARRAY or MAP column's aggregate of each group (rows in merge order);
    ``groups``: each group's first row and number of rows."""
    starts, sizes = groups
    mode = _mode(function, values)
    lists = values
    if pa.types.is_map(values.type):  # as a list of its key-value entries
        lists = pa.ListArray.from_arrays(values.offsets, values.values, mask=values.is_null())
    entries = pc.list_flatten(lists)
    parent = np.asarray(pc.list_parent_indices(lists).to_numpy(zero_copy_only=False))
    parent = parent.astype(np.int64)
    element_valid = np.asarray(entries.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if mode == "map":
        keys = entries.field("key")
        eid, h = java_order.value_ids(keys), java_order.hash_codes(keys)
    elif mode == "keyed":
        projected = pa.StructArray.from_arrays(
            [entries.field(k) for k in function.nested_key], list(function.nested_key)
        )
        eid = java_order.value_ids(projected)
        h = java_order.row_key_hashes(projected, function.nested_key)
    elif mode == "set":
        eid, h = java_order.value_ids(entries), java_order.hash_codes(entries)
    else:
        if mode == "concat":
            eid = _concat_ids(name, function, entries, retract)
        else:
            eid = java_order.value_ids(entries)
        h = np.zeros(len(entries), dtype=np.uint32)
    # Each row's elements: rows are in segment order, so a row's elements are the
    # run of flattened entries whose parent is that row.
    counts = np.bincount(parent, minlength=len(values))
    row_start = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    row_valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    skip = retract & function.ignore_retract
    layout = {"row_start": row_start, "counts": counts, "eid": eid, "h": h}
    fold = _Fold(mode, eid, element_valid, len(starts))
    for j in range(int(sizes.max()) if len(starts) else 0):
        live = np.flatnonzero(sizes > j)
        rows = starts[live] + j
        keep = ~skip[rows] & row_valid[rows]
        back = retract[rows]
        null_back = back & ~skip[rows] & ~row_valid[rows] & fold.has[live]
        if null_back.any() and mode in ("concat", "ordered", "set", "map"):
            raise InvalidInputDataError(
                f"column {name!r} ({function.function}) has a retraction (-U, -D row) "
                "whose value is null for a key with other rows; Paimon fails on it too",
                column=name,
            )
        adds, removes = live[keep & ~back], live[keep & back]
        fold.step(
            adds,
            _rows_entries(adds, starts[adds] + j, **layout),
            removes,
            _rows_entries(removes, starts[removes] + j, **layout),
        )
    return fold.result(values, entries)


def _concat_ids(
    name: str, function: FieldFunction, entries: pa.Array, retract: np.ndarray
) -> np.ndarray:
    """Element ids of a non-distinct collect, compared only by retractions: Java's
    ``equals`` of the boxed elements (a byte array equals only itself)."""
    t = entries.type
    if function.ignore_retract or not retract.any():
        return np.zeros(len(entries), dtype=np.int64)
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return np.arange(1, len(entries) + 1, dtype=np.int64)
    if pa.types.is_nested(t):
        raise InvalidInputDataError(
            f"column {name!r} (collect) has a retraction of ARRAY, MAP or ROW elements, "
            "which Paimon compares by the identity of the objects its readers return; "
            "shoal refuses it rather than guess",
            column=name,
        )
    return java_order.value_ids(entries)


def _rows_entries(
    g: np.ndarray,
    rows: np.ndarray,
    *,
    row_start: np.ndarray,
    counts: np.ndarray,
    eid: np.ndarray,
    h: np.ndarray,
) -> _Entries:
    n = counts[rows]
    owner = np.repeat(g, n)
    first = np.repeat(row_start[rows], n)
    within = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    src = (first + within).astype(np.int64)
    return _Entries(owner.astype(np.int64), eid[src], src, h[src])


class _Fold:
    def __init__(self, mode: str, eid: np.ndarray, element_valid: np.ndarray, count: int) -> None:
        self.mode = mode
        self.valid = element_valid
        self.count = count
        self.id_span = int(eid.max()) + 2 if len(eid) else 1
        self.has = np.zeros(count, dtype=bool)
        empty = np.zeros(0, dtype=np.int64)
        self.acc = _Entries(empty, empty, empty, np.zeros(0, dtype=np.uint32))

    def _key(self, e: _Entries) -> np.ndarray:
        return np.asarray(e.g * self.id_span + e.eid + 1)

    def step(
        self, adds: np.ndarray, added: _Entries, removes: np.ndarray, removed: _Entries
    ) -> None:
        touched = np.zeros(self.count, dtype=bool)
        touched[adds] = True
        touched[removes] = True
        if not touched.any():
            return
        mine = touched[self.acc.g]
        rest, acc = self.acc.take(np.flatnonzero(~mine)), self.acc.take(np.flatnonzero(mine))
        parts = [rest]
        # Groups whose accumulator is null take their first value as it is.
        fresh_groups = adds[~self.has[adds]]
        fresh = np.zeros(self.count, dtype=bool)
        fresh[fresh_groups] = True
        first = added.take(np.flatnonzero(fresh[added.g]))
        later = added.take(np.flatnonzero(~fresh[added.g]))
        if self.mode in ("ordered", "set"):
            parts.append(self._combine(first.take(np.zeros(0, dtype=np.int64)), first))
        else:
            parts.append(first)
        self.has[fresh_groups] = True
        combining = np.zeros(self.count, dtype=bool)
        combining[adds[~fresh[adds]]] = True
        acc_add = acc.take(np.flatnonzero(combining[acc.g]))
        if len(later.g) or combining.any():
            parts.append(self._combine(acc_add, later))
        removing = np.zeros(self.count, dtype=bool)
        removing[removes[self.has[removes]]] = True
        acc_remove = acc.take(np.flatnonzero(removing[acc.g]))
        parts.append(self._remove(acc_remove, removed.take(np.flatnonzero(removing[removed.g]))))
        merged = _Entries.concat(parts)
        self.acc = merged.take(np.argsort(merged.g, kind="stable"))

    def _combine(self, acc: _Entries, new: _Entries) -> _Entries:
        both = _Entries.concat([acc, new])
        both = both.take(np.argsort(both.g, kind="stable"))
        if self.mode in ("rows", "keyed"):
            both = both.take(np.flatnonzero(self.valid[both.src]))
        if self.mode in ("concat", "rows"):
            return both
        keep = _first_of_each(self._key(both))
        if self.mode == "ordered":
            return both.take(keep)
        if self.mode in ("map", "keyed"):
            kept = both.take(keep)
            kept.src = _last_src(self._key(both), both.src, keep)
            both = kept
        else:
            both = both.take(keep)
        return both.take(java_order.hash_order(both.g, both.h, self.count))

    def _remove(self, acc: _Entries, gone: _Entries) -> _Entries:
        if self.mode in ("rows", "keyed"):
            acc = acc.take(np.flatnonzero(self.valid[acc.src]))
            gone = gone.take(np.flatnonzero(self.valid[gone.src]))
        if self.mode == "keyed":
            keep = _first_of_each(self._key(acc))
            kept = acc.take(keep)
            kept.src = _last_src(self._key(acc), acc.src, keep)
            acc = kept.take(java_order.hash_order(kept.g, kept.h, self.count))
        hit = np.isin(self._key(acc), self._key(gone))
        if self.mode in ("map", "rows", "keyed"):
            out = acc.take(np.flatnonzero(~hit))
            if self.mode == "map":
                out = out.take(java_order.hash_order(out.g, out.h, self.count))
            return out
        # collect: each retracted element removes its first remaining occurrence.
        key = self._key(acc)
        gone_keys, gone_counts = np.unique(self._key(gone), return_counts=True)
        rank = _occurrence(key)
        limit = np.zeros(len(key), dtype=np.int64)
        if len(gone_keys):
            at = np.minimum(np.searchsorted(gone_keys, key), len(gone_keys) - 1)
            limit = np.where(gone_keys[at] == key, gone_counts[at], 0)
        return acc.take(np.flatnonzero(rank >= limit))

    def result(self, values: pa.Array, entries: pa.Array) -> pa.Array:
        counts = np.bincount(self.acc.g, minlength=self.count)
        offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
        picked = entries.take(pa.array(self.acc.src))
        mask = pa.array(~self.has)
        if pa.types.is_map(values.type):
            return pa.MapArray.from_arrays(
                offsets, picked.field("key"), picked.field("value"), type=values.type, mask=mask
            )
        return pa.ListArray.from_arrays(offsets, picked, type=values.type, mask=mask)


def _first_of_each(key: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of each key, in their order."""
    _, first = np.unique(key, return_index=True)
    return np.sort(first)


def _last_src(key: np.ndarray, src: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """For the kept (first) occurrences, the value position of each key's last one."""
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = sorted_key[1:] != sorted_key[:-1]
    unique = sorted_key[last]
    return np.asarray(src[order][last][np.searchsorted(unique, key[keep])], dtype=np.int64)


def _occurrence(key: np.ndarray) -> np.ndarray:
    """For each position, how many earlier positions hold the same key."""
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    start = np.ones(len(order), dtype=bool)
    start[1:] = sorted_key[1:] != sorted_key[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(len(order)), 0))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order)) - first
    return rank
