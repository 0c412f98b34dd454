"""Automatic tags and tag retention, run after commits.

With ``tag.automatic-creation``, every finished period gets a tag on the last snapshot
committed before it ended, named after the period (``2026-11-01`` for a day,
``2026-11-01 13`` for an hour). Snapshots are walked in order from the one after the
newest automatic tag; a snapshot's time is its commit time in local time
(``process-time``) or its watermark (``watermark``, UTC). A snapshot whose time,
less ``tag.creation-delay``, has reached the end of the period after the last tag
creates the tag of the period before its own. Past ``tag.num-retained-max`` the
oldest automatic tags go; only names that parse as periods count as automatic.

Tags whose ``tagCreateTime + tagTimeRetained`` has passed are deleted (with their
files, by the neighbour rule of ``shoal.cleanup.tags``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from shoal import options as O
from shoal.cleanup.tags import delete_tag
from shoal.core.store import FileStore
from shoal.errors import TagAlreadyExistsError
from shoal.format.snapshot import Snapshot

logger = logging.getLogger(__name__)

_PERIODS = {
    "daily": timedelta(days=1),
    "hourly": timedelta(hours=1),
    "two-hours": timedelta(hours=2),
}
_FORMATS = {
    ("daily", "with_dashes"): "%Y-%m-%d",
    ("daily", "without_dashes"): "%Y%m%d",
    ("daily", "without_dashes_and_spaces"): "%Y%m%d",
    ("hourly", "with_dashes"): "%Y-%m-%d %H",
    ("hourly", "without_dashes"): "%Y%m%d %H",
    ("hourly", "without_dashes_and_spaces"): "%Y%m%d%H",
}


@dataclass(frozen=True, slots=True)
class PeriodHandler:
    period: timedelta
    name_format: str

    @staticmethod
    def of(store: FileStore) -> PeriodHandler:
        period = store.options.get(O.TAG_CREATION_PERIOD)
        formatter = store.options.get(O.TAG_PERIOD_FORMATTER)
        kind = "daily" if period == "daily" else "hourly"
        return PeriodHandler(_PERIODS[period], _FORMATS[(kind, formatter)])

    def floor(self, time: datetime) -> datetime:
        midnight = time.replace(hour=0, minute=0, second=0, microsecond=0)
        steps = (time - midnight) // self.period
        return midnight + steps * self.period

    def previous_period(self, time: datetime) -> datetime:
        return self.floor(time) - self.period

    def name(self, period_start: datetime) -> str:
        return period_start.strftime(self.name_format)

    def parse(self, name: str) -> datetime | None:
        try:
            parsed = datetime.strptime(name, self.name_format)
        except ValueError:
            return None
        return parsed if self.name(parsed) == name else None


def _snapshot_time(snapshot: Snapshot, mode: str) -> datetime | None:
    if mode == "watermark":
        if snapshot.watermark is None or snapshot.watermark < 0:
            return None
        return datetime.fromtimestamp(snapshot.watermark / 1000, tz=UTC).replace(tzinfo=None)
    return datetime.fromtimestamp(snapshot.time_millis / 1000)


def create_automatic_tags(store: FileStore) -> list[str]:
    """Create the tags of every period finished since the newest automatic tag."""
    mode = store.options.get(O.TAG_AUTOMATIC_CREATION)
    if mode == "none":
        return []
    handler = PeriodHandler.of(store)
    delay = store.options.get(O.TAG_CREATION_DELAY)
    tags = store.tags
    automatic = sorted(
        (when, tag, snapshot)
        for tag, snapshot in tags.tags()
        if (when := handler.parse(tag.name)) is not None
    )
    next_tag: datetime | None = None
    start = store.snapshots.earliest_id()
    if automatic:
        last_time, _, last_snapshot = automatic[-1]
        next_tag = last_time + handler.period
        start = last_snapshot.id + 1
    latest = store.snapshots.latest_id()
    if start is None or latest is None:
        return []
    created = []
    retained = store.options.get(O.TAG_DEFAULT_TIME_RETAINED)
    for snapshot_id in range(start, latest + 1):
        snapshot = store.snapshots.find(snapshot_id)
        if snapshot is None:
            continue
        time = _snapshot_time(snapshot, mode)
        if time is None:
            continue
        if next_tag is None or time - delay >= next_tag + handler.period:
            period_start = handler.previous_period(time)
            name = handler.name(period_start)
            try:
                tags.create(name, snapshot, time_retained=retained, automatic=True)
                created.append(name)
            except TagAlreadyExistsError:
                pass
            next_tag = period_start + handler.period
    if created:
        _retain_max(store, handler)
    return created


def _retain_max(store: FileStore, handler: PeriodHandler) -> None:
    limit = store.options.get(O.TAG_NUM_RETAINED_MAX)
    if limit <= 0:
        return
    tags = store.tags
    automatic = sorted(
        (when, tag.name) for tag, _ in tags.tags() if (when := handler.parse(tag.name))
    )
    for _, name in automatic[: max(0, len(automatic) - limit)]:
        delete_tag(store, name)


def expire_tags(store: FileStore, now: datetime | None = None) -> list[str]:
    """Delete the tags whose retention has passed; returns their names."""
    now = now or datetime.now()
    expired = []
    for tag, _ in store.tags.tags():
        if tag.time_retained is None or tag.create_time is None:
            continue
        if tag.create_time + tag.time_retained < now:
            delete_tag(store, tag.name)
            expired.append(tag.name)
    if expired:
        logger.info("expired tags %s", expired)
    return expired
