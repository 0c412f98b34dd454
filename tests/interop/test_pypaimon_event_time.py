"""Event-time compaction against the real pypaimon 2.1.0.

shoal writes a primary-key table with late data, deletes and event-time compactions
(with and without exact split), which leave files at several levels: untouched level-0
files beside a new top level that may keep delete rows, and with exact split level-0
files rewritten by the compaction with their old sequence numbers. pypaimon must read
every snapshot as shoal's real-time view does, also after a later write on top.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shoal
from tests.interop.pypaimon_oracle import PypaimonOracle

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int64()),
        ("ts", pa.timestamp("ms")),
        ("v", pa.string()),
    ]
)
TOP = 5
Model = dict[int, dict[str, Any]]


@pytest.fixture(scope="module")
def oracle() -> PypaimonOracle:
    return PypaimonOracle()


def at(hour: int) -> datetime:
    return datetime(2026, 1, 1, hour)


def rows(ids: list[int] | range, ts: datetime | list[datetime], tag: str) -> pa.Table:
    """Rows of SCHEMA; a key's dt follows from its id, so id alone names a row."""
    ids = list(ids)
    times = ts if isinstance(ts, list) else [ts] * len(ids)
    return pa.table(
        {
            "dt": [f"2026-01-0{1 + i % 2}" for i in ids],
            "id": ids,
            "ts": times,
            "v": [f"{tag}{i}" for i in ids],
        },
        schema=SCHEMA,
    )


def ordered(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def expected(model: Model) -> list[dict[str, Any]]:
    return [model[i] for i in sorted(model)]


@pytest.mark.parametrize(
    ("exact", "partition_keys", "primary_keys"),
    [(False, ["dt"], ["dt", "id"]), (True, [], ["id"])],
    ids=["merge-partitioned", "exact-split"],
)
def test_pypaimon_reads_what_event_time_compaction_leaves(
    oracle: PypaimonOracle,
    tmp_path: Path,
    exact: bool,
    partition_keys: list[str],
    primary_keys: list[str],
) -> None:
    options = {
        "bucket": "2",
        "write-only": "true",
        "compaction.event-time.field": "ts",
        "compaction.event-time.exact-split": str(exact).lower(),
    }
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t",
        SCHEMA,
        partition_keys=partition_keys,
        primary_keys=primary_keys,
        options=options,
    )
    model: Model = {}
    history: dict[int, list[dict[str, Any]]] = {}

    def check() -> None:
        ours = ordered(table.to_arrow())
        assert ours == expected(model)
        latest = table.latest_snapshot()
        assert latest is not None
        history.setdefault(latest.id, ours)

    def upsert(data: pa.Table) -> None:
        table.upsert(data)
        model.update({r["id"]: r for r in data.to_pylist()})
        check()

    def delete(ids: list[int], ts: datetime | None = None) -> None:
        data = rows(ids, ts or at(0), "")
        table.delete(data if ts is not None else data.select(primary_keys))
        for i in ids:
            model.pop(i, None)
        check()

    def compact(threshold: datetime) -> None:
        assert table.compact("event-time", event_time_threshold=threshold).snapshot is not None
        check()

    upsert(rows(range(30), [at(1), at(5)] * 15, "a"))
    # late data: old events arriving after newer ones, and newer ones
    upsert(rows(range(20, 40), [at(0), at(7)] * 10, "b"))
    delete([1, 2, 3, 25])
    upsert(rows([50, 51, 52, 53], at(9), "late"))  # left below by both compactions
    delete([50, 51])  # key-only: picked, while the older rows stay below
    compact(at(3))
    upsert(rows(range(10), at(2), "c"))
    delete([4, 30], ts=at(1))  # whole rows, with an event time of their own
    compact(at(6))

    files = table.system_table("files").to_pylist()
    levels = {f["level"] for f in files}
    assert {0, TOP} <= levels
    assert any(f["level"] == TOP and f["deleteRowCount"] for f in files), "no kept delete"
    if exact:
        assert any(f["level"] == 0 and f["file_source"] == "COMPACT" for f in files)
        ro = table.to_arrow(read_optimized=True).to_pylist()
        assert ro
        assert all(r["ts"] < at(6) for r in ro)

    theirs = oracle.read_each(tmp_path, "db.t", sorted(history))
    for snapshot_id, ours in history.items():
        assert ordered(theirs[snapshot_id]) == ours, f"snapshot {snapshot_id}"
        assert ordered(table.to_arrow(snapshot_id=snapshot_id)) == ours

    # a later write on top of the compacted layout, read by both
    upsert(rows([0, 1, 50, 52, 60], [at(0), at(8), at(1), at(2), at(9)], "d"))
    assert ordered(oracle.read(tmp_path, "db.t")) == expected(model)


def test_shoal_event_time_compacts_what_pypaimon_writes(
    oracle: PypaimonOracle, tmp_path: Path
) -> None:
    """pypaimon writes no value statistics on primary-key files: without event-time
    bounds every file is picked, and the result reads the same on both sides."""
    schema = SCHEMA.append(pa.field("op", pa.string()))

    def batch(ids: list[int], ts: datetime, op: str) -> pa.Table:
        data = rows(ids, ts, op)
        return data.append_column("op", pa.array([op] * len(ids))).cast(schema)

    layout: dict[str, Any] = {
        "partition_keys": ["dt"],
        "primary_keys": ["dt", "id"],
        "options": {"bucket": "2", "rowkind.field": "op", "compaction.event-time.field": "ts"},
    }
    batches = [
        batch(list(range(12)), at(1), "+I"),
        batch([3, 4, 20], at(9), "+U"),
        batch([5, 20], at(9), "-D"),
    ]
    oracle.write(tmp_path, "db.t", batches, **layout)
    table = shoal.Catalog(str(tmp_path)).get_table("db.t")
    before = ordered(table.to_arrow())
    assert [r["id"] for r in before] == [i for i in range(12) if i != 5]
    result = table.compact("event-time", event_time_threshold=at(3))
    assert result.compacted_files == len(table.system_table("files", snapshot_id=3))
    assert {f["level"] for f in table.system_table("files").to_pylist()} == {TOP}
    assert ordered(table.to_arrow()) == before
    assert ordered(oracle.read(tmp_path, "db.t")) == before
