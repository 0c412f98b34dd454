"""Tags through the table API: creating, replacing, renaming and deleting them, reading
the tagged snapshot back after the table moved on, the ``tags`` system table."""

from __future__ import annotations

import multiprocessing
import os
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from tests.conftest import events, sorted_rows

PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
TAGS_COLUMNS = [
    "tag_name",
    "snapshot_id",
    "schema_id",
    "commit_time",
    "record_count",
    "create_time",
    "time_retained",
]


def tag_file(table: shoal.Table, name: str) -> Path:
    return Path(table.path) / "tag" / f"tag-{name}"


def snapshot_file(table: shoal.Table, snapshot_id: int) -> Path:
    return Path(table.path) / "snapshot" / f"snapshot-{snapshot_id}"


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def pk_rows(ids_and_values: dict[int, str]) -> pa.Table:
    return pa.table(
        {"id": list(ids_and_values), "v": list(ids_and_values.values())}, schema=PK_SCHEMA
    )


@pytest.fixture
def three_snapshots(events_table: shoal.Table) -> shoal.Table:
    events_table.append(events([1, 2]))
    events_table.append(events([3], dt="2026-11-02"))
    events_table.append(events([4, 5, 6]))
    return events_table


# --- creating -----------------------------------------------------------------------------


def test_create_on_latest_and_on_a_given_snapshot(three_snapshots: shoal.Table) -> None:
    table = three_snapshots
    latest = table.create_tag("latest")
    first = table.create_tag("v1.0", 1)
    assert latest == shoal.Tag("latest", 3, None, None)
    assert first == shoal.Tag("v1.0", 1, None, None)
    assert table.list_tags() == [first, latest]
    assert ids(table.to_arrow(tag="v1.0")) == [1, 2]
    assert ids(table.to_arrow(tag="latest")) == [1, 2, 3, 4, 5, 6]


def test_a_tag_without_retention_is_a_byte_copy_of_its_snapshot(
    three_snapshots: shoal.Table,
) -> None:
    three_snapshots.create_tag("second", snapshot_id=2)
    assert tag_file(three_snapshots, "second").read_bytes() == (
        snapshot_file(three_snapshots, 2).read_bytes()
    )


def test_create_with_retention(three_snapshots: shoal.Table) -> None:
    before = datetime.now()
    tag = three_snapshots.create_tag("kept", 2, timedelta(days=7))
    after = datetime.now()
    assert (tag.name, tag.snapshot_id, tag.time_retained) == ("kept", 2, timedelta(days=7))
    assert tag.create_time is not None
    assert before <= tag.create_time <= after
    assert three_snapshots.list_tags() == [tag]
    assert ids(three_snapshots.to_arrow(tag="kept")) == [1, 2, 3]


@pytest.mark.parametrize(
    "retained",
    [
        None,
        timedelta(seconds=1),
        timedelta(days=400, microseconds=999_999),
    ],
)
def test_create_returns_the_tag_that_is_read_back(
    three_snapshots: shoal.Table, retained: timedelta | None
) -> None:
    try:
        created = three_snapshots.create_tag("t", 2, retained)
    except shoal.InvalidArgumentError:
        assert retained is not None
        assert retained < timedelta(0)
        return
    assert three_snapshots.list_tags() == [created]
    assert shoal.open_table(three_snapshots.path).list_tags() == [created]


