"""The read-optimized freshness watermark, kept in every snapshot's ``properties``.

The watermark W of a primary-key table with an event-time column is the minimum
event time over the live files below the top level; with no such file, the maximum
event time of the live data plus one; with no data, it is absent. Every row whose
event time is below W is in the read-optimized view (the top level). Files with no
event-time bounds (only nulls, such as key-only deletes) are ignored.

Each commit keeps two more properties beside it, so that the next commit updates
the watermark from its own ADD and DELETE entries instead of reading the table:

- ``shoal.uncompacted-min-event-time``: the minimum event time of the files below
  the top level;
- ``shoal.max-event-time``: the maximum event time of all live files.

An empty value means "no such file". The state is recomputed from the live files
only when a DELETE removes a file that may have held the previous minimum or
maximum (and no ADD of the same commit replaces it), or when the previous snapshot
does not carry the properties (a table written earlier, or by another writer). The
minimum needs no live files when the commit's compaction backlog (``backlog``) gives
it: the backlog's minimum event time is this one, per bucket.
All values are epoch milliseconds as decimal strings: Paimon's readers take the
properties as a plain string map and ignore keys they do not know.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from shoal.core.plan import live_entries
from shoal.core.store import FileStore
from shoal.event_time.bounds import EventTimeBounds
from shoal.format import manifest as M
from shoal.format.data_file import DataFileMeta
from shoal.format.manifest import ManifestEntry
from shoal.format.snapshot import Snapshot

WATERMARK = "shoal.read-optimized-watermark"
UNCOMPACTED_MIN = "shoal.uncompacted-min-event-time"
MAX_EVENT_TIME = "shoal.max-event-time"

Bounds = Callable[[DataFileMeta], "tuple[int, int] | None"]


@dataclass(frozen=True, slots=True)
class EventTimeState:
    """What the watermark follows from: the minimum event time of the files below the
    top level and the maximum of all live files (None: no file with bounds)."""

    uncompacted_min: int | None
    max: int | None

    @property
    def watermark(self) -> int | None:
        """The read-optimized freshness watermark in epoch milliseconds."""
        if self.uncompacted_min is not None:
            return self.uncompacted_min
        return None if self.max is None else self.max + 1

    def to_properties(self) -> dict[str, str]:
        """The snapshot properties that record this state (and the watermark)."""
        out = {
            UNCOMPACTED_MIN: _format(self.uncompacted_min),
            MAX_EVENT_TIME: _format(self.max),
        }
        watermark = self.watermark
        if watermark is not None:
            out[WATERMARK] = str(watermark)
        return out


def _format(value: int | None) -> str:
    """A property value: the decimal digits, or empty for "no such file"."""
    return "" if value is None else str(value)


def _parse(text: str) -> int | None:
    """An optional integer property value; ValueError when it is not one."""
    return None if text == "" else int(text)


def state_from_properties(properties: Mapping[str, str] | None) -> EventTimeState | None:
    """The state a snapshot recorded; None when it recorded none (or a malformed one)."""
    if not properties or UNCOMPACTED_MIN not in properties or MAX_EVENT_TIME not in properties:
        return None
    try:
        return EventTimeState(
            _parse(properties[UNCOMPACTED_MIN]), _parse(properties[MAX_EVENT_TIME])
        )
    except ValueError:
        return None


def watermark_of(properties: Mapping[str, str] | None) -> int | None:
    """The watermark a snapshot's properties hold; None when absent or malformed."""
    text = (properties or {}).get(WATERMARK)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def state_of(files: Iterable[DataFileMeta], bounds: Bounds, top_level: int) -> EventTimeState:
    """The state of a set of live files, computed from scratch."""
    low: int | None = None
    high: int | None = None
    for file in files:
        b = bounds(file)
        if b is None:
            continue
        if file.level != top_level:
            low = b[0] if low is None else min(low, b[0])
        high = b[1] if high is None else max(high, b[1])
    return EventTimeState(low, high)


class _Unknown:
    """The type of UNKNOWN: no minimum known from elsewhere."""


UNKNOWN = _Unknown()


