"""Schema changes made by shoal, read and changed further by Java Paimon (0.9 and 1.0), and
the other way round: the schema files shoal writes are the ones Java writes.

shoal adds (after a column, nested), renames, drops, widens and sets options; Java reads
every row, its ``$schemas`` table agrees with shoal's, and Java alters the table further.
Java alters a table it created; shoal opens it, alters it further and writes, and Java
reads the result.
"""

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

EVENTS = pa.schema(
    [
        pa.field("dt", pa.string(), False),
        pa.field("id", pa.int64(), False),
        ("name", pa.string()),
        ("n", pa.int32()),
        ("old", pa.string()),
        ("s", pa.struct([("a", pa.int32())])),
    ]
)


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def by_id(table: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = table.sort_by("id").to_pylist()
    return rows


def first_rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "dt": ["2026-11-01"] * len(ids),
            "id": ids,
            "name": [f"n{i}" for i in ids],
            "n": pa.array(ids, pa.int32()),
            "old": [f"o{i}" for i in ids],
            "s": [{"a": i} for i in ids],
        },
        schema=EVENTS,
    )


def evolve(table: shoal.Table) -> None:
    with table.update_schema() as update:
        update.add_column("score", pa.float64(), after="name", comment="points")
        update.rename_column("name", "title")
        update.drop_column("old")
        update.update_column_type("n", pa.int64())
        update.set_option("snapshot.num-retained.max", "50")
        update.update_comment("evolved")


def later_rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {
            "dt": ["2026-11-01"] * len(ids),
            "id": ids,
            "title": [f"t{i}" for i in ids],
            "score": [i * 1.5 for i in ids],
            "n": [i * 10**10 for i in ids],
            "s": [{"a": i} for i in ids],
        }
    )


def expected(first: list[int], later: list[int]) -> list[dict[str, Any]]:
    rows = [
        {
            "dt": "2026-11-01",
            "id": i,
            "title": f"n{i}",
            "score": None,
            "n": i,
            "s": {"a": i},
        }
        for i in first
    ]
    rows += [
        {
            "dt": "2026-11-01",
            "id": i,
            "title": f"t{i}",
            "score": i * 1.5,
            "n": i * 10**10,
            "s": {"a": i},
        }
        for i in later
    ]
    return sorted(rows, key=lambda r: r["id"])


@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
def test_java_reads_a_table_shoal_changed_and_changes_it_further(
    java: JavaPaimon, tmp_path: Path, primary_key: bool
) -> None:
    warehouse = tmp_path / "wh"
    catalog = shoal.Catalog(str(warehouse))
    keys = {"primary_keys": ["dt", "id"], "options": {"bucket": "2"}} if primary_key else {}
    table = catalog.create_table("db.t", EVENTS, partition_keys=["dt"], **keys)  # type: ignore[arg-type]
    table.append(first_rows([1, 2]))
    evolve(table)
    table.append(later_rows([3, 4]))
    shoal_schemas = table.system_table("schemas").to_pylist()

    results = java.run(
        warehouse,
        [
            jp.read("db.t"),
            jp.read("db.t$schemas"),
            jp.read("db.t$options"),
            jp.alter("db.t", [("add_column", "extra", pa.int32()), ("drop_column", "score")]),
            jp.read("db.t"),
        ],
    )
    assert by_id(results[0]) == expected([1, 2], [3, 4])
    assert by_id(table.to_arrow()) == expected([1, 2], [3, 4])
    java_schemas = results[1].sort_by("schema_id").to_pylist()
    assert [r["schema_id"] for r in java_schemas] == [0, 1]
    for ours, theirs in zip(shoal_schemas, java_schemas, strict=True):
        for column in ("fields", "partition_keys", "primary_keys", "options"):
            assert json.loads(ours[column]) == json.loads(theirs[column]), column
        assert ours["fields"] == theirs["fields"]
        assert ours["comment"] == theirs["comment"]
    assert {r["key"]: r["value"] for r in results[2].to_pylist()}[
        "snapshot.num-retained.max"
    ] == "50"
    assert results[4].column_names == ["dt", "id", "title", "n", "s", "extra"]

    # Java's schema 2 takes ids above shoal's highestFieldId; shoal goes on from there.
    reopened = shoal.open_table(table.path)
    with reopened.update_schema() as update:
        update.add_column("after_java", pa.string())
    ids = {
        f["name"]: f["id"]
        for f in json.loads(reopened.system_table("schemas")["fields"][-1].as_py())
    }
    assert ids["extra"] == 8
    assert ids["after_java"] == 9
    java_rows = java.run(warehouse, [jp.read("db.t")])[0]
    assert java_rows.column_names[-1] == "after_java"
    assert by_id(reopened.to_arrow()) == by_id(java_rows)


