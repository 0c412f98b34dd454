"""Planning from manifest columns gives exactly the splits the objects' planning gives
(the same splits, files, deletion vectors, in the same order) on tables shaped by any
sequence of appends, deletes, overwrites and compactions; its splits decode their files
when read and pickle as plain ones; and a manifest it cannot read exactly is read, and
reported, the ordinary way."""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal.core import plan as PL
from shoal.core.columnar_plan import LazyFiles
from shoal.core.plan import DataSplit
from shoal.format import manifest as M

SCHEMA = pa.schema(
    [pa.field("p", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.int64())]
)
KINDS: dict[str, dict[str, Any]] = {
    "append": {"partition_keys": ["p"], "options": {"bucket": "-1"}},
    "append-buckets": {"partition_keys": ["p"], "options": {"bucket": "2", "bucket-key": "id"}},
    "primary-key": {
        "partition_keys": ["p"],
        "primary_keys": ["p", "id"],
        "options": {"bucket": "2"},
    },
    "deletion-vectors": {
        "partition_keys": ["p"],
        "primary_keys": ["p", "id"],
        "options": {"bucket": "2", "deletion-vectors.enabled": "true"},
    },
}
# tiny splits, so that a bucket's files are packed into several
SMALL_SPLITS = {"source.split.target-size": "2kb", "source.split.open-file-cost": "1kb"}


def _key(split: DataSplit) -> tuple[Any, ...]:
    return (
        split.table_uri,
        split.snapshot_id,
        split.partition,
        split.bucket,
        split.bucket_path,
        tuple(split.files),
        split.deletion_files,
    )


def both_plans(
    table: shoal.Table, monkeypatch: pytest.MonkeyPatch, **scan: Any
) -> tuple[list[DataSplit], list[DataSplit]]:
    """The splits planned from manifest columns, and from objects."""
    with monkeypatch.context() as m:
        m.setattr(PL, "COLUMNAR_MIN_ENTRIES", 0)
        columnar = table.scan(**scan).plan()
    with monkeypatch.context() as m:
        m.setattr(PL, "COLUMNAR_MIN_ENTRIES", 1 << 62)
        objects = table.scan(**scan).plan()
    return columnar, objects


def assert_same_plans(table: shoal.Table, monkeypatch: pytest.MonkeyPatch, **scan: Any) -> None:
    columnar, objects = both_plans(table, monkeypatch, **scan)
    assert all(isinstance(s.files, LazyFiles) for s in columnar)
    assert [_key(s) for s in columnar] == [_key(s) for s in objects]


def rows(partition: str, ids: list[int], v: int) -> pa.Table:
    return pa.table({"p": [partition] * len(ids), "id": ids, "v": [v] * len(ids)}, schema=SCHEMA)


operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.sampled_from(["a", "b", "c"]),
            st.lists(st.integers(0, 30), min_size=1, max_size=6, unique=True),
        ),
        st.tuples(st.just("delete"), st.sampled_from(["a", "b"]), st.integers(0, 30)),
        st.tuples(st.just("overwrite"), st.sampled_from(["a", "b"]), st.just([1, 2])),
        st.tuples(st.just("compact"), st.just(""), st.just(0)),
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(kind=st.sampled_from(sorted(KINDS)), ops=operations, small=st.booleans())
def test_columns_plan_what_objects_plan(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    ops: list[tuple[str, str, Any]],
    small: bool,
) -> None:
    spec = dict(KINDS[kind])
    options = {**spec.pop("options"), **(SMALL_SPLITS if small else {})}
    catalog = shoal.Catalog(str(tmp_path_factory.mktemp("w")))
    table = catalog.create_table("db.t", SCHEMA, options=options, **spec)
    primary_key = "primary_keys" in spec
    for step, (op, partition, arg) in enumerate(ops):
        if op == "append":
            table.append(rows(partition, arg, step))
        elif op == "delete":
            table.delete_where([("p", "=", partition), ("id", "<=", arg)])
        elif op == "overwrite":
            table.overwrite(rows(partition, arg, step), partition={"p": partition})
        elif primary_key:
            table.compact("full")
    assert_same_plans(table, monkeypatch)
    assert_same_plans(table, monkeypatch, filter=[("p", "=", "a")])
    assert_same_plans(table, monkeypatch, filter=[("p", "in", ["b", "c"])])
    if primary_key:
        assert_same_plans(table, monkeypatch, read_optimized=True)
    history = table.snapshots()
    if len(history) > 1:
        assert_same_plans(table, monkeypatch, snapshot_id=history[0].id)


