"""Rows out as Arrow streams and data frames: a ``pa.RecordBatchReader`` over a read's
batches (the batches themselves, no copy), and the pandas and polars frames made of it.

A reader is lazy: each batch is read from the data files when the consumer asks for
it, so a read handed to DuckDB or polars through the Arrow C stream interface never
holds more than the batches the consumer keeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from shoal.errors import MissingDependencyError


def batch_reader(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> pa.RecordBatchReader:
    """A reader of ``batches`` with ``schema``, reading each batch only when the consumer
    asks for it (nothing is read before). A batch whose schema differs from it only in
    field metadata or nullability is passed on with the reader's schema, sharing its
    buffers."""
    return pa.RecordBatchReader.from_batches(schema, (_as(batch, schema) for batch in batches))


def _as(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if batch.schema.equals(schema, check_metadata=True):
        return batch
    return pa.RecordBatch.from_arrays(batch.columns, schema=schema)


def to_pandas(reader: pa.RecordBatchReader, **options: Any) -> Any:
    """A pandas DataFrame of the reader's rows (``options`` go to ``pa.Table.to_pandas``).

    Raises:
        MissingDependencyError: pandas is not installed (the ``pandas`` extra).
    """
    table = reader.read_all()
    try:
        return table.to_pandas(**options)
    except ModuleNotFoundError as exc:  # pyarrow imports pandas to convert
        if exc.name != "pandas":
            raise
        raise MissingDependencyError("to_pandas", "pandas", "pandas") from exc


def to_polars(reader: pa.RecordBatchReader) -> Any:
    """A polars DataFrame of the reader's rows, which polars takes over the Arrow C
    stream interface (its buffers are the batches' own where polars' types allow).

    Raises:
        MissingDependencyError: polars is not installed (the ``polars`` extra).
    """
    try:
        import polars
    except ImportError as exc:
        raise MissingDependencyError("to_polars", "polars", exc.name or "polars") from exc
    return polars.DataFrame(reader)
