"""Structured Streaming reads of a shoal table: ``spark.readStream.format("shoal")``.

Offsets are snapshot ids: ``{"snapshot": N}`` says every commit up to and including
snapshot N has been emitted. A start that reads a snapshot's full data first (Paimon's
``latest-full`` and ``from-snapshot-full``) begins at ``{"snapshot": N, "full": S}``
(with ``"tag"`` when the data is a tag's): the full data of snapshot S is still to
come, then the commits after N. The end offset of the batch that reads it keeps that
start under ``"began"``, so the batch is planned from its end offset alone, as Spark
logs it, and plans the same after a restart.

Where the query starts (``startingOffsets``, Paimon's streaming startup modes):

- ``latest-full`` (the default, as Paimon's): the full table at the latest snapshot,
  then every later commit;
- ``latest``: only what is committed after the query starts;
- ``earliest``: the full table at the earliest snapshot still there, then every later
  commit (Paimon's ``from-snapshot-full`` at that snapshot);
- ``N`` (a snapshot id): the commits from snapshot N on, N's own included (Paimon's
  ``from-snapshot``; an N below the earliest snapshot starts at the earliest, as
  Paimon starts);
- ``tag:<name>``: the tag's full data, then the commits after its snapshot;
- ``timestamp:<time>`` (ISO 8601 with its offset, or epoch milliseconds): the commits
  made at or after that time (Paimon's ``from-timestamp``).

With a ``consumer-id`` whose consumer exists (and ``consumer.ignore-progress`` not
true), a new query starts at the consumer's next snapshot instead, as Paimon's does; a
query restarted from its checkpoint starts where the checkpoint says.

What a batch reads of the commits in its range, as Paimon's follow-up scans read them:
an append table, the files that APPEND commits added; a primary-key table with a
changelog producer, the changelog files of its snapshots (long-lived changelogs
included); a primary-key table without one, every row of the files that APPEND commits
added, unmerged, each with its row kind (Paimon's streaming delta: a key written twice
in the range comes twice). Without ``audit_log`` the retractions (``-U``, ``-D``) are
left out; with it every row comes with its kind. Compactions and overwrites add no
rows. The full data of a snapshot is read as Paimon's first streaming plan reads it:
merged by key on a primary-key table, and of a table whose compactions look keys up
(``changelog-producer`` = ``lookup``, deletion vectors, ``first-row``) only the files
above level 0, of a ``full-compaction`` changelog table only the top level; a table
with deletion vectors and no changelog producer then reads the full snapshot's own
delta again (Paimon's ``DELETION_VECTOR_ONLY`` start).

Admission control: ``maxFilesPerTrigger`` and ``maxBytesPerTrigger`` bound the files a
batch reads (each snapshot whole, at least one snapshot that adds files per batch);
``trigger(availableNow=True)`` reads up to the latest snapshot at the query's start.

A snapshot that expires before the query reads it fails the query with
SnapshotNotFoundError naming it and ``consumer-id``: a query with a consumer id records
its next snapshot when it starts and as Spark commits each batch's offsets, and
expiration keeps every snapshot at or after it. Spark commits a batch's source offsets
when the next batch starts, so the consumer of a stopped query may still name the
first snapshot of its last batch: a new query under the id reads that batch again; a
query restarted from its checkpoint starts where the checkpoint says.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from shoal import options as O
from shoal.core import deletion_vectors as DVS
from shoal.core import filter_text
from shoal.core import predicate as P
from shoal.core.kv import FIRST_ROW
from shoal.core.plan import DataSplit, live_entries, make_splits, restrict
from shoal.core.store import FileStore
from shoal.errors import InvalidOptionError, SnapshotNotFoundError, UnsupportedFeatureError
from shoal.format.manifest import ManifestEntry
from shoal.format.snapshot import Snapshot
from shoal.read.incremental import ROW_KIND, changelog_entries, delta_entries, resolve_mode
from shoal.spark import source_options as S
from shoal.spark.read import FILES, MERGED, ShoalPartition, ShoalReader, pack_splits, table_columns
from shoal.spark.source_options import SourceOptions, open_store

logger = logging.getLogger(__name__)

StartKind = Literal["latest-full", "latest", "earliest", "snapshot", "tag", "timestamp"]
_KEYWORDS: tuple[StartKind, ...] = ("latest-full", "latest", "earliest")
_FORMS = (
    "'latest-full' (the default), 'latest', 'earliest', a snapshot id, 'tag:<name>', or "
    "'timestamp:<ISO 8601 time with its offset, or epoch milliseconds>'"
)


@dataclass(frozen=True, slots=True)
class StreamSettings:
    """What the streaming options of one query ask for."""

    start: StartKind = "latest-full"
    snapshot_id: int | None = None
    tag: str | None = None
    timestamp_ms: int | None = None
    max_files: int | None = None
    max_bytes: int | None = None
    consumer_id: str | None = None
    ignore_progress: bool = False


def stream_settings(options: SourceOptions, table_options: dict[str, str]) -> StreamSettings:
    """The streaming options of ``options``; ``consumer-id`` and
    ``consumer.ignore-progress`` default to the table's.

    Raises:
        InvalidOptionError: a value that does not parse, or a batch read's option
            (time travel, ``incremental-between``, ``read-optimized``).
    """
    options.require_use(S.STREAM_READ)
    raw = dict(options.stream)
    start: StartKind = "latest-full"
    snapshot_id = tag = timestamp_ms = None
    text = (raw.get(S.STARTING_OFFSETS) or "").strip()
    if text:
        start, snapshot_id, tag, timestamp_ms = _starting_offsets(text)
    consumer = (raw.get(S.CONSUMER_ID) or "").strip() or table_options.get(S.CONSUMER_ID) or None
    ignore = raw.get(S.CONSUMER_IGNORE_PROGRESS, table_options.get(S.CONSUMER_IGNORE_PROGRESS))
    return StreamSettings(
        start=start,
        snapshot_id=snapshot_id,
        tag=tag,
        timestamp_ms=timestamp_ms,
        max_files=_positive(raw, S.MAX_FILES_PER_TRIGGER, int, "maxFilesPerTrigger"),
        max_bytes=_positive(
            raw, S.MAX_BYTES_PER_TRIGGER, O.parse_memory_size, "maxBytesPerTrigger"
        ),
        consumer_id=consumer,
        ignore_progress=_flag(ignore),
    )


def _starting_offsets(
    text: str,
) -> tuple[StartKind, int | None, str | None, int | None]:
    lowered = text.lower()
    for keyword in _KEYWORDS:
        if lowered == keyword:
            return keyword, None, None, None
    if text.isdigit():
        if int(text) < 1:
            raise InvalidOptionError("startingOffsets", text, "snapshot ids start at 1")
        return "snapshot", int(text), None, None
    head, colon, rest = text.partition(":")
    rest = rest.strip()
    if colon and head.strip().lower() == "tag" and rest:
        return "tag", None, rest, None
    if colon and head.strip().lower() == "timestamp" and rest:
        if rest.isdigit():
            return "timestamp", None, None, int(rest)
        try:
            instant = datetime.fromisoformat(rest)
        except ValueError:
            instant = None
        if instant is not None and instant.tzinfo is not None:
            return "timestamp", None, None, int(instant.timestamp() * 1000)
        raise InvalidOptionError(
            "startingOffsets",
            text,
            "a timestamp is epoch milliseconds or an ISO 8601 time with its offset, e.g. "
            "'timestamp:2026-11-01T08:00:00Z' (Spark's session time zone is not visible "
            "to a Python data source)",
        )
    raise InvalidOptionError("startingOffsets", text, f"expected {_FORMS}")


def _positive(raw: dict[str, str], key: str, parse: Any, spelled: str) -> int | None:
    text = (raw.get(key) or "").strip()
    if not text:
        return None
    try:
        value = int(parse(text))
    except ValueError as exc:
        raise InvalidOptionError(spelled, text, str(exc)) from None
    if value < 1:
        raise InvalidOptionError(spelled, text, "must be at least 1")
    return value


def _flag(text: str | None) -> bool:
    if text is None or not text.strip():
        return False
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise InvalidOptionError(S.CONSUMER_IGNORE_PROGRESS, text, "expected 'true' or 'false'")
    return lowered == "true"


# --- what the table's streaming reads read --------------------------------------------------------
def changelog_mode(store: FileStore) -> bool:
    """Whether the commits of a range are read from changelog files (a primary-key
    table with a changelog producer) rather than the files APPEND commits added."""
    return store.is_primary_key and resolve_mode(store, "auto") == "changelog"


def _lookup_strategy(store: FileStore) -> tuple[bool, bool]:
    """Paimon's ``LookupStrategy`` of the table: (needs lookup, produces a changelog)."""
    raw = store.schema.options
    producer = O.CHANGELOG_PRODUCER.get(raw)
    vectors = DVS.enabled(raw)
    first_row = store.is_primary_key and store.merge_settings.engine == FIRST_ROW
    force = raw.get("force-lookup", "").strip().lower() == "true"
    produce = producer == "lookup"
    return produce or vectors or first_row or force, produce


