"""Column statistics of a data file, collected from the Arrow data as it is written.

``metadata.stats-mode`` picks what is kept: ``none``, ``counts`` (null counts only),
``full``, or ``truncate(N)`` (the default, N = 16): string and binary bounds cut to
N characters, the upper bound then raised by one in its last character so it still
bounds every value (and dropped if that is impossible).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from shoal.errors import InvalidOptionError
from shoal.format import parquet
from shoal.format import types as T
from shoal.format.stats import EMPTY_STATS, SimpleStats

_TRUNCATE = re.compile(r"^truncate\((\d+)\)$")
_EPOCH = datetime(1970, 1, 1)


@functools.lru_cache(maxsize=64)
def parse_stats_mode(mode: str) -> tuple[str, int | None]:
    lowered = mode.strip().lower()
    if lowered in ("none", "counts", "full"):
        return lowered, None
    match = _TRUNCATE.match(lowered)
    if match:
        return "truncate", int(match.group(1))
    raise InvalidOptionError("metadata.stats-mode", mode, "use none, counts, full or truncate(N)")


class StatsCollector:
    """Accumulates min, max and null count of columns over the batches of one file.

    ``fields`` name the columns as the file names them (``_KEY_id`` for key stats).
    """

    def __init__(
        self,
        fields: Sequence[T.DataField],
        mode: str,
        *,
        always: Sequence[str] = (),
        footer: bool = True,
    ) -> None:
        self.fields = list(fields)
        self.mode, self.truncate_to = parse_stats_mode(mode)
        # Columns whose bounds are kept whatever the mode (the event-time column): with
        # a mode that keeps no bounds, the file's statistics hold these columns only,
        # named in _VALUE_STATS_COLS.
        self._only: tuple[str, ...] | None = None
        if always and self.mode in ("none", "counts"):
            self.fields = [f for f in self.fields if f.name in always]
            self.mode, self.truncate_to = "full", None
            self._only = tuple(f.name for f in self.fields)
        n = len(self.fields)
        self._mins: list[Any] = [None] * n
        self._maxs: list[Any] = [None] * n
        self._nulls = [0] * n
        # Bounds of most columns come from the Parquet footer (``footer``), which the
        # writer fills anyway; nanosecond timestamps (whose footer values need pandas)
        # are computed from the Arrow data as it is written, and so is every bound of a
        # file of a format without such a footer (ORC, Avro), so that statistics do not
        # depend on the format.
        self._computed = [
            i
            for i, f in enumerate(self.fields)
            if isinstance(f.type, T.AtomicType)
            and (
                not footer
                or (f.type.root in (T.TIMESTAMP, T.TIMESTAMP_LTZ) and (f.type.precision or 0) > 6)
            )
        ]

    def update(self, table: pa.Table) -> None:
        if self.mode == "none":
            return
        for i, f in enumerate(self.fields):
            self._nulls[i] += table.column(f.name).null_count
        if self.mode == "counts":
            return
        for i in self._computed:
            column = table.column(self.fields[i].name)
            if column.null_count == len(column):
                continue
            root = self.fields[i].type.root  # type: ignore[union-attr]
            if root in _TIMESTAMPS:
                low, high = _timestamp_min_max(column, root == T.TIMESTAMP_LTZ)
            else:
                low, high = _min_max(column)
                if low is None:
                    continue
            self._widen(i, low, high)

    def count_nulls(self, footer: pq.FileMetaData) -> bool:
        """Take the null counts from the footer of a file written elsewhere (instead of
        :meth:`update` with its rows); False, counting nothing, when some row group
        leaves a count out."""
        if self.mode == "none":
            return True
        leaves = footer_leaves(footer)
        counts = []
        for f in self.fields:
            leaf = leaves.get(f.name)
            if leaf is None:
                return False
            total = 0
            for g in range(footer.num_row_groups):
                stats = footer.row_group(g).column(leaf).statistics
                if stats is None or not stats.has_null_count:
                    return False
                total += stats.null_count
            counts.append(total)
        self._nulls = counts
        return True

    @property
    def null_counts(self) -> list[int]:
        """The null count of each of :attr:`fields` so far."""
        return list(self._nulls)

    def _widen(self, i: int, low: Any, high: Any) -> None:
        if low is not None and (self._mins[i] is None or low < self._mins[i]):
            self._mins[i] = low
        if high is not None and (self._maxs[i] is None or high > self._maxs[i]):
            self._maxs[i] = high

    def result(
        self, footer: pq.FileMetaData | None = None
    ) -> tuple[SimpleStats, tuple[str, ...] | None]:
        """The file's value statistics and ``_VALUE_STATS_COLS`` (None: all columns).

        ``footer`` is the written file's Parquet metadata, the source of the bounds of
        every column not computed while writing; without it those bounds are unknown.
        """
        if self.mode == "none":
            return EMPTY_STATS, ()
        if self.mode != "counts" and footer is not None:
            self._read_footer(footer)
        mins, maxs = list(self._mins), list(self._maxs)
        if self.truncate_to is not None:
            for i, f in enumerate(self.fields):
                if isinstance(f.type, T.AtomicType) and f.type.root in _VARLEN:
                    mins[i] = _truncate_low(mins[i], self.truncate_to)
                    maxs[i] = _truncate_high(maxs[i], self.truncate_to)
        types = [f.type for f in self.fields]
        return SimpleStats.of(mins, maxs, self._nulls, types), self._only

    def _read_footer(self, footer: pq.FileMetaData) -> None:
        leaves = footer_leaves(footer)
        groups = [footer.row_group(g) for g in range(footer.num_row_groups)]
        for i, f in enumerate(self.fields):
            if not isinstance(f.type, T.AtomicType) or i in self._computed:
                continue
            leaf = leaves.get(f.name)
            if leaf is None:
                continue
            low, high = _footer_bounds(groups, leaf)
            if low is None and high is None:
                continue
            if isinstance(low, float) and (math.isnan(low) or math.isnan(high)):
                continue
            if isinstance(low, int) and f.type.root in _TIMESTAMPS:
                low, high = _stored_timestamps(f.type, low, high)
            self._widen(i, low, high)


def footer_leaves(footer: pq.FileMetaData) -> dict[str, int]:
    """The index of each leaf column of a Parquet footer, by its dotted path."""
    return {footer.schema.column(c).path: c for c in range(footer.num_columns)}


def _footer_bounds(groups: list[Any], leaf: int) -> tuple[Any, Any]:
    """Min and max of one column over all row groups; (None, None) when any row group
    holding values has no bounds (the writer leaves out bounds of very long values)."""
    low = high = None
    for group in groups:
        stats = group.column(leaf).statistics
        if stats is None:
            return None, None
        if not stats.has_min_max:
            if stats.null_count == group.num_rows:
                continue
            return None, None
        if low is None or stats.min < low:
            low = stats.min
        if high is None or stats.max > high:
            high = stats.max
    return low, high


_VARLEN = (T.VARCHAR, T.CHAR, T.BINARY, T.VARBINARY)
_TIMESTAMPS = (T.TIMESTAMP, T.TIMESTAMP_LTZ)


def _stored_timestamps(t: T.AtomicType, low: int, high: int) -> tuple[datetime, datetime]:
    """Footer bounds of a timestamp column stored as INT64 without annotation (beside
    INT96 columns), in the unit Paimon stores its precision in."""
    micros = 1000 if parquet.stored_unit(t.precision or 0) == "ms" else 1
    base = datetime(1970, 1, 1, tzinfo=UTC) if t.root == T.TIMESTAMP_LTZ else _EPOCH
    return base + timedelta(microseconds=low * micros), base + timedelta(microseconds=high * micros)


def _min_max(column: pa.ChunkedArray) -> tuple[Any, Any]:
    """Min and max of a column that holds a value, as the Parquet footer gives them:
    NaN left out ((None, None) when only NaN is there)."""
    bounds = pc.min_max(column)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if isinstance(low, float) and (math.isnan(low) or math.isnan(high)):
        return None, None
    return low, high


def _timestamp_min_max(column: pa.ChunkedArray, utc: bool) -> tuple[Any, Any]:
    # Exact to the microsecond: the lower bound rounds down, the upper bound up.
    unit = column.type.unit
    per_micro = {"s": None, "ms": None, "us": 1, "ns": 1000}[unit]
    raw = pc.min_max(pc.cast(column, pa.int64()))
    low, high = raw["min"].as_py(), raw["max"].as_py()
    if per_micro is None:
        scale = 1_000_000 if unit == "s" else 1000
        low_us, high_us = low * scale, high * scale
    else:
        low_us, high_us = low // per_micro, -((-high) // per_micro)
    base = datetime(1970, 1, 1, tzinfo=UTC) if utc else _EPOCH
    return base + timedelta(microseconds=low_us), base + timedelta(microseconds=high_us)


def _truncate_low(value: Any, n: int) -> Any:
    if value is None or len(value) <= n:
        return value
    return value[:n]


def _truncate_high(value: Any, n: int) -> Any:
    if value is None or len(value) <= n:
        return value
    head = value[:n]
    if isinstance(head, str):
        for i in range(len(head) - 1, -1, -1):
            code = ord(head[i])
            if code < 0x10FFFF and not 0xD7FF <= code < 0xE000:
                return head[:i] + chr(code + 1)
        return None
    for i in range(len(head) - 1, -1, -1):
        if head[i] < 0xFF:
            return head[:i] + bytes([head[i] + 1])
    return None
