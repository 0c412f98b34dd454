"""Fixtures shared by the whole suite: real catalogs in temporary folders."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import shoal

EVENTS_SCHEMA = pa.schema([
    ("dt", pa.string()),
    ("id", pa.int64()),
    ("name", pa.string()),
    ("value", pa.float64()),
])


def events(ids: range | list[int], dt: str | list[str] = "2026-11-01") -> pa.Table:
    """Rows of EVENTS_SCHEMA with the given ids (deterministic values)."""
    ids = list(ids)
    dts = dt if isinstance(dt, list) else [dt] * len(ids)
    return pa.table(
        {
            "dt": dts,
            "id": ids,
            "name": [f"n{i}" for i in ids],
            "value": [i * 0.5 for i in ids],
        },
        schema=EVENTS_SCHEMA,
    )


def sorted_rows(table: pa.Table, *keys: str) -> list[dict[str, object]]:
    keys = keys or tuple(table.column_names)
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    return str(tmp_path / "warehouse")


@pytest.fixture
def catalog(warehouse: str) -> shoal.Catalog:
    return shoal.Catalog(warehouse)


@pytest.fixture
def events_table(catalog: shoal.Catalog) -> shoal.Table:
    return catalog.create_table("db.events", EVENTS_SCHEMA, partition_keys=["dt"])