def test_shoal_changes_a_table_java_changed(java: JavaPaimon, tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    created = pa.schema(
        [pa.field("id", pa.int64(), False), ("name", pa.string()), ("n", pa.int32())]
    )
    java.run(
        warehouse,
        [
            jp.create_table("db.t", created, options={"bucket": "-1"}),
            jp.write(
                "db.t",
                pa.table({"id": [1, 2], "name": ["a", "b"], "n": pa.array([1, 2], pa.int32())}),
            ),
            jp.alter(
                "db.t",
                [
                    ("add_column", "score", pa.float64()),
                    ("rename_column", "name", "title"),
                    ("update_column_type", "n", pa.int64()),
                ],
            ),
        ],
    )
    table = shoal.Catalog(str(warehouse)).get_table("db.t")
    assert table.schema.names == ["id", "title", "n", "score"]
    with table.update_schema() as update:
        update.add_column("note", pa.string(), after="id")
        update.rename_column("score", "points")
        update.set_option("snapshot.num-retained.max", "30")
    with pytest.raises(shoal.InvalidOptionError, match="cannot change"), table.update_schema() as u:
        u.set_option("bucket-key", "id")
    table.append(pa.table({"id": [3], "note": ["x"], "title": ["c"], "n": [3], "points": [0.5]}))

    results = java.run(warehouse, [jp.read("db.t"), jp.read("db.t$schemas")])
    assert by_id(table.to_arrow()) == by_id(results[0])
    assert by_id(results[0]) == [
        {"id": 1, "note": None, "title": "a", "n": 1, "points": None},
        {"id": 2, "note": None, "title": "b", "n": 2, "points": None},
        {"id": 3, "note": "x", "title": "c", "n": 3, "points": 0.5},
    ]
    schemas = results[1].sort_by("schema_id")
    assert schemas.column("schema_id").to_pylist() == [0, 1, 2]
    fields = json.loads(schemas["fields"][-1].as_py())
    assert [(f["name"], f["id"]) for f in fields] == [
        ("id", 0),
        ("note", 4),
        ("title", 1),
        ("n", 2),
        ("points", 3),
    ]


def test_java_reads_fields_added_to_a_row_column(java: JavaPaimon, tmp_path: Path) -> None:
    """Fields added to a ROW column take ids above highestFieldId, depth first. (Paimon
    reads files written before such a change from 1.0.0 on; the 0.9 and 1.0-SNAPSHOT jars
    of this oracle do not, so the fields are added before the first write here.)"""
    warehouse = tmp_path / "wh"
    table = shoal.Catalog(str(warehouse)).create_table("db.t", EVENTS)
    with table.update_schema() as update:
        update.add_column("s.b", pa.string())
        update.add_column("s.c", pa.struct([("x", pa.int8())]), after="a")
    assert (
        table.system_table("schemas")
        .to_pylist()[-1]["fields"]
        .endswith(
            '{"id":5,"name":"s","type":{"type":"ROW","fields":[{"id":6,"name":"a","type":"INT"},'
            '{"id":8,"name":"c","type":{"type":"ROW","fields":[{"id":9,"name":"x","type":"TINYINT"}]}},'
            '{"id":7,"name":"b","type":"STRING"}]}}]'
        )
    )
    table.append(
        pa.table(
            {
                "dt": ["2026-11-01"] * 2,
                "id": [1, 2],
                "name": ["n1", "n2"],
                "n": pa.array([1, 2], pa.int32()),
                "old": ["o1", "o2"],
                "s": [{"a": 1, "c": None, "b": None}, {"a": 2, "c": {"x": 3}, "b": "b2"}],
            }
        )
    )
    rows = java.run(warehouse, [jp.read("db.t", projection=["id", "s"])])[0]
    assert by_id(rows) == [
        {"id": 1, "s": {"a": 1, "c": None, "b": None}},
        {"id": 2, "s": {"a": 2, "c": {"x": 3}, "b": "b2"}},
    ]
