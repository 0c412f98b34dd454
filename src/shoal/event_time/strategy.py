"""Event-time compaction: compact only the files whose data is older than a threshold.

Per bucket, the files below the top level whose minimum event time is at or below
the threshold (and the files with no event time, such as key-only deletes) are
merged with the bucket's top-level files into new top-level files. The other files
stay live under their own names: the manifest says which files a bucket has, so
nothing is copied or linked. The selection need not be a prefix of the write order,
because every row carries its sequence number and the merge orders versions by it.

With ``compaction.event-time.exact-split`` the merged rows at or above the threshold
go back to level 0 (keeping their sequence numbers), so the read-optimized view, the
top level, holds exactly the rows below the threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from shoal import options as O
from shoal.core.store import FileStore
from shoal.errors import InvalidOptionError
from shoal.event_time.bounds import EventTimeBounds, to_millis
from shoal.format.data_file import DataFileMeta
from shoal.primary_key.runs import CompactUnit, EventTimeSplit, SortedRun

Bounds = Callable[[DataFileMeta], "tuple[int, int] | None"]


@dataclass(frozen=True, slots=True)
class EventTimeCompaction:
    """Pick the non-top-level files whose event time starts at or below ``threshold_ms``."""

    bounds: Bounds
    threshold_ms: int
    split: EventTimeSplit | None = None

    def pick(self, runs: Sequence[SortedRun], max_level: int) -> CompactUnit | None:
        files = [f for run in runs for f in run.files]
        selected = [f for f in files if f.level != max_level and self._eligible(f)]
        if not selected:
            return None
        top = [f for f in files if f.level == max_level]
        return CompactUnit(max_level, tuple(selected + top), self.split)

    def _eligible(self, file: DataFileMeta) -> bool:
        bounds = self.bounds(file)
        return bounds is None or bounds[0] <= self.threshold_ms


def event_time_compaction(
    store: FileStore, threshold: datetime | int | None = None, *, now: datetime | None = None
) -> EventTimeCompaction:
    """The strategy for ``store``; ``threshold`` (a datetime, naive meaning UTC, or
    epoch milliseconds) defaults to now minus ``compaction.event-time.data-latency``.
    Raises InvalidOptionError when the table has no event-time field."""
    field = store.options.get(O.COMPACTION_EVENT_TIME_FIELD)
    if not field:
        raise InvalidOptionError(
            O.COMPACTION_EVENT_TIME_FIELD.key,
            "",
            "event-time compaction needs the table's event-time column; set this option "
            "(a TIMESTAMP, TIMESTAMP_LTZ, DATE or BIGINT column)",
        )
    if threshold is None:
        latency = store.options.get(O.COMPACTION_EVENT_TIME_DATA_LATENCY)
        latency_ms = int(latency.total_seconds() * 1000)
        threshold_ms = to_millis(now or datetime.now().astimezone()) - latency_ms
    else:
        threshold_ms = to_millis(threshold)
    exact = store.options.get(O.COMPACTION_EVENT_TIME_EXACT_SPLIT)
    split = EventTimeSplit(field, threshold_ms) if exact else None
    return EventTimeCompaction(EventTimeBounds(store).of, threshold_ms, split)
