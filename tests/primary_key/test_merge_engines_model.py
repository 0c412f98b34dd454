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
from tests.primary_key.engine_model import aggregate_rows, partial_update_rows

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
        ({"fields.v.aggregate-function": "rbm64"}, shoal.UnsupportedFeatureError),
        ({"fields.v.aggregate-function": "nested_partial_update"}, shoal.UnsupportedFeatureError),
        ({"fields.v.aggregate-function": "bool_and"}, shoal.InvalidOptionError),
        ({"fields.default-aggregate-function": "listagg"}, shoal.InvalidOptionError),
        ({"fields.v.aggregate-function": "hll_sketch"}, shoal.InvalidOptionError),
        ({"deletion-vectors.enabled": "true"}, shoal.UnsupportedFeatureError),
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
    "options",
    [
        {"fields.v.sequence-group": "w"},
        {"fields.v.aggregate-function": "sum"},
        {"partial-update.remove-record-on-sequence-group": "v"},
    ],
)
def test_partial_update_options_shoal_does_not_implement_are_refused(
    tmp_path: Path, options: dict[str, str]
) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), False), ("v", pa.int64()), ("w", pa.int64())])
    with pytest.raises(shoal.UnsupportedFeatureError):
        shoal.Catalog(str(tmp_path)).create_table(
            "db.t",
            schema,
            primary_keys=["k"],
            options={"merge-engine": "partial-update", **options},
        )
