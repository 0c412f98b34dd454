"""Partial-update with sequence groups, computed for all keys of a batch at once.

Paimon's ``PartialUpdateMergeFunction`` (0.9, 1.0) folds a key's rows one after
another into a row that starts empty. With ``fields.<seq>.sequence-group = a,b``, the
group's columns change only by rows whose sequence columns are not all null, and then:

- an insert (+I, +U) whose group sequence is not older than the row's (compared column
  by column, nulls first) sets the group's columns, nulls included, and the sequence;
  an older one leaves them, except that aggregated columns fold it in reversed
  (``agg(input, accumulator)``);
- a retraction (-U, -D) whose group sequence is not older nulls the group's columns
  and takes its sequence; aggregated columns retract it whatever its sequence;
- with ``partial-update.remove-record-on-sequence-group`` (Paimon 1.0), a -D that
  would apply to a listed group empties the whole row; the merged row is a DELETE when
  that -D is the key's last row.

Columns outside groups take the last non-null value of the inserts (or fold them with
their aggregate function) and ignore retractions. A group's sequence only rises, so
each row's fate follows from the running maximum of its group's sequence ranks: picks
by index arithmetic, cumulative maxima and the group-wise reductions of
:mod:`aggregates`; only a key's removals are found one round per removal.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal.core import kv
from shoal.core.kv import FieldFunction, MergeSettings, SequenceGroup
from shoal.core.merge_engine import RETRACTABLE
from shoal.errors import InvalidInputDataError, UnsupportedFeatureError
from shoal.primary_key.aggregates import Groups, aggregate, column, pick, take
from shoal.primary_key.ordering import as_numbers
from shoal.primary_key.sketch_aggregates import SKETCHES, sketch_union

# Functions that take retractions inside a group (the others need ignore-retract).
RETRACTING = RETRACTABLE - {"primary-key"}


def merge(
    rows: pa.Table,
    settings: MergeSettings,
    groups: Groups,
    *,
    kinds: np.ndarray,
    system: set[str],
    primary_keys: set[str],
) -> tuple[dict[str, pa.Array], np.ndarray, np.ndarray]:
    """Each key's merged values (by column), the row whose sequence number the merged
    row carries, and whether the merged row is a DELETE. ``rows`` are sorted in merge
    order, ``groups`` are their keys.

    The primary-key columns hold the key. (Paimon's row holds what inserts set, so a
    key whose fold after a removal meets only retractions is a row with a null primary
    key there; shoal writes the key, which such a row's later merges never read.)"""
    n = rows.num_rows
    retract = (kinds == kv.UPDATE_BEFORE) | (kinds == kv.DELETE)
    ranked = [_ranks(rows, g.sequence) for g in settings.sequence_groups]
    begin, deleted = _removals(settings.sequence_groups, ranked, groups, kinds)
    active = np.arange(n) >= begin[groups.group_of]
    functions = dict(settings.functions)
    merged: dict[str, pa.Array] = {}
    grouped: set[str] = set()
    for group, (nonempty, rank) in zip(settings.sequence_groups, ranked, strict=True):
        live = active & nonempty
        accepted = live & _not_older(rank, live, groups)
        # Rows before a removal set first_value's "initialized" (Paimon resets the row,
        # not its aggregators).
        started = pick(~active & nonempty & ~retract, groups, last=False) >= 0
        last = pick(accepted, groups, last=True)
        for name in group.sequence:
            merged[name] = take(column(rows.column(name)), last)
        for name in group.members:
            values = column(rows.column(name))
            function = functions.get(name)
            if function is None:
                merged[name] = take(values, last, retract[np.maximum(last, 0)])
            else:
                merged[name] = _grouped(
                    name,
                    function,
                    values,
                    live=live,
                    accepted=accepted,
                    retract=retract,
                    started=started,
                    groups=groups,
                )
        grouped.update(group.sequence, group.members)
    inserts = active & ~retract
    for name in rows.column_names:
        if name in system or name in grouped:
            continue
        values = column(rows.column(name))
        if name in primary_keys:
            merged[name] = values.take(pa.array(groups.starts))
            continue
        function = functions.get(name)
        if function is None:
            valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            merged[name] = take(values, pick(inserts & valid, groups, last=True))
        else:
            picked, sub = _subset(inserts, groups)
            merged[name] = aggregate(
                name, function, values.take(pa.array(picked)), np.zeros(len(picked), bool), sub
            )
    # As Paimon's merged row: the sequence number of the last insert (the last row when
    # there is none); a removed key keeps its -D row's values (a later merge meets them
    # as the same removal; readers drop the key).
    last_insert = pick(~retract, groups, last=True)
    sequence = np.where(last_insert >= 0, last_insert, groups.lasts)
    if deleted.any():
        for name, values in merged.items():
            own = column(rows.column(name)).take(pa.array(groups.lasts))
            merged[name] = pc.if_else(pa.array(deleted), own, values)
    return merged, sequence, deleted


def _ranks(rows: pa.Table, names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """For each row: whether any of a group's sequence columns is set, and the rank of
    its sequence among all rows' (equal sequences rank equal; columns compared in
    order, nulls first, as Paimon's comparator), -1 where none is set."""
    columns = [column(rows.column(n)) for n in names]
    nonempty = np.zeros(rows.num_rows, dtype=bool)
    for c in columns:
        nonempty |= np.asarray(c.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    numbers = None
    if len(columns) == 1 and _numeric(columns[0].type):
        filled = columns[0].fill_null(pa.scalar(0, columns[0].type))
        numbers = as_numbers(pa.chunked_array([filled]))
    if numbers is not None:
        _, rank = np.unique(numbers, return_inverse=True)
        return nonempty, np.where(nonempty, rank.reshape(-1), -1).astype(np.int64)
    table = pa.table({str(i): c for i, c in enumerate(columns)})
    order = np.asarray(
        pc.sort_indices(
            table,
            sort_keys=[(str(i), "ascending", "at_start") for i in range(len(columns))],
        )
    )
    differs = np.zeros(len(order), dtype=bool)
    if len(order):
        differs[0] = True
    ordered = table.take(pa.array(order))
    for c in ordered.columns:
        c = column(c)
        a, b = c.slice(1), c.slice(0, len(c) - 1)
        va = np.asarray(a.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        vb = np.asarray(b.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        ne = pc.fill_null(pc.not_equal(a, b), True)
        differs[1:] |= (va != vb) | (va & vb & np.asarray(ne.to_numpy(zero_copy_only=False)))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.cumsum(differs) - 1
    return nonempty, np.where(nonempty, rank, -1)


def _numeric(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_date(t)
        or pa.types.is_time(t)
    )


def _not_older(rank: np.ndarray, live: np.ndarray, groups: Groups) -> np.ndarray:
    """Whether each row's group sequence is at least the highest of the key's earlier
    ``live`` rows (the sequence the folded row holds when it comes)."""
    n = len(rank)
    if not n:
        return np.zeros(0, dtype=bool)
    span = int(rank.max()) + 2
    # Offsets per key make one running maximum restart at every key.
    lifted = np.where(live, rank, -1) + 1 + groups.group_of.astype(np.int64) * span
    running = np.maximum.accumulate(lifted)
    before = np.empty(n, dtype=np.int64)
    before[0] = -1
    before[1:] = running[:-1]
    before = np.where(np.arange(n) == groups.starts[groups.group_of], -1, before)
    floor = groups.group_of.astype(np.int64) * span
    held = np.where(before >= floor, before - floor - 1, -1)
    return np.asarray(rank >= held)


def _removals(
    sequence_groups: tuple[SequenceGroup, ...],
    ranked: list[tuple[np.ndarray, np.ndarray]],
    groups: Groups,
    kinds: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Where each key's fold starts (after its last removal by
    ``remove-record-on-sequence-group``) and whether its last row removed it."""
    begin = groups.starts.astype(np.int64).copy()
    deleted = np.zeros(groups.count, dtype=bool)
    removing = [r for g, r in zip(sequence_groups, ranked, strict=True) if g.removes]
    if not removing or not (kinds == kv.DELETE).any():
        return begin, deleted
    n = len(kinds)
    while True:
        active = np.arange(n) >= begin[groups.group_of]
        fires = np.zeros(n, dtype=bool)
        for nonempty, rank in removing:
            live = active & nonempty
            fires |= live & _not_older(rank, live, groups)
        first = pick(fires & (kinds == kv.DELETE), groups, last=False)
        found = first >= 0
        if not found.any():
            return begin, deleted
        begin = np.where(found, first + 1, begin)
        deleted = np.where(found, first == groups.lasts, deleted)


def _subset(mask: np.ndarray, groups: Groups) -> tuple[np.ndarray, Groups]:
    rows = np.flatnonzero(mask)
    counts = np.bincount(groups.group_of[rows], minlength=groups.count)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return rows, Groups(starts, counts, groups.group_of[rows])


def _grouped(
    name: str,
    function: FieldFunction,
    values: pa.Array,
    *,
    live: np.ndarray,
    accepted: np.ndarray,
    retract: np.ndarray,
    started: np.ndarray,
    groups: Groups,
) -> pa.Array:
    """A group column's aggregate: inserts of a newer sequence fold in as
    ``agg(accumulator, input)``, older ones as ``aggReversed(accumulator, input)``
    (``agg(input, accumulator)`` but for collect without ignore-retract, whose
    ``agg(accumulator, input)`` Paimon's ignore-retract wrapper does not pass on), and
    retractions retract whatever their sequence."""
    fn = function.function
    considered = live & ~retract if function.ignore_retract else live
    if fn not in RETRACTING and (considered & retract).any():
        raise InvalidInputDataError(
            f"column {name!r} aggregates with {fn}, which does not take retractions "
            f"(-U, -D rows), and the table holds one for its sequence group; Paimon "
            f"refuses it too unless 'fields.{name}.ignore-retract' is 'true'",
            column=name,
        )
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if fn == "last_value":
        # An older insert keeps the value; a retraction nulls it.
        at = pick(considered & (accepted | retract), groups, last=True)
        return take(values, at, retract[np.maximum(at, 0)])
    if fn == "last_non_null_value":
        return _last_non_null(
            values,
            considered=considered,
            accepted=accepted,
            retract=retract,
            valid=valid,
            groups=groups,
        )
    if fn in ("first_value", "first_non_null_value"):
        inserts = considered & ~retract
        at = _first(fn, inserts=inserts, accepted=accepted, valid=valid, groups=groups)
        return take(values, np.where(started, pick(inserts & ~accepted, groups, last=True), at))
    if fn in SKETCHES:
        rows = np.flatnonzero(considered & valid)
        return sketch_union(
            name, fn, values, rows, (groups.group_of, groups.count), reverse=~accepted
        )
    if fn == "listagg" or (fn == "collect" and function.ignore_retract):
        return _prepending(
            name, function, values, considered=considered, accepted=accepted, groups=groups
        )
    if fn in ("merge_map", "nested_update"):
        _retractions_first(
            name, function, considered=considered, accepted=accepted, retract=retract, groups=groups
        )
        return _prepending(
            name,
            function,
            values,
            considered=considered,
            accepted=accepted | retract,
            groups=groups,
            retract=retract,
        )
    # The other functions are symmetric: the reversed fold gives the same value.
    picked, sub = _subset(considered, groups)
    return aggregate(name, function, values.take(pa.array(picked)), retract[picked], sub)


def _last_non_null(
    values: pa.Array,
    *,
    considered: np.ndarray,
    accepted: np.ndarray,
    retract: np.ndarray,
    valid: np.ndarray,
    groups: Groups,
) -> pa.Array:
    """last_non_null_value in a group: a newer non-null insert sets the value, a non-null
    retraction nulls it, and an older non-null insert sets it only while it is null."""
    setting = considered & valid & ((accepted & ~retract) | retract)
    last = pick(setting, groups, last=True)
    held = (last >= 0) & ~retract[np.maximum(last, 0)]
    position = np.arange(len(valid))
    older = considered & valid & ~accepted & ~retract & (position > last[groups.group_of])
    first_older = pick(older, groups, last=False)
    at = np.where(held, last, first_older)
    return take(values, at)


def _prepending(
    name: str,
    function: FieldFunction,
    values: pa.Array,
    *,
    considered: np.ndarray,
    accepted: np.ndarray,
    groups: Groups,
    retract: np.ndarray | None = None,
) -> pa.Array:
    """listagg, collect, merge_map and nested_update in a group: newer rows append
    (``agg(accumulator, input)``), older ones prepend (``agg(input, accumulator)``),
    so the fold is the function's own over the older rows, latest arrival first, then
    the others in arrival order."""
    picked, sub = _subset(considered, groups)
    position = picked.astype(np.int64)
    within = np.where(accepted[picked], position, -position)
    order = np.lexsort((within, groups.group_of[picked]))
    ordered = picked[order]
    retracting = np.zeros(len(ordered), bool) if retract is None else retract[ordered]
    return aggregate(name, function, values.take(pa.array(ordered)), retracting, sub)


def _retractions_first(
    name: str,
    function: FieldFunction,
    *,
    considered: np.ndarray,
    accepted: np.ndarray,
    retract: np.ndarray,
    groups: Groups,
) -> None:
    """Refuses a key whose older insert comes after a retraction of merge_map or
    nested_update: Paimon puts it before what the retraction left, which no fold of
    the function's own in some order of the rows gives."""
    first = pick(considered & retract, groups, last=False)
    older = considered & ~accepted & ~retract
    after = older & (first[groups.group_of] >= 0) & (np.arange(len(older)) > first[groups.group_of])
    if after.any():
        key = f"fields.{name}.ignore-retract"
        raise UnsupportedFeatureError(
            f"column {name!r} ({function.function} in a sequence group) meets, for one key "
            "in one merge, a row older than the group's sequence after a retraction; "
            "Paimon folds it before what the retraction left, which shoal does not "
            f"compute; set {key!r} to 'true' or read and write the table with Paimon",
            feature=key,
        )


def _first(
    fn: str,
    *,
    inserts: np.ndarray,
    accepted: np.ndarray,
    valid: np.ndarray,
    groups: Groups,
) -> np.ndarray:
    """The row whose value first_value or first_non_null_value leaves in a group when
    no removal came before (-1: null). Paimon's aggregator is "initialized" by its
    first insert (first_value) or the first that brings a value (first_non_null_value:
    a newer non-null insert, or an older insert while it holds an older non-null
    value); from then on, newer inserts keep the value and each older one
    (``agg(input, accumulator)``) replaces it, nulls included."""
    n = len(inserts)
    position = np.arange(n)
    older = inserts & ~accepted
    if fn == "first_value":
        entered = pick(inserts, groups, last=False)
        value = np.where(accepted[np.maximum(entered, 0)], entered, -1)
    else:
        nonnull = inserts & valid
        r1 = pick(nonnull, groups, last=False)
        after = (r1[groups.group_of] >= 0) & (position > r1[groups.group_of])
        r2 = pick(after & ((nonnull & accepted) | older), groups, last=False)
        r1_older = (r1 >= 0) & ~accepted[np.maximum(r1, 0)]
        entered = np.where(r1_older, r2, r1)
        value = np.where(
            r1_older,
            np.where((r2 >= 0) & accepted[np.maximum(r2, 0)], r2, r1),
            r1,
        )
    later = older & (entered[groups.group_of] >= 0) & (position > entered[groups.group_of])
    replaced = pick(later, groups, last=True)
    return np.where(replaced >= 0, replaced, value)
