"""Spark's pushed filters as shoal DNF filters.

A filter Spark pushes is accepted only when shoal applies it *exactly* as Spark
would, because Spark drops every accepted filter from its plan:

- comparisons on float and double columns are refused: Spark orders NaN above every
  number and calls NaN equal to itself, Arrow does neither (null checks are fine);
- comparisons on timestamps finer than microseconds are refused: Spark sees those
  values truncated to microseconds, Arrow compares them whole;
- ``c IN (..., NULL)`` drops the null (it never matches in a filter), and
  ``NOT (c IN (..., NULL))`` is refused (it matches nothing, Spark can say so);
- string prefix, suffix and substring filters are refused (shoal's DNF has none).

Every filter is one conjunct of Spark's condition, but ``NOT (c <=> v)`` becomes an
OR (``c != v OR c IS NULL``), so the accepted filters are combined into DNF by
distributing the ANDs, up to :data:`MAX_GROUPS` groups; filters beyond that go back
to Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyspark.sql import datasource as D

from shoal.errors import InvalidFilterError
from shoal.spec import types as T
from shoal.table import predicate as P

Term = tuple[str, str, Any]
RawDnf = list[list[Term]]

MAX_GROUPS = 32

_OPS: dict[type[D.Filter], tuple[str, str]] = {
    # filter class: (operator, operator of its negation)
    D.EqualTo: ("=", "!="),
    D.GreaterThan: (">", "<="),
    D.GreaterThanOrEqual: (">=", "<"),
    D.LessThan: ("<", ">="),
    D.LessThanOrEqual: ("<=", ">"),
}

_ORDERED = {
    T.BOOLEAN,
    T.TINYINT,
    T.SMALLINT,
    T.INT,
    T.BIGINT,
    T.DECIMAL,
    T.CHAR,
    T.VARCHAR,
    T.DATE,
    T.TIMESTAMP,
    T.TIMESTAMP_LTZ,
}
_MICROS = 6


def _comparable(t: T.DataType) -> bool:
    """Whether Arrow compares values of ``t`` as Spark does."""
    if not isinstance(t, T.AtomicType) or t.root not in _ORDERED:
        return False
    if t.root in (T.TIMESTAMP, T.TIMESTAMP_LTZ):
        return (t.precision or 0) <= _MICROS
    return True


class FilterTranslator:
    """Turns Spark filters into one shoal DNF over a table's columns.

    ``columns`` maps the names Spark uses (the read schema's) to table columns;
    ``types`` holds the table columns' Paimon types.
    """

    def __init__(self, columns: Mapping[str, str], types: Mapping[str, T.DataType]) -> None:
        self._columns = columns
        self._types = dict(types)

    def push(self, filters: Sequence[D.Filter]) -> tuple[RawDnf | None, list[D.Filter]]:
        """The DNF of the accepted filters (None if none) and the filters Spark keeps."""
        combined: RawDnf | None = None
        rejected: list[D.Filter] = []
        for f in filters:
            dnf = self._one(f)
            if dnf is None or (combined is not None and len(combined) * len(dnf) > MAX_GROUPS):
                rejected.append(f)
                continue
            combined = dnf if combined is None else [a + b for a in combined for b in dnf]
        return combined, rejected

    def _one(self, f: D.Filter) -> RawDnf | None:
        dnf = self._translate(f, negate=False)
        if dnf is None:
            return None
        try:
            P.parse_filter(dnf, self._types)  # values that do not fit the column's type
        except InvalidFilterError:
            return None
        return dnf

    def _column(self, f: D.Filter) -> str | None:
        attribute = getattr(f, "attribute", None)
        if not isinstance(attribute, tuple) or len(attribute) != 1:
            return None  # a nested field
        return self._columns.get(attribute[0])

    def _translate(self, f: D.Filter, *, negate: bool) -> RawDnf | None:
        if isinstance(f, D.Not):
            return self._translate(f.child, negate=not negate)
        column = self._column(f)
        if column is None:
            return None
        if isinstance(f, D.IsNull | D.IsNotNull):
            is_null = isinstance(f, D.IsNull) != negate
            return [[(column, "=" if is_null else "!=", None)]]
        if not _comparable(self._types[column]):
            return None
        handler = _HANDLERS.get(type(f))
        return handler(column, f, negate) if handler is not None else None


def _comparison(column: str, f: D.Filter, negate: bool) -> RawDnf | None:
    value = getattr(f, "value", None)
    if value is None:
        return None  # a comparison with null is never true; Spark folds it
    op, negated = _OPS[type(f)]
    return [[(column, negated if negate else op, value)]]


def _null_safe_equal(column: str, f: D.Filter, negate: bool) -> RawDnf | None:
    value = getattr(f, "value", None)
    if value is None:
        return [[(column, "!=" if negate else "=", None)]]
    if negate:
        return [[(column, "!=", value)], [(column, "=", None)]]
    return [[(column, "=", value)]]


def _in(column: str, f: D.Filter, negate: bool) -> RawDnf | None:
    assert isinstance(f, D.In)
    values = [v for v in f.value if v is not None]
    if not values or (negate and len(values) != len(f.value)):
        return None
    return [[(column, "not in" if negate else "in", values)]]


_HANDLERS: dict[type[D.Filter], Callable[[str, D.Filter, bool], RawDnf | None]] = {
    D.EqualTo: _comparison,
    D.GreaterThan: _comparison,
    D.GreaterThanOrEqual: _comparison,
    D.LessThan: _comparison,
    D.LessThanOrEqual: _comparison,
    D.EqualNullSafe: _null_safe_equal,
    D.In: _in,
}
