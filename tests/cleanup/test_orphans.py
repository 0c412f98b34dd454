"""Orphan file cleanup: exactly the files nothing reaches go, once they are old enough."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import shoal
from shoal.cleanup import orphans
from shoal.cleanup.orphans import OrphanFilesResult
from shoal.core.tag_manager import TagManager
from shoal.format import manifest as M
from shoal.format.index_manifest import (
    HASH_INDEX,
    IndexFileMeta,
    IndexManifestEntry,
    encode_index_manifest,
)
from shoal.format.snapshot import Snapshot
from tests.conftest import EVENTS_SCHEMA, events
from tests.reachability import rows_of_every_root

DAY1, DAY2 = "2026-11-01", "2026-11-02"
# Manifests holding deletes are rewritten at the next commit, so files deleted in
# history stop being named by later snapshots.
REWRITE = {"manifest.full-compaction-threshold-size": "1 b"}


def _table(tmp_path: Path, *, keys: tuple[str, ...] = ("dt",), **options: str) -> shoal.Table:
    return shoal.Catalog(str(tmp_path)).create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=list(keys), options=options
    )


def _pk_table(tmp_path: Path, **options: str) -> shoal.Table:
    return shoal.Catalog(str(tmp_path)).create_table(
        "db.t",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "1", **options},
    )


def _age(root: str, days: float = 2) -> None:
    """Make every file and directory under ``root`` look ``days`` old."""
    old = time.time() - days * 86400
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            os.utime(os.path.join(directory, name), (old, old))
    os.utime(root, (old, old))


def _stray(table: shoal.Table, relative: str, data: bytes = b"stray") -> str:
    path = os.path.join(table.path, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _clean(table: shoal.Table, **kwargs: object) -> OrphanFilesResult:
    return shoal.open_table(table.path).remove_orphan_files(**kwargs)  # type: ignore[arg-type]


def _unlink_snapshots(table: shoal.Table, *snapshot_ids: int) -> None:
    """Remove snapshot files as expiration would, leaving their files behind."""
    for snapshot_id in snapshot_ids:
        os.unlink(os.path.join(table.path, "snapshot", f"snapshot-{snapshot_id}"))


def _all_files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, files in os.walk(root) for f in files}


def _reached(table: shoal.Table, roots: list[Snapshot] | None = None) -> set[str]:
    """Paths of everything ``roots`` (default: every snapshot and tag) name: manifest
    lists, manifests, and the files of every entry, ADD and DELETE alike."""
    store = shoal.open_table(table.path)._store
    if roots is None:
        roots = list(store.snapshots.snapshots())
        roots += [s for _, s in TagManager(store.file_io, store.paths).tags()]
    out: set[str] = set()
    for root in roots:
        for list_name in (root.base_manifest_list, root.delta_manifest_list):
            out.add(store.paths.manifest_path(list_name))
            for meta in store.manifests.read_list(list_name):
                out.add(store.paths.manifest_path(meta.file_name))
                for entry in store.manifests.read_manifest(meta.file_name):
                    partition = store.partitions.path(entry.partition)
                    bucket_dir = store.paths.bucket_dir(partition, entry.bucket)
                    out.add(f"{bucket_dir}/{entry.file.file_name}")
                    out.update(f"{bucket_dir}/{x}" for x in entry.file.extra_files)
    return out


def _cleaned(table: shoal.Table) -> set[str]:
    """The files in the directories cleanup owns (snapshot files and hints aside)."""

    def owned(path: str) -> bool:
        top = os.path.relpath(path, table.path).split(os.sep)[0]
        if top == "snapshot":
            return not re.fullmatch(r"snapshot-\d+|EARLIEST|LATEST", os.path.basename(path))
        return top in ("manifest", "index", "statistics") or "=" in top

    return {p for p in _all_files(table.path) if owned(p)}


# --- what goes -------------------------------------------------------------------------------
@pytest.mark.parametrize("keys", [(), ("dt",)])
def test_stray_data_files_and_manifests_go(tmp_path: Path, keys: tuple[str, ...]) -> None:
    t = _table(tmp_path, keys=keys)
    t.append(events([1, 2]))
    t.append(events([3]))
    before = rows_of_every_root(t)
    bucket = os.path.dirname(next(p for p in _all_files(t.path) if p.endswith(".parquet")))
    strays = {
        _stray(t, f"{os.path.relpath(bucket, t.path)}/data-0000-0.parquet", b"x" * 10),
        _stray(t, f"{os.path.relpath(bucket, t.path)}/data-0000-0.parquet.index", b"x" * 5),
        _stray(t, "manifest/manifest-0000-0", b"x" * 7),
        _stray(t, "manifest/manifest-list-0000-1", b"x" * 3),
    }
    used = _reached(t)
    _age(t.path)
    result = _clean(t)
    assert set(result.paths) == strays
    assert result.deleted_count == 4
    assert result.deleted_bytes == 25
    assert not any(os.path.exists(p) for p in strays)
    assert all(os.path.exists(p) for p in used)
    assert rows_of_every_root(shoal.open_table(t.path)) == before


def test_stray_files_in_snapshot_index_and_statistics_go(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    t.append(events([2]))
    strays = {
        _stray(t, "snapshot/.snapshot-3.1234abcd.tmp"),
        _stray(t, "snapshot/.LATEST.99.tmp"),
        _stray(t, "snapshot/snapshot-x"),
        _stray(t, "index/index-0000-0"),
        _stray(t, "statistics/stat-0000-0"),
    }
    snapshot_dir = os.path.join(t.path, "snapshot")
    kept = {os.path.join(snapshot_dir, n) for n in ("snapshot-1", "snapshot-2", "LATEST")}
    _age(t.path)
    result = _clean(t)
    assert set(result.paths) == strays
    assert all(os.path.exists(p) for p in kept)
    assert sorted(os.listdir(snapshot_dir)) == ["EARLIEST", "LATEST", "snapshot-1", "snapshot-2"]
    # The directories cleanup owns stay, even when empty.
    assert os.listdir(os.path.join(t.path, "index")) == []


def test_rollback_leftovers_go_and_what_retained_roots_use_stays(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))  # 1
    t.append(events([2]))  # 2
    t.create_tag("keep", snapshot_id=1)
    t.append(events([3], dt=DAY2))  # 3
    t.overwrite(events([4]))  # 4
    t.create_tag("late", snapshot_id=4)
    store = t._store
    retained = [store.snapshots.snapshot(i) for i in (1, 2)]
    dropped = [store.snapshots.snapshot(i) for i in (3, 4)]
    only_later = _reached(t, dropped) - _reached(t, retained)
    assert any(p.endswith(".parquet") for p in only_later)
    t.rollback_to(snapshot_id=2)
    before = rows_of_every_root(shoal.open_table(t.path))
    _age(t.path)
    result = _clean(t)
    assert set(result.paths) == only_later
    assert all(os.path.exists(p) for p in _reached(t, retained))
    reopened = shoal.open_table(t.path)
    assert rows_of_every_root(reopened) == before
    assert sorted(reopened.to_arrow(tag="keep").column("id").to_pylist()) == [1]
    # The partition only the rolled-back snapshot wrote is gone, directories and all.
    assert not os.path.exists(os.path.join(t.path, f"dt={DAY2}"))
    assert _cleaned(reopened) == _reached(reopened)


def test_files_of_a_tags_expired_snapshot_stay(tmp_path: Path) -> None:
    t = _table(tmp_path, **REWRITE)
    t.append(events([1]))  # 1
    t.create_tag("t1")
    t.overwrite(events([2]))  # 2
    t.overwrite(events([3]))  # 3
    t.append(events([4]))  # 4
    tag_files = _reached(t, [t._store.snapshots.snapshot(1)])
    only_snapshot_2 = _reached(t, [t._store.snapshots.snapshot(2)]) - _reached(
        t, [t._store.snapshots.snapshot(i) for i in (1, 3, 4)]
    )
    assert only_snapshot_2
    _unlink_snapshots(t, 1, 2)
    before = rows_of_every_root(shoal.open_table(t.path))
    _age(t.path)
    result = _clean(t)
    assert set(result.paths) == only_snapshot_2
    assert all(os.path.exists(p) for p in tag_files)
    reopened = shoal.open_table(t.path)
    assert reopened.to_arrow(tag="t1").column("id").to_pylist() == [1]
    assert rows_of_every_root(reopened) == before
    assert _cleaned(reopened) == _reached(reopened)


def test_files_of_branches_and_long_lived_changelogs_stay(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    t.append(events([2]))
    t.append(events([3]))
    snapshot_dir = os.path.join(t.path, "snapshot")
    branch = _stray(t, "branch/branch-b/snapshot/snapshot-2")
    shutil.copyfile(os.path.join(snapshot_dir, "snapshot-2"), branch)
    changelog = _stray(t, "changelog/changelog-3")
    shutil.copyfile(os.path.join(snapshot_dir, "snapshot-3"), changelog)
    needed = _reached(t)
    kept = Path(changelog).read_bytes()
    t.rollback_to(snapshot_id=1)
    assert not os.path.exists(changelog)  # a rollback removes later changelogs
    Path(changelog).write_bytes(kept)  # as if snapshot 3 had expired into it
    _age(t.path)
    result = _clean(t)
    assert result.deleted_count == 0
    assert all(os.path.exists(p) for p in needed)
    os.unlink(changelog)
    result = _clean(t)
    store = shoal.open_table(t.path)._store
    in_branch = _reached(t, [Snapshot.from_json(Path(branch).read_bytes(), branch)])
    assert set(result.paths) == needed - in_branch - _reached(t)
    assert all(os.path.exists(p) for p in in_branch)
    assert store.snapshots.latest_id() == 1


def test_index_manifest_its_index_files_and_statistics_named_by_a_snapshot_stay(
    tmp_path: Path,
) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    path = os.path.join(t.path, "snapshot", "snapshot-1")
    data = json.loads(Path(path).read_text())
    data["indexManifest"] = "index-manifest-0000-0"
    data["statistics"] = "stat-0000-0"
    Path(path).write_text(json.dumps(data))
    hash_file = IndexFileMeta(HASH_INDEX, "index-0000-0", 4, 1)
    entries = [IndexManifestEntry(M.KIND_ADD, b"", 0, hash_file)]
    kept = {
        _stray(t, "manifest/index-manifest-0000-0", encode_index_manifest(entries)),
        _stray(t, "statistics/stat-0000-0"),
        _stray(t, "index/index-0000-0"),
    }
    gone = {
        _stray(t, "statistics/stat-0000-1"),
        _stray(t, "index/index-0000-1"),  # named by no index manifest
        _stray(t, "manifest/index-manifest-0000-1"),  # named by no snapshot
    }
    _age(t.path)
    result = _clean(t)
    assert set(result.paths) == gone
    assert all(os.path.exists(p) for p in kept)


def test_an_unreadable_index_manifest_a_snapshot_names_stops_the_run(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    path = os.path.join(t.path, "snapshot", "snapshot-1")
    data = json.loads(Path(path).read_text())
    data["indexManifest"] = "index-manifest-0000-0"
    Path(path).write_text(json.dumps(data))
    stray = _stray(t, "index/index-0000-0")
    _age(t.path)
    with pytest.raises(shoal.CorruptMetadataError, match="index-manifest-0000-0"):
        _clean(t)  # missing: which index files it keeps is unknown
    _stray(t, "manifest/index-manifest-0000-0", b"not avro")
    _age(t.path)
    with pytest.raises(shoal.CorruptMetadataError, match="index-manifest-0000-0"):
        _clean(t)
    assert os.path.exists(stray)


# --- primary-key tables ----------------------------------------------------------------------
def test_compacted_away_files_stay_while_history_names_them(tmp_path: Path) -> None:
    t = _pk_table(tmp_path, **REWRITE)
    t.upsert(events([1, 2]))  # 1
    t.upsert(events([2, 3]))  # 2
    t.compact("full")  # 3: DELETE the level-0 files, ADD one top-level file
    level0 = {p for p in _reached(t, [t._store.snapshots.snapshot(1)]) if p.endswith(".parquet")}
    level0 |= {p for p in _reached(t, [t._store.snapshots.snapshot(2)]) if p.endswith(".parquet")}
    t.upsert(events([4]))  # 4: manifests rewritten without the compacted-away files
    expected = sorted(t.to_arrow().column("id").to_pylist())
    _age(t.path)
    assert _clean(t).deleted_count == 0  # every snapshot is still there
    # Snapshot 3's delta still holds their DELETE entries: they stay.
    _unlink_snapshots(t, 1, 2)
    result = _clean(t)
    assert not any(p in level0 for p in result.paths)
    assert all(os.path.exists(p) for p in level0)
    # Nothing names them any more once snapshot 3 is gone too.
    _unlink_snapshots(t, 3)
    result = _clean(t)
    assert level0 <= set(result.paths)
    assert not any(os.path.exists(p) for p in level0)
    reopened = shoal.open_table(t.path)
    assert sorted(reopened.to_arrow().column("id").to_pylist()) == expected == [1, 2, 3, 4]
    assert _cleaned(reopened) == _reached(reopened)


def test_delete_entries_name_files_as_add_entries_do(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    store = shoal.open_table(t.path)._store
    metas = store.manifests.read_list(store.snapshots.snapshot(1).delta_manifest_list)
    entry = store.manifests.read_manifest(metas[0].file_name)[0]
    entry = entry.with_kind(M.KIND_DELETE)
    entry = replace(entry, file=replace(entry.file, extra_files=("data-x.parquet.index",)))
    (deletes,) = store.manifests.write_manifests([entry])
    names = {entry.file.file_name, "data-x.parquet.index", "unrelated"}
    assert orphans.files_named_by(store, [deletes.file_name], names) == names - {"unrelated"}


# --- what stays ------------------------------------------------------------------------------
def test_young_files_stay(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    stray = _stray(t, "manifest/manifest-0000-0")
    assert _clean(t).deleted_count == 0  # default threshold: one day ago
    _age(t.path, days=2)
    assert _clean(t, older_than=datetime.now() - timedelta(days=3)).deleted_count == 0
    assert os.path.exists(stray)
    aware = datetime.now(UTC) - timedelta(days=1)
    assert _clean(t, older_than=aware).paths == (stray,)


def test_dry_run_reports_and_deletes_nothing(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    strays = {_stray(t, "manifest/manifest-0000-0", b"abc"), _stray(t, "index/x", b"de")}
    empty_partition = os.path.join(t.path, "dt=2026-12-01")
    os.makedirs(empty_partition)
    files = _all_files(t.path)
    _age(t.path)
    result = _clean(t, dry_run=True)
    assert set(result.paths) == strays
    assert (result.deleted_count, result.deleted_bytes) == (2, 5)
    assert _all_files(t.path) == files
    assert os.path.isdir(empty_partition)
    assert _clean(t) == result
    assert not os.path.exists(empty_partition)


def test_untouched_places(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    bucket = os.path.dirname(next(p for p in _all_files(t.path) if p.endswith(".parquet")))
    sub = os.path.relpath(bucket, t.path)
    untouched = {
        _stray(t, "schema/.schema-1.abc.tmp"),
        _stray(t, "schema/stray"),
        _stray(t, "tag/.tag-x.abc.tmp"),
        _stray(t, "consumer/consumer-c"),
        _stray(t, "branch/branch-b/tag/junk"),
        _stray(t, "unknown/data-0000-0.parquet"),
        _stray(t, "README"),
        _stray(t, f"dt={DAY1}/data-0000-1.parquet"),
        _stray(t, f"{sub}/nested/data-0000-2.parquet"),
        _stray(t, "manifest/nested/manifest-0000-3"),
        _stray(t, "bucket-0/data-0000-4.parquet"),  # a bucket outside any partition
    }
    # As in snapshot/, a stray file of changelog/ goes (Paimon's cleanup removes it).
    temporary = _stray(t, "changelog/.changelog-1.tmp")
    _age(t.path)
    result = _clean(t)
    assert result.paths == (temporary,)
    assert all(os.path.exists(p) for p in untouched)
    assert os.path.isdir(bucket)


def test_empty_bucket_and_partition_directories_go(tmp_path: Path) -> None:
    t = _table(tmp_path, keys=("dt", "name"), **REWRITE)
    t.append(events([1], dt=DAY1))  # 1
    t.append(events([2], dt=DAY2))  # 2
    t.drop_partitions([{"dt": DAY2}])  # 3
    t.append(events([3], dt=DAY1))  # 4: manifests rewritten without the dropped file
    dropped = {p for p in _all_files(t.path) if f"dt={DAY2}" in p}
    _unlink_snapshots(t, 1, 2, 3)
    unreached = _cleaned(t) - _reached(t)
    assert dropped <= unreached
    for empty in ("dt=2026-12-01", "dt=2026-12-02/name=a", "dt=2026-12-03/name=b/bucket-0"):
        os.makedirs(os.path.join(t.path, empty))
    _age(t.path)
    young = os.path.join(t.path, "dt=2026-12-04")
    os.makedirs(young)
    before = rows_of_every_root(shoal.open_table(t.path))
    result = _clean(t)
    assert set(result.paths) == unreached
    remaining = sorted(n for n in os.listdir(t.path) if "=" in n)
    assert remaining == [f"dt={DAY1}", "dt=2026-12-04"]
    assert os.path.isdir(t.path)
    assert rows_of_every_root(shoal.open_table(t.path)) == before


def test_the_table_root_stays_even_when_empty(tmp_path: Path) -> None:
    t = _table(tmp_path)
    _age(t.path)
    assert _clean(t) == OrphanFilesResult(0, 0, ())
    assert os.listdir(t.path) == ["schema"]
    store = shoal.open_table(t.path)._store
    os.makedirs(os.path.join(t.path, "dt=2026-12-01", "bucket-0"))
    shutil.rmtree(os.path.join(t.path, "schema"))  # nothing but empty directories is left
    _age(t.path)
    assert orphans.remove_orphan_files(store) == OrphanFilesResult(0, 0, ())
    assert os.path.isdir(t.path)
    assert os.listdir(t.path) == []


# --- errors ----------------------------------------------------------------------------------
def test_older_than_in_the_future_raises(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    with pytest.raises(shoal.InvalidArgumentError, match="future"):
        t.remove_orphan_files(older_than=datetime.now() + timedelta(minutes=5))
    with pytest.raises(shoal.InvalidArgumentError):
        t.remove_orphan_files(older_than="yesterday")  # type: ignore[arg-type]
    now = datetime(2026, 11, 1, 12)
    with pytest.raises(shoal.InvalidArgumentError):
        orphans.remove_orphan_files(t._store, older_than=now + timedelta(seconds=1), now=now)


def test_times_in_seconds_stop_the_run(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    old = _stray(t, "manifest/manifest-0000-0")
    _age(t.path)
    seconds = _stray(t, "manifest/manifest-0000-1")
    as_if_seconds = time.time() / 1000  # read as milliseconds, the time of a clock in seconds
    os.utime(seconds, (as_if_seconds, as_if_seconds))
    with pytest.raises(shoal.FileTimeError) as raised:
        _clean(t)
    assert raised.value.path == seconds
    assert os.path.exists(old)
    assert os.path.exists(seconds)


@pytest.mark.parametrize("damage", ["corrupt manifest", "missing manifest", "missing list"])
def test_unreadable_metadata_of_a_live_snapshot_aborts(tmp_path: Path, damage: str) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    t.append(events([2]))
    snapshot = t._store.snapshots.snapshot(2)
    manifest = t._store.manifests.read_list(snapshot.base_manifest_list)[0].file_name
    stray = _stray(t, "manifest/manifest-0000-0")
    _age(t.path)
    files = _all_files(t.path)
    if damage == "corrupt manifest":
        Path(t._store.paths.manifest_path(manifest)).write_bytes(b"not avro")
    elif damage == "missing manifest":
        os.unlink(t._store.paths.manifest_path(manifest))
    else:
        os.unlink(t._store.paths.manifest_path(snapshot.delta_manifest_list))
    with pytest.raises(shoal.CorruptMetadataError):
        _clean(t)
    assert os.path.exists(stray)
    assert _all_files(t.path) <= files


def test_a_snapshot_expiring_while_being_read_is_skipped(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.append(events([1]))
    t.append(events([2]))
    store = shoal.open_table(t.path)._store
    roots = orphans.table_roots(store)
    first = store.snapshots.snapshot(1)
    manifests = {m.file_name for m in store.manifests.read_list(first.delta_manifest_list)}
    # Expiration removes snapshot 1 and its lists after the roots were read.
    _unlink_snapshots(t, 1)
    for name in (first.base_manifest_list, first.delta_manifest_list):
        os.unlink(store.paths.manifest_path(name))
    fresh = shoal.open_table(t.path)._store
    candidates = {os.path.basename(p) for p in _all_files(t.path)}
    used = orphans.used_names(fresh, roots, candidates, candidates)
    assert manifests <= used  # still reached through snapshot 2
    # The same loss under a snapshot that is still there aborts.
    os.unlink(store.paths.manifest_path(store.snapshots.snapshot(2).delta_manifest_list))
    with pytest.raises(shoal.CorruptMetadataError):
        orphans.used_names(shoal.open_table(t.path)._store, roots, candidates, candidates)


# --- the whole picture, at random ------------------------------------------------------------
DAYS = [DAY1, DAY2, "2026-11-03"]
STRAYS = ["manifest", "bucket", "snapshot", "index", "statistics"]
operation = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(DAYS)),
    st.tuples(st.just("overwrite"), st.sampled_from(DAYS)),
    st.tuples(st.just("drop"), st.sampled_from(DAYS)),
    st.tuples(st.just("tag"), st.integers(0, 20)),
    st.tuples(st.just("rollback"), st.integers(0, 20)),
    st.tuples(st.just("expire"), st.integers(1, 3)),
    st.tuples(st.just("stray"), st.sampled_from(STRAYS)),
)


def _apply(table: shoal.Table, step: int, op: tuple[str, Any]) -> None:
    kind, arg = op
    ids = [s.id for s in table.snapshots()]
    if kind == "append":
        table.append(events([step], dt=arg))
    elif kind == "overwrite":
        table.overwrite(events([step], dt=arg), partition={"dt": arg})
    elif kind == "drop":
        table.drop_partitions([{"dt": arg}])
    elif kind == "tag" and ids:
        table.create_tag(f"t{step}", snapshot_id=ids[arg % len(ids)])
    elif kind == "rollback" and len(ids) > 1:
        tags = table.list_tags()
        if tags and arg % 2:
            table.rollback_to(tag=tags[arg % len(tags)].name)
        else:
            table.rollback_to(snapshot_id=ids[arg % len(ids)])
    elif kind == "expire" and len(ids) > 1:
        _unlink_snapshots(table, *ids[: min(arg, len(ids) - 1)])
    elif kind == "stray":
        _add_stray(table, step, arg)


def _add_stray(table: shoal.Table, step: int, where: str) -> None:
    if where == "bucket":
        buckets = sorted(
            d for d, _, _ in os.walk(table.path) if os.path.basename(d).startswith("bucket-")
        )
        if buckets:
            bucket = os.path.relpath(buckets[step % len(buckets)], table.path)
            _stray(table, f"{bucket}/data-x-{step}.parquet")
    elif where == "snapshot":
        _stray(table, f"snapshot/.snapshot-{step}.{step:08x}.tmp")
    elif where == "manifest":
        _stray(table, f"manifest/manifest-x-{step}")
    else:
        _stray(table, f"{where}/{where}-x-{step}")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(operation, min_size=2, max_size=12), primary_key=st.booleans())
def test_cleanup_leaves_exactly_what_snapshots_and_tags_reach(
    ops: list[tuple[str, Any]], primary_key: bool
) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        options = {"manifest.merge-min-count": "2", "manifest.target-file-size": "1 kb"}
        if primary_key:
            options |= {"bucket": "2", "num-sorted-run.compaction-trigger": "2"}
        table = shoal.Catalog(warehouse).create_table(
            "db.t",
            EVENTS_SCHEMA,
            partition_keys=["dt"],
            primary_keys=["dt", "id"] if primary_key else [],
            options=options,
        )
        for step, op in enumerate(ops):
            _apply(table, step, op)
            table = shoal.open_table(table.path)
        before = rows_of_every_root(table)
        reached = _reached(table)
        _age(table.path)
        result = orphans.remove_orphan_files(table._store, older_than=datetime.now())
        table = shoal.open_table(table.path)
        assert _cleaned(table) == reached
        assert not set(result.paths) & reached
        assert rows_of_every_root(table) == before
        # A second run finds nothing left to do.
        assert (
            shoal.open_table(table.path)
            .remove_orphan_files(older_than=datetime.now())
            .deleted_count
            == 0
        )
