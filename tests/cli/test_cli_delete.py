"""``shoal delete TABLE --where``: the rows deleted, JSON output, a bad filter refused."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import shoal
from tests.cli_runs import run, run_json

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("qty", pa.int32())])


def _orders(wh: str, primary_key: bool) -> shoal.Table:
    table = shoal.Catalog(wh).create_table(
        "db.orders",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"] if primary_key else (),
    )
    table.append(
        pa.table(
            {
                "dt": ["2026-11-01"] * 4,
                "id": [1, 2, 3, 4],
                "qty": pa.array([1, 5, 7, 2], pa.int32()),
            },
            schema=SCHEMA,
        )
    )
    return table


def test_delete_reports_the_snapshot_and_rows(tmp_path: Path) -> None:
    for primary_key in (False, True):
        wh = str(tmp_path / f"wh{primary_key}")
        table = _orders(wh, primary_key)
        got = run_json("delete", "-w", wh, "db.orders", "--where", "qty > 3")
        assert got == {"snapshot_id": table.latest_snapshot().id, "rows_deleted": 2}
        assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 4]


def test_delete_with_an_unknown_column_changes_nothing(tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    table = _orders(wh, False)
    latest = table.latest_snapshot()
    result = run("delete", "-w", wh, "db.orders", "--where", "nope > 3")
    assert result.exit_code != 0
    assert "nope" in result.output
    assert table.latest_snapshot() == latest
