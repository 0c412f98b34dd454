"""The ``input`` changelog producer between Paimon's Java implementation (0.9 and 1.0)
and shoal: each write's rows, with their row kinds, become the changelog of its
snapshot, whoever writes them. Java's changelog read of every snapshot (the
``audit_log`` system table over ``incremental-between`` in ``changelog`` scan mode)
equals what was written, and equals shoal's changelog read of the same snapshot;
compactions, by either side, add no changelog."""

from __future__ import annotations

import random
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
        pa.field("kind", pa.string()),
    ]
)
OPTIONS = {"bucket": "2", "changelog-producer": "input", "rowkind.field": "kind"}
JAVA_KINDS = {"+I": "INSERT", "-U": "UPDATE_BEFORE", "+U": "UPDATE_AFTER", "-D": "DELETE"}
Row = tuple[str, str, int, str]  # (kind, dt, id, v)


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def table_of(rows: list[Row]) -> pa.Table:
    return pa.table(
        {
            "dt": [r[1] for r in rows],
            "id": [r[2] for r in rows],
            "v": [r[3] for r in rows],
            "kind": [r[0] for r in rows],
        },
        schema=SCHEMA,
    )


def by_key(rows: list[Row]) -> list[Row]:
    """Rows stably sorted by key: each key's rows in their order (buckets and files
    come in no fixed order, a key's rows do)."""
    return sorted(rows, key=lambda r: (r[1], r[2]))


def as_rows(table: pa.Table) -> list[Row]:
    return [(r["rowkind"], r["dt"], r["id"], r["v"]) for r in table.to_pylist()]


def draw_write(rng: random.Random, step: int) -> list[Row]:
    """A write of a few keys, some more than once, with every row kind."""
    out: list[Row] = []
    for _ in range(rng.randint(1, 6)):
        key = (rng.choice(["d1", "d2"]), rng.randint(0, 7))
        kind = rng.choice(["+I", "+I", "-U", "+U", "-D"])
        out.append((kind, *key, f"s{step}-{len(out)}"))
    return out


def audit_reads(latest: int) -> list[jp.Op[pa.Table]]:
    return [
        jp.read(
            "db.t$audit_log",
            options={
                "incremental-between": f"{s - 1},{s}",
                "incremental-between-scan-mode": "changelog",
            },
        )
        for s in range(1, latest + 1)
    ]


@pytest.mark.parametrize("seed", range(4))
def test_both_write_the_input_as_changelog(java: JavaPaimon, tmp_path: Path, seed: int) -> None:
    """Random writes by either side, with compactions; per snapshot, Java's and shoal's
    changelog reads agree with each other and with the rows each write got."""
    rng = random.Random(seed)
    java.run(
        tmp_path,
        [
            jp.create_table(
                "db.t", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=OPTIONS
            )
        ],
    )
    path = str(tmp_path / "db.db" / "t")
    written: list[list[Row]] = []
    for step in range(rng.randint(3, 7)):
        side, action = rng.choice(["java", "shoal"]), rng.choice(["write", "write", "compact"])
        if action == "compact":
            if side == "java":
                java.run(tmp_path, [jp.compact("db.t")])
            else:
                shoal.open_table(path).compact("full")
            continue
        rows = draw_write(rng, step)
        written.append(rows)
        data = table_of(rows)
        if side == "java":
            kinds: Any = [JAVA_KINDS[r[0]] for r in rows]
            java.run(tmp_path, [jp.write("db.t", data, kind=kinds)])
        else:
            shoal.open_table(path).upsert(data)
    table = shoal.open_table(path)
    latest = table.latest_snapshot()
    assert latest is not None
    seen = java.run(tmp_path, audit_reads(latest.id))
    changelogs = []
    for s, java_rows in zip(range(1, latest.id + 1), seen, strict=True):
        ours = table.incremental(s - 1, s, scan_mode="changelog", row_kind=True)
        assert ours.column_names == ["rowkind", *SCHEMA.names]
        assert by_key(as_rows(ours)) == by_key(as_rows(java_rows)), s
        snapshot = table.snapshot(s)
        if snapshot.commit_kind != "APPEND":
            assert not java_rows.num_rows, s
            assert snapshot.changelog_manifest_list is None, s
        else:
            assert snapshot.changelog_record_count == ours.num_rows, s
            changelogs.append(by_key(as_rows(ours)))
    assert changelogs == [by_key(rows) for rows in written]
    # The whole range in one read: every snapshot's changelog in commit order.
    whole = as_rows(table.incremental(0, latest.id, row_kind=True))
    assert by_key(whole) == by_key([r for rows in written for r in rows])
    # Without row kinds, the retractions are left out, as Java's batch read does.
    plain = table.incremental(latest.id - 1, latest.id)
    java_plain = java.run(
        tmp_path,
        [jp.read("db.t", options={"incremental-between": f"{latest.id - 1},{latest.id}"})],
    )[0]
    key = ["dt", "id", "v"]
    assert sorted(plain.select(key).to_pylist(), key=str) == sorted(
        java_plain.select(key).to_pylist(), key=str
    )
    # And both read the same table.
    final = java.run(tmp_path, [jp.read("db.t")])[0]
    order = [("dt", "ascending"), ("id", "ascending")]
    assert table.to_arrow().sort_by(order).to_pylist() == final.sort_by(order).to_pylist()
