"""Commits: snapshots, overwrite, partition drop, manifest merging, conflicts."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

import shoal
from shoal.format import manifest as M
from shoal.format.snapshot import CommitKind
from shoal.write.commit import CommitRequest, FileStoreCommit
from shoal.write.files import CommitMessage
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows


def test_each_append_is_one_snapshot_with_counts(events_table: shoal.Table) -> None:
    first = events_table.append(events(range(10)))
    second = events_table.append(events(range(10, 15), dt="2026-11-02"))
    assert (first.id, second.id) == (1, 2)
    assert second.commit_kind == "APPEND"
    assert (second.delta_record_count, second.total_record_count) == (5, 15)
    assert [s.id for s in events_table.snapshots()] == [1, 2]
    assert events_table.latest_snapshot() == second
    assert events_table.to_arrow().num_rows == 15


def test_empty_table_reads_as_zero_rows_with_columns(events_table: shoal.Table) -> None:
    assert events_table.latest_snapshot() is None
    assert events_table.snapshots() == []
    empty = events_table.to_arrow()
    assert empty.num_rows == 0
    assert empty.schema.names == EVENTS_SCHEMA.names


def test_overwrite_whole_table(events_table: shoal.Table) -> None:
    events_table.append(events(range(5)))
    events_table.append(events(range(5, 8), dt="2026-11-02"))
    snapshot = events_table.overwrite(events([100], dt="2026-11-03"))
    assert snapshot.commit_kind == "OVERWRITE"
    assert snapshot.delta_record_count == 1 - 8
    assert events_table.to_arrow().column("id").to_pylist() == [100]
    assert events_table.to_arrow(snapshot_id=2).num_rows == 8


def test_overwrite_one_partition_keeps_the_others(events_table: shoal.Table) -> None:
    events_table.append(events(range(5), dt="2026-11-01"))
    events_table.append(events(range(5, 8), dt="2026-11-02"))
    events_table.overwrite(events([50, 51], dt="2026-11-01"), partition={"dt": "2026-11-01"})
    rows = sorted_rows(events_table.to_arrow(), "id")
    assert [r["id"] for r in rows] == [5, 6, 7, 50, 51]


def test_overwrite_refuses_rows_outside_the_partition(events_table: shoal.Table) -> None:
    events_table.append(events(range(3)))
    with pytest.raises(shoal.InvalidArgumentError, match="2026-11-09"):
        events_table.overwrite(events([9], dt="2026-11-09"), partition={"dt": "2026-11-01"})
    assert events_table.latest_snapshot().id == 1


def test_drop_partitions_commits_deletes_and_keeps_files(events_table: shoal.Table) -> None:
    events_table.append(events(range(4), dt="2026-11-01"))
    events_table.append(events(range(4, 6), dt="2026-11-02"))
    files_before = events_table.system_table("files").column("file_path").to_pylist()
    snapshot = events_table.drop_partitions([{"dt": "2026-11-01"}])
    assert snapshot.commit_kind == "OVERWRITE"
    assert snapshot.delta_record_count == -4
    assert sorted(events_table.to_arrow().column("id").to_pylist()) == [4, 5]
    # Nothing is physically deleted: an older snapshot still reads the dropped rows.
    assert all(os.path.exists(p) for p in files_before)
    assert events_table.to_arrow(snapshot_id=2).num_rows == 6


def test_drop_partitions_validates_specs(events_table: shoal.Table) -> None:
    with pytest.raises(shoal.InvalidArgumentError, match="not partition keys"):
        events_table.drop_partitions([{"nope": 1}])
    with pytest.raises(shoal.InvalidArgumentError):
        events_table.drop_partitions([])


def test_failed_write_commits_nothing(events_table: shoal.Table) -> None:
    events_table.append(events(range(3)))
    bad = events(range(3)).drop_columns(["name"])
    with pytest.raises(shoal.SchemaMismatchError, match="missing columns"):
        events_table.append(bad)
    assert [s.id for s in events_table.snapshots()] == [1]


def test_manifests_are_merged_as_history_grows(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=["dt"], options={"manifest.merge-min-count": "5"}
    )
    for i in range(40):
        table.append(events([i], dt=f"2026-11-{i % 3 + 1:02d}"))
    manifests = table.system_table("manifests")
    assert manifests.num_rows <= 6
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(40))
    assert sorted(table.to_arrow(snapshot_id=17).column("id").to_pylist()) == list(range(17))


def test_full_manifest_rewrite_drops_deleted_entries(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=["dt"],
        options={"manifest.full-compaction-threshold-size": "1 b"},
    )
    for day in (1, 2, 3):
        table.append(events(range(day * 10, day * 10 + 3), dt=f"2026-11-0{day}"))
    table.drop_partitions([{"dt": "2026-11-02"}])
    table.append(events([99], dt="2026-11-04"))
    manifests = table.system_table("manifests")
    assert sum(manifests.column("num_deleted_files").to_pylist()) == 0
    assert sorted(table.to_arrow().column("id").to_pylist()) == [10, 11, 12, 30, 31, 32, 99]


def test_deleting_a_file_twice_is_a_conflict(events_table: shoal.Table) -> None:
    events_table.append(events(range(3)))
    store = events_table._store
    entry = next(iter(_live(events_table)))
    compaction = CommitMessage(entry.partition, entry.bucket, entry.total_buckets,
                               deleted_files=(entry.file,))
    FileStoreCommit(store).commit(CommitRequest([compaction], kind=CommitKind.COMPACT))
    with pytest.raises(shoal.CommitConflictError, match=entry.file.file_name):
        FileStoreCommit(store).commit(CommitRequest([compaction], kind=CommitKind.COMPACT))


def _live(table: shoal.Table) -> list[M.ManifestEntry]:
    from shoal.core.plan import live_entries

    return live_entries(table._store, table.latest_snapshot())


def test_lost_race_replans_against_the_new_latest(catalog: shoal.Catalog) -> None:
    catalog.create_table("db.t", EVENTS_SCHEMA, partition_keys=["dt"])
    one, two = catalog.get_table("db.t"), catalog.get_table("db.t")
    one.append(events([1]))
    # `two` last saw no snapshot; its commit must land on top of snapshot 1.
    snapshot = two.append(events([2]))
    assert snapshot.id == 2
    assert sorted(two.to_arrow().column("id").to_pylist()) == [1, 2]


def test_commit_gives_up_after_max_retries(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, options={"commit.max-retries": "2"}
    )
    snapshots = table._store.snapshots
    real_publish = snapshots.try_publish
    calls = []

    def always_taken(snapshot: shoal.Snapshot) -> bool:
        calls.append(snapshot.id)
        return False

    snapshots.try_publish = always_taken  # type: ignore[method-assign]
    try:
        with pytest.raises(shoal.CommitConflictError, match=r"commit\.max-retries"):
            table.append(events([1]))
    finally:
        snapshots.try_publish = real_publish  # type: ignore[method-assign]
    assert len(calls) == 3
    # The attempts' own manifests were removed; the data file stays for orphan cleanup.
    manifest_dir = os.path.join(table.path, "manifest")
    assert not os.path.exists(manifest_dir) or os.listdir(manifest_dir) == []
    assert table.latest_snapshot() is None


def test_snapshot_json_is_what_paimon_writes(events_table: shoal.Table) -> None:
    events_table.append(events(range(2)))
    with open(os.path.join(events_table.path, "snapshot", "snapshot-1")) as f:
        text = f.read()
    assert text.startswith('{\n  "version" : 3,\n  "id" : 1,\n  "schemaId" : 0,')
    assert '"commitKind" : "APPEND"' in text
    assert "watermark" not in text  # null fields are omitted
    with open(os.path.join(events_table.path, "snapshot", "LATEST")) as f:
        assert f.read() == "1"


def test_append_accepts_batches_readers_and_pandas(events_table: shoal.Table) -> None:
    data = events(range(6))
    events_table.append(data.to_batches()[0])
    events_table.append(pa.RecordBatchReader.from_batches(data.schema, data.to_batches(2)))
    events_table.append(data.to_pandas())
    assert events_table.to_arrow().num_rows == 18


def _manifest_reads(table: shoal.Table) -> list[str]:
    """The manifests the table's FileIO reads from now on."""
    file_io = table._store.file_io
    read = file_io.read_bytes
    names: list[str] = []

    def counted(path: str) -> bytes:
        if "/manifest/manifest-" in path and "/manifest-list-" not in path:
            names.append(path.rsplit("/", 1)[-1])
        return read(path)

    file_io.read_bytes = counted  # type: ignore[method-assign]
    return names


