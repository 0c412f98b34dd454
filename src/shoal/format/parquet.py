"""Paimon's Parquet layout of each data type, as Arrow types to write and read.

Paimon (Java, 0.9 and 1.0) stores, and its readers expect:

- DECIMAL of precision <= 9 as INT32, <= 18 as INT64, larger as a fixed-length array;
- TIME of any precision as INT32 milliseconds of the day (TIME_MILLIS);
- TIMESTAMP and TIMESTAMP_LTZ of precision <= 3 as INT64 milliseconds, <= 6 as INT64
  microseconds, larger as INT96 (its reader refuses anything else there, and refuses
  INT96 for precision <= 6);
- no Parquet field ids; a NOT NULL column REQUIRED, any other OPTIONAL; lists as the
  three-level ``list``/``element`` groups, maps as ``key_value`` groups.

Parquet writers choose INT96 for every timestamp column of a file or for none. A file
with a timestamp column of precision > 6 therefore holds its other timestamp columns
as INT64 without annotation, in the same units (milliseconds up to precision 3,
microseconds up to 6): Paimon's reader takes the unit from the column's precision,
not from the annotation. Reading maps such columns back by that same rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pyarrow as pa

from shoal.errors import SchemaMismatchError


def _leaf_types(t: pa.DataType) -> Iterable[pa.DataType]:
    if pa.types.is_list(t):
        yield from _leaf_types(t.value_type)
    elif pa.types.is_map(t):
        yield from _leaf_types(t.key_type)
        yield from _leaf_types(t.item_type)
    elif pa.types.is_struct(t):
        for f in t:
            yield from _leaf_types(f.type)
    else:
        yield t


def stored_unit(precision: int) -> str:
    """The unit Paimon stores a timestamp of ``precision`` in."""
    return "ms" if precision <= 3 else "us" if precision <= 6 else "ns"


def _is_int96(t: pa.DataType) -> bool:
    # shoal's Arrow type of TIMESTAMP(p) has unit "ns" exactly when p > 6.
    return bool(pa.types.is_timestamp(t) and t.unit == "ns")


def needs_int96(schema: pa.Schema) -> bool:
    """Whether a file of ``schema`` (a table's Arrow schema, or a primary-key table's
    file schema) holds an INT96 column, anywhere in a nested type."""
    return any(_is_int96(leaf) for f in schema for leaf in _leaf_types(f.type))


def _nested(t: pa.DataType, leaf: Callable[[pa.DataType], pa.DataType]) -> pa.DataType:
    """``t`` with ``leaf`` applied to every type that is not a list, map or struct."""
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_nested(t.value_type, leaf)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_nested(t.key_type, leaf)),
            t.item_field.with_type(_nested(t.item_type, leaf)),
        )
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_nested(f.type, leaf)) for f in t])
    return leaf(t)


def _in_stored_unit(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t) and t.unit == "s":
        return pa.timestamp("ms", t.tz)
    if pa.types.is_time(t):
        return pa.time32("ms")
    return t


def _int96_file_leaf(t: pa.DataType) -> pa.DataType:
    if pa.types.is_timestamp(t) and not _is_int96(t):
        return pa.int64()
    return _in_stored_unit(t)


def stored_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema to hand the Parquet writer for a file of ``schema`` (a table's
    Arrow schema, or a primary-key table's file schema)."""
    leaf = _int96_file_leaf if needs_int96(schema) else _in_stored_unit
    return pa.schema([f.with_type(_nested(f.type, leaf)) for f in schema])


def read_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` (a table's Arrow schema) with times and timestamps in the units Paimon
    stores them in, so a column stored as INT64 without annotation reads right; cast the
    result to ``schema``."""
    return pa.schema([f.with_type(_nested(f.type, _in_stored_unit)) for f in schema])


def as_table_types(table: Any, schema: pa.Schema) -> Any:
    """A table or batch read from a data file (without a schema imposed on the read) in
    the types of ``schema``."""
    if table.schema.equals(schema):
        return table
    return table.cast(read_schema(schema)).cast(schema)


def to_stored(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` in the Arrow types of ``schema`` (from :func:`stored_schema`): times
    and timestamps in their stored units first, then any timestamps as integers.

    Raises:
        SchemaMismatchError: a TIME value with a part below the millisecond, which
            Paimon's TIME does not hold.
    """
    if table.schema.equals(schema):
        return table
    try:
        return table.cast(read_schema(table.schema)).cast(schema)
    except pa.ArrowInvalid as exc:
        raise SchemaMismatchError(
            f"a value does not fit Paimon's stored form ({exc}); TIME values are kept to "
            "the millisecond"
        ) from None


def writer_options(schema: pa.Schema) -> dict[str, Any]:
    """The ``pyarrow.parquet.ParquetWriter`` options of Paimon's layout for a file of
    ``schema`` (as :func:`stored_schema` gives it)."""
    return {
        "store_decimal_as_integer": True,
        "use_deprecated_int96_timestamps": needs_int96(schema),
        "write_time_adjusted_to_utc": True,
    }
