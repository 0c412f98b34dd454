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
from shoal.primary_key.aggregates import Groups, aggregate, column, pick, take
from shoal.primary_key.ordering import as_numbers, group_starts


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
    order = np.argsort(key, kind="stable")
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
        rows = rows.filter(pc.invert(kv.is_retract(rows.column(kv.VALUE_KIND))))
    if rows.num_rows < (1 if every_key else 2):
        return rows
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
    elif settings.sequence_groups:
        merged, sequence, deleted = partial_update.merge(
            rows,
            settings,
            groups,
            kinds=kinds,
            system=system,
            primary_keys=set(layout.schema.primary_keys),
        )
    else:
        merged, sequence = _partial_update(
            rows, settings, groups, kinds=kinds, retract=retract, begin=begin, system=system
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
    rows: pa.Table,
    settings: MergeSettings,
    groups: Groups,
    *,
    kinds: np.ndarray,
    retract: np.ndarray,
    begin: np.ndarray,
    system: set[str],
) -> tuple[dict[str, pa.Array], np.ndarray]:
    multi = (groups.sizes > 1)[groups.group_of]
    if not settings.remove_record_on_delete and (retract & multi).any():
        raise InvalidInputDataError(
            "a partial-update table holds a delete (-U or -D row) for a key with other rows: "
            "Paimon refuses deletes here unless 'ignore-delete' or "
            "'partial-update.remove-record-on-delete' is 'true', and so does shoal"
        )
    after = np.arange(len(kinds)) >= begin[groups.group_of]
    updates = after & ~retract
    last_update = pick(updates, groups, last=True)
    sequence = np.where(last_update >= 0, last_update, groups.lasts)
    deleted = kinds[groups.lasts] == kv.DELETE if settings.remove_record_on_delete else None
    merged = {}
    for name in rows.column_names:
        if name in system:
            continue
        values = column(rows.column(name))
        valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        at = pick(updates & valid, groups, last=True)
        if deleted is not None:
            # A removed key keeps the delete row's own values (never read again: a
            # later row starts an empty row, and readers drop the key).
            at = np.where(deleted, groups.lasts, at)
        merged[name] = take(values, at)
    return merged, sequence


def retractable(settings: MergeSettings) -> str | None:
    """Why a write of retractions (deletes, -U rows) into a table with ``settings``
    would make it unmergeable, or None when the engine takes them."""
    if settings.ignore_delete:
        return None
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
        refusing = [
            name
            for name, f in settings.functions
            if not f.ignore_retract and f.function not in partial_update.RETRACTING
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