def test_a_commit_reads_only_the_manifests_of_its_partitions(catalog: shoal.Catalog) -> None:
    days = [f"2026-11-{d:02d}" for d in range(1, 11)]
    catalog.create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
        options={"bucket": "1", "write-only": "true", "manifest.merge-min-count": "100"},
    )
    writer = catalog.get_table("db.t")
    for i, day in enumerate(days):  # one manifest per day
        writer.upsert(events([i], dt=day))
    table = catalog.get_table("db.t")  # nothing cached
    reads = _manifest_reads(table)
    table.upsert(events([100], dt=days[-1]))  # next sequence numbers, then the commit's check
    assert reads == []  # the snapshot records the day's sequence numbers
    # Another writer's snapshot carries no record: the day's manifests are read.
    latest = table.latest_snapshot()
    assert latest is not None
    path = os.path.join(table.path, "snapshot", f"snapshot-{latest.id}")
    with open(path) as f:
        data = json.load(f)
    data["properties"] = {
        k: v for k, v in data["properties"].items() if not k.startswith("shoal.sequences.")
    }
    with open(path, "w") as f:
        json.dump(data, f)
    table = catalog.get_table("db.t")  # nothing cached
    reads = _manifest_reads(table)
    table.upsert(events([101], dt=days[-1]))
    live = {
        m.file_name
        for s in (len(days), len(days) + 1)
        for m in table._store.manifests.read_list(table.snapshot(s).delta_manifest_list)
    }
    assert set(reads) == live  # the last day's manifests only, not all ten
    assert sorted(table.to_arrow().column("id").to_pylist()) == [*range(10), 100, 101]


