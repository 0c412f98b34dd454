"""Incremental reads: the delta between snapshot ids, the difference between tags."""

from __future__ import annotations

import pyarrow as pa
import pytest

import shoal
from tests.conftest import events


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def test_delta_between_snapshot_ids(events_table: shoal.Table) -> None:
    for i in range(4):
        events_table.append(events([i * 10, i * 10 + 1], dt=f"2026-11-0{i + 1}"))
    assert _ids(events_table.incremental(1, 3)) == [10, 11, 20, 21]
    assert _ids(events_table.incremental(0, 1)) == [0, 1]
    assert events_table.incremental(2, 2).num_rows == 0
    got = events_table.incremental(0, 4, columns=["id"], filter=[("dt", "=", "2026-11-04")])
    assert got.to_pylist() == [{"id": 30}, {"id": 31}]
    # Overwrites and partition drops are not additions.
    events_table.drop_partitions([{"dt": "2026-11-01"}])
    events_table.append(events([50]))
    assert _ids(events_table.incremental(4, 6)) == [50]
    with pytest.raises(shoal.SnapshotNotFoundError):
        events_table.incremental(4, 9)
    with pytest.raises(shoal.InvalidArgumentError):
        events_table.incremental(3, 1)


def test_difference_between_tags(events_table: shoal.Table) -> None:
    events_table.append(events([1, 2]))
    events_table.create_tag("before")
    events_table.append(events([3]))
    events_table.overwrite(events([4]), partition={"dt": "2026-11-01"})
    events_table.append(events([5], dt="2026-11-02"))
    events_table.create_tag("after")
    assert _ids(events_table.incremental("before", "after")) == [4, 5]
    assert events_table.incremental("after", "after").num_rows == 0
    with pytest.raises(shoal.TagNotFoundError):
        events_table.incremental("before", "nope")
    with pytest.raises(shoal.InvalidArgumentError, match="mix"):
        events_table.incremental("before", 3)  # type: ignore[arg-type]


def test_primary_key_delta_is_merged_by_key(catalog: shoal.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = catalog.create_table("db.pk", schema, primary_keys=["id"], options={"bucket": "2"})
    table.upsert(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    table.upsert(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=schema))
    table.delete(pa.table({"id": [3]}))
    table.upsert(pa.table({"id": [4], "v": ["d"]}, schema=schema))
    got = table.incremental(1, 4).sort_by("id").to_pylist()
    assert got == [{"id": 2, "v": "B"}, {"id": 4, "v": "d"}]
    table.create_tag("x", snapshot_id=1)
    table.create_tag("y")
    # Key 1 is unchanged, 2 changed, 3 came and went, 4 is new.
    got = table.incremental("x", "y").sort_by("id").to_pylist()
    assert got == [{"id": 2, "v": "B"}, {"id": 4, "v": "d"}]
    assert table.incremental("y", "y").num_rows == 0
    assert table.incremental("x", "y", columns=["v"], filter=[("id", ">", 2)]).to_pylist() == [
        {"v": "d"}
    ]


def test_primary_key_tag_difference_survives_compaction_and_nested_columns(
    catalog: shoal.Catalog,
) -> None:
    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())), ("n", pa.int32())])
    table = catalog.create_table("db.nested", schema, primary_keys=["id"], options={"bucket": "3"})
    table.upsert(pa.table({"id": [1, 2, 3], "tags": [["a"], None, ["c"]], "n": [1, None, 3]},
                          schema=schema))
    table.create_tag("before")
    table.upsert(pa.table({"id": [2, 3], "tags": [None, ["c", "d"]], "n": [None, 3]},
                          schema=schema))
    table.compact(strategy="full")  # every file rewritten, rows the same but key 3
    table.create_tag("after")
    got = table.incremental("before", "after").to_pylist()
    assert got == [{"id": 3, "tags": ["c", "d"], "n": 3}]
