"""A model test of delete_where and update_where: random writes, deletes and updates
with random predicates on an append table (a list of rows) and a primary-key table (a
dict by key), some of them racing another writer that writes between their read and
their commit; the table's rows equal the model's after every step."""

from __future__ import annotations

import operator
import tempfile
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal import row_ops

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}

terms = st.tuples(st.sampled_from(["id", "v"]), st.sampled_from(sorted(OPS)), st.integers(0, 9))
# DNF: an OR of ANDs of terms
predicates = st.lists(st.lists(terms, min_size=1, max_size=2), min_size=1, max_size=2)
rows = st.lists(st.tuples(st.integers(0, 9), st.one_of(st.none(), st.integers(0, 9))), max_size=6)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("write"), rows),
        st.tuples(st.just("delete"), predicates),
        st.tuples(st.just("update"), predicates, st.one_of(st.none(), st.integers(0, 9))),
        st.tuples(
            st.just("race"),
            predicates,
            st.one_of(st.none(), st.integers(0, 9)),
            st.booleans(),
            rows,
        ),
    ),
    min_size=1,
    max_size=6,
)


def _matches(row: tuple[int, int | None], dnf: list[list[tuple[str, str, int]]]) -> bool:
    def term(column: str, op: str, value: int) -> bool:
        got = row[0] if column == "id" else row[1]
        return got is not None and OPS[op](got, value)

    return any(all(term(*t) for t in group) for group in dnf)


def _table_rows(table: shoal.Table) -> list[tuple[int, int | None]]:
    got = table.to_arrow().to_pydict()
    return sorted(zip(got["id"], got["v"], strict=True), key=repr)


def _check(primary_key: bool, plan: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        table = shoal.Catalog(warehouse).create_table(
            "db.t",
            SCHEMA,
            primary_keys=["id"] if primary_key else (),
            options={"bucket": "2"} if primary_key else {},
        )
        other = shoal.Table.open(table.path)
        model: list[tuple[int, int | None]] = []

        def write(writer: shoal.Table, written: list[tuple[int, int | None]]) -> None:
            nonlocal model
            writer.append(
                pa.table(
                    {"id": [r[0] for r in written], "v": [r[1] for r in written]}, schema=SCHEMA
                )
            )
            if primary_key:
                merged = dict(model)
                merged.update(dict(written))
                model = list(merged.items())
            else:
                model.extend(written)

        for step in plan:
            if step[0] == "write":
                write(table, step[1])
            elif step[0] == "race":
                # read and write the delete (or update), let the other writer commit
                # its rows, then commit: those rows were not read, so they stay as
                # written; a key they share with a matched row takes the later commit
                _, dnf, value, update, written = step
                prepared = row_ops.prepare(
                    table._transaction(), dnf, {"v": value} if update else None
                )
                matched = [r for r in model if _matches(r, dnf)]
                write(other, written)
                prepared.commit()
                if primary_key:
                    keys = {r[0] for r in matched}
                    model = [r for r in model if r[0] not in keys]
                    if update:
                        model += [(r[0], value) for r in matched]
                else:
                    for r in matched:
                        model.remove(r)
                    if update:
                        model += [(r[0], value) for r in matched]
            elif step[0] == "delete":
                table.delete_where(step[1])
                model = [r for r in model if not _matches(r, step[1])]
            else:
                table.update_where(step[1], set={"v": step[2]})
                model = [(r[0], step[2]) if _matches(r, step[1]) else r for r in model]
            assert _table_rows(table) == sorted(model, key=repr), step


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=steps)
def test_append_table_follows_the_model(plan: list[tuple[Any, ...]]) -> None:
    _check(False, plan)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=steps)
def test_primary_key_table_follows_the_model(plan: list[tuple[Any, ...]]) -> None:
    _check(True, plan)
