"""The merge engines whose merged row combines several rows of a key: ``aggregation``
and ``partial-update``, computed for all keys of a batch at once.

A key's rows are combined in merge order (by key, then ``sequence.field``, then
sequence number) as Paimon's ``AggregateMergeFunction`` and
``PartialUpdateMergeFunction`` combine them. As in Paimon (whose reducer hands a key's
only row on untouched), a key with one row keeps that row as it is, retraction kind
included; a key with several rows becomes one row of kind INSERT (DELETE when
``remove-record-on-delete`` applies to its last row) carrying the sequence number of
its last row, so merged rows merge again later (compaction keeps them at its output
level) exactly as the rows they came from.

- ``aggregation``: each column folds with its function (:mod:`aggregates`); with
  ``aggregation.remove-record-on-delete`` a key's last -D row restarts the fold from
  its own values.
- ``partial-update``: each column takes the last non-null value of the key's insert
  rows. Retractions are refused (Paimon refuses them too) unless ``ignore-delete``
  drops them or ``partial-update.remove-record-on-delete`` makes a -D row start an
  empty row (and skips -U rows); with sequence groups (:mod:`partial_update`) they
  retract their groups' columns.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal.core import kv
from shoal.core.kv import AGGREGATION, KeyValueLayout, MergeSettings
from shoal.core.merge_engine import RETRACTABLE
from shoal.errors import InvalidInputDataError, UnsupportedFeatureError
from shoal.primary_key import partial_update
from shoal.primary_key.aggregates import Groups, aggregate, column, pick
from shoal.primary_key.ordering import as_numbers, group_starts, stable_order


def merge_order(rows: pa.Table, keys: list[str], sequence_field: str | None) -> np.ndarray:
    """Indices that sort ``rows`` by key, then ``sequence_field`` (nulls first), then
    sequence number."""
    names = [*keys, *([sequence_field] if sequence_field else []), kv.SEQUENCE_NUMBER]
    numbers = [as_numbers(rows.column(n)) for n in names]
    if all(a is not None for a in numbers):
        arrays = [a for a in numbers if a is not None]
        if len(arrays) == 2:
            fast = _order_by_key_then_run(arrays[0], arrays[1])
            if fast is not None:
                return fast
        return np.lexsort(list(reversed(arrays)))
    order = pc.sort_indices(rows, sort_keys=[(n, "ascending", "at_start") for n in names])
    return np.asarray(order.to_numpy())


def _order_by_key_then_run(key: np.ndarray, sequence: np.ndarray) -> np.ndarray | None:
    """The order by key, then sequence number, of rows that come as sorted runs newest
    run first (as the merge hands them over): a stable sort by key (quick on sorted
    runs), each key's rows then turned around when their sequence numbers fall. None
    when some key's rows are in neither order."""
    order = stable_order(key)
    sorted_key, seq = key[order], sequence[order]
    n = len(order)
    same = sorted_key[1:] == sorted_key[:-1]  # row i+1 has row i's key
    if not same.any():
        return order
    step = seq[1:] > seq[:-1]
    if bool(np.all(step[same])):
        return order
    if not bool(np.all(~step[same])):
        return None
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    ends = np.append(starts[1:], n) - 1
    group = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, n)))
    position = np.arange(n)
    flipped: np.ndarray = order[starts[group] + ends[group] - position]
    return flipped


def combine(
    rows: pa.Table, layout: KeyValueLayout, settings: MergeSettings, *, every_key: bool = False
) -> pa.Table:
    """``rows`` (keys, sequence, kind and value columns) sorted by key, one per key,
    each key's rows combined by the table's engine; with ``every_key`` a key's only
    row too (Paimon's lookup compaction hands every key to the engine)."""
    if settings.ignore_delete:
        retracted = kv.is_retract(rows.column(kv.VALUE_KIND))
        if pc.any(retracted).as_py():
            rows = rows.filter(pc.invert(retracted))
    if rows.num_rows < (1 if every_key else 2):
        return rows
    if settings.engine == kv.PARTIAL_UPDATE and not settings.sequence_groups:
        return _partial_update(rows, layout, settings, every_key=every_key)
    rows = rows.take(pa.array(merge_order(rows, layout.key_columns, settings.sequence_field)))
    n = rows.num_rows
    groups = Groups.of(np.flatnonzero(group_starts(rows, layout.key_columns)), n)
    single = (groups.sizes == 1) & (not every_key)
    if single.all():
        return rows
    kinds = np.asarray(rows.column(kv.VALUE_KIND).to_numpy(zero_copy_only=False))
    retract = (kinds == kv.UPDATE_BEFORE) | (kinds == kv.DELETE)
    deleted = np.zeros(groups.count, dtype=bool)
    restart = np.zeros(groups.count, dtype=bool)
    begin = groups.starts
    if settings.remove_record_on_delete:
        last_delete = pick(kinds == kv.DELETE, groups, last=True)
        restart = last_delete >= 0
        begin = np.where(restart, last_delete, groups.starts)
        deleted = kinds[groups.lasts] == kv.DELETE
    lasts = groups.lasts
    system = set(layout.key_columns) | {kv.SEQUENCE_NUMBER, kv.VALUE_KIND}
    if settings.engine == AGGREGATION:
        merged = _aggregation(
            rows, settings, groups, retract=retract, restarts=(begin, restart), system=system
        )
        sequence = lasts
    else:
        merged, sequence, deleted = partial_update.merge(
            rows,
            settings,
            groups,
            kinds=kinds,
            system=system,
            primary_keys=set(layout.schema.primary_keys),
        )
    firsts = rows.take(pa.array(groups.starts))
    single_mask = pa.array(single)
    out = []
    for name in rows.column_names:
        if name in layout.key_columns:
            out.append(column(firsts.column(name)))
            continue
        if name == kv.SEQUENCE_NUMBER:
            value = rows.column(name).take(pa.array(sequence))
        elif name == kv.VALUE_KIND:
            value = pa.array(np.where(deleted, kv.DELETE, kv.INSERT).astype(np.int8))
        else:
            value = merged[name]
        out.append(pc.if_else(single_mask, column(firsts.column(name)), column(value)))
    return pa.Table.from_arrays(out, schema=rows.schema)


