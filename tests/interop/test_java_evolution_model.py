"""Random schema changes and writes, Java Paimon (0.9 or 1.0) and shoal taking turns on
one table, checked after every step against an in-memory model of the rows.

Each example creates an append table (unaware buckets) or a primary-key table (two fixed
buckets), partitioned by ``p``, and runs a few steps. A step is a schema change (add a
column, last, ``after`` another or ``first``; rename; drop; widen a type among the
changes both sides read exactly; set or remove a harmless option), a write of a few
random rows (shoal's append, upsert or delete; Java's write with row kinds) or, on the
primary-key table, a compaction, each made by the side drawn for it. After every step
both sides read the latest snapshot, a projection, a filtered read on a column drawn
among those that evolved (Java's: its latest rows under the same filter; the oracle
reads without filters), and an earlier snapshot by time travel (Java with
``scan.snapshot-id``): each must equal what the model expects. The model applies the
same changes by Paimon's rules (columns tracked by identity, so renames keep values,
drops forget them, added columns read as null, widened values convert) and keeps the
rows of every snapshot, so a bug that both sides share is caught too.

A Java step and the Java reads after it run in one JVM. Every step is written to the
example's notes, so a failure prints the sequence that replays it.
"""

from __future__ import annotations

import copy
import tempfile
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, event, given, note, settings
from hypothesis import strategies as st

import shoal
from shoal.format import casts
from shoal.format import types as T
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon

pytestmark = pytest.mark.interop

TABLE = "db.t"
PARTITIONS = ("a", "b")
KEYS = range(6)
# Initial value columns and their Paimon types.
VALUE_COLUMNS = (
    ("n", "INT"),
    ("h", "SMALLINT"),
    ("f", "FLOAT"),
    ("d", "DECIMAL(6, 2)"),
    ("s", "STRING"),
)
NEW_NAMES = ("c1", "c2", "c3", "c4", "c5")
ADDED_TYPES = ("INT", "BIGINT", "SMALLINT", "FLOAT", "DOUBLE", "STRING", "DECIMAL(8, 3)")
# Options that change nothing the reads see (retention stays above the test's snapshots).
OPTIONS: dict[str, st.SearchStrategy[str]] = {
    "snapshot.num-retained.min": st.integers(50, 90).map(str),
    "snapshot.num-retained.max": st.integers(100, 200).map(str),
    "manifest.merge-min-count": st.integers(2, 30).map(str),
    "num-sorted-run.compaction-trigger": st.integers(2, 6).map(str),
}


def _widenings(sql: str) -> list[str]:
    """The types a column of type ``sql`` may be changed to here: Paimon accepts the
    change and both sides read the old values exactly."""
    root = sql.split("(", maxsplit=1)[0]
    if root == "DECIMAL":
        precision, scale = (int(x) for x in sql[len("DECIMAL(") : -1].split(","))
        candidates = [f"DECIMAL({p}, {scale})" for p in range(precision + 1, precision + 4)]
    else:
        candidates = {
            "SMALLINT": ["INT", "BIGINT"],
            "INT": ["BIGINT", "STRING", "DOUBLE"],
            "BIGINT": ["STRING"],
            "FLOAT": ["DOUBLE"],
        }.get(root, [])
    old = T.parse_type(sql)
    assert isinstance(old, T.AtomicType)
    for new_sql in candidates:
        new = T.parse_type(new_sql)
        assert isinstance(new, T.AtomicType)
        assert casts.can_cast(old, new), (sql, new_sql)
        assert casts.reads_exactly(old, new), (sql, new_sql)
    return candidates


def _widen_value(value: Any, new_sql: str) -> Any:
    """A value as Paimon's cast to ``new_sql`` reads it (only the widenings above)."""
    if value is None:
        return None
    if new_sql == "STRING":
        return str(value)
    if new_sql == "DOUBLE":
        return float(value)
    return value


def _values(sql: str) -> st.SearchStrategy[Any]:
    root = sql.split("(", maxsplit=1)[0]
    strategy: st.SearchStrategy[Any]
    if root in ("SMALLINT", "INT", "BIGINT"):
        bits = {"SMALLINT": 16, "INT": 32, "BIGINT": 64}[root]
        strategy = st.integers(-3, 3) | st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    elif root in ("FLOAT", "DOUBLE"):
        small = st.integers(-12, 12).map(lambda i: i / 4)
        finite = st.floats(allow_nan=False, allow_infinity=False, width=32)
        if root == "DOUBLE":
            finite = st.floats(allow_nan=False, allow_infinity=False)
        strategy = small | finite
    elif root == "DECIMAL":
        precision, scale = (int(x) for x in sql[len("DECIMAL(") : -1].split(","))
        top = Decimal(10**precision - 1).scaleb(-scale)
        strategy = st.decimals(min_value=-top, max_value=top, places=scale)
    else:
        assert root == "STRING", sql
        strategy = st.text(alphabet="abz09é", max_size=3)
    return st.none() | strategy


