"""Event time: the column ``compaction.event-time.field`` names, as epoch milliseconds.

Values of the column and thresholds are compared as epoch milliseconds: a naive
timestamp or datetime is read as UTC, a DATE as its midnight in UTC, a BIGINT as
milliseconds already. A data file's event-time bounds come from its value
statistics, without reading the file (writers always collect statistics for this
column, whatever ``metadata.stats-mode`` says).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from shoal import options as O
from shoal.core.store import FileStore
from shoal.errors import InvalidArgumentError, InvalidOptionError
from shoal.format import binary_row
from shoal.format import types as T
from shoal.format.data_file import DataFileMeta
from shoal.format.schema import TableSchema

EVENT_TIME_TYPES = (T.TIMESTAMP, T.TIMESTAMP_LTZ, T.DATE, T.BIGINT)
# The bounds of a file whose event times are not known: earlier and later than any.
UNKNOWN = (-(2**62), 2**62)
# The place of the event-time column in the statistics of a file written before it existed.
ABSENT = -2
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def check_event_time_field(
    fields: Sequence[T.DataField], primary_keys: Sequence[str], options: Mapping[str, str]
) -> None:
    """Raise InvalidOptionError unless the event-time option names a column of an
    event-time type (checked when a table is created)."""
    name = O.COMPACTION_EVENT_TIME_FIELD.get(options)
    if not name:
        return
    key = O.COMPACTION_EVENT_TIME_FIELD.key
    if not primary_keys:
        raise InvalidOptionError(key, name, "event-time compaction needs a primary-key table")
    found = [f for f in fields if f.name == name]
    if not found:
        columns = [f.name for f in fields]
        raise InvalidOptionError(key, name, f"no such column; the table has {columns}")
    field_type = found[0].type
    if not isinstance(field_type, T.AtomicType) or field_type.root not in EVENT_TIME_TYPES:
        described = T.type_to_json(field_type)  # Paimon's SQL spelling, e.g. STRING
        if isinstance(described, dict):
            described = described["type"]
        raise InvalidOptionError(
            key,
            name,
            f"the column is {described}; use a TIMESTAMP, TIMESTAMP_LTZ, DATE "
            "or BIGINT (epoch milliseconds) column",
        )


def to_millis(value: Any) -> int:
    """Epoch milliseconds of an event-time value (naive datetimes are UTC)."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return (aware - _EPOCH) // _MILLISECOND
    if isinstance(value, date):
        return (value - date(1970, 1, 1)).days * 86_400_000
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise InvalidArgumentError(
        f"an event time must be a datetime, a date or epoch milliseconds, not {value!r}"
    )


class EventTimeBounds:
    """The event-time bounds of a table's data files, read from their statistics."""

    def __init__(self, store: FileStore) -> None:
        self._store = store
        self.field = store.options.get(O.COMPACTION_EVENT_TIME_FIELD)
        # Files are matched to the column by field id: it may have had another name
        # (or not existed) when a file was written.
        self._field_id = store.schema.field(self.field).id if self.field else None
        self._layouts: dict[tuple[int, tuple[str, ...] | None], tuple[list[T.DataType], int]] = {}

    def of(self, file: DataFileMeta) -> tuple[int, int] | None:
        """``(min, max)`` event time of the file in epoch milliseconds; None when the
        file holds no event time (only nulls, e.g. key-only deletes).

        A file without statistics for the column (a writer that keeps none) gets
        ``UNKNOWN``: the widest bounds, so event-time compaction always selects it and
        it holds the freshness watermark down until it is compacted."""
        types, index = self._layout(file)
        if index == ABSENT:
            return None  # written before the column was added: only nulls there
        stats = file.value_stats
        counts = stats.null_counts
        nulls = counts[index] if counts is not None and 0 <= index < len(counts) else None
        if nulls is None:
            return UNKNOWN
        if nulls >= file.row_count:
            return None
        low = binary_row.deserialize(stats.min_values, types)[index]
        high = binary_row.deserialize(stats.max_values, types)[index]
        if low is None or high is None:
            return UNKNOWN
        return to_millis(low), to_millis(high)

    def _layout(self, file: DataFileMeta) -> tuple[list[T.DataType], int]:
        """The types of the file's statistics row and the event-time column's place in
        it: -1 when the file keeps no statistics for it, ``ABSENT`` when the file's
        schema has no such column."""
        cols = file.value_stats_cols
        cache_key = (file.schema_id, cols)
        cached = self._layouts.get(cache_key)
        if cached is not None:
            return cached
        schema: TableSchema = self._store.schema_of(file.schema_id)
        names = list(cols) if cols is not None else [f.name for f in schema.fields]
        by_name = {f.name: f.type for f in schema.fields}
        # A column the schema no longer has keeps its slot; its value is never used.
        types = [by_name.get(n, T.AtomicType(T.BIGINT)) for n in names]
        source = next((f.name for f in schema.fields if f.id == self._field_id), None)
        if source is None:
            index = ABSENT
        else:
            index = names.index(source) if source in names else -1
        self._layouts[cache_key] = (types, index)
        return types, index


_MILLISECOND = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - _EPOCH
