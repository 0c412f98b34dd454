"""Read-optimized freshness and the compaction backlog of a primary-key table.

The watermark comes from the snapshot's ``shoal.read-optimized-watermark`` property
(recomputed from the live files when the snapshot lacks it, e.g. one written by
another Paimon writer); the metrics follow the event-time compaction proposal: the
minimum event time of the files still below the top level, how many buckets hold
such files, their count and their total size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shoal.core.plan import live_entries
from shoal.core.store import FileStore
from shoal.event_time.backlog import Totals, recorded_totals, scan
from shoal.event_time.bounds import EventTimeBounds
from shoal.event_time.watermark import (
    Bounds,
    state_from_properties,
    state_of,
    watermark_of,
)
from shoal.format.manifest import ManifestEntry
from shoal.format.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class Freshness:
    """How fresh the read-optimized view of one snapshot is, and what compaction owes.

    ``watermark_ms``: every row with an event time below it (epoch milliseconds) is in
    the read-optimized view; None for a table without an event-time column or with no
    data. ``min_uncompacted_event_time_ms``: the smallest event time in a file below
    the top level (None when there is none, or no event-time column). The counts cover
    the files below the top level and the (partition, bucket) pairs holding them.
    """

    watermark_ms: int | None
    min_uncompacted_event_time_ms: int | None
    buckets_with_uncompacted_files: int
    uncompacted_file_count: int
    uncompacted_bytes: int


def freshness(store: FileStore, snapshot: Snapshot | None) -> Freshness:
    """The freshness of ``snapshot`` (None: a table with no commit yet). An append
    table has no levels, so nothing in it waits for compaction.

    Reads only the snapshot when it carries the backlog counters (every snapshot a
    shoal commit publishes, see ``event_time.backlog``); otherwise (a snapshot of
    another Paimon writer) the counts come from a scan of its live files."""
    if snapshot is None or not store.is_primary_key:
        return Freshness(None, None, 0, 0, 0)
    has_event_time = bool(store.event_time_columns)
    bounds = EventTimeBounds(store).of if has_event_time else None
    totals = recorded_totals(store, snapshot)
    scanned: list[ManifestEntry] = []

    def entries() -> list[ManifestEntry]:
        if not scanned:
            scanned.extend(live_entries(store, snapshot))
        return scanned

    if totals is None:
        backlog = scan(entries(), bounds, store.max_level)
        totals = Totals(
            backlog.file_count, backlog.size_in_bytes, len(backlog.buckets), backlog.min_event_time
        )
    return Freshness(
        watermark_ms=_watermark(store, snapshot, entries, bounds) if bounds else None,
        min_uncompacted_event_time_ms=totals.min_event_time,
        buckets_with_uncompacted_files=totals.bucket_count,
        uncompacted_file_count=totals.file_count,
        uncompacted_bytes=totals.size_in_bytes,
    )


def _watermark(
    store: FileStore,
    snapshot: Snapshot,
    entries: Callable[[], list[ManifestEntry]],
    bounds: Bounds,
) -> int | None:
    """The watermark ``snapshot`` recorded, or the one its live files give."""
    recorded = watermark_of(snapshot.properties)
    if recorded is not None:
        return recorded
    state = state_from_properties(snapshot.properties)  # recorded: no data, no watermark
    if state is None:
        state = state_of((e.file for e in entries()), bounds, store.max_level)
    return state.watermark
