"""``Scan.plain_dataset`` and the DuckDB view ``Table.to_duckdb`` registers: a
``pyarrow.dataset`` of the planned files only where its rows are exactly the scan's,
the Arrow stream everywhere else, the same answers either way."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds

import shoal
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows


def test_an_append_table_is_a_dataset_of_its_files_with_the_scans_rows(
    events_table: shoal.Table,
) -> None:
    events_table.append(events(range(6)))
    events_table.append(events(range(6, 10), dt="2026-11-02"))
    for options in ({}, {"columns": ["id", "value"]}, {"columns": ["id"], "filter": "id >= 7"}):
        scan = events_table.scan(**options)
        dataset = scan.plain_dataset()
        assert isinstance(dataset, ds.Dataset)
        assert dataset.schema.names == pa.schema(scan).names
        assert sorted_rows(dataset.to_table(), "id") == sorted_rows(scan.to_arrow(), "id")


def test_duckdb_reads_the_view_as_a_dataset_of_the_planned_snapshot(
    events_table: shoal.Table,
) -> None:
    events_table.append(events(range(10)))
    connection = duckdb.connect()
    events_table.to_duckdb(connection, "all_events")
    events_table.to_duckdb(connection, "late", columns=["id", "value"], filter="id > 6")
    events_table.append(events(range(100, 103)))  # the views keep their planned snapshot
    streamed = events_table.scan(snapshot_id=1)
    shoal_stream = streamed  # noqa: F841  (DuckDB finds the local variable by name)
    query = "select count(*), sum(id), sum(value), max(dt) from {}"
    assert connection.sql(query.format("all_events")).fetchall() == (
        duckdb.sql(query.format("shoal_stream")).fetchall()
    )
    assert connection.sql("select count(*), sum(id) from late").fetchall() == [(3, 24)]


def test_reads_a_dataset_would_change_stay_streams(
    catalog: shoal.Catalog, events_table: shoal.Table
) -> None:
    events_table.append(events(range(4)))
    # a filter on a column the read leaves out: the dataset could not apply it
    assert events_table.scan(columns=["value"], filter="id > 1").plain_dataset() is None
    keyed = catalog.create_table(
        "db.keyed_view", EVENTS_SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    keyed.append(events(range(4)))
    keyed.append(events(range(2)))
    assert keyed.scan().plain_dataset() is None
    connection = keyed.to_duckdb(duckdb.connect(), "keyed")
    assert connection.sql("select count(*) from keyed").fetchall() == [(4,)]
    # a filter no file may match plans no file: the empty stream, with its schema
    assert events_table.scan(filter="id > 100").plain_dataset() is None
    empty = catalog.create_table("db.empty_view", EVENTS_SCHEMA)
    assert empty.scan().plain_dataset() is None
    assert empty.to_duckdb(duckdb.connect(), "e").sql("select count(*) from e").fetchall() == [(0,)]
