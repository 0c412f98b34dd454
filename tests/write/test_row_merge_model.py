"""A model test of Table.merge: random sources and random sets of clauses (matched
updates and deletes, not-matched inserts, each with random conditions on the target
and the source) merged into an append table (a list of rows) and a primary-key table
(a dict by key), some racing another writer that writes between the merge's read and
its commit; the table's rows equal the model's after every step, and a refused merge
leaves them as they were."""

from __future__ import annotations

import operator
import tempfile
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal import row_merge
from shoal.errors import InvalidArgumentError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
Row = tuple[int | None, int | None]
OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

terms = st.tuples(st.sampled_from(["id", "v"]), st.sampled_from(sorted(OPS)), st.integers(0, 5))
conditions = st.one_of(
    st.none(), st.lists(st.lists(terms, min_size=1, max_size=2), min_size=1, max_size=2)
)
update_sets = st.one_of(
    st.none(),
    st.builds(lambda v: {"v": v}, st.one_of(st.none(), st.integers(0, 5))),
    st.just({"v": "v"}),
    st.just("plus-one"),
)
clauses = st.one_of(
    st.tuples(st.just("update"), update_sets, conditions, conditions),
    st.tuples(st.just("delete"), st.none(), conditions, conditions),
    st.tuples(
        st.just("insert"),
        st.one_of(st.none(), st.builds(lambda v: {"id": "id", "v": v}, st.integers(0, 5))),
        st.none(),
        conditions,
    ),
)


def _rows(keys: st.SearchStrategy[int | None]) -> st.SearchStrategy[list[Row]]:
    return st.lists(st.tuples(keys, st.one_of(st.none(), st.integers(0, 5))), max_size=6)


def _steps(keys: st.SearchStrategy[int | None]) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    return st.lists(
        st.one_of(
            st.tuples(st.just("write"), _rows(keys)),
            st.tuples(
                st.just("merge"),
                _rows(keys),
                st.lists(clauses, min_size=1, max_size=4),
                st.one_of(st.none(), _rows(st.integers(0, 4))),
            ),
        ),
        min_size=1,
        max_size=5,
    )


def _holds(row: Row, dnf: list[list[tuple[str, str, int]]] | None) -> bool:
    if dnf is None:
        return True

    def term(column: str, op: str, value: int) -> bool:
        got = row[0] if column == "id" else row[1]
        return got is not None and OPS[op](got, value)

    return any(all(term(*t) for t in group) for group in dnf)


def _value(spec: Any, source: Row) -> int | None:
    if spec is None:
        return source[1]
    if spec == "plus-one":
        return None if source[1] is None else source[1] + 1
    value = spec["v"]
    return source[1] if value == "v" else value


def _builder(
    table: shoal.Table, source: list[Row], plan: list[tuple[Any, ...]]
) -> row_merge.MergeBuilder:
    data = pa.table({"id": [r[0] for r in source], "v": [r[1] for r in source]}, schema=SCHEMA)
    builder = table.merge(data, on=["id"])
    for action, spec, condition, source_condition in plan:
        if action == "update":
            values = {"v": pc.field("v") + 1} if spec == "plus-one" else spec
            builder = builder.when_matched_update(
                values, condition, source_condition=source_condition
            )
        elif action == "delete":
            builder = builder.when_matched_delete(condition, source_condition=source_condition)
        else:
            builder = builder.when_not_matched_insert(spec, source_condition)
    return builder


def _merge(
    target: list[Row], source: list[Row], plan: list[tuple[Any, ...]]
) -> tuple[list[Row], list[Row], set[int | None]] | None:
    """The model's merge: the rows kept, the rows written (updates and inserts) and the
    keys of deleted rows; None when two source rows match one target row. Inserts come
    in the source's order (on a primary-key table the last of a key wins)."""
    kept: list[Row] = []
    written: list[Row] = []
    deleted: set[int | None] = set()
    matched_sources: set[int] = set()
    for row in target:
        hits = [i for i, s in enumerate(source) if row[0] is not None and s[0] == row[0]]
        if len(hits) > 1:
            return None
        if not hits:
            kept.append(row)
            continue
        matched_sources.add(hits[0])
        match = source[hits[0]]
        for action, spec, condition, source_condition in plan:
            if action == "insert" or not (
                _holds(row, condition) and _holds(match, source_condition)
            ):
                continue
            if action == "delete":
                deleted.add(row[0])
            else:
                written.append((row[0], _value(spec, match)))
            break
        else:
            kept.append(row)
    for index, s in enumerate(source):
        if index in matched_sources:
            continue
        for action, spec, _, source_condition in plan:
            if action == "insert" and _holds(s, source_condition):
                written.append((s[0], s[1] if spec is None else spec["v"]))
                break
    return kept, written, deleted


def _table_rows(table: shoal.Table) -> list[Row]:
    got = table.to_arrow().to_pydict()
    return sorted(zip(got["id"], got["v"], strict=True), key=repr)


def _check(primary_key: bool, steps: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        table = shoal.Catalog(warehouse).create_table(
            "db.t",
            SCHEMA,
            primary_keys=["id"] if primary_key else (),
            options={"bucket": "2"} if primary_key else {},
        )
        other = shoal.Table.open(table.path)
        model: list[Row] = []

        def write(writer: shoal.Table, rows: list[Row], model: list[Row]) -> list[Row]:
            data = {"id": [r[0] for r in rows], "v": [r[1] for r in rows]}
            writer.append(pa.table(data, schema=SCHEMA))
            if not primary_key:
                return model + rows
            merged = dict(model)
            merged.update(dict(rows))
            return list(merged.items())

        for step in steps:
            if step[0] == "write":
                model = write(table, step[1], model)
                assert _table_rows(table) == sorted(model, key=repr), step
                continue
            _, source, plan, race = step
            expected = _merge(model, source, plan)
            builder = _builder(table, source, plan)
            if expected is None:
                before = table.latest_snapshot()
                with pytest.raises(InvalidArgumentError, match="multiple source rows matched"):
                    builder.execute()
                assert table.latest_snapshot() == before
                continue
            kept, written, deleted = expected
            prepared = row_merge.prepare(builder)
            if race is not None:
                model = write(other, race, model)
            prepared.commit()
            if primary_key:
                merged = dict(model)
                for key in deleted:
                    merged.pop(key, None)
                merged.update(dict(written))
                model = list(merged.items())
            else:
                # the rows written meanwhile were not read: they stay as written
                model = kept + written + (race or [])
            assert _table_rows(table) == sorted(model, key=repr), step


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_steps(st.one_of(st.none(), st.integers(0, 4))))
def test_append_table_follows_the_model(steps: list[tuple[Any, ...]]) -> None:
    _check(False, steps)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_steps(st.integers(0, 4)))
def test_primary_key_table_follows_the_model(steps: list[tuple[Any, ...]]) -> None:
    _check(True, steps)
