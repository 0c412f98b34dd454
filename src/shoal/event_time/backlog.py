"""The compaction backlog of a primary-key table, carried in every snapshot.

Each shoal commit on a primary-key table records, in the snapshot's ``properties``,
the backlog of the snapshot it publishes, so that ``Table.freshness()`` reads one
snapshot file instead of every manifest:

- ``shoal.backlog.snapshot-id``: the id of the snapshot the counters describe. A
  snapshot whose properties carry counters of another id (copied forward by some
  other writer) is treated as carrying none;
- ``shoal.backlog.basis``: what the counters depend on besides the files: the top
  level, the event-time column and the schema id. Counters of another basis (after
  ``num-levels`` or ``compaction.event-time.field`` changed) are not used;
- ``shoal.backlog.uncompacted-files``, ``shoal.backlog.uncompacted-bytes``,
  ``shoal.backlog.buckets-with-uncompacted-files``,
  ``shoal.backlog.min-uncompacted-event-time`` (empty: none): the totals;
- ``shoal.backlog.by-bucket``: one record per (partition, bucket) holding files below
  the top level ([partition bytes in hex, bucket, count, bytes, minimum event time]),
  as zlib-compressed JSON in base64. Its size follows the number of such buckets,
  not the number of files.

A commit updates the per-bucket records from its own ADD and DELETE entries. A
bucket leaves the set when its last file below the top level is deleted. When a
DELETE removes a file that may have held a bucket's minimum event time, no ADD of the
same commit reaches that minimum again and the bucket keeps other files below the
top level, that bucket's minimum is recomputed from the live files of its partition
only (a bounded scan of the manifests that may hold that partition). When the
previous snapshot carries no usable counters (written by another Paimon writer, or
by a shoal before this), the commit reads the whole table once and the counters are
exact again from then on.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from shoal.core.plan import live_entries
from shoal.core.store import FileStore
from shoal.event_time.bounds import EventTimeBounds
from shoal.event_time.watermark import Bounds
from shoal.format import manifest as M
from shoal.format.manifest import ManifestEntry
from shoal.format.snapshot import Snapshot

PREFIX = "shoal.backlog."
SNAPSHOT_ID = "shoal.backlog.snapshot-id"
BASIS = "shoal.backlog.basis"
FILES = "shoal.backlog.uncompacted-files"
BYTES = "shoal.backlog.uncompacted-bytes"
BUCKETS = "shoal.backlog.buckets-with-uncompacted-files"
MIN_EVENT_TIME = "shoal.backlog.min-uncompacted-event-time"
BY_BUCKET = "shoal.backlog.by-bucket"

BucketKey = tuple[bytes, int]


class BucketState(NamedTuple):
    """The files of one bucket below the top level: how many, their bytes and the
    smallest event time among them (None: none has event-time bounds). A tuple: a
    commit decodes one per bucket of the table's backlog."""

    file_count: int
    size_in_bytes: int
    min_event_time: int | None


@dataclass(frozen=True, slots=True)
class Backlog:
    """The backlog of one snapshot: every bucket holding files below the top level."""

    buckets: dict[BucketKey, BucketState]

    @property
    def file_count(self) -> int:
        return sum(b.file_count for b in self.buckets.values())

    @property
    def size_in_bytes(self) -> int:
        return sum(b.size_in_bytes for b in self.buckets.values())

    @property
    def min_event_time(self) -> int | None:
        lows = [b.min_event_time for b in self.buckets.values() if b.min_event_time is not None]
        return min(lows) if lows else None


@dataclass(frozen=True, slots=True)
class Totals:
    """The totals a snapshot recorded: what ``freshness()`` reports."""

    file_count: int
    size_in_bytes: int
    bucket_count: int
    min_event_time: int | None


def basis(store: FileStore) -> str:
    """What the counters depend on besides the files, as recorded beside them."""
    event_time = ",".join(store.event_time_columns)
    return f"top={store.max_level};event-time={event_time};schema={store.schema.id}"