def _rereads_full_delta(store: FileStore) -> bool:
    """A table with deletion vectors and no lookup changelog: after the full data of
    snapshot S Paimon reads S's own delta again (the level-0 rows its first plan left
    out)."""
    _, produce = _lookup_strategy(store)
    return store.is_primary_key and DVS.enabled(store.schema.options) and not produce


def full_splits(store: FileStore, snapshot: Snapshot, dnf: P.Dnf | None) -> list[DataSplit]:
    """The splits of a snapshot's full data as Paimon's first streaming plan reads them
    (module docstring): the batch scan's, less the levels that plan leaves out."""
    merging = DVS.merges(store, read_optimized=False)
    prune = restrict(dnf, set(store.schema.primary_keys)) if merging else dnf
    entries = live_entries(store, snapshot, prune, target=store.schema)
    if store.is_primary_key:
        need_lookup, _ = _lookup_strategy(store)
        if need_lookup:
            entries = [e for e in entries if e.file.level > 0]
        elif O.CHANGELOG_PRODUCER.get(store.schema.options) == "full-compaction":
            entries = [e for e in entries if e.file.level == store.max_level]
    return make_splits(
        store,
        snapshot.id,
        entries,
        whole_buckets=merging,
        deletions=DVS.deletion_files(store, snapshot),
    )


