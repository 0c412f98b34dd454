"""The compaction backlog carried in every snapshot equals a scan of the live files.

``freshness()`` reads the counters a shoal commit records (``event_time.backlog``);
after any sequence of writes, compactions, overwrites, partition drops, expirations,
rollbacks and commits of another writer (which leave no counters, or copy stale ones
forward), the counters-based answer equals the one recomputed from the live files,
and the next shoal commit records usable counters again.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal.core.plan import live_entries
from shoal.event_time import backlog as FB
from shoal.event_time.freshness import Freshness, freshness
from shoal.format.snapshot import Snapshot

SCHEMA = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("ts", pa.timestamp("ms")), ("v", pa.string())]
)
BASE = datetime(2026, 1, 1)


def make(root: str | Path, options: dict[str, str]) -> shoal.Table:
    return shoal.Catalog(str(root)).create_table(
        "db.t",
        SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "write-only": "true", **options},
    )


def scanned(table: shoal.Table, snapshot: Snapshot | None) -> Freshness:
    """Freshness recomputed from the live files: the snapshot without its properties."""
    if snapshot is not None:
        snapshot = dataclasses.replace(snapshot, properties=None)
    return freshness(table._store, snapshot)


def backlog_fields(f: Freshness) -> tuple[Any, ...]:
    return (
        f.min_uncompacted_event_time_ms,
        f.buckets_with_uncompacted_files,
        f.uncompacted_file_count,
        f.uncompacted_bytes,
    )


def by_system_table(table: shoal.Table) -> tuple[Any, ...]:
    """The same numbers from the per-bucket ``freshness`` system table."""
    rows = [r for r in table.system_table("freshness").to_pylist() if r["uncompacted_file_count"]]
    lows = [r["min_uncompacted_event_time"] for r in rows if r["min_uncompacted_event_time"]]
    low = min(lows) if lows else None
    return (
        None if low is None else int(low.timestamp() * 1000) if hasattr(low, "timestamp") else low,
        len(rows),
        sum(r["uncompacted_file_count"] for r in rows),
        sum(r["uncompacted_bytes"] for r in rows),
    )


def rewrite_latest(table: shoal.Table, stale: bool) -> shoal.Table:
    """What another Paimon writer leaves: a snapshot without shoal's properties, or
    (stale) with its predecessor's counters copied forward."""
    latest = table.latest_snapshot()
    assert latest is not None
    path = Path(table.path) / "snapshot" / f"snapshot-{latest.id}"
    data = json.loads(path.read_text())
    properties = {k: v for k, v in data.get("properties", {}).items() if not k.startswith("shoal.")}
    if stale and latest.id > 1:
        previous = table.snapshot(latest.id - 1).properties or {}
        properties |= {k: v for k, v in previous.items() if k.startswith(FB.PREFIX)}
    data["properties"] = properties
    path.write_text(json.dumps(data))
    return shoal.open_table(table.path)  # snapshots are cached: read the rewritten one


def apply(table: shoal.Table, op: tuple[Any, ...]) -> tuple[shoal.Table, bool]:
    """Run one operation: the table to go on with, and whether it was a shoal commit
    that must carry counters."""
    kind = op[0]
    before = table.latest_snapshot()
    if kind == "upsert":
        _, dt, ids, hours = op
        times = [None if h is None else BASE + timedelta(hours=h) for h in hours[: len(ids)]]
        data = pa.table(
            {"dt": [dt] * len(ids), "id": ids, "ts": times, "v": [f"u{i}" for i in ids]},
            schema=SCHEMA,
        )
        table.upsert(data)
    elif kind == "delete":
        _, dt, ids = op
        table.delete(pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64())}))
    elif kind == "full":
        table.compact("full")
    elif kind == "event-time":
        if not table._store.event_time_columns:
            return table, False
        table.compact("event-time", event_time_threshold=BASE + timedelta(hours=op[1]))
    elif kind == "overwrite":
        _, dt, ids, hour = op
        ts = None if hour is None else BASE + timedelta(hours=hour)
        data = pa.table(
            {"dt": [dt or "a"] * len(ids), "id": ids, "ts": [ts] * len(ids), "v": ["o"] * len(ids)},
            schema=SCHEMA,
        )
        table.overwrite(data, partition=None if dt is None else {"dt": dt})
    elif kind == "drop":
        table.drop_partitions([{"dt": op[1]}])
    elif kind == "expire":
        table.expire_snapshots(retain_min=1, retain_max=op[1])
        return table, False
    elif kind == "rollback":
        ids = [s.id for s in table.snapshots()]
        if len(ids) > 1:
            table.rollback_to(snapshot_id=ids[op[1] % len(ids)])
        return table, False
    elif kind == "foreign":
        table.upsert(
            pa.table({"dt": ["b"], "id": [op[1]], "ts": [BASE], "v": ["f"]}, schema=SCHEMA)
        )
        return rewrite_latest(table, stale=op[2]), False
    after = table.latest_snapshot()
    return table, after is not None and (before is None or after.id != before.id)