# --- the model ------------------------------------------------------------------------------


@dataclass
class Column:
    uid: int
    name: str
    sql: str
    key: bool = False
    evolved: bool = False

    @property
    def arrow(self) -> pa.Field:
        return jp.arrow_field(self.name, self.sql + (" NOT NULL" if self.key else ""))


Row = dict[int, Any]
"""A row by column identity (uid), values in the column's current type."""


@dataclass
class Model:
    primary_key: bool
    columns: list[Column]
    schema_id: int = 0
    schemas: dict[int, list[Column]] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    appended: list[Row] = field(default_factory=list)
    by_key: dict[tuple[str, int], Row] = field(default_factory=dict)
    snapshots: dict[int, tuple[int, list[Row]]] = field(default_factory=dict)
    next_uid: int = 0

    @staticmethod
    def create(primary_key: bool) -> Model:
        model = Model(primary_key, [])
        for name, sql in (("p", "STRING"), ("k", "BIGINT")):
            model.columns.append(Column(model._uid(), name, sql, key=True))
        for name, sql in VALUE_COLUMNS:
            model.columns.append(Column(model._uid(), name, sql))
        model.schemas[0] = copy.deepcopy(model.columns)
        return model

    def _uid(self) -> int:
        self.next_uid += 1
        return self.next_uid

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([c.arrow for c in self.columns])

    @property
    def values(self) -> list[Column]:
        return [c for c in self.columns if not c.key]

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    @property
    def rows(self) -> list[Row]:
        return list(self.by_key.values()) if self.primary_key else self.appended

    # Schema changes, in the tuples of `jp.alter`.

    def apply(self, change: jp.SchemaChange) -> None:
        action, *args = change
        if action == "add_column":
            name, sql, position = args
            added = Column(self._uid(), name, sql, evolved=True)
            if position.get("first"):
                self.columns.insert(0, added)
            elif "after" in position:
                index = self.columns.index(self.column(position["after"]))
                self.columns.insert(index + 1, added)
            else:
                self.columns.append(added)
        elif action == "rename_column":
            renamed = self.column(args[0])
            renamed.name, renamed.evolved = args[1], True
        elif action == "drop_column":
            self.columns.remove(self.column(args[0]))
        elif action == "update_column_type":
            retyped = self.column(args[0])
            retyped.sql, retyped.evolved = args[1], True
            for row in self.rows:
                row[retyped.uid] = _widen_value(row.get(retyped.uid), args[1])
        elif action == "set_option":
            self.options[args[0]] = args[1]
        else:
            assert action == "remove_option"
            del self.options[args[0]]

    def commit_schema(self) -> None:
        self.schema_id += 1
        self.schemas[self.schema_id] = copy.deepcopy(self.columns)

    # Writes: rows by column name (names left out are null), with their row kinds.

    def write(self, rows: list[dict[str, Any]], kinds: list[str]) -> None:
        for named, kind in zip(rows, kinds, strict=True):
            row = {c.uid: named.get(c.name) for c in self.columns}
            if not self.primary_key:
                assert kind == "INSERT"
                self.appended.append(row)
            elif kind in ("DELETE", "UPDATE_BEFORE"):
                self.by_key.pop((named["p"], named["k"]), None)
            else:
                self.by_key[(named["p"], named["k"])] = row

    def record_snapshot(self, snapshot_id: int) -> None:
        self.snapshots[snapshot_id] = (self.schema_id, copy.deepcopy(self.rows))

    # What reads return, as lists of dicts by name.

    def expected(
        self, columns: list[Column] | None = None, rows: list[Row] | None = None
    ) -> list[dict[str, Any]]:
        columns = self.columns if columns is None else columns
        rows = self.rows if rows is None else rows
        return [{c.name: row.get(c.uid) for c in columns} for row in rows]

    def expected_at(self, snapshot_id: int) -> tuple[pa.Schema, list[dict[str, Any]]]:
        schema_id, rows = self.snapshots[snapshot_id]
        columns = self.schemas[schema_id]
        return pa.schema([c.arrow for c in columns]), self.expected(columns, rows)


def _sort_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple((row[n] is None, 0 if row[n] is None else row[n]) for n in sorted(row))