def test_default_retention_comes_from_the_table_options(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", PK_SCHEMA, options={"tag.default-time-retained": "3 d"})
    table.append(pk_rows({1: "a"}))
    assert table.create_tag("default").time_retained == timedelta(days=3)
    assert table.create_tag("own", time_retained=timedelta(hours=1)).time_retained == (
        timedelta(hours=1)
    )
    assert {t.name: t.time_retained for t in table.list_tags()} == {
        "default": timedelta(days=3),
        "own": timedelta(hours=1),
    }


def test_missing_snapshots(events_table: shoal.Table) -> None:
    with pytest.raises(shoal.SnapshotNotFoundError):
        events_table.create_tag("nothing-yet")
    events_table.append(events([1]))
    for missing in (0, 2, 99):
        with pytest.raises(shoal.SnapshotNotFoundError) as info:
            events_table.create_tag("gone", snapshot_id=missing)
        assert info.value.snapshot_id == missing
    assert events_table.list_tags() == []
    assert not tag_file(events_table, "gone").exists()


def test_a_taken_name_is_refused_and_the_tag_stays(three_snapshots: shoal.Table) -> None:
    table = three_snapshots
    table.create_tag("v1", 1)
    content = tag_file(table, "v1").read_bytes()
    with pytest.raises(shoal.TagAlreadyExistsError) as info:
        table.create_tag("v1", 3)
    assert info.value.tag == "v1"
    with pytest.raises(shoal.TagAlreadyExistsError):
        table.create_tag("v1", 3, timedelta(days=1))
    assert tag_file(table, "v1").read_bytes() == content
    assert ids(table.to_arrow(tag="v1")) == [1, 2]


def test_replace_moves_the_tag(three_snapshots: shoal.Table) -> None:
    table = three_snapshots
    table.create_tag("moving", 1)
    moved = table.create_tag("moving", 3, replace=True)
    assert moved == shoal.Tag("moving", 3, None, None)
    assert table.list_tags() == [moved]
    assert ids(table.to_arrow(tag="moving")) == [1, 2, 3, 4, 5, 6]
    back = table.create_tag("moving", 2, timedelta(hours=5), replace=True)
    assert (back.snapshot_id, back.time_retained) == (2, timedelta(hours=5))
    assert table.list_tags() == [back]
    assert ids(table.to_arrow(tag="moving")) == [1, 2, 3]


@pytest.mark.parametrize("name", ["", "   ", "42", "a/b", "../x", "a\\b", ".."])
def test_invalid_names_write_nothing(three_snapshots: shoal.Table, name: str) -> None:
    with pytest.raises(shoal.InvalidTagNameError):
        three_snapshots.create_tag(name)
    assert three_snapshots.list_tags() == []
    tag_dir = Path(three_snapshots.path) / "tag"
    assert not tag_dir.exists() or list(tag_dir.iterdir()) == []
    assert not (Path(three_snapshots.path) / "x").exists()


@pytest.mark.parametrize("name", ["v1.0", "2026-11-01", "release_1", "2026-11-01 13"])
def test_valid_names(three_snapshots: shoal.Table, name: str) -> None:
    assert three_snapshots.create_tag(name, 1).name == name
    assert [t.name for t in three_snapshots.list_tags()] == [name]
    assert ids(three_snapshots.to_arrow(tag=name)) == [1, 2]


def test_list_is_ordered_by_snapshot_then_name(three_snapshots: shoal.Table) -> None:
    table = three_snapshots
    for name, snapshot_id in [("z", 1), ("b", 3), ("a", 3), ("m", 2), ("c", 1)]:
        table.create_tag(name, snapshot_id)
    assert [(t.snapshot_id, t.name) for t in table.list_tags()] == [
        (1, "c"),
        (1, "z"),
        (2, "m"),
        (3, "a"),
        (3, "b"),
    ]


# --- one winner ---------------------------------------------------------------------------


def _race(path: str, snapshot_id: int, barrier: threading.Barrier | None) -> bool:
    table = shoal.open_table(path)
    if barrier is not None:
        barrier.wait()
    try:
        table.create_tag("race", snapshot_id)
    except shoal.TagAlreadyExistsError:
        return False
    return True


def _race_in_process(path: str, snapshot_id: int, barrier: threading.Barrier) -> None:
    raise SystemExit(0 if _race(path, snapshot_id, barrier) else 3)


def _snapshots(table: shoal.Table, n: int) -> None:
    for i in range(n):
        table.append(events([i]))


def test_one_winner_among_threads(events_table: shoal.Table) -> None:
    _snapshots(events_table, 8)
    barrier = threading.Barrier(8)
    won: dict[int, bool] = {}

    def run(snapshot_id: int) -> None:
        won[snapshot_id] = _race(events_table.path, snapshot_id, barrier)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [snapshot_id for snapshot_id, ok in won.items() if ok]
    assert len(won) == 8
    assert len(winners) == 1
    # The tag is the winner's, whole.
    assert [(t.name, t.snapshot_id) for t in events_table.list_tags()] == [("race", winners[0])]
    assert tag_file(events_table, "race").read_bytes() == (
        snapshot_file(events_table, winners[0]).read_bytes()
    )
    assert sorted(os.listdir(Path(events_table.path) / "tag")) == ["tag-race"]


def test_one_winner_among_processes(events_table: shoal.Table) -> None:
    _snapshots(events_table, 3)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(3)
    processes = {
        snapshot_id: context.Process(
            target=_race_in_process, args=(events_table.path, snapshot_id, barrier)
        )
        for snapshot_id in (1, 2, 3)
    }
    for p in processes.values():
        p.start()
    for p in processes.values():
        p.join(timeout=120)
    codes = {snapshot_id: p.exitcode for snapshot_id, p in processes.items()}
    assert sorted(-1 if c is None else c for c in codes.values()) == [0, 3, 3], codes
    (winner,) = [snapshot_id for snapshot_id, code in codes.items() if code == 0]
    assert [(t.name, t.snapshot_id) for t in events_table.list_tags()] == [("race", winner)]
    assert tag_file(events_table, "race").read_bytes() == (
        snapshot_file(events_table, winner).read_bytes()
    )
    assert sorted(os.listdir(Path(events_table.path) / "tag")) == ["tag-race"]


# --- rename and delete --------------------------------------------------------------------


@pytest.mark.parametrize("retention", [None, timedelta(days=2, microseconds=7)])
def test_rename_keeps_snapshot_create_time_and_retention(
    three_snapshots: shoal.Table, retention: timedelta | None
) -> None:
    table = three_snapshots
    original = table.create_tag("old", 2, retention)
    content = tag_file(table, "old").read_bytes()
    table.rename_tag("old", "new")
    (renamed,) = table.list_tags()
    assert renamed == shoal.Tag("new", 2, original.create_time, retention)
    assert tag_file(table, "new").read_bytes() == content
    assert not tag_file(table, "old").exists()
    assert ids(table.to_arrow(tag="new")) == [1, 2, 3]
    with pytest.raises(shoal.TagNotFoundError):
        table.to_arrow(tag="old")


def test_rename_onto_a_taken_name_changes_nothing(three_snapshots: shoal.Table) -> None:
    table = three_snapshots
    table.create_tag("a", 1, timedelta(hours=1))
    table.create_tag("b", 3)
    before = table.list_tags()
    files = {n: tag_file(table, n).read_bytes() for n in ("a", "b")}
    with pytest.raises(shoal.TagAlreadyExistsError) as info:
        table.rename_tag("a", "b")
    assert info.value.tag == "b"
    with pytest.raises(shoal.TagAlreadyExistsError):
        table.rename_tag("a", "a")
    assert table.list_tags() == before
    assert {n: tag_file(table, n).read_bytes() for n in ("a", "b")} == files
    assert ids(table.to_arrow(tag="a")) == [1, 2]


def test_rename_errors(three_snapshots: shoal.Table) -> None:
    table = three_snapshots
    table.create_tag("a", 1)
    with pytest.raises(shoal.TagNotFoundError) as info:
        table.rename_tag("missing", "b")
    assert info.value.tag == "missing"
    for bad in ("", "7", "x/y", ".."):
        with pytest.raises(shoal.InvalidTagNameError):
            table.rename_tag("a", bad)
    assert [t.name for t in table.list_tags()] == ["a"]
    assert sorted(os.listdir(Path(table.path) / "tag")) == ["tag-a"]


def test_delete(three_snapshots: shoal.Table) -> None:
    table = three_snapshots
    table.create_tag("a", 1)
    table.create_tag("b", 2)
    table.delete_tag("a")
    assert [t.name for t in table.list_tags()] == ["b"]
    assert not tag_file(table, "a").exists()
    with pytest.raises(shoal.TagNotFoundError) as info:
        table.delete_tag("a")
    assert info.value.tag == "a"
    with pytest.raises(shoal.TagNotFoundError):
        table.to_arrow(tag="a")
    with pytest.raises(shoal.TagNotFoundError):
        table.rename_tag("a", "c")
    # The snapshot the tag held is untouched, and the name can be used again.
    assert ids(table.to_arrow(snapshot_id=1)) == [1, 2]
    assert table.create_tag("a", 3).snapshot_id == 3
    assert ids(table.to_arrow(tag="a")) == [1, 2, 3, 4, 5, 6]


# --- reading a tag ------------------------------------------------------------------------


def test_append_table_tag_reads_its_snapshot_after_the_table_moves_on(
    events_table: shoal.Table,
) -> None:
    table = events_table
    table.append(events(range(10), dt=["2026-11-01", "2026-11-02"] * 5))
    table.create_tag("t1", time_retained=timedelta(days=30))
    at_t1 = sorted_rows(table.to_arrow(), "id")
    table.append(events(range(10, 15), dt="2026-11-03"))
    table.create_tag("t2")
    at_t2 = sorted_rows(table.to_arrow(), "id")
    table.overwrite(events([100, 101], dt="2026-11-01"), partition={"dt": "2026-11-01"})
    table.drop_partitions([{"dt": "2026-11-03"}])
    table.overwrite(events([200]))
    table.append(events([300], dt="2026-11-09"))
    assert ids(table.to_arrow()) == [200, 300]
    for name, expected in (("t1", at_t1), ("t2", at_t2)):
        assert sorted_rows(table.to_arrow(tag=name), "id") == expected
        snapshot_id = {t.name: t.snapshot_id for t in table.list_tags()}[name]
        assert sorted_rows(table.to_arrow(snapshot_id=snapshot_id), "id") == expected
    # Projection and filters go through the tag's snapshot as well.
    got = table.to_arrow(tag="t2", columns=["id"], filter=[("dt", "=", "2026-11-03")])
    assert got.column_names == ["id"]
    assert ids(got) == [10, 11, 12, 13, 14]
    planned = table.scan(tag="t1")
    assert planned.snapshot is not None
    assert planned.snapshot.id == 1
    assert sorted_rows(planned.to_arrow(), "id") == at_t1


@pytest.fixture
def pk_table(catalog: shoal.Catalog) -> shoal.Table:
    return catalog.create_table("db.pk", PK_SCHEMA, primary_keys=["id"], options={"bucket": "2"})


def test_primary_key_tag_reads_its_snapshot_after_updates_overwrite_and_compaction(
    pk_table: shoal.Table,
) -> None:
    table = pk_table
    table.upsert(pk_rows({i: f"a{i}" for i in range(20)}))
    table.upsert(pk_rows({i: f"b{i}" for i in range(0, 20, 2)}))
    table.create_tag("before-delete")
    expected = {"before-delete": sorted_rows(table.to_arrow(), "id")}
    assert expected["before-delete"][:2] == [{"id": 0, "v": "b0"}, {"id": 1, "v": "a1"}]
    table.delete(pa.table({"id": pa.array([0, 1, 2], pa.int64())}))
    table.upsert(pk_rows({3: "c3", 50: "c50"}))
    table.create_tag("before-compact", time_retained=timedelta(days=1))
    expected["before-compact"] = sorted_rows(table.to_arrow(), "id")
    result = table.compact("full")
    assert result.snapshot is not None
    table.create_tag("compacted")
    expected["compacted"] = sorted_rows(table.to_arrow(), "id")
    assert expected["compacted"] == expected["before-compact"]
    table.upsert(pk_rows({3: "d3", 60: "d60"}))
    table.overwrite(pk_rows({7: "o7", 8: "o8"}))
    table.upsert(pk_rows({8: "e8"}))
    assert sorted_rows(table.to_arrow(), "id") == [{"id": 7, "v": "o7"}, {"id": 8, "v": "e8"}]

    reopened = shoal.open_table(table.path)
    for name, rows in expected.items():
        assert sorted_rows(reopened.to_arrow(tag=name), "id") == rows, name
    assert [t.name for t in reopened.list_tags()] == [
        "before-delete",
        "before-compact",
        "compacted",
    ]
    got = reopened.to_arrow(tag="before-compact", filter=[("id", "in", [3, 4, 50])])
    assert sorted_rows(got, "id") == [
        {"id": 3, "v": "c3"},
        {"id": 4, "v": "b4"},
        {"id": 50, "v": "c50"},
    ]


def test_tags_survive_reopening(catalog: shoal.Catalog, three_snapshots: shoal.Table) -> None:
    table = three_snapshots
    table.create_tag("plain", 1)
    table.create_tag("kept", 2, timedelta(hours=36, milliseconds=250))
    tags = table.list_tags()
    for reopened in (shoal.open_table(table.path), catalog.get_table("db.events")):
        assert reopened.list_tags() == tags
        assert ids(reopened.to_arrow(tag="plain")) == [1, 2]
        assert ids(reopened.to_arrow(tag="kept")) == [1, 2, 3]
        assert reopened.system_table("tags").equals(table.system_table("tags"))


def test_a_corrupt_tag_file_names_its_path(three_snapshots: shoal.Table) -> None:
    table = three_snapshots
    table.create_tag("good", 1)
    table.create_tag("bad", 2)
    path = tag_file(table, "bad")
    path.write_text('{"id": 2, "schemaId"')
    for read in (
        lambda: table.to_arrow(tag="bad"),
        table.list_tags,
        lambda: table.system_table("tags"),
    ):
        with pytest.raises(shoal.CorruptMetadataError) as info:
            read()
        assert info.value.path.endswith("tag/tag-bad")
        assert "tag-bad" in str(info.value)
    assert ids(table.to_arrow(tag="good")) == [1, 2]


# --- the tags system table ----------------------------------------------------------------


def test_tags_system_table_columns_and_values(three_snapshots: shoal.Table) -> None:
    table = three_snapshots
    table.create_tag("plain", 1)
    kept = table.create_tag("kept", 3, timedelta(hours=25, minutes=1))
    tags = table.system_table("tags")
    assert tags.schema == pa.schema(
        [
            ("tag_name", pa.string()),
            ("snapshot_id", pa.int64()),
            ("schema_id", pa.int64()),
            ("commit_time", pa.timestamp("ms")),
            ("record_count", pa.int64()),
            ("create_time", pa.timestamp("ms")),
            ("time_retained", pa.string()),
        ]
    )
    commit_times = {
        row["snapshot_id"]: row["commit_time"]
        for row in table.system_table("snapshots").to_pylist()
    }
    assert kept.create_time is not None
    assert tags.to_pylist() == [
        {
            "tag_name": "plain",
            "snapshot_id": 1,
            "schema_id": 0,
            "commit_time": commit_times[1],
            "record_count": 2,
            "create_time": None,
            "time_retained": None,
        },
        {
            "tag_name": "kept",
            "snapshot_id": 3,
            "schema_id": 0,
            "commit_time": commit_times[3],
            "record_count": 6,
            "create_time": kept.create_time.replace(
                microsecond=kept.create_time.microsecond // 1000 * 1000
            ),
            "time_retained": "PT25H1M",
        },
    ]
    assert commit_times[1] == datetime.fromtimestamp(table.snapshot(1).time_millis / 1000)


def test_tags_system_table_of_a_table_without_tags(events_table: shoal.Table) -> None:
    tags = events_table.system_table("tags")
    assert tags.column_names == TAGS_COLUMNS
    assert tags.num_rows == 0


@pytest.mark.parametrize(
    ("retained", "text"),
    [
        (timedelta(seconds=5), "PT5S"),
        (timedelta(seconds=90), "PT1M30S"),
        (timedelta(days=1), "PT24H"),
        (timedelta(days=7, hours=1), "PT169H"),
        (timedelta(hours=1, seconds=1), "PT1H1S"),
        (timedelta(milliseconds=1500), "PT1.5S"),
        (timedelta(microseconds=250), "PT0.00025S"),
        (timedelta(0), "PT0S"),
    ],
)
def test_tags_system_table_shows_retention_as_java_duration(
    three_snapshots: shoal.Table, retained: timedelta, text: str
) -> None:
    three_snapshots.create_tag("t", time_retained=retained)
    assert three_snapshots.system_table("tags").column("time_retained").to_pylist() == [text]


@pytest.mark.parametrize("bad", [timedelta(microseconds=-1), 5, "soon"])
def test_invalid_retention_is_refused(three_snapshots: shoal.Table, bad: object) -> None:
    with pytest.raises(shoal.InvalidArgumentError, match="time_retained"):
        three_snapshots.create_tag("t", time_retained=bad)  # type: ignore[arg-type]
    assert three_snapshots.list_tags() == []


def test_retention_as_a_duration_string(three_snapshots: shoal.Table) -> None:
    assert three_snapshots.create_tag("t", time_retained="1 d").time_retained == timedelta(days=1)
