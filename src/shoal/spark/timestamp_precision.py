"""Spark's microsecond timestamps written into coarser timestamp columns.

Spark keeps timestamps in microseconds; a Paimon ``TIMESTAMP(3)`` or
``TIMESTAMP_LTZ(3)`` column holds milliseconds (``TIMESTAMP(0)`` seconds). shoal never
drops digits unasked: a value with digits below the column's unit fails the write,
naming the write option ``timestamp-precision-truncate``. With that option, each such
value is truncated to the column's unit toward negative infinity (floor), so a time
before 1970 keeps its earlier millisecond (``1969-12-31 23:59:59.999999`` becomes
``23:59:59.999``, not ``1970-01-01 00:00:00``): the value Paimon's own Spark writer
stores in Parquet and Avro files (``Timestamp.fromMicros`` floors, then the file keeps
the milliseconds; its ORC files keep the finer digits), and Spark's Parquet writer with
``outputTimestampType = TIMESTAMP_MILLIS``. Top-level
columns only: a coarser timestamp inside a struct, array or map is still refused.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from shoal.errors import SchemaMismatchError

TRUNCATE_OPTION = "timestamp-precision-truncate"

_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def fit_timestamps(batch: pa.RecordBatch, table: pa.Schema, *, truncate: bool) -> pa.RecordBatch:
    """``batch`` (named as the table's columns) with every timestamp column finer than
    the table's column of that name floored to the table's unit when ``truncate``;
    unchanged where nothing would be lost.

    Raises:
        SchemaMismatchError: without ``truncate``, a value with digits below the
            table column's unit.
    """
    columns = list(batch.columns)
    changed = False
    for i, field in enumerate(batch.schema):
        index = table.get_field_index(field.name)
        if index < 0:
            continue
        target = table.field(index).type
        factor = _coarsening(field.type, target)
        if factor is None:
            continue
        ticks = batch.column(i).cast(pa.int64())
        floored = floor_divide(ticks, factor)
        if not truncate:
            lost = pc.not_equal(pc.multiply(floored, factor), ticks)
            if pc.any(lost).as_py():
                raise SchemaMismatchError(
                    f"column {field.name!r} holds timestamps with digits below the "
                    f"{target.unit} of the table's column ({target}); give the write option "
                    f"{TRUNCATE_OPTION} = true to truncate them (toward negative infinity), "
                    "or round them before writing"
                )
            continue
        assert isinstance(field.type, pa.TimestampType)
        columns[i] = floored.cast(pa.timestamp(target.unit, tz=field.type.tz))
        changed = True
    if not changed:
        return batch
    names = batch.schema.names
    return pa.RecordBatch.from_arrays(columns, names=names)


def floor_divide(ticks: pa.Array, factor: int) -> pa.Array:
    """``ticks // factor`` rounded toward negative infinity (Arrow's integer division
    rounds toward zero); nulls stay null."""
    quotient = pc.divide(ticks, factor)
    # toward zero overshoots by one for a negative value with a remainder
    over = pc.greater(pc.multiply(quotient, factor), ticks)
    return pc.subtract(quotient, pc.cast(over, pa.int64()))


def _coarsening(source: pa.DataType, target: pa.DataType) -> int | None:
    """How many ``source`` ticks make one ``target`` tick, when both are timestamps and
    ``target`` is coarser; else None."""
    if not (pa.types.is_timestamp(source) and pa.types.is_timestamp(target)):
        return None
    assert isinstance(source, pa.TimestampType)
    assert isinstance(target, pa.TimestampType)
    fine, coarse = _PER_SECOND[source.unit], _PER_SECOND[target.unit]
    return fine // coarse if fine > coarse else None
