"""The command reads well in a pipe and a narrow terminal: whole values, CSV beside JSON,
counts named for what they count, errors in the command's terms, global options on
either side of the command; and ``table drop``, ``schema``, ``read --output parquet``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

import shoal
from shoal import errors as E
from shoal.cli import cli
from shoal.cli.demo_run import TABLE as DEMO_TABLE
from shoal.cli.messages import PYTHON_TO_CLI, cli_message
from tests.cli_runs import run, run_json

LONG = "a_table_whose_name_is_longer_than_a_narrow_terminal_is_wide"
SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("note", pa.string()),
    ]
)


def narrow(*args: str, columns: int = 40, stdin: str | None = None) -> Result:
    """The command in a pipe (CliRunner is no terminal) that says it is ``columns`` wide."""
    runner = CliRunner(env={"COLUMNS": str(columns)})
    return runner.invoke(cli, list(args), input=stdin, catch_exceptions=False)


@pytest.fixture
def wh(tmp_path: Path) -> str:
    return str(tmp_path / ("warehouse_with_a_long_directory_name_" * 3))


@pytest.fixture
def keyed(wh: str) -> shoal.Table:
    """A primary-key table where key (d1, 1) was written twice: 3 records, 2 rows."""
    table = shoal.Catalog(wh).create_table(
        f"db.{LONG}",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "1"},
    )
    table.upsert(pa.table({"dt": ["d1", "d1"], "id": [1, 2], "note": ["x", None]}, schema=SCHEMA))
    table.upsert(pa.table({"dt": ["d1"], "id": [1], "note": ["y" * 70]}, schema=SCHEMA))
    return table


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# --- whole values -----------------------------------------------------------------------------


def test_paths_and_names_are_never_folded(keyed: shoal.Table, wh: str) -> None:
    for columns in (40, 80):
        listed = narrow("table", "list", "-w", wh, columns=columns)
        assert listed.exit_code == 0
        lines = listed.stdout.splitlines()
        assert any(keyed.path in line and LONG in line for line in lines), listed.stdout
        shown = narrow("table", "show", f"db.{LONG}", "-w", wh, columns=columns)
        assert any(keyed.path in line for line in shown.stdout.splitlines())
        read = narrow("read", keyed.path, columns=columns)
        assert any("y" * 70 in line for line in read.stdout.splitlines()), read.stdout
        for out in (listed, shown, read):
            assert "…" not in out.stdout


def test_a_table_that_fits_keeps_its_alignment(keyed: shoal.Table) -> None:
    listed = narrow("snapshots", keyed.path, columns=200)
    rows = [line for line in listed.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == 2
    assert rows[0].split("│")[1] == "  1 "  # the id column, right-aligned under "id"


# --- CSV --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [("snapshots",), ("tag", "list"), ("read",), ("schema",), ("system", "files")],
    ids=" ".join,
)
def test_csv_holds_what_json_holds(keyed: shoal.Table, command: tuple[str, ...]) -> None:
    keyed.create_tag("t1")
    args = (
        [*command[:1], keyed.path, *command[1:]] if command[0] != "tag" else [*command, keyed.path]
    )
    documents = run_json(*args)
    result = run(*args, "-o", "csv")
    assert result.exit_code == 0
    got = csv_rows(result.stdout)
    assert len(got) == len(documents) > 0
    for row, document in zip(got, documents, strict=True):
        assert list(row) == list(document)
        for key, value in document.items():
            expected = (
                ""
                if value is None
                else json.dumps(value)
                if isinstance(value, list | dict)
                else str(value)
            )
            assert row[key] == expected, key


def test_csv_of_a_single_result_is_one_line(keyed: shoal.Table) -> None:
    got = csv_rows(run("table", "show", keyed.path, "-o", "csv").stdout)
    assert len(got) == 1
    assert got[0]["record_count"] == "3"
    assert json.loads(got[0]["primary_keys"]) == ["dt", "id"]


# --- counts -----------------------------------------------------------------------------------


def test_counts_say_records_in_files_and_rows_after_merging(keyed: shoal.Table) -> None:
    shown = narrow("table", "show", keyed.path, columns=120).stdout
    assert "records in files    3" in shown
    assert "rows" not in shown
    read = narrow("read", keyed.path, columns=120)
    assert "2 rows" in read.stderr
    snapshots = narrow("snapshots", keyed.path, columns=120).stdout
    assert "records" in snapshots
    assert "rows" not in snapshots


# --- messages ---------------------------------------------------------------------------------


PYTHON_WORDS = ("Catalog.", "()", "=True", "create_table", "get_table", "update_schema")


@pytest.mark.parametrize(
    "error",
    [
        E.TableNotFoundError("db.t"),
        E.TableAlreadyExistsError("db.t"),
        E.TagNotFoundError("t"),
        E.TagAlreadyExistsError("t"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_library_messages_speak_python_and_the_command_rephrases_them(error: E.ShoalError) -> None:
    assert any(word in str(error) for word in PYTHON_WORDS)
    assert not any(word in cli_message(error) for word in PYTHON_WORDS), cli_message(error)


def test_every_phrase_rephrased_is_one_the_library_says() -> None:
    import shoal.errors
    import shoal.format.orc
    import shoal.option_keys

    sources = "".join(
        Path(m.__file__).read_text()  # type: ignore[arg-type]
        for m in (shoal.errors, shoal.format.orc, shoal.option_keys)
    )
    flat = " ".join(sources.replace('"\n', "").replace('            "', "").split())
    for python, _command in PYTHON_TO_CLI:
        assert python in flat, python


def test_errors_through_the_command_name_commands(keyed: shoal.Table, wh: str) -> None:
    results = [
        run("tag", "delete", keyed.path, "nope"),
        run("read", keyed.path, "--tag", "nope"),
        run("table", "create", f"db.{LONG}", "-w", wh, "--schema", "a int"),
        run("snapshots", "db.nope", "-w", wh),
    ]
    keyed.create_tag("t1")
    results.append(run("tag", "create", keyed.path, "t1"))
    for result in results:
        assert result.exit_code in (3, 4)
        assert "'shoal " in result.stderr
        assert not any(word in result.stderr for word in PYTHON_WORDS), result.stderr
    assert "--replace" in results[-1].stderr
    assert "--if-not-exists" in results[2].stderr
    as_json = json.loads(run("tag", "delete", keyed.path, "nope", "-o", "json").stderr)
    assert "'shoal tag list TABLE'" in as_json["error"]["message"]


# --- global options ---------------------------------------------------------------------------


def test_global_options_before_or_after_the_command(keyed: shoal.Table, wh: str) -> None:
    name = f"db.{LONG}"
    expected = run_json("snapshots", name, "-w", wh)
    for args in (
        ("-o", "json", "snapshots", name, "-w", wh),
        ("-w", wh, "snapshots", name, "-o", "json"),
        ("-w", wh, "-o", "json", "-v", "snapshots", name),
        ("snapshots", name, "-v", "-w", wh, "--output", "json"),
        ("-o", "csv", "snapshots", name, "-o", "json", "-w", wh),  # the command's wins
    ):
        result = run(*args)
        assert result.exit_code == 0, (args, result.output)
        assert json.loads(result.stdout) == expected, args
    assert run("-o", "json", "snapshots", name, "-w", "/nowhere", "-o", "csv").exit_code == 3
    # The warehouse after the command wins over the one before it.
    assert run("-w", "/nowhere", "snapshots", name, "-w", wh).exit_code == 0
    assert run("-w", wh, "snapshots", name, "-w", "/nowhere").exit_code == 3
    assert csv_rows(run("-o", "csv", "tag", "list", keyed.path).stdout) == []


def test_the_demo_takes_the_warehouse_given_before_it(tmp_path: Path) -> None:
    # A warehouse holding the demo's table is refused before Spark starts: the demo saw it.
    taken = str(tmp_path / "taken")
    shoal.Catalog(taken).create_table(DEMO_TABLE, pa.schema([("id", pa.int64())]))
    refused = run("-w", taken, "demo")
    assert refused.exit_code == 2, refused.output
    assert "holds a demo table already" in refused.stderr


# --- table drop -------------------------------------------------------------------------------


def test_table_drop_asks_unless_yes(keyed: shoal.Table, wh: str) -> None:
    name = f"db.{LONG}"
    declined = narrow("table", "drop", name, "-w", wh, stdin="n\n")
    assert declined.exit_code == 1
    assert shoal.Catalog(wh).table_exists(name)
    assert narrow("table", "drop", name, "-w", wh, stdin="y\n").exit_code == 0
    assert not shoal.Catalog(wh).table_exists(name)
    missing = run("table", "drop", name, "-w", wh, "--yes")
    assert missing.exit_code == 3
    assert run_json("table", "drop", name, "-w", wh, "--yes", "--if-exists") == {
        "table": name,
        "dropped": False,
    }


def test_table_drop_by_path_for_scripts(keyed: shoal.Table, wh: str) -> None:
    assert run_json("table", "drop", keyed.path, "--yes") == {
        "table": f"db.{LONG}",
        "dropped": True,
    }
    assert run("read", keyed.path).exit_code == 3
    assert run_json("table", "list", "-w", wh) == []


# --- schema -----------------------------------------------------------------------------------


def test_schema_lists_field_ids_types_and_keys(keyed: shoal.Table) -> None:
    with keyed.update_schema() as update:
        update.add_column("extra", pa.float64())
    assert run_json("schema", keyed.path) == [
        {
            "id": 0,
            "name": "dt",
            "type": "STRING NOT NULL",
            "key": "partition, primary key",
            "description": None,
        },
        {
            "id": 1,
            "name": "id",
            "type": "BIGINT NOT NULL",
            "key": "primary key",
            "description": None,
        },
        {"id": 2, "name": "note", "type": "STRING", "key": None, "description": None},
        {"id": 3, "name": "extra", "type": "DOUBLE", "key": None, "description": None},
    ]
    human = narrow("schema", keyed.path).stdout
    assert "partition, primary key" in human
    assert "DOUBLE" in human


# --- read --output parquet --------------------------------------------------------------------


def test_read_into_a_parquet_file(keyed: shoal.Table, tmp_path: Path) -> None:
    target = tmp_path / "out.parquet"
    result = run("read", keyed.path, "--output", "parquet", str(target))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "wrote 2 rows" in result.stderr
    assert pq.read_table(target).equals(keyed.to_arrow())
    # Filter, projection and limit apply; an existing file needs --force.
    assert run("read", keyed.path, "-o", "parquet", str(target), "-f", "id = 2").exit_code == 2
    forced = run(
        "read",
        keyed.path,
        "-o",
        "parquet",
        str(target),
        "-f",
        "id = 2",
        "-c",
        "id,note",
        "--force",
    )
    assert forced.exit_code == 0, forced.output
    assert pq.read_table(target).to_pylist() == [{"id": 2, "note": None}]
    assert (
        run("read", keyed.path, "-o", "parquet", str(target), "-n", "1", "--force").exit_code == 0
    )
    assert pq.read_table(target).num_rows == 1
    assert not list(tmp_path.glob("*.partial"))


def test_read_into_parquet_usage_errors(keyed: shoal.Table, tmp_path: Path) -> None:
    target = str(tmp_path / "out.parquet")
    assert run("read", keyed.path, "-o", "parquet").exit_code == 2  # no FILE
    assert run("read", keyed.path, target).exit_code == 2  # FILE without parquet
    assert run("read", keyed.path, target, "-o", "json").exit_code == 2
    refused = run("snapshots", keyed.path, "-o", "parquet")
    assert refused.exit_code == 2
    assert "only 'shoal read'" in refused.stderr
    assert run("-o", "parquet", "tag", "list", keyed.path).exit_code == 2
    assert not Path(target).exists()