def canonical(rows: list[dict[str, Any]] | pa.Table) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = rows.to_pylist() if isinstance(rows, pa.Table) else rows
    return sorted(listed, key=_sort_key)


Filter = tuple[str, str, Any]


def matches(row: dict[str, Any], term: Filter) -> bool:
    """SQL's meaning of one filter term: a comparison with null is never true."""
    name, op, value = term
    actual = row[name]
    if value is None:
        return (actual is None) == (op == "=")
    if actual is None:
        return False
    return bool(
        {
            "=": actual == value,
            "!=": actual != value,
            "<": actual < value,
            "<=": actual <= value,
            ">": actual > value,
            ">=": actual >= value,
        }[op]
    )


# --- drawing steps --------------------------------------------------------------------------


@dataclass
class Step:
    side: str  # "java" or "shoal"
    action: str  # "alter", "write", "compact"
    changes: list[jp.SchemaChange] = field(default_factory=list)
    rows: pa.Table | None = None
    kinds: list[str] = field(default_factory=list)
    shoal_write: str = ""  # "append", "upsert" or "delete"
    strategy: str | None = None  # shoal's compaction strategy
    full: bool = True  # Java's compaction

    def describe(self) -> str:
        if self.action == "alter":
            return f"{self.side} alter {self.changes}"
        if self.action == "compact":
            how = self.strategy if self.side == "shoal" else ("full" if self.full else "minor")
            return f"{self.side} compact ({how})"
        assert self.rows is not None
        verb = self.shoal_write if self.side == "shoal" else f"write kinds={self.kinds}"
        return f"{self.side} {verb} {self.rows.to_pylist()}"


def draw_change(data: st.DataObject, model: Model, dropped: set[str]) -> jp.SchemaChange:
    """One schema change that applies to the model as it stands."""
    names = {c.name for c in model.columns}
    free = sorted((set(NEW_NAMES) | dropped) - names)
    values = model.values
    widenable = [c for c in values if _widenings(c.sql)]
    # Weighted towards the changes that move values: widenings, renames, adds.
    choices = ["add", "add", "set_option"]
    if free:
        choices += ["rename", "rename"]
    if len(values) > 1:
        choices += ["drop", "drop"]
    if widenable:
        choices += ["widen"] * 4
    if model.options:
        choices.append("remove_option")
    kind = data.draw(st.sampled_from(choices))
    if kind == "add" and free:
        name = data.draw(st.sampled_from(free))
        sql = data.draw(st.sampled_from(ADDED_TYPES))
        where = data.draw(st.sampled_from(["last", "after", "first"]))
        position: dict[str, Any] = {}
        if where == "after":
            position = {"after": data.draw(st.sampled_from([c.name for c in model.columns]))}
        elif where == "first":
            position = {"first": True}
        return ("add_column", name, sql, position)
    if kind in ("add", "set_option"):
        key = data.draw(st.sampled_from(sorted(OPTIONS)))
        return ("set_option", key, data.draw(OPTIONS[key]))
    if kind == "rename":
        renamed = data.draw(st.sampled_from([c.name for c in values]))
        return ("rename_column", renamed, data.draw(st.sampled_from(free)))
    if kind == "drop":
        return ("drop_column", data.draw(st.sampled_from([c.name for c in values])))
    if kind == "widen":
        retyped = data.draw(st.sampled_from(widenable))
        return (
            "update_column_type",
            retyped.name,
            data.draw(st.sampled_from(_widenings(retyped.sql))),
        )
    return ("remove_option", data.draw(st.sampled_from(sorted(model.options))))


def draw_rows(data: st.DataObject, model: Model, columns: list[Column], count: int) -> pa.Table:
    arrays: dict[str, list[Any]] = {c.name: [] for c in columns}
    for _ in range(count):
        for c in columns:
            value: Any
            if c.name == "p":
                value = data.draw(st.sampled_from(PARTITIONS))
            elif c.name == "k":
                value = data.draw(st.sampled_from(KEYS))
            else:
                value = data.draw(_values(c.sql))
            arrays[c.name].append(value)
    return pa.table(arrays, schema=pa.schema([c.arrow for c in columns]))


