"""The Spark jobs against the table methods, on identical copies of small tables, and
the table functions from SQL."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import shoal
from shoal.errors import CorruptMetadataError, InvalidArgumentError
from shoal.spark import jobs
from shoal.spark.udtfs import register_functions

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("ts", pa.timestamp("ms")),
        ("v", pa.string()),
    ]
)
DAY1, DAY2 = "2026-11-01", "2026-11-02"
# Manifests holding deletes are rewritten at the next commit, so that files deleted in
# the history stop being named by later snapshots.
REWRITE = {"manifest.full-compaction-threshold-size": "1 b"}


def _rows(ids: range | list[int], dt: str, tag: str) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "dt": [dt] * len(ids),
            "id": ids,
            "ts": [datetime(2026, 1, 1, i % 24) for i in ids],
            "v": [f"{tag}{i}" for i in ids],
        },
        schema=SCHEMA,
    )


def _table(root: Path, *, keyed: bool, **options: str) -> shoal.Table:
    layout: dict[str, Any] = {"partition_keys": ["dt"]}
    if keyed:
        layout["primary_keys"] = ["dt", "id"]
        options = {"compaction.event-time.field": "ts", "write-only": "true", **options}
    else:
        options = {"bucket-key": "id", **options}
    return shoal.Catalog(str(root)).create_table(
        "db.t", SCHEMA, options={"bucket": "2", **options}, **layout
    )


def _history(table: shoal.Table) -> None:
    """Writes over two partitions, then an overwrite of one (DELETE entries)."""
    table.append(_rows(range(10), DAY1, "a"))
    table.append(_rows(range(5, 15), DAY2, "b"))
    table.append(_rows(range(3, 8), DAY1, "c"))
    table.overwrite(_rows(range(20, 24), DAY2, "d"), partition={"dt": DAY2})
    table.append(_rows(range(30, 33), DAY1, "e"))


def _copy(table: shoal.Table, root: Path) -> shoal.Table:
    shutil.copytree(table.path, root)
    return shoal.open_table(str(root))


def _tree(root: str) -> set[str]:
    """Every file and directory under ``root``, relative to it."""
    return {
        os.path.relpath(os.path.join(d, name), root)
        for d, dirs, files in os.walk(root)
        for name in dirs + files
    }


def _relative(paths: tuple[str, ...], root: str) -> list[str]:
    return sorted(os.path.relpath(p, root) for p in paths)


def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    return table.sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()


def _layout(table: shoal.Table) -> list[tuple[Any, ...]]:
    files = table.system_table("files").to_pylist()
    return sorted((f["partition"], f["bucket"], f["level"], f["record_count"]) for f in files)


def _age(root: str, days: float = 2) -> None:
    old = time.time() - days * 86400
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            os.utime(os.path.join(directory, name), (old, old))
    os.utime(root, (old, old))


def _stray(root: str, relative: str) -> None:
    path = os.path.join(root, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"stray " + relative.encode())


def _orphans(table: shoal.Table) -> None:
    """Files nothing reaches: the first snapshots gone without their files, a failed
    commit's files, a temporary file, a partition holding only a stray file, an empty
    bucket; all two days old."""
    for snapshot_id in (1, 2, 3):
        os.unlink(os.path.join(table.path, "snapshot", f"snapshot-{snapshot_id}"))
    name = uuid.uuid4()
    _stray(table.path, f"dt={DAY1}/bucket-0/data-{name}-0.parquet")
    _stray(table.path, f"manifest/manifest-{name}-0")
    _stray(table.path, f"snapshot/.snapshot-9.{name}.tmp")
    _stray(table.path, f"dt=2020-01-01/bucket-0/data-{name}-1.parquet")
    os.makedirs(os.path.join(table.path, f"dt={DAY2}", "bucket-7"))
    _age(table.path)


# --- compaction ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("strategy", "threshold"), [("full", None), ("event-time", datetime(2026, 1, 1, 6))]
)
def test_compact_equals_the_table_method(
    spark: SparkSession, tmp_path: Path, strategy: str, threshold: datetime | None
) -> None:
    one = _table(tmp_path / "one", keyed=True)
    _history(one)
    one.delete(_rows([4, 31], DAY1, "x"))
    two = _copy(one, tmp_path / "two")

    local = one.compact(strategy, threshold)
    spread = jobs.compact(spark, two.path, strategy, threshold)

    assert local.snapshot is not None
    assert spread.snapshot is not None
    assert (spread.snapshot.id, spread.snapshot.commit_kind) == (local.snapshot.id, "COMPACT")
    assert (spread.compacted_files, spread.written_files) == (
        local.compacted_files,
        local.written_files,
    )
    assert spread.compacted_files > 4  # buckets of both partitions: several tasks
    two = shoal.open_table(two.path)
    assert _sorted(two.to_arrow()) == _sorted(one.to_arrow())
    assert _sorted(two.to_arrow(read_optimized=True)) == _sorted(one.to_arrow(read_optimized=True))
    assert _layout(two) == _layout(one)
    # Nothing left to do: no commit, no Spark task.
    if strategy == "full":
        assert jobs.compact(spark, two.path, strategy) == one.compact(strategy)


def test_compact_refuses_an_append_table(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path, keyed=False)
    with pytest.raises(InvalidArgumentError, match="primary-key"):
        jobs.compact(spark, table.path)


def test_groups_of_tasks() -> None:
    assert jobs.chunks(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert jobs.chunks([1], 4) == [[1]]
    assert jobs.chunks([], 4) == []
    groups = jobs.balanced([9, 1, 1, 1, 5, 4, 3], lambda x: x, 3)
    assert sorted(x for g in groups for x in g) == [1, 1, 1, 3, 4, 5, 9]
    assert sorted(sum(g) for g in groups) == [7, 8, 9]
    assert jobs.balanced([2, 3], lambda x: x, 8) == [[3], [2]]


# --- orphan cleanup --------------------------------------------------------------------------
@pytest.mark.parametrize("keyed", [False, True], ids=["append", "primary-key"])
def test_remove_orphan_files_equals_the_table_method(
    spark: SparkSession, tmp_path: Path, keyed: bool
) -> None:
    one = _table(tmp_path / "one", keyed=keyed, **REWRITE)
    _history(one)
    one.create_tag("t1", 4)
    _orphans(one)
    one = shoal.open_table(one.path)  # without the snapshots it read before
    two = _copy(one, tmp_path / "two")
    for table in (one, two):
        _stray(table.path, f"dt={DAY1}/bucket-1/data-young-0.parquet")  # too new to go
    before = _tree(two.path)

    dry_local = one.remove_orphan_files(dry_run=True)
    dry_spread = jobs.remove_orphan_files(spark, two.path, dry_run=True)
    assert _tree(two.path) == before
    assert _relative(dry_spread.paths, two.path) == _relative(dry_local.paths, one.path)

    local = one.remove_orphan_files()
    spread = jobs.remove_orphan_files(spark, two.path)

    assert (spread.deleted_count, spread.deleted_bytes) == (
        local.deleted_count,
        local.deleted_bytes,
    )
    assert _relative(spread.paths, two.path) == _relative(local.paths, one.path)
    assert _relative(dry_spread.paths, two.path) == _relative(spread.paths, two.path)
    assert spread.deleted_count >= 8  # data files and manifests of the lost snapshots
    assert _tree(two.path) == _tree(one.path)
    assert f"dt={DAY1}/bucket-1/data-young-0.parquet" in _tree(two.path)
    assert "dt=2020-01-01" not in _tree(two.path)  # emptied, then removed
    assert f"dt={DAY2}/bucket-7" not in _tree(two.path)
    assert _sorted(shoal.open_table(two.path).to_arrow()) == _sorted(one.to_arrow())


def test_an_unreadable_manifest_stops_the_job_with_its_error(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = _table(tmp_path, keyed=False)
    _history(table)
    latest = table.latest_snapshot()
    assert latest is not None
    manifests = table.system_table("manifests").column("file_name").to_pylist()
    with open(os.path.join(table.path, "manifest", manifests[0]), "wb") as f:
        f.write(b"not avro")
    _stray(table.path, f"dt={DAY1}/bucket-0/data-{uuid.uuid4()}-0.parquet")
    _age(table.path)
    before = _tree(table.path)

    with pytest.raises(CorruptMetadataError) as raised:
        jobs.remove_orphan_files(spark, table.path)
    assert manifests[0] in raised.value.path
    assert _tree(table.path) == before


def test_orphan_cleanup_refuses_a_threshold_in_the_future(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = _table(tmp_path, keyed=False)
    with pytest.raises(InvalidArgumentError, match="future"):
        jobs.remove_orphan_files(spark, table.path, older_than=datetime.now() + timedelta(1))


# --- expiration ------------------------------------------------------------------------------
@pytest.mark.parametrize("keyed", [False, True], ids=["append", "primary-key"])
def test_expire_snapshots_equals_the_table_method(
    spark: SparkSession, tmp_path: Path, keyed: bool
) -> None:
    one = _table(tmp_path / "one", keyed=keyed, **REWRITE)
    _history(one)
    one.create_tag("t1", 1)
    if keyed:
        one.compact("full")
    one.append(_rows(range(40, 44), DAY2, "f"))
    two = _copy(one, tmp_path / "two")

    local = one.expire_snapshots(retain_max=2)
    spread = jobs.expire_snapshots(spark, two.path, retain_max=2)

    assert spread == local
    assert spread.expired_snapshots >= 4
    assert spread.deleted_data_files > 0
    assert spread.deleted_manifest_files > 0
    assert _tree(two.path) == _tree(one.path)
    with open(os.path.join(two.path, "snapshot", "EARLIEST")) as f:
        assert f.read().strip() == str(one.snapshots()[0].id)
    assert _sorted(shoal.open_table(two.path).to_arrow(tag="t1")) == _sorted(one.to_arrow(tag="t1"))
    assert jobs.expire_snapshots(spark, two.path, retain_max=2) == shoal.ExpireResult()


# Files the cleanup never touches, whatever their age: outside the directories it owns,
# or below a bucket directory.
NEVER_TOUCHED = [
    "stray.txt",
    "schema/stray",
    "tag/stray",
    f"dt={DAY1}/stray.parquet",
    f"dt={DAY1}/bucket-0/below/data-stray-0.parquet",
]


@pytest.mark.parametrize("keyed", [False, True], ids=["append", "primary-key"])
def test_cleanup_on_spark_deletes_exactly_what_it_deletes_in_one_process(
    spark: SparkSession, tmp_path: Path, keyed: bool
) -> None:
    """Expiration and then orphan cleanup on copies of one table with tags (one of them
    on a snapshot that expires), a rollback's leftovers and strays: the Spark jobs
    delete exactly the files the table methods delete."""
    one = _table(tmp_path / "one", keyed=keyed, **REWRITE)
    _history(one)
    one.create_tag("t1", 2)
    one.overwrite(_rows(range(50, 53), DAY1, "g"), partition={"dt": DAY1})
    one.create_tag("t2")
    one.append(_rows(range(60, 64), DAY2, "h"))
    one.append(_rows(range(70, 74), DAY1, "i"))
    one.rollback_to(snapshot_id=7)  # the files of snapshot 8 are left to orphan cleanup
    two = _copy(one, tmp_path / "two")

    before = _tree(one.path)
    local = one.expire_snapshots(retain_max=2)
    spread = jobs.expire_snapshots(spark, two.path, retain_max=2)
    assert spread == local
    assert local.expired_snapshots == 5
    expired = before - _tree(one.path)
    assert before - _tree(two.path) == expired
    assert any("bucket-" in p for p in expired)
    assert any(p.startswith("manifest/") for p in expired)

    manifest = one.system_table("manifests").column("file_name").to_pylist()[0]
    live = one.system_table("files").column("file_path").to_pylist()[0]
    name = uuid.uuid4()
    for table in (one, two):
        for relative in [
            *NEVER_TOUCHED,
            f"dt={DAY1}/bucket-1/data-{name}-0.parquet",
            f"dt=2020-01-01/bucket-0/data-{name}-1.parquet",
            f"manifest/manifest-{name}-0",
            f"manifest/{os.path.basename(live)}",  # named like a live file: kept
            f"snapshot/.snapshot-9.{name}.tmp",
            f"statistics/stat-{name}",
        ]:
            _stray(table.path, relative)
        os.makedirs(os.path.join(table.path, f"dt={DAY2}", "bucket-7"))
        _age(table.path)
        _stray(table.path, f"dt={DAY1}/bucket-1/data-young-0.parquet")  # too new to go
    before = _tree(one.path)
    assert _tree(two.path) == before

    dry_local = one.remove_orphan_files(dry_run=True)
    dry_spread = jobs.remove_orphan_files(spark, two.path, dry_run=True)
    assert _tree(one.path) == _tree(two.path) == before
    local_clean = one.remove_orphan_files()
    spread_clean = jobs.remove_orphan_files(spark, two.path)

    deleted = _relative(local_clean.paths, one.path)
    assert _relative(spread_clean.paths, two.path) == deleted
    assert _relative(dry_spread.paths, two.path) == _relative(dry_local.paths, one.path) == deleted
    assert (spread_clean.deleted_count, spread_clean.deleted_bytes) == (
        local_clean.deleted_count,
        local_clean.deleted_bytes,
    )
    gone = before - _tree(one.path)
    assert before - _tree(two.path) == gone
    assert set(deleted) <= gone
    assert {"dt=2020-01-01", f"dt={DAY2}/bucket-7"} <= gone  # emptied or empty, then removed
    assert f"manifest/manifest-{name}-0" in deleted
    assert any(p.startswith(f"dt={DAY1}/bucket-") and "-" + str(name) not in p for p in deleted)
    for kept in [*NEVER_TOUCHED, f"manifest/{os.path.basename(live)}", f"manifest/{manifest}"]:
        assert kept in _tree(one.path)
    assert f"dt={DAY1}/bucket-1/data-young-0.parquet" in _tree(two.path)
    for table in (one, shoal.open_table(two.path)):
        assert _sorted(table.to_arrow(tag="t1")) == _sorted(one.to_arrow(tag="t1"))
        assert _sorted(table.to_arrow()) == _sorted(one.to_arrow())


def test_expire_partitions_equals_the_table_method(spark: SparkSession, tmp_path: Path) -> None:
    one = _table(tmp_path / "one", keyed=False)
    for n, day in enumerate(["2020-01-01", "2020-01-02", DAY1]):
        one.append(_rows([n], day, "p"))
    two = _copy(one, tmp_path / "two")
    now = datetime(2026, 11, 2)

    local = one.expire_partitions(timedelta(days=30), now=now)
    spread = jobs.expire_partitions(spark, two.path, timedelta(days=30), now=now)

    assert spread == local == [{"dt": "2020-01-01"}, {"dt": "2020-01-02"}]
    assert _sorted(shoal.open_table(two.path).to_arrow()) == _sorted(one.to_arrow())


# --- the table functions ---------------------------------------------------------------------
def _sql(spark: SparkSession, query: str) -> list[dict[str, Any]]:
    return [row.asDict() for row in spark.sql(query).collect()]


def test_metadata_functions_from_sql(spark: SparkSession, tmp_path: Path) -> None:
    register_functions(spark)
    table = _table(tmp_path, keyed=True)
    _history(table)
    table.create_tag("v1", 2)

    snapshots = _sql(spark, f"SELECT * FROM shoal_snapshots('{table.path}') ORDER BY snapshot_id")
    expected = table.system_table("snapshots").to_pylist()
    assert [r["snapshot_id"] for r in snapshots] == [r["snapshot_id"] for r in expected]
    assert [r["commit_kind"] for r in snapshots] == [r["commit_kind"] for r in expected]
    assert [r["commit_time"] for r in snapshots] == [r["commit_time"] for r in expected]
    assert list(snapshots[0]) == table.system_table("snapshots").column_names

    tags = _sql(spark, f"SELECT tag_name, snapshot_id FROM shoal_tags('{table.path}')")
    assert tags == [{"tag_name": "v1", "snapshot_id": 2}]

    (freshness,) = _sql(spark, f"SELECT * FROM shoal_freshness('{table.path}')")
    assert freshness == {
        "watermark_ms": table.freshness().watermark_ms,
        "min_uncompacted_event_time_ms": table.freshness().min_uncompacted_event_time_ms,
        "buckets_with_uncompacted_files": table.freshness().buckets_with_uncompacted_files,
        "uncompacted_file_count": table.freshness().uncompacted_file_count,
        "uncompacted_bytes": table.freshness().uncompacted_bytes,
    }
    assert freshness["uncompacted_file_count"] > 0


def test_procedures_from_sql(spark: SparkSession, tmp_path: Path) -> None:
    register_functions(spark)
    one = _table(tmp_path / "one", keyed=True, **REWRITE)
    _history(one)
    _orphans(one)
    one = shoal.open_table(one.path)  # without the snapshots it read before
    two = _copy(one, tmp_path / "two")

    (compacted,) = _sql(spark, f"SELECT * FROM shoal_compact('{two.path}', 'full')")
    local = one.compact("full")
    assert local.snapshot is not None
    assert compacted == {
        "snapshot_id": local.snapshot.id,
        "compacted_files": local.compacted_files,
        "written_files": local.written_files,
    }

    (expired,) = _sql(spark, f"SELECT * FROM shoal_expire_snapshots('{two.path}', 2)")
    assert expired == vars_of(one.expire_snapshots(retain_max=2))

    cutoff = (datetime.now() - timedelta(days=1)).isoformat()
    query = f"SELECT * FROM shoal_remove_orphan_files('{two.path}', '{cutoff}', true)"
    (dry,) = _sql(spark, query)
    (cleaned,) = _sql(spark, f"SELECT * FROM shoal_remove_orphan_files('{two.path}')")
    local_clean = one.remove_orphan_files()
    assert dry["paths"] == cleaned["paths"]
    assert (cleaned["deleted_count"], cleaned["deleted_bytes"]) == (
        local_clean.deleted_count,
        local_clean.deleted_bytes,
    )
    assert _relative(tuple(cleaned["paths"]), two.path) == _relative(local_clean.paths, one.path)


def vars_of(result: shoal.ExpireResult) -> dict[str, int]:
    return {
        "expired_snapshots": result.expired_snapshots,
        "deleted_data_files": result.deleted_data_files,
        "deleted_manifest_files": result.deleted_manifest_files,
    }
