"""Cleanup of tables with deletion vectors written by Java Paimon (0.9 and 1.0).

shoal's snapshot expiration and tag deletion leave exactly the files Java's leave
(index manifests and deletion-vector index files included); after each, and after
orphan cleanup of a rolled-back table, Java reads every retained snapshot and tag as
it read them before, and the index files left are exactly those they name."""

from __future__ import annotations

import os
import shutil
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shoal
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon
from tests.reachability import index_files_of, roots

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [pa.field("p", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.int64())]
)
DV_OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true"}
LATER = timedelta(days=1)


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def rows(p: str, ids: list[int], v: int) -> pa.Table:
    return pa.table({"p": [p] * len(ids), "id": ids, "v": [v + i for i in ids]}, schema=SCHEMA)


def ordered(t: pa.Table) -> list[dict[str, Any]]:
    return t.sort_by([(c, "ascending") for c in t.column_names]).to_pylist()


@pytest.fixture(scope="module")
def history(java: JavaPaimon, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Upserts and deletes over two partitions, each write compacted (so each replaces
    vector files), tags "t1" and "t2" on snapshots that expiration removes, "t3" on a
    recent one."""
    warehouse = tmp_path_factory.mktemp(f"dv-cleanup-{java.version}")
    java.run(
        warehouse,
        [
            jp.create_table(
                "db.t", SCHEMA, partition_keys=["p"], primary_keys=["p", "id"], options=DV_OPTIONS
            ),
            jp.write("db.t", pa.concat_tables([rows("a", list(range(30)), 0), rows("b", [1], 0)])),
            jp.write("db.t", rows("a", [3, 4, 5], 100)),
            jp.create_tag("db.t", "t1"),
            jp.write("db.t", rows("a", [6, 7], 0), kind="DELETE"),
            jp.write("db.t", rows("b", [1, 2, 9], 200)),
            jp.create_tag("db.t", "t2"),
            jp.write("db.t", rows("a", [8, 10], 300), kind=["UPDATE_AFTER", "DELETE"]),
            jp.write("db.t", rows("a", [11, 12, 3], 400)),
            jp.write("db.t", rows("b", [9], 0), kind="DELETE"),
            jp.create_tag("db.t", "t3"),
            jp.write("db.t", rows("a", [13, 14], 500)),
        ],
    )
    return warehouse


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def _files(warehouse: Path) -> set[str]:
    """The table's files, relative, but the hints (rewritten as each side likes)."""
    root = warehouse / "db.db" / "t"
    out = set()
    for directory, _, names in os.walk(root):
        for name in names:
            if name not in ("EARLIEST", "LATEST"):
                out.add(os.path.relpath(os.path.join(directory, name), root))
    return out


def _index_files(warehouse: Path) -> set[str]:
    return {f for f in _files(warehouse) if f.startswith(("index/", "manifest/index-manifest-"))}


def _table(warehouse: Path) -> shoal.Table:
    return shoal.open_table(str(warehouse / "db.db" / "t"))


def _root_reads(table: shoal.Table) -> list[jp.Op[Any]]:
    ops = [jp.read("db.t", options={"scan.snapshot-id": str(s.id)}) for s in table.snapshots()]
    ops += [jp.read("db.t", options={"scan.tag-name": t.name}) for t in table.list_tags()]
    return ops


def _keys(table: shoal.Table) -> list[str]:
    return [f"s{s.id}" for s in table.snapshots()] + [f"t:{t.name}" for t in table.list_tags()]


def _java_reads(java: JavaPaimon, warehouse: Path) -> dict[str, list[dict[str, Any]]]:
    """Every snapshot and tag of the table as Java reads it."""
    table = _table(warehouse)
    seen = java.run(warehouse, _root_reads(table))
    return {k: ordered(t) for k, t in zip(_keys(table), seen, strict=True)}


def _named_index_files(warehouse: Path) -> set[str]:
    """The index manifests and index files the snapshots and tags name (relative)."""
    table = _table(warehouse)
    named = set()
    for root in roots(table):
        named |= index_files_of(table._store, root)
    return {os.path.relpath(p, table.path) for p in named}


def test_expiration_leaves_what_java_leaves_and_java_reads_the_rest(
    java: JavaPaimon, history: Path, tmp_path: Path
) -> None:
    before = _java_reads(java, history)
    mine, theirs = _copy(history, tmp_path / "shoal"), _copy(history, tmp_path / "java")
    latest = _table(history).latest_snapshot().id
    result = _table(mine).expire_snapshots(
        retain_max=3, older_than=datetime.now() + LATER, max_deletes=100
    )
    later_ms = int((time.time() + LATER.total_seconds()) * 1000)
    (expired,) = java.run(
        theirs,
        [
            jp.expire_snapshots(
                "db.t", retain_max=3, retain_min=3, older_than_ms=later_ms, max_deletes=100
            )
        ],
    )
    assert result.expired_snapshots == expired == latest - 3
    assert result.deleted_index_files > 0
    assert _files(mine) == _files(theirs)
    after = _java_reads(java, mine)
    assert set(after) == {f"s{i}" for i in range(latest - 2, latest + 1)} | {"t:t1", "t:t2", "t:t3"}
    assert after == {k: before[k] for k in after}
    assert _index_files(mine) == _named_index_files(mine)

    # Deleting the tag of an expired snapshot: the files only it named go, as in Java.
    _table(mine).delete_tag("t1")
    java.run(theirs, [jp.delete_tag("db.t", "t1")])
    assert _files(mine) == _files(theirs)
    after = _java_reads(java, mine)
    assert after == {k: before[k] for k in after}
    assert "t:t1" not in after
    assert _index_files(mine) == _named_index_files(mine)


def test_orphan_cleanup_after_a_rollback_keeps_what_java_reads(
    java: JavaPaimon, history: Path, tmp_path: Path
) -> None:
    """A rollback leaves the vector files of the dropped snapshots behind; orphan
    cleanup removes exactly those."""
    before = _java_reads(java, history)
    mine = _copy(history, tmp_path / "shoal")
    table = _table(mine)
    target = next(t for t in table.list_tags() if t.name == "t2").snapshot_id
    table.rollback_to(snapshot_id=target)
    left = _index_files(mine) - _named_index_files(mine)
    assert any(f.startswith("index/") for f in left)
    old = time.time() - 2 * 86400
    for directory, _, names in os.walk(mine):
        for name in names:
            os.utime(os.path.join(directory, name), (old, old))
    result = _table(mine).remove_orphan_files(older_than=datetime.now())
    removed = {os.path.relpath(p, _table(mine).path) for p in result.paths}
    assert left <= removed
    assert _index_files(mine) == _named_index_files(mine)
    after = _java_reads(java, mine)
    assert set(after) == {f"s{i}" for i in range(1, target + 1)} | {"t:t1", "t:t2"}
    assert after == {k: before[k] for k in after}
