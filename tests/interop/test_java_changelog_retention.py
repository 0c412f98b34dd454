"""Changelogs that outlive their snapshots (Paimon's decoupled changelog lifecycle)
between Paimon's Java implementation (0.9 and 1.0) and shoal.

A table written and expired by shoal keeps its expired snapshots as long-lived
changelogs that Java's streaming read (from a snapshot id, the read that reaches into
them) reads exactly as shoal's changelog read does; a table written and expired by
Java (its post-commit expiration with the table's retention) is read by shoal, expired
further by shoal, and read again by Java."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shoal
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), False),
        pa.field("id", pa.int64(), False),
        pa.field("v", pa.string()),
    ]
)
OPTIONS = {
    "bucket": "2",
    "changelog-producer": "input",
    "changelog.num-retained.max": "100",
    "changelog.time-retained": "2 h",
}
JAVA_KINDS = {"+I": "INSERT", "-U": "UPDATE_BEFORE", "+U": "UPDATE_AFTER", "-D": "DELETE"}
Row = tuple[str, str, int, str]  # (kind, dt, id, v)
LATER = timedelta(seconds=1)


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def draw_write(rng: random.Random, step: int) -> list[Row]:
    out: list[Row] = []
    for _ in range(rng.randint(1, 5)):
        kind = rng.choice(["+I", "+I", "-U", "+U", "-D"])
        out.append((kind, rng.choice(["d1", "d2"]), rng.randint(0, 5), f"s{step}-{len(out)}"))
    return out


def table_of(rows: list[Row]) -> pa.Table:
    return pa.table(
        {"dt": [r[1] for r in rows], "id": [r[2] for r in rows], "v": [r[3] for r in rows]},
        schema=SCHEMA,
    )


def by_key(rows: list[Row]) -> list[Row]:
    """Each key's rows in their order (buckets and files come in no fixed order)."""
    return sorted(rows, key=lambda r: (r[1], r[2]))


def ours(table: shoal.Table, start: int, end: int) -> list[Row]:
    rows = table.incremental(start, end, scan_mode="changelog", row_kind=True).to_pylist()
    return by_key([(r["rowkind"], r["dt"], r["id"], r["v"]) for r in rows])


def theirs(rows: pa.Table) -> list[Row]:
    return by_key([(r["_row_kind"], r["dt"], r["id"], r["v"]) for r in rows.to_pylist()])


def shoal_write(table: shoal.Table, rows: list[Row]) -> None:
    with_kinds = table_of(rows).append_column("kind", pa.array([r[0] for r in rows]))
    table.upsert(with_kinds)


@pytest.mark.parametrize("seed", range(2))
def test_java_streams_the_changelogs_shoal_kept(
    java: JavaPaimon, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    catalog = shoal.Catalog(str(tmp_path))
    schema = SCHEMA.append(pa.field("kind", pa.string()))
    table = catalog.create_table(
        "db.t",
        schema,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={
            **OPTIONS,
            "rowkind.field": "kind",
            "write-only": "true",
            "snapshot.num-retained.min": "1",
        },
    )
    written = []
    for step in range(rng.randint(5, 8)):
        rows = draw_write(rng, step)
        written.append(rows)
        shoal_write(table, rows)
        if rng.random() < 0.3:
            table.compact("full")
    latest = table.latest_snapshot()
    assert latest is not None
    table.expire_snapshots(retain_max=2, older_than=datetime.now() + LATER)
    kept = table._store.changelogs.list_ids()
    assert kept == list(range(1, latest.id))  # retain_min 1: all but the latest expire
    reads = [jp.stream_read("db.t", s, s) for s in range(1, latest.id + 1)]
    reads.append(jp.stream_read("db.t", 1, latest.id))
    seen = java.run(tmp_path, reads)
    for s, rows in zip(range(1, latest.id + 1), seen, strict=False):
        assert theirs(rows) == ours(table, s - 1, s), s
    whole = ours(table, 0, latest.id)
    assert theirs(seen[-1]) == whole
    assert by_key([r for rows in written for r in rows]) == whole
    # shoal's changelog expiration: Java streams what is left, from the earliest kept.
    with table.update_schema() as update:
        update.set_option("changelog.num-retained.max", "4")
    table = shoal.open_table(table.path)
    table.expire_snapshots(retain_max=2, older_than=datetime.now() + LATER)
    left = table._store.changelogs.list_ids()
    assert left == [latest.id - 3, latest.id - 2, latest.id - 1]
    again = java.run(tmp_path, [jp.stream_read("db.t", left[0], latest.id)])[0]
    assert theirs(again) == ours(table, left[0] - 1, latest.id)


def test_shoal_reads_and_expires_what_java_kept(java: JavaPaimon, tmp_path: Path) -> None:
    """Java's writes expire snapshots after each commit (one kept, older than a
    millisecond) into long-lived changelogs; shoal reads them and expires them further."""
    options = {
        **OPTIONS,
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "1",
        "snapshot.time-retained": "1 ms",
    }
    rng = random.Random(7)
    ops: list[jp.Op[Any]] = [
        jp.create_table(
            "db.t", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=options
        )
    ]
    written = []
    for step in range(6):
        rows = draw_write(rng, step)
        written.append(rows)
        kinds: Any = [JAVA_KINDS[r[0]] for r in rows]
        ops.append(jp.write("db.t", table_of(rows), kind=kinds))
    java.run(tmp_path, ops)
    table = shoal.open_table(str(tmp_path / "db.db" / "t"))
    latest = table.latest_snapshot()
    assert latest is not None
    kept = table._store.changelogs.list_ids()
    assert kept  # Java kept the expired snapshots' changelogs
    assert [s.id for s in table.snapshots()] == [latest.id]
    assert kept[0] == 1
    start = 0
    assert ours(table, start, latest.id) == by_key([r for rows in written for r in rows])
    java_rows = java.run(tmp_path, [jp.stream_read("db.t", kept[0], latest.id)])[0]
    assert theirs(java_rows) == ours(table, start, latest.id)
    # shoal expires them further, as Java's own expiration would.
    with table.update_schema() as update:
        update.set_option("changelog.num-retained.max", "3")
    table = shoal.open_table(table.path)
    result = table.expire_snapshots(older_than=datetime.now() + LATER)
    left = table._store.changelogs.list_ids()
    assert left == [latest.id - 2, latest.id - 1]
    assert result.expired_changelogs == len(kept) - 2
    java_rows = java.run(tmp_path, [jp.stream_read("db.t", left[0], latest.id)])[0]
    assert theirs(java_rows) == ours(table, left[0] - 1, latest.id)
    # Java's expiration goes on from what shoal left: a write expires with the table's rules.
    java.run(tmp_path, [jp.write("db.t", table_of([("+I", "d1", 9, "last")]), kind="INSERT")])
    table = shoal.open_table(table.path)
    assert table._store.changelogs.list_ids() == [latest.id - 1, latest.id]
    java_rows = java.run(tmp_path, [jp.stream_read("db.t", latest.id - 1, latest.id + 1)])[0]
    assert theirs(java_rows) == ours(table, latest.id - 2, latest.id + 1)
