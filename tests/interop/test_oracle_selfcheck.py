"""The pypaimon oracle agrees with itself: what it writes, it reads back, also by snapshot.

These tests use pypaimon alone. When an interop test fails, they show whether the harness
or shoal is at fault.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.interop.pypaimon_oracle import PypaimonError, PypaimonOracle

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int64()),
        ("name", pa.string()),
        ("value", pa.float64()),
    ]
)


def rows(ids: range, dt: str) -> pa.Table:
    return pa.table(
        {
            "dt": [dt] * len(ids),
            "id": list(ids),
            "name": [f"n{i}" for i in ids],
            "value": [i * 0.5 for i in ids],
        },
        schema=SCHEMA,
    )


def sorted_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows in id order, cast to SCHEMA so type differences fail loudly instead of hiding."""
    assert table.schema.names == SCHEMA.names
    out: list[dict[str, Any]] = table.cast(SCHEMA).sort_by("id").to_pylist()
    return out


BATCHES = [
    rows(range(5), "2026-11-01"),
    rows(range(5, 12), "2026-11-02"),
    rows(range(12, 15), "2026-11-01"),
]


@pytest.fixture(scope="module")
def oracle() -> PypaimonOracle:
    return PypaimonOracle()


@pytest.mark.parametrize(
    ("partition_keys", "options"),
    [
        pytest.param(["dt"], {}, id="partitioned-unaware-bucket"),
        pytest.param([], {"bucket": "2", "bucket-key": "id"}, id="fixed-bucket-2"),
    ],
)
def test_three_commits_read_back_latest_and_by_snapshot(
    oracle: PypaimonOracle, tmp_path: Path, partition_keys: list[str], options: dict[str, str]
) -> None:
    warehouse = tmp_path / "warehouse"
    ids = oracle.write(
        warehouse, "db.events", BATCHES, partition_keys=partition_keys, options=options
    )
    assert ids == [1, 2, 3]

    snapshots = oracle.snapshots(warehouse, "db.events")
    assert [s["id"] for s in snapshots] == [1, 2, 3]
    assert [s["commit_kind"] for s in snapshots] == ["APPEND"] * 3
    assert [s["total_record_count"] for s in snapshots] == [5, 12, 15]

    expected = [sorted_rows(pa.concat_tables(BATCHES[:n])) for n in (1, 2, 3)]
    assert sorted_rows(oracle.read(warehouse, "db.events")) == expected[2]
    assert sorted_rows(oracle.read(warehouse, "db.events", snapshot_id=1)) == expected[0]
    assert sorted_rows(oracle.read(warehouse, "db.events", snapshot_id=2)) == expected[1]


def test_tags_projection_and_overwrite(oracle: PypaimonOracle, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    oracle.write(warehouse, "db.t", BATCHES[:2], partition_keys=["dt"])
    oracle.create_tag(warehouse, "db.t", "first", snapshot_id=1)
    assert sorted_rows(oracle.read(warehouse, "db.t", tag="first")) == sorted_rows(BATCHES[0])

    at_2 = oracle.snapshots(warehouse, "db.t")[1]["time_millis"]
    assert oracle.read(warehouse, "db.t", timestamp_ms=at_2).num_rows == 12

    projected = oracle.read(warehouse, "db.t", columns=["id", "name"])
    assert projected.column_names == ["id", "name"]
    assert sorted(projected.column("id").to_pylist()) == list(range(12))

    # dynamic partition overwrite (pypaimon's default) replaces only dt=2026-11-01
    assert oracle.write(warehouse, "db.t", [BATCHES[2]], mode="overwrite") == [3]
    assert oracle.snapshots(warehouse, "db.t")[-1]["commit_kind"] == "OVERWRITE"
    expected = sorted_rows(pa.concat_tables([BATCHES[1], BATCHES[2]]))
    assert sorted_rows(oracle.read(warehouse, "db.t")) == expected


def test_failures_raise_with_pypaimon_stderr(oracle: PypaimonOracle, tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    oracle.write(warehouse, "db.t", BATCHES[:1])
    with pytest.raises(PypaimonError, match="doesn't exist"):
        oracle.read(warehouse, "db.t", snapshot_id=7)
    with pytest.raises(PypaimonError, match="does not exist"):
        oracle.read(warehouse, "db.missing")