def bounds_of(store: FileStore) -> Bounds | None:
    """The event-time bounds of a file, when the table has an event-time column."""
    return EventTimeBounds(store).of if store.event_time_columns else None


def scan(entries: Iterable[ManifestEntry], bounds: Bounds | None, top: int) -> Backlog:
    """The backlog of a set of live (ADD) entries, computed from scratch."""
    acc: dict[BucketKey, BucketState] = {}
    for entry in entries:
        file = entry.file
        if file.level == top:
            continue
        key = (entry.partition, entry.bucket)
        b = bounds(file) if bounds is not None else None
        acc[key] = _plus(acc.get(key), file.file_size, b[0] if b is not None else None)
    return Backlog(acc)


def _plus(state: BucketState | None, size: int, low: int | None) -> BucketState:
    if state is None:
        return BucketState(1, size, low)
    least = state.min_event_time
    if low is not None and (least is None or low < least):
        least = low
    return BucketState(state.file_count + 1, state.size_in_bytes + size, least)


def advance(
    previous: Backlog, entries: Sequence[ManifestEntry], bounds: Bounds | None, top: int
) -> tuple[Backlog, set[BucketKey]] | None:
    """The backlog after a commit of ``entries``, and the buckets whose minimum event
    time only their live files can tell; None when the entries do not fit the previous
    backlog (a DELETE of a file below the top level in a bucket holding fewer)."""
    counts: dict[BucketKey, list[int]] = {}
    add_low: dict[BucketKey, int] = {}
    lost: set[BucketKey] = set()
    for entry in entries:
        file = entry.file
        if file.level == top:
            continue
        key = (entry.partition, entry.bucket)
        delta = counts.setdefault(key, [0, 0])
        b = bounds(file) if bounds is not None else None
        if entry.kind == M.KIND_ADD:
            delta[0] += 1
            delta[1] += file.file_size
            if b is not None and (key not in add_low or b[0] < add_low[key]):
                add_low[key] = b[0]
        else:
            delta[0] -= 1
            delta[1] -= file.file_size
            if b is not None:
                old = previous.buckets.get(key)
                least = old.min_event_time if old is not None else None
                if least is None or b[0] <= least:
                    lost.add(key)
    buckets = dict(previous.buckets)
    unknown: set[BucketKey] = set()
    for key, (count_delta, size_delta) in counts.items():
        old = buckets.pop(key, None)
        count = (old.file_count if old is not None else 0) + count_delta
        size = (old.size_in_bytes if old is not None else 0) + size_delta
        if count < 0 or size < 0:
            return None
        if count == 0:
            continue  # its last file below the top level is gone
        least = old.min_event_time if old is not None else None
        low = add_low.get(key)
        if key in lost:
            # The files left have a minimum at or above the old one: an added file at
            # or below it is the new minimum, whatever was deleted.
            if low is not None and least is not None and low <= least:
                least = low
            else:
                unknown.add(key)
        elif low is not None and (least is None or low < least):
            least = low
        buckets[key] = BucketState(count, size, least)
    return Backlog(buckets), unknown


def backlog_after(
    store: FileStore, latest: Snapshot | None, entries: Sequence[ManifestEntry]
) -> Backlog:
    """The backlog once ``entries`` are committed on top of ``latest``."""
    top, bounds = store.max_level, bounds_of(store)
    if latest is None:
        return scan((e for e in entries if e.kind == M.KIND_ADD), bounds, top)
    previous = recorded(store, latest)
    if previous is not None:
        advanced = advance(previous, entries, bounds, top)
        if advanced is not None:
            backlog, unknown = advanced
            if unknown:
                backlog = _rescan(store, latest, entries, backlog, unknown)
            return backlog
    merged = M.merge_entries([*live_entries(store, latest), *entries])
    return scan((e for e in merged if e.kind == M.KIND_ADD), bounds, top)