@pytest.fixture
def table(tmp_path: Path) -> shoal.Table:
    catalog = shoal.Catalog(str(tmp_path))
    spec = dict(KINDS["primary-key"])
    t = catalog.create_table(
        "db.t", SCHEMA, options={**spec.pop("options"), **SMALL_SPLITS}, **spec
    )
    for i in range(4):
        t.append(pa.concat_tables([rows("a", list(range(i, 40, 3)), i), rows("b", [i], i)]))
    return t


def test_files_decode_when_read_and_pickle_as_plain_splits(
    table: shoal.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    columnar, objects = both_plans(table, monkeypatch)
    first = columnar[0].files
    assert isinstance(first, LazyFiles)
    assert repr(first) == f"LazyFiles({len(first)} files)"
    assert first == objects[0].files
    assert first[0] == objects[0].files[0]
    assert first[1:] == objects[0].files[1:]
    assert first + () == objects[0].files  # noqa: RUF005 - LazyFiles' own +
    assert [_key(s) for s in pickle.loads(pickle.dumps(columnar))] == [_key(s) for s in objects]
    assert type(pickle.loads(pickle.dumps(columnar[0])).files) is tuple
    assert columnar[0].row_count == objects[0].row_count
    assert columnar[0].file_paths == objects[0].file_paths
    assert [p.files for p in columnar[0].pieces()] == [p.files for p in objects[0].pieces()]
    expected = table.to_arrow().sort_by([("p", "ascending"), ("id", "ascending")])
    assert expected.num_rows == 44
    with monkeypatch.context() as m:
        m.setattr(PL, "COLUMNAR_MIN_ENTRIES", 0)
        assert table.to_arrow().sort_by([("p", "ascending"), ("id", "ascending")]) == expected


def _rewrite_a_manifest(table: shoal.Table, change: Any) -> None:
    store = table._store
    snapshot = store.snapshots.latest()
    assert snapshot is not None
    meta = PL.read_manifest_metas(store, snapshot)[0]
    path = store.paths.manifest_path(meta.file_name)
    entries = M.decode_manifest(store.file_io.read_bytes(path))
    records = [change(e.to_avro()) for e in entries]
    buffer = io.BytesIO()
    fastavro.writer(buffer, fastavro.parse_schema(M.MANIFEST_ENTRY_AVRO), records)
    Path(path).write_bytes(buffer.getvalue())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r | {"_VERSION": 3}, "format version 3"),
        (lambda r: r | {"_KIND": 7}, "neither ADD"),
        (lambda r: r | {"_FILE": r["_FILE"] | {"_FILE_NAME": "../x.parquet"}}, "plain name"),
        (lambda r: r | {"_PARTITION": b"\x01"}, "partition value cannot be read"),
    ],
    ids=["version", "kind", "name", "partition"],
)
def test_a_damaged_manifest_is_reported_the_ordinary_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Any, message: str
) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    spec = dict(KINDS["append"])
    t = catalog.create_table("db.t", SCHEMA, options=spec.pop("options"), **spec)
    t.append(rows("a", [1, 2], 0))
    _rewrite_a_manifest(t, change)
    monkeypatch.setattr(PL, "COLUMNAR_MIN_ENTRIES", 0)
    with pytest.raises(shoal.CorruptMetadataError, match=message):
        shoal.Table.open(str(tmp_path / "db.db" / "t")).scan().plan()


def test_a_file_shoal_does_not_read_is_refused_before_anything_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    spec = dict(KINDS["append"])
    t = catalog.create_table("db.t", SCHEMA, options=spec.pop("options"), **spec)
    t.append(rows("a", [1, 2], 0))
    _rewrite_a_manifest(t, lambda r: r | {"_FILE": r["_FILE"] | {"_FILE_NAME": "data-1.lance"}})
    monkeypatch.setattr(PL, "COLUMNAR_MIN_ENTRIES", 0)
    with pytest.raises(shoal.UnsupportedFeatureError, match="lance data files"):
        shoal.Table.open(str(tmp_path / "db.db" / "t")).scan().plan()
