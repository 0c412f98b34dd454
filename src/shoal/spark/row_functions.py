"""Row-level deletes and updates as SQL table functions.

:func:`shoal.spark.register_functions` registers them with the other table
functions::

    SELECT * FROM shoal_delete_where('/data/wh/db.db/events', "dt = '2026-11-01' and v > 3")
    SELECT * FROM shoal_update_where('/data/wh/db.db/events', 'id = 7', '{"v": "seven"}')

Each runs ``Table.delete_where`` or ``Table.update_where`` once, as one atomic
commit, in the one task that evaluates it, and returns one row: the snapshot it
committed, its commit kind and the rows it deleted or updated. The filter is text in
shoal's filter grammar (as for ``Table.scan``). The values to set are a JSON object
string, because a JSON object keeps each value's own type where a Spark ``MAP``
coerces its values to one type (``map('n', 0, 'v', 'x')`` is a map of strings); each
value must fit its column exactly, as for ``Table.update_where``. Dates, times and
timestamps are ISO strings, decimals are JSON numbers read as decimals (``1.10`` is
exact), and a number for a floating-point column must be written as the double it
means (``0.1``, not ``1e400``). Anything else (a MAP, a number, a NULL, a repeated
key, a string that is not JSON) is refused with ``InvalidArgumentError`` before the table is read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import pyarrow as pa

from shoal.errors import InvalidArgumentError
from shoal.row_ops import RowOpResult, delete_where, update_where
from shoal.table import Table

__all__ = [
    "DELETE_RESULT",
    "UPDATE_RESULT",
    "DeleteWhereFunction",
    "UpdateWhereFunction",
    "column_values",
    "parse_set",
]

Row = tuple[Any, ...]

DELETE_RESULT = "snapshot_id bigint, commit_kind string, rows_deleted bigint"
UPDATE_RESULT = "snapshot_id bigint, commit_kind string, rows_updated bigint"


def _text(value: Any, function: str, argument: str, example: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(
            f"{function}: {argument} must be a non-empty string, such as {example}, not {value!r}"
        )
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidArgumentError(f"shoal_update_where: column {key!r} is set twice")
        out[key] = value
    return out


def parse_set(text: Any) -> dict[str, Any]:
    """The ``set`` argument of ``shoal_update_where``: a JSON object of column names to
    values, numbers with a fraction or exponent read as decimals.

    Raises:
        InvalidArgumentError: for anything but a non-empty JSON object string with each
            column once.
    """
    example = """'{"v": "x", "n": 0}'"""
    if not isinstance(text, str):
        raise InvalidArgumentError(
            f"shoal_update_where: set must be a JSON object string such as {example}, "
            f"not {type(text).__name__} {text!r} (a MAP would coerce its values to one type)"
        )
    try:
        values = json.loads(text, parse_float=Decimal, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(
            f"shoal_update_where: set is not JSON ({exc}); write it as {example}"
        ) from None
    if not isinstance(values, dict) or not values:
        raise InvalidArgumentError(
            f"shoal_update_where: set must be a JSON object with a column, such as "
            f"{example}, not {text!r}"
        )
    return values


def column_values(values: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
    """The values of :func:`parse_set` as the Python values ``Table.update_where``
    takes for ``schema``'s columns; whether each fits exactly is its check."""
    out = {}
    for name, value in values.items():
        index = schema.get_field_index(name)
        # an unknown column is refused by update_where, naming the table's columns
        out[name] = value if index < 0 else _value(schema.field(index), value)
    return out


def _value(field: pa.Field, value: Any) -> Any:
    """A JSON value as the Python value of ``field``'s type; whether it fits exactly is
    ``update_where``'s check."""
    kind = field.type
    if isinstance(value, Decimal) and not pa.types.is_decimal(kind):
        # a JSON number with a fraction or exponent, as the double written the same way
        number = float(value)
        if not value.is_finite() or Decimal(repr(number)) != value:
            raise InvalidArgumentError(
                f"shoal_update_where: {value} for column {field.name!r} ({kind}) is no "
                f"double as written (the nearest is {number!r}); write that value"
            )
        return number
    if isinstance(value, int) and not isinstance(value, bool) and pa.types.is_decimal(kind):
        return Decimal(value)
    if isinstance(value, dict) and pa.types.is_map(kind):
        return list(value.items())
    if not isinstance(value, str):
        return value
    parse: Any = None
    if pa.types.is_date(kind):
        parse = date.fromisoformat
    elif pa.types.is_timestamp(kind):
        parse = datetime.fromisoformat
    elif pa.types.is_time(kind):
        parse = time.fromisoformat
    if parse is None:
        return value
    try:
        return parse(value)
    except ValueError:
        raise InvalidArgumentError(
            f"shoal_update_where: {value!r} is not an ISO {parse.__qualname__.split('.')[0]} "
            f"for column {field.name!r} ({kind})"
        ) from None


def _row(result: RowOpResult) -> Row:
    return (result.snapshot.id, result.snapshot.commit_kind, result.rows)


class DeleteWhereFunction:
    """``shoal_delete_where(path, filter)``: ``Table.delete_where``, one row."""

    storage: tuple[tuple[str, str], ...] = ()  # set by register_functions(storage_options=)

    def eval(self, path: Any, filter: Any) -> Iterator[Row]:
        path = _text(path, "shoal_delete_where", "path", "'/data/wh/db.db/events'")
        where = _text(filter, "shoal_delete_where", "filter", "\"dt = '2026-11-01'\"")
        table = Table.open(path, storage_options=dict(self.storage))
        yield _row(delete_where(table._transaction(), where))


class UpdateWhereFunction:
    """``shoal_update_where(path, filter, set)``: ``Table.update_where`` with the values
    of the JSON object ``set``, one row."""

    storage: tuple[tuple[str, str], ...] = ()  # set by register_functions(storage_options=)

    def eval(self, path: Any, filter: Any, set: Any) -> Iterator[Row]:
        path = _text(path, "shoal_update_where", "path", "'/data/wh/db.db/events'")
        where = _text(filter, "shoal_update_where", "filter", "'id = 7'")
        values = parse_set(set)
        table = Table.open(path, storage_options=dict(self.storage))
        values = column_values(values, table.schema)
        yield _row(update_where(table._transaction(), where, values))
