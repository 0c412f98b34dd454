"""Fixtures shared by the whole suite: real catalogs in temporary folders."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
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


ALL_TYPES = pa.schema([
    pa.field("k", pa.int32(), nullable=False),
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("dec", pa.decimal128(10, 2)),
    ("wide", pa.decimal128(30, 4)), ("s", pa.string()), ("bin", pa.binary()),
    ("d", pa.date32()), ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")),
    ("ltz", pa.timestamp("us", tz="UTC")), ("arr", pa.list_(pa.int64())),
    ("m", pa.map_(pa.string(), pa.int32())),
    ("row", pa.struct([("x", pa.int32()), ("y", pa.string())])),
])


def all_types_rows(n: int) -> pa.Table:
    """``n`` rows of ALL_TYPES, distinct in every column (n <= 24)."""
    return pa.table({
        "k": pa.array(range(n), pa.int32()),
        "b": [i % 2 == 0 for i in range(n)],
        "i8": pa.array([i - 3 for i in range(n)], pa.int8()),
        "i16": pa.array([i * 300 for i in range(n)], pa.int16()),
        "i64": [i * 10**12 for i in range(n)],
        "f32": pa.array([i / 4 for i in range(n)], pa.float32()),
        "f64": [i / 3 for i in range(n)],
        "dec": pa.array([Decimal(i) / 4 for i in range(n)], pa.decimal128(10, 2)),
        "wide": pa.array([Decimal(10**20 + i) for i in range(n)], pa.decimal128(30, 4)),
        "s": [f"string-{i}" * (i % 3) for i in range(n)],
        "bin": [bytes([i]) * i for i in range(n)],
        "d": [date(2026, 1, 1 + i) for i in range(n)],
        "ts3": pa.array([datetime(2026, 1, 1, 0, 0, i) for i in range(n)], pa.timestamp("ms")),
        "ts6": pa.array([datetime(2026, 1, 1, 0, 0, 0, i) for i in range(n)],
                        pa.timestamp("us")),
        "ltz": pa.array([datetime(2026, 1, 1, i) for i in range(n)],
                        pa.timestamp("us", tz="UTC")),
        "arr": [list(range(i)) for i in range(n)],
        "m": pa.array([[("a", i)] for i in range(n)], pa.map_(pa.string(), pa.int32())),
        "row": [{"x": i, "y": str(i)} for i in range(n)],
    }, schema=ALL_TYPES)


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


@pytest.fixture
def no_shoal_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands run with no warehouse or output format from the environment."""
    monkeypatch.delenv("SHOAL_WAREHOUSE", raising=False)
    monkeypatch.delenv("SHOAL_OUTPUT", raising=False)
