"""Snapshot expiration and orphan cleanup on S3 delete exactly what they delete on the
local disk, and delete in batches (``DeleteObjects``).

Each test builds a table on S3, copies it to a local directory, runs the same
operation on both and compares what each deleted and what each left.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from shoal.table import Table
from tests.conftest import EVENTS_SCHEMA, events
from tests.s3.s3_support import CountingS3FileIO, S3Env

DAY1, DAY2, DAY3 = "2026-11-01", "2026-11-02", "2026-11-03"
TABLE = "wh/db.db/t"


def _build(s3: S3Env) -> Table:
    """Ten snapshots with overwrites, a dropped partition and tags (one of them on a
    snapshot that expires), manifests merged often so that manifests go too."""
    t = shoal.Catalog(s3.uri("wh")).create_table(
        "db.t",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        options={"manifest.merge-min-count": "2", "bucket": "2", "bucket-key": "id"},
    )
    t.append(pa.concat_tables([events([1, 2, 3, 4]), events([5, 6], DAY2)]))
    t.append(events([7], DAY2))
    t.create_tag("first")
    t.overwrite(events([8]), partition={"dt": DAY1})  # 1..4 stay for "first"
    t.append(events([9, 10], DAY3))
    t.overwrite(events([11], DAY3), partition={"dt": DAY3})  # 9, 10 go
    t.drop_partitions([{"dt": DAY2}])  # 5..7 stay for "first"
    t.append(pa.concat_tables([events([12, 13]), events([14], DAY2)]))
    t.overwrite(events([15]), partition={"dt": DAY1})  # 8, 12, 13 go
    t.create_tag("recent")
    t.append(events([16], DAY3))
    t.overwrite(pa.concat_tables([events([17]), events([18], DAY3)]))
    assert t.latest_snapshot().id == 10
    return t


def _open_counting(s3: S3Env) -> tuple[Table, CountingS3FileIO]:
    file_io = CountingS3FileIO()
    root = f"{s3.bucket}/{TABLE}"
    return Table._open(file_io, s3.uri(TABLE), root, None), file_io


def _local_files(root: Path) -> set[str]:
    return {
        os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files
    }


def _s3_files(s3: S3Env) -> set[str]:
    return {k[len(TABLE) + 1 :] for k in s3.list_keys(f"{TABLE}/")}


def _rows(table: Table) -> dict[str, list[int]]:
    out = {
        f"s{s.id}": sorted(table.to_arrow(snapshot_id=s.id)["id"].to_pylist())
        for s in table.snapshots()
    }
    for tag in table.list_tags():
        out[f"t:{tag.name}"] = sorted(table.to_arrow(tag=tag.name)["id"].to_pylist())
    return out


def _age(root: Path) -> None:
    an_hour_ago = time.time() - 3600
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            os.utime(os.path.join(directory, name), (an_hour_ago, an_hour_ago))


@pytest.fixture
def table(s3: S3Env) -> Table:
    return _build(s3)


def test_expiration_deletes_what_it_deletes_locally(
    s3: S3Env, table: Table, tmp_path: Path
) -> None:
    local_root = s3.download(TABLE, tmp_path / "t")
    local = shoal.open_table(str(local_root))
    assert _rows(local) == _rows(table)
    before = _s3_files(s3)
    assert _local_files(local_root) == before

    remote, file_io = _open_counting(s3)
    older_than = datetime.now() + timedelta(seconds=1)
    result = remote.expire_snapshots(retain_max=3, older_than=older_than)
    expected = local.expire_snapshots(retain_max=3, older_than=older_than)

    assert result == expected
    assert result.expired_snapshots == 7
    assert result.deleted_data_files > 0
    assert result.deleted_manifest_files > 0
    assert _s3_files(s3) == _local_files(local_root)
    assert _rows(shoal.open_table(s3.uri(TABLE))) == _rows(local)

    # Data files and manifests went in batches, in steps: data files, then manifests,
    # then manifest lists; then the snapshot files one by one, oldest first.
    many = [paths for kind, paths in file_io.deletes if kind == "many"]
    assert len(many) == 3
    data_files, manifests, manifest_lists = many
    assert len(data_files) == result.deleted_data_files
    assert len(manifests) + len(manifest_lists) == result.deleted_manifest_files
    assert all("/bucket-" in p for p in data_files)
    assert all("/manifest/manifest-" in p and "-list-" not in p for p in manifests)
    assert all("/manifest/manifest-list-" in p for p in manifest_lists)
    single = [paths[0] for kind, paths in file_io.deletes if kind == "one"]
    assert single == [f"{s3.bucket}/{TABLE}/snapshot/snapshot-{i}" for i in range(1, 8)]
    assert file_io.deletes.index(("one", (single[0],))) > max(
        i for i, (kind, _) in enumerate(file_io.deletes) if kind == "many"
    )
    assert file_io.requests["DeleteObjects"] == len(many)
    assert file_io.requests["DeleteObject"] == len(single)


def test_orphan_cleanup_deletes_what_it_deletes_locally(
    s3: S3Env, table: Table, tmp_path: Path
) -> None:
    # Orphans: the files of the snapshots a rollback removes, and strays.
    table.rollback_to(snapshot_id=6)
    for key in (
        "bucket-0/data-stray.parquet",
        "dt=2026-11-01/bucket-1/data-stray.parquet",
        "snapshot/.snapshot-11.0123abcd.tmp",
        "manifest/manifest-stray-0",
        "statistics/stat-stray",
    ):
        s3.put(f"{TABLE}/{key}")
    s3.put("wh/db.db/t-sibling/data.parquet")  # outside the table: never a candidate
    local_root = s3.download(TABLE, tmp_path / "t")
    _age(local_root)
    local = shoal.open_table(str(local_root))
    time.sleep(1.1)  # object times have a resolution of one second
    older_than = datetime.now()

    remote, file_io = _open_counting(s3)
    result = remote.remove_orphan_files(older_than=older_than)
    expected = local.remove_orphan_files(older_than=older_than)

    prefix = f"{s3.bucket}/{TABLE}/"
    assert [p.removeprefix(prefix) for p in result.paths] == [
        os.path.relpath(p, local_root) for p in expected.paths
    ]
    assert (result.deleted_count, result.deleted_bytes) == (
        expected.deleted_count,
        expected.deleted_bytes,
    )
    assert result.deleted_count >= 10  # the strays, and the data files and manifests
    assert _s3_files(s3) == _local_files(local_root)
    assert s3.list_keys("wh/db.db/t-sibling/") == ["wh/db.db/t-sibling/data.parquet"]
    assert _rows(shoal.open_table(s3.uri(TABLE))) == _rows(local)

    assert [kind for kind, _ in file_io.deletes] == ["many"]
    assert file_io.requests["DeleteObjects"] == 1
    assert file_io.requests["DeleteObject"] == 0
    # A second run finds nothing.
    assert remote.remove_orphan_files(older_than=datetime.now()).deleted_count == 0
