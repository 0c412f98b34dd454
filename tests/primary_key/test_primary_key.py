"""Primary-key tables: upserts, deletes, merge engines, compaction and its conflicts."""

from __future__ import annotations

import itertools
import threading

import pyarrow as pa
import pytest

import shoal
from shoal.compaction.compact import compact
from shoal.compaction.strategies import FullCompaction
from shoal.format.snapshot import CommitKind
from shoal.write.commit import CommitRequest

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string()),
                    ("ts", pa.int64())])


def rows(ids: list[int], v: str, dt: str = "a", ts: list[int] | None = None) -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [f"{v}{i}" for i in ids],
                     "ts": ts or [0] * len(ids)}, schema=SCHEMA)


def view(table: shoal.Table, **kwargs: object) -> dict[tuple[str, int], str]:
    return {(r["dt"], r["id"]): r["v"] for r in table.to_arrow(**kwargs).to_pylist()}


@pytest.fixture
def pk(catalog: shoal.Catalog) -> shoal.Table:
    return catalog.create_table("db.pk", SCHEMA, partition_keys=["dt"],
                                primary_keys=["dt", "id"], options={"bucket": "2"})


def test_upsert_delete_and_views(pk: shoal.Table) -> None:
    pk.upsert(rows([1, 2, 3], "x"))
    pk.upsert(rows([2, 2], "y"))  # several rows of one key in one write: the last wins
    pk.delete(pa.table({"dt": ["a"], "id": [3]}))  # key columns only
    assert view(pk) == {("a", 1): "x1", ("a", 2): "y2"}
    assert view(pk, read_optimized=True) == {}  # nothing compacted yet
    assert pk.append(rows([4], "z")).commit_kind == "APPEND"  # append means upsert
    result = pk.compact("full")
    assert result.snapshot is not None
    assert result.snapshot.commit_kind == "COMPACT"
    assert view(pk, read_optimized=True) == view(pk) == {
        ("a", 1): "x1", ("a", 2): "y2", ("a", 4): "z4"}
    assert pk.compact("full").snapshot is None  # already one run at the top level
    files = pk.system_table("files")
    assert set(files["level"].to_pylist()) == {5}
    assert view(pk, snapshot_id=2) == {("a", 1): "x1", ("a", 2): "y2", ("a", 3): "x3"}


def test_data_files_have_paimon_key_value_layout(pk: shoal.Table) -> None:
    import pyarrow.parquet as pq

    pk.upsert(rows([5, 1, 3, 8, 13, 21], "x"))
    split = max(pk.scan().plan(), key=lambda s: s.row_count)
    file = pq.read_table(split.file_paths[0], partitioning=None)
    assert file.num_rows > 1
    assert file.column_names[:3] == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND"]
    assert file.column_names[3:] == SCHEMA.names
    assert file["_KEY_id"].to_pylist() == sorted(file["_KEY_id"].to_pylist())
    meta = pk.system_table("files")
    assert meta["min_key"][0].as_py() is not None


def test_sequence_field_orders_rows(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                                 options={"bucket": "1", "sequence.field": "ts"})
    table.upsert(rows([1], "new", ts=[20]))
    table.upsert(rows([1], "old", ts=[10]))  # written later but older by ts
    assert view(table) == {("a", 1): "new1"}
    table.compact("full")
    assert view(table) == {("a", 1): "new1"}


def test_first_row_engine_keeps_the_first(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                                 options={"bucket": "1", "merge-engine": "first-row"})
    table.upsert(rows([1, 2], "first"))
    table.upsert(rows([1, 3], "second"))
    assert view(table) == {("a", 1): "first1", ("a", 2): "first2", ("a", 3): "second3"}


def test_first_row_engine_refuses_deletes_unless_ignored(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                                 options={"bucket": "1", "merge-engine": "first-row"})
    table.upsert(rows([1], "first"))
    before = table.latest_snapshot()
    with pytest.raises(shoal.InvalidArgumentError, match="ignore-delete"):
        table.delete(pa.table({"id": [1]}))
    assert table.latest_snapshot() == before
    assert view(table) == {("a", 1): "first1"}
    ignoring = catalog.create_table(
        "db.u", SCHEMA, primary_keys=["id"],
        options={"bucket": "1", "merge-engine": "first-row", "ignore-delete": "true"})
    ignoring.upsert(rows([1], "first"))
    ignoring.delete(pa.table({"id": [1]}))
    assert view(ignoring) == {("a", 1): "first1"}


def test_ignore_delete(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                                 options={"bucket": "1", "ignore-delete": "true"})
    table.upsert(rows([1], "x"))
    table.delete(pa.table({"id": [1]}))
    assert view(table) == {("a", 1): "x1"}


