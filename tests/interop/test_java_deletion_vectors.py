"""Primary-key tables with deletion vectors, written by Java Paimon (0.9 and 1.0), read
by shoal exactly as Java reads them: every snapshot, a tag, filtered and projected,
the read-optimized view; level-0 files (a write-only commit) stay invisible until a
compaction lifts them. A table of many rows puts bitset and multi-container bitmaps
in the vectors. Index manifests shoal re-encodes read back in Java the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import shoal
from shoal.core import deletion_vectors as DVS
from shoal.format.index_manifest import decode_index_manifest, encode_index_manifest
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [pa.field("p", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.int64())]
)
DV_OPTIONS = {"bucket": "2", "deletion-vectors.enabled": "true"}


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def rows(p: str, ids: list[int], v: int) -> pa.Table:
    return pa.table({"p": [p] * len(ids), "id": ids, "v": [v + i for i in ids]}, schema=SCHEMA)


def ordered(t: pa.Table) -> list[dict[str, Any]]:
    keys = [(c, "ascending") for c in t.column_names]
    return t.sort_by(keys).to_pylist()


def _history() -> list[jp.Op[Any]]:
    """Upserts, deletes, compactions and a write-only commit over two partitions."""
    return [
        jp.create_table(
            "db.t", SCHEMA, partition_keys=["p"], primary_keys=["p", "id"], options=DV_OPTIONS
        ),
        jp.write("db.t", pa.concat_tables([rows("a", list(range(40)), 0), rows("b", [1, 2], 0)])),
        jp.write("db.t", rows("a", [3, 4, 5], 100)),
        jp.write("db.t", rows("a", [6, 7], 0), kind="DELETE"),
        jp.compact("db.t"),
        jp.write("db.t", rows("b", [2, 9], 200)),
        jp.create_tag("db.t", "t1"),
        jp.write("db.t", rows("a", [8, 10], 300), kind=["UPDATE_AFTER", "DELETE"]),
        # a write-only commit leaves level-0 files that a batch scan does not see
        jp.write("db.t", rows("a", [11, 12], 400), options={"write-only": "true"}),
    ]


def test_every_snapshot_reads_as_java_reads_it(java: JavaPaimon, tmp_path: Path) -> None:
    java.run(tmp_path, _history())
    path = str(tmp_path / "db.db" / "t")
    table = shoal.open_table(path)
    ids = [s.id for s in table.snapshots()]
    ops: list[jp.Op[Any]] = [jp.read("db.t", options={"scan.snapshot-id": str(i)}) for i in ids]
    ops += [
        jp.read("db.t"),
        jp.read("db.t", options={"scan.tag-name": "t1"}),
        jp.read("db.t", projection=["v", "id"]),
        jp.read("db.t$ro"),
    ]
    seen = java.run(tmp_path, ops)
    for snapshot_id, expected in zip(ids, seen, strict=False):
        assert ordered(table.to_arrow(snapshot_id=snapshot_id)) == ordered(expected), snapshot_id
    latest, tagged, projected, read_optimized = seen[len(ids) :]
    assert ordered(table.to_arrow()) == ordered(latest)
    # the write-only commit's rows are not visible yet
    assert not pc.any(pc.is_in(latest["v"], pa.array([411, 412]))).as_py()
    assert ordered(table.to_arrow(tag="t1")) == ordered(tagged)
    assert ordered(table.to_arrow(columns=["v", "id"])) == ordered(projected)
    # Paimon 0.9 and 1.0 read such a table's read-optimized view as its batch scan
    assert ordered(read_optimized) == ordered(latest)
    assert ordered(table.to_arrow(read_optimized=True)) == ordered(read_optimized)
    wanted = [r for r in latest.to_pylist() if r["v"] is not None and r["v"] >= 100]
    filtered = table.to_arrow(filter=[("v", ">=", 100)])
    assert ordered(filtered) == sorted(wanted, key=lambda r: (r["p"], r["id"], r["v"]))
    batches = pa.Table.from_batches(list(table.scan().to_batches()))
    assert ordered(batches) == ordered(latest)
    # the vectors really mask rows: some file of the latest snapshot has one
    store = table._store
    snapshot = store.snapshots.latest()
    assert snapshot is not None
    assert DVS.deletion_files(store, snapshot)


def test_vectors_of_many_rows_read_as_java_reads_them(java: JavaPaimon, tmp_path: Path) -> None:
    """70 000 rows, every third one deleted after a full compaction: the vectors hold
    bitset containers and more than one container."""
    many = list(range(70_000))
    (seen,) = java.run(
        tmp_path,
        [
            jp.create_table("db.big", SCHEMA, primary_keys=["p", "id"], options=DV_OPTIONS),
            jp.write("db.big", rows("a", many, 0)),
            jp.compact("db.big"),
            jp.write("db.big", rows("a", many[::3], 0), kind="DELETE"),
            jp.read("db.big"),
        ],
    )[-1:]
    table = shoal.open_table(str(tmp_path / "db.db" / "big"))
    read = table.to_arrow()
    assert read.num_rows == seen.num_rows == 70_000 - len(many[::3])
    assert ordered(read) == ordered(seen)


def test_index_manifests_shoal_writes_read_in_java(java: JavaPaimon, tmp_path: Path) -> None:
    """Each index manifest re-encoded by shoal in place: Java reads every snapshot the
    same."""
    java.run(tmp_path, _history())
    path = tmp_path / "db.db" / "t"
    ids = [s.id for s in shoal.open_table(str(path)).snapshots()]
    reads = [jp.read("db.t", options={"scan.snapshot-id": str(i)}) for i in ids]
    before = java.run(tmp_path, reads)
    manifests = sorted((path / "manifest").glob("index-manifest-*"))
    assert manifests
    for f in manifests:
        f.write_bytes(encode_index_manifest(decode_index_manifest(f.read_bytes())))
    after = java.run(tmp_path, reads)
    assert [ordered(t) for t in after] == [ordered(t) for t in before]


def test_shoal_continues_java_history_and_java_reads_it(java: JavaPaimon, tmp_path: Path) -> None:
    """shoal writes on top of Java's history, write-only level-0 files included: its
    compaction after the write lifts them with its own rows and marks the rows they
    replace, so Java reads what shoal reads, and Java's next write continues."""
    java.run(tmp_path, _history())
    path = str(tmp_path / "db.db" / "t")
    table = shoal.open_table(path)
    table.upsert(rows("a", [1, 11, 30], 500))
    table.delete(rows("a", [12, 31], 0))
    table.upsert(rows("b", [2, 50], 600))
    seen, after = java.run(
        tmp_path,
        [jp.read("db.t"), jp.write("db.t", rows("a", [1, 2, 13], 700)), jp.read("db.t")],
    )[::2]
    table = shoal.open_table(path)
    assert ordered(seen) == ordered(table.to_arrow(snapshot_id=table.latest_snapshot().id - 2))
    values = {r["id"]: r["v"] for r in ordered(seen) if r["p"] == "a"}
    assert values[11] == 511  # Java's write-only rows, lifted by shoal
    assert 12 not in values
    assert ordered(after) == ordered(table.to_arrow())
    keys = [(r["p"], r["id"]) for r in ordered(after)]
    assert len(keys) == len(set(keys))


