"""Writes take anything that speaks Arrow: polars and pandas frames, DuckDB relations,
RecordBatchReaders, iterables of batches, ``__arrow_c_stream__`` and
``__arrow_c_array__`` objects; Arrow buffers reach the writer without a copy, and any
other input is refused with a typed error before anything is committed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import shoal
from shoal.write.conform import conform, to_batches
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows


@pytest.fixture
def keyed(catalog: shoal.Catalog) -> shoal.Table:
    return catalog.create_table(
        "db.keyed", EVENTS_SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )


def _polars(ids: range | list[int]) -> pl.DataFrame:
    return pl.DataFrame(events(ids))


def _duckdb(ids: range | list[int]) -> Any:
    rows = events(ids)  # noqa: F841  (DuckDB finds the local variable by name)
    return duckdb.sql("select * from rows")


def _pandas(ids: range | list[int]) -> pd.DataFrame:
    return events(ids).to_pandas()


def _reader(ids: range | list[int]) -> pa.RecordBatchReader:
    return events(ids).to_reader(max_chunksize=2)


def _generator(ids: range | list[int]) -> Iterator[pa.RecordBatch]:
    yield from events(ids).to_batches(max_chunksize=2)


def _tables(ids: range | list[int]) -> list[pa.Table]:
    ids = list(ids)
    return [events(ids[:1]), events(ids[1:])]


def _struct_array(ids: range | list[int]) -> pa.StructArray:
    return events(ids).to_struct_array().combine_chunks()  # __arrow_c_array__ only


class _CStream:
    """An object that offers nothing but the Arrow C stream interface."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self._table.__arrow_c_stream__(requested_schema)


def _capsule(ids: range | list[int]) -> _CStream:
    return _CStream(events(ids))


SOURCES = [_polars, _duckdb, _pandas, _reader, _generator, _tables, _struct_array, _capsule]


@pytest.mark.parametrize("source", SOURCES, ids=lambda f: f.__name__.strip("_"))
def test_an_append_table_takes_every_arrow_source(events_table: shoal.Table, source: Any) -> None:
    events_table.append(source(range(5)))
    events_table.overwrite(source(range(3, 8)), partition={"dt": "2026-11-01"})
    assert sorted_rows(events_table.to_arrow(), "id") == sorted_rows(events(range(3, 8)), "id")


@pytest.mark.parametrize("source", SOURCES, ids=lambda f: f.__name__.strip("_"))
def test_a_primary_key_table_takes_every_arrow_source(keyed: shoal.Table, source: Any) -> None:
    keyed.upsert(source(range(6)))
    keyed.append(source([4, 5, 6]))
    keyed.delete(source([0, 1]))
    assert sorted_rows(keyed.to_arrow(), "id") == sorted_rows(events(range(2, 7)), "id")


def test_schema_merge_takes_a_polars_frame(events_table: shoal.Table) -> None:
    frame = _polars(range(2)).with_columns(pl.lit(7, dtype=pl.Int32).alias("extra"))
    events_table.append(frame, schema_mode="merge")
    assert events_table.schema.names == [*EVENTS_SCHEMA.names, "extra"]
    assert events_table.to_arrow().column("extra").to_pylist() == [7, 7]


def test_the_input_buffers_reach_the_writer_without_a_copy(events_table: shoal.Table) -> None:
    """What ``conform`` hands the file writer holds the frame's own buffers (polars
    exports its memory; pyarrow imports it), for a fixed-width column of the frame."""
    frame = pl.DataFrame({"id": [1, 2, 3], "value": [0.5, 1.0, 1.5]})
    exported = frame.to_arrow()
    schema = pa.schema([("id", pa.int64()), ("value", pa.float64())])
    (batch,) = list(to_batches(frame))
    written = conform(batch, schema)
    for name in schema.names:
        ours = [b.address for b in written.column(name).chunk(0).buffers() if b is not None]
        theirs = [b.address for b in exported.column(name).chunk(0).buffers() if b is not None]
        assert ours == theirs

    table = pa.table({"id": [1], "value": [2.0]}, schema=schema)
    assert to_batches(table) is table
    reader = table.to_reader()
    assert to_batches(reader) is reader  # streamed by the writer, not read here


def test_a_stream_is_consumed_as_the_writer_reads_it(events_table: shoal.Table) -> None:
    """Taking the input reads only its first batch (for the schema); the writer pulls
    the rest one by one, and a source failing midway leaves no commit."""
    pulled: list[int] = []

    def batches() -> Iterator[pa.RecordBatch]:
        for i in range(3):
            pulled.append(i)
            if i == 2:
                raise RuntimeError("the source broke")
            yield events([i]).to_batches()[0]

    stream = to_batches(batches())
    assert pulled == [0]
    assert stream.schema.equals(EVENTS_SCHEMA)
    pulled.clear()
    with pytest.raises(RuntimeError, match="the source broke"):
        events_table.append(batches())
    assert pulled == [0, 1, 2]
    assert events_table.latest_snapshot() is None


@pytest.mark.parametrize(
    ("data", "accepted"),
    [
        ([1, 2, 3], "iterable to write must yield pyarrow RecordBatches"),
        ("rows", "cannot write a str"),
        (42, "cannot write a int"),
        (pa.array([1, 2]), "not a struct of columns"),
        (pa.chunked_array([[1, 2]]), "not one of batches of columns"),
        (iter([]), "is empty, so it has no schema"),
        (pl.Series("id", [1, 2]), "not one of batches of columns"),
    ],
    ids=["list", "str", "int", "array", "chunked", "empty", "series"],
)
def test_other_input_is_refused_before_anything_is_committed(
    events_table: shoal.Table, keyed: shoal.Table, data: Any, accepted: str
) -> None:
    for table in (events_table, keyed):
        with pytest.raises(shoal.SchemaMismatchError, match=accepted):
            table.append(data)
        assert table.latest_snapshot() is None


def test_the_refusal_says_what_is_accepted(events_table: shoal.Table) -> None:
    with pytest.raises(shoal.SchemaMismatchError) as raised:
        events_table.append(42)
    for kind in ("RecordBatchReader", "polars", "DuckDB", "__arrow_c_stream__", "pandas"):
        assert kind in str(raised.value)