def draw_step(data: st.DataObject, model: Model, dropped: set[str]) -> Step:
    actions = ["alter", "write", "write"] + (["compact"] if model.primary_key else [])
    side = data.draw(st.sampled_from(["java", "shoal"]))
    action = data.draw(st.sampled_from(actions))
    step = Step(side, action)
    if action == "alter":
        scratch = copy.deepcopy(model)
        gone = set(dropped)
        for _ in range(data.draw(st.integers(1, 3))):
            change = draw_change(data, scratch, gone)
            if change[0] == "drop_column":
                gone.add(change[1])
            scratch.apply(change)
            step.changes.append(change)
        return step
    if action == "compact":
        step.strategy = data.draw(st.sampled_from([None, "full", "universal"]))
        step.full = data.draw(st.booleans())
        return step
    count = data.draw(st.integers(1, 4))
    if side == "shoal":
        step.shoal_write = (
            data.draw(st.sampled_from(["append", "upsert", "delete"]))
            if model.primary_key
            else "append"
        )
        columns = model.columns
        if step.shoal_write == "delete":
            columns = [c for c in model.columns if c.key]
        step.rows = draw_rows(data, model, columns, count)
        kind = "DELETE" if step.shoal_write == "delete" else "INSERT"
        step.kinds = [kind] * count
        return step
    # Java writes the columns it is given; the others are null.
    columns = [c for c in model.columns if c.key or data.draw(st.integers(0, 3)) > 0]
    step.rows = draw_rows(data, model, columns, count)
    kinds = st.sampled_from(["INSERT", "INSERT", "UPDATE_AFTER", "DELETE", "UPDATE_BEFORE"])
    step.kinds = [data.draw(kinds) if model.primary_key else "INSERT" for _ in range(count)]
    return step


# --- running an example ---------------------------------------------------------------------


@dataclass
class Reads:
    """The reads after one step, drawn against the model as the step leaves it."""

    projection: list[str]
    term: Filter
    snapshot_id: int | None

    def java_ops(self) -> list[jp.Op[Any]]:
        ops = [jp.read(TABLE), jp.read(TABLE, projection=self.projection)]
        if self.snapshot_id is not None:
            ops.append(jp.read(TABLE, options={"scan.snapshot-id": str(self.snapshot_id)}))
        return ops


def draw_reads(data: st.DataObject, model: Model) -> Reads:
    names = [c.name for c in model.columns]
    projection = data.draw(
        st.permutations(names).flatmap(
            lambda order: st.integers(1, len(order)).map(lambda n: list(order[:n]))
        )
    )
    evolved = [c for c in model.values if c.evolved] or model.values
    column = data.draw(st.sampled_from(evolved))
    present = sorted(
        {r.get(column.uid) for r in model.rows if r.get(column.uid) is not None}, key=str
    )
    value = data.draw(st.sampled_from(present) if present else _values(column.sql))
    op = "=" if value is None else data.draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
    if value is None and data.draw(st.booleans()):
        op = "!="
    older = [s for s, (schema_id, _) in model.snapshots.items() if schema_id < model.schema_id]
    snapshot_id = data.draw(st.sampled_from(sorted(older))) if older else None
    return Reads(projection, (column.name, op, value), snapshot_id)


def check(table: shoal.Table, model: Model, reads: Reads, java_results: list[pa.Table]) -> None:
    """Both sides' reads against the model's rows."""
    latest, projected = java_results[0], java_results[1]
    schema = model.schema
    assert table.schema == schema, (table.schema, schema)
    assert latest.schema == schema, (latest.schema, schema)
    expected = canonical(model.expected())
    assert canonical(table.to_arrow()) == expected, "shoal's latest"
    assert canonical(latest) == expected, "Java's latest"

    columns = [model.column(n) for n in reads.projection]
    expected = canonical(model.expected(columns))
    shoal_projected = table.to_arrow(columns=reads.projection)
    assert shoal_projected.column_names == reads.projection
    assert projected.column_names == reads.projection
    assert canonical(shoal_projected) == expected, "shoal's projection"
    assert canonical(projected) == expected, "Java's projection"

    term = reads.term
    expected = canonical([r for r in model.expected() if matches(r, term)])
    assert canonical(table.to_arrow(filter=[term])) == expected, f"shoal's filter {term}"
    java_filtered = [r for r in latest.to_pylist() if matches(r, term)]
    assert canonical(java_filtered) == expected, f"Java's rows under {term}"

    if reads.snapshot_id is not None:
        old_schema, old_rows = model.expected_at(reads.snapshot_id)
        travelled = java_results[2]
        ours = table.to_arrow(snapshot_id=reads.snapshot_id)
        assert ours.schema == old_schema, ("shoal's time travel", ours.schema, old_schema)
        assert travelled.schema == old_schema, ("Java's time travel", travelled.schema)
        assert canonical(ours) == canonical(old_rows), f"shoal at {reads.snapshot_id}"
        assert canonical(travelled) == canonical(old_rows), f"Java at {reads.snapshot_id}"