_ids = st.lists(st.integers(0, 11), min_size=1, max_size=6, unique=True)
_hours = st.one_of(st.none(), st.integers(0, 23))
_partition = st.sampled_from(["a", "b"])
_operation = st.one_of(
    st.tuples(st.just("upsert"), _partition, _ids, st.lists(_hours, min_size=6, max_size=6)),
    st.tuples(st.just("delete"), _partition, _ids),
    st.tuples(st.just("full")),
    st.tuples(st.just("event-time"), st.integers(0, 24)),
    st.tuples(st.just("overwrite"), st.one_of(st.none(), _partition), _ids, _hours),
    st.tuples(st.just("drop"), _partition),
    st.tuples(st.just("expire"), st.integers(1, 3)),
    st.tuples(st.just("rollback"), st.integers(0, 5)),
    st.tuples(st.just("foreign"), st.integers(0, 11), st.booleans()),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    operations=st.lists(_operation, min_size=1, max_size=10),
    event_time=st.booleans(),
    automatic=st.booleans(),
)
def test_counters_equal_a_scan_after_every_step(
    operations: list[tuple[Any, ...]], event_time: bool, automatic: bool
) -> None:
    options = {"compaction.event-time.field": "ts" if event_time else ""}
    if automatic:  # universal compaction after writes, into the middle levels too
        options |= {"write-only": "false", "num-sorted-run.compaction-trigger": "3"}
    with tempfile.TemporaryDirectory() as root:
        table = make(root, options)
        for op in operations:
            table, committed = apply(table, op)
            latest = table.latest_snapshot()
            got = table.freshness()
            assert backlog_fields(got) == backlog_fields(scanned(table, latest))
            assert got.watermark_ms == scanned(table, latest).watermark_ms
            if latest is not None:
                assert backlog_fields(got) == by_system_table(table)
            if committed:
                assert latest is not None
                assert FB.recorded_totals(table._store, latest) is not None
                assert FB.recorded(table._store, latest) is not None


def test_freshness_reads_no_manifest_when_the_snapshot_carries_counters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = make(tmp_path, {"compaction.event-time.field": "ts"})
    for i in range(4):
        ids = list(range(i * 3, i * 3 + 3))
        rows = {"dt": ["a"] * 3, "id": ids, "ts": [BASE + timedelta(hours=i)] * 3, "v": ["x"] * 3}
        table.upsert(pa.table(rows, schema=SCHEMA))
    expected = scanned(table, table.latest_snapshot())

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("freshness read a manifest")

    monkeypatch.setattr(table._store.manifests, "read_manifests", refuse)
    monkeypatch.setattr(table._store.manifests, "read_list", refuse)
    assert table.freshness() == expected
    assert expected.uncompacted_file_count == 8


def test_a_foreign_snapshot_falls_back_and_the_next_commit_restores(tmp_path: Path) -> None:
    table = make(tmp_path, {"compaction.event-time.field": "ts"})
    table.upsert(pa.table({"dt": ["a"], "id": [1], "ts": [BASE], "v": ["x"]}, schema=SCHEMA))
    table.upsert(pa.table({"dt": ["a"], "id": [2], "ts": [BASE], "v": ["y"]}, schema=SCHEMA))
    table = rewrite_latest(table, stale=True)  # the predecessor's counters, copied forward
    latest = table.latest_snapshot()
    assert latest is not None
    assert FB.recorded_totals(table._store, latest) is None
    assert table.freshness().uncompacted_file_count == 2  # from the scan, not the stale 1
    table.compact("full")
    latest = table.latest_snapshot()
    assert latest is not None
    totals = FB.recorded_totals(table._store, latest)
    assert totals == FB.Totals(0, 0, 0, None)


def test_counters_of_another_basis_are_not_used(tmp_path: Path) -> None:
    """After num-levels changes, the recorded top level no longer holds."""
    table = make(tmp_path, {})
    table.upsert(pa.table({"dt": ["a"], "id": [1], "ts": [BASE], "v": ["x"]}, schema=SCHEMA))
    store = table._store
    latest = table.latest_snapshot()
    assert latest is not None
    assert FB.recorded_totals(store, latest) is not None
    changed = dataclasses.replace(latest, properties={**(latest.properties or {}), FB.BASIS: "x"})
    assert FB.recorded_totals(store, changed) is None
    assert FB.recorded(store, changed) is None


def test_a_compaction_of_part_of_a_bucket_rescans_only_its_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = make(tmp_path, {"compaction.event-time.field": "ts", "bucket": "1"})
    for dt, hour in (("a", 1), ("a", 5), ("b", 5), ("b", 6)):  # only a's first is due
        rows = {"dt": [dt], "id": [hour], "ts": [BASE + timedelta(hours=hour)], "v": ["x"]}
        table.upsert(pa.table(rows, schema=SCHEMA))
    seen: list[Any] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("partitions"))
        return live_entries(*args, **kwargs)

    monkeypatch.setattr(FB, "live_entries", recording)
    table.compact("event-time", event_time_threshold=BASE + timedelta(hours=2))
    store = table._store
    assert seen
    assert all(p is not None and len(p) == 1 for p in seen)
    assert backlog_fields(table.freshness()) == backlog_fields(
        scanned(table, table.latest_snapshot())
    )
    assert table.freshness().min_uncompacted_event_time_ms is not None
    assert FB.recorded(store, table.latest_snapshot()) is not None  # type: ignore[arg-type]
