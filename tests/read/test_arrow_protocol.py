"""Tables and scans out through the Arrow PyCapsule stream interface: real polars,
DuckDB, pandas and pyarrow consumers, streamed (nothing read before the consumer asks)
and without copies of the batches read."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import shoal
from shoal.read.frames import batch_reader
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows


@pytest.fixture
def keyed(catalog: shoal.Catalog) -> shoal.Table:
    return catalog.create_table(
        "db.keyed", EVENTS_SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )


def _addresses(batch: pa.RecordBatch) -> list[int]:
    return [b.address for column in batch.columns for b in column.buffers() if b is not None]


def test_polars_pyarrow_and_pandas_read_the_table_through_the_stream(
    events_table: shoal.Table,
) -> None:
    events_table.append(events(range(5)))
    events_table.append(events(range(5, 8), dt="2026-11-02"))
    expected = sorted_rows(events_table.to_arrow(), "id")

    assert sorted_rows(pl.DataFrame(events_table).to_arrow(), "id") == expected
    assert sorted_rows(pa.table(events_table), "id") == expected
    assert sorted_rows(pa.Table.from_pandas(events_table.to_pandas()), "id") == expected
    assert sorted_rows(events_table.to_polars().to_arrow(), "id") == expected
    reader = events_table.to_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert sorted_rows(reader.read_all(), "id") == expected


def test_the_keywords_of_to_arrow_reach_every_consumer(events_table: shoal.Table) -> None:
    first = events_table.append(events(range(4)))
    events_table.append(events(range(4, 8)))
    options = {"snapshot_id": first.id, "columns": ["id", "value"], "filter": [("id", ">", 1)]}
    expected = sorted_rows(events_table.to_arrow(**options), "id")
    assert expected == [{"id": i, "value": i * 0.5} for i in (2, 3)]

    assert sorted_rows(events_table.to_polars(**options).to_arrow(), "id") == expected
    frame = events_table.to_pandas(**options)
    assert list(frame.columns) == ["id", "value"]
    assert sorted_rows(pa.Table.from_pandas(frame), "id") == expected
    scan = events_table.scan(**options)
    assert pa.schema(scan).names == ["id", "value"]  # __arrow_c_schema__: the rows' schema
    assert sorted_rows(pl.DataFrame(scan).to_arrow(), "id") == expected
    assert sorted_rows(scan.to_reader().read_all(), "id") == expected


def test_duckdb_queries_a_table_by_replacement_scan_and_a_registered_view(
    events_table: shoal.Table,
) -> None:
    events_table.append(events(range(10)))
    shoal_events = events_table  # noqa: F841  (DuckDB finds the local variable by name)
    assert duckdb.sql("select count(*), sum(id) from shoal_events").fetchall() == [(10, 45)]

    connection = duckdb.connect()
    events_table.to_duckdb(connection, "recent", columns=["id"], filter=[("id", ">=", 7)])
    events_table.append(events(range(100, 103)))  # the view keeps its planned snapshot
    assert connection.sql("select sum(id) from recent").fetchall() == [(24,)]
    assert connection.sql("select count(*) from recent").fetchall() == [(3,)]  # read again
    assert duckdb.sql("select count(*) from shoal_events").fetchall() == [(13,)]  # the latest


def test_a_primary_key_table_streams_its_merged_rows(keyed: shoal.Table) -> None:
    keyed.upsert(events(range(6)))
    keyed.upsert(pa.table({**events([1, 2]).to_pydict(), "value": [10.0, 20.0]}))
    keyed.delete(events([0]))
    expected = sorted_rows(keyed.to_arrow(), "id")
    assert [r["value"] for r in expected] == [10.0, 20.0, 1.5, 2.0, 2.5]
    assert sorted_rows(pl.DataFrame(keyed).to_arrow(), "id") == expected
    rows = duckdb.sql("select id, value from keyed order by id").fetchall()
    assert rows == [(r["id"], r["value"]) for r in expected]


def test_nothing_is_read_before_the_consumer_asks(events_table: shoal.Table) -> None:
    """The reader and the C stream exist before a data file is opened: with every data
    file gone, creating them succeeds and the first read fails."""
    events_table.append(events(range(5)))
    reader = events_table.to_reader()
    stream = pa.RecordBatchReader._import_from_c_capsule(events_table.__arrow_c_stream__())
    for folder, _, names in os.walk(events_table.path):
        for name in names:
            if name.startswith("data-"):
                os.remove(Path(folder) / name)
    with pytest.raises(shoal.CorruptDataFileError):
        reader.read_all()
    # across the C interface the consumer raises its own error with shoal's message
    with pytest.raises(pa.ArrowInvalid, match="a data file of the snapshot cannot be read"):
        stream.read_all()


def test_an_empty_table_streams_its_schema(events_table: shoal.Table) -> None:
    assert pl.DataFrame(events_table).columns == EVENTS_SCHEMA.names
    assert pa.table(events_table).schema.equals(EVENTS_SCHEMA)
    assert events_table.to_reader(columns=["name"]).read_all().num_rows == 0
    assert duckdb.sql("select count(*) from events_table").fetchall() == [(0,)]


def test_the_stream_passes_on_the_batches_read_without_a_copy() -> None:
    """A batch read is handed to the consumer with its own buffers, also when its schema
    differs from the table's only in nullability or field metadata."""
    table_schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("name", pa.string())])
    read = [
        pa.record_batch({"id": [1, 2], "name": ["a", "b"]}),  # nullable, as a file gives it
        pa.record_batch([pa.array([3]), pa.array(["c"])], schema=table_schema),
    ]
    capsule = batch_reader(iter(read), table_schema).__arrow_c_stream__()
    consumed = list(pa.RecordBatchReader._import_from_c_capsule(capsule))
    assert [b.schema for b in consumed] == [table_schema, table_schema]
    assert [_addresses(b) for b in consumed] == [_addresses(b) for b in read]


def test_pandas_frames_keep_their_values(events_table: shoal.Table) -> None:
    events_table.append(events(range(3)))
    frame = events_table.to_pandas(filter=[("id", "=", 2)])
    assert isinstance(frame, pd.DataFrame)
    assert frame.to_dict("records") == [{"dt": "2026-11-01", "id": 2, "name": "n2", "value": 1.0}]


def test_without_pandas_or_polars_the_error_names_the_extra(events_table: shoal.Table) -> None:
    """In a process where pandas and polars cannot be imported (as without the extras),
    to_pandas and to_polars raise MissingDependencyError naming the extra."""
    events_table.append(events(range(2)))
    script = textwrap.dedent(
        f"""
        import sys

        class Absent:  # finds pandas and polars nowhere, as where they are not installed
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("pandas", "polars"):
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)

        sys.meta_path.insert(0, Absent())
        import shoal
        table = shoal.open_table({events_table.path!r})
        assert table.to_arrow().num_rows == 2
        for method, extra in (("to_pandas", "pandas"), ("to_polars", "polars")):
            try:
                getattr(table, method)()
            except shoal.MissingDependencyError as error:
                assert error.extra == extra, error
                assert f"shoal[{{extra}}]" in str(error), error
            else:
                raise AssertionError(method + " worked without " + extra)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
