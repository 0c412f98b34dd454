"""Tables whose schema Java Paimon (0.9 and 1.0) changed, read by shoal as Java reads them.

Java writes, alters (add with ``after``/``first``, rename, drop, widen types) and writes
again; shoal reads every snapshot, with projections and filters, and its rows must be
Java's. On a primary-key table shoal then compacts files of several schema versions and
Java reads the result.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shoal
from shoal.core import predicate as P
from shoal.core.plan import live_entries
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon

pytestmark = pytest.mark.interop

APPEND = pa.schema(
    [
        pa.field("id", pa.int64(), False),
        ("name", pa.string()),
        ("n", pa.int32()),
        ("f", pa.float32()),
        ("d", pa.decimal128(5, 2)),
        ("small", pa.int16()),
        ("gone", pa.string()),
    ]
)


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def first_rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "name": [f"a{i}" for i in ids],
            "n": pa.array(ids, pa.int32()),
            "f": pa.array([i + 0.5 for i in ids], pa.float32()),
            "d": pa.array([Decimal(f"{i}.25") for i in ids], pa.decimal128(5, 2)),
            "small": pa.array([-i for i in ids], pa.int16()),
            "gone": [f"g{i}" for i in ids],
        },
        schema=APPEND,
    )


def later_rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "score": [float(i) * 2 for i in ids],
            "title": [f"b{i}" for i in ids],
            "n": pa.array([2**40 + i for i in ids], pa.int64()),
            "f": pa.array([i + 0.125 for i in ids], pa.float64()),
            "d": pa.array([Decimal(f"{i}.125") for i in ids], pa.decimal128(10, 3)),
            "small": [str(i) for i in ids],
        }
    )


CHANGES: list[jp.SchemaChange] = [
    ("drop_column", "gone"),
    ("rename_column", "name", "title"),
    ("update_column_type", "n", pa.int64()),
    ("update_column_type", "f", pa.float64()),
    ("update_column_type", "d", "DECIMAL(10, 3)"),
    ("update_column_type", "small", pa.string()),
]


def rows(table: pa.Table, key: str = "id") -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = table.sort_by(key).to_pylist()
    return result


def test_evolved_append_table_reads_as_java_reads_it(java: JavaPaimon, tmp_path: Path) -> None:
    results = java.run(
        tmp_path,
        [
            jp.create_table("db.a", APPEND, options={"bucket": "-1"}),
            jp.write("db.a", first_rows([0, 1, 2])),  # snapshot 1
            jp.alter("db.a", CHANGES),
            jp.alter("db.a", [("add_column", "score", pa.float64())]),
            jp.write("db.a", later_rows([3, 4])),  # snapshot 2
            jp.read("db.a"),  # 5
            jp.read("db.a", options={"scan.snapshot-id": "1"}),
            jp.read("db.a", projection=["title", "n", "id"]),
            jp.read("db.a", options={"scan.snapshot-id": "2"}),
        ],
    )
    table = shoal.open_table(str(tmp_path / "db.db" / "a"))
    latest, before, projected, second = results[5:9]
    assert table.schema == latest.schema
    assert rows(table.to_arrow()) == rows(latest)
    assert rows(table.to_arrow(snapshot_id=1)) == rows(before)
    assert table.to_arrow(snapshot_id=1).schema == before.schema
    assert rows(table.to_arrow(columns=["title", "n", "id"])) == rows(projected)
    assert rows(table.to_arrow(snapshot_id=2)) == rows(second)
    batches = pa.Table.from_batches(list(table.scan().to_batches()))
    assert rows(batches) == rows(latest)

    # Filters by the new names and on retyped, added and dropped-then-absent columns.
    reference = latest.to_pylist()
    for flt, keep in [
        ([("title", "=", "a1")], lambda r: r["title"] == "a1"),
        ([("n", ">", 1)], lambda r: r["n"] is not None and r["n"] > 1),
        ([("score", "=", 6.0)], lambda r: r["score"] == 6.0),
        ([("score", "=", None)], lambda r: r["score"] is None),
        ([("d", "<", Decimal("2"))], lambda r: r["d"] is not None and r["d"] < 2),
        ([("small", "=", "3")], lambda r: r["small"] == "3"),
        (
            [[("score", ">", 7.0)], [("title", "=", "a0")]],
            lambda r: r["title"] == "a0" or (r["score"] or 0) > 7,
        ),
    ]:
        expected = sorted([r for r in reference if keep(r)], key=lambda r: r["id"])
        assert rows(table.to_arrow(filter=flt)) == expected, flt
        streamed = list(table.scan(filter=flt).to_batches())
        assert rows(pa.Table.from_batches(streamed, table.schema)) == expected, flt

    # Pruning by statistics: the old file has no score (only nulls), and its n (INT)
    # statistics are exact under BIGINT; the new file's n is above 2**40.
    store = table._store
    snapshot = table.latest_snapshot()
    assert snapshot is not None
    types = {f.name: f.type for f in store.schema.fields}

    def planned(flt: list[tuple[str, str, Any]]) -> set[int]:
        dnf = P.parse_filter(flt, types)
        return {e.file.schema_id for e in live_entries(store, snapshot, dnf)}

    assert planned([("score", "=", 6.0)]) == {2}
    assert planned([("score", "=", None)]) == {0}  # the new file has no null score
    assert planned([("n", "<", 5)]) == {0}
    assert planned([("n", ">", 2**40)]) == {2}
    # Statistics of a type that does not keep order under the new one prune nothing.
    assert planned([("small", "=", "zzz")]) == {0}


PK = pa.schema(
    [
        pa.field("dt", pa.string(), False),
        pa.field("id", pa.int64(), False),
        ("name", pa.string()),
        ("n", pa.int32()),
    ]
)


def pk_rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table(
        {
            "dt": [f"2026-11-0{1 + i % 2}" for i in ids],
            "id": ids,
            "name": [f"{tag}{i}" for i in ids],
            "n": pa.array(ids, pa.int32()),
        },
        schema=PK,
    )


def test_primary_key_table_merges_and_compacts_across_schemas(
    java: JavaPaimon, tmp_path: Path
) -> None:
    results = java.run(
        tmp_path,
        [
            jp.create_table(
                "db.t",
                PK,
                partition_keys=["dt"],
                primary_keys=["dt", "id"],
                options={"bucket": "2"},
            ),
            jp.write("db.t", pk_rows(list(range(6)), "a")),  # snapshot 1
            jp.alter(
                "db.t",
                [
                    ("add_column", "score", pa.float64()),
                    ("rename_column", "name", "title"),
                    ("update_column_type", "n", pa.int64()),
                ],
            ),
            jp.alter("db.t", [("add_column", "first", pa.string(), {"first": True})]),
            jp.write(
                "db.t",
                pa.table(
                    {
                        "dt": ["2026-11-02", "2026-11-01", "2026-11-01"],
                        "id": [1, 2, 8],
                        "title": ["b1", "b2", "b8"],
                        "n": pa.array([2**40, None, 8], pa.int64()),
                        "score": [1.5, None, 8.5],
                        "first": ["x", "y", None],
                    }
                ),
            ),
            jp.write("db.t", pk_rows([3], "c").rename_columns(["dt", "id", "title", "n"])),
            jp.read("db.t"),  # 6
            jp.read("db.t", options={"scan.snapshot-id": "1"}),
        ],
    )
    path = str(tmp_path / "db.db" / "t")
    table = shoal.open_table(path)
    latest, before = results[6], results[7]
    assert table.schema == latest.schema
    assert rows(table.to_arrow()) == rows(latest)
    assert rows(table.to_arrow(snapshot_id=1)) == rows(before)
    assert rows(table.to_arrow(filter=[("title", "=", "b2")])) == [
        r for r in rows(latest) if r["title"] == "b2"
    ]

    table.upsert(
        pa.table(
            {
                "first": ["z"],
                "dt": ["2026-11-01"],
                "id": [4],
                "title": ["s4"],
                "n": pa.array([44], pa.int64()),
                "score": [4.0],
            }
        )
    )
    expected = rows(table.to_arrow())
    table.compact("full")
    assert rows(table.to_arrow()) == expected
    schema_id = table._store.schema.id
    files = table.system_table("files")
    assert set(files.column("schema_id").to_pylist()) == {schema_id}

    after, java_files = java.run(
        tmp_path, [jp.read("db.t"), jp.read("db.t$files", projection=["schema_id"])]
    )
    assert rows(after) == expected
    assert set(java_files.column("schema_id").to_pylist()) == {schema_id}
