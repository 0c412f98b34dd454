"""The changelog of the ``lookup`` and ``full-compaction`` producers against a model.

Random writes (upserts with out-of-order ``sequence.field`` values, deletes) and
compactions go into a shoal table (with ``full-compaction`` each write is followed by
a full compaction: ``full-compaction.delta-commits`` unset). After each, the changelog
of the snapshots it made, folded onto the table's state before it, gives the state
after it: each ``-U``/``-D`` row retracts exactly the row the key held, each ``+I``
adds a key that was absent, each ``+U`` follows its key's ``-U``. With
``changelog-producer.row-deduplicate`` no pair leaves a key as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), False),
        pa.field("ts", pa.int64()),
        pa.field("v", pa.int64()),
    ]
)
State = dict[int, tuple[Any, ...]]

ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {"sequence.field": "ts"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    "partial-update": {"merge-engine": "partial-update"},
    "first-row": {"merge-engine": "first-row"},
}
ROWS = st.lists(
    st.tuples(st.integers(0, 9), st.integers(0, 5), st.one_of(st.none(), st.integers(-9, 9))),
    min_size=1,
    max_size=6,
)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), ROWS),
        st.tuples(st.just("delete"), ROWS),
        st.tuples(st.sampled_from(["full", "universal"]), st.just([])),
    ),
    min_size=1,
    max_size=7,
)


def state_of(table: shoal.Table) -> State:
    return {r["id"]: (r["ts"], r["v"]) for r in table.to_arrow().to_pylist()}


def fold(before: State, changes: list[dict[str, Any]], dedupe: bool) -> State:
    state = dict(before)
    retracted: dict[int, tuple[Any, ...]] = {}
    for r in changes:
        key, value = r["id"], (r["ts"], r["v"])
        kind = r["rowkind"]
        if kind in ("-U", "-D"):
            assert state.get(key) == value, (kind, key, state.get(key), value)
            del state[key]
            if kind == "-U":
                retracted[key] = value
        elif kind == "+U":
            assert key in retracted, ("+U without -U", key)
            assert not (dedupe and retracted.pop(key) == value), ("unchanged pair", key)
            state[key] = value
        else:
            assert key not in state, ("+I of a present key", key)
            state[key] = value
    return state


def check_run(tmp: Path, producer: str, engine: str, dedupe: bool, ops: list[Any]) -> None:
    options = {"bucket": "2", "changelog-producer": producer, **ENGINES[engine]}
    if dedupe:
        options["changelog-producer.row-deduplicate"] = "true"
    catalog = shoal.Catalog(str(tmp))
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options=options)
    state: State = {}
    seen = 0
    for op, rows in ops:
        data = pa.table(
            {"id": [r[0] for r in rows], "ts": [r[1] for r in rows], "v": [r[2] for r in rows]},
            schema=SCHEMA,
        )
        if op == "upsert":
            table.upsert(data)
        elif op == "delete":
            if engine in ("partial-update", "first-row"):
                continue
            table.delete(data.select(["id"]))
        else:
            table.compact(op)
        latest = table.latest_snapshot()
        last = latest.id if latest is not None else 0
        changes = [
            r
            for s in range(seen + 1, last + 1)
            for r in table.incremental(s - 1, s, scan_mode="changelog", row_kind=True).to_pylist()
        ]
        seen = last
        after = state_of(table)
        assert fold(state, changes, dedupe) == after, (op, rows)
        state = after


CASES = [
    (producer, engine)
    for producer in ("lookup", "full-compaction")
    for engine in ENGINES
    if (producer, engine) != ("full-compaction", "first-row")  # Paimon refuses it
]


@pytest.mark.parametrize(("producer", "engine"), CASES)
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS, dedupe=st.booleans())
def test_changelog_folds_into_the_table(
    tmp_path_factory: pytest.TempPathFactory,
    producer: str,
    engine: str,
    ops: list[Any],
    dedupe: bool,
) -> None:
    check_run(tmp_path_factory.mktemp("t"), producer, engine, dedupe, ops)
