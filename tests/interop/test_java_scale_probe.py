"""The scale workload's Java probe (``bench/java/ScaleProbe.java``) on a tiny table of
the scale workload: Java Paimon 1.0 plans the same splits and files as shoal, and its
expiration removes the same snapshots and data files as shoal's on a copy of the same
table."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bench import java_scale, scale_table
from shoal import Table

pytestmark = [pytest.mark.interop, pytest.mark.bench]

SHAPE = scale_table.Shape(files=400, snapshots=100)
EXPIRED = 10


@pytest.fixture(scope="module")
def table_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    warehouse = tmp_path_factory.mktemp("scale-probe")
    return scale_table.build(warehouse, SHAPE, EXPIRED, seed=3).table_path


def _shoal_plan(path: str, dt: str | None) -> dict[str, int]:
    scan = Table.open(path).scan(filter=[("dt", "=", dt)] if dt else None)
    splits = scan.plan()
    return {"splits": len(splits), "files": sum(len(s.files) for s in splits)}


def test_java_plans_what_shoal_plans(table_path: str) -> None:
    full = java_scale.run(java_scale.PLAN_FULL, table_path, "-")
    assert full["result"] == _shoal_plan(table_path, None)
    assert full["result"]["files"] == SHAPE.files
    assert full["seconds"] > 0
    assert full["peak_mib"] > 0
    assert full["hwm_mib"] >= full["peak_mib"]

    dt = scale_table.day(SHAPE.partitions // 2)
    filtered = java_scale.run(java_scale.PLAN_FILTERED, table_path, dt)
    assert filtered["result"] == _shoal_plan(table_path, dt)
    assert filtered["result"]["files"] == SHAPE.files // SHAPE.partitions


def test_java_expires_what_shoal_expires(table_path: str, tmp_path: Path) -> None:
    ours, theirs = tmp_path / "shoal", tmp_path / "java"
    shutil.copytree(table_path, ours)
    shutil.copytree(table_path, theirs)
    before = java_scale.data_files(str(ours))
    assert before > 0

    done = Table.open(str(ours)).expire_snapshots(
        older_than=datetime.now() + timedelta(seconds=1), max_deletes=EXPIRED
    )
    java = java_scale.run(java_scale.EXPIRE, str(theirs), str(EXPIRED))

    assert java["result"] == {
        "expired_snapshots": done.expired_snapshots,
        "deleted_data_files": done.deleted_data_files,
    }
    assert done.expired_snapshots == EXPIRED
    assert done.deleted_data_files == before
    for directory in ("snapshot", "manifest"):
        assert sorted(p.name for p in (ours / directory).iterdir()) == sorted(
            p.name for p in (theirs / directory).iterdir()
        )
