"""The row-level table functions from SQL against the table methods, on identical
copies of tiny partitioned tables of both kinds, and their refusals."""

from __future__ import annotations

import re
import shutil
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import PythonException
from pyspark.sql import SparkSession

import shoal
import shoal.spark
from shoal.errors import InvalidArgumentError
from shoal.spark.row_functions import column_values, parse_set
from shoal.spark.udtfs import register_functions

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("v", pa.string()),
        ("n", pa.float64()),
        ("price", pa.decimal128(10, 2)),
        ("day", pa.date32()),
        ("ts", pa.timestamp("ms")),
    ]
)
DAY1, DAY2 = "2026-11-01", "2026-11-02"


def _rows(ids: list[int], dt: str) -> pa.Table:
    return pa.table(
        {
            "dt": [dt] * len(ids),
            "id": ids,
            "v": [f"v{i}" for i in ids],
            "n": [i / 2 for i in ids],
            "price": [Decimal(i) / 4 for i in ids],
            "day": [date(2026, 1, 1 + i) for i in ids],
            "ts": [datetime(2026, 1, 1, i) for i in ids],
        },
        schema=SCHEMA,
    )


def _table(root: Path, *, keyed: bool) -> shoal.Table:
    layout: dict[str, Any] = {"partition_keys": ["dt"]}
    options = {"bucket": "2"}
    if keyed:
        layout["primary_keys"] = ["dt", "id"]
    else:
        options["bucket-key"] = "id"
    table = shoal.Catalog(str(root)).create_table("db.t", SCHEMA, options=options, **layout)
    table.append(_rows([1, 2, 3, 4], DAY1))
    table.append(_rows([5, 6, 7], DAY2))
    return table


def _copy(table: shoal.Table, root: Path) -> shoal.Table:
    shutil.copytree(table.path, root)
    return shoal.open_table(str(root))


def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r["dt"], r["id"]))


def _one(spark: SparkSession, query: str) -> dict[str, Any]:
    (row,) = spark.sql(query).collect()
    return row.asDict()


@pytest.fixture
def functions(spark: SparkSession) -> SparkSession:
    register_functions(spark)
    return spark


@pytest.mark.parametrize("keyed", [False, True], ids=["append", "primary-key"])
def test_delete_where_from_sql_as_the_table_method(
    functions: SparkSession, tmp_path: Path, keyed: bool
) -> None:
    one = _table(tmp_path / "one", keyed=keyed)
    two = _copy(one, tmp_path / "two")
    where = f"dt = '{DAY1}' and n >= 1.5 or id = 7"
    before = one.latest_snapshot()
    assert before is not None

    result = _one(functions, f'SELECT * FROM shoal_delete_where("{two.path}", "{where}")')
    local = one.delete_where(where)

    assert result == {
        "snapshot_id": local.id,
        "commit_kind": local.commit_kind,
        "rows_deleted": 3,  # ids 3, 4 and 7
    }
    assert local.id == before.id + 1  # one commit, the function ran once
    assert [s.id for s in shoal.open_table(two.path).snapshots()] == [1, 2, 3]
    assert _sorted(shoal.open_table(two.path).to_arrow()) == _sorted(one.to_arrow())
    assert [r["id"] for r in _sorted(one.to_arrow())] == [1, 2, 5, 6]


@pytest.mark.parametrize("keyed", [False, True], ids=["append", "primary-key"])
def test_update_where_from_sql_as_the_table_method(
    functions: SparkSession, tmp_path: Path, keyed: bool
) -> None:
    one = _table(tmp_path / "one", keyed=keyed)
    two = _copy(one, tmp_path / "two")
    values = {
        "v": "changed",
        "n": 0.1,
        "price": Decimal("1.10"),
        "day": date(2026, 12, 31),
        "ts": datetime(2026, 12, 31, 23, 59, 59, 123000),
    }
    text = (
        '{"v": "changed", "n": 0.1, "price": 1.10, "day": "2026-12-31", '
        '"ts": "2026-12-31T23:59:59.123"}'
    )

    query = f"SELECT * FROM shoal_update_where('{two.path}', 'id >= 3 and id <= 5', '{text}')"
    result = _one(functions, query)
    local = one.update_where("id >= 3 and id <= 5", set=values)

    assert result == {"snapshot_id": local.id, "commit_kind": local.commit_kind, "rows_updated": 3}
    assert [s.id for s in shoal.open_table(two.path).snapshots()] == [1, 2, 3]
    got = _sorted(shoal.open_table(two.path).to_arrow())
    assert got == _sorted(one.to_arrow())
    changed = [r for r in got if r["v"] == "changed"]
    assert [r["id"] for r in changed] == [3, 4, 5]
    assert all(r["price"] == Decimal("1.10") and r["n"] == 0.1 for r in changed)


