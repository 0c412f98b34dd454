"""Dynamic-bucket tables (``bucket`` = -1) between Paimon's Java implementation (0.9 and
1.0) and shoal: what one writes the other reads, at every snapshot, and each key stays
in one bucket of its partition whoever writes it (Paimon's hash index)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings

import shoal
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries
from shoal.write.bucket import key_hashes
from shoal.write.bucket_index import hash_entries, read_hashes
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon
from tests.interop.turns import (
    SCHEMA,
    SETTINGS,
    STEPS,
    Step,
    ordered,
    rows,
    run_turns,
    table_path,
)

pytestmark = pytest.mark.interop

# Three keys per bucket: a few rows open several buckets.
TARGET = {"dynamic-bucket.target-row-num": "3"}


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def buckets_of_keys(table: shoal.Table) -> dict[tuple[object, ...], set[int]]:
    """Every key of the live data files (deletes included) with the buckets holding it."""
    files = table.system_table("files")
    found: dict[tuple[object, ...], set[int]] = defaultdict(set)
    for path, partition, bucket in zip(
        files["file_path"].to_pylist(),
        files["partition"].to_pylist(),
        files["bucket"].to_pylist(),
        strict=True,
    ):
        keys = pq.read_table(path, columns=["_KEY_id"])["_KEY_id"].to_pylist()
        for key in keys:
            found[(partition, key)].add(bucket)
    return found


def assert_one_bucket_per_key(table: shoal.Table) -> None:
    spread = {k: b for k, b in buckets_of_keys(table).items() if len(b) > 1}
    assert not spread, f"keys in several buckets: {spread}"


def test_java_tables_read_by_snapshot_and_compacted_by_shoal(
    java: JavaPaimon, tmp_path: Path
) -> None:
    """Java writes a partitioned and an unpartitioned dynamic-bucket table over several
    buckets; shoal reads every snapshot as Java does, compacts them keeping Paimon's
    hash index, and Java's next upserts still find each key in its bucket."""
    writes = [
        (rows([1, 2, 3, 4, 5, 6, 7], "a"), "INSERT"),
        (rows([2, 5, 8, 9], "b"), "INSERT"),
        (rows([3, 8], "c"), "DELETE"),
        (pa.concat_tables([rows([1, 10], "d", "d2"), rows([7], "d")]), "INSERT"),
    ]
    ops: list[jp.Op[object]] = [
        jp.create_table(
            "db.p", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=TARGET
        ),
        jp.create_table("db.u", SCHEMA, primary_keys=["id"], options=TARGET),
    ]
    for data, kind in writes:
        ops += [
            jp.write("db.p", data, kind=kind),
            jp.write("db.u", data.set_column(0, "dt", pa.array(["d1"] * data.num_rows)), kind=kind),
        ]
    for snapshot_id in range(1, len(writes) + 1):
        ops += [
            jp.read("db.p", options={"scan.snapshot-id": str(snapshot_id)}),
            jp.read("db.u", options={"scan.snapshot-id": str(snapshot_id)}),
        ]
    results = java.run(tmp_path, ops)
    by_snapshot = results[2 + 2 * len(writes) :]
    for name in ("p", "u"):
        table = shoal.open_table(table_path(tmp_path, name))
        assert max(table.system_table("files")["bucket"].to_pylist()) >= 2
        for snapshot_id in range(1, len(writes) + 1):
            seen = by_snapshot[2 * (snapshot_id - 1) + (name == "u")]
            assert ordered(table.to_arrow(snapshot_id=snapshot_id)) == ordered(seen)
        before = table.latest_snapshot()
        assert before is not None
        assert before.index_manifest is not None
        result = table.compact("full")
        assert result.snapshot is not None
        assert result.snapshot.index_manifest == before.index_manifest
        assert ordered(table.to_arrow()) == ordered(table.to_arrow(snapshot_id=before.id))
    upserts = pa.concat_tables([rows([1, 2, 3, 4, 11], "e"), rows([1, 12], "e", "d2")])
    after = java.run(
        tmp_path,
        [
            jp.write("db.p", upserts),
            jp.write("db.u", upserts.set_column(0, "dt", pa.array(["d1"] * upserts.num_rows))),
            jp.read("db.p"),
            jp.read("db.u"),
        ],
    )[2:]
    for name, seen in zip(("p", "u"), after, strict=True):
        table = shoal.open_table(table_path(tmp_path, name))
        assert ordered(table.to_arrow()) == ordered(seen)
        keys = [(r["dt"], r["id"]) for r in seen.to_pylist()]
        assert len(keys) == len(set(keys))
        assert_one_bucket_per_key(table)


