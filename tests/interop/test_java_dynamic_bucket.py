"""Dynamic-bucket tables (``bucket`` = -1) between Paimon's Java implementation (0.9 and
1.0) and shoal: what one writes the other reads, at every snapshot, and each key stays
in one bucket of its partition whoever writes it (Paimon's hash index)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import shoal
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), False),
        pa.field("id", pa.int64(), False),
        pa.field("v", pa.string()),
    ]
)
# Three keys per bucket: a few rows open several buckets.
TARGET = {"dynamic-bucket.target-row-num": "3"}


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def rows(ids: list[int], v: str, dt: str = "d1") -> pa.Table:
    return pa.table(
        {"dt": [dt] * len(ids), "id": ids, "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA
    )


def table_path(warehouse: Path, name: str) -> str:
    return str(warehouse / "db.db" / name)


def ordered(table: pa.Table) -> list[dict[str, object]]:
    return (
        table.select(SCHEMA.names).sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()
    )


def buckets_of_keys(table: shoal.Table) -> dict[tuple[object, ...], set[int]]:
    """Every key of the live data files (deletes included) with the buckets holding it."""
    files = table.system_table("files")
    found: dict[tuple[object, ...], set[int]] = defaultdict(set)
    for path, partition, bucket in zip(
        files["file_path"].to_pylist(),
        files["partition"].to_pylist(),
        files["bucket"].to_pylist(),
        strict=True,
    ):
        keys = pq.read_table(path, columns=["_KEY_id"])["_KEY_id"].to_pylist()
        for key in keys:
            found[(partition, key)].add(bucket)
    return found


def assert_one_bucket_per_key(table: shoal.Table) -> None:
    spread = {k: b for k, b in buckets_of_keys(table).items() if len(b) > 1}
    assert not spread, f"keys in several buckets: {spread}"


def test_java_tables_read_by_snapshot_and_compacted_by_shoal(
    java: JavaPaimon, tmp_path: Path
) -> None:
    """Java writes a partitioned and an unpartitioned dynamic-bucket table over several
    buckets; shoal reads every snapshot as Java does, compacts them keeping Paimon's
    hash index, and Java's next upserts still find each key in its bucket."""
    writes = [
        (rows([1, 2, 3, 4, 5, 6, 7], "a"), "INSERT"),
        (rows([2, 5, 8, 9], "b"), "INSERT"),
        (rows([3, 8], "c"), "DELETE"),
        (pa.concat_tables([rows([1, 10], "d", "d2"), rows([7], "d")]), "INSERT"),
    ]
    ops: list[jp.Op[object]] = [
        jp.create_table(
            "db.p", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=TARGET
        ),
        jp.create_table("db.u", SCHEMA, primary_keys=["id"], options=TARGET),
    ]
    for data, kind in writes:
        ops += [
            jp.write("db.p", data, kind=kind),
            jp.write("db.u", data.set_column(0, "dt", pa.array(["d1"] * data.num_rows)), kind=kind),
        ]
    for snapshot_id in range(1, len(writes) + 1):
        ops += [
            jp.read("db.p", options={"scan.snapshot-id": str(snapshot_id)}),
            jp.read("db.u", options={"scan.snapshot-id": str(snapshot_id)}),
        ]
    results = java.run(tmp_path, ops)
    by_snapshot = results[2 + 2 * len(writes) :]
    for name in ("p", "u"):
        table = shoal.open_table(table_path(tmp_path, name))
        assert max(table.system_table("files")["bucket"].to_pylist()) >= 2
        for snapshot_id in range(1, len(writes) + 1):
            seen = by_snapshot[2 * (snapshot_id - 1) + (name == "u")]
            assert ordered(table.to_arrow(snapshot_id=snapshot_id)) == ordered(seen)
        before = table.latest_snapshot()
        assert before is not None and before.index_manifest is not None
        result = table.compact("full")
        assert result.snapshot is not None
        assert result.snapshot.index_manifest == before.index_manifest
        assert ordered(table.to_arrow()) == ordered(table.to_arrow(snapshot_id=before.id))
    upserts = pa.concat_tables([rows([1, 2, 3, 4, 11], "e"), rows([1, 12], "e", "d2")])
    after = java.run(
        tmp_path,
        [
            jp.write("db.p", upserts),
            jp.write("db.u", upserts.set_column(0, "dt", pa.array(["d1"] * upserts.num_rows))),
            jp.read("db.p"),
            jp.read("db.u"),
        ],
    )[2:]
    for name, seen in zip(("p", "u"), after, strict=True):
        table = shoal.open_table(table_path(tmp_path, name))
        assert ordered(table.to_arrow()) == ordered(seen)
        keys = [(r["dt"], r["id"]) for r in seen.to_pylist()]
        assert len(keys) == len(set(keys))
        assert_one_bucket_per_key(table)