def test_a_null_and_named_arguments(functions: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path, keyed=False)
    query = (
        f"SELECT * FROM shoal_update_where(path => '{table.path}', filter => 'id = 1', "
        """set => '{"v": null, "n": 2}')"""
    )
    assert _one(functions, query)["rows_updated"] == 1
    (row,) = table.to_arrow(filter="id = 1").to_pylist()
    assert (row["v"], row["n"]) == (None, 2.0)


def _bad_calls(path: str) -> list[tuple[str, str]]:
    update = f"SELECT * FROM shoal_update_where('{path}', 'id = 1', {{}})"
    delete = f"SELECT * FROM shoal_delete_where('{path}', {{}})"
    return [
        (update.format("map('v', 'x')"), "JSON object string"),
        (update.format("'v = x'"), "not JSON"),
        (update.format("""'{"v": "x", "v": "y"}'"""), "set twice"),
        (update.format("'[1]'"), "JSON object"),
        (update.format("'{}'"), "JSON object"),
        (update.format("NULL"), "JSON object string"),
        (update.format("""'{"nope": 1}'"""), "unknown column"),
        (update.format("""'{"id": 9}'"""), "primary-key|partition"),
        (update.format("""'{"n": "1.5"}'"""), "not a value|does not fit"),
        (update.format("""'{"price": 1.005}'"""), "not a value|does not fit"),
        (update.format("""'{"day": "31/12/2026"}'"""), "not an ISO date"),
        (delete.format("NULL"), "non-empty string"),
        (delete.format("''"), "non-empty string"),
        (delete.format("3"), "non-empty string"),
        (delete.format("'nope = 1'"), "nope"),
    ]


def test_bad_arguments_are_refused_before_any_change(
    functions: SparkSession, tmp_path: Path
) -> None:
    table = _table(tmp_path, keyed=True)
    rows = _sorted(table.to_arrow())
    for query, message in _bad_calls(table.path):
        with pytest.raises(PythonException) as refused:
            functions.sql(query).collect()
        text = str(refused.value)
        assert re.search(r"shoal\.errors\.Invalid(Argument|Filter)Error", text), query
        assert re.search(message, text), query
    table = shoal.open_table(table.path)
    assert [s.id for s in table.snapshots()] == [1, 2]
    assert _sorted(table.to_arrow()) == rows


# --- the set argument, without Spark ---------------------------------------------------------
def test_set_is_a_json_object_read_exactly() -> None:
    values = parse_set('{"v": "x", "n": 1.5e0, "price": 1.10, "day": "2026-01-02", "k": null}')
    assert values == {
        "v": "x",
        "n": Decimal("1.5"),
        "price": Decimal("1.10"),
        "day": "2026-01-02",
        "k": None,
    }
    converted = column_values(values, SCHEMA)
    assert converted == {
        "v": "x",
        "n": 1.5,
        "price": Decimal("1.10"),
        "day": date(2026, 1, 2),
        "k": None,
    }
    assert column_values({"ts": "2026-01-02T03:04:05"}, SCHEMA) == {
        "ts": datetime(2026, 1, 2, 3, 4, 5)
    }
    assert column_values({"price": 2}, SCHEMA) == {"price": Decimal(2)}
    assert column_values(parse_set('{"n": 1e300, "price": 1e1}'), SCHEMA) == {
        "n": 1e300,
        "price": Decimal("1e1"),
    }
    for text in ('{"n": 1e400}', '{"n": 0.10000000000000000001}', '{"day": "2026-13-01"}'):
        with pytest.raises(InvalidArgumentError):
            column_values(parse_set(text), SCHEMA)


