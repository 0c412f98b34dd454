"""The aggregation and partial-update merge engines against an in-memory model: random
writes (several rows of a key in one write, retractions, deletes) with compactions in
between read back as each key's rows folded in sequence order."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from tests.conftest import sorted_rows
from tests.primary_key.engine_model import (
    aggregate_rows,
    partial_update_group_rows,
    partial_update_rows,
)

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), False),
        ("s", pa.int64()),
        ("f", pa.float64()),
        ("mx", pa.int32()),
        ("mn", pa.string()),
        ("lv", pa.int64()),
        ("ln", pa.string()),
        ("fv", pa.int64()),
        ("fn", pa.int64()),
        ("la", pa.string()),
        ("ba", pa.bool_()),
        ("bo", pa.bool_()),
        ("p", pa.int64()),
        ("kind", pa.string()),
    ]
)
# column: (function, ignore-retract)
FUNCTIONS = {
    "s": ("sum", False),
    "f": ("sum", False),
    "mx": ("max", True),
    "mn": ("min", True),
    "lv": ("last_value", False),
    # Retractions of last_non_null_value depend on how rows met in earlier merges (a
    # merged retraction becomes a null insert), in Paimon too: the model skips them.
    "ln": ("last_non_null_value", True),
    "fv": ("first_value", True),
    "fn": ("first_non_null_value", True),
    "la": ("listagg", True),
    "ba": ("bool_and", True),
    "bo": ("bool_or", True),
    "p": ("product", True),
    "kind": ("last_value", False),
}


def _maybe(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), values)


ROW = st.fixed_dictionaries(
    {
        "k": st.integers(0, 5),
        "s": _maybe(st.integers(-100, 100)),
        # Small halves sum exactly in any order: the model adds in Python.
        "f": _maybe(st.integers(-8, 8).map(lambda v: v / 2)),
        "mx": _maybe(st.integers(-5, 5)),
        "mn": _maybe(st.sampled_from(["a", "b", "bc", "é"])),
        "lv": _maybe(st.integers(0, 9)),
        "ln": _maybe(st.sampled_from(["x", "y"])),
        "fv": _maybe(st.integers(0, 9)),
        "fn": _maybe(st.integers(0, 9)),
        "la": _maybe(st.sampled_from(["p", "q"])),
        "ba": _maybe(st.booleans()),
        "bo": _maybe(st.booleans()),
        "p": _maybe(st.integers(-3, 3)),
        "kind": st.sampled_from(["+I", "+U", "-U", "-D"]),
    }
)
STEP = st.one_of(
    st.tuples(st.just("write"), st.lists(ROW, min_size=1, max_size=8)),
    st.tuples(st.just("compact"), st.sampled_from(["full", "universal"])),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(STEP, min_size=1, max_size=8))
def test_aggregation_reads_as_the_model(tmp_path: Path, steps: list[Any]) -> None:
    table = shoal.Catalog(str(tmp_path / "w")).create_table(
        f"db.t{uuid.uuid4().hex}",
        SCHEMA,
        primary_keys=["k"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "rowkind.field": "kind",
            "num-sorted-run.compaction-trigger": "3",
            **{f"fields.{c}.aggregate-function": f for c, (f, _) in FUNCTIONS.items()},
            **{f"fields.{c}.ignore-retract": "true" for c, (_, i) in FUNCTIONS.items() if i},
        },
    )
    history: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for op, arg in steps:
        if op == "compact":
            table.compact(arg)
        else:
            # A key's first row is an insert: a lone retraction is dropped by reads and
            # compactions alike, so its effect depends on the merge history (in Paimon too).
            rows = [
                r if r["k"] in history or r["kind"] in ("+I", "+U") else {**r, "kind": "+I"}
                for r in arg
            ]
            for r in rows:
                history.setdefault(r["k"], []).append((r["kind"], r))
            table.upsert(pa.Table.from_pylist(rows, schema=SCHEMA))
        expected = aggregate_rows(history, FUNCTIONS, "k")
        assert sorted_rows(table.to_arrow(), "k") == expected


PU_SCHEMA = pa.schema(
    [pa.field("k", pa.int64(), False), ("a", pa.int64()), ("b", pa.string()), ("c", pa.float64())]
)
PU_ROW = st.fixed_dictionaries(
    {
        "k": st.integers(0, 5),
        "a": _maybe(st.integers(0, 9)),
        "b": _maybe(st.sampled_from(["x", "y", "z"])),
        "c": _maybe(st.floats(-1, 1, allow_nan=False)),
    }
)
PU_STEP = st.one_of(
    st.tuples(st.just("upsert"), st.lists(PU_ROW, min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.lists(st.integers(0, 5), min_size=1, max_size=3)),
    st.tuples(st.just("compact"), st.sampled_from(["full", "universal"])),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(PU_STEP, min_size=1, max_size=8))
def test_partial_update_reads_as_the_model(tmp_path: Path, steps: list[Any]) -> None:
    table = shoal.Catalog(str(tmp_path / "w")).create_table(
        f"db.t{uuid.uuid4().hex}",
        PU_SCHEMA,
        primary_keys=["k"],
        options={
            "bucket": "1",
            "merge-engine": "partial-update",
            "partial-update.remove-record-on-delete": "true",
            "num-sorted-run.compaction-trigger": "3",
        },
    )
    history: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for op, arg in steps:
        if op == "compact":
            table.compact(arg)
        elif op == "upsert":
            for r in arg:
                history.setdefault(r["k"], []).append(("+I", r))
            table.upsert(pa.Table.from_pylist(arg, schema=PU_SCHEMA))
        else:
            keys = [k for k in dict.fromkeys(arg) if k in history]
            for k in keys:
                history[k].append(("-D", {"k": k, "a": None, "b": None, "c": None}))
            if keys:
                table.delete(pa.table({"k": pa.array(keys, pa.int64())}))
        expected = partial_update_rows(history, PU_SCHEMA.names, "k")
        assert sorted_rows(table.to_arrow(), "k") == expected


SG_SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), False),
        ("g1", pa.int64()),
        ("a", pa.string()),
        ("b", pa.int64()),
        ("g2a", pa.int64()),
        ("g2b", pa.string()),
        ("c", pa.string()),
        ("d", pa.string()),
        ("e", pa.int64()),
        ("f", pa.int64()),
        ("kind", pa.string()),
    ]
)
# column: (function, ignore-retract); b and d aggregate in their groups, f outside any.
# Over several merges only functions whose fold does not depend on which rows met in
# earlier merges: in a group, listagg prepends older rows and last_non_null_value takes
# an older value only while it holds none, so their results (in Paimon too) follow the
# merge history; one merge checks them.
SG_FUNCTIONS = {"b": ("sum", False), "d": ("max", True), "f": ("sum", False)}
SG_ONE_MERGE_FUNCTIONS = {
    "b": ("sum", False),
    "c": ("last_non_null_value", False),
    "d": ("listagg", True),
    "f": ("sum", False),
}
SG_ROW = st.fixed_dictionaries(
    {
        "k": st.integers(0, 4),
        "g1": _maybe(st.integers(0, 4)),
        "a": _maybe(st.sampled_from(["p", "q", "r"])),
        "b": _maybe(st.integers(-9, 9)),
        "g2a": _maybe(st.integers(0, 2)),
        "g2b": _maybe(st.sampled_from(["x", "y"])),
        "c": _maybe(st.sampled_from(["m", "n"])),
        "d": _maybe(st.sampled_from(["u", "v"])),
        "e": _maybe(st.integers(0, 9)),
        "f": _maybe(st.integers(-9, 9)),
        "kind": st.sampled_from(["+I", "+U", "-U", "-D"]),
    }
)
SG_STEP = st.one_of(
    st.tuples(st.just("write"), st.lists(SG_ROW, min_size=1, max_size=8)),
    st.tuples(st.just("compact"), st.sampled_from(["full", "universal"])),
)
SG_GROUPS = [(("g1",), ("a", "b")), (("g2a", "g2b"), ("c", "d"))]


def _sg_table(
    path: Path, functions: dict[str, tuple[str, bool]], removes: bool, **extra: str
) -> shoal.Table:
    options = {
        "bucket": "1",
        "merge-engine": "partial-update",
        "rowkind.field": "kind",
        "num-sorted-run.compaction-trigger": "3",
        "fields.g1.sequence-group": "a,b",
        "fields.g2a,g2b.sequence-group": "c,d",
        **{f"fields.{c}.aggregate-function": f for c, (f, _) in functions.items()},
        **{f"fields.{c}.ignore-retract": "true" for c, (_, i) in functions.items() if i},
        **extra,
    }
    if removes:
        options["partial-update.remove-record-on-sequence-group"] = "g1"
        # Only whole merges (reads, full compactions): see the test below.
        options["write-only"] = "true"
    return shoal.Catalog(str(path)).create_table(
        f"db.t{uuid.uuid4().hex}", SG_SCHEMA, primary_keys=["k"], options=options
    )


def _first_rows_insert(
    rows: list[dict[str, Any]], history: dict[int, list[tuple[str, dict[str, Any]]]]
) -> list[dict[str, Any]]:
    # A key's first row is an insert: a lone retraction's effect depends on how merges
    # met it (in Paimon too).
    out = []
    for r in rows:
        if r["k"] not in history and r["kind"] not in ("+I", "+U"):
            r = {**r, "kind": "+I"}
        history.setdefault(r["k"], []).append((r["kind"], r))
        out.append(r)
    return out


@pytest.mark.parametrize("removes", [False, True])
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(SG_STEP, min_size=1, max_size=8))
def test_partial_update_sequence_groups_read_as_the_model(
    tmp_path: Path, removes: bool, steps: list[Any]
) -> None:
    table = _sg_table(tmp_path / "w", SG_FUNCTIONS, removes)
    groups = [(seq, members, removes and seq == ("g1",)) for seq, members in SG_GROUPS]
    history: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for op, arg in steps:
        if op == "compact":
            # A removal followed by other rows in one merge (a write or a compaction of
            # newer files) folds them without the rows before it, in Paimon too: with
            # removals, writes hold one row per key, nothing compacts after a write,
            # and compactions merge everything.
            table.compact("full" if removes else arg)
            if removes:
                # A full compaction drops a removed key's DELETE row: a later lone row of
                # the key is read as it is (Paimon hands a key's only row on untouched).
                alive = {
                    r["k"]
                    for r in partial_update_group_rows(
                        history, SG_SCHEMA.names, groups, SG_FUNCTIONS, "k"
                    )
                }
                history = {k: v for k, v in history.items() if k in alive}
            continue
        rows = list({r["k"]: r for r in arg}.values()) if removes else arg
        rows = _first_rows_insert(rows, history)
        table.upsert(pa.Table.from_pylist(rows, schema=SG_SCHEMA))
        expected = partial_update_group_rows(history, SG_SCHEMA.names, groups, SG_FUNCTIONS, "k")
        assert sorted_rows(table.to_arrow(), "k") == expected


@pytest.mark.parametrize(
    ("removes", "ordered", "first"),
    [
        (False, False, "first_value"),
        (False, False, "first_non_null_value"),
        (True, False, "first_value"),
        (True, True, "first_value"),
        (False, True, "first_non_null_value"),
    ],
)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rows=st.lists(SG_ROW, min_size=1, max_size=16))
def test_partial_update_sequence_groups_in_one_merge_fold_as_the_model(
    tmp_path: Path, removes: bool, ordered: bool, first: str, rows: list[dict[str, Any]]
) -> None:
    """One write: its rows of a key meet in one merge, in write order or, with
    ``sequence.field`` = e, ordered by e first (nulls first). Column a takes
    first_value or first_non_null_value (whose older rows replace the value once it is
    initialized)."""
    extra = {"sequence.field": "e"} if ordered else {}
    functions = {**SG_ONE_MERGE_FUNCTIONS, "a": (first, True)}
    table = _sg_table(tmp_path / "w", functions, removes, **extra)
    groups = [(seq, members, removes and seq == ("g1",)) for seq, members in SG_GROUPS]
    history: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    if ordered:
        merge_order = sorted(
            enumerate(rows), key=lambda p: (p[1]["e"] is not None, p[1]["e"] or 0, p[0])
        )
        # The first row of each key in merge order is the insert.
        _first_rows_insert([r for _, r in merge_order], history)
        rows = [r for key_rows in history.values() for _, r in key_rows]
    else:
        rows = _first_rows_insert(rows, history)
    table.upsert(pa.Table.from_pylist(rows, schema=SG_SCHEMA))
    expected = partial_update_group_rows(history, SG_SCHEMA.names, groups, functions, "k")
    assert sorted_rows(table.to_arrow(), "k") == expected
    table.compact("full")
    assert sorted_rows(table.to_arrow(), "k") == expected


def test_partial_update_refuses_deletes_it_cannot_merge(tmp_path: Path) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t", PU_SCHEMA, primary_keys=["k"], options={"merge-engine": "partial-update"}
    )
    table.upsert(pa.Table.from_pylist([{"k": 1, "a": 1}], schema=PU_SCHEMA))
    with pytest.raises(shoal.InvalidArgumentError, match="remove-record-on-delete"):
        table.delete(pa.table({"k": [1]}))
    assert table.latest_snapshot().id == 1


def test_aggregation_refuses_deletes_a_function_cannot_take(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), False), ("m", pa.int64())])
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t",
        schema,
        primary_keys=["k"],
        options={"merge-engine": "aggregation", "fields.m.aggregate-function": "max"},
    )
    with pytest.raises(shoal.InvalidArgumentError, match="ignore-retract"):
        table.delete(pa.table({"k": [1]}))
    assert table.latest_snapshot() is None


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"fields.v.aggregate-function": "count"}, shoal.InvalidOptionError),
        ({"fields.v.aggregate-function": "collect"}, shoal.InvalidOptionError),
        ({"fields.v.aggregate-function": "merge_map_with_keytime"}, shoal.UnsupportedFeatureError),
        ({"fields.v.aggregate-function": "nested_partial_update"}, shoal.UnsupportedFeatureError),
        ({"fields.v.aggregate-function": "bool_and"}, shoal.InvalidOptionError),
        ({"fields.default-aggregate-function": "listagg"}, shoal.InvalidOptionError),
        ({"fields.v.aggregate-function": "hll_sketch"}, shoal.InvalidOptionError),
    ],
)
def test_aggregation_options_shoal_does_not_implement_are_refused(
    tmp_path: Path, options: dict[str, str], error: type[Exception]
) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64())])
    with pytest.raises(error):
        shoal.Catalog(str(tmp_path)).create_table(
            "db.t", schema, primary_keys=["k"], options={"merge-engine": "aggregation", **options}
        )


@pytest.mark.parametrize(
    ("options", "error", "key"),
    [
        # Paimon's own validation (SchemaValidation, PartialUpdateMergeFunction.Factory).
        ({"fields.v.sequence-group": "x"}, shoal.InvalidOptionError, "fields.v.sequence-group"),
        ({"fields.x.sequence-group": "v"}, shoal.InvalidOptionError, "fields.x.sequence-group"),
        (
            {"fields.v.sequence-group": "u", "fields.w.sequence-group": "u"},
            shoal.InvalidOptionError,
            "fields.w.sequence-group",
        ),
        (
            {"fields.v.sequence-group": "u", "fields.v.aggregate-function": "max"},
            shoal.InvalidOptionError,
            "fields.v.aggregate-function",
        ),
        ({"fields.v.aggregate-function": "sum"}, shoal.InvalidOptionError, None),
        ({"fields.default-aggregate-function": "sum"}, shoal.InvalidOptionError, None),
        (
            {"fields.v.sequence-group": "u", "partial-update.remove-record-on-delete": "true"},
            shoal.InvalidOptionError,
            "partial-update.remove-record-on-delete",
        ),
        (
            {"ignore-delete": "true", "partial-update.remove-record-on-delete": "true"},
            shoal.InvalidOptionError,
            "partial-update.remove-record-on-delete",
        ),
        (
            {"fields.v.sequence-group": "u", "partial-update.remove-record-on-sequence-group": "u"},
            shoal.InvalidOptionError,
            "partial-update.remove-record-on-sequence-group",
        ),
        (
            {"merge-engine": "deduplicate", "fields.v.sequence-group": "u"},
            shoal.InvalidOptionError,
            "fields.v.sequence-group",
        ),
        # What shoal does not implement.
        (
            {
                "fields.v.sequence-group": "u",
                "fields.u.aggregate-function": "first_non_null_value",
                "partial-update.remove-record-on-sequence-group": "v",
            },
            shoal.UnsupportedFeatureError,
            "partial-update.remove-record-on-sequence-group",
        ),
        (
            {"fields.v.sequence-group": "u", "fields.default-aggregate-function": "sum"},
            shoal.UnsupportedFeatureError,
            "fields.default-aggregate-function",
        ),
        ({"fields.v.sequence-group": "k"}, shoal.UnsupportedFeatureError, None),
        (
            {"fields.v.sequence-group": "u", "fields.u.sequence-group": "w"},
            shoal.UnsupportedFeatureError,
            None,
        ),
    ],
)
def test_partial_update_options_paimon_refuses_are_refused(
    tmp_path: Path, options: dict[str, str], error: type[shoal.ShoalError], key: str | None
) -> None:
    schema = pa.schema(
        [pa.field("k", pa.int64(), False), ("u", pa.int64()), ("v", pa.int64()), ("w", pa.int64())]
    )
    with pytest.raises(error) as info:
        shoal.Catalog(str(tmp_path)).create_table(
            "db.t",
            schema,
            primary_keys=["k"],
            options={"merge-engine": "partial-update", **options},
        )
    if key is not None:
        assert key in str(info.value)
    assert not (tmp_path / "db.db").exists() or not any((tmp_path / "db.db").iterdir())


def test_partial_update_group_collections_shoal_does_not_fold_are_refused(tmp_path: Path) -> None:
    """A distinct collect of rows with ignore-retract is refused when the table is made;
    a merge_map taking retractions, when a key's row older than its group's sequence
    follows a retraction in one merge (Paimon puts it before what the retraction left)."""
    row = pa.struct([pa.field("x", pa.int32())])
    schema = pa.schema(
        [
            pa.field("k", pa.int64(), False),
            ("g", pa.int64()),
            ("c", pa.list_(row)),
            ("m", pa.map_(pa.string(), pa.int64())),
            ("kind", pa.string()),
        ]
    )
    catalog = shoal.Catalog(str(tmp_path))
    options = {
        "merge-engine": "partial-update",
        "rowkind.field": "kind",
        "fields.g.sequence-group": "c,m",
        "fields.m.aggregate-function": "merge_map",
    }
    collect = {
        "fields.c.aggregate-function": "collect",
        "fields.c.distinct": "true",
        "fields.c.ignore-retract": "true",
    }
    with pytest.raises(shoal.UnsupportedFeatureError, match=r"fields\.c\.aggregate-function"):
        catalog.create_table("db.c", schema, primary_keys=["k"], options={**options, **collect})
    table = catalog.create_table("db.m", schema, primary_keys=["k"], options=options)

    def rows(*items: tuple[int, str, list[tuple[str, int]]]) -> pa.Table:
        return pa.Table.from_pylist(
            [{"k": 1, "g": g, "c": None, "m": m, "kind": kind} for g, kind, m in items],
            schema=schema,
        )

    table.upsert(rows((2, "+I", [("a", 1)]), (1, "+I", [("b", 2)]), (3, "-U", [("a", 1)])))
    assert table.to_arrow().column("m").to_pylist() == [[("b", 2)]]
    with pytest.raises(shoal.UnsupportedFeatureError, match=r"fields\.m\.ignore-retract"):
        table.upsert(rows((4, "+I", [("a", 1)]), (5, "-U", [("a", 1)]), (1, "+I", [("c", 3)])))
    assert table.to_arrow().column("m").to_pylist() == [[("b", 2)]]


def test_partial_update_deletes_with_sequence_groups_retract_their_groups(tmp_path: Path) -> None:
    """table.delete writes -D rows whose group sequences are null: as in Paimon they
    change nothing; a -D carrying a newer sequence removes the group's values."""
    schema = pa.schema([pa.field("k", pa.int64(), False), ("g", pa.int64()), ("v", pa.string())])
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t",
        schema,
        primary_keys=["k"],
        options={"merge-engine": "partial-update", "fields.g.sequence-group": "v"},
    )
    table.upsert(pa.Table.from_pylist([{"k": 1, "g": 5, "v": "a"}], schema=schema))
    table.delete(pa.table({"k": pa.array([1], pa.int64())}))
    assert table.to_arrow().to_pylist() == [{"k": 1, "g": 5, "v": "a"}]
    table.delete(pa.Table.from_pylist([{"k": 1, "g": 4, "v": None}], schema=schema))
    assert table.to_arrow().to_pylist() == [{"k": 1, "g": 5, "v": "a"}]
    table.delete(pa.Table.from_pylist([{"k": 1, "g": 6, "v": None}], schema=schema))
    assert table.to_arrow().to_pylist() == [{"k": 1, "g": 6, "v": None}]