def _rescan(
    store: FileStore,
    latest: Snapshot,
    entries: Sequence[ManifestEntry],
    backlog: Backlog,
    unknown: set[BucketKey],
) -> Backlog:
    """``backlog`` with the buckets of ``unknown`` recomputed from the live files of
    their partitions after the commit."""
    partitions = {p for p, _ in unknown}
    live = live_entries(store, latest, partitions=partitions)
    mine = [e for e in entries if e.partition in partitions]
    merged = M.merge_entries([*live, *mine])
    fresh = scan(
        (e for e in merged if e.kind == M.KIND_ADD and (e.partition, e.bucket) in unknown),
        bounds_of(store),
        store.max_level,
    )
    buckets = {k: v for k, v in backlog.buckets.items() if k not in unknown}
    buckets.update(fresh.buckets)
    return Backlog(buckets)


def to_properties(backlog: Backlog, snapshot_id: int, store: FileStore) -> dict[str, str]:
    """The snapshot properties that record ``backlog`` for snapshot ``snapshot_id``."""
    records = [[p.hex(), b, *state] for (p, b), state in backlog.buckets.items()]
    packed = zlib.compress(json.dumps(records, separators=(",", ":")).encode(), 1)
    low = backlog.min_event_time
    return {
        SNAPSHOT_ID: str(snapshot_id),
        BASIS: basis(store),
        FILES: str(backlog.file_count),
        BYTES: str(backlog.size_in_bytes),
        BUCKETS: str(len(backlog.buckets)),
        MIN_EVENT_TIME: "" if low is None else str(low),
        BY_BUCKET: base64.b64encode(packed).decode(),
    }


def _usable(store: FileStore, snapshot: Snapshot) -> Mapping[str, str] | None:
    """The snapshot's properties when they hold counters for it on this basis."""
    properties = snapshot.properties or {}
    if properties.get(SNAPSHOT_ID) != str(snapshot.id) or properties.get(BASIS) != basis(store):
        return None
    return properties


def recorded_totals(store: FileStore, snapshot: Snapshot) -> Totals | None:
    """The totals ``snapshot`` recorded; None when it recorded none usable."""
    properties = _usable(store, snapshot)
    if properties is None:
        return None
    try:
        low = properties[MIN_EVENT_TIME]
        return Totals(
            int(properties[FILES]),
            int(properties[BYTES]),
            int(properties[BUCKETS]),
            None if low == "" else int(low),
        )
    except (KeyError, ValueError):
        return None


def recorded(store: FileStore, snapshot: Snapshot) -> Backlog | None:
    """The per-bucket backlog ``snapshot`` recorded; None when it recorded none usable."""
    properties = _usable(store, snapshot)
    if properties is None or BY_BUCKET not in properties:
        return None
    try:
        records = json.loads(zlib.decompress(base64.b64decode(properties[BY_BUCKET])))
        buckets = {(bytes.fromhex(p), b): BucketState(n, s, low) for p, b, n, s, low in records}
    except (ValueError, TypeError, zlib.error):
        return None
    if not all(_well_formed(key, state) for key, state in buckets.items()):
        return None
    return Backlog(buckets)


def _well_formed(key: BucketKey, state: BucketState) -> bool:
    """A decoded record holds integers, a positive count and no negative size."""
    n, size, low = state
    return (
        type(key[1]) is int
        and type(n) is int
        and type(size) is int
        and (low is None or type(low) is int)
        and n > 0
        and size >= 0
    )


def with_backlog(
    store: FileStore,
    latest: Snapshot | None,
    backlog: Backlog,
    properties: Mapping[str, str] | None,
) -> dict[str, str]:
    """``properties`` plus ``backlog``, that of the snapshot committed on top of
    ``latest`` (``backlog_after``)."""
    merged = {k: v for k, v in (properties or {}).items() if not k.startswith(PREFIX)}
    merged.update(to_properties(backlog, latest.id + 1 if latest is not None else 1, store))
    return merged