def _segment(groups: Groups, begin: np.ndarray) -> tuple[np.ndarray, Groups]:
    """The rows of each group from ``begin`` on, and their groups."""
    active = np.arange(len(groups.group_of)) >= begin[groups.group_of]
    rows = np.flatnonzero(active)
    counts = np.bincount(groups.group_of[rows], minlength=groups.count)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return rows, Groups(starts, counts, groups.group_of[rows])


def _aggregation(
    rows: pa.Table,
    settings: MergeSettings,
    groups: Groups,
    *,
    retract: np.ndarray,
    restarts: tuple[np.ndarray, np.ndarray],
    system: set[str],
) -> dict[str, pa.Array]:
    functions = dict(settings.functions)
    begin, restart = restarts
    segment, seg_groups = _segment(groups, begin)
    # The delete a fold restarts from is its first input, not a retraction.
    seg_retract = retract[segment].copy()
    seg_retract[seg_groups.starts] &= ~restart
    picked = pa.array(segment)
    merged = {}
    for name in rows.column_names:
        if name in system:
            continue
        function = functions.get(name)
        if function is None:
            raise UnsupportedFeatureError(
                f"column {name!r} has no aggregate function in the table's current schema",
                feature="merge-engine",
            )
        values = column(rows.column(name)).take(picked)
        merged[name] = aggregate(name, function, values, seg_retract, seg_groups)
    return merged


def _partial_update(
    rows: pa.Table, layout: KeyValueLayout, settings: MergeSettings, *, every_key: bool
) -> pa.Table:
    """``combine`` for partial-update without sequence groups: each column is taken
    once from ``rows`` as they come, at each key's row (its last non-null insert, or the
    key's only row as it is), rather than the whole table first put in merge order."""
    kinds = np.asarray(rows.column(kv.VALUE_KIND).to_numpy(zero_copy_only=False))
    retract = (kinds == kv.UPDATE_BEFORE) | (kinds == kv.DELETE)
    newest = None if retract.any() else _newest_first(rows, layout, settings)
    if newest is not None:
        return _newest_first_update(rows, layout, newest, every_key=every_key)
    order = merge_order(rows, layout.key_columns, settings.sequence_field)
    n = len(order)
    groups = Groups.of(np.flatnonzero(_starts_in_order(rows, layout.key_columns, order)), n)
    single = (groups.sizes == 1) & (not every_key)
    if single.all():
        return rows.take(pa.array(order))
    kinds, retract = kinds[order], retract[order]
    if (
        not settings.remove_record_on_delete
        and retract.any()
        and (retract & (groups.sizes > 1)[groups.group_of]).any()
    ):
        raise InvalidInputDataError(
            "a partial-update table holds a delete (-U or -D row) for a key with other rows: "
            "Paimon refuses deletes here unless 'ignore-delete' or "
            "'partial-update.remove-record-on-delete' is 'true', and so does shoal"
        )
    updates = ~retract
    deleted = np.zeros(groups.count, dtype=bool)
    if settings.remove_record_on_delete:
        # A -D row starts an empty row: only the rows after a key's last -D count.
        last_delete = pick(kinds == kv.DELETE, groups, last=True)
        begin = np.where(last_delete >= 0, last_delete, groups.starts)
        updates &= np.arange(n) >= begin[groups.group_of]
        deleted = kinds[groups.lasts] == kv.DELETE
    lasts = groups.lasts
    last_update = pick(updates, groups, last=True)
    sequence = np.where(last_update >= 0, last_update, lasts)
    # A key's only row stays as it is; a removed key keeps its delete row's own values
    # (never read again: a later row starts an empty row, and readers drop the key).
    fixed = single | deleted
    fixed_at = np.where(single, groups.starts, lasts)
    out = []
    for name in rows.column_names:
        values = column(rows.column(name))
        if name in layout.key_columns:
            at = groups.starts
        elif name == kv.SEQUENCE_NUMBER:
            at = np.where(single, groups.starts, sequence)
        elif name == kv.VALUE_KIND:
            merged = np.where(deleted, kv.DELETE, kv.INSERT).astype(np.int8)
            out.append(pa.array(np.where(single, kinds[groups.starts], merged), pa.int8()))
            continue
        else:
            valid = updates
            if values.null_count:
                present = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
                valid = updates & present[order]
            at = np.where(fixed, fixed_at, pick(valid, groups, last=True))
        missing = at < 0
        picked = order[np.where(missing, 0, at)]
        out.append(values.take(pa.array(picked, mask=missing if missing.any() else None)))
    return pa.Table.from_arrays(out, schema=rows.schema)


