"""The read-optimized freshness watermark and the compaction backlog metrics.

Every commit of a primary-key table with an event-time column records in its snapshot
properties the watermark W: the minimum event time of the live files below the top
level, or with none, the maximum event time of the live data plus one. Every row with
an event time below W is in the read-optimized view. The commit keeps W from its own
entries and reads the live files only when a deleted file may have held the minimum
or the maximum, or when the previous snapshot lacks the properties.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal.core.plan import live_entries
from shoal.event_time import backlog as FB
from shoal.event_time import watermark as FW
from shoal.event_time.bounds import EventTimeBounds
from shoal.event_time.freshness import freshness
from shoal.format import manifest as M
from shoal.format.binary_row import EMPTY_ROW
from shoal.format.data_file import DataFileMeta
from shoal.format.manifest import ManifestEntry
from shoal.format.stats import EMPTY_STATS

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ms")), ("v", pa.string())])
PARTITIONED = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("ts", pa.timestamp("ms")), ("v", pa.string())]
)
EVENT_TIME = {"bucket": "2", "compaction.event-time.field": "ts", "write-only": "true"}
TOP = 5  # num-levels - 1 with Paimon's defaults
BACKLOG_KEYS = {
    FB.SNAPSHOT_ID,
    FB.BASIS,
    FB.FILES,
    FB.BYTES,
    FB.BUCKETS,
    FB.MIN_EVENT_TIME,
    FB.BY_BUCKET,
}


def at(hour: int, minute: int = 0) -> datetime:
    """An event time on 2026-01-01 (naive: UTC)."""
    return datetime(2026, 1, 1, hour, minute)


def ms(when: datetime | date) -> int:
    if isinstance(when, datetime):
        return int(when.replace(tzinfo=when.tzinfo or UTC).timestamp() * 1000)
    return (when - date(1970, 1, 1)).days * 86_400_000


def make(root: Path | str, options: dict[str, str] | None = None, **layout: Any) -> shoal.Table:
    layout.setdefault("primary_keys", ["id"])
    schema = layout.pop("schema", SCHEMA)
    merged = {**EVENT_TIME, **(options or {})}
    return shoal.Catalog(str(root)).create_table("db.t", schema, options=merged, **layout)


def rows(ids: list[int] | range, ts: datetime | list[datetime | None], tag: str) -> pa.Table:
    ids = list(ids)
    times = ts if isinstance(ts, list) else [ts] * len(ids)
    return pa.table({"id": ids, "ts": times, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def prows(dt: str, ids: list[int] | range, ts: datetime | None, tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"dt": [dt] * len(ids), "id": ids, "ts": [ts] * len(ids), "v": [f"{tag}{i}" for i in ids]},
        schema=PARTITIONED,
    )


def delete_keys(table: shoal.Table, ids: list[int]) -> None:
    table.delete(pa.table({"id": pa.array(ids, pa.int64())}))


def recorded(table: shoal.Table, snapshot_id: int | None = None) -> int | None:
    """The watermark property of the latest (or a given) snapshot."""
    snapshot = table.snapshot(snapshot_id) if snapshot_id else table.latest_snapshot()
    assert snapshot is not None
    text = (snapshot.properties or {}).get(FW.WATERMARK)
    return None if text is None else int(text)


def from_scratch(table: shoal.Table) -> tuple[int | None, int | None]:
    """(min event time below the top level, max event time) over the live files."""
    store = table._store
    snapshot = table.latest_snapshot()
    if snapshot is None:
        return None, None
    bounds = EventTimeBounds(store)
    lows, highs = [], []
    for entry in live_entries(store, snapshot):
        b = bounds.of(entry.file)
        if b is None:
            continue
        highs.append(b[1])
        if entry.file.level != store.max_level:
            lows.append(b[0])
    return min(lows, default=None), max(highs, default=None)


def expected_watermark(table: shoal.Table) -> int | None:
    low, high = from_scratch(table)
    if low is not None:
        return low
    return None if high is None else high + 1


def assert_consistent(table: shoal.Table) -> None:
    """The recorded state equals the live files', and W keeps its promise."""
    snapshot = table.latest_snapshot()
    if snapshot is None:  # nothing committed yet (a compaction of an empty table)
        assert table.freshness() == shoal.Freshness(None, None, 0, 0, 0)
        return
    props = snapshot.properties or {}
    low, high = from_scratch(table)
    assert props[FW.UNCOMPACTED_MIN] == ("" if low is None else str(low))
    assert props[FW.MAX_EVENT_TIME] == ("" if high is None else str(high))
    assert recorded(table) == expected_watermark(table)
    assert table.freshness().watermark_ms == recorded(table)
    assert_promise(table)