def advance(
    state: EventTimeState,
    entries: Sequence[ManifestEntry],
    bounds: Bounds,
    top_level: int,
    uncompacted_min: int | _Unknown | None = UNKNOWN,
) -> EventTimeState | None:
    """The state after a commit of ``entries``; None when only the live files can tell
    (a DELETE removed a file that may have held the minimum or the maximum, and no ADD
    reaches it again). ``uncompacted_min``: the minimum after the commit when already
    known (from the compaction backlog the commit carries), so that only the maximum
    may need the live files."""
    adds = state_of((e.file for e in entries if e.kind == M.KIND_ADD), bounds, top_level)
    lost_min = lost_max = False
    for entry in entries:
        if entry.kind != M.KIND_DELETE:
            continue
        b = bounds(entry.file)
        if b is None:
            continue
        if entry.file.level != top_level and _at_or_below(b[0], state.uncompacted_min):
            lost_min = True
        if _at_or_below(state.max, b[1]):
            lost_max = True
    # The files left have a minimum at or above the old one: an added file at or below
    # it is the new minimum, whatever was deleted (and likewise for the maximum).
    if lost_max and not _known_le(state.max, adds.max):
        return None
    if not isinstance(uncompacted_min, _Unknown):
        return EventTimeState(uncompacted_min, _max(state.max, adds.max))
    if lost_min and not _known_le(adds.uncompacted_min, state.uncompacted_min):
        return None
    return EventTimeState(
        _min(state.uncompacted_min, adds.uncompacted_min), _max(state.max, adds.max)
    )


def _at_or_below(low: int | None, high: int | None) -> bool:
    """``low <= high``, where a missing value on either side counts as true (a deleted
    file with bounds while the state has none means the state cannot be trusted)."""
    return low is None or high is None or low <= high


def _known_le(low: int | None, high: int | None) -> bool:
    """``low <= high`` with both known."""
    return low is not None and high is not None and low <= high


def _min(a: int | None, b: int | None) -> int | None:
    """The smaller of two optional values (None when both are)."""
    return b if a is None else a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    """The larger of two optional values (None when both are)."""
    return b if a is None else a if b is None else max(a, b)


def state_after(
    store: FileStore,
    latest: Snapshot | None,
    entries: Sequence[ManifestEntry],
    bounds: Bounds,
    uncompacted_min: int | _Unknown | None = UNKNOWN,
) -> EventTimeState:
    """The state once ``entries`` are committed on top of ``latest``: from the state
    ``latest`` recorded when it can, otherwise from the live files."""
    top = store.max_level
    if latest is None:
        return state_of((e.file for e in entries if e.kind == M.KIND_ADD), bounds, top)
    previous = state_from_properties(latest.properties)
    if previous is not None:
        advanced = advance(previous, entries, bounds, top, uncompacted_min)
        if advanced is not None:
            return advanced
    merged = M.merge_entries([*live_entries(store, latest), *entries])
    return state_of((e.file for e in merged if e.kind == M.KIND_ADD), bounds, top)


def with_watermark(
    store: FileStore,
    latest: Snapshot | None,
    entries: Sequence[ManifestEntry],
    properties: Mapping[str, str] | None,
    uncompacted_min: int | _Unknown | None = UNKNOWN,
) -> dict[str, str] | None:
    """``properties`` plus the freshness state of the snapshot that commits ``entries``
    on top of ``latest``; unchanged for a table without an event-time column.
    ``uncompacted_min``: the minimum event time below the top level after the commit,
    when the commit's backlog already tells it."""
    if not store.event_time_columns or not store.is_primary_key:
        return dict(properties) if properties else None
    state = state_after(store, latest, entries, EventTimeBounds(store).of, uncompacted_min)
    merged = {k: v for k, v in (properties or {}).items() if k != WATERMARK}
    merged.update(state.to_properties())
    return merged


@dataclass(frozen=True, slots=True)
class BucketBacklog:
    """The files of one bucket below the top level, waiting for compaction."""

    partition: bytes
    bucket: int
    min_event_time: int | None
    file_count: int
    size_in_bytes: int


def backlog_by_bucket(
    entries: Iterable[ManifestEntry], bounds: Bounds | None, top_level: int | None
) -> list[BucketBacklog]:
    """One backlog per bucket that has live files (zero when all are at the top level),
    in the order the buckets first appear. ``bounds`` None: no event time;
    ``top_level`` None: an append table, whose files are never compacted."""
    acc: dict[tuple[bytes, int], tuple[int | None, int, int]] = {}
    for entry in entries:
        key = (entry.partition, entry.bucket)
        low, count, size = acc.get(key, (None, 0, 0))
        file = entry.file
        if top_level is not None and file.level != top_level:
            b = bounds(file) if bounds is not None else None
            low = _min(low, b[0] if b is not None else None)
            count, size = count + 1, size + file.file_size
        acc[key] = (low, count, size)
    return [BucketBacklog(p, b, *values) for (p, b), values in acc.items()]
