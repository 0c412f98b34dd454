"""``shoal ingest`` never turns a value it cannot read into a null unnoticed: CSV and
JSON text that does not parse as its column's type, a Parquet value that its cast to
the column's type cannot hold, a row without a NOT NULL value. In parse mode failfast
(the default) the ingest stops before anything is committed, with exit code 2 and an
error naming the file, the record and the column; in parse mode permissive the values
become nulls and are counted per column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from pyspark.sql import SparkSession

import shoal
from shoal.cli.ingest import ingest_files
from shoal.spark.source_files import SourceRead
from tests.cli_runs import run, run_json

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("amount", pa.float64()), ("n", pa.int32())]
)


@pytest.fixture(autouse=True)
def _session(cli_session: None) -> None:
    """Every command here runs on the suite's session."""


def failed(result: Result) -> str:
    """The error of a command that stopped on bad input: exit code 2, no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "Py4J" not in result.output
    error = result.stderr.strip()
    assert error.startswith("error: "), error
    return error


@pytest.fixture
def catalog(tmp_path: Path) -> shoal.Catalog:
    return shoal.Catalog(str(tmp_path / "wh"))


@pytest.fixture(params=["append", "primary-key"])
def table(request: pytest.FixtureRequest, catalog: shoal.Catalog) -> shoal.Table:
    """An append table (Spark's Parquet writer) or a primary-key table (the data
    source), holding one row: each test checks that a failed ingest adds no snapshot."""
    if request.param == "append":
        made = catalog.create_table("db.plain", SCHEMA)
    else:
        made = catalog.create_table(
            "db.keyed", SCHEMA, primary_keys=["id"], options={"bucket": "2"}
        )
    made.append(pa.table({"id": [0], "amount": [0.5], "n": [0]}, schema=SCHEMA))
    return made


def rows(table: shoal.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in table.to_arrow().to_pylist()), key=repr)


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_csv_value_that_does_not_parse_stops_the_ingest(table: shoal.Table, tmp_path: Path) -> None:
    source = write(tmp_path / "orders.csv", "id,amount,n\n1,1.5,3\n2,notanumber,4\n")
    error = failed(run("ingest", source, table.path))
    assert "column 'amount' (double)" in error
    assert "'notanumber'" in error
    assert "orders.csv" in error
    assert "record '2,notanumber,4'" in error
    assert "permissive" in error
    assert [s.id for s in table.snapshots()] == [1]
    assert rows(table) == [(0, 0.5, 0)]


def test_csv_permissive_ingests_the_value_as_null_and_counts_it(
    table: shoal.Table, tmp_path: Path
) -> None:
    source = write(tmp_path / "orders.csv", "id,amount,n\n1,1.5,3\n2,notanumber,4\n")
    done = run_json("ingest", source, table.path, "--parse-mode", "permissive")
    assert done["parse_mode"] == "permissive"
    assert done["written_records"] == 2
    assert done["nulled_values"] == {"amount": 1}
    assert done["malformed_records"] == 1
    assert rows(table) == [(0, 0.5, 0), (1, 1.5, 3), (2, None, 4)]

    human = run("ingest", source, table.path, "--parse-mode", "PERMISSIVE")
    assert human.exit_code == 0, human.output
    assert "ingested 2 rows" in human.stdout
    assert (
        "1 value that could not be read was ingested as null (amount 1), in 1 malformed record"
        in human.stdout
    )


def test_valid_source_reports_no_nulled_values(catalog: shoal.Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    source = write(tmp_path / "ok.csv", "id,amount,n\n1,,3\n2,2.5,\n")  # empty: null
    done = run_json("ingest", source, table.path)
    assert done["parse_mode"] == "failfast"
    assert (done["nulled_values"], done["malformed_records"]) == ({}, 0)
    assert rows(table) == [(1, None, 3), (2, 2.5, None)]
    permissive = run_json("ingest", source, table.path, "--parse-mode", "permissive")
    assert (permissive["nulled_values"], permissive["malformed_records"]) == ({}, 0)


def test_json_value_that_does_not_parse(catalog: shoal.Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    source = write(
        tmp_path / "orders.json",
        '{"id": 1, "amount": 1.5, "n": 3}\n'
        '{"id": 2, "amount": "lots", "n": 4}\n'
        '{"id": 3, "amount": 2.0, "n": 99999999999}\n',
    )
    error = failed(run("ingest", source, table.path))
    assert "column 'amount' (double): 1 value, the first 'lots'" in error
    assert "column 'n' (int): 1 value, the first '99999999999'" in error
    assert "orders.json" in error
    assert table.latest_snapshot() is None

    document = run("ingest", source, table.path, "-o", "json")
    assert document.exit_code == 2
    reported = json.loads(document.stderr)["error"]
    assert (reported["type"], reported["exit_code"]) == ("InvalidInputDataError", 2)

    done = run_json("ingest", source, table.path, "--parse-mode", "permissive")
    assert done["nulled_values"] == {"amount": 1, "n": 1}
    assert done["malformed_records"] == 2
    assert rows(table) == [(1, 1.5, 3), (2, None, 4), (3, 2.0, None)]


def test_json_record_that_is_not_json(catalog: shoal.Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("amount", pa.float64())]))
    source = write(tmp_path / "cut.json", '{"id": 1, "amount": 1.5}\n{"id": 2, "amo\n')
    error = failed(run("ingest", source, table.path))
    assert "1 record that is not valid JSON" in error
    assert """record '{"id": 2, "amo'""" in error
    done = run_json("ingest", source, table.path, "--parse-mode", "permissive")
    assert (done["nulled_values"], done["malformed_records"]) == ({}, 1)
    assert rows(table) == [(1, 1.5), (None, None)]


def test_parquet_value_its_cast_cannot_hold(table: shoal.Table, tmp_path: Path) -> None:
    source = tmp_path / "wide.parquet"
    pq.write_table(
        pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "amount": pa.array(["1.5", "2", "many"]),  # string to double
                "n": pa.array([7, 2**40, 8], pa.int64()),  # bigint to int
            }
        ),
        source,
    )
    error = failed(run("ingest", str(source), table.path))
    assert "cannot be cast to their column's type" in error
    assert "column 'amount' (double): 1 value, the first 'many'" in error
    assert f"column 'n' (int): 1 value, the first '{2**40}' in file:{source}, row 2" in error
    assert [s.id for s in table.snapshots()] == [1]

    done = run_json("ingest", str(source), table.path, "--parse-mode", "permissive")
    assert done["nulled_values"] == {"amount": 1, "n": 1}
    assert done["malformed_records"] == 0
    assert rows(table) == [(0, 0.5, 0), (1, 1.5, 7), (2, 2.0, None), (3, None, 8)]


def test_parquet_cast_is_checked_whatever_ansi_mode_says(
    spark: SparkSession, catalog: shoal.Catalog, tmp_path: Path
) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    source = tmp_path / "wide.parquet"
    pq.write_table(
        pa.table({"id": [1], "amount": [1.0], "n": pa.array([2**40], pa.int64())}), source
    )
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")  # a cast makes null, not an error
    try:
        assert "column 'n' (int)" in failed(run("ingest", str(source), table.path))
    finally:
        spark.conf.set("spark.sql.ansi.enabled", str(before))
    assert table.latest_snapshot() is None


def test_not_null_column_without_a_value(catalog: shoal.Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    empty = write(tmp_path / "keys.csv", "id,amount,n\n1,1.5,3\n,2.5,4\n,3.5,5\n")
    error = failed(run("ingest", empty, table.path, "--parse-mode", "permissive"))
    assert "column 'id' is NOT NULL, but 2 rows of the source have no value there" in error
    assert 'keys.csv, the row {"id":null,"amount":2.5,"n":4}' in error
    assert table.latest_snapshot() is None

    unreadable = write(tmp_path / "bad.csv", "id,amount,n\n1,1.5,3\nx,2.5,4\n")
    failfast = failed(run("ingest", unreadable, table.path))
    assert "column 'id' (bigint): 1 value, the first 'x'" in failfast
    assert "record 'x,2.5,4'" in failfast
    permissive = failed(run("ingest", unreadable, table.path, "--parse-mode", "permissive"))
    assert "column 'id' is NOT NULL, but 1 row of the source has no value there" in permissive
    assert "1 of them hold a value that cannot be read as bigint" in permissive
    assert "record 'x,2.5,4'" in permissive
    assert table.latest_snapshot() is None


def test_not_null_column_in_parquet(table: shoal.Table, tmp_path: Path) -> None:
    source = tmp_path / "nulls.parquet"
    pq.write_table(
        pa.table({"id": pa.array([1, None], pa.int64()), "amount": [1.0, 2.0], "n": [1, 2]}),
        source,
    )
    error = failed(run("ingest", str(source), table.path))
    assert "column 'id' is NOT NULL, but 1 row of the source has no value there" in error
    assert f"in file:{source}, row 2" in error
    assert [s.id for s in table.snapshots()] == [1]


def test_the_errors_carry_what_they_name(
    spark: SparkSession, catalog: shoal.Catalog, tmp_path: Path
) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    source = write(tmp_path / "orders.csv", "id,amount,n\n1,1.5,3\n2,notanumber,4\n3,x,y\n")
    with pytest.raises(shoal.InvalidInputDataError) as caught:
        ingest_files(spark, source, table, "csv", "append")
    error = caught.value
    assert type(error) is shoal.InvalidInputDataError
    assert error.path is not None
    assert error.path.endswith("orders.csv")
    assert (error.column, error.record) == ("amount", "2,notanumber,4")
    assert error.counts == {"amount": 2, "n": 1}

    keys = write(tmp_path / "keys.csv", "id,amount,n\n,1.5,3\n")
    with pytest.raises(shoal.NotNullViolationError) as null:
        ingest_files(spark, keys, table, "csv", "append", parse_mode="permissive")
    assert (null.value.column, null.value.counts) == ("id", {"id": 1})
    assert table.latest_snapshot() is None


def test_sparks_own_error_names_the_value_when_a_second_read_fails(
    spark: SparkSession, catalog: shoal.Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The error comes from the parameters of Spark's error conditions (its file, its
    record, its field) when the source cannot be read again."""

    def unreadable(self: SourceRead) -> None:
        raise OSError("gone")

    monkeypatch.setattr(SourceRead, "_diagnose", unreadable)
    table = catalog.create_table("db.t", SCHEMA)
    source = write(tmp_path / "orders.json", '{"id": 1, "amount": 1.5}\n{"id": 2, "amount": "x"}\n')
    with pytest.raises(shoal.InvalidInputDataError) as caught:
        ingest_files(spark, source, table, "json", "append")
    error = caught.value
    assert error.path is not None
    assert error.path.endswith("orders.json")
    assert (error.column, error.record) == ("amount", '{"id": 2, "amount": "x"}')
    assert "'amount'" in str(error)
    assert table.latest_snapshot() is None