def test_live_entries_of_some_partitions_match_a_filter_by_them(catalog: shoal.Catalog) -> None:
    from shoal.core.plan import live_entries

    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=["dt"],
        options={"manifest.merge-min-count": "100"},
    )
    for i in range(6):
        table.append(events([i, i + 10], dt=[f"2026-11-0{i % 3 + 1}", None]))
    store, snapshot = table._store, table.latest_snapshot()
    codec = store.partitions
    for values in ([("2026-11-02",)], [(None,)], [("2026-11-01",), (None,)], [("2026-12-01",)], []):
        wanted = {codec.to_bytes(v) for v in values}
        assert live_entries(store, snapshot, partitions=wanted) == live_entries(
            store, snapshot, partition_filter=wanted.__contains__
        )


def test_rolled_manifests_reach_the_target_size_and_stay_put(catalog: shoal.Catalog) -> None:
    import dataclasses

    from shoal.core.manifest_merge import merge_manifests
    from shoal.core.manifests import ManifestStore

    table = catalog.create_table("db.t", EVENTS_SCHEMA, partition_keys=["dt"])
    table.append(events([1]))
    (entry,) = _live(table)
    entries = [
        dataclasses.replace(
            entry, file=dataclasses.replace(entry.file, file_name=f"f-{i}", file_size=i * 7919)
        )
        for i in range(3000)
    ]
    store = table._store
    size = len(M.encode_manifest(entries, "zstd"))
    target = size * 2 // 3  # the entries take one and a half files
    manifests = ManifestStore(
        store.file_io, store.paths, store.schema.partition_types(), store.partitions.decode,
        target_size=target,
    )
    metas = manifests.write_manifests(entries)
    assert len(metas) == 2
    assert metas[0].file_size >= target  # rolled once full, as Paimon rolls
    assert sum(m.num_added_files for m in metas) == len(entries)
    # A file at the target size is left as it is: merging again writes nothing (two
    # halves below the target would be merged, and cut in two again, by every commit).
    again = merge_manifests(
        manifests, metas, target_size=target, min_count=30, full_compaction_size=1 << 40
    )
    assert (again.metas, again.written) == (metas, [])