def assert_promise(table: shoal.Table) -> None:
    """Every real-time row with an event time below W is in the read-optimized view."""
    watermark = recorded(table)
    if watermark is None:
        return
    keys = table.primary_keys
    optimized = {
        tuple(r[k] for k in keys): r for r in table.to_arrow(read_optimized=True).to_pylist()
    }
    for row in table.to_arrow().to_pylist():
        if row["ts"] is not None and ms(row["ts"]) < watermark:
            assert optimized.get(tuple(row[k] for k in keys)) == row


def live_files(table: shoal.Table) -> list[dict[str, Any]]:
    return table.system_table("files").to_pylist()


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> Iterator[list[int]]:
    """Count the calls of ``owner.name`` while the block runs."""
    calls = [0]
    inner = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return inner(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    try:
        yield calls
    finally:
        monkeypatch.setattr(owner, name, inner)


# --- the watermark through writes and compactions --------------------------------------------


def test_watermark_after_writes_is_the_min_of_the_level0_files(tmp_path: Path) -> None:
    table = make(tmp_path)
    assert table.freshness() == shoal.Freshness(None, None, 0, 0, 0)
    table.upsert(rows(range(10), at(3), "a"))
    assert recorded(table) == ms(at(3))
    table.upsert(rows(range(10, 20), at(1), "b"))
    table.upsert(rows(range(20, 30), at(5), "c"))
    assert recorded(table) == ms(at(1))
    assert_consistent(table)
    files = live_files(table)
    got = table.freshness()
    assert got.watermark_ms == got.min_uncompacted_event_time_ms == ms(at(1))
    assert got.uncompacted_file_count == len(files) == 6  # three writes into two buckets
    assert got.uncompacted_bytes == sum(f["file_size_in_bytes"] for f in files)
    assert got.buckets_with_uncompacted_files == 2
    assert isinstance(got, shoal.Freshness)


def test_full_compaction_gives_the_max_plus_one(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.upsert(rows(range(10), [at(1), at(7), *[at(2)] * 8], "a"))
    table.upsert(rows(range(5, 15), at(4), "b"))  # keys 5..9 replaced
    table.compact("full")
    assert recorded(table) == ms(at(7)) + 1  # the 7:00 row of key 1 is still live
    table.upsert(rows([1], at(2), "c"))
    assert recorded(table) == ms(at(2))
    table.compact("full")
    # the 7:00 version is gone from the live files: the max moves down
    assert recorded(table) == ms(at(4)) + 1
    got = table.freshness()
    assert (got.min_uncompacted_event_time_ms, got.uncompacted_file_count) == (None, 0)
    assert (got.buckets_with_uncompacted_files, got.uncompacted_bytes) == (0, 0)
    assert_consistent(table)


def test_event_time_compaction_moves_up_to_the_min_of_what_remains(tmp_path: Path) -> None:
    table = make(tmp_path)
    for hour, ids in ((1, range(10)), (2, range(10, 20)), (3, range(20, 30))):
        table.upsert(rows(ids, at(hour), f"h{hour}"))
    table.upsert(rows(range(30, 40), at(6), "h6"))
    table.compact("event-time", event_time_threshold=at(2, 30))
    assert recorded(table) == ms(at(3))
    assert table.freshness().min_uncompacted_event_time_ms == ms(at(3))
    assert_consistent(table)
    table.compact("event-time", event_time_threshold=at(5))
    assert recorded(table) == ms(at(6))
    table.compact("event-time", event_time_threshold=at(6))
    assert recorded(table) == ms(at(6)) + 1
    assert_consistent(table)


def test_late_data_moves_the_watermark_back_to_the_late_row(tmp_path: Path) -> None:
    table = make(tmp_path, {"bucket": "1"})
    table.upsert(rows(range(20), at(5), "a"))
    table.compact("full")
    assert recorded(table) == ms(at(5)) + 1
    table.upsert(rows([100, 101], [at(6), at(1, 17)], "late"))
    assert recorded(table) == ms(at(1, 17))
    assert_consistent(table)
    table.compact("event-time", event_time_threshold=at(2))
    assert recorded(table) == ms(at(6)) + 1
    assert_consistent(table)


def test_partitions_and_buckets_with_different_progress(tmp_path: Path) -> None:
    table = make(tmp_path, schema=PARTITIONED, primary_keys=["dt", "id"], partition_keys=["dt"])
    table.upsert(prows("a", range(20), at(1), "a"))
    table.upsert(prows("b", range(20), at(4), "b"))
    table.compact("event-time", event_time_threshold=at(2))  # partition a only
    table.upsert(prows("a", [3], at(8), "late"))  # one bucket of partition a
    assert recorded(table) == ms(at(4))
    assert_consistent(table)

    backlog = table.system_table("freshness").to_pylist()
    files = live_files(table)
    buckets = sorted({(f["partition"], f["bucket"]) for f in files})
    assert [(r["partition"], r["bucket"]) for r in backlog] == buckets
    for r in backlog:
        mine = [f for f in files if (f["partition"], f["bucket"]) == (r["partition"], r["bucket"])]
        waiting = [f for f in mine if f["level"] != TOP]
        assert r["uncompacted_file_count"] == len(waiting)
        assert r["uncompacted_bytes"] == sum(f["file_size_in_bytes"] for f in waiting)
        hour = 4 if r["partition"] == "dt=b" else 8
        assert r["min_uncompacted_event_time"] == (ms(at(hour)) if waiting else None)
    by_partition = {
        p: sum(r["uncompacted_file_count"] for r in backlog if r["partition"] == p)
        for p in ("dt=a", "dt=b")
    }
    assert by_partition == {"dt=a": 1, "dt=b": 2}

    got = table.freshness()
    assert got.buckets_with_uncompacted_files == 3
    assert got.uncompacted_file_count == sum(r["uncompacted_file_count"] for r in backlog)
    assert got.uncompacted_bytes == sum(r["uncompacted_bytes"] for r in backlog)
    assert got.min_uncompacted_event_time_ms == ms(at(4))

    table.drop_partitions([{"dt": "b"}])
    assert recorded(table) == ms(at(8))
    table.compact("event-time", event_time_threshold=at(8))
    assert recorded(table) == ms(at(8)) + 1
    assert_consistent(table)


def test_freshness_table_follows_time_travel(tmp_path: Path) -> None:
    table = make(tmp_path, {"bucket": "1"})
    first = table.upsert(rows(range(5), at(2), "a"))
    table.compact("full")
    old = table.system_table("freshness", snapshot_id=first.id).to_pylist()
    assert [(r["uncompacted_file_count"], r["min_uncompacted_event_time"]) for r in old] == [
        (1, ms(at(2)))
    ]
    now = table.system_table("freshness").to_pylist()
    assert [(r["uncompacted_file_count"], r["min_uncompacted_event_time"]) for r in now] == [
        (0, None)
    ]
    assert table.freshness(snapshot_id=first.id).watermark_ms == ms(at(2))
    table.create_tag("v1", first.id)
    assert table.freshness(tag="v1").uncompacted_file_count == 1


def test_exact_split_puts_the_watermark_at_or_above_the_threshold(tmp_path: Path) -> None:
    table = make(tmp_path, {"compaction.event-time.exact-split": "true"})
    hours = [1, 2, 3, 4, 5] * 4
    table.upsert(rows(range(20), [at(h, 10) for h in hours], "a"))
    table.upsert(rows(range(20, 30), at(2, 45), "b"))
    threshold = at(3)
    table.compact("event-time", event_time_threshold=threshold)
    watermark = recorded(table)
    assert watermark is not None
    assert watermark >= ms(threshold)
    assert watermark == ms(at(3, 10))  # the earliest row at or above the threshold
    assert_consistent(table)
    optimized = table.to_arrow(read_optimized=True).to_pylist()
    assert {ms(r["ts"]) < ms(threshold) for r in optimized} == {True}


def test_key_only_deletes_have_no_bounds_and_are_ignored(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.upsert(rows(range(10), at(2), "a"))
    table.upsert(rows(range(10, 20), at(4), "b"))
    delete_keys(table, [0, 1, 15])
    assert recorded(table) == ms(at(2))
    assert_consistent(table)
    table.compact("full")
    assert recorded(table) == ms(at(4)) + 1
    delete_keys(table, [2, 3])
    assert recorded(table) == ms(at(4)) + 1  # the delete file has no event time
    got = table.freshness()
    assert got.min_uncompacted_event_time_ms is None
    assert got.uncompacted_file_count == len([f for f in live_files(table) if f["level"] != TOP])
    assert got.uncompacted_file_count >= 1
    assert_consistent(table)
    delete_keys(table, list(range(20)))
    table.compact("full")
    # every row deleted: no data, no watermark
    assert recorded(table) is None
    assert table.freshness().watermark_ms is None
    assert_consistent(table)


def test_table_without_event_time_field_still_counts(tmp_path: Path) -> None:
    table = make(tmp_path, {"compaction.event-time.field": ""})
    table.upsert(rows(range(10), at(2), "a"))
    table.upsert(rows(range(5, 15), at(3), "b"))
    for snapshot in table.snapshots():
        keys = set(snapshot.properties or {})
        assert not keys & {FW.WATERMARK, FW.UNCOMPACTED_MIN, FW.MAX_EVENT_TIME}
        assert {k for k in keys if k.startswith(FB.PREFIX)} == BACKLOG_KEYS
    files = live_files(table)
    got = table.freshness()
    assert (got.watermark_ms, got.min_uncompacted_event_time_ms) == (None, None)
    assert got.uncompacted_file_count == len(files) == 4
    assert got.uncompacted_bytes == sum(f["file_size_in_bytes"] for f in files)
    assert got.buckets_with_uncompacted_files == 2
    backlog = table.system_table("freshness").to_pylist()
    assert {r["min_uncompacted_event_time"] for r in backlog} == {None}
    assert sum(r["uncompacted_file_count"] for r in backlog) == 4
    assert table.system_table("snapshots").column("read_optimized_watermark").null_count == 2
    table.compact("full")
    assert table.freshness() == shoal.Freshness(None, None, 0, 0, 0)
    with pytest.raises(shoal.InvalidOptionError):
        table.compact("event-time")


def test_append_table_has_nothing_to_compact(tmp_path: Path) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", SCHEMA)
    table.append(rows(range(3), at(1), "a"))
    assert table.freshness() == shoal.Freshness(None, None, 0, 0, 0)
    assert table.system_table("freshness").column("uncompacted_file_count").to_pylist() == [0]


def test_snapshots_table_shows_the_watermark(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.upsert(rows(range(5), at(2), "a"))
    table.compact("full")
    snapshots = table.system_table("snapshots")
    assert snapshots.column_names[-1] == "read_optimized_watermark"
    assert snapshots.column("read_optimized_watermark").to_pylist() == [
        ms(at(2)),
        ms(at(2)) + 1,
    ]


@pytest.mark.parametrize(
    ("arrow_type", "value"),
    [
        (pa.timestamp("ms"), lambda d: datetime(2026, 1, d)),
        (pa.timestamp("us", tz="UTC"), lambda d: datetime(2026, 1, d, tzinfo=UTC)),
        (pa.date32(), lambda d: date(2026, 1, d)),
        (pa.int64(), lambda d: ms(datetime(2026, 1, d))),
    ],
    ids=["timestamp", "timestamp-ltz", "date", "bigint"],
)
def test_every_event_time_type(
    tmp_path: Path, arrow_type: pa.DataType, value: Callable[[int], Any]
) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", arrow_type)])
    table = make(tmp_path, schema=schema)
    for day in (1, 3, 2):
        ids = range(day * 10, day * 10 + 5)
        table.upsert(pa.table({"id": list(ids), "ts": [value(day)] * 5}, schema=schema))
    day = 86_400_000
    day1 = ms(datetime(2026, 1, 1))
    assert recorded(table) == day1
    table.compact("event-time", event_time_threshold=datetime(2026, 1, 2))
    assert recorded(table) == day1 + 2 * day
    table.upsert(pa.table({"id": [1], "ts": [value(2)]}, schema=schema))  # late
    assert recorded(table) == day1 + day
    table.compact("full")
    assert recorded(table) == day1 + 2 * day + 1
    assert table.freshness().watermark_ms == day1 + 2 * day + 1


# --- what a commit reads ---------------------------------------------------------------------


def test_appends_never_recompute_from_the_live_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = make(tmp_path)
    with counting(monkeypatch, FW, "live_entries") as calls:
        for i in range(6):
            table.upsert(rows(range(i * 10, i * 10 + 10), at(6 - i), f"w{i}"))
        delete_keys(table, [1, 2])
        assert calls[0] == 0
        # deletes the files holding the min and the max: the backlog the commit carries
        # gives the new minimum, and the compacted output holds the maximum again
        table.compact("full")
        assert calls[0] == 0
        table.upsert(rows([7], at(9), "x"))
        assert calls[0] == 0
    assert_consistent(table)


def test_watermark_costs_no_manifest_read_on_an_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain upsert reads the same manifests with the watermark as without it."""

    def reads(root: Path, options: dict[str, str]) -> list[int]:
        table = make(root, options)
        out = []
        for i in range(8):
            manifests = table._store.manifests
            with counting(monkeypatch, manifests, "read_manifest") as calls:
                table.upsert(rows(range(i * 10, i * 10 + 10), at(1 + i), f"w{i}"))
            out.append(calls[0])
        return out

    plain = reads(tmp_path / "plain", {"compaction.event-time.field": ""})
    watermarked = reads(tmp_path / "watermarked", {})
    assert watermarked == plain


def test_a_compaction_that_keeps_the_min_below_the_top_does_not_recompute() -> None:
    top = 5
    a, b, c = _file("a", 0), _file("b", 0), _file("c", 3)
    bounds = {"a": (10, 20), "b": (30, 40), "c": (10, 40)}.get
    state = FW.state_of([a, b], lambda f: bounds(f.file_name), top)
    assert state == FW.EventTimeState(10, 40)
    change = [_entry(M.KIND_DELETE, a), _entry(M.KIND_DELETE, b), _entry(M.KIND_ADD, c)]
    assert FW.advance(state, change, lambda f: bounds(f.file_name), top) == state
    # without a replacement, only the live files know the new minimum
    assert FW.advance(state, change[:1], lambda f: bounds(f.file_name), top) is None
    # a file that held neither the minimum nor the maximum goes without a recompute
    d = _file("d", 0)
    wide = {"a": (10, 20), "b": (30, 40), "d": (15, 25)}.get
    state = FW.state_of([a, b, d], lambda f: wide(f.file_name), top)
    after = FW.advance(state, [_entry(M.KIND_DELETE, d)], lambda f: wide(f.file_name), top)
    assert after == state


def test_malformed_or_missing_properties_mean_no_state() -> None:
    assert FW.state_from_properties(None) is None
    assert FW.state_from_properties({FW.MAX_EVENT_TIME: "5"}) is None
    assert FW.state_from_properties({FW.MAX_EVENT_TIME: "x", FW.UNCOMPACTED_MIN: ""}) is None
    assert FW.state_from_properties({FW.MAX_EVENT_TIME: "5", FW.UNCOMPACTED_MIN: ""}) == (
        FW.EventTimeState(None, 5)
    )
    assert FW.EventTimeState(None, None).to_properties() == {
        FW.UNCOMPACTED_MIN: "",
        FW.MAX_EVENT_TIME: "",
    }
    assert FW.watermark_of({FW.WATERMARK: "12"}) == 12
    assert FW.watermark_of({FW.WATERMARK: "soon"}) is None


def _file(name: str, level: int) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=100,
        row_count=1,
        min_key=EMPTY_ROW,
        max_key=EMPTY_ROW,
        key_stats=EMPTY_STATS,
        value_stats=EMPTY_STATS,
        min_sequence_number=0,
        max_sequence_number=0,
        schema_id=0,
        level=level,
    )


def _entry(kind: int, file: DataFileMeta) -> ManifestEntry:
    return ManifestEntry(kind, EMPTY_ROW, 0, 1, file)


def strip_properties(table: shoal.Table) -> None:
    """Rewrite every snapshot without properties, as a writer that does not know them
    (pypaimon, an older shoal) leaves them."""
    for snapshot in table.snapshots():
        path = Path(table.path) / "snapshot" / f"snapshot-{snapshot.id}"
        data = json.loads(path.read_text())
        data.pop("properties", None)
        path.write_text(json.dumps(data))


def test_missing_properties_are_recomputed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = make(tmp_path)
    table.upsert(rows(range(10), at(3), "a"))
    table.upsert(rows(range(10, 20), at(2), "b"))
    table.compact("event-time", event_time_threshold=at(2))
    strip_properties(table)
    table = shoal.open_table(table.path)
    assert recorded(table) is None
    assert table.freshness().watermark_ms == ms(at(3))  # from the live files
    assert table.system_table("snapshots").column("read_optimized_watermark").null_count == 3
    with counting(monkeypatch, FW, "live_entries") as calls:
        table.upsert(rows([50], at(4), "c"))
        assert calls[0] == 1
        assert recorded(table) == ms(at(3))
        table.upsert(rows([51], at(1), "d"))
        assert calls[0] == 1
    assert recorded(table) == ms(at(1))
    assert_consistent(table)


def test_freshness_recomputes_a_snapshot_without_the_property(tmp_path: Path) -> None:
    table = make(tmp_path, {"bucket": "1"})
    table.upsert(rows(range(5), at(3), "a"))
    table.compact("full")
    strip_properties(table)
    table = shoal.open_table(table.path)
    snapshot = table.latest_snapshot()
    assert freshness(table._store, snapshot).watermark_ms == ms(at(3)) + 1


# --- any sequence of operations --------------------------------------------------------------

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
)


def _apply(table: shoal.Table, op: tuple[Any, ...]) -> None:
    base = datetime(2026, 1, 1)
    kind = op[0]
    if kind == "upsert":
        _, dt, ids, hours = op
        times = [None if h is None else base + timedelta(hours=h) for h in hours[: len(ids)]]
        data = pa.table(
            {"dt": [dt] * len(ids), "id": ids, "ts": times, "v": [f"u{i}" for i in ids]},
            schema=PARTITIONED,
        )
        table.upsert(data)
    elif kind == "delete":
        _, dt, ids = op
        table.delete(pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64())}))
    elif kind == "full":
        table.compact("full")
    elif kind == "event-time":
        table.compact("event-time", event_time_threshold=base + timedelta(hours=op[1]))
    elif kind == "overwrite":
        _, dt, ids, hour = op
        ts = None if hour is None else base + timedelta(hours=hour)
        data = prows(dt or "a", ids, ts, "o")
        table.overwrite(data, partition=None if dt is None else {"dt": dt})
    elif kind == "drop":
        table.drop_partitions([{"dt": op[1]}])


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    operations=st.lists(_operation, min_size=1, max_size=8),
    exact=st.booleans(),
    automatic=st.booleans(),
)
def test_incremental_watermark_equals_a_recomputation(
    operations: list[tuple[Any, ...]], exact: bool, automatic: bool
) -> None:
    options = {"compaction.event-time.exact-split": str(exact).lower()}
    if automatic:  # universal compaction after writes, into the middle levels too
        options |= {"write-only": "false", "num-sorted-run.compaction-trigger": "3"}
    with tempfile.TemporaryDirectory() as root:
        table = make(
            root, options, schema=PARTITIONED, primary_keys=["dt", "id"], partition_keys=["dt"]
        )
        for op in operations:
            _apply(table, op)
            assert_consistent(table)