def test_invalid_primary_key_tables(catalog: shoal.Catalog) -> None:
    with pytest.raises(shoal.SchemaMismatchError, match="part of the primary key"):
        catalog.create_table("db.t", SCHEMA, partition_keys=["dt"], primary_keys=["id"],
                             options={"bucket": "1"})
    with pytest.raises(shoal.UnsupportedFeatureError, match="cross-partition") as info:
        catalog.create_table("db.t", SCHEMA, partition_keys=["dt"], primary_keys=["id"])
    assert info.value.feature == "cross-partition upsert"
    with pytest.raises(shoal.InvalidOptionError, match="bucket-key"):
        catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket-key": "id"})
    with pytest.raises(shoal.InvalidOptionError, match="sequence"):
        catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "sequence.field": "nope"})
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    assert not table.schema.field("id").nullable
    with pytest.raises(shoal.SchemaMismatchError, match="NOT NULL"):
        table.upsert(pa.table({"dt": ["a"], "id": pa.array([None], pa.int64()), "v": ["x"],
                               "ts": [1]}))
    with pytest.raises(shoal.SchemaMismatchError, match="primary-key"):
        table.delete(pa.table({"v": ["x"]}))
    append = catalog.create_table("db.append", SCHEMA)
    with pytest.raises(shoal.InvalidArgumentError, match="primary-key"):
        append.upsert(rows([1], "x"))


def test_writes_trigger_compaction_unless_write_only(catalog: shoal.Catalog) -> None:
    options = {"bucket": "1", "num-sorted-run.compaction-trigger": "3"}
    auto = catalog.create_table("db.auto", SCHEMA, primary_keys=["id"], options=options)
    quiet = catalog.create_table("db.quiet", SCHEMA, primary_keys=["id"],
                                 options={**options, "write-only": "true"})
    for i in range(6):
        auto.upsert(rows([i, 100], f"w{i}-"))
        quiet.upsert(rows([i, 100], f"w{i}-"))
    kinds = [s.commit_kind for s in auto.snapshots()]
    assert "COMPACT" in kinds
    assert len(auto.system_table("files")) < len(quiet.system_table("files")) == 6
    assert {s.commit_kind for s in quiet.snapshots()} == {"APPEND"}
    assert view(auto) == view(quiet)


def test_concurrent_writers_to_one_bucket_are_sequenced(catalog: shoal.Catalog) -> None:
    catalog.create_table("db.t", SCHEMA, primary_keys=["id"],
                         options={"bucket": "1", "commit.max-retries": "50"})
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        table = catalog.get_table("db.t")
        try:
            for i in range(8):
                table.upsert(rows([i], f"w{n}-"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    table = catalog.get_table("db.t")
    files = table.system_table("files")
    ranges = sorted(zip(files["min_sequence_number"].to_pylist(),
                        files["max_sequence_number"].to_pylist(), strict=True))
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges)), ranges
    # Every key holds the value of whichever write committed last.
    last = {}
    for s in table.snapshots():
        for key, value in view(table, snapshot_id=s.id).items():
            last[key] = value
    assert view(table) == last


def test_compaction_conflicts_cleanly(pk: shoal.Table, catalog: shoal.Catalog) -> None:
    pk.upsert(rows([1, 2], "x"))
    pk.upsert(rows([2, 3], "y"))
    other = catalog.get_table("db.pk")
    store = pk._store
    # Plan and rewrite against the current snapshot, but let another compaction land first.
    from shoal.compaction.compact import plan
    from shoal.compaction.rewrite import rewrite

    tasks = plan(store, pk.latest_snapshot(), FullCompaction())
    messages = [rewrite(store, t.partition, t.bucket, t.unit, drop_deletes=t.drop_deletes)
                for t in tasks]
    other.compact("full")
    before = view(pk)
    with pytest.raises(shoal.CommitConflictError):
        pk._committer.commit(CommitRequest(messages, kind=CommitKind.COMPACT))
    assert view(shoal.open_table(pk.path)) == before
    # A compaction against the new state still works.
    assert compact(store, pk._committer, FullCompaction()).snapshot is None


def test_rowkind_field_gives_each_row_its_kind(catalog: shoal.Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())])
    table = catalog.create_table("db.t", schema, primary_keys=["id"],
                                 options={"bucket": "1", "rowkind.field": "op"})
    table.upsert(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "op": ["+I"] * 3},
                          schema=schema))
    table.upsert(pa.table({"id": [1, 2], "v": ["a", "B"], "op": ["-D", "+U"]}, schema=schema))
    assert {r["id"]: r["v"] for r in table.to_arrow().to_pylist()} == {2: "B", 3: "c"}
    with pytest.raises(shoal.SchemaMismatchError, match="rowkind"):
        table.upsert(pa.table({"id": [4], "v": ["x"], "op": ["??"]}, schema=schema))
