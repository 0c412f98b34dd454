"""Paimon's ORC layout of each data type, as Arrow types to write and read.

Paimon (Java, 0.9 and 1.0) maps its types to ORC types one to one, with two rules
that differ from Arrow's own ORC mapping:

- TIME of any precision is an ORC ``int``: milliseconds of the day;
- BINARY(n) and VARBINARY(n) other than BYTES have no ORC type (Paimon refuses them).

TIMESTAMP is ORC's ``timestamp``, TIMESTAMP_LTZ its ``timestamp with local time zone``
(Arrow's ORC adapter writes and reads both as nanoseconds, the latter with the UTC
zone); CHAR(n) and VARCHAR(n) are read as strings; nullability is not stored (every
ORC column may hold nulls). Columns are matched by name, as Paimon's reader does.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from shoal.errors import SchemaMismatchError, UnsupportedFeatureError
from shoal.format import types as T


def unstorable(t: T.DataType) -> str | None:
    """Why Paimon's ORC files cannot hold values of ``t`` (None when they can)."""
    if isinstance(t, T.ArrayType):
        return unstorable(t.element)
    if isinstance(t, T.MapType):
        return unstorable(t.key) or unstorable(t.value)
    if isinstance(t, T.RowType):
        return next((r for f in t.fields if (r := unstorable(f.type))), None)
    if t.root == T.BINARY or (t.root == T.VARBINARY and t.precision != T.MAX_LENGTH):
        return f"ORC holds binary values only as BYTES, not {T.type_string(t)}"
    return None


def _stored(t: pa.DataType) -> pa.DataType:
    """The Arrow type the ORC writer is handed for values of ``t``."""
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_stored(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_stored(t.key_type)),
            t.item_field.with_type(_stored(t.item_type)),
        )
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_stored(f.type)) for f in t])
    if pa.types.is_time(t):
        return pa.int32()
    return t


def _millis(t: pa.DataType) -> pa.DataType:
    """``t`` with times as milliseconds (the unit ORC's integers hold)."""
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_millis(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_millis(t.key_type)),
            t.item_field.with_type(_millis(t.item_type)),
        )
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_millis(f.type)) for f in t])
    if pa.types.is_time(t):
        return pa.time32("ms")
    return t


def stored_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema to hand the ORC writer for a file of ``schema`` (a table's
    Arrow schema, or a primary-key table's file schema)."""
    return pa.schema([pa.field(f.name, _stored(f.type)) for f in schema])


def to_stored(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` in the Arrow types of ``schema`` (from :func:`stored_schema`).

    Raises:
        SchemaMismatchError: a TIME value with a part below the millisecond, which
            Paimon's TIME does not hold.
    """
    millis = pa.schema([pa.field(f.name, _millis(f.type)) for f in table.schema])
    try:
        return table.cast(millis).cast(schema)
    except pa.ArrowInvalid as exc:
        raise SchemaMismatchError(
            f"a value does not fit Paimon's stored form ({exc}); TIME values are kept to "
            "the millisecond"
        ) from None


def as_table_types(table: Any, schema: pa.Schema) -> Any:
    """A table or batch read from an ORC file (columns of ``schema``, by name) in the
    types of ``schema``: times from their milliseconds, timestamps from nanoseconds.

    Raises:
        UnsupportedFeatureError: a timestamp finer than its column's precision. Java
            Paimon's ORC writer keeps the digits of a finer value (Spark's microseconds
            in a TIMESTAMP(3) column) and its readers return them; shoal reads a column
            at its precision and does not drop them silently.
    """
    if table.schema.equals(schema):
        return table
    millis = pa.schema([f.with_type(_millis(f.type)) for f in schema])
    try:
        return table.cast(millis).cast(schema)
    except pa.ArrowInvalid as exc:
        raise UnsupportedFeatureError(
            f"an ORC data file holds a value finer than its column's type ({exc}), as Java "
            "Paimon's ORC writer keeps them; read the digits exactly by widening the column "
            "(e.g. to TIMESTAMP(6): Table.update_schema().update_column_type)",
            feature="ORC values finer than their column",
        ) from None