# --- shoal writes, Java reads and continues ---------------------------------------------------


def hash_index_agrees(table: shoal.Table) -> None:
    """Every key of a live data file is in the hash index file of its partition and
    bucket, and no hash is in two buckets of a partition."""
    store = table._store
    snapshot = table.latest_snapshot()
    index: dict[tuple[bytes, int], set[int]] = {}
    for e in hash_entries(store, snapshot):
        hashes = read_hashes(store, e).tolist()
        assert len(hashes) == e.index_file.row_count
        assert e.index_file.file_size == 4 * len(hashes)
        index[(e.partition, e.bucket)] = set(hashes)
    by_partition: dict[bytes, list[set[int]]] = defaultdict(list)
    for (partition, _), hashes in index.items():
        by_partition[partition].append(hashes)
    for sets in by_partition.values():
        assert sum(map(len, sets)) == len(set().union(*sets))
    for e in live_entries(store, snapshot) if snapshot is not None else []:
        bucket_dir = store.paths.bucket_dir(store.partitions.path(e.partition), e.bucket)
        keys = pq.read_table(data_file_path(bucket_dir, e.file), columns=["_KEY_id"])
        hashes = key_hashes(keys.rename_columns(["id"]), ["id"], store.bucket_key_types)
        assert set(hashes.tolist()) <= index[(e.partition, e.bucket)]


def run_example(version: str, steps: list[Step], tmp: Path, partitioned: bool) -> None:
    """``steps`` by Java and shoal in turns (``tests/interop/turns``); at the end each
    key is in one bucket of its partition and the hash index agrees with the files."""

    def check(table: shoal.Table) -> None:
        assert_one_bucket_per_key(table)
        hash_index_agrees(table)

    options = {**TARGET, "write-only": "true"}
    run_turns(version, steps, tmp, partitioned=partitioned, options=options, check=check)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
@settings(max_examples=2, **SETTINGS)
@given(steps=STEPS)
def test_java_and_shoal_take_turns(
    version: str, partitioned: bool, steps: list[Step], tmp_path_factory: pytest.TempPathFactory
) -> None:
    run_example(version, steps, tmp_path_factory.mktemp("dyn"), partitioned)


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
@settings(max_examples=12, **SETTINGS)
@given(steps=STEPS)
def test_java_and_shoal_take_turns_longer(
    version: str, partitioned: bool, steps: list[Step], tmp_path_factory: pytest.TempPathFactory
) -> None:
    run_example(version, steps, tmp_path_factory.mktemp("dyn"), partitioned)


def test_hash_index_files_java_wrote_hold_the_keys_of_their_bucket(
    java: JavaPaimon, tmp_path: Path
) -> None:
    """Each HASH file Java wrote holds exactly the MurmurHash of every key written to its
    bucket (a string and an integer key column here), four big-endian bytes each."""
    schema = pa.schema(
        [pa.field("name", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.int32())]
    )
    names = [f"key-{i % 5}-{'x' * (i % 9)}" for i in range(14)]
    data = pa.table({"name": names, "id": list(range(14)), "v": list(range(14))}, schema=schema)
    java.run(
        tmp_path,
        [
            jp.create_table("db.h", schema, primary_keys=["name", "id"], options=TARGET),
            jp.write("db.h", data.slice(0, 9)),
            jp.write("db.h", data.slice(5)),
            jp.write("db.h", data.slice(0, 2), kind="DELETE"),
        ],
    )
    table = shoal.open_table(table_path(tmp_path, "h"))
    store = table._store
    snapshot = table.latest_snapshot()
    entries = hash_entries(store, snapshot)
    assert len(entries) >= 4
    keys_of: dict[int, set[int]] = defaultdict(set)
    for e in live_entries(store, snapshot):
        path = data_file_path(store.paths.bucket_dir("", e.bucket), e.file)
        keys = pq.read_table(path, columns=["_KEY_name", "_KEY_id"])
        keys = keys.rename_columns(["name", "id"])
        keys_of[e.bucket] |= set(key_hashes(keys, ["name", "id"], store.bucket_key_types).tolist())
    for e in entries:
        hashes = read_hashes(store, e)
        assert e.index_file.file_size == 4 * len(hashes) == 4 * e.index_file.row_count
        assert set(hashes.tolist()) == keys_of[e.bucket]
    assert ordered_by(table.to_arrow()) == ordered_by(data.slice(2))


def ordered_by(table: pa.Table) -> list[dict[str, object]]:
    return table.sort_by([("name", "ascending"), ("id", "ascending")]).to_pylist()
