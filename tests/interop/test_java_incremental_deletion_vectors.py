"""Incremental reads of a primary-key table with deletion vectors, written by Java
Paimon (0.9 and 1.0), read by shoal exactly as Java reads ``incremental-between``:
the delta between any two snapshot ids (empty: Java's batch scan of such a table sees
no level-0 file, and APPEND commits add only those), and the diff between any two
tags, over upserts, deletes, full compactions, an update to an unchanged value and a
write-only commit. A delta whose APPEND commit adds a file above level 0 is
refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shoal
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [pa.field("p", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.int64())]
)
DV_OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true"}


def rows(p: str, ids: list[int], v: int) -> pa.Table:
    return pa.table({"p": [p] * len(ids), "id": ids, "v": [v + i for i in ids]}, schema=SCHEMA)


def ordered(t: pa.Table) -> list[dict[str, Any]]:
    keys = [(c, "ascending") for c in t.column_names]
    return t.sort_by(keys).to_pylist()


def _history() -> list[jp.Op[Any]]:
    """Each step of a history, then a tag of it: ``t0`` ... ``t7``."""
    steps: list[jp.Op[Any]] = [
        jp.write("db.t", pa.concat_tables([rows("a", list(range(40)), 0), rows("b", [1, 2], 0)])),
        jp.write("db.t", rows("a", [3, 4, 5], 100)),  # updates
        jp.write("db.t", rows("a", [6, 7], 0), kind="DELETE"),
        jp.compact("db.t"),
        jp.write("db.t", rows("b", [2, 9], 200)),  # an update and an insert
        jp.write("db.t", rows("a", [8, 20], 0)),  # the values key 8 and 20 already have
        # a write-only commit leaves level-0 files that a batch scan does not see
        jp.write("db.t", rows("a", [11, 12], 400), options={"write-only": "true"}),
        jp.write("db.t", rows("a", [10, 13], 300), kind=["UPDATE_AFTER", "DELETE"]),
    ]
    ops: list[jp.Op[Any]] = [
        jp.create_table(
            "db.t", SCHEMA, partition_keys=["p"], primary_keys=["p", "id"], options=DV_OPTIONS
        )
    ]
    for i, step in enumerate(steps):
        ops += [step, jp.create_tag("db.t", f"t{i}")]
    return ops


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


@pytest.fixture
def table(java: JavaPaimon, tmp_path: Path) -> shoal.Table:
    java.run(tmp_path, _history())
    return shoal.open_table(str(tmp_path / "db.db" / "t"))


def _java_reads(java: JavaPaimon, table: shoal.Table, ranges: list[tuple[Any, Any]]) -> list[Any]:
    warehouse = Path(table.path).parents[1]
    ops = [jp.read("db.t", options={"incremental-between": f"{a},{b}"}) for a, b in ranges]
    return java.run(warehouse, ops)


def test_snapshot_deltas_read_as_java_reads_them(java: JavaPaimon, table: shoal.Table) -> None:
    kinds = {s.id: s.commit_kind for s in table.snapshots()}
    assert set(kinds.values()) == {"APPEND", "COMPACT"}
    last = max(kinds)
    ranges = [(a, b) for a in range(last) for b in range(a + 1, last + 1)]
    for (start, end), expected in zip(ranges, _java_reads(java, table, ranges), strict=True):
        got = table.incremental(start, end)
        assert ordered(got) == ordered(expected), (start, end)
        assert got.schema == SCHEMA
    assert table.incremental(last, last).num_rows == 0


def test_tag_diffs_read_as_java_reads_them(java: JavaPaimon, table: shoal.Table) -> None:
    tags = [t.name for t in sorted(table.list_tags(), key=lambda t: t.snapshot_id)]
    assert len(tags) == 8
    ranges = [(a, b) for i, a in enumerate(tags) for b in tags[i + 1 :]]
    answers = _java_reads(java, table, ranges)
    for (start, end), expected in zip(ranges, answers, strict=True):
        assert ordered(table.incremental(start, end)) == ordered(expected), (start, end)
    diffs = {r: ordered(t) for r, t in zip(ranges, answers, strict=True)}
    # not trivially empty: the compaction's diff holds the updates, not the deletes
    assert {(r["id"], r["v"]) for r in diffs[("t0", "t3")]} == {(3, 103), (4, 104), (5, 105)}
    # keys 8 and 20 moved out of the compacted file into a new one with the values they
    # had: new in the diff all the same, as Java reads it
    assert {(r["p"], r["id"]) for r in diffs[("t4", "t5")]} == {("a", 8), ("a", 20)}
    assert diffs[("t5", "t6")] == []  # the write-only commit's files are level 0
    assert table.incremental("t7", "t7").num_rows == 0
    got = table.incremental("t0", "t7", columns=["v"], filter=[("v", ">=", 200)])
    expected = [{"v": r["v"]} for r in diffs[("t0", "t7")] if r["v"] >= 200]
    assert sorted(got.to_pylist(), key=lambda r: r["v"]) == sorted(expected, key=lambda r: r["v"])


def test_a_delta_adding_files_above_level_0_is_refused(java: JavaPaimon, tmp_path: Path) -> None:
    """A snapshot that adds the compacted files as an APPEND commit (no Paimon writer
    commits one): Paimon 0.9 and 1.0 read such a delta differently."""
    java.run(tmp_path, _history()[:9])
    where = tmp_path / "db.db" / "t"
    snapshots = shoal.open_table(str(where)).snapshots()
    compact = next(s for s in snapshots if s.commit_kind == "COMPACT")
    path = where / "snapshot" / f"snapshot-{compact.id}"
    document = json.loads(path.read_text())
    document["commitKind"] = "APPEND"
    path.write_text(json.dumps(document))
    table = shoal.open_table(str(where))
    assert table.incremental(0, compact.id - 1).num_rows == 0
    with pytest.raises(shoal.UnsupportedFeatureError, match="level") as info:
        table.incremental(compact.id - 1, compact.id)
    assert info.value.feature == (
        "incremental deltas of deletion-vector tables with appends above level 0"
    )
