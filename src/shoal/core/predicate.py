"""Row filters in pyarrow's DNF form, for exact filtering and for pruning by statistics.

``[("dt", "=", "2026-11-01"), ("id", ">", 10)]`` is an AND; a list of such lists is
an OR of ANDs. ``("c", "=", None)`` means ``c IS NULL`` and ``("c", "!=", None)``
``c IS NOT NULL``. Comparisons follow SQL: a null never satisfies ``=``, ``<``,
``!=`` and friends.

Pruning asks "may any row of this file or partition match?" from min, max and null
counts; it answers True whenever it cannot prove otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from shoal.core import filter_expression, filter_text
from shoal.core.filter_logic import to_dnf
from shoal.core.partition import coerce_value
from shoal.errors import InvalidArgumentError, InvalidFilterError
from shoal.format import types as T

OPERATORS = ("=", "==", "!=", "<", "<=", ">", ">=", "in", "not in")


@dataclass(frozen=True, slots=True)
class Term:
    column: str
    op: str
    value: Any


# OR of ANDs.
Dnf = tuple[tuple[Term, ...], ...]


@dataclass(frozen=True, slots=True)
class ColumnStats:
    """What is known of one column in a file or partition; None means unknown."""

    min: Any
    max: Any
    null_count: int | None
    row_count: int


StatsLookup = Callable[[str], ColumnStats | None]


def parse_filter(raw: Any, types: dict[str, T.DataType]) -> Dnf | None:
    """Validate a user filter against the table's columns and normalize it.

    ``raw`` is DNF tuples, a ``pyarrow.compute.Expression``
    (:mod:`shoal.core.filter_expression`) or text (:mod:`shoal.core.filter_text`);
    all three become the same DNF, so they prune and filter alike.

    Raises:
        InvalidFilterError: for anything that is not such a filter over known columns.
    """
    if raw is None:
        return None
    if isinstance(raw, str | pc.Expression):
        schema = pa.schema([(name, T.to_arrow(t)) for name, t in types.items()])
        if isinstance(raw, str):
            raw = filter_text.parse(raw, schema)
        else:
            tree = filter_expression.to_tree(raw, schema)
            raw = to_dnf(tree, lambda c: pa.types.is_floating(schema.field(c).type))
    if isinstance(raw, tuple) or not isinstance(raw, list):
        raise InvalidFilterError(
            "filter must be text, a pyarrow.compute.Expression, a list of (column, op, "
            f"value) tuples or a list of such lists, not {raw!r}"
        )
    if not raw:
        return None
    if all(isinstance(t, tuple) for t in raw):
        groups: list[Sequence[Any]] = [raw]
    elif all(isinstance(g, list) for g in raw):
        groups = raw
    else:
        raise InvalidFilterError(
            "filter mixes terms and lists: use a flat list of tuples (AND) or a list of "
            "lists of tuples (OR of ANDs)"
        )
    if any(not group for group in groups):
        raise InvalidFilterError(
            "filter holds an empty list of conditions; leave the filter out to read every row"
        )
    return tuple(tuple(_parse_term(t, types) for t in group) for group in groups)


def _parse_term(raw: Any, types: dict[str, T.DataType]) -> Term:
    if not isinstance(raw, tuple) or len(raw) != 3:
        raise InvalidFilterError(f"filter term {raw!r} is not a (column, op, value) tuple")
    column, op, value = raw
    if column not in types:
        raise InvalidFilterError(
            f"filter names column {column!r}, which the table does not have "
            f"(columns: {', '.join(types)})"
        )
    if not isinstance(op, str) or op.lower() not in OPERATORS:
        raise InvalidFilterError(f"unknown filter operator {op!r}; use one of {OPERATORS}")
    op = "=" if op == "==" else op.lower()
    data_type = types[column]
    if op in ("in", "not in"):
        if not isinstance(value, list | tuple | set | frozenset):
            raise InvalidFilterError(f"operator {op!r} needs a list of values, got {value!r}")
        return Term(column, op, tuple(_literal(v, data_type, column) for v in value))
    if value is None and op not in ("=", "!="):
        raise InvalidFilterError(f"null can only be compared with '=' or '!=' ({raw!r})")
    return Term(column, op, _literal(value, data_type, column))


def _literal(value: Any, data_type: T.DataType, column: str) -> Any:
    if (
        isinstance(data_type, T.AtomicType)
        and isinstance(value, str)
        and data_type.root in (T.VARCHAR, T.CHAR)
    ):
        return value
    try:
        value = coerce_value(value, data_type, column)
    except InvalidArgumentError as exc:
        raise InvalidFilterError(str(exc)) from None
    # Timestamps compare as instants in their column's convention: naive for TIMESTAMP
    # (wall clock), UTC for TIMESTAMP WITH LOCAL TIME ZONE; a naive literal counts as UTC.
    if isinstance(value, datetime) and isinstance(data_type, T.AtomicType):
        if data_type.root == T.TIMESTAMP_LTZ:
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        if data_type.root == T.TIMESTAMP and value.tzinfo is not None:
            return value.astimezone(UTC).replace(tzinfo=None)
    return value


def columns_of(dnf: Dnf | None) -> set[str]:
    return {t.column for group in dnf or () for t in group}


# --- exact filtering ---------------------------------------------------------------------------


def to_expression(dnf: Dnf) -> pc.Expression:
    """The filter as a pyarrow compute expression (for datasets and tables)."""
    ors = []
    for group in dnf:
        ands = [_term_expression(t) for t in group]
        expr = ands[0]
        for other in ands[1:]:
            expr = expr & other
        ors.append(expr)
    result = ors[0]
    for other in ors[1:]:
        result = result | other
    return result


def _scalar(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return pa.scalar(value, pa.timestamp("us", tz="UTC"))
    return value


def _term_expression(t: Term) -> pc.Expression:
    field = pc.field(t.column)
    if t.value is None:
        return field.is_null() if t.op == "=" else field.is_valid()
    if t.op == "in":
        return field.isin(list(t.value))
    if t.op == "not in":
        return ~field.isin(list(t.value)) & field.is_valid()
    value = _scalar(t.value)
    return {
        "=": lambda: field == value,
        "!=": lambda: field != value,
        "<": lambda: field < value,
        "<=": lambda: field <= value,
        ">": lambda: field > value,
        ">=": lambda: field >= value,
    }[t.op]()


# --- pruning -----------------------------------------------------------------------------------


def may_match(dnf: Dnf | None, lookup: StatsLookup) -> bool:
    """False only when statistics prove that no row matches."""
    if dnf is None:
        return True
    return any(all(_term_may_match(t, lookup(t.column)) for t in group) for group in dnf)


def _term_may_match(t: Term, stats: ColumnStats | None) -> bool:
    if stats is None:
        return True
    try:
        return _may_match(t, stats)
    except TypeError:  # values of types that do not compare: no proof either way
        return True


def _may_match(t: Term, s: ColumnStats) -> bool:
    all_null = s.null_count is not None and s.null_count >= s.row_count
    if t.value is None:
        if t.op == "=":
            return s.null_count is None or s.null_count > 0
        return not all_null
    if all_null:
        return False
    low, high = s.min, s.max
    if t.op == "in":
        return any(_in_range(v, low, high) for v in t.value)
    if t.op == "not in":
        return not (low is not None and low == high and low in t.value)
    v = t.value
    if t.op == "=":
        return _in_range(v, low, high)
    if t.op == "!=":
        return not (low is not None and low == high == v)
    if t.op == "<":
        return low is None or low < v
    if t.op == "<=":
        return low is None or low <= v
    if t.op == ">":
        return high is None or high > v
    return high is None or high >= v


def _in_range(v: Any, low: Any, high: Any) -> bool:
    return (low is None or low <= v) and (high is None or v <= high)


def exact_stats(value: Any) -> ColumnStats:
    """Statistics of a single known value (a partition value)."""
    return ColumnStats(value, value, 1 if value is None else 0, 1)
