"""Bringing user data to the table's Arrow schema, or refusing it before anything is written.

A column is cast when the cast cannot change a value: within one family of types
(integers, floats, strings, binaries, decimals, timestamps, dates), checked value
by value, so an int64 column of small numbers fits an INT column but 2**40 does
not. Anything else raises :class:`SchemaMismatchError`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from shoal.errors import SchemaMismatchError

_FAMILIES: tuple[tuple[str, Any], ...] = (
    ("integer", pa.types.is_integer),
    ("float", pa.types.is_floating),
    ("decimal", pa.types.is_decimal),
    (
        "string",
        lambda t: (
            pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
        ),
    ),
    (
        "binary",
        lambda t: (
            pa.types.is_binary(t)
            or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t)
            or pa.types.is_binary_view(t)
        ),
    ),
    ("timestamp", pa.types.is_timestamp),
    ("date", pa.types.is_date),
    ("time", pa.types.is_time),
    ("boolean", pa.types.is_boolean),
    ("list", lambda t: pa.types.is_list(t) or pa.types.is_large_list(t)),
    ("map", pa.types.is_map),
    ("struct", pa.types.is_struct),
)


def _family(t: pa.DataType) -> str | None:
    if pa.types.is_dictionary(t):
        return _family(t.value_type)
    for name, check in _FAMILIES:
        if check(t):
            return name
    return None


ACCEPTED = (
    "a pyarrow Table, RecordBatch or RecordBatchReader, a pandas DataFrame, a dict of "
    "columns, an iterable of RecordBatches or Tables, or any object with "
    "__arrow_c_stream__ or __arrow_c_array__ (a polars DataFrame, a DuckDB relation)"
)


class BatchStream:
    """The batches of an iterable input, consumed once, with the schema of the first
    (each batch is conformed to the table on its own)."""

    def __init__(self, schema: pa.Schema, batches: Iterator[pa.RecordBatch | pa.Table]) -> None:
        self.schema = schema
        self._batches = batches

    def __iter__(self) -> Iterator[pa.RecordBatch | pa.Table]:
        return self._batches


def to_batches(data: Any) -> pa.Table | pa.RecordBatchReader | BatchStream:
    """A user's data as an Arrow table, or as a stream of batches read as the writer
    consumes them. Streams (a RecordBatchReader, an ``__arrow_c_stream__`` object, an
    iterable of batches) are not read here; Arrow data is taken over without a copy.

    Raises:
        SchemaMismatchError: ``data`` is none of the accepted kinds.
    """
    if isinstance(data, pa.Table | pa.RecordBatchReader):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if type(data).__module__.split(".")[0] == "pandas" and type(data).__name__ == "DataFrame":
        return pa.Table.from_pandas(data, preserve_index=False)
    if isinstance(data, dict):
        try:
            return pa.table(data)
        except (TypeError, ValueError) as exc:  # pyarrow.ArrowInvalid is a ValueError
            raise SchemaMismatchError(f"cannot make a table of the dict: {exc}") from None
    if hasattr(data, "__arrow_c_stream__"):
        try:
            return pa.RecordBatchReader.from_stream(data)
        except (TypeError, ValueError) as exc:  # pyarrow.ArrowTypeError is a TypeError
            raise SchemaMismatchError(
                f"cannot write a {type(data).__name__}: its Arrow stream is not one of "
                f"batches of columns ({exc}); pass {ACCEPTED}"
            ) from None
    if hasattr(data, "__arrow_c_array__"):
        try:
            return pa.Table.from_batches([pa.record_batch(data)])
        except (TypeError, ValueError) as exc:
            raise SchemaMismatchError(
                f"cannot write a {type(data).__name__}: its Arrow array is not a struct "
                f"of columns ({exc}); pass {ACCEPTED}"
            ) from None
    if isinstance(data, Iterable) and not isinstance(data, str | bytes | Mapping):
        return _stream(iter(data))
    raise SchemaMismatchError(f"cannot write a {type(data).__name__}: pass {ACCEPTED}")


def _stream(items: Iterator[Any]) -> pa.Table | BatchStream:
    first = next(items, None)
    if first is None:
        raise SchemaMismatchError(
            "the iterable of batches is empty, so it has no schema; pass an empty "
            "pyarrow Table or RecordBatchReader to write no rows"
        )
    _check_item(first)
    return BatchStream(first.schema, (_check_item(b) for b in itertools.chain([first], items)))


def _check_item(item: Any) -> pa.RecordBatch | pa.Table:
    if not isinstance(item, pa.RecordBatch | pa.Table):
        raise SchemaMismatchError(
            f"an iterable to write must yield pyarrow RecordBatches or Tables, not "
            f"{type(item).__name__}; pass {ACCEPTED}"
        )
    return item


def conform(data: pa.Table | pa.RecordBatch, schema: pa.Schema) -> pa.Table:
    """``data`` with exactly ``schema``'s columns, in order, cast losslessly.

    Raises:
        SchemaMismatchError: missing or extra columns, a type that does not cast
            without loss, or nulls in a NOT NULL column.
    """
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    names = set(data.column_names)
    missing = [f.name for f in schema if f.name not in names]
    extra = sorted(names - set(schema.names))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if extra:
            parts.append(f"unknown columns {extra}")
        raise SchemaMismatchError(
            f"data does not match the table schema: {'; '.join(parts)}. "
            f"The table has columns {schema.names}"
        )
    if data.schema.equals(schema, check_metadata=False) and data.column_names == schema.names:
        return data
    columns = [_conform_column(data.column(f.name), f) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _conform_column(column: pa.ChunkedArray, field: pa.Field) -> pa.ChunkedArray:
    if not field.nullable and column.null_count:
        raise SchemaMismatchError(
            f"column {field.name!r} is NOT NULL but the data holds {column.null_count} nulls"
        )
    if column.type.equals(field.type):
        return column
    source, target = _family(column.type), _family(field.type)
    if column.type == pa.null():
        return pa.nulls(len(column), field.type) if field.nullable else column
    if source is None or source != target:
        raise SchemaMismatchError(
            f"column {field.name!r} is {column.type} in the data but {field.type} in the "
            "table; cast it before writing"
        )
    try:
        return column.cast(field.type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatchError(
            f"column {field.name!r} does not fit {field.type} without losing values: {exc}"
        ) from None
