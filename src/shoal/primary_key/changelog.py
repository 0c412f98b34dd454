"""The changelog a compaction writes, computed per key from the rows it merges, as
Paimon's ``lookup`` and ``full-compaction`` changelog producers make it.

Each batch the merge resolves comes with each row's level (``LEVEL``). For every key
the change runs from a row *before* to the merged row *after*:

- ``lookup`` (``LookupChangelogMergeFunctionWrapper``): keys with a row in level 0
  only; *before* is the newest row of the key above level 0 (an input's, or the row
  the compaction looked up in the levels above its output);
- ``first-row`` with ``lookup`` (``FirstRowMergeFunctionWrapper``): the ``+I`` of a
  key with a level-0 row and none above level 0;
- ``full-compaction`` (``FullChangelogMergeFunctionWrapper``): every key; *before* is
  its row in the top level. A key with one row only changes when that row is new.

No *before* (or a retraction, with ``lookup``) and an *after* that adds: ``+I``; a
*before* and an *after* that retracts: ``-D`` of *before*; both adding: ``-U`` of
*before* and ``+U`` of *after*, left out with ``changelog-producer.row-deduplicate``
when their values (less ``changelog-producer.row-deduplicate-ignore-fields``) are
equal. Each changelog row keeps the sequence number of the row it copies; rows come in
key order, ``-U`` before ``+U``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal.core import kv
from shoal.core.kv import KeyValueLayout, MergeSettings
from shoal.primary_key.engines import merge_order
from shoal.primary_key.ordering import group_starts

LEVEL = "_LEVEL"
"""The column the merge adds to its rows when it needs their levels."""

Mode = Literal["lookup", "first-row", "full"]


def newest_upper(rows: pa.Table, levels: np.ndarray, settings: MergeSettings) -> np.ndarray:
    """Paimon's lookup merge: which of ``rows`` stay, each key's rows in level 0 and
    its newest row (in merge order) above level 0."""
    order = merge_order(rows, _key_columns(rows), settings.sequence_field)
    group = _group_of(rows.take(pa.array(order)))
    upper = levels[order] > 0
    newest = _last_where(upper, group)
    position = np.arange(len(order))
    keep_sorted = ~upper | (position == newest[group])
    keep = np.empty(len(order), dtype=bool)
    keep[order] = keep_sorted
    return keep


def _key_columns(rows: pa.Table) -> list[str]:
    return [c for c in rows.column_names if c.startswith(kv.KEY_PREFIX)]


def _group_of(ordered: pa.Table) -> np.ndarray:
    starts = group_starts(ordered, _key_columns(ordered))
    return np.cumsum(starts) - 1


def _last_where(mask: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Per group, the index of its last row where ``mask`` holds; -1 if none."""
    count = int(group[-1]) + 1 if len(group) else 0
    out = np.full(count, -1, dtype=np.int64)
    where = np.flatnonzero(mask)
    np.maximum.at(out, group[where], where)
    return out


def _adds(kinds: pa.ChunkedArray | pa.Array) -> np.ndarray:
    retract = kv.is_retract(kinds)
    return ~np.asarray(retract.to_numpy(zero_copy_only=False), dtype=bool)


@dataclass
class ChangelogMaker:
    """Collects the changelog of one compaction's merge, batch by batch."""

    mode: Mode
    layout: KeyValueLayout
    settings: MergeSettings
    max_level: int
    compared: tuple[str, ...] | None = None
    """The value columns row-deduplicate compares (None: no row-deduplicate)."""
    tables: list[pa.Table] = field(default_factory=list)

    def add(self, rows: pa.Table, levels: np.ndarray, result: pa.Table) -> None:
        """The changes of the keys of one resolved batch: ``rows`` (every row of them
        the merge combined, with their ``levels``) and ``result`` (each key's merged
        row, key-ordered, retractions kept)."""
        if not rows.num_rows:
            return
        order = merge_order(rows, self.layout.key_columns, self.settings.sequence_field)
        ordered = rows.take(pa.array(order))
        level = levels[order]
        group = _group_of(ordered)
        count = result.num_rows
        if int(group[-1]) + 1 != count:
            raise AssertionError("the merge's keys and the changelog's differ")
        sizes = np.bincount(group, minlength=count)
        has_level0 = np.bincount(group, weights=level == 0, minlength=count) > 0
        if self.mode == "full":
            before_at = _last_where(level == self.max_level, group)
        else:
            before_at = _last_where(level > 0, group)
        has_before = before_at >= 0
        before = ordered.take(pa.array(np.where(has_before, before_at, 0)))
        after_adds = _adds(result.column(kv.VALUE_KIND))
        if self.mode == "first-row":
            insert = has_level0 & ~has_before & after_adds
            delete = update = np.zeros(count, dtype=bool)
        else:
            if self.mode == "full":
                changed = has_before & (sizes > 1)
                base = changed
                insert = ~has_before & after_adds
            else:
                base = has_level0 & has_before & _adds(before.column(kv.VALUE_KIND))
                changed = base
                insert = has_level0 & ~base & after_adds
            delete = changed & ~after_adds
            update = changed & after_adds
            if self.compared is not None and update.any():
                update &= ~self._equal(before, result)
            del base
        self._emit(before, result, insert, delete, update)

    def _equal(self, before: pa.Table, after: pa.Table) -> np.ndarray:
        same = np.ones(after.num_rows, dtype=bool)
        for name in self.compared or ():
            a, b = before.column(name), after.column(name)
            equal = pc.fill_null(pc.equal(a, b), False)
            both_null = pc.and_(pc.is_null(a), pc.is_null(b))
            same &= np.asarray(pc.or_(equal, both_null).to_numpy(zero_copy_only=False), bool)
        return same

    def _emit(
        self,
        before: pa.Table,
        after: pa.Table,
        insert: np.ndarray,
        delete: np.ndarray,
        update: np.ndarray,
    ) -> None:
        from_before = np.flatnonzero(delete | update)
        from_after = np.flatnonzero(update | insert)
        if not len(from_before) and not len(from_after):
            return
        count = after.num_rows
        both = pa.concat_tables([before, after.cast(before.schema)])
        rank = np.concatenate([from_before * 2, from_after * 2 + 1])
        source = np.concatenate([from_before, from_after + count])
        kinds = np.concatenate(
            [
                np.where(delete[from_before], kv.DELETE, kv.UPDATE_BEFORE),
                np.where(update[from_after], kv.UPDATE_AFTER, kv.INSERT),
            ]
        ).astype(np.int8)
        order = np.argsort(rank, kind="stable")
        out = both.take(pa.array(source[order]))
        at = out.schema.get_field_index(kv.VALUE_KIND)
        out = out.set_column(at, out.schema.field(at), pa.array(kinds[order], pa.int8()))
        self.tables.append(out)


def compared_columns(
    layout: KeyValueLayout, row_deduplicate: bool, ignore_fields: str
) -> tuple[str, ...] | None:
    """The value columns row-deduplicate compares: every column but the ignored ones
    (None without row-deduplicate)."""
    if not row_deduplicate:
        return None
    ignored = {f.strip() for f in ignore_fields.split(",") if f.strip()}
    return tuple(n for n in layout.value_schema.names if n not in ignored)
