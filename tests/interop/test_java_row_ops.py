"""delete_where and update_where on tables Java Paimon (0.9 and 1.0) wrote: Java reads
the rows shoal left, then writes and compacts on top of them, and both read alike."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from tests.conftest import sorted_rows
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.int64())]
)


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def _rows(ids: list[int], dt: str = "2026-11-01") -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [i * 10 for i in ids]}, schema=SCHEMA)


@pytest.mark.parametrize("primary_key", [False, True])
def test_java_reads_what_delete_and_update_left(
    java: JavaPaimon, tmp_path: Path, primary_key: bool
) -> None:
    keys = {"primary_keys": ["dt", "id"], "options": {"bucket": "2"}} if primary_key else {}
    java.run(
        tmp_path,
        [
            jp.create_table("db.t", SCHEMA, partition_keys=["dt"], **keys),
            jp.write("db.t", _rows([1, 2, 3, 4])),
            jp.write("db.t", _rows([5, 6], "2026-11-02")),
            jp.write("db.t", _rows([7, 8])),
        ],
    )
    table = shoal.open_table(str(tmp_path / "db.db" / "t"))
    table.delete_where("v >= 30 and v <= 50")
    table.update_where([("id", "in", [1, 8])], set={"v": -1})
    (seen,) = java.run(tmp_path, [jp.read("db.t")])
    expected = [(1, -1), (2, 20), (6, 60), (7, 70), (8, -1)]
    assert [(r["id"], r["v"]) for r in sorted_rows(seen, "id")] == expected
    assert sorted_rows(seen, "id") == sorted_rows(table.to_arrow(), "id")

    # Java writes and compacts on top of the rewritten files
    java.run(tmp_path, [jp.write("db.t", _rows([9, 2])), jp.compact("db.t")])
    (after,) = java.run(tmp_path, [jp.read("db.t")])
    ids = [r["id"] for r in sorted_rows(after, "id")]
    assert ids == ([1, 2, 6, 7, 8, 9] if primary_key else [1, 2, 2, 6, 7, 8, 9])
    assert sorted_rows(after, "id", "v") == sorted_rows(table.to_arrow(), "id", "v")
