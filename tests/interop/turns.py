"""Java Paimon and shoal taking turns on one primary-key table, checked against a model.

A step is an upsert, a delete or a full compaction of a few keys of one partition, made
by the side drawn for it (each turn's Java steps run in one JVM). After every shoal
step shoal reads the model's rows; at the end Java reads every step's snapshot and shoal
reads each again by time travel, both equal to the model's rows at that step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st

import shoal
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import JavaPaimon

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), False),
        pa.field("id", pa.int64(), False),
        pa.field("v", pa.string()),
    ]
)

Step = tuple[str, str, list[int], str]  # (writer, action, ids, partition)
Model = dict[tuple[str, int], str]

IDS = st.lists(st.integers(0, 11), min_size=1, max_size=6)
STEPS = st.lists(
    st.tuples(
        st.sampled_from(["java", "shoal"]),
        st.sampled_from(["upsert", "upsert", "delete", "compact"]),
        IDS,
        st.sampled_from(["d1", "d2"]),
    ),
    min_size=2,
    max_size=6,
)
SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    "phases": [Phase.explicit, Phase.reuse, Phase.generate],
}


def rows(ids: list[int], v: str, dt: str = "d1") -> pa.Table:
    return pa.table(
        {"dt": [dt] * len(ids), "id": ids, "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA
    )


def table_path(warehouse: Path, name: str) -> str:
    return str(warehouse / "db.db" / name)


def ordered(table: pa.Table) -> list[dict[str, object]]:
    return (
        table.select(SCHEMA.names).sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()
    )


def apply(model: Model, step: Step, tag: str) -> None:
    _, action, ids, dt = step
    for i in ids:
        if action == "upsert":
            model[(dt, i)] = f"{tag}{i}"
        elif action == "delete":
            model.pop((dt, i), None)


def expected(model: Model) -> list[dict[str, object]]:
    return [{"dt": dt, "id": i, "v": v} for (dt, i), v in sorted(model.items())]


def run_turns(
    version: str,
    steps: list[Step],
    tmp: Path,
    *,
    partitioned: bool,
    options: Mapping[str, str],
    check: Callable[[shoal.Table], None] = lambda _table: None,
) -> shoal.Table:
    """Run ``steps`` on a table created by Java with ``options``; ``check`` looks at
    the table after the last step. Returns the table."""
    java = JavaPaimon(version)
    keys = (["dt", "id"], ["dt"]) if partitioned else (["id"], [])
    create = jp.create_table(
        "db.t", SCHEMA, partition_keys=keys[1], primary_keys=keys[0], options=dict(options)
    )
    pending: list[tuple[jp.Op[Any], int | None]] = [(create, None)]
    model: Model = {}
    states: list[tuple[int, list[dict[str, object]]]] = []
    path = table_path(tmp, "t")

    def run_java() -> None:
        results = java.run(tmp, [op for op, _ in pending])
        for (_, n), result in zip(pending, results, strict=True):
            if n is not None:
                states[n] = (result or 0, states[n][1])
        pending.clear()

    for n, (writer, action, ids, dt) in enumerate(steps):
        dt = dt if partitioned else "d1"
        tag = f"s{n}-"
        if writer == "java":
            if action == "compact":
                op = jp.compact("db.t")
            else:
                kind = "DELETE" if action == "delete" else "INSERT"
                op = jp.write("db.t", rows(ids, tag, dt), kind=kind)
            pending.append((op, n))
        else:
            if pending:
                run_java()
            table = shoal.open_table(path)
            if action == "compact":
                table.compact("full")
            elif action == "delete":
                table.delete(rows(ids, tag, dt))
            else:
                table.upsert(rows(ids, tag, dt))
        apply(model, (writer, action, ids, dt), tag)
        states.append((0, expected(model)))
        if writer == "shoal":
            table = shoal.open_table(path)
            assert ordered(table.to_arrow()) == expected(model)
            latest = table.latest_snapshot()
            states[n] = (latest.id if latest else 0, states[n][1])
    if pending:
        run_java()
    table = shoal.open_table(path)
    checked = [(s, r) for s, r in states if s > 0]
    reads = java.run(
        tmp, [jp.read("db.t", options={"scan.snapshot-id": str(s)}) for s, _ in checked]
    )
    for (snapshot_id, rows_then), seen in zip(checked, reads, strict=True):
        assert ordered(seen) == rows_then, snapshot_id
        assert ordered(table.to_arrow(snapshot_id=snapshot_id)) == rows_then, snapshot_id
    assert ordered(table.to_arrow()) == expected(model)
    check(table)
    return table


def write_turn(
    java: JavaPaimon,
    warehouse: str,
    table: shoal.Table,
    rows: pa.Table,
    gone: pa.Table | None,
    *,
    by_java: bool,
    compact: str | None = None,
) -> pa.Table:
    """One turn on a table that Java and shoal write (not checked against a model):
    ``rows`` upserted and ``gone`` deleted by Java (``by_java``) or by shoal; then a
    compaction, by Java (``"java"``) or by shoal with that strategy (``"full"``,
    ``"universal"``), shoal's before Java's ops run. Returns Java's read after it."""
    ident = table.name
    ops: list[jp.Op[Any]] = []
    if by_java:
        ops.append(jp.write(ident, rows))
        if gone is not None:
            ops.append(jp.write(ident, gone, kind="DELETE"))
    else:
        table.upsert(rows)
        if gone is not None:
            table.delete(gone)
    if compact == "java":
        ops.append(jp.compact(ident))
    elif compact is not None:
        table.compact(compact)
    ops.append(jp.read(ident))
    return java.run(warehouse, ops)[-1]
