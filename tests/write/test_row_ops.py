"""delete_where and update_where on append and primary-key tables: the rows, the files
rewritten, the values refused, the engines refused, and concurrent writers."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import shoal
from shoal import row_ops
from shoal.core.plan import live_entries
from shoal.errors import CommitConflictError, InvalidArgumentError, UnsupportedFeatureError
from shoal.format.snapshot import CommitKind
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows


def _files(table: shoal.Table) -> set[str]:
    store = table._store
    latest = store.snapshots.latest()
    assert latest is not None
    return {e.file.file_name for e in live_entries(store, latest)}


def _ids(table: shoal.Table) -> list[int]:
    return sorted(table.to_arrow().column("id").to_pylist())


def test_append_delete_rewrites_only_files_with_matching_rows(
    events_table: shoal.Table,
) -> None:
    events_table.append(events(range(5)))
    events_table.append(events(range(5, 10)))
    events_table.append(events(range(10, 15), dt="2026-11-02"))
    before = _files(events_table)
    snapshot = events_table.delete_where("id >= 3 and id < 6")
    assert snapshot.commit_kind == CommitKind.OVERWRITE
    assert _ids(events_table) == [0, 1, 2, *range(6, 15)]
    after = _files(events_table)
    # the 2026-11-02 file had no matching row: kept; each other replaced by its
    # remainder
    assert len(before & after) == 1
    assert len(after - before) == 2


def test_append_delete_of_a_whole_file_adds_nothing(events_table: shoal.Table) -> None:
    events_table.append(events(range(3)))
    events_table.append(events(range(3, 6)))
    before = _files(events_table)
    events_table.delete_where([("id", "<", 3)])
    assert _ids(events_table) == [3, 4, 5]
    assert _files(events_table) < before


def test_three_filter_forms_delete_alike(catalog: shoal.Catalog) -> None:
    forms = [
        "value > 1 and name != 'n4'",
        [("value", ">", 1.0), ("name", "!=", "n4")],
        (pc.field("value") > 1.0) & (pc.field("name") != "n4"),
    ]
    results = []
    for i, form in enumerate(forms):
        table = catalog.create_table(f"db.f{i}", EVENTS_SCHEMA, partition_keys=["dt"])
        table.append(events(range(8)))
        table.delete_where(form)
        results.append(_ids(table))
    assert results[0] == results[1] == results[2] == [0, 1, 2, 4]


def test_append_update_sets_values_in_matching_rows(events_table: shoal.Table) -> None:
    events_table.append(events(range(6)))
    events_table.update_where("id > 3", set={"value": 7, "name": None})
    rows = sorted_rows(events_table.to_arrow(), "id")
    assert [r["value"] for r in rows] == [0.0, 0.5, 1.0, 1.5, 7.0, 7.0]
    assert [r["name"] for r in rows] == ["n0", "n1", "n2", "n3", None, None]


def test_null_comparisons_do_not_match(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.n", pa.schema([("id", pa.int64()), ("v", pa.int64())]))
    table.append(pa.table({"id": [1, 2, 3], "v": [1, None, 5]}))
    table.delete_where("v < 3")
    assert sorted_rows(table.to_arrow(), "id") == [{"id": 2, "v": None}, {"id": 3, "v": 5}]


def test_no_match_commits_an_empty_snapshot_and_changes_nothing(
    events_table: shoal.Table,
) -> None:
    events_table.append(events(range(3)))
    before = _files(events_table)
    result = row_ops.delete_where(events_table._transaction(), "id > 100")
    assert result.rows == 0
    assert _files(events_table) == before


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"id": 1}, "partition|primary-key"),
        ({"dt": "x"}, "partition|primary-key"),
        ({"nope": 1}, "unknown column"),
        ({"value": "1"}, "not a value"),
        ({}, "needs set"),
    ],
)
def test_update_refusals(catalog: shoal.Catalog, values: dict, match: str) -> None:
    table = catalog.create_table(
        "db.pk", EVENTS_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"]
    )
    table.upsert(events(range(3)))
    latest = table.latest_snapshot()
    with pytest.raises(InvalidArgumentError, match=match):
        table.update_where("id = 1", set=values)
    assert table.latest_snapshot() == latest


@pytest.mark.parametrize("empty", [None, [], ""])
def test_empty_filters_are_refused(events_table: shoal.Table, empty: object) -> None:
    events_table.append(events(range(3)))
    latest = events_table.latest_snapshot()
    with pytest.raises(shoal.ShoalError):
        events_table.delete_where(empty)
    assert events_table.latest_snapshot() == latest
    assert _ids(events_table) == [0, 1, 2]


def test_lossy_values_are_refused(catalog: shoal.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("small", pa.int8()), ("f", pa.float32())])
    table = catalog.create_table("db.l", schema)
    table.append(pa.table({"id": [1], "small": [1], "f": [1.0]}, schema=schema))
    for values in ({"small": 300}, {"id": 1.5}, {"f": 0.1}, {"id": True}):
        with pytest.raises(InvalidArgumentError, match="update_where"):
            table.update_where("id = 1", set=values)
    table.update_where("id = 1", set={"small": -5, "f": 0.5, "id": 2})
    assert table.to_arrow().to_pylist() == [{"id": 2, "small": -5, "f": 0.5}]


def test_primary_key_delete_and_update(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.pk",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2"},
    )
    table.upsert(events(range(10)))
    result = row_ops.delete_where(table._transaction(), "value > 2")
    assert result.rows == 5
    assert _ids(table) == [0, 1, 2, 3, 4]
    table.update_where("id < 2", set={"name": "x"})
    rows = sorted_rows(table.to_arrow(), "id")
    assert [r["name"] for r in rows] == ["x", "x", "n2", "n3", "n4"]
    assert [r["value"] for r in rows] == [0.0, 0.5, 1.0, 1.5, 2.0]


def test_primary_key_delete_keeps_whole_rows_in_an_input_changelog(
    catalog: shoal.Catalog,
) -> None:
    """A delete reads only the key, except where the changelog keeps the rows as
    written: there its -D rows carry the deleted values."""
    table = catalog.create_table(
        "db.pk",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "1", "changelog-producer": "input"},
    )
    written = table.upsert(events(range(3)))
    deleted = table.delete_where("id = 1")
    changes = table.incremental(written.id, deleted.id, row_kind=True).to_pylist()
    removed = events([1]).to_pylist()[0]
    assert changes == [{"rowkind": "-D", **removed}]


@pytest.mark.parametrize(
    ("options", "update"),
    [
        ({"merge-engine": "aggregation", "fields.value.aggregate-function": "sum"}, False),
        ({"merge-engine": "first-row"}, True),
        ({"merge-engine": "partial-update"}, False),
        ({"merge-engine": "deduplicate", "ignore-delete": "true"}, False),
        ({"rowkind.field": "name"}, False),
        ({"sequence.field": "value"}, True),
    ],
)
def test_engines_refused(catalog: shoal.Catalog, options: dict, update: bool) -> None:
    table = catalog.create_table(
        "db.e", EVENTS_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=options
    )
    rows = events(range(3))
    if "rowkind.field" in options:
        rows = rows.set_column(2, "name", pa.array(["+I"] * 3))
    table.upsert(rows)
    latest = table.latest_snapshot()
    values = {"name": "y"} if update else None
    with pytest.raises(UnsupportedFeatureError):
        row_ops.prepare(table._transaction(), "id = 1", values)
    assert table.latest_snapshot() == latest


def test_partial_update_with_remove_record_on_delete(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.pu",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={
            "merge-engine": "partial-update",
            "partial-update.remove-record-on-delete": "true",
        },
    )
    table.upsert(events(range(4)))
    table.delete_where("id >= 2")
    table.update_where("id = 0", set={"value": 9.0})
    rows = sorted_rows(table.to_arrow(), "id")
    assert [(r["id"], r["value"]) for r in rows] == [(0, 9.0), (1, 0.5)]


def test_append_table_with_deletion_vectors_refused(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.dv", EVENTS_SCHEMA, options={"deletion-vectors.enabled": "true"}
    )
    table.append(events(range(3)))
    with pytest.raises(UnsupportedFeatureError, match="deletion-vectors"):
        table.delete_where("id = 1")


def test_concurrent_overwrite_makes_the_delete_fail(events_table: shoal.Table) -> None:
    events_table.append(events(range(5)))
    other = shoal.Table.open(events_table.path)
    prepared = row_ops.prepare(events_table._transaction(), "id = 1", None)
    other.overwrite(events(range(100, 102)))
    latest = events_table.latest_snapshot()
    with pytest.raises(CommitConflictError):
        prepared.commit()
    assert events_table.latest_snapshot() == latest
    assert _ids(events_table) == [100, 101]


def test_concurrent_append_is_kept(events_table: shoal.Table) -> None:
    events_table.append(events(range(5)))
    other = shoal.Table.open(events_table.path)
    prepared = row_ops.prepare(events_table._transaction(), "id <= 1", None)
    other.append(events(range(2)))
    prepared.commit()
    # the rows appended concurrently match too, but were not read: they stay
    assert _ids(events_table) == [0, 1, 2, 3, 4]
