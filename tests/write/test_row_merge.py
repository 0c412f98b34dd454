"""Table.merge on append and primary-key tables: every clause, conditions on the target
and the source, values of every form, the files rewritten, refusals that leave the
table as it was, and concurrent writers."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import shoal
from shoal import row_merge
from shoal.core.plan import live_entries
from shoal.errors import (
    CommitConflictError,
    InvalidArgumentError,
    InvalidFilterError,
    SchemaMismatchError,
    ShoalError,
    UnsupportedFeatureError,
)
from shoal.format.snapshot import CommitKind

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        pa.field("id", pa.int64(), False),
        ("v", pa.int64()),
        ("name", pa.string()),
    ]
)


def rows(ids: list[int], v: list[int | None], dt: str = "a") -> pa.Table:
    return pa.table(
        {"dt": [dt] * len(ids), "id": ids, "v": v, "name": [f"n{i}" for i in ids]},
        schema=SCHEMA,
    )


def make(catalog: shoal.Catalog, primary_key: bool, **options: str) -> shoal.Table:
    return catalog.create_table(
        "db.pk" if primary_key else "db.log",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"] if primary_key else (),
        options={"bucket": "2", **options} if primary_key else options,
    )


def content(table: shoal.Table) -> list[tuple[Any, ...]]:
    got = table.to_arrow().to_pylist()
    return sorted(((r["dt"], r["id"], r["v"], r["name"]) for r in got), key=repr)


def files(table: shoal.Table) -> set[str]:
    store = table._store
    latest = store.snapshots.latest()
    assert latest is not None
    return {e.file.file_name for e in live_entries(store, latest)}


both = pytest.mark.parametrize("primary_key", [False, True], ids=["append", "pk"])


@both
def test_every_clause_in_sql_order(catalog: shoal.Catalog, primary_key: bool) -> None:
    table = make(catalog, primary_key)
    table.append(rows([1, 2, 3, 4], [10, 20, 30, 40]))
    source = rows([2, 3, 4, 5, 6], [200, 300, 400, 500, 600])
    result = (
        table.merge(source, on=["dt", "id"])
        .when_matched_delete(condition="v >= 30", source_condition="v < 400")
        .when_matched_update(set={"v": "v", "name": pa.scalar("up")}, condition="v < 40")
        .when_matched_update()
        .when_not_matched_insert(condition="id = 5")
        .execute_with_counts()
    )
    assert (result.updated, result.deleted, result.inserted, result.rows) == (2, 1, 1, 4)
    assert content(table) == [
        ("a", 1, 10, "n1"),
        ("a", 2, 200, "up"),
        ("a", 4, 400, "n4"),
        ("a", 5, 500, "n5"),
    ]
    assert result.snapshot == table.latest_snapshot()
    snapshot = table.merge(source, on=["dt", "id"]).when_matched_delete().execute()
    assert snapshot == table.latest_snapshot()
    assert snapshot.id == result.snapshot.id + 1


@both
def test_matched_rows_without_a_clause_stay_and_are_not_inserted(
    catalog: shoal.Catalog, primary_key: bool
) -> None:
    table = make(catalog, primary_key)
    table.append(rows([1, 2], [10, 20]))
    result = (
        table.merge(rows([2, 3], [0, 0]), on=["id", "dt"])
        .when_matched_update(condition="v > 100")
        .when_not_matched_insert()
        .execute_with_counts()
    )
    assert (result.updated, result.inserted) == (0, 1)
    assert content(table) == [("a", 1, 10, "n1"), ("a", 2, 20, "n2"), ("a", 3, 0, "n3")]


@both
def test_values_of_every_form(catalog: shoal.Catalog, primary_key: bool) -> None:
    table = make(catalog, primary_key)
    table.append(rows([1, 2], [10, None]))
    source = pa.table({"dt": ["a", "a", "a"], "id": [1, 2, 3], "x": [5, 6, 7]})
    (
        table.merge(source, on=["dt", "id"])
        .when_matched_update(set={"v": pc.field("x") * 2}, condition=[("v", "=", None)])
        .when_matched_update(set={"v": "x", "name": None})
        .when_not_matched_insert(values={"dt": "dt", "id": "id", "name": pa.scalar("new")})
        .execute()
    )
    assert content(table) == [("a", 1, 5, None), ("a", 2, 12, "n2"), ("a", 3, None, "new")]


def test_append_rewrites_only_files_with_a_matched_key(catalog: shoal.Catalog) -> None:
    table = make(catalog, False)
    table.append(rows([1, 2], [1, 2]))
    table.append(rows([10, 11], [1, 2]))
    table.append(rows([1, 2], [1, 2], dt="b"))
    before = files(table)
    result = table.merge(rows([11], [0]), on=["id"]).when_matched_delete().execute_with_counts()
    assert result.snapshot.commit_kind == CommitKind.OVERWRITE
    after = files(table)
    assert len(before - after) == 1
    assert len(after - before) == 1
    # a matched key whose row is deleted only: its file's remainder replaces it
    assert sorted(r[1] for r in content(table)) == [1, 1, 2, 2, 10]


def test_append_insert_only_is_an_append(catalog: shoal.Catalog) -> None:
    table = make(catalog, False)
    table.append(rows([1], [1]))
    before = files(table)
    result = (
        table.merge(rows([1, 2], [5, 6]), on=["id"]).when_not_matched_insert().execute_with_counts()
    )
    assert result.snapshot.commit_kind == CommitKind.APPEND
    assert before <= files(table)
    assert content(table) == [("a", 1, 1, "n1"), ("a", 2, 6, "n2")]


def test_append_duplicate_target_keys_all_update(catalog: shoal.Catalog) -> None:
    table = make(catalog, False)
    table.append(rows([1, 1, 2], [1, 2, 3]))
    table.merge(rows([1], [9]), on=["id"]).when_matched_update(set={"v": "v"}).execute()
    assert content(table) == [("a", 1, 9, "n1"), ("a", 1, 9, "n1"), ("a", 2, 3, "n2")]


def test_append_set_none_moves_a_row_to_its_new_partition(catalog: shoal.Catalog) -> None:
    table = make(catalog, False)
    table.append(rows([1, 2], [1, 2]))
    table.merge(rows([1], [5], dt="b"), on=["id"]).when_matched_update().execute()
    assert content(table) == [("a", 2, 2, "n2"), ("b", 1, 5, "n1")]
    assert table.to_arrow(filter="dt = 'b'").column("id").to_pylist() == [1]


def test_null_keys_never_match(catalog: shoal.Catalog) -> None:
    table = make(catalog, False)
    table.append(pa.table({"dt": [None], "id": [1], "v": [1], "name": ["x"]}, schema=SCHEMA))
    source = pa.table({"dt": [None], "id": [1], "v": [2], "name": ["y"]}, schema=SCHEMA)
    result = table.merge(source, on=["dt", "id"]).when_matched_delete().execute_with_counts()
    assert result.rows == 0
    assert content(table) == [(None, 1, 1, "x")]


@both
def test_source_streams_and_frames(catalog: shoal.Catalog, primary_key: bool) -> None:
    table = make(catalog, primary_key)
    table.append(rows([1], [1]))
    source = rows([1, 2], [7, 8])
    reader = pa.RecordBatchReader.from_batches(source.schema, source.to_batches())
    table.merge(reader, on=["dt", "id"]).when_matched_update().execute()
    table.merge(source.to_pandas(), on=["dt", "id"]).when_not_matched_insert().execute()
    assert content(table) == [("a", 1, 7, "n1"), ("a", 2, 8, "n2")]


@both
@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda m: m, InvalidArgumentError),  # no clause
        (lambda m: m.when_matched_update(set={"nope": 1}), InvalidArgumentError),
        (lambda m: m.when_matched_update(set={"id": "v"}), InvalidArgumentError),
        (lambda m: m.when_matched_update(set={"v": "missing"}), InvalidArgumentError),
        (lambda m: m.when_matched_update(set={"v": 1.5}), InvalidArgumentError),
        (lambda m: m.when_matched_update(set={"v": "name"}), SchemaMismatchError),
        (lambda m: m.when_matched_update(set={}), InvalidArgumentError),
        (lambda m: m.when_matched_delete(condition="nope > 1"), InvalidFilterError),
        (lambda m: m.when_matched_delete(condition=[]), InvalidFilterError),
        (lambda m: m.when_not_matched_insert(condition="zzz = 1"), InvalidFilterError),
        # a condition comparing a target column with a source column is no filter
        (lambda m: m.when_matched_delete(condition=pc.field("v") > pc.field("id")), ShoalError),
    ],
)
def test_refusals_leave_the_table_unchanged(
    catalog: shoal.Catalog, primary_key: bool, build: Any, error: type
) -> None:
    table = make(catalog, primary_key)
    table.append(rows([1, 2], [1, 2]))
    snapshot, before = table.latest_snapshot(), content(table)
    with pytest.raises(error):
        build(table.merge(rows([1, 3], [5, 6]), on=["dt", "id"])).execute()
    assert table.latest_snapshot() == snapshot
    assert content(table) == before


@both
def test_duplicate_source_keys_matching_a_row_are_refused(
    catalog: shoal.Catalog, primary_key: bool
) -> None:
    table = make(catalog, primary_key)
    table.append(rows([1, 2], [1, 2]))
    snapshot = table.latest_snapshot()
    with pytest.raises(InvalidArgumentError, match="multiple source rows matched"):
        (
            table.merge(rows([2, 2, 3], [5, 6, 7]), on=["dt", "id"])
            .when_matched_update()
            .when_not_matched_insert()
            .execute()
        )
    assert table.latest_snapshot() == snapshot
    # duplicates among the unmatched rows are inserted as they are (append only)
    if not primary_key:
        table.merge(rows([7, 7], [1, 2]), on=["id"]).when_not_matched_insert().execute()
        assert [r[1] for r in content(table)].count(7) == 2


def test_missing_columns_for_set_none_and_bad_on(catalog: shoal.Catalog) -> None:
    table = make(catalog, False)
    table.append(rows([1], [1]))
    source = pa.table({"dt": ["a"], "id": [1], "v": [2]})
    with pytest.raises(InvalidArgumentError, match="lacks"):
        table.merge(source, on=["id"]).when_matched_update().execute()
    with pytest.raises(InvalidArgumentError, match="on column"):
        table.merge(source, on=["name"]).when_matched_delete().execute()
    with pytest.raises(InvalidArgumentError, match="twice"):
        table.merge(source, on=["id", "id"]).when_matched_delete().execute()
    # named columns need only those in the source
    table.merge(source, on=["id"]).when_matched_update(set={"v": "v"}).execute()
    assert content(table) == [("a", 1, 2, "n1")]


def test_primary_key_on_must_be_the_key(catalog: shoal.Catalog) -> None:
    table = make(catalog, True)
    table.append(rows([1], [1]))
    with pytest.raises(InvalidArgumentError, match="primary key"):
        table.merge(rows([1], [1]), on=["id", "v"]).when_matched_delete().execute()
    with pytest.raises(InvalidArgumentError, match="primary key"):
        table.merge(rows([1], [1]), on=["v"]).when_matched_delete().execute()


def test_primary_key_without_partition_in_on(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.k", SCHEMA, partition_keys=["dt"], primary_keys=["id", "dt"], options={"bucket": "1"}
    )
    table.append(rows([1, 2], [1, 2]))
    table.append(rows([1], [3], dt="b"))
    table.merge(rows([1], [9], dt="b"), on=["dt", "id"]).when_matched_update().execute()
    assert content(table) == [("a", 1, 1, "n1"), ("a", 2, 2, "n2"), ("b", 1, 9, "n1")]


@pytest.mark.parametrize(
    ("options", "clause"),
    [
        ({"merge-engine": "aggregation"}, "update"),
        ({"merge-engine": "first-row"}, "delete"),
        ({"merge-engine": "partial-update"}, "delete"),
        ({"ignore-delete": "true"}, "delete"),
        ({"sequence.field": "v"}, "update"),
        ({"rowkind.field": "name"}, "insert"),
    ],
)
def test_engines_refused(catalog: shoal.Catalog, options: dict, clause: str) -> None:
    table = make(catalog, True, **options)
    builder = table.merge(rows([1], [1]), on=["dt", "id"])
    builder = {
        "update": builder.when_matched_update,
        "delete": builder.when_matched_delete,
        "insert": builder.when_not_matched_insert,
    }[clause]()
    with pytest.raises(UnsupportedFeatureError):
        builder.execute()
    assert table.latest_snapshot() is None


def test_partial_update_refuses_an_update_to_null(catalog: shoal.Catalog) -> None:
    table = make(catalog, True, **{"merge-engine": "partial-update"})
    table.append(rows([1, 2], [1, 2]))
    with pytest.raises(UnsupportedFeatureError, match="null"):
        table.merge(rows([1], [None]), on=["dt", "id"]).when_matched_update().execute()
    table.merge(rows([1, 3], [5, None]), on=["dt", "id"]).when_matched_update(
        set={"v": "v"}
    ).when_not_matched_insert().execute()
    assert content(table) == [("a", 1, 5, "n1"), ("a", 2, 2, "n2"), ("a", 3, None, "n3")]


def test_append_with_deletion_vectors_refused(catalog: shoal.Catalog) -> None:
    table = make(catalog, False, **{"deletion-vectors.enabled": "true"})
    table.append(rows([1], [1]))
    with pytest.raises(UnsupportedFeatureError, match="deletion-vectors"):
        table.merge(rows([1], [1]), on=["id"]).when_matched_delete().execute()


def test_concurrent_overwrite_of_a_rewritten_file_conflicts(catalog: shoal.Catalog) -> None:
    table = make(catalog, False)
    table.append(rows([1, 2], [1, 2]))
    other = shoal.Table.open(table.path)
    prepared = row_merge.prepare(
        table.merge(rows([1, 3], [9, 9]), on=["id"]).when_matched_update().when_not_matched_insert()
    )
    other.overwrite(rows([5], [5]))
    latest = table.latest_snapshot()
    with pytest.raises(CommitConflictError):
        prepared.commit()
    assert table.latest_snapshot() == latest
    assert content(table) == [("a", 5, 5, "n5")]


def test_concurrent_append_is_kept(catalog: shoal.Catalog) -> None:
    table = make(catalog, False)
    table.append(rows([1, 2], [1, 2]))
    other = shoal.Table.open(table.path)
    prepared = row_merge.prepare(
        table.merge(rows([1, 3], [9, 9]), on=["id"]).when_matched_update().when_not_matched_insert()
    )
    other.append(rows([1], [7]))
    prepared.commit()
    # the row appended meanwhile was not read: it stays as written
    assert content(table) == [
        ("a", 1, 7, "n1"),
        ("a", 1, 9, "n1"),
        ("a", 2, 2, "n2"),
        ("a", 3, 9, "n3"),
    ]


def test_primary_key_concurrent_write_is_sequenced_below(catalog: shoal.Catalog) -> None:
    table = make(catalog, True)
    table.append(rows([1, 2], [1, 2]))
    other = shoal.Table.open(table.path)
    prepared = row_merge.prepare(
        table.merge(rows([1, 3], [9, 9]), on=["dt", "id"])
        .when_matched_delete()
        .when_not_matched_insert()
    )
    other.upsert(rows([1, 3, 4], [5, 5, 5]))
    prepared.commit()
    # the merge commits last, so its delete of 1 and insert of 3 win
    assert content(table) == [("a", 2, 2, "n2"), ("a", 3, 9, "n3"), ("a", 4, 5, "n4")]


def test_primary_key_delete_keeps_whole_rows_in_an_input_changelog(
    catalog: shoal.Catalog,
) -> None:
    table = make(catalog, True, **{"changelog-producer": "input"})
    written = table.upsert(rows([1, 2], [10, 20]))
    result = (
        table.merge(rows([1, 3], [0, 30]), on=["dt", "id"])
        .when_matched_delete()
        .when_not_matched_insert()
        .execute_with_counts()
    )
    changes = table.incremental(written.id, result.snapshot.id, row_kind=True).to_pylist()
    assert sorted(changes, key=lambda r: r["id"]) == [
        {"rowkind": "-D", "dt": "a", "id": 1, "v": 10, "name": "n1"},
        {"rowkind": "+I", "dt": "a", "id": 3, "v": 30, "name": "n3"},
    ]


@both
def test_a_delete_needs_only_the_key_columns_of_the_source(
    catalog: shoal.Catalog, primary_key: bool
) -> None:
    table = make(catalog, primary_key)
    table.append(rows([1, 2, 3], [10, 20, 30]))
    keys = pa.table({"dt": ["a", "a"], "id": [2, 9]})
    result = table.merge(keys, on=["dt", "id"]).when_matched_delete().execute_with_counts()
    assert (result.deleted, result.rows) == (1, 1)
    assert [row[1] for row in content(table)] == [1, 3]
