"""Automatic tags per period, their retention limit, and tag expiry by retention."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import shoal
from shoal.cleanup.auto_tags import expire_tags
from shoal.write.commit import CommitRequest
from tests.conftest import EVENTS_SCHEMA, events


def _commit_at(monkeypatch: pytest.MonkeyPatch, table: shoal.Table, when: datetime, i: int
               ) -> None:
    """Append one row with the commit clock set to local time ``when``."""
    monkeypatch.setattr("shoal.write.commit.time.time", when.timestamp)
    table.append(events([i]))
    monkeypatch.undo()


def _names(table: shoal.Table) -> list[tuple[str, int]]:
    return [(t.name, t.snapshot_id) for t in shoal.open_table(table.path).list_tags()]


def test_daily_tags_follow_commit_time(catalog: shoal.Catalog,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA,
                                 options={"tag.automatic-creation": "process-time"})
    _commit_at(monkeypatch, table, datetime(2026, 11, 1, 10), 1)
    assert _names(table) == [("2026-10-31", 1)]  # the first snapshot tags the day before
    _commit_at(monkeypatch, table, datetime(2026, 11, 1, 15), 2)
    _commit_at(monkeypatch, table, datetime(2026, 11, 2, 1), 3)  # day 1 is over
    _commit_at(monkeypatch, table, datetime(2026, 11, 2, 9), 4)
    _commit_at(monkeypatch, table, datetime(2026, 11, 5, 9), 5)  # skips to the day before
    assert _names(table) == [("2026-10-31", 1), ("2026-11-01", 3), ("2026-11-04", 5)]
    assert table.to_arrow(tag="2026-11-01").num_rows == 3


def test_hourly_tags_with_delay_formatter_and_retention_limit(
    catalog: shoal.Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA, options={
        "tag.automatic-creation": "process-time", "tag.creation-period": "hourly",
        "tag.creation-delay": "10 min", "tag.period-formatter": "without_dashes_and_spaces",
        "tag.num-retained-max": "2",
    })
    _commit_at(monkeypatch, table, datetime(2026, 11, 1, 12, 12), 1)
    table.create_tag("manual")
    _commit_at(monkeypatch, table, datetime(2026, 11, 1, 13, 5), 2)   # within the delay
    _commit_at(monkeypatch, table, datetime(2026, 11, 1, 13, 15), 3)  # 12:00-13:00 is done
    _commit_at(monkeypatch, table, datetime(2026, 11, 1, 14, 30), 4)
    assert _names(table) == [("manual", 1), ("2026110112", 3), ("2026110113", 4)]


def test_tags_with_retention_expire(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA,
                                 options={"tag.default-time-retained": "1 h"})
    table.append(events([1]))
    tag = table.create_tag("short")
    assert tag.time_retained == timedelta(hours=1)
    table.create_tag("forever", time_retained=timedelta(days=365))
    assert expire_tags(table._store, now=datetime.now()) == []
    assert expire_tags(table._store, now=datetime.now() + timedelta(hours=2)) == ["short"]
    assert [t.name for t in table.list_tags()] == ["forever"]


def test_watermark_tags_follow_the_snapshots_watermark(catalog: shoal.Catalog) -> None:
    from shoal.cleanup.auto_tags import create_automatic_tags
    from shoal.write.commit import FileStoreCommit
    from shoal.write.files import AppendWriter

    table = catalog.create_table("db.t", EVENTS_SCHEMA,
                                 options={"tag.automatic-creation": "watermark"})
    store = table._store
    committer = FileStoreCommit(store)
    def millis(*parts: int) -> int:
        return int(datetime(*parts, tzinfo=UTC).timestamp() * 1000)

    for i, watermark in enumerate([None, millis(2026, 3, 1, 0, 5), millis(2026, 3, 2, 9)]):
        writer = AppendWriter(store)
        writer.write(events([i]))
        committer.commit(CommitRequest(writer.prepare_commit(), watermark=watermark))
    created = create_automatic_tags(store)
    # Snapshot 1 has no watermark; 2 tags the day before its watermark's day; 3 the next.
    assert created == ["2026-02-28", "2026-03-01"]
    assert [(t.name, t.snapshot_id) for t in table.list_tags()] == [
        ("2026-02-28", 2), ("2026-03-01", 3)]
