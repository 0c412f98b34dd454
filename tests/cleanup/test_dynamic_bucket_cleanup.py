"""Cleanup of a dynamic-bucket table that shoal writes: every write replaces the hash
index files of the buckets that got new keys, and expiration, tag deletion and orphan
cleanup keep exactly the index files that a retained snapshot or tag names."""

from __future__ import annotations

import os
import time
from datetime import datetime

import pyarrow as pa

import shoal
from tests.reachability import reachable, rows_of_every_root, stored

SCHEMA = pa.schema(
    [pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.string())]
)


def rows(ids: list[int], v: str, dt: str = "d1") -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [v] * len(ids)}, schema=SCHEMA)


def index_files(table: shoal.Table) -> set[str]:
    return {p for p in stored(table) if f"{os.sep}index{os.sep}" in p}


def age_every_file(root: str) -> None:
    old = time.time() - 2 * 86400
    for directory, _, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(directory, name), (old, old))


def check(table: shoal.Table, before: dict[str, list[dict[str, object]]]) -> None:
    """Every root left reads as before, and nothing it reaches is missing."""
    now = rows_of_every_root(table)
    assert all(before[k] == v for k, v in now.items())
    assert reachable(table) <= stored(table)


def test_expiration_tags_and_orphans_keep_the_named_index_files(
    catalog: shoal.Catalog,
) -> None:
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"dynamic-bucket.target-row-num": "2", "write-only": "true"},
    )
    table.upsert(rows([1, 2, 3], "a"))
    table.upsert(rows([3, 4, 5], "b", "d2"))
    table.create_tag("early", snapshot_id=1)
    table.upsert(rows([4, 6], "c"))  # bucket 1 of d1 gets a key: its index file replaced
    table.delete(rows([1, 7], "x"))
    table.compact("full")
    table.upsert(rows([8, 9], "d", "d2"))
    before = rows_of_every_root(table)
    written = index_files(table)

    result = table.expire_snapshots(retain_min=1, retain_max=2, older_than=datetime.now())
    assert result.expired_snapshots > 0
    assert result.deleted_index_files > 0
    check(table, before)
    kept = index_files(table)
    assert kept < written  # replaced index files only the expired snapshots named are gone
    assert {p for p in reachable(table) if f"{os.sep}index{os.sep}" in p} == kept

    table.delete_tag("early")
    check(table, before)
    assert {p for p in reachable(table) if f"{os.sep}index{os.sep}" in p} == index_files(table)

    stray = os.path.join(table.path, "index", "index-00000000-0000-0000-0000-000000000000-0")
    with open(stray, "wb") as f:
        f.write(b"\x00\x00\x00\x01")
    age_every_file(table.path)
    table.remove_orphan_files()
    check(table, before)
    assert stored(table) == reachable(table)
    # The next write still finds each key's bucket.
    table.upsert(rows([2, 3, 10], "e"))
    assert sorted(table.to_arrow(filter=[("dt", "=", "d1")])["id"].to_pylist()) == [
        2,
        3,
        4,
        6,
        10,
    ]