def shoal_step(table: shoal.Table, step: Step) -> None:
    if step.action == "alter":
        with table.update_schema() as update:
            for action, *args in step.changes:
                if action == "add_column":
                    name, sql, position = args
                    update.add_column(
                        name, sql, after=position.get("after"), first=bool(position.get("first"))
                    )
                else:
                    getattr(update, action)(*args)
    elif step.action == "compact":
        table.compact(step.strategy)
    else:
        assert step.rows is not None
        if step.shoal_write == "delete":
            table.delete(step.rows)
        else:
            rows = step.rows.select(table.schema.names).cast(table.schema)
            getattr(table, step.shoal_write)(rows)


def java_step_ops(step: Step) -> list[jp.Op[Any]]:
    if step.action == "alter":
        return [jp.alter(TABLE, step.changes)]
    if step.action == "compact":
        return [jp.compact(TABLE, full=step.full)]
    assert step.rows is not None
    return [jp.write(TABLE, step.rows, kind=step.kinds)]  # type: ignore[arg-type]


def apply_to_model(model: Model, step: Step, dropped: set[str]) -> None:
    if step.action == "alter":
        for change in step.changes:
            if change[0] == "drop_column":
                dropped.add(change[1])
            model.apply(change)
        model.commit_schema()
    elif step.action == "write":
        assert step.rows is not None
        model.write(step.rows.to_pylist(), step.kinds)


def run_example(data: st.DataObject, primary_key: bool, steps: int) -> None:
    version = data.draw(st.sampled_from(VERSIONS), label="Java Paimon")
    java = JavaPaimon(version)
    model = Model.create(primary_key)
    dropped: set[str] = set()
    creator = data.draw(st.sampled_from(["java", "shoal"]), label="creator")
    options = {"bucket": "2"} if primary_key else {"bucket": "-1"}
    keys = ["p", "k"] if primary_key else []
    first = Step(creator, "write")
    first.rows = draw_rows(data, model, model.columns, data.draw(st.integers(1, 4)))
    first.kinds = ["INSERT"] * first.rows.num_rows
    first.shoal_write = "append"
    note(f"{creator} creates {TABLE} (primary keys {keys}, {options}) and {first.describe()}")

    with tempfile.TemporaryDirectory(prefix="evolution-model-") as tmp:
        warehouse = Path(tmp)
        catalog = shoal.Catalog(str(warehouse))
        create = jp.create_table(
            TABLE, model.schema, partition_keys=["p"], primary_keys=keys, options=options
        )
        if creator == "shoal":
            created = catalog.create_table(
                TABLE, model.schema, partition_keys=["p"], primary_keys=keys, options=options
            )
            shoal_step(created, first)
        for number in range(steps + 1):
            step = first if number == 0 else draw_step(data, model, dropped)
            if number > 0:
                note(f"step {number}: {step.describe()}")
                event(f"{step.side} {step.action}")
                for change in step.changes:
                    event(f"{step.side} {change[0]}")
            apply_to_model(model, step, dropped)
            reads = draw_reads(data, model)
            note(
                f"  reads: projection {reads.projection}, filter {reads.term}, "
                f"time travel to {reads.snapshot_id}"
            )
            ops: list[jp.Op[Any]] = []
            if number == 0 and creator == "java":
                ops += [create, *java_step_ops(step)]
            elif number > 0 and step.side == "java":
                ops += java_step_ops(step)
            elif number > 0:
                shoal_step(catalog.get_table(TABLE), step)
            results = java.run(warehouse, [*ops, *reads.java_ops()])[len(ops) :]
            table = catalog.get_table(TABLE)
            known = max(model.snapshots, default=0)
            for snapshot in table.snapshots():
                if snapshot.id > known:
                    assert snapshot.schema_id == model.schema_id, (snapshot, model.schema_id)
                    model.record_snapshot(snapshot.id)
            check(table, model, reads, results)
        if any(s < model.schema_id for s, _ in model.snapshots.values()):
            event("time travel across a schema change")


SETTINGS: dict[str, Any] = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


# Without shrinking: an example costs seconds, and the notes already print the steps.
@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
@settings(max_examples=3, phases=[Phase.explicit, Phase.reuse, Phase.generate], **SETTINGS)
@given(data=st.data())
def test_java_and_shoal_take_turns_evolving_a_table(primary_key: bool, data: st.DataObject) -> None:
    run_example(data, primary_key, steps=4)


@pytest.mark.slow
@pytest.mark.parametrize("primary_key", [False, True], ids=["append", "primary-key"])
@settings(max_examples=15, **SETTINGS)
@given(data=st.data())
def test_java_and_shoal_take_turns_evolving_a_table_longer(
    primary_key: bool, data: st.DataObject
) -> None:
    run_example(data, primary_key, steps=10)