@pytest.mark.parametrize(
    "text", [{"v": "x"}, 3, None, "", "[]", "{}", '{"a": 1, "a": 1}', "{'v': 1}"]
)
def test_set_refuses_anything_else(text: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        parse_set(text)


# --- merge from a DataFrame ------------------------------------------------------------------
def _source() -> pa.Table:
    """Changes for ids 3, 4 (matched; 4 with a negative n), 8 (new) of DAY1."""
    rows = _rows([3, 4, 8], DAY1)
    return rows.set_column(3, SCHEMA.field("n"), pa.array([10.0, -1.0, 4.0]))


def _merged(builder: Any) -> Any:
    return (
        builder.when_matched_delete(source_condition="n < 0")
        .when_matched_update()
        .when_not_matched_insert()
        .execute_with_counts()
    )


@pytest.mark.parametrize("keyed", [False, True], ids=["append", "primary-key"])
def test_merge_from_a_dataframe_as_the_table_method(
    spark: SparkSession, tmp_path: Path, keyed: bool
) -> None:
    one = _table(tmp_path / "one", keyed=keyed)
    two = _copy(one, tmp_path / "two")
    frame = spark.createDataFrame(_source())

    got = _merged(shoal.spark.merge(frame, two.path, on=["dt", "id"]))
    local = _merged(one.merge(_source(), on=["dt", "id"]))

    assert (got.rows, got.updated, got.deleted, got.inserted) == (3, 1, 1, 1)
    assert (got.rows, got.updated, got.deleted, got.inserted) == (
        local.rows,
        local.updated,
        local.deleted,
        local.inserted,
    )
    assert (got.snapshot.id, got.snapshot.commit_kind) == (3, local.snapshot.commit_kind)
    assert [s.id for s in shoal.open_table(two.path).snapshots()] == [1, 2, 3]
    rows = _sorted(shoal.open_table(two.path).to_arrow())
    assert rows == _sorted(one.to_arrow())
    assert [(r["id"], r["n"]) for r in rows if r["dt"] == DAY1] == [
        (1, 0.5),
        (2, 1.0),
        (3, 10.0),
        (8, 4.0),
    ]


def test_merge_with_an_open_table_and_named_values(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path, keyed=False)
    frame = spark.createDataFrame([(DAY2, 5, "five")], "dt string, id bigint, label string")

    result = (
        shoal.spark.merge(frame, table, on=["dt", "id"])
        .when_matched_update(set={"v": "label"}, condition="n > 1")
        .execute_with_counts()
    )

    assert (result.updated, result.inserted) == (1, 0)
    again = (
        shoal.spark.merge(frame, table, on=["dt", "id"])
        .when_matched_update(set={"n": pa.scalar(0.0)})
        .execute()
    )
    assert again == table.latest_snapshot()
    assert again.id == result.snapshot.id + 1
    (row,) = table.to_arrow(filter="id = 5").to_pylist()
    assert row["v"] == "five"


def test_merge_arguments_are_refused_before_any_change(spark: SparkSession, tmp_path: Path) -> None:
    table = _table(tmp_path, keyed=True)
    rows = _sorted(table.to_arrow())
    frame = spark.createDataFrame(_source())
    twice = spark.createDataFrame(pa.concat_tables([_source(), _source()]))
    refusals = [
        (lambda: shoal.spark.merge(_source(), table.path, on=["id"]), "Spark DataFrame"),  # type: ignore[arg-type]
        (lambda: shoal.spark.merge(frame, table.path, on="id"), "list of column names"),
        (lambda: shoal.spark.merge(frame, table.path, on=[]), "list of column names"),
        (lambda: shoal.spark.merge(frame, table.path, on=["nope"]), "source has no column"),
        (lambda: shoal.spark.merge(frame, 3, on=["id"]), "path or a shoal.Table"),  # type: ignore[arg-type]
        (lambda: shoal.spark.merge(frame, table.path, on=["dt", "id"]).execute(), "clause"),
        (
            lambda: shoal.spark.merge(frame, table.path, on=["v"]).when_matched_delete().execute(),
            "primary key",
        ),
        (
            lambda: (
                shoal.spark.merge(twice, table.path, on=["dt", "id"])
                .when_matched_update()
                .execute()
            ),
            "multiple source rows",
        ),
        (
            lambda: (
                shoal.spark.merge(frame, table.path, on=["dt", "id"])
                .when_matched_update(set={"nope": "v"})
                .execute()
            ),
            "not a column",
        ),
    ]
    for call, message in refusals:
        with pytest.raises(InvalidArgumentError, match=message):
            call()
    table = shoal.open_table(table.path)
    assert [s.id for s in table.snapshots()] == [1, 2]
    assert _sorted(table.to_arrow()) == rows
