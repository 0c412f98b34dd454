"""Tables on ``s3://``: writing, reading, time travel and tags through a real S3 server."""

from __future__ import annotations

import pyarrow as pa
import pytest

import shoal
from shoal.errors import TableNotFoundError
from tests.conftest import EVENTS_SCHEMA, events
from tests.s3.s3_support import S3Env

DAY1, DAY2 = "2026-11-01", "2026-11-02"


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def test_a_partitioned_table(s3: S3Env) -> None:
    catalog = shoal.Catalog(s3.uri("wh"))
    t = catalog.create_table("db.events", EVENTS_SCHEMA, partition_keys=["dt"])
    assert t.path == s3.uri("wh/db.db/events")
    first = t.append(events(range(5)))
    t.append(events(range(5, 9), dt=DAY2))
    t.create_tag("before-overwrite")
    t.overwrite(events([100, 101]), partition={"dt": DAY1})
    t.drop_partitions([{"dt": DAY2}])
    t.append(events([7], dt=DAY2))

    assert _ids(t.to_arrow()) == [7, 100, 101]
    assert _ids(t.to_arrow(snapshot_id=first.id)) == [0, 1, 2, 3, 4]
    assert _ids(t.to_arrow(snapshot_id=2)) == list(range(9))
    at = t.snapshot(3).time_millis
    chosen = max(s.id for s in t.snapshots() if s.time_millis <= at)
    assert _ids(t.to_arrow(timestamp_ms=at)) == _ids(t.to_arrow(snapshot_id=chosen))
    assert _ids(t.to_arrow(tag="before-overwrite")) == list(range(9))
    assert [s.commit_kind for s in t.snapshots()] == [
        "APPEND",
        "APPEND",
        "OVERWRITE",
        "OVERWRITE",
        "APPEND",
    ]
    reopened = shoal.open_table(s3.uri("wh/db.db/events"))
    assert _ids(reopened.to_arrow(filter=[("dt", "=", DAY2)])) == [7]
    assert [tag.name for tag in reopened.list_tags()] == ["before-overwrite"]

    keys = s3.list_keys("wh/")
    assert "wh/db.db/events/snapshot/snapshot-5" in keys
    assert "wh/db.db/events/snapshot/LATEST" in keys
    assert "wh/db.db/events/tag/tag-before-overwrite" in keys
    assert not [k for k in keys if k.endswith("/")]  # no directory marker objects
    assert s3.get("wh/db.db/events/snapshot/LATEST") == b"5"


def test_a_primary_key_table(s3: S3Env) -> None:
    catalog = shoal.Catalog(s3.uri("wh"))
    t = catalog.create_table(
        "db.pk",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2"},
    )
    t.upsert(events(range(10)))
    t.upsert(events(range(5, 15)).set_column(2, "name", pa.array(["new"] * 10)))
    t.delete(events([1, 2]))
    before_compaction = t.latest_snapshot()
    t.compact(strategy="full")

    rows = {r["id"]: r["name"] for r in t.to_arrow().to_pylist()}
    assert sorted(rows) == [0, *range(3, 15)]
    assert rows[3] == "n3"
    assert rows[7] == "new"
    assert t.latest_snapshot().commit_kind == "COMPACT"
    assert _ids(t.to_arrow(snapshot_id=1)) == list(range(10))
    assert t.to_arrow(snapshot_id=before_compaction.id).num_rows == 13


def test_the_catalog_lists_and_drops_tables(s3: S3Env) -> None:
    catalog = shoal.Catalog(s3.uri("wh"))
    catalog.create_table("db.a", EVENTS_SCHEMA).append(events(range(3)))
    catalog.create_table("db.b", EVENTS_SCHEMA)
    catalog.create_table("other.c", EVENTS_SCHEMA)
    assert catalog.list_databases() == ["db", "other"]
    assert catalog.list_tables("db") == ["a", "b"]
    assert catalog.table_exists("db.a")
    with pytest.raises(shoal.TableAlreadyExistsError):
        catalog.create_table("db.a", EVENTS_SCHEMA)

    catalog.drop_table("db.a")
    assert catalog.list_tables("db") == ["b"]
    assert not any(k.startswith("wh/db.db/a/") for k in s3.list_keys())
    with pytest.raises(TableNotFoundError):
        catalog.get_table("db.a")
