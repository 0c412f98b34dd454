"""Table.merge on tables Java Paimon 1.0 wrote: Java reads exactly the rows the merge
left (updates, deletes and inserts in one commit), then writes and compacts on top."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from tests.conftest import sorted_rows
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import JavaPaimon

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.int64())]
)


@pytest.fixture(scope="module")
def java() -> JavaPaimon:
    return JavaPaimon("1.0")


def _rows(ids: list[int], dt: str = "2026-11-01", scale: int = 10) -> pa.Table:
    return pa.table(
        {"dt": [dt] * len(ids), "id": ids, "v": [i * scale for i in ids]}, schema=SCHEMA
    )


@pytest.mark.parametrize("primary_key", [False, True])
def test_java_reads_what_merge_left(java: JavaPaimon, tmp_path: Path, primary_key: bool) -> None:
    keys = {"primary_keys": ["dt", "id"], "options": {"bucket": "2"}} if primary_key else {}
    java.run(
        tmp_path,
        [
            jp.create_table("db.t", SCHEMA, partition_keys=["dt"], **keys),
            jp.write("db.t", _rows([1, 2, 3, 4])),
            jp.write("db.t", _rows([5, 6], "2026-11-02")),
        ],
    )
    table = shoal.open_table(str(tmp_path / "db.db" / "t"))
    source = pa.concat_tables([_rows([2, 3, 9], scale=100), _rows([6, 7], "2026-11-02", 100)])
    result = (
        table.merge(source, on=["dt", "id"])
        .when_matched_delete(condition="id = 3")
        .when_matched_update()
        .when_not_matched_insert()
        .execute_with_counts()
    )
    assert (result.updated, result.deleted, result.inserted) == (2, 1, 2)
    (seen,) = java.run(tmp_path, [jp.read("db.t")])
    expected = [(1, 10), (2, 200), (4, 40), (5, 50), (6, 600), (7, 700), (9, 900)]
    assert [(r["id"], r["v"]) for r in sorted_rows(seen, "id")] == expected
    assert sorted_rows(seen, "id") == sorted_rows(table.to_arrow(), "id")

    java.run(tmp_path, [jp.write("db.t", _rows([2, 8])), jp.compact("db.t")])
    (after,) = java.run(tmp_path, [jp.read("db.t")])
    ids = [r["id"] for r in sorted_rows(after, "id")]
    assert ids == ([1, 2, 4, 5, 6, 7, 8, 9] if primary_key else [1, 2, 2, 4, 5, 6, 7, 8, 9])
    assert sorted_rows(after, "id", "v") == sorted_rows(table.to_arrow(), "id", "v")
