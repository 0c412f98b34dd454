"""Snapshot expiration: the range rule, what goes with the snapshots, what stays."""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from shoal.cleanup.expire import ExpireResult
from tests.conftest import EVENTS_SCHEMA, events
from tests.reachability import reachable, rows_of_every_root, stored

LATER = datetime.now() + timedelta(days=1)  # every snapshot is older than this


def _table(tmp_path: Path, **options: str) -> shoal.Table:
    return shoal.Catalog(str(tmp_path)).create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=["dt"], options=options
    )


def _commits(table: shoal.Table, n: int, *, spaced: bool = False) -> None:
    """``n`` commits; every third overwrites day 1, so files get deleted."""
    start = (table.latest_snapshot().id if table.latest_snapshot() else 0) + 1
    for i in range(start, start + n):
        if i % 3 == 0:
            table.overwrite(events([i], dt="2026-11-01"), partition={"dt": "2026-11-01"})
        else:
            table.append(events([i], dt=f"2026-11-0{1 + i % 2}"))
        if spaced:
            time.sleep(0.003)  # distinct commit times


def _ids(table: shoal.Table) -> list[int]:
    return [s.id for s in shoal.open_table(table.path).snapshots()]


def _assert_exact(table: shoal.Table, rows_before: dict[str, list[dict[str, object]]]) -> None:
    """Every remaining snapshot and tag reads as before, and the files under the table
    are exactly those they reach."""
    reopened = shoal.open_table(table.path)
    after = rows_of_every_root(reopened)
    assert after == {k: rows_before[k] for k in after}
    assert stored(reopened) == reachable(reopened)


