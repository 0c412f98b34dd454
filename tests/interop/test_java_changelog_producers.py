"""The ``lookup`` and ``full-compaction`` changelog producers between Paimon's Java
implementation (0.9 and 1.0) and shoal.

One table is written in random turns by Java and shoal (upserts with ``sequence.field``
values out of order, deletes); a twin table gets the same writes from Java alone. Each
Java write is followed by the compaction Paimon's writer makes (with ``lookup`` the
batch write's own lookup compaction; with ``full-compaction`` a full compaction, as
Paimon's Flink writer makes every ``full-compaction.delta-commits`` commits), each
shoal write by shoal's own. Per write, Java's ``audit_log`` read of the changelog of
the snapshots it made is the same on both tables, and equals shoal's read of it.
"""

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
        pa.field("id", pa.int64(), False),
        pa.field("ts", pa.int64()),
        pa.field("v", pa.int64()),
    ]
)
Row = tuple[str, int, int | None, int | None]  # (kind, id, ts, v)

# (producer, engine options, whether deletes are written)
CASES: dict[str, tuple[dict[str, str], bool]] = {
    "lookup-deduplicate": ({"changelog-producer": "lookup", "sequence.field": "ts"}, True),
    "lookup-aggregation": (
        {
            "changelog-producer": "lookup",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
            "changelog-producer.row-deduplicate": "true",
        },
        True,
    ),
    "lookup-partial-update": (
        {"changelog-producer": "lookup", "merge-engine": "partial-update"},
        False,
    ),
    "lookup-first-row": ({"changelog-producer": "lookup", "merge-engine": "first-row"}, False),
    "lookup-deletion-vectors": (
        {
            "changelog-producer": "lookup",
            "deletion-vectors.enabled": "true",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
        },
        True,
    ),
    "full-deduplicate": (
        {"changelog-producer": "full-compaction", "sequence.field": "ts"},
        True,
    ),
    "full-aggregation": (
        {
            "changelog-producer": "full-compaction",
            "merge-engine": "aggregation",
            "fields.v.aggregate-function": "sum",
        },
        True,
    ),
}


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def draw_write(rng: random.Random, step: int, deletes: bool) -> tuple[str, pa.Table]:
    """An upsert of a few keys (``ts`` drawn at random, so out of order against the
    stored rows) or a delete."""
    ids = sorted(rng.sample(range(8), rng.randint(1, 4)))
    action = "delete" if deletes and rng.random() < 0.3 else "upsert"
    ts = [rng.randint(0, 20) for _ in ids]
    v: list[int | None] = [rng.choice([None, step * 10 + i]) for i in range(len(ids))]
    return action, pa.table({"id": ids, "ts": ts, "v": v}, schema=SCHEMA)


def changelog_reads(identifier: str, first: int, last: int) -> list[jp.Op[pa.Table]]:
    """Java's audit_log read of each snapshot's changelog in ``(first, last]``."""
    return [
        jp.read(
            f"{identifier}$audit_log",
            options={
                "incremental-between": f"{s - 1},{s}",
                "incremental-between-scan-mode": "changelog",
            },
        )
        for s in range(first + 1, last + 1)
    ]


def as_rows(table: pa.Table) -> list[Row]:
    return [(r["rowkind"], r["id"], r["ts"], r["v"]) for r in table.to_pylist()]


