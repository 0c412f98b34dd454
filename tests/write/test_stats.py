"""Column statistics written for each data file, as the `files` system table shows them."""

from __future__ import annotations

import json
from datetime import datetime

import pyarrow as pa
import pytest

import shoal


def _file_stats(table: shoal.Table) -> tuple[dict, dict, dict]:
    files = table.system_table("files")
    assert files.num_rows == 1
    return (
        json.loads(files["min_value_stats"][0].as_py()),
        json.loads(files["max_value_stats"][0].as_py()),
        json.loads(files["null_value_counts"][0].as_py()),
    )


SCHEMA = pa.schema([("s", pa.string()), ("f", pa.float64()), ("ts", pa.timestamp("ns"))])
ROWS = pa.table({
    "s": ["b" * 20, "a", None],
    "f": [1.5, float("nan"), None],
    "ts": pa.array([1_000_000_001, 2_999_999_999, None], pa.timestamp("ns")),
}, schema=SCHEMA)


def test_default_truncates_strings_and_bounds_timestamps(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA)
    table.append(ROWS)
    mins, maxs, nulls = _file_stats(table)
    assert (mins["s"], maxs["s"]) == ("a", "b" * 15 + "c")  # upper bound still bounds
    assert (mins["f"], maxs["f"]) == (1.5, 1.5)  # NaN is not a bound
    # Nanoseconds round outwards to microseconds: the bounds still hold every value.
    assert mins["ts"] == str(datetime(1970, 1, 1, 0, 0, 1))
    assert maxs["ts"] == str(datetime(1970, 1, 1, 0, 0, 3))
    assert nulls == {"s": 1, "f": 1, "ts": 1}


@pytest.mark.parametrize(
    ("mode", "expect_min_s", "expect_nulls"),
    [("full", "a", {"s": 1, "f": 1, "ts": 1}), ("counts", None, {"s": 1, "f": 1, "ts": 1})],
)
def test_stats_modes(
    catalog: shoal.Catalog, mode: str, expect_min_s: str | None, expect_nulls: dict
) -> None:
    table = catalog.create_table("db.t", SCHEMA, options={"metadata.stats-mode": mode})
    table.append(ROWS)
    mins, maxs, nulls = _file_stats(table)
    assert mins["s"] == expect_min_s
    if mode == "full":
        assert maxs["s"] == "b" * 20
    assert nulls == expect_nulls


def test_no_stats_still_reads_and_filters(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, options={"metadata.stats-mode": "none"})
    table.append(ROWS)
    files = table.system_table("files")
    assert files["min_value_stats"][0].as_py() == "{}"
    assert table.to_arrow(filter=[("s", "=", "a")]).num_rows == 1


def test_invalid_stats_mode(catalog: shoal.Catalog) -> None:
    with pytest.raises(shoal.InvalidOptionError, match="stats-mode"):
        catalog.create_table("db.t", SCHEMA, options={"metadata.stats-mode": "some"})
