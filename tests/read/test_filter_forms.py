"""Filters in three forms (DNF tuples, pyarrow expressions, text) give the same rows,
and the rows pyarrow's own filter gives on the full read; time travel by datetime."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal.errors import InvalidArgumentError, InvalidFilterError

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("dt", pa.string(), nullable=False),
        ("v", pa.int32()),
        ("x", pa.float64()),
        ("s", pa.string()),
        ("d", pa.date32()),
    ]
)
VALUES: dict[str, list[Any]] = {
    "v": [0, 1, 2, 3, 5],
    "x": [-1.5, 0.0, 2.25],
    "s": ["a", "b", "it's", "z"],
    "d": [date(2026, 1, d) for d in (1, 2, 5)],
    "dt": ["p1", "p2", "p3"],
    "id": [1, 4, 9],
}


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))

    def pick(column: str, i: int) -> Any:
        vals = VALUES[column]
        return None if i % 5 == 3 and column not in ("id", "dt") else vals[i % len(vals)]

    return pa.table(
        {
            c: [i if c == "id" else pick(c, i * (k + 2)) for i in ids]
            for k, c in enumerate(SCHEMA.names)
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> list[shoal.Table]:
    catalog = shoal.Catalog(str(tmp_path_factory.mktemp("wh")))
    append = catalog.create_table("db.a", SCHEMA, partition_keys=["dt"])
    keyed = catalog.create_table(
        "db.k", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": "2"}
    )
    for start in (0, 7, 3):  # overlapping keys: the last write of a key wins
        append.append(_rows(start, 9))
        keyed.append(_rows(start, 9))
    return [append, keyed]


# A predicate: ("cmp", c, op, v) | ("in", c, vs) | ("null", c, bool) | ("isin", c, vs)
# | ("between", c, lo, hi) | ("and"/"or", l, r) | ("not", p).
def _atoms() -> st.SearchStrategy[tuple[Any, ...]]:
    columns = st.sampled_from(sorted(VALUES))
    return st.one_of(
        columns.flatmap(
            lambda c: st.tuples(
                st.just("cmp"),
                st.just(c),
                st.sampled_from(["=", "!="] if c == "x" else ["=", "!=", "<", "<=", ">", ">="]),
                st.sampled_from(VALUES[c]),
            )
        ),
        columns.flatmap(
            lambda c: st.tuples(
                st.just("in"),
                st.just(c),
                st.lists(st.sampled_from(VALUES[c]), min_size=1, max_size=3),
            )
        ),
        columns.flatmap(
            lambda c: st.tuples(
                st.just("isin"),
                st.just(c),
                st.lists(st.sampled_from(VALUES[c]), min_size=1, max_size=3),
            )
        ),
        columns.flatmap(lambda c: st.tuples(st.just("null"), st.just(c), st.booleans())),
        st.sampled_from(["v", "d", "s"]).flatmap(
            lambda c: st.tuples(
                st.just("between"),
                st.just(c),
                st.sampled_from(VALUES[c]),
                st.sampled_from(VALUES[c]),
            )
        ),
    )


PREDICATES = st.recursive(
    _atoms(),
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(["and", "or"]), inner, inner),
        st.tuples(st.just("not"), inner),
    ),
    max_leaves=5,
)


def _text_value(v: Any) -> str:
    if isinstance(v, str | date):
        return "'" + str(v).replace("'", "''") + "'"
    return repr(v)


def to_text(p: tuple[Any, ...]) -> str:
    kind = p[0]
    if kind == "cmp":
        return f"{p[1]} {p[2]} {_text_value(p[3])}"
    if kind in ("in", "isin"):
        inner = f"{p[1]} in ({', '.join(_text_value(v) for v in p[2])})"
        return inner if kind == "in" else f"({inner} and {p[1]} is not null)"
    if kind == "null":
        return f"{p[1]} is {'' if p[2] else 'not '}null"
    if kind == "between":
        return f"{p[1]} between {_text_value(p[2])} and {_text_value(p[3])}"
    if kind == "not":
        return f"not ({to_text(p[1])})"
    return f"({to_text(p[1])}) {kind} ({to_text(p[2])})"


def to_expression(p: tuple[Any, ...]) -> pc.Expression:
    kind, f = p[0], pc.field(p[1]) if p[0] not in ("and", "or", "not") else None
    if kind == "cmp":
        return {
            "=": f == p[3],
            "!=": f != p[3],
            "<": f < p[3],
            "<=": f <= p[3],
            ">": f > p[3],
            ">=": f >= p[3],
        }[p[2]]
    if kind == "in":  # SQL's IN: unknown on a null row
        result = f == p[2][0]
        for v in p[2][1:]:
            result = result | (f == v)
        return result
    if kind == "isin":
        return f.isin(p[2])
    if kind == "null":
        return f.is_null() if p[2] else f.is_valid()
    if kind == "between":
        return (f >= p[2]) & (f <= p[3])
    if kind == "not":
        return ~to_expression(p[1])
    left, right = to_expression(p[1]), to_expression(p[2])
    return left & right if kind == "and" else left | right


_NEG = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}


def to_dnf(p: tuple[Any, ...], negated: bool = False) -> list[list[tuple[str, str, Any]]]:
    """The model's own DNF, from SQL's rules (independent of shoal's)."""
    kind = p[0]
    if kind == "not":
        return to_dnf(p[1], not negated)
    if kind == "cmp":
        return [[(p[1], _NEG[p[2]] if negated else p[2], p[3])]]
    if kind == "in":
        return [[(p[1], "not in" if negated else "in", list(p[2]))]]
    if kind == "isin":
        if negated:
            return [[(p[1], "not in", list(p[2]))], [(p[1], "=", None)]]
        return [[(p[1], "in", list(p[2]))]]
    if kind == "null":
        return [[(p[1], "=" if p[2] != negated else "!=", None)]]
    if kind == "between":
        low, high = (p[1], ">=", p[2]), (p[1], "<=", p[3])
        return [[(p[1], "<", p[2])], [(p[1], ">", p[3])]] if negated else [[low, high]]
    left, right = to_dnf(p[1], negated), to_dnf(p[2], negated)
    if (kind == "or") != negated:
        return left + right
    return [a + b for a in left for b in right]


def _sorted(rows: pa.Table) -> list[dict[str, Any]]:
    return sorted(rows.to_pylist(), key=lambda r: (r["dt"], r["id"], repr(r)))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(predicate=PREDICATES)
def test_three_forms_give_pyarrows_rows(
    tables: list[shoal.Table], predicate: tuple[Any, ...]
) -> None:
    for table in tables:
        expected = _sorted(table.to_arrow().filter(to_expression(predicate)))
        assert _sorted(table.to_arrow(filter=to_expression(predicate))) == expected
        assert _sorted(table.to_arrow(filter=to_text(predicate))) == expected
        dnf = to_dnf(predicate)
        if len(dnf) <= 256:
            assert _sorted(table.to_arrow(filter=dnf)) == expected


def test_forms_prune_alike(tables: list[shoal.Table]) -> None:
    forms = [
        "dt = 'p2' and v > 3",
        (pc.field("dt") == "p2") & (pc.field("v") > 3),
        [("dt", "=", "p2"), ("v", ">", 3)],
    ]
    for table in tables:
        planned = [
            sorted(f.file_name for split in table.scan(filter=form).plan() for f in split.files)
            for form in forms
        ]
        everything = sum(len(split.files) for split in table.scan().plan())
        assert planned[0] == planned[1] == planned[2]
        assert len(planned[0]) < everything


@pytest.mark.parametrize(
    "bad",
    [
        "v = null",
        "v >",
        "(v = 1",
        "nope = 1",
        "not (x < 1)",
        pc.field("v") == pc.field("id"),
        pc.and_(pc.field("v") > 1, pc.field("v") < 3),
        pc.field("s") == 1,
        pc.field("x").is_null(nan_is_null=True),
        ~(pc.field("x") < 1.5),
    ],
)
def test_refused_forms(tables: list[shoal.Table], bad: Any) -> None:
    with pytest.raises(InvalidFilterError):
        tables[0].to_arrow(filter=bad)


def test_time_travel_by_datetime_and_iso_string(tmp_path: Any) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", SCHEMA)
    first = table.append(_rows(0, 2))
    time.sleep(0.01)
    table.append(_rows(10, 3))
    at = datetime.fromtimestamp(first.time_millis / 1000, UTC)
    assert table.to_arrow(timestamp=at).num_rows == 2
    assert table.to_arrow(timestamp=at.replace(tzinfo=None)).num_rows == 2  # naive is UTC
    assert table.to_arrow(timestamp=at.isoformat()).num_rows == 2
    assert table.scan(timestamp=at.strftime("%Y-%m-%dT%H:%M:%S.%f")).to_arrow().num_rows == 2
    assert table.to_arrow(timestamp_ms=first.time_millis).num_rows == 2
    assert table.to_arrow(timestamp=datetime.now(UTC)).num_rows == 5
    with pytest.raises(InvalidArgumentError):
        table.to_arrow(timestamp=at, timestamp_ms=first.time_millis)
    for bad in ("yesterday", date(2026, 1, 1), 1700000000000):
        with pytest.raises(InvalidArgumentError):
            table.to_arrow(timestamp=bad)
    with pytest.raises(shoal.errors.SnapshotNotFoundError):
        table.to_arrow(timestamp=datetime(2000, 1, 1))