def test_what_paimon_refuses_shoal_refuses(tmp_path: Path) -> None:
    """No deletion vectors with first-row (Paimon's own check); no switching them on or
    off once the table has data unless deletion-vectors.modifiable says so; no
    event-time compaction, whose late rows would go back to level 0."""
    catalog = shoal.Catalog(str(tmp_path))
    with pytest.raises(shoal.InvalidOptionError, match="first-row"):
        catalog.create_table(
            "db.f",
            SCHEMA,
            primary_keys=["p", "id"],
            options={**DV_OPTIONS, "merge-engine": "first-row"},
        )
    plain = catalog.create_table("db.plain", SCHEMA, primary_keys=["p", "id"])
    with plain.update_schema() as update:  # no data yet: free to switch
        update.set_option("deletion-vectors.enabled", "true")
    with plain.update_schema() as update:
        update.remove_option("deletion-vectors.enabled")
    plain.upsert(rows("a", [1, 2], 0))
    with (
        pytest.raises(shoal.InvalidOptionError, match=r"deletion-vectors\.modifiable"),
        plain.update_schema() as update,
    ):
        update.set_option("deletion-vectors.enabled", "true")
    plain.compact("full")
    with plain.update_schema() as update:
        update.set_option("deletion-vectors.modifiable", "true")
        update.set_option("deletion-vectors.enabled", "true")
    plain.upsert(rows("a", [2, 3], 10))
    assert ordered(plain.to_arrow()) == [
        {"p": "a", "id": 1, "v": 1},
        {"p": "a", "id": 2, "v": 12},
        {"p": "a", "id": 3, "v": 13},
    ]
    dv = catalog.create_table(
        "db.dv",
        SCHEMA,
        primary_keys=["p", "id"],
        options={**DV_OPTIONS, "compaction.event-time.field": "v"},
    )
    dv.upsert(rows("a", [1], 0))
    with pytest.raises(shoal.UnsupportedFeatureError, match="deletion vectors"):
        dv.compact("event-time", event_time_threshold=5)


def test_table_indexes_names_every_vector(java: JavaPaimon, tmp_path: Path) -> None:
    """The table_indexes system table (Paimon 1.1's ``$table_indexes``) lists each
    deletion-vector file with the range and deleted rows of each data file's vector;
    the vectors it lists are exactly those the read masks by."""
    java.run(tmp_path, _history())
    table = shoal.open_table(str(tmp_path / "db.db" / "t"))
    indexes = table.system_table("table_indexes")
    assert indexes.num_rows > 0
    assert set(indexes.column("index_type").to_pylist()) == {"DELETION_VECTORS"}
    assert set(indexes.column("partition").to_pylist()) <= {"{a}", "{b}"}
    listed = {
        r["f0"]: (r["f1"], r["f2"])
        for ranges in indexes.column("dv_ranges").to_pylist()
        for r in ranges or ()
    }
    store = table._store
    snapshot = store.snapshots.latest()
    assert snapshot is not None
    masked = DVS.deletion_files(store, snapshot)
    assert listed == {name: (d.offset, d.length) for name, d in masked.items()}
    first = table.system_table("table_indexes", snapshot_id=1)
    assert first.num_rows <= indexes.num_rows
