"""Partition expiration: drop the partitions older than ``partition.expiration-time``.

A partition's age comes from its values (``values-time``, the default: see
:mod:`shoal.core.partition_time`) or from the creation time of its newest live data
file (``update-time``). The expired partitions, at most
``partition.expiration-max-num`` of them in the order of their values, are dropped
in one OVERWRITE commit of DELETE entries, exactly as ``Table.drop_partitions``
drops them: no file is removed here. Their files go later, when snapshot expiration
finds that no retained snapshot or tag uses them, so time travel to an earlier
snapshot still reads the dropped partitions.

Partitions whose age cannot be told (null values, values that do not parse, files
without a creation time) are logged and kept: an expiration that guesses would
drop data for good.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from shoal import options as O
from shoal.core.partition_time import (
    UPDATE_TIME,
    PartitionTimeExtractor,
    is_expired,
    local_naive,
)
from shoal.core.plan import live_entries
from shoal.core.store import FileStore
from shoal.errors import CommitConflictError, CorruptMetadataError, InvalidArgumentError
from shoal.format.data_file import DataFileMeta
from shoal.format.snapshot import Snapshot
from shoal.options import parse_duration
from shoal.write.commit import CommitRequest, FileStoreCommit

logger = logging.getLogger(__name__)

# How many partitions a warning about unreadable partition times names at most.
_NAMED_IN_WARNING = 10


def expire_partitions(
    store: FileStore,
    committer: FileStoreCommit,
    *,
    expiration_time: timedelta | str | None = None,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """Drop the partitions older than ``expiration_time`` in one OVERWRITE commit.

    ``expiration_time`` is a timedelta or a duration such as ``"30 d"``; None reads
    the option ``partition.expiration-time``. ``now`` (default: the current local
    time; a naive value is local time) is the clock the age is measured against.
    Returns the dropped partitions as dicts of partition key to value, in the order
    of their values; nothing expired means no commit and an empty list.

    Raises:
        InvalidArgumentError: the table is not partitioned, or no expiration time is
            given (neither the argument nor the option) or it is not a duration.
        InvalidOptionError: the timestamp pattern or formatter options are invalid.
    """
    if not store.schema.partition_keys:
        raise InvalidArgumentError(
            f"table {store.uri!r} is not partitioned; partition expiration needs partition keys"
        )
    cutoff = local_naive(now or datetime.now()) - _expiration_time(store, expiration_time)
    for attempt in range(3):
        latest = store.snapshots.latest()
        if latest is None:
            return []
        try:
            expired = _expired(store, latest, cutoff)
            break
        except CorruptMetadataError:
            # The latest snapshot expired while it was read: a newer one is there.
            if not store.snapshots.superseded(latest.id) or attempt == 2:
                raise
    if not expired:
        return []
    committer.commit(CommitRequest([], overwrite=frozenset(expired).__contains__))
    dropped = [store.partitions.to_dict(p) for p in expired]
    logger.info("partition expiration dropped %d partitions: %s", len(dropped), dropped)
    return dropped


def maybe_expire_partitions(
    store: FileStore, committer: FileStoreCommit, now: datetime | None = None
) -> list[dict[str, Any]]:
    """The check after a commit: expire partitions when the table asks for it and the
    last check of this open table is ``partition.expiration-check-interval`` ago.

    Does nothing when ``partition.expiration-time`` is unset or the table is not
    partitioned. The first commit of an open table checks; an interval of zero
    checks after every commit. A check counts from when it starts, so one that fails
    is not retried before the interval passes. Losing the drop to a concurrent commit
    is logged and left to the next check: the caller's own commit has already
    succeeded.
    """
    if store.options.get(O.PARTITION_EXPIRATION_TIME) is None or not store.schema.partition_keys:
        return []
    now = local_naive(now or datetime.now())
    if not _check_due(store, now):
        return []
    store.partition_expire_checked_at = now
    try:
        return expire_partitions(store, committer, now=now)
    except CommitConflictError as exc:
        logger.warning("partition expiration gave way to a concurrent commit: %s", exc)
        return []


def _check_due(store: FileStore, now: datetime) -> bool:
    """Whether the check interval has passed since this open table last checked."""
    last = store.partition_expire_checked_at
    interval = store.options.get(O.PARTITION_EXPIRATION_CHECK_INTERVAL)
    return last is None or interval <= timedelta(0) or now - last >= interval


def _expiration_time(store: FileStore, given: timedelta | str | None) -> timedelta:
    """The expiration time from the argument or, when it is None, the table option."""
    if given is None:
        given = store.options.get(O.PARTITION_EXPIRATION_TIME)
        if given is None:
            raise InvalidArgumentError(
                "no partition expiration time: pass expiration_time (e.g. '30 d') or set "
                "the table option 'partition.expiration-time'"
            )
    if isinstance(given, str):
        try:
            given = parse_duration(given)
        except ValueError as exc:
            raise InvalidArgumentError(f"expiration_time: {exc}") from None
    if not isinstance(given, timedelta) or given < timedelta(0):
        raise InvalidArgumentError(
            f"expiration_time must be a non-negative timedelta or a duration such as "
            f"'30 d', not {given!r}"
        )
    return given


def _expired(store: FileStore, snapshot: Snapshot, cutoff: datetime) -> list[bytes]:
    """The partitions of ``snapshot`` older than ``cutoff``, in the order of their
    values, at most ``partition.expiration-max-num`` of them."""
    files: dict[bytes, list[DataFileMeta]] = defaultdict(list)
    for entry in live_entries(store, snapshot):
        files[entry.partition].append(entry.file)
    if store.options.get(O.PARTITION_EXPIRATION_STRATEGY) == UPDATE_TIME:
        times = {p: _newest_creation_time(fs) for p, fs in files.items()}
    else:
        extractor = PartitionTimeExtractor.of(store.schema.partition_keys, store.options)
        times = {p: extractor.extract(store.partitions.decode(p)) for p in files}
    _warn_unknown(store, [p for p, t in times.items() if t is None])
    expired = sorted(
        (p for p, t in times.items() if is_expired(t, cutoff)), key=_value_order(store)
    )
    return expired[: store.options.get(O.PARTITION_EXPIRATION_MAX_NUM)]


def _newest_creation_time(files: list[DataFileMeta]) -> datetime | None:
    """When the partition was last written: its newest file's creation time, or None
    when a file does not record one (its age is then unknown)."""
    newest: datetime | None = None
    for f in files:
        if f.creation_time is None:
            return None
        if newest is None or f.creation_time > newest:
            newest = f.creation_time
    return newest


def _value_order(store: FileStore) -> Callable[[bytes], tuple[tuple[bool, Any], ...]]:
    """A sort key ordering partitions by their values, nulls last."""

    def key(partition: bytes) -> tuple[tuple[bool, Any], ...]:
        values = store.partitions.decode(partition)
        return tuple((v is None, v if v is not None else 0) for v in values)

    return key


def _warn_unknown(store: FileStore, partitions: list[bytes]) -> None:
    """One warning naming the partitions kept because their age cannot be told."""
    if not partitions:
        return
    strategy = store.options.get(O.PARTITION_EXPIRATION_STRATEGY)
    reason = (
        "a data file without a creation time"
        if strategy == UPDATE_TIME
        else "values that do not form a time under partition.timestamp-pattern and "
        "partition.timestamp-formatter"
    )
    named = [store.partitions.to_dict(p) for p in partitions[:_NAMED_IN_WARNING]]
    more = f" and {len(partitions) - len(named)} more" if len(partitions) > len(named) else ""
    logger.warning(
        "partition expiration keeps %d partitions with %s: %s%s",
        len(partitions),
        reason,
        named,
        more,
    )
