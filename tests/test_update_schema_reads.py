"""Rows written under earlier schema versions read under the latest one, after
update_schema and after writes with schema_mode="merge"."""

from __future__ import annotations

import pyarrow as pa

import shoal
from tests.conftest import EVENTS_SCHEMA, events


def with_columns(rows: pa.Table, **columns: list[object]) -> pa.Table:
    for name, values in columns.items():
        rows = rows.append_column(name, pa.array(values))
    return rows


def test_rows_written_before_a_change_read_under_the_new_schema(
    events_table: shoal.Table,
) -> None:
    events_table.append(events(range(2)))
    with events_table.update_schema() as update:
        update.add_column("score", pa.float64())
        update.rename_column("name", "title")
        update.drop_column("value")
    events_table.append(
        pa.table({"dt": ["2026-11-01"], "id": [7], "title": ["t7"], "score": [1.5]})
    )
    rows = sorted(events_table.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"dt": "2026-11-01", "id": 0, "title": "n0", "score": None},
        {"dt": "2026-11-01", "id": 1, "title": "n1", "score": None},
        {"dt": "2026-11-01", "id": 7, "title": "t7", "score": 1.5},
    ]


def test_merge_then_read_back(events_table: shoal.Table) -> None:
    events_table.append(events([1]))
    events_table.append(with_columns(events([2]), extra=[9]), schema_mode="merge")
    rows = sorted(events_table.to_arrow(columns=["id", "extra"]).to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "extra": None}, {"id": 2, "extra": 9}]


def test_a_widened_column_reads_old_rows_in_the_new_type(events_table: shoal.Table) -> None:
    events_table.append(events([1]))
    with events_table.update_schema() as update:
        update.update_column_type("id", pa.decimal128(30, 0))
    assert events_table.to_arrow().column("id").type == pa.decimal128(30, 0)
    assert events_table.to_arrow().column("id").to_pylist()[0] == 1


def test_merge_on_a_primary_key_table_merges_old_and_new_rows(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.keyed", EVENTS_SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    table.upsert(events([1, 2]))
    table.append(with_columns(events([2, 3]), extra=[20, 30]), schema_mode="merge")
    rows = sorted(table.to_arrow(columns=["id", "extra"]).to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "extra": None}, {"id": 2, "extra": 20}, {"id": 3, "extra": 30}]
