"""Event-time compaction on real tables.

Per bucket, the strategy merges the files below the top level whose minimum event time
is at or below the threshold (and the files without event-time bounds, such as key-only
deletes) with the bucket's top-level files into the top level; every other file stays
live under its own name. With ``compaction.event-time.exact-split`` the merged rows at or
above the threshold go back to level 0 with their sequence numbers. Whatever is picked,
the real-time view of every snapshot reads the same before and after.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import shoal
from shoal import options as O
from shoal.compaction.compact import compact as run_compaction
from shoal.compaction.strategies import FullCompaction
from shoal.core.plan import live_entries
from shoal.event_time.bounds import EventTimeBounds
from shoal.event_time.strategy import event_time_compaction
from tests.reachability import reachable, stored

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ms")), ("v", pa.string())])
EVENT_TIME = {"bucket": "2", "compaction.event-time.field": "ts", "write-only": "true"}
EXACT = {"compaction.event-time.exact-split": "true"}
TOP = 5  # Paimon's default top level: num-levels - 1 = num-sorted-run.compaction-trigger


def at(hour: int, minute: int = 0) -> datetime:
    """An event time on 2026-01-01 (naive: UTC)."""
    return datetime(2026, 1, 1, hour, minute)


def ms(when: datetime) -> int:
    return int(when.replace(tzinfo=UTC).timestamp() * 1000)


def make(tmp_path: Path, options: dict[str, str] | None = None, **layout: Any) -> shoal.Table:
    layout.setdefault("primary_keys", ["id"])
    return shoal.Catalog(str(tmp_path)).create_table(
        "db.t", layout.pop("schema", SCHEMA), options={**EVENT_TIME, **(options or {})}, **layout
    )


def rows(ids: list[int] | range, ts: datetime | Sequence[datetime | None], tag: str) -> pa.Table:
    ids = list(ids)
    times = list(ts) if isinstance(ts, Sequence) else [ts] * len(ids)
    return pa.table({"id": ids, "ts": times, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def delete_keys(table: shoal.Table, ids: list[int]) -> None:
    table.delete(pa.table({"id": pa.array(ids, pa.int64())}))


def files(table: shoal.Table, snapshot_id: int | None = None) -> dict[str, dict[str, Any]]:
    """The live data files by name: bucket, level, path, sequence range, source."""
    out = {}
    for f in table.system_table("files", snapshot_id=snapshot_id).to_pylist():
        out[Path(f["file_path"]).name] = f
    return out


def added_by(table: shoal.Table, action: Callable[[], object]) -> set[str]:
    """The names of the files ``action`` adds."""
    before = set(files(table))
    action()
    return set(files(table)) - before


def view(table: pa.Table) -> dict[int, tuple[datetime | None, str]]:
    rows_ = table.to_pylist()
    out = {r["id"]: (r["ts"], r["v"]) for r in rows_}
    assert len(out) == len(rows_), "a key appears twice"
    return out


def real_time(table: shoal.Table, **kw: Any) -> dict[int, tuple[datetime | None, str]]:
    return view(table.to_arrow(**kw))


def read_optimized(table: shoal.Table, **kw: Any) -> dict[int, tuple[datetime | None, str]]:
    return view(table.to_arrow(read_optimized=True, **kw))


def stats_row(rendered: str) -> dict[str, Any]:
    """A statistics column of the files system table as a dict."""
    parsed: dict[str, Any] = json.loads(rendered)
    return parsed


def real_time_rows(table: shoal.Table) -> list[dict[str, Any]]:
    return table.to_arrow().sort_by("id").to_pylist()


def every_snapshot(table: shoal.Table) -> dict[int, tuple[dict[int, Any], dict[int, Any]]]:
    """Real-time and read-optimized view of every snapshot."""
    return {
        s.id: (real_time(table, snapshot_id=s.id), read_optimized(table, snapshot_id=s.id))
        for s in table.snapshots()
    }


def raw_rows(path: str) -> list[dict[str, Any]]:
    """A key-value file's rows as written: key, sequence number, kind, event time."""
    data = pq.read_table(path, columns=["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "ts"])
    return data.to_pylist()


def winners(table: shoal.Table) -> dict[int, tuple[int, int]]:
    """Per key, the sequence number and kind of its newest row among the live files."""
    best: dict[int, tuple[int, int]] = {}
    for f in files(table).values():
        for r in raw_rows(f["file_path"]):
            key, seq = r["_KEY_id"], r["_SEQUENCE_NUMBER"]
            if key not in best or seq > best[key][0]:
                best[key] = (seq, r["_VALUE_KIND"])
    return best


# --- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "layout", "fragment"),
    [
        (SCHEMA, {"primary_keys": ["id"]}, "no such column"),
        (pa.schema([("id", pa.int64()), ("ts", pa.string())]), {"primary_keys": ["id"]}, "BIGINT"),
        (pa.schema([("id", pa.int64()), ("ts", pa.int32())]), {"primary_keys": ["id"]}, "BIGINT"),
        (pa.schema([("id", pa.int64()), ("ts", pa.float64())]), {"primary_keys": ["id"]}, "BIGINT"),
        (SCHEMA, {}, "primary-key"),
    ],
    ids=["missing-column", "string", "int", "double", "append-table"],
)
def test_creation_refuses_a_bad_event_time_field(
    tmp_path: Path, schema: pa.Schema, layout: dict[str, Any], fragment: str
) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    field = "when" if fragment == "no such column" else "ts"
    options = {**EVENT_TIME, "compaction.event-time.field": field}
    if not layout:
        options.pop("bucket")
    with pytest.raises(shoal.InvalidOptionError, match=fragment):
        catalog.create_table("db.t", schema, options=options, **layout)
    with pytest.raises(shoal.TableNotFoundError):
        catalog.get_table("db.t")


DAY = 86_400_000


@pytest.mark.parametrize(
    ("arrow_type", "value"),
    [
        (pa.timestamp("ms"), lambda d: datetime(2026, 1, d)),
        (pa.timestamp("us"), lambda d: datetime(2026, 1, d)),
        (pa.timestamp("ns"), lambda d: datetime(2026, 1, d)),
        (pa.timestamp("ms", tz="Asia/Tokyo"), lambda d: datetime(2026, 1, d, tzinfo=UTC)),
        (pa.date32(), lambda d: date(2026, 1, d)),
        (pa.int64(), lambda d: ms(datetime(2026, 1, d))),
    ],
    ids=["timestamp-3", "timestamp-6", "timestamp-9", "timestamp-ltz", "date", "bigint"],
)
def test_every_event_time_type_selects_at_or_below_the_threshold(
    tmp_path: Path, arrow_type: pa.DataType, value: Callable[[int], Any]
) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", arrow_type)])
    table = make(tmp_path, {"bucket": "1"}, schema=schema)
    written = []
    for day in (1, 2, 3):  # one level-0 file per day
        ids = range(day * 10, day * 10 + 5)
        data = pa.table({"id": list(ids), "ts": [value(day)] * 5}, schema=schema)
        written.append(added_by(table, lambda data=data: table.upsert(data)))
    expected = real_time_rows(table)
    day2 = ms(datetime(2026, 1, 2))

    # one millisecond below day 2: only day 1 is old enough
    result = table.compact("event-time", event_time_threshold=day2 - 1)
    assert (result.compacted_files, result.written_files) == (1, 1)
    assert written[1] | written[2] <= set(files(table))
    # exactly day 2: selected ("at or below"); day 1's output is the top level, merged in
    result = table.compact("event-time", event_time_threshold=day2)
    assert (result.compacted_files, result.written_files) == (2, 1)
    live = files(table)
    assert written[2] <= set(live)
    assert sorted(f["level"] for f in live.values()) == [0, TOP]
    assert real_time_rows(table) == expected
    # nothing at or below day 2 is left below the top
    assert table.compact("event-time", event_time_threshold=day2 + DAY - 1).snapshot is None


@pytest.mark.parametrize(
    "arrow_type",
    [
        pa.timestamp("ms"),
        pa.timestamp("us"),
        pa.timestamp("ns"),
        pa.timestamp("ms", tz="Asia/Tokyo"),
        pa.date32(),
        pa.int64(),
    ],
    ids=["timestamp-3", "timestamp-6", "timestamp-9", "timestamp-ltz", "date", "bigint"],
)
def test_exact_split_compares_every_event_time_type_as_milliseconds(
    tmp_path: Path, arrow_type: pa.DataType
) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", arrow_type)])
    table = make(tmp_path, {**EXACT, "bucket": "1"}, schema=schema)
    days = [1, 2, 3, 2, 1, 3]
    values: list[Any] = [datetime(2026, 1, d, tzinfo=UTC) for d in days]
    if pa.types.is_date(arrow_type):
        values = [v.date() for v in values]
    elif pa.types.is_integer(arrow_type):
        values = [ms(v.replace(tzinfo=None)) for v in values]
    elif arrow_type.tz is None:
        values = [v.replace(tzinfo=None) for v in values]
    table.upsert(pa.table({"id": range(6), "ts": values}, schema=schema))
    expected = real_time_rows(table)
    table.compact("event-time", event_time_threshold=ms(datetime(2026, 1, 2)))
    assert real_time_rows(table) == expected
    # day 1 only: day 2 is the threshold itself, not below it
    ro = table.to_arrow(read_optimized=True).sort_by("id")
    assert ro["id"].to_pylist() == [0, 4]
    levels = sorted(f["level"] for f in files(table).values())
    assert levels == [0, TOP]


def test_rows_without_an_event_time_are_always_picked_and_go_on_top(tmp_path: Path) -> None:
    table = make(tmp_path, {**EXACT, "bucket": "1"})
    nulls = added_by(table, lambda: table.upsert(rows([1, 2], [None, None], "n")))
    late = added_by(table, lambda: table.upsert(rows([3], at(9), "late")))
    expected = real_time(table)
    # a threshold before every event time: only the file without one moves
    table.compact("event-time", event_time_threshold=datetime(2000, 1, 1))
    live = files(table)
    assert nulls.isdisjoint(live)
    assert late <= set(live)
    assert read_optimized(table) == {1: (None, "n1"), 2: (None, "n2")}
    assert real_time(table) == expected


# --- selection -------------------------------------------------------------------------------


def test_picks_old_files_merges_the_top_level_and_leaves_the_rest(tmp_path: Path) -> None:
    table = make(tmp_path)
    store = table._store
    assert store.max_level == TOP
    table.upsert(rows(range(20), at(0), "base"))
    table.compact("full")
    top = set(files(table))
    assert {f["level"] for f in files(table).values()} == {TOP}

    old = added_by(table, lambda: table.upsert(rows(range(0, 20, 3), at(1), "old")))
    late = added_by(table, lambda: table.upsert(rows(range(30, 40), at(9), "late")))
    # one file mixes an old and a new event time: its minimum decides
    mixed = added_by(
        table, lambda: table.upsert(rows([40, 41, 42], [at(9), at(2, 59), at(8)], "mixed"))
    )
    deletes = added_by(table, lambda: delete_keys(table, [5, 31]))  # no event time at all
    assert old
    assert late
    assert mixed
    assert deletes

    before = files(table)
    expected_rt = real_time(table)
    history = every_snapshot(table)
    result = table.compact("event-time", event_time_threshold=at(3))
    after = files(table)

    # the mixed rows spread over both buckets: the file holding 2:59 starts old enough
    mixed_old = {
        n for n in mixed if min(r["ts"] for r in raw_rows(before[n]["file_path"])) <= at(3)
    }
    assert len(mixed_old) == 1
    late |= mixed - mixed_old
    picked = old | mixed_old | deletes
    touched_buckets = {before[n]["bucket"] for n in picked}
    picked |= {n for n in top if before[n]["bucket"] in touched_buckets}
    assert set(before) - set(after) == picked
    assert result.compacted_files == len(picked)
    # the late files stay live, under their own names, at their level
    for name in late:
        assert after[name] == before[name]
    new = set(after) - set(before)
    assert result.written_files == len(new)
    assert {after[n]["level"] for n in new} == {TOP}
    assert {after[n]["file_source"] for n in new} == {"COMPACT"}
    assert result.snapshot is not None
    assert result.snapshot.commit_kind == "COMPACT"
    assert table.latest_snapshot() == result.snapshot

    assert real_time(table) == expected_rt
    views = every_snapshot(table)
    assert {i: views[i] for i in history} == history
    # the top level now holds the old rows; key 31's delete hides a late row that stays
    # below, so it is kept up there, and never shows in the read-optimized view
    ro = read_optimized(table)
    mixed_keys = {r["_KEY_id"] for n in mixed_old for r in raw_rows(before[n]["file_path"])}
    assert 41 in mixed_keys
    assert set(ro) == set(range(20)) - {5} | mixed_keys
    assert ro[3] == (at(1), "old3")
    assert ro[4] == (at(0), "base4")
    assert ro[41] == (at(2, 59), "mixed41")


def test_buckets_with_nothing_old_keep_even_their_top_level(tmp_path: Path) -> None:
    table = make(
        tmp_path,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        schema=SCHEMA.append(pa.field("dt", pa.string())),
    )

    def data(ids: range, ts: datetime, dt: str) -> pa.Table:
        base = rows(ids, ts, dt)
        return base.append_column("dt", pa.array([dt] * len(base)))

    def by_key() -> dict[tuple[str, int], dict[str, Any]]:
        return {(r["dt"], r["id"]): r for r in table.to_arrow().to_pylist()}

    table.upsert(pa.concat_tables([data(range(10), at(0), "a"), data(range(10), at(0), "b")]))
    table.compact("full")
    old_a = added_by(table, lambda: table.upsert(data(range(3), at(1), "a")))
    late_b = added_by(table, lambda: table.upsert(data(range(10), at(9), "b")))
    before = files(table)
    expected = by_key()

    result = table.compact("event-time", event_time_threshold=at(2))
    after = files(table)
    gone = set(before) - set(after)
    # partition b has only late data: none of its files moves, top level included
    assert {n for n, f in before.items() if f["partition"] == "dt=b"} <= set(after)
    assert late_b <= set(after)
    # in partition a, the old files and the top level of their buckets were rewritten
    buckets_a = {before[n]["bucket"] for n in old_a}
    assert gone == old_a | {
        n
        for n, f in before.items()
        if f["partition"] == "dt=a" and f["level"] == TOP and f["bucket"] in buckets_a
    }
    assert result.compacted_files == len(gone)
    assert by_key() == expected


def test_output_goes_to_num_levels_minus_one(tmp_path: Path) -> None:
    table = make(tmp_path, {"num-levels": "3"})
    assert table._store.max_level == 2
    table.upsert(rows(range(10), at(1), "a"))
    table.compact("event-time", event_time_threshold=at(2))
    assert {f["level"] for f in files(table).values()} == {2}


def test_the_threshold_defaults_to_now_minus_the_data_latency(tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    # default data-latency: 1 h
    table = make(tmp_path / "default")
    old = added_by(table, lambda: table.upsert(rows(range(5), now - timedelta(minutes=90), "o")))
    recent = added_by(
        table, lambda: table.upsert(rows(range(5, 10), now - timedelta(minutes=30), "r"))
    )
    table.compact("event-time")
    assert old.isdisjoint(files(table))
    assert recent <= set(files(table))

    # a longer latency, and the strategy named by the option
    table = make(
        tmp_path / "latency",
        {"compaction.event-time.data-latency": "2 h", "compaction.strategy": "event-time"},
    )
    old = added_by(table, lambda: table.upsert(rows(range(5), now - timedelta(hours=3), "o")))
    recent = added_by(
        table, lambda: table.upsert(rows(range(5, 10), now - timedelta(minutes=90), "r"))
    )
    assert table.compact().snapshot is not None
    assert old.isdisjoint(files(table))
    assert recent <= set(files(table))


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A local time zone far from UTC, so that a naive datetime read as local time
    would select differently."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("new_york")
@pytest.mark.parametrize(
    "threshold",
    [
        at(3),
        at(3).replace(tzinfo=UTC),
        datetime(2026, 1, 1, 4, tzinfo=timezone(timedelta(hours=1))),
        datetime(2025, 12, 31, 22, tzinfo=timezone(timedelta(hours=-5))),
        ms(at(3)),
    ],
    ids=["naive-is-utc", "utc", "plus-one", "minus-five", "epoch-ms"],
)
def test_every_form_of_the_threshold_means_the_same_instant(
    tmp_path: Path, threshold: datetime | int
) -> None:
    table = make(tmp_path, {"bucket": "1"})
    one = added_by(table, lambda: table.upsert(rows(range(5), at(2, 59), "a")))
    three = added_by(table, lambda: table.upsert(rows(range(5, 10), at(3), "b")))
    later = added_by(table, lambda: table.upsert(rows(range(10, 15), at(3, 1), "c")))
    table.compact("event-time", event_time_threshold=threshold)
    live = set(files(table))
    assert one.isdisjoint(live)
    assert three.isdisjoint(live)
    assert later <= live


def test_a_threshold_of_another_kind_is_refused(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.upsert(rows(range(5), at(1), "a"))
    for bad in ("2026-01-01", 1.7e12, True):
        with pytest.raises(shoal.InvalidArgumentError):
            table.compact("event-time", event_time_threshold=bad)
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND"]


@pytest.mark.parametrize("mode", ["none", "counts"])
def test_statistics_off_still_bound_the_event_time(tmp_path: Path, mode: str) -> None:
    table = make(tmp_path, {"metadata.stats-mode": mode, "bucket": "1"})
    old = added_by(table, lambda: table.upsert(rows(range(5), at(1), "a")))
    late = added_by(table, lambda: table.upsert(rows(range(5, 10), at(9), "b")))
    for name in old | late:
        f = files(table)[name]
        # only the event-time column keeps statistics
        assert set(stats_row(f["min_value_stats"])) == {"ts"}
        assert stats_row(f["min_value_stats"])["ts"] is not None
    bounds = event_time_compaction(table._store, at(5)).bounds
    entries = {
        e.file.file_name: e.file
        for e in live_entries(table._store, table._store.snapshots.latest())
    }
    assert {bounds(entries[n]) for n in old} == {(ms(at(1)), ms(at(1)))}
    assert {bounds(entries[n]) for n in late} == {(ms(at(9)), ms(at(9)))}
    table.compact("event-time", event_time_threshold=at(5))
    assert old.isdisjoint(files(table))
    assert late <= set(files(table))


# --- exact split -----------------------------------------------------------------------------


def test_exact_split_puts_exactly_the_rows_below_the_threshold_on_top(tmp_path: Path) -> None:
    table = make(tmp_path, EXACT)
    threshold = at(3)
    table.upsert(rows(range(10), [at(1), at(5)] * 5, "a"))  # each file starts below 3:00
    table.compact("full")  # a top level with late rows in it
    table.upsert(rows([0, 1, 2, 3], [at(3), at(2, 59), at(4), at(2)], "b"))
    table.upsert(rows([20, 21, 22], [at(9), at(0), at(3, 1)], "c"))
    delete_keys(table, [6, 7])
    late = added_by(table, lambda: table.upsert(rows([4, 30], at(7), "d")))  # stays below

    before = files(table)
    expected = real_time(table)
    sequences = winners(table)
    history = every_snapshot(table)
    result = table.compact("event-time", event_time_threshold=threshold)
    assert result.snapshot is not None
    after = files(table)
    new = {n: after[n] for n in set(after) - set(before)}
    for name in late:
        assert after[name] == before[name]

    top = [r for f in new.values() if f["level"] == TOP for r in raw_rows(f["file_path"])]
    back = [r for f in new.values() if f["level"] == 0 for r in raw_rows(f["file_path"])]
    assert top
    assert back
    assert {f["level"] for f in new.values()} == {0, TOP}
    assert {f["file_source"] for f in new.values()} == {"COMPACT"}
    # strictly below the threshold (or no event time: delete rows) on top, the rest below
    assert all(r["ts"] is None or r["ts"] < threshold for r in top)
    assert all(r["ts"] >= threshold for r in back)
    assert {r["_KEY_id"] for r in back} >= {0, 2, 20, 22}  # 3:00 itself is not below
    # every row keeps its sequence number: each key's newest row is the one it was (the
    # deletes of 6 and 7 may go: every file left out is newer than them)
    newest = winners(table)
    assert {k: w for k, w in newest.items() if k not in (6, 7)} == {
        k: w for k, w in sequences.items() if k not in (6, 7)
    }
    assert all(newest.get(k, sequences[k]) == sequences[k] for k in (6, 7))

    assert real_time(table) == expected
    # the read-optimized view: each merged key's newest version, when below the threshold
    # (key 4's newer, late version lies in the file left out, so its older one shows)
    merged = real_time(table, snapshot_id=table.latest_snapshot().id - 2)
    assert read_optimized(table) == {k: r for k, r in merged.items() if r[0] < threshold}
    assert read_optimized(table)[4] == (at(1), "a4")
    views = every_snapshot(table)
    assert {i: views[i] for i in history} == history

    # what was sent back starts at the threshold: an earlier one finds nothing, a later one
    # takes it all
    assert (
        table.compact("event-time", event_time_threshold=threshold - timedelta(hours=1)).snapshot
        is None
    )
    table.compact("event-time", event_time_threshold=at(12))
    assert real_time(table) == expected
    assert read_optimized(table) == expected
    assert {f["level"] for f in files(table).values()} == {TOP}


def test_exact_split_moves_late_rows_of_the_top_level_down(tmp_path: Path) -> None:
    table = make(tmp_path, {**EXACT, "bucket": "1"})
    table.upsert(rows(range(10), [at(1), at(6)] * 5, "a"))
    table.compact("full")
    assert read_optimized(table) == real_time(table)
    table.upsert(rows([100], at(0), "b"))  # something old to start the compaction
    expected = real_time(table)
    table.compact("event-time", event_time_threshold=at(2))
    assert real_time(table) == expected
    assert read_optimized(table) == {k: r for k, r in expected.items() if r[0] < at(2)}


# --- deletes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("exact", [False, True], ids=["merge", "exact-split"])
@pytest.mark.parametrize("whole_row", [False, True], ids=["key-only", "whole-row"])
def test_a_delete_never_resurrects_an_older_row_left_below(
    tmp_path: Path, exact: bool, whole_row: bool
) -> None:
    table = make(tmp_path, EXACT if exact else {})
    table.upsert(rows(range(10), at(0), "base"))
    table.compact("full")
    # keys 1..4: a late insert that the compaction leaves where it is
    kept = added_by(table, lambda: table.upsert(rows([1, 2, 3, 4, 50], at(9), "late")))
    # then deletes of those keys, in files the compaction picks
    if whole_row:
        picked = added_by(table, lambda: table.delete(rows([1, 2, 3, 4], at(1), "x")))
    else:
        picked = added_by(table, lambda: delete_keys(table, [1, 2, 3, 4]))
    before = every_snapshot(table)
    expected = real_time(table)
    assert set(expected) == set(range(10)) - {1, 2, 3, 4} | {50}

    table.compact("event-time", event_time_threshold=at(3))
    live = files(table)
    assert kept <= set(live)
    assert picked.isdisjoint(live)
    assert real_time(table) == expected
    ro = read_optimized(table)
    assert set(ro) == set(range(10)) - {1, 2, 3, 4}  # the delete rows do not show
    # the deletes are kept on top (an older version still lies below them)
    assert sum(f["deleteRowCount"] for f in live.values() if f["level"] == TOP) == 4
    views = every_snapshot(table)
    assert {i: views[i] for i in before} == before

    # once the late file is merged too, the deletes can go
    table.compact("full")
    assert real_time(table) == expected == read_optimized(table)
    assert sum(f["deleteRowCount"] for f in files(table).values()) == 0


@pytest.mark.parametrize("exact", [False, True], ids=["merge", "exact-split"])
def test_a_delete_never_hides_a_newer_row_left_below(tmp_path: Path, exact: bool) -> None:
    table = make(tmp_path, EXACT if exact else {})
    table.upsert(rows(range(10), at(0), "base"))
    delete_keys(table, [1, 2, 3])
    # re-inserted later with a late event time: the compaction leaves them below
    kept = added_by(table, lambda: table.upsert(rows([1, 2, 3], at(9), "again")))
    expected = real_time(table)
    assert {1, 2, 3} <= set(expected)
    table.compact("event-time", event_time_threshold=at(3))
    assert kept <= set(files(table))
    assert real_time(table) == expected
    assert set(read_optimized(table)) == set(range(10)) - {1, 2, 3}
    assert sum(f["deleteRowCount"] or 0 for f in files(table).values()) == 0


def test_a_delete_ordered_by_a_sequence_field_is_not_dropped_over_a_newer_file(
    tmp_path: Path,
) -> None:
    """With ``sequence.field`` the merge orders a key's rows by that column first, so a
    file written later (a higher sequence number) may still hold a row that loses to an
    earlier delete; leaving that file out, the delete must stay."""
    schema = SCHEMA.append(pa.field("ver", pa.int64()))
    table = make(tmp_path, {"bucket": "1", "sequence.field": "ver"}, schema=schema)

    def row(ts: datetime, ver: int) -> pa.Table:
        return pa.table({"id": [1], "ts": [ts], "v": ["x"], "ver": [ver]}, schema=schema)

    table.upsert(row(at(1), 1))
    table.delete(row(at(1), 3))
    late = added_by(table, lambda: table.upsert(row(at(9), 2)))  # loses to the delete
    assert table.to_arrow().num_rows == 0
    table.compact("event-time", event_time_threshold=at(3))
    assert late <= set(files(table))
    assert table.to_arrow().num_rows == 0, "the deleted key came back"


# --- nothing to do, errors -------------------------------------------------------------------


def test_nothing_eligible_commits_nothing(tmp_path: Path) -> None:
    table = make(tmp_path, EXACT)
    assert table.compact("event-time", event_time_threshold=at(3)) == shoal.CompactResult(
        None, 0, 0
    )
    table.upsert(rows(range(10), at(5), "late"))
    assert table.compact("event-time", event_time_threshold=at(3)) == shoal.CompactResult(
        None, 0, 0
    )
    table.compact("full")
    table.upsert(rows(range(5), at(4), "late"))
    # the top level alone is never a reason to compact
    assert table.compact("event-time", event_time_threshold=at(3)).snapshot is None
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND", "COMPACT", "APPEND"]


def test_a_table_without_an_event_time_field_refuses_event_time(tmp_path: Path) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2", "write-only": "true"}
    )
    table.upsert(rows(range(5), at(1), "a"))
    with pytest.raises(shoal.InvalidOptionError, match=r"compaction\.event-time\.field"):
        table.compact("event-time")
    with pytest.raises(shoal.InvalidOptionError):
        table.compact("event-time", event_time_threshold=at(3))
    assert len(table.snapshots()) == 1


@pytest.mark.parametrize("strategy", ["full", "universal", None])
def test_a_threshold_belongs_to_the_event_time_strategy(
    tmp_path: Path, strategy: str | None
) -> None:
    table = make(tmp_path)
    table.upsert(rows(range(5), at(1), "a"))
    with pytest.raises(shoal.InvalidArgumentError, match="event-time"):
        table.compact(strategy, event_time_threshold=at(3))
    assert len(table.snapshots()) == 1


# --- one event-time compaction at a time -----------------------------------------------------


class _CommitAfter:
    """A committer that runs ``meanwhile`` before committing, as if another process
    committed while this compaction was rewriting."""

    def __init__(self, committer: Any, meanwhile: Callable[[], object]) -> None:
        self._committer = committer
        self._meanwhile = meanwhile

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        self._meanwhile()
        return self._committer.commit(*args, **kwargs)


def _two_buckets(
    tmp_path: Path, options: dict[str, str] | None = None
) -> tuple[shoal.Table, list[tuple[bytes, int]]]:
    """A table whose bucket 0 has old data and bucket 1 only late data."""
    table = make(tmp_path, options)
    table.upsert(rows(range(40), at(9), "late"))
    store = table._store
    keys = sorted({(e.partition, e.bucket) for e in live_entries(store, store.snapshots.latest())})
    assert [b for _, b in keys] == [0, 1]
    ids_0 = sorted(
        r["_KEY_id"]
        for f in files(table).values()
        if f["bucket"] == 0
        for r in raw_rows(f["file_path"])
    )
    table.upsert(rows(ids_0[:3], at(1), "old"))
    return table, keys


def _unreferenced_data_files(table: shoal.Table) -> set[str]:
    """Data files in the bucket directories that no snapshot or tag names."""
    return {p for p in stored(table) if "/bucket-" in p} - reachable(table)


@pytest.mark.parametrize("retries", [None, 0], ids=["plans-again", "no-retries"])
def test_an_event_time_compaction_plans_again_when_another_compaction_committed(
    tmp_path: Path, retries: int | None
) -> None:
    options = None if retries is None else {"commit.max-retries": str(retries)}
    table, buckets = _two_buckets(tmp_path, options)
    other = shoal.open_table(table.path)  # another process, its own committer
    expected = real_time(table)
    before = files(table)
    ran: list[int] = []

    def compact_bucket_1() -> None:
        # touches none of the event-time compaction's files: only the serial rule stops it
        if ran:
            return
        result = run_compaction(
            other._store, other._committer, FullCompaction(), buckets=[buckets[1]]
        )
        assert result.snapshot is not None
        ran.append(result.snapshot.id)

    table._committer = _CommitAfter(table._committer, compact_bucket_1)  # type: ignore[assignment]
    if retries == 0:
        with pytest.raises(shoal.CommitConflictError, match=r"1 time.*another compaction"):
            table.compact("event-time", event_time_threshold=at(3))
        kinds = [s.commit_kind for s in table.snapshots()]
        assert kinds == ["APPEND", "APPEND", "COMPACT"]  # the other compaction's only
        assert {n for n, f in files(table).items() if f["bucket"] == 0} == {
            n for n, f in before.items() if f["bucket"] == 0
        }
    else:
        result = table.compact("event-time", event_time_threshold=at(3))
        assert result.attempts == 2
        assert result.snapshot is not None
        kinds = [s.commit_kind for s in table.snapshots()]
        assert kinds == ["APPEND", "APPEND", "COMPACT", "COMPACT"]
    assert ran == [3]
    assert real_time(table) == expected
    # the files the lost attempt rewrote are gone: no snapshot ever named them
    assert not _unreferenced_data_files(table)


def test_exclusive_compaction_through_the_library_entry_point(tmp_path: Path) -> None:
    table, buckets = _two_buckets(tmp_path)
    other = shoal.open_table(table.path)
    strategy = event_time_compaction(table._store, at(3))

    def compact_bucket_1() -> None:
        run_compaction(other._store, other._committer, FullCompaction(), buckets=[buckets[1]])

    committer = _CommitAfter(table._committer, compact_bucket_1)
    with pytest.raises(shoal.CommitConflictError):
        run_compaction(table._store, committer, strategy, max_retries=0, exclusive=True)  # type: ignore[arg-type]
    assert len(table.snapshots()) == 3
    # a compaction that is not exclusive commits in the same situation
    committer = _CommitAfter(table._committer, compact_bucket_1)
    assert run_compaction(table._store, committer, strategy).snapshot is not None  # type: ignore[arg-type]
    assert [s.commit_kind for s in table.snapshots()][-2:] == ["COMPACT", "COMPACT"]


def test_an_append_meanwhile_does_not_stop_it(tmp_path: Path) -> None:
    table, _ = _two_buckets(tmp_path)
    other = shoal.open_table(table.path)
    model = real_time(table)
    extra = rows([0, 1, 2, 100, 101], at(2), "meanwhile")
    model.update(view(extra))

    table._committer = _CommitAfter(table._committer, lambda: other.upsert(extra))  # type: ignore[assignment]
    result = table.compact("event-time", event_time_threshold=at(3))
    assert result.snapshot is not None
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND"] * 3 + ["COMPACT"]
    # the rows written meanwhile stay below the compacted files and win over them
    assert real_time(table) == model
    fresh = shoal.open_table(table.path)
    assert real_time(fresh) == model
    assert fresh.compact("event-time", event_time_threshold=at(3)).snapshot is not None
    assert real_time(fresh) == model


def test_an_append_meanwhile_does_not_stop_it_when_expiration_ran_too(
    tmp_path: Path,
) -> None:
    """Snapshot expiration after the appends made meanwhile removes snapshots committed
    after the compaction planned; that is no reason to drop the compaction."""
    retain_one = {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"}
    table = make(tmp_path, {"bucket": "1", "write-only": "false", **retain_one})
    table.upsert(rows([1, 2], at(1), "old"))
    other = shoal.open_table(table.path)
    model = real_time(table)

    def two_appends() -> None:
        for i in (3, 4):
            other.upsert(rows([i], at(9), "meanwhile"))
        assert [s.id for s in other.snapshots()] == [3]  # snapshot 2 expired
        model.update({i: (at(9), f"meanwhile{i}") for i in (3, 4)})

    table._committer = _CommitAfter(table._committer, two_appends)  # type: ignore[assignment]
    result = table.compact("event-time", event_time_threshold=at(3))
    assert result.snapshot is not None
    assert real_time(shoal.open_table(table.path)) == model


# --- incremental reads and time travel -------------------------------------------------------


def test_incremental_reads_skip_event_time_compactions(tmp_path: Path) -> None:
    table = make(tmp_path, EXACT)
    table.upsert(rows(range(20), [at(1), at(6)] * 10, "a"))  # 1
    table.upsert(rows(range(10, 25), [at(2), at(7)] * 7 + [at(0)], "b"))  # 2
    delete_keys(table, [3, 12])  # 3
    increments = {(a, b): table.incremental(a, b) for a in range(3) for b in range(a, 4)}
    history = every_snapshot(table)

    added = added_by(table, lambda: table.compact("event-time", event_time_threshold=at(4)))
    assert table.latest_snapshot().commit_kind == "COMPACT"  # 4
    assert 0 in {files(table)[n]["level"] for n in added}  # rows sent back to level 0
    table.upsert(rows([1, 2, 30], at(3), "c"))  # 5
    table.compact("event-time", event_time_threshold=at(8))  # 6

    for (a, b), rows_ in increments.items():
        assert table.incremental(a, b).equals(rows_)
        if b == 3:
            assert table.incremental(a, 4).equals(rows_)
    assert table.incremental(3, 4).num_rows == 0
    assert table.incremental(5, 6).num_rows == 0
    fifth = view(table.incremental(4, 5))
    assert fifth == view(rows([1, 2, 30], at(3), "c"))
    assert view(table.incremental(3, 6)) == fifth
    # between tags: the compactions changed files, not rows
    table.create_tag("before", snapshot_id=5)
    table.create_tag("after", snapshot_id=6)
    assert table.incremental("before", "after").num_rows == 0
    views = every_snapshot(table)
    assert {i: views[i] for i in history} == history


def test_time_travel_reads_every_snapshot_as_before(tmp_path: Path) -> None:
    table = make(tmp_path, EXACT)
    table.upsert(rows(range(30), [at(1), at(4), at(7)] * 10, "a"))
    table.upsert(rows(range(20, 40), at(0), "late-old"))
    delete_keys(table, [1, 25])
    table.compact("event-time", event_time_threshold=at(2))
    table.upsert(rows(range(5), at(8), "b"))
    delete_keys(table, [21])
    table.compact("event-time", event_time_threshold=at(5))
    views = every_snapshot(table)
    table.compact("event-time", event_time_threshold=at(7))
    table.compact("universal")
    table.compact("full")
    after = every_snapshot(table)
    for snapshot_id, seen in views.items():
        assert after[snapshot_id] == seen, f"snapshot {snapshot_id}"
    assert after[max(after)][0] == views[max(views)][0]
    assert after[max(after)][1] == after[max(after)][0]


def test_event_time_bounds_follow_the_column_by_field_id(tmp_path: Path) -> None:
    """A file keeps its event-time bounds when the column is renamed, and a file written
    before the column existed holds no event time (only nulls there)."""
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t",
        pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())]),
        primary_keys=["id"],
        options={"bucket": "1", "write-only": "true"},
    )
    table.upsert(pa.table({"id": [1], "v": ["before"]}))
    with table.update_schema() as update:
        update.add_column("ts", pa.timestamp("ms"))
        update.set_option("compaction.event-time.field", "ts")
    table.upsert(rows([2], at(3), "a"))
    with table.update_schema() as update:
        update.rename_column("ts", "event_ts")
    store = table._store
    assert store.options.get(O.COMPACTION_EVENT_TIME_FIELD) == "event_ts"
    bounds = EventTimeBounds(store)
    found = {
        e.file.schema_id: bounds.of(e.file) for e in live_entries(store, table.latest_snapshot())
    }
    assert found == {0: None, 1: (ms(at(3)), ms(at(3)))}