def _newest_first(
    rows: pa.Table, layout: KeyValueLayout, settings: MergeSettings
) -> tuple[np.ndarray, Groups] | None:
    """For rows that come as sorted runs newest run first (as the merge hands them
    over) of one numeric key and no ``sequence.field``: the stable order by key, in
    which each key's rows fall in sequence, and the keys; None otherwise."""
    if settings.sequence_field is not None or len(layout.key_columns) != 1:
        return None
    key = as_numbers(rows.column(layout.key_columns[0]))
    sequence = as_numbers(rows.column(kv.SEQUENCE_NUMBER))
    if key is None or sequence is None:
        return None
    order = stable_order(key)
    sorted_key, seq = key[order], sequence[order]
    same = sorted_key[1:] == sorted_key[:-1]
    if not bool(np.all(seq[1:][same] < seq[:-1][same])):
        return None
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    return order, Groups.of(starts, len(order))


def _newest_first_update(
    rows: pa.Table, layout: KeyValueLayout, newest: tuple[np.ndarray, Groups], *, every_key: bool
) -> pa.Table:
    """partial-update of insert rows in newest-first order: each column's first non-null
    value of a key is its last in sequence; the merged row carries the newest row's
    sequence number (a key's only row stays as it is, as in ``_partial_update``)."""
    order, groups = newest
    single = (groups.sizes == 1) & (not every_key)
    out = []
    for name in rows.column_names:
        values = column(rows.column(name))
        if name == kv.VALUE_KIND:
            kinds = np.asarray(values.to_numpy(zero_copy_only=False))[order[groups.starts]]
            out.append(pa.array(np.where(single, kinds, kv.INSERT).astype(np.int8), pa.int8()))
            continue
        at = groups.starts
        if values.null_count and name not in layout.key_columns:
            present = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), bool)
            at = np.where(single, groups.starts, pick(present[order], groups, last=False))
        missing = at < 0
        picked = order[np.where(missing, 0, at)]
        out.append(values.take(pa.array(picked, mask=missing if missing.any() else None)))
    return pa.Table.from_arrays(out, schema=rows.schema)


def _starts_in_order(rows: pa.Table, keys: list[str], order: np.ndarray) -> np.ndarray:
    """True at the first row of each key, for ``rows`` taken in ``order``."""
    numbers = [as_numbers(rows.column(k)) for k in keys]
    arrays = [a for a in numbers if a is not None]
    if len(arrays) == len(keys):
        starts = np.zeros(len(order), dtype=bool)
        if len(order):
            starts[0] = True
        for a in arrays:
            ordered = a[order]
            starts[1:] |= ordered[1:] != ordered[:-1]
        return starts
    return group_starts(rows.select(keys).take(pa.array(order)), keys)


def retractable(settings: MergeSettings, *, updates_before: bool = True) -> str | None:
    """Why a write of retractions (deletes, and -U rows when ``updates_before``) into
    a table with ``settings`` would make it unmergeable, or None when the engine takes
    them."""
    if settings.ignore_delete:
        return None
    if settings.engine == AGGREGATION and settings.remove_record_on_delete and not updates_before:
        return None  # a -D row removes the key and reaches no aggregate function
    if settings.engine == AGGREGATION:
        refusing = [
            name
            for name, f in settings.functions
            if not f.ignore_retract and f.function not in RETRACTABLE
        ]
        if refusing:
            return (
                f"the aggregate functions of columns {refusing} take no retractions; set "
                "'fields.<column>.ignore-retract' = 'true' for them, or 'ignore-delete'"
            )
        return None
    if settings.engine == kv.PARTIAL_UPDATE and settings.sequence_groups:
        # Columns in no group ignore retractions; a group's columns retract them.
        members = {m for g in settings.sequence_groups for m in g.members}
        refusing = [
            name
            for name, f in settings.functions
            if name in members
            and not f.ignore_retract
            and f.function not in partial_update.RETRACTING
        ]
        if refusing:
            return (
                f"the aggregate functions of columns {refusing} take no retractions; set "
                "'fields.<column>.ignore-retract' = 'true' for them, or 'ignore-delete'"
            )
        return None
    if settings.engine == kv.PARTIAL_UPDATE and not settings.remove_record_on_delete:
        return (
            "a partial-update table takes deletes only with 'ignore-delete' or "
            "'partial-update.remove-record-on-delete' set to 'true' (as Paimon)"
        )
    return None
