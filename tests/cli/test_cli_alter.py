"""``shoal table alter``: every change in one new schema version, JSON output, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from tests.cli_runs import run, run_json

SCHEMA = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    ("qty", pa.int32()),
    ("note", pa.string()),
    ("legacy", pa.string()),
])


@pytest.fixture
def wh(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


@pytest.fixture
def orders(wh: str) -> shoal.Table:
    table = shoal.Catalog(wh).create_table(
        "db.orders", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
        options={"bucket": "2"},
    )
    table.upsert(pa.table({
        "dt": ["2026-11-01"], "id": [1], "qty": pa.array([3], pa.int32()),
        "note": ["a"], "legacy": ["x"],
    }, schema=SCHEMA))
    return table


def test_alter_makes_one_schema_version_of_all_changes(wh: str, orders: shoal.Table) -> None:
    altered = run_json(
        "table", "alter", "db.orders", "-w", wh,
        "--add", "discount decimal(10, 2) after qty",
        "--add", "first_col int FIRST",
        "--rename", "note=remark",
        "--type", "qty bigint",
        "--drop", "legacy",
        "--set", "snapshot.num-retained.max=50",
        "--comment", "orders by day",
    )
    assert altered["schema_id"] == 1
    assert [(f["name"], f["type"]) for f in altered["fields"]] == [
        ("first_col", "INT"),
        ("dt", "STRING NOT NULL"),
        ("id", "BIGINT NOT NULL"),
        ("qty", "BIGINT"),
        ("discount", "DECIMAL(10, 2)"),
        ("remark", "STRING"),
    ]
    assert altered["options"]["snapshot.num-retained.max"] == "50"
    assert sorted(p.name for p in (Path(orders.path) / "schema").iterdir()) == [
        "schema-0", "schema-1",
    ]
    history = run_json("system", "db.orders", "schemas", "-w", wh)
    assert [r["schema_id"] for r in history] == [0, 1]
    assert history[1]["comment"] == "orders by day"
    assert json.loads(history[1]["options"]) == {
        "bucket": "2", "snapshot.num-retained.max": "50",
    }
    unset = run_json(
        "table", "alter", orders.path, "--unset", "snapshot.num-retained.max", "--comment", ""
    )
    assert unset["schema_id"] == 2
    assert unset["options"] == {"bucket": "2"}
    human = run("table", "alter", orders.path, "--add", "extra string")
    assert human.exit_code == 0
    assert "altered primary-key table" in human.stdout


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        ((), 2, "at least one change"),
        (("--add", "justaname"), 2, "NAME TYPE"),
        (("--rename", "qty"), 2, "OLD=NEW"),
        (("--add", "x notatype"), 2, "unknown data type"),
        (("--add", "qty int"), 2, "exists already"),
        (("--drop", "id"), 2, "primary-key column"),
        (("--drop", "nope"), 2, "does not exist"),
        (("--type", "dt int"), 2, "partition column"),
        (("--type", "note date"), 6, "exactly"),
        (("--type", "qty date"), 2, "Paimon does not cast"),
        (("--set", "merge-engine=first-row"), 2, "cannot change"),
        (("--set", "bucket=4"), 6, "bucket count"),
        (("--set", "snapshot.num-retained.mx=3"), 2, "did you mean"),
    ],
)
def test_alter_refusals_change_nothing(
    wh: str, orders: shoal.Table, args: tuple[str, ...], code: int, words: str
) -> None:
    result = run("table", "alter", "db.orders", "-w", wh, *args)
    assert result.exit_code == code, result.output
    assert words in result.output
    assert sorted(p.name for p in (Path(orders.path) / "schema").iterdir()) == ["schema-0"]


def test_alter_errors_as_json(wh: str, orders: shoal.Table) -> None:
    result = run("table", "alter", "db.orders", "-w", wh, "--drop", "dt", "-o", "json")
    assert result.exit_code == 2
    error = json.loads(result.stderr)["error"]
    assert error["type"] == "InvalidArgumentError"
    assert "partition column" in error["message"]
