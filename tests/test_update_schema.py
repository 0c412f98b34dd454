"""Table.update_schema and writes with schema_mode="merge": one schema file per change set,
written atomically, seen at once by the handle that made it; concurrent changes."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from shoal.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    SchemaConflictError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from tests.conftest import EVENTS_SCHEMA, events


def schema_files(table: shoal.Table) -> list[str]:
    return sorted(p.name for p in (Path(table.path) / "schema").iterdir())


def written_schema(table: shoal.Table, schema_id: int) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        (Path(table.path) / f"schema/schema-{schema_id}").read_text()
    )
    return data


def test_one_block_writes_one_schema_file_the_handle_then_uses(
    events_table: shoal.Table,
) -> None:
    with events_table.update_schema() as update:
        update.add_column("score", pa.float64(), after="name", comment="points")
        update.rename_column("value", "amount")
        update.set_option("snapshot.num-retained.max", "50")
        update.update_comment("events of the day")
    assert schema_files(events_table) == ["schema-0", "schema-1"]
    assert update.schema is not None
    assert update.schema.id == 1
    assert events_table.schema.names == ["dt", "id", "name", "score", "amount"]
    assert events_table.options["snapshot.num-retained.max"] == "50"
    written = written_schema(events_table, 1)
    assert written["highestFieldId"] == 4
    assert written["comment"] == "events of the day"
    assert written["fields"][3] == {  # type: ignore[index]
        "id": 4,
        "name": "score",
        "type": "DOUBLE",
        "description": "points",
    }
    assert written["timeMillis"] >= written_schema(events_table, 0)["timeMillis"]  # type: ignore[operator]
    events_table.append(
        pa.table(
            {
                "dt": ["2026-11-01"],
                "id": [1],
                "name": ["a"],
                "score": [2.5],
                "amount": [1.0],
            }
        )
    )
    assert events_table.latest_snapshot().schema_id == 1  # type: ignore[union-attr]
    assert events_table.to_arrow().to_pylist() == [
        {"dt": "2026-11-01", "id": 1, "name": "a", "score": 2.5, "amount": 1.0}
    ]


def test_an_exception_in_the_block_or_no_change_writes_nothing(
    events_table: shoal.Table,
) -> None:
    def add_then_fail() -> None:
        with events_table.update_schema() as update:
            update.add_column("score", pa.float64())
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        add_then_fail()
    with events_table.update_schema():
        pass
    assert schema_files(events_table) == ["schema-0"]
    assert "score" not in events_table.schema.names


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda u: u.add_column("name", pa.string()), InvalidArgumentError),
        (lambda u: u.add_column("x", pa.null()), SchemaMismatchError),
        (lambda u: u.add_column("x", "NOT A TYPE"), InvalidArgumentError),
        (lambda u: u.drop_column("missing"), InvalidArgumentError),
        (lambda u: u.update_column_type("value", pa.date32()), SchemaMismatchError),
        (lambda u: u.update_column_type("name", pa.list_(pa.string())), UnsupportedFeatureError),
        (lambda u: u.set_option("deletion-vectors.merge-on-read", "true"), UnsupportedFeatureError),
        (lambda u: u.set_option("bucket", "2"), InvalidOptionError),
        (lambda u: u.set_option("snapshot.num-retained.max", "x"), InvalidOptionError),
        (lambda u: u.update_comment(3), InvalidArgumentError),
    ],
)
def test_a_change_that_does_not_apply_raises_at_its_call(
    events_table: shoal.Table, call: object, error: type[Exception]
) -> None:
    def change() -> None:
        with events_table.update_schema() as update:
            update.add_column("fine", pa.int32())
            call(update)  # type: ignore[operator]

    with pytest.raises(error):
        change()
    assert schema_files(events_table) == ["schema-0"]


def test_types_may_be_paimon_sql_types(events_table: shoal.Table) -> None:
    with events_table.update_schema() as update:
        update.add_column("price", "DECIMAL(12, 2)")
        update.update_column_type("id", "BIGINT")
    assert events_table.schema.field("price").type == pa.decimal128(12, 2)


def test_immutable_options_are_refused_once_the_table_has_data(
    catalog: shoal.Catalog,
) -> None:
    table = catalog.create_table(
        "db.keyed", EVENTS_SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    with table.update_schema() as update:
        update.set_option("merge-engine", "first-row")  # no data yet: allowed
    table.append(events(range(3)))
    with pytest.raises(InvalidOptionError, match="cannot change"), table.update_schema() as u:
        u.set_option("merge-engine", "deduplicate")
    with pytest.raises(UnsupportedFeatureError, match="bucket count"), table.update_schema() as u:
        u.set_option("bucket", "4")
    with pytest.raises(InvalidArgumentError, match="primary-key"), table.update_schema() as u:
        u.drop_column("id")
    assert schema_files(table) == ["schema-0", "schema-1"]


def test_a_type_change_on_a_table_with_data_must_read_exactly(
    events_table: shoal.Table,
) -> None:
    events_table.append(events(range(2)))
    with pytest.raises(UnsupportedFeatureError, match="exactly"), events_table.update_schema() as u:
        u.update_column_type("value", pa.float32())
    with events_table.update_schema() as update:
        update.add_column("note", pa.string())
    assert schema_files(events_table) == ["schema-0", "schema-1"]


# --- concurrent changes ------------------------------------------------------------------------


def test_of_two_handles_adding_the_same_column_exactly_one_wins(
    catalog: shoal.Catalog, events_table: shoal.Table
) -> None:
    other = catalog.get_table("db.events")

    def both_add_score() -> None:
        with events_table.update_schema() as mine:
            mine.add_column("score", pa.float64())
            with other.update_schema() as theirs:
                theirs.add_column("score", pa.int64())

    with pytest.raises(SchemaConflictError, match="no longer apply") as caught:
        both_add_score()
    assert caught.value.schema_id == 1
    assert isinstance(caught.value, shoal.CommitConflictError)
    assert schema_files(events_table) == ["schema-0", "schema-1"]
    assert other.schema.field("score").type == pa.int64()


def test_changes_that_still_apply_are_applied_to_the_new_latest_schema(
    catalog: shoal.Catalog, events_table: shoal.Table
) -> None:
    other = catalog.get_table("db.events")
    with events_table.update_schema() as mine:
        mine.add_column("score", pa.float64())
        with other.update_schema() as theirs:
            theirs.add_column("note", pa.string())
    assert schema_files(events_table) == ["schema-0", "schema-1", "schema-2"]
    assert events_table.schema.names == [*EVENTS_SCHEMA.names, "note", "score"]
    fields = written_schema(events_table, 2)["fields"]
    assert [(f["name"], f["id"]) for f in fields][-2:] == [("note", 4), ("score", 5)]  # type: ignore[union-attr,index]


def test_racing_writers_of_schema_versions_each_get_their_change_in(
    catalog: shoal.Catalog, events_table: shoal.Table
) -> None:
    handles = [catalog.get_table("db.events") for _ in range(4)]
    start = threading.Barrier(len(handles))
    errors: list[BaseException] = []

    def add(i: int) -> None:
        try:
            start.wait()
            with handles[i].update_schema() as update:
                update.add_column(f"c{i}", pa.int32())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(len(handles))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert schema_files(events_table) == [f"schema-{i}" for i in range(5)]
    latest = catalog.get_table("db.events").schema.names
    assert sorted(latest[4:]) == ["c0", "c1", "c2", "c3"]
    ids = [f["id"] for f in written_schema(events_table, 4)["fields"]]  # type: ignore[union-attr]
    assert sorted(ids) == list(range(8))


# --- schema_mode="merge" -----------------------------------------------------------------------


def with_columns(rows: pa.Table, **columns: list[object]) -> pa.Table:
    for name, values in columns.items():
        rows = rows.append_column(name, pa.array(values))
    return rows


def test_merge_adds_the_new_columns_in_the_order_of_the_data(
    events_table: shoal.Table,
) -> None:
    snapshot = events_table.append(
        with_columns(events(range(2)), zeta=["a", "b"], alpha=[1, 2]), schema_mode="merge"
    )
    assert events_table.schema.names == [*EVENTS_SCHEMA.names, "zeta", "alpha"]
    assert snapshot.schema_id == 1
    assert schema_files(events_table) == ["schema-0", "schema-1"]
    # Data that has every column is written as it is; no new version.
    events_table.append(with_columns(events([5]), zeta=["c"], alpha=[3]), schema_mode="merge")
    assert schema_files(events_table) == ["schema-0", "schema-1"]


def test_merge_refuses_other_differences_before_writing_anything(
    events_table: shoal.Table,
) -> None:
    missing = with_columns(events(range(2)).drop_columns(["name"]), extra=[1, 2])
    with pytest.raises(SchemaMismatchError, match="missing columns"):
        events_table.append(missing, schema_mode="merge")
    retyped = with_columns(events(range(2)).set_column(1, "id", pa.array(["x", "y"])), extra=[1, 2])
    with pytest.raises(SchemaMismatchError, match="'id'"):
        events_table.append(retyped, schema_mode="merge")
    with pytest.raises(SchemaMismatchError, match="unknown columns"):
        events_table.append(with_columns(events([1]), extra=[1]))
    with pytest.raises(InvalidArgumentError, match="schema_mode"):
        events_table.append(events([1]), schema_mode="evolve")
    assert schema_files(events_table) == ["schema-0"]
    assert events_table.latest_snapshot() is None


def test_merge_streams_a_reader_and_overwrites(events_table: shoal.Table) -> None:
    rows = with_columns(events(range(3)), extra=[1, 2, 3])
    reader = pa.RecordBatchReader.from_batches(rows.schema, rows.to_batches())
    events_table.append(reader, schema_mode="merge")
    assert events_table.schema.names[-1] == "extra"
    events_table.overwrite(with_columns(rows, more=[True] * 3), schema_mode="merge")
    assert events_table.schema.names[-2:] == ["extra", "more"]
    assert schema_files(events_table) == ["schema-0", "schema-1", "schema-2"]


def test_merge_on_a_primary_key_table(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.keyed", EVENTS_SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    table.append(with_columns(events(range(3)), extra=[1, 2, 3]), schema_mode="merge")
    assert table.schema.names[-1] == "extra"
    assert table.to_arrow().num_rows == 3


# --- the schemas system table -----------------------------------------------------------------


def test_the_schemas_system_table_shows_the_history(events_table: shoal.Table) -> None:
    with events_table.update_schema() as update:
        update.add_column("score", pa.float64())
        update.set_option("snapshot.num-retained.max", "50")
        update.update_comment("v2")
    history = events_table.system_table("schemas")
    assert history.column_names == [
        "schema_id",
        "fields",
        "partition_keys",
        "primary_keys",
        "options",
        "comment",
        "update_time",
    ]
    rows = history.to_pylist()
    assert [r["schema_id"] for r in rows] == [0, 1]
    assert rows[1]["comment"] == "v2"
    assert rows[1]["options"] == '{"snapshot.num-retained.max":"50"}'
    assert rows[1]["fields"].endswith('{"id":4,"name":"score","type":"DOUBLE"}]')
