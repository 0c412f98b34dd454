"""Paimon types as Spark types, and Arrow batches in exactly the form Spark expects.

Spark checks the first batch a Python data source yields against the Arrow form of
the schema it planned with (``pyspark.sql.pandas.types.to_arrow_schema``): microsecond
timestamps (UTC for ``TIMESTAMP_LTZ``), ``string`` not ``large_string``, nullable
fields, columns in order. shoal's files hold millisecond or nanosecond timestamps,
non-nullable key columns and so on, so every batch is cast before it is yielded.

Every Spark field is nullable: Spark's own file sources read that way, and a field
declared NOT NULL would make any file written by another engine with a null there
fail the read instead of showing the null.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
from pyspark.sql import types as S

from shoal.errors import UnsupportedFeatureError
from shoal.format import types as T

_ATOMIC: dict[str, S.DataType] = {
    T.BOOLEAN: S.BooleanType(),
    T.TINYINT: S.ByteType(),
    T.SMALLINT: S.ShortType(),
    T.INT: S.IntegerType(),
    T.BIGINT: S.LongType(),
    T.FLOAT: S.FloatType(),
    T.DOUBLE: S.DoubleType(),
    T.CHAR: S.StringType(),
    T.VARCHAR: S.StringType(),
    T.BINARY: S.BinaryType(),
    T.VARBINARY: S.BinaryType(),
    T.DATE: S.DateType(),
    # Paimon's TIMESTAMP is wall-clock time (Spark's TIMESTAMP_NTZ); TIMESTAMP WITH
    # LOCAL TIME ZONE is an instant (Spark's TIMESTAMP).
    T.TIMESTAMP: S.TimestampNTZType(),
    T.TIMESTAMP_LTZ: S.TimestampType(),
}

_MAX_DECIMAL_PRECISION = 38
_MAX_TIME_PRECISION = 6


def spark_type(t: T.DataType) -> S.DataType:
    """The Spark type that holds values of the Paimon type ``t``.

    Raises:
        UnsupportedFeatureError: a DECIMAL wider than Spark's 38 digits.
    """
    if isinstance(t, T.ArrayType):
        return S.ArrayType(spark_type(t.element), containsNull=True)
    if isinstance(t, T.MapType):
        return S.MapType(spark_type(t.key), spark_type(t.value), valueContainsNull=True)
    if isinstance(t, T.RowType):
        return S.StructType([S.StructField(f.name, spark_type(f.type), True) for f in t.fields])
    found = _ATOMIC.get(t.root)
    if found is not None:
        return found
    if t.root == T.DECIMAL:
        assert t.precision is not None
        assert t.scale is not None
        if t.precision > _MAX_DECIMAL_PRECISION:
            raise UnsupportedFeatureError(
                f"DECIMAL({t.precision}, {t.scale}) is wider than Spark's 38 digits; "
                "leave the column out with the 'columns' read option"
            )
        return S.DecimalType(t.precision, t.scale)
    if t.root == T.TIME:
        return S.TimeType(min(t.precision or 0, _MAX_TIME_PRECISION))
    raise UnsupportedFeatureError(
        f"Spark has no type for Paimon's {t.root}; leave the column out with the "
        "'columns' read option"
    )


def spark_schema(fields: Sequence[T.DataField]) -> S.StructType:
    """A table's columns (or some of them) as a Spark schema, every field nullable."""
    return S.StructType([S.StructField(f.name, spark_type(f.type), True) for f in fields])


def arrow_target(schema: S.StructType) -> pa.Schema:
    """The Arrow schema Spark checks the yielded batches against."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def exact_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` (same columns, in order) cast to ``target``.

    Timestamps and times narrow to microseconds by truncation, as Spark keeps no more;
    every other cast refuses to change a value (a user schema that declares a narrower
    type than the table's fails on the first value that does not fit).
    """
    if batch.schema.equals(target):
        return batch
    columns = []
    for column, field in zip(batch.columns, target, strict=True):
        if column.type.equals(field.type):
            columns.append(column)
        else:
            lossy = _holds_time(column.type)
            columns.append(column.cast(field.type, safe=not lossy))
    return pa.RecordBatch.from_arrays(columns, schema=target)


def _holds_time(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t) or pa.types.is_time(t):
        return True
    if pa.types.is_map(t):
        return _holds_time(t.key_type) or _holds_time(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _holds_time(t.value_type)
    if pa.types.is_struct(t):
        return any(_holds_time(t.field(i).type) for i in range(t.num_fields))
    return False