def expired(store: FileStore, snapshot_id: int) -> SnapshotNotFoundError:
    return SnapshotNotFoundError(
        f"snapshot {snapshot_id} of table {store.uri!r} expired before this streaming query "
        "read it, so its commits cannot be read any more. Give the query a consumer-id "
        "(.option('consumer-id', '<name>'), or the table option): expiration then keeps "
        "every snapshot the query has not read. Start the query again with a new "
        "checkpoint and a startingOffsets that is still there",
        snapshot_id=snapshot_id,
    )


def range_entries(store: FileStore, start: int, end: int) -> list[ManifestEntry]:
    """The files a stream reads for the commits of snapshots ``(start, end]``, in commit
    order. Raises SnapshotNotFoundError (naming ``consumer-id``) when one has expired."""
    try:
        if changelog_mode(store):
            return changelog_entries(store, start, end)
        return delta_entries(store, start, end)
    except SnapshotNotFoundError as exc:
        raise expired(store, exc.snapshot_id or start + 1) from None


# --- the reader -------------------------------------------------------------------------------
class ShoalStreamReader(ShoalReader, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Spark's stream reader of one query. ``initialOffset``, ``latestOffset``,
    ``partitions`` and ``commit`` run in one long-lived Python process of the driver;
    ``read`` (the batch reader's) in the tasks, from a pickled copy."""

    def __init__(
        self, options: SourceOptions, schema: StructType, parallelism: int | None = None
    ) -> None:
        store = open_store(options.path, options.storage_options)
        self._store: FileStore | None = store
        self._options = options
        self._settings = stream_settings(options, dict(store.schema.options))
        self._schema = schema
        self._parallelism = parallelism or os.cpu_count() or 1
        self._snapshot = None
        self._table_schema = store.schema
        self._mode = MERGED if DVS.merges(store, read_optimized=False) else FILES
        self._key_value = store.is_primary_key and self._mode == FILES
        if not store.is_primary_key and DVS.enabled(store.schema.options):
            raise UnsupportedFeatureError(
                f"table {store.uri!r} is an append table with deletion vectors, whose "
                "commits Paimon 0.9 and 1.0 stream differently; shoal does not stream it",
                feature="streaming reads of append tables with deletion vectors",
            )
        names = [n for n in schema.fieldNames() if not (options.audit_log and n == ROW_KIND)]
        self._columns = table_columns(names, store.schema, "the read schema")
        self._dnf: P.Dnf | None = None
        if options.filter is not None:
            types = {f.name: f.type for f in store.schema.fields}
            raw = filter_text.parse(options.filter, store.schema.arrow_schema())
            self._dnf = P.parse_filter(raw, types)
        if (
            options.audit_log
            and store.is_primary_key
            and self._settings.start
            in (
                "latest-full",
                "earliest",
                "tag",
            )
        ):
            raise UnsupportedFeatureError(
                f"the audit_log stream of primary-key table {store.uri!r} starts with full "
                f"data (startingOffsets {self._settings.start!r}), whose merged rows' kinds "
                "shoal does not read; start it at 'latest', a snapshot id or a timestamp",
                feature="audit_log",
            )
        self._target: int | None = None  # trigger(availableNow=True): the last snapshot
        self._weights: dict[object, tuple[int, int]] = {}  # files and bytes, by unit

    def __getstate__(self) -> dict[str, object]:
        state = super().__getstate__()
        state["_weights"] = {}
        return state

    # --- offsets -----------------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        store = self._open()
        offset = self._starting_offset(store)
        consumer = self._settings.consumer_id
        if consumer is not None:
            first = min(offset["snapshot"] + 1, offset.get("full", offset["snapshot"] + 1))
            store.consumers.record(consumer, max(first, 1))
        logger.info("stream of %s starts at %s", store.uri, json.dumps(offset))
        return offset

    def _starting_offset(self, store: FileStore) -> dict[str, Any]:
        settings = self._settings
        snapshots = store.snapshots
        if settings.consumer_id is not None and not settings.ignore_progress:
            next_snapshot = store.consumers.next_snapshot(settings.consumer_id)
            if next_snapshot is not None:
                return {"snapshot": self._at_least_earliest(store, next_snapshot) - 1}
        start = settings.start
        if start == "latest":
            return {"snapshot": snapshots.latest_id() or 0}
        if start in ("latest-full", "earliest"):
            found = snapshots.latest_id() if start == "latest-full" else snapshots.earliest_id()
            return {"snapshot": 0} if found is None else self._full(store, found)
        if start == "snapshot":
            assert settings.snapshot_id is not None
            return {"snapshot": self._at_least_earliest(store, settings.snapshot_id) - 1}
        if start == "tag":
            assert settings.tag is not None
            tagged = store.tags.get(settings.tag)[1]
            return {**self._full(store, tagged.id), "tag": settings.tag}
        assert settings.timestamp_ms is not None
        before = snapshots.earlier_or_equal_time_millis(settings.timestamp_ms - 1)
        if before is not None:
            return {"snapshot": before.id}
        return {"snapshot": max((snapshots.earliest_id() or 1) - 1, 0)}

    @staticmethod
    def _at_least_earliest(store: FileStore, snapshot_id: int) -> int:
        earliest = store.snapshots.earliest_id()
        if changelog_mode(store):
            kept = store.changelogs.list_ids()
            if kept:
                earliest = kept[0] if earliest is None else min(earliest, kept[0])
        return snapshot_id if earliest is None else max(snapshot_id, earliest)

    @staticmethod
    def _full(store: FileStore, snapshot_id: int) -> dict[str, Any]:
        last = snapshot_id - 1 if _rereads_full_delta(store) else snapshot_id
        return {"snapshot": last, "full": snapshot_id}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self._settings.max_files is not None:
            return ReadMaxFiles(self._settings.max_files)
        if self._settings.max_bytes is not None:
            return ReadMaxBytes(self._settings.max_bytes)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._open().snapshots.latest_id() or 0

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        store = self._open()
        begin = int(start["snapshot"])
        full = "full" in start
        cap = self._target if self._target is not None else store.snapshots.latest_id() or 0
        if cap <= begin and not full:
            return start
        end = max(begin, cap)
        if not isinstance(limit, ReadAllAvailable) and self._limited:
            end = self._admitted(store, start, begin, cap)
        elif cap > begin:
            range_entries(store, begin, begin + 1)  # fails now if the next one expired
        offset: dict[str, Any] = {"snapshot": end}
        if full:
            offset["began"] = dict(start)
        return offset

    @property
    def _limited(self) -> bool:
        return self._settings.max_files is not None or self._settings.max_bytes is not None

    def _admitted(self, store: FileStore, start: dict[str, Any], begin: int, cap: int) -> int:
        """The last snapshot of the batch that begins after ``start``: the snapshots
        whose files stay within the limits, at least one that adds files."""
        files = size = 0
        some = False
        if "full" in start:
            files, size = self._weight(store, ("full", start["full"], start.get("tag")))
            some = True
        end = begin
        for snapshot_id in range(begin + 1, cap + 1):
            more, more_size = self._weight(store, snapshot_id)
            if some and more and self._over(files + more, size + more_size):
                break
            files, size, end = files + more, size + more_size, snapshot_id
            some = some or more > 0
        return end

    def _over(self, files: int, size: int) -> bool:
        settings = self._settings
        return (settings.max_files is not None and files > settings.max_files) or (
            settings.max_bytes is not None and size > settings.max_bytes
        )

    def _weight(self, store: FileStore, unit: object) -> tuple[int, int]:
        """Files and bytes of a snapshot's commit, or of a full read, cached: they never
        change."""
        cached = self._weights.get(unit)
        if cached is None:
            if isinstance(unit, int):
                entries = range_entries(store, unit - 1, unit)
                cached = (len(entries), sum(e.file.file_size for e in entries))
            else:
                splits = self._full_splits(store, unit)  # type: ignore[arg-type]
                cached = (sum(len(s.files) for s in splits), sum(s.size_in_bytes for s in splits))
            self._weights[unit] = cached
        return cached

    def _full_splits(self, store: FileStore, unit: tuple[str, int, str | None]) -> list[DataSplit]:
        _, snapshot_id, tag = unit
        try:
            snapshot = store.tags.get(tag)[1] if tag else store.snapshots.snapshot(snapshot_id)
        except SnapshotNotFoundError:
            raise expired(store, snapshot_id) from None
        return full_splits(store, snapshot, self._dnf)

    def commit(self, end: dict[str, Any]) -> None:
        consumer = self._settings.consumer_id
        if consumer is not None:
            self._open().consumers.record(consumer, max(int(end["snapshot"]) + 1, 1))

    # --- planning ----------------------------------------------------------------------------
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:  # type: ignore[override]
        store = self._open()
        began = end.get("began")
        parts: list[InputPartition] = []
        if began is not None:
            unit = ("full", int(began["full"]), began.get("tag"))
            splits = self._full_splits(store, unit)
            parts.extend(self._packed(store, splits, divisible=self._mode == FILES))
            low = int(began["snapshot"])
        else:
            low = int(start["snapshot"])
        high = int(end["snapshot"])
        if high > low:
            entries = range_entries(store, low, high)
            if store.is_primary_key:
                groups = _by_bucket(entries)
                for pack in _pack_groups(groups, self._parallelism):
                    parts.append(ShoalPartition(0, changelog=tuple(pack)))
            elif entries:
                splits = make_splits(store, high, entries)
                parts.extend(self._packed(store, splits, divisible=True))
        for index, part in enumerate(parts):
            part.value = index
        return parts

    def _packed(
        self, store: FileStore, splits: Sequence[DataSplit], *, divisible: bool
    ) -> list[ShoalPartition]:
        target = self._options.split_target_size or store.options.get(O.SPLIT_TARGET_SIZE)
        open_cost = self._options.split_open_file_cost or store.options.get(O.SPLIT_OPEN_FILE_COST)
        packs = pack_splits(
            splits, target, open_cost, divisible=divisible, parallelism=self._parallelism
        )
        return [ShoalPartition(0, tuple(p)) for p in packs]


def _by_bucket(entries: Sequence[ManifestEntry]) -> list[list[ManifestEntry]]:
    """The entries of each bucket, in commit order: a task reads a bucket's rows in
    the order they were committed."""
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for entry in entries:
        groups.setdefault((entry.partition, entry.bucket), []).append(entry)
    return list(groups.values())


def _pack_groups(groups: list[list[ManifestEntry]], parallelism: int) -> list[list[ManifestEntry]]:
    """Buckets' files in at most ``parallelism`` packs of about equal bytes, each bucket
    whole (its rows in commit order), as few as the files allow."""
    if not groups:
        return []
    count = max(1, min(parallelism, len(groups)))
    weights = [sum(e.file.file_size for e in g) + 1 for g in groups]
    share = sum(weights) / count
    packs: list[list[ManifestEntry]] = [[] for _ in range(count)]
    position = 0
    for group, weight in zip(groups, weights, strict=True):
        packs[min(int((position + weight / 2) / share), count - 1)].extend(group)
        position += weight
    return [p for p in packs if p]


__all__ = ["ShoalStreamReader", "StreamSettings", "full_splits", "stream_settings"]