def by_key(rows: list[Row]) -> list[Row]:
    """Stably by key: buckets and files come in no fixed order, a key's rows do."""
    return sorted(rows, key=lambda r: r[1])


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("case", list(CASES))
def test_both_write_the_changelog_java_writes(
    java: JavaPaimon, tmp_path: Path, case: str, seed: int
) -> None:
    options, deletes = CASES[case]
    full = options["changelog-producer"] == "full-compaction"
    rng = random.Random(f"{case}-{seed}")
    table_options = {"bucket": "2", **options}
    java.run(
        tmp_path,
        [
            jp.create_table("db.mixed", SCHEMA, primary_keys=["id"], options=table_options),
            jp.create_table("db.twin", SCHEMA, primary_keys=["id"], options=table_options),
        ],
    )
    path = str(tmp_path / "db.db" / "mixed")
    steps = [draw_write(rng, step, deletes) for step in range(rng.randint(3, 6))]
    sides = [rng.choice(["java", "shoal"]) for _ in steps]
    sides[0] = "shoal"  # shoal writes into an empty table once at least

    def java_write(identifier: str, action: str, data: pa.Table) -> list[jp.Op[Any]]:
        kind = "DELETE" if action == "delete" else "INSERT"
        ops: list[jp.Op[Any]] = [jp.write(identifier, data, kind=kind)]
        if full:
            ops.append(jp.compact(identifier, full=True))
        return [*ops, jp.snapshot(identifier)]

    # The twin: every write by Java, the snapshot ids after each.
    twin_ops = [op for action, data in steps for op in java_write("db.twin", action, data)]
    twin_results = java.run(tmp_path, twin_ops)
    per_write = len(twin_ops) // len(steps)
    twin_ids = [0] + [
        (twin_results[i * per_write + per_write - 1] or {"id": 0})["id"] for i in range(len(steps))
    ]
    # The mixed table, in turns.
    mixed_ids = [0]
    pending: list[jp.Op[Any]] = []
    for side, (action, data) in zip(sides, steps, strict=True):
        if side == "java":
            pending.extend(java_write("db.mixed", action, data))
            continue
        if pending:
            results = java.run(tmp_path, pending)
            mixed_ids.extend(r["id"] for r in results[per_write - 1 :: per_write])
            pending = []
        table = shoal.open_table(path)
        if action == "delete":
            table.delete(data)
        else:
            table.upsert(data)
        latest = shoal.open_table(path).latest_snapshot()
        assert latest is not None
        mixed_ids.append(latest.id)
    if pending:
        results = java.run(tmp_path, pending)
        mixed_ids.extend(r["id"] for r in results[per_write - 1 :: per_write])

    reads = changelog_reads("db.mixed", 0, mixed_ids[-1]) + changelog_reads(
        "db.twin", 0, twin_ids[-1]
    )
    seen = java.run(tmp_path, reads)
    mixed_logs, twin_logs = seen[: mixed_ids[-1]], seen[mixed_ids[-1] :]
    table = shoal.open_table(path)
    for n in range(len(steps)):
        java_on_mixed = [
            r for s in range(mixed_ids[n], mixed_ids[n + 1]) for r in as_rows(mixed_logs[s])
        ]
        java_on_twin = [
            r for s in range(twin_ids[n], twin_ids[n + 1]) for r in as_rows(twin_logs[s])
        ]
        ours = [
            r
            for s in range(mixed_ids[n] + 1, mixed_ids[n + 1] + 1)
            for r in as_rows(table.incremental(s - 1, s, scan_mode="changelog", row_kind=True))
        ]
        context = (n, sides[n], steps[n][0])
        assert by_key(java_on_mixed) == by_key(java_on_twin), context
        assert by_key(ours) == by_key(java_on_mixed), context
    # Every changelog shoal committed is in a COMPACT snapshot, as Paimon's.
    for s in range(1, mixed_ids[-1] + 1):
        snapshot = table.snapshot(s)
        if snapshot.changelog_manifest_list is not None:
            assert snapshot.commit_kind == "COMPACT", s
    # Both tables read the same.
    final = java.run(tmp_path, [jp.read("db.mixed"), jp.read("db.twin")])
    ordered = [("id", "ascending")]
    assert final[0].sort_by(ordered).to_pylist() == final[1].sort_by(ordered).to_pylist()
    assert table.to_arrow().sort_by(ordered).to_pylist() == final[0].sort_by(ordered).to_pylist()