# --- the cost ---------------------------------------------------------------------------------
def test_expiration_reads_the_expired_snapshots_not_the_history(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commits(t, 40)
    before = rows_of_every_root(t)
    table = shoal.open_table(t.path)
    file_io = table._store.file_io
    read = file_io.read_bytes
    snapshots_read: set[int] = set()

    def counted(path: str) -> bytes:
        name = path.rsplit("/", 1)[-1]
        if name.startswith("snapshot-"):
            snapshots_read.add(int(name.removeprefix("snapshot-")))
        return read(path)

    file_io.read_bytes = counted  # type: ignore[method-assign]
    assert table.expire_snapshots(older_than=LATER, max_deletes=3).expired_snapshots == 3
    # snapshots 1..3 go; 4 is the oldest kept. Of the 36 kept after it, none is read.
    assert snapshots_read <= {1, 2, 3, 4}
    assert _ids(t) == list(range(4, 41))
    _assert_exact(t, before)


# --- the range -------------------------------------------------------------------------------
def test_retain_max_expires_the_oldest(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commits(t, 20)
    before = rows_of_every_root(t)
    result = t.expire_snapshots(retain_max=5, older_than=LATER)
    assert result.expired_snapshots == 15
    assert result.deleted_data_files > 0
    assert result.deleted_manifest_files > 0
    assert _ids(t) == list(range(16, 21))
    assert (Path(t.path) / "snapshot" / "EARLIEST").read_text() == "16"
    _assert_exact(t, before)


def test_retain_min_keeps_the_newest_whatever_their_age(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commits(t, 12)
    t.expire_snapshots(retain_min=4, older_than=LATER)
    assert _ids(t) == list(range(9, 13))


def test_defaults_keep_ten_and_an_hour(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commits(t, 14)
    assert t.expire_snapshots() == ExpireResult(0, 0, 0)  # all younger than an hour
    assert t.expire_snapshots(older_than=LATER).expired_snapshots == 4  # ten stay
    assert _ids(t) == list(range(5, 15))


def test_a_snapshot_goes_only_when_its_successor_is_older_than_the_threshold(
    tmp_path: Path,
) -> None:
    t = _table(tmp_path)
    _commits(t, 8, spaced=True)
    # Snapshot 4 was current until snapshot 5 was committed: with the threshold at
    # snapshot 5's time, snapshot 4 stays readable.
    threshold = datetime.fromtimestamp(t.snapshot(5).time_millis / 1000)
    t.expire_snapshots(retain_min=1, older_than=threshold)
    assert _ids(t) == list(range(4, 9))


def test_retain_max_overrides_age(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commits(t, 8)
    # Nothing is old, but at most three are kept.
    t.expire_snapshots(retain_max=3, older_than=datetime(2000, 1, 1))
    assert _ids(t) == [6, 7, 8]


def test_max_deletes_limits_one_run(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commits(t, 12)
    before = rows_of_every_root(t)
    assert t.expire_snapshots(retain_max=2, older_than=LATER, max_deletes=4).expired_snapshots == 4
    assert _ids(t)[0] == 5
    assert t.expire_snapshots(retain_max=2, older_than=LATER, max_deletes=4).expired_snapshots == 4
    assert t.expire_snapshots(retain_max=2, older_than=LATER, max_deletes=4).expired_snapshots == 2
    assert _ids(t) == [11, 12]
    _assert_exact(t, before)


def test_option_limit_and_retention(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        **{
            "snapshot.num-retained.min": "2",
            "snapshot.num-retained.max": "3",
            "snapshot.expire.limit": "100",
            "write-only": "true",  # no expiration after commits: test the call
        },
    )
    _commits(t, 9)
    assert _ids(t) == list(range(1, 10))
    assert t.expire_snapshots().expired_snapshots == 6
    assert _ids(t) == [7, 8, 9]


def test_retain_max_alone_lowers_retain_min(tmp_path: Path) -> None:
    t = _table(tmp_path)  # snapshot.num-retained.min defaults to 10
    _commits(t, 6)
    t.expire_snapshots(retain_max=2, older_than=LATER)
    assert _ids(t) == [5, 6]


def test_nothing_to_expire_writes_a_missing_earliest_hint(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commits(t, 3)
    hint = Path(t.path) / "snapshot" / "EARLIEST"
    hint.unlink()
    assert t.expire_snapshots(older_than=LATER) == ExpireResult()
    assert hint.read_text() == "1"


def test_empty_table(tmp_path: Path) -> None:
    assert _table(tmp_path).expire_snapshots(retain_max=1) == ExpireResult()


# --- expiration after each commit -------------------------------------------------------------
def test_commits_expire_by_the_options(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        **{
            "snapshot.num-retained.min": "3",
            "snapshot.num-retained.max": "3",
        },
    )
    _commits(t, 10)
    assert _ids(t) == [8, 9, 10]
    assert stored(t) == reachable(shoal.open_table(t.path))


def test_write_only_tables_do_not_expire_after_commits(tmp_path: Path) -> None:
    t = _table(
        tmp_path,
        **{
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "1",
            "write-only": "true",
        },
    )
    _commits(t, 4)
    assert _ids(t) == [1, 2, 3, 4]


# --- validation ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"retain_min": 0}, shoal.InvalidArgumentError),
        ({"retain_max": 0}, shoal.InvalidArgumentError),
        ({"retain_min": 5, "retain_max": 4}, shoal.InvalidArgumentError),
        ({"max_deletes": 0}, shoal.InvalidArgumentError),
        ({"older_than": "yesterday"}, shoal.InvalidArgumentError),
        ({"retain_min": 2.5}, shoal.InvalidArgumentError),
    ],
)
def test_invalid_arguments_touch_nothing(
    tmp_path: Path, kwargs: dict[str, object], error: type[Exception]
) -> None:
    t = _table(tmp_path)
    _commits(t, 4)
    files = stored(t)
    with pytest.raises(error):
        t.expire_snapshots(**kwargs)  # type: ignore[arg-type]
    assert _ids(t) == [1, 2, 3, 4]
    assert stored(t) == files


@pytest.mark.parametrize(
    "options",
    [
        {"snapshot.num-retained.min": "0"},
        {"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "4"},
        {"snapshot.time-retained": "soon"},
        {"snapshot.expire.limit": "-1"},
    ],
)
def test_invalid_options_touch_nothing(tmp_path: Path, options: dict[str, str]) -> None:
    t = _table(tmp_path, **{"write-only": "true"})
    _commits(t, 4)
    raw = dict(t.options, **options)
    store = t._store
    store.options = shoal.options.Options(raw)  # as if the schema held them
    files = stored(t)
    with pytest.raises(shoal.InvalidOptionError):
        t.expire_snapshots()
    assert _ids(t) == [1, 2, 3, 4]
    assert stored(t) == files


# --- what goes and what stays --------------------------------------------------------------
def test_files_live_in_a_tag_stay_and_the_tag_reads_after_its_snapshot_expires(
    tmp_path: Path,
) -> None:
    t = _table(tmp_path)
    _commits(t, 4)  # snapshot 3 overwrote day 1
    t.create_tag("v4")
    _commits(t, 8)  # snapshots 6, 9, 12 overwrite day 1 again
    t.create_tag("v10", snapshot_id=10)
    before = rows_of_every_root(t)
    t.expire_snapshots(retain_max=1, older_than=LATER)
    assert _ids(t) == [12]
    reopened = shoal.open_table(t.path)
    assert rows_of_every_root(reopened) == {k: before[k] for k in ("s12", "t:v4", "t:v10")}
    _assert_exact(t, before)
    # Deleting the tags later frees their files, by the neighbour rule.
    reopened.delete_tag("v4")
    reopened.delete_tag("v10")
    assert stored(reopened) == reachable(shoal.open_table(t.path))


def test_a_tag_older_than_the_range_keeps_its_files(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commits(t, 2)
    t.create_tag("early")
    _commits(t, 3)
    before = rows_of_every_root(t)
    t.expire_snapshots(retain_max=3, older_than=LATER)  # snapshots 1, 2 go
    t.expire_snapshots(retain_max=1, older_than=LATER)  # then 3, 4
    _assert_exact(t, before)
    assert shoal.open_table(t.path).to_arrow(tag="early").num_rows == 2


def test_manifests_of_the_oldest_kept_snapshot_stay(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"manifest.merge-min-count": "1000"})  # manifests carried along
    _commits(t, 6)
    before = rows_of_every_root(t)
    t.expire_snapshots(retain_max=2, older_than=LATER)
    _assert_exact(t, before)


def test_dropped_partition_files_go_when_the_drop_is_the_oldest_kept(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1, 2], dt="2026-11-01"))
    t.append(events([3], dt="2026-11-02"))
    t.drop_partitions([{"dt": "2026-11-01"}])
    day1 = Path(t.path) / "dt=2026-11-01" / "bucket-0"
    assert len(os.listdir(day1)) == 1  # the drop deletes nothing by itself
    t.expire_snapshots(retain_max=2, older_than=LATER)  # snapshot 2 still has day 1
    assert len(os.listdir(day1)) == 1
    t.expire_snapshots(retain_max=1, older_than=LATER)
    assert os.listdir(day1) == []
    assert sorted(t.to_arrow().column("id").to_pylist()) == [3]


def test_clean_empty_directories(tmp_path: Path) -> None:
    t = _table(tmp_path, **{"snapshot.clean-empty-directories": "true"})
    t.append(events([1], dt="2026-11-01"))
    t.append(events([2], dt="2026-11-02"))
    t.drop_partitions([{"dt": "2026-11-01"}])
    t.expire_snapshots(retain_max=1, older_than=LATER)
    assert not (Path(t.path) / "dt=2026-11-01").exists()
    assert (Path(t.path) / "dt=2026-11-02" / "bucket-0").exists()
    assert Path(t.path).is_dir()


def test_empty_directories_stay_by_default(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1], dt="2026-11-01"))
    t.drop_partitions([{"dt": "2026-11-01"}])
    t.append(events([2], dt="2026-11-02"))
    t.expire_snapshots(retain_max=1, older_than=LATER)
    assert (Path(t.path) / "dt=2026-11-01" / "bucket-0").is_dir()


def test_primary_key_table(tmp_path: Path) -> None:
    t = shoal.Catalog(str(tmp_path)).create_table(
        "db.pk",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2"},
    )
    for i in range(6):
        t.upsert(events(range(i, i + 4)))
        if i == 3:
            t.delete(events([1, 2]))
    t.compact(strategy="full")
    t.create_tag("compacted")
    t.upsert(events([100]))
    before = rows_of_every_root(t)
    result = t.expire_snapshots(retain_max=1, older_than=LATER)
    assert result.deleted_data_files > 0
    _assert_exact(t, before)
    assert sorted(t.to_arrow().column("id").to_pylist()) == [0, 3, 4, 5, 6, 7, 8, 100]


def test_extra_files_go_with_their_data_file(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    store = t._store
    # Give the first file an extra file, as a writer of file indexes would.
    entry = shoal.core.plan.live_entries(store, t.latest_snapshot())[0]
    bucket_dir = store.paths.bucket_dir(store.partitions.path(entry.partition), entry.bucket)
    extra = Path(bucket_dir) / f"{entry.file.file_name}.index"
    extra.write_bytes(b"index")
    _rewrite_with_extra_file(t, entry.file.file_name, extra.name)
    t.overwrite(events([2]))
    t.expire_snapshots(retain_max=1, older_than=LATER)
    assert not extra.exists()


def _rewrite_with_extra_file(table: shoal.Table, file_name: str, extra: str) -> None:
    """Rewrite snapshot 1's delta manifest so its entry names ``extra``."""
    from dataclasses import replace

    from shoal.format import manifest as M

    store = table._store
    snapshot = table.snapshot(1)
    (meta,) = store.manifests.read_list(snapshot.delta_manifest_list)
    entries = [
        replace(e, file=replace(e.file, extra_files=(extra,)))
        if e.file.file_name == file_name
        else e
        for e in store.manifests.read_manifest(meta.file_name)
    ]
    Path(store.paths.manifest_path(meta.file_name)).write_bytes(
        M.encode_manifest(entries, store.manifests.compression)
    )
    store.manifests._entries = type(store.manifests._entries)(10**6)


# --- unreadable metadata and interrupted runs ---------------------------------------------------
def test_an_unreadable_delta_keeps_its_files(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    t = _table(tmp_path)
    _commits(t, 6)  # snapshots 3 and 6 overwrite day 1
    snapshot = t.snapshot(3)
    (meta,) = t._store.manifests.read_list(snapshot.delta_manifest_list)
    deleted = [e for e in t._store.manifests.read_manifest(meta.file_name) if e.kind == 1]
    assert deleted
    # Its delta list is read by expiration only (the manifests it names are also in
    # later snapshots' base lists).
    Path(t._store.paths.manifest_path(snapshot.delta_manifest_list)).write_bytes(b"garbage")
    reopened = shoal.open_table(t.path)
    with caplog.at_level(logging.WARNING, logger="shoal.cleanup.expire"):
        reopened.expire_snapshots(retain_max=2, older_than=LATER)
    assert "cannot be read" in caplog.text
    store = reopened._store
    for e in deleted:  # the files snapshot 3 deleted were left in place
        bucket_dir = store.paths.bucket_dir(store.partitions.path(e.partition), e.bucket)
        assert os.path.exists(f"{bucket_dir}/{e.file.file_name}")
    assert _ids(t) == [5, 6]
    assert reopened.to_arrow().num_rows == shoal.open_table(t.path).to_arrow().num_rows


def test_an_unreadable_manifest_of_the_kept_snapshot_deletes_no_manifest(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commits(t, 5)
    manifests_before = set(os.listdir(Path(t.path) / "manifest"))
    kept = t.snapshot(4)
    Path(t._store.paths.manifest_path(kept.base_manifest_list)).write_bytes(b"garbage")
    shoal.open_table(t.path).expire_snapshots(retain_max=2, older_than=LATER)
    assert set(os.listdir(Path(t.path) / "manifest")) == manifests_before
    assert _ids(t) == [4, 5]


def test_a_gap_means_the_snapshots_below_it_were_expired(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commits(t, 8)
    before = rows_of_every_root(t)
    os.unlink(Path(t.path) / "snapshot" / "snapshot-3")  # an interrupted earlier cleanup
    result = shoal.open_table(t.path).expire_snapshots(retain_max=3, older_than=LATER)
    assert result.expired_snapshots == 4  # 4 and 5 properly, 1 and 2 as leftovers
    assert _ids(t) == [6, 7, 8]
    reopened = shoal.open_table(t.path)
    assert rows_of_every_root(reopened) == {k: before[k] for k in ("s6", "s7", "s8")}
    assert reachable(reopened) <= stored(reopened)


def test_a_rerun_after_a_partial_run_finishes_the_job(tmp_path: Path) -> None:
    reference = _table(tmp_path / "a")
    _commits(reference, 12)
    partial = _table(tmp_path / "b")
    _commits(partial, 12)
    before = rows_of_every_root(partial)
    reference.expire_snapshots(retain_max=3, older_than=LATER)
    # The first run stopped after deleting the data files and some manifests.
    store = partial._store
    from shoal.cleanup import expire as E

    config = E.ExpireConfig.of(store, retain_max=3, older_than=LATER)
    by_id = {i: store.snapshots.snapshot(i) for i in range(1, 11)}
    plan = E._plan(E._Range(store, by_id, 1, 10, []))
    for path in plan.data_files + plan.manifests[: len(plan.manifests) // 2]:
        os.unlink(path)
    shoal.open_table(partial.path).expire_snapshots(
        retain_max=config.retain_max, older_than=LATER
    )
    _assert_exact(partial, before)
    relative = {os.path.relpath(p, partial.path) for p in stored(partial)}
    assert len(relative) == len(stored(reference))


def test_expire_snapshots_removes_tags_whose_retention_passed(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _commits(t, 3)
    t.create_tag("short", time_retained=timedelta(milliseconds=1))
    t.create_tag("forever")
    time.sleep(0.01)
    t.expire_snapshots()
    assert [tag.name for tag in t.list_tags()] == ["forever"]


def test_result_is_frozen() -> None:
    result = ExpireResult(1, 2, 3)
    with pytest.raises(AttributeError):
        result.expired_snapshots = 5  # type: ignore[misc]
    assert pa is not None


def test_contradicting_retention_options_are_refused_at_creation(tmp_path: Path) -> None:
    with pytest.raises(shoal.InvalidOptionError, match=r"snapshot\.num-retained\.max"):
        _table(tmp_path, **{"snapshot.num-retained.max": "5"})  # min defaults to 10
