"""Dynamic buckets: the hash index file format, Paimon's assignment rules, the index a
write commits, and a concurrent writer's index change making a write assign again."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import shoal
from shoal.errors import CorruptMetadataError, InvalidOptionError, SequenceConflictError
from shoal.format.binary_row import encode_row, serialize
from shoal.format.hash_index import decode_hashes, encode_hashes
from shoal.format.types import parse_type
from shoal.write.bucket import hash_row
from shoal.write.bucket_index import hash_entries, read_hashes
from shoal.write.commit import CommitRequest, FileStoreCommit
from shoal.write.dynamic_bucket import AssignSettings, PartitionIndex

SCHEMA = pa.schema(
    [pa.field("dt", pa.string(), False), pa.field("id", pa.int64(), False), ("v", pa.string())]
)
UNPARTITIONED = serialize((), ())


def rows(ids: list[int], v: str = "x", dt: str = "d1") -> pa.Table:
    return pa.table({"dt": [dt] * len(ids), "id": ids, "v": [v] * len(ids)}, schema=SCHEMA)


# --- the file format ---------------------------------------------------------------------------


def test_hash_files_are_big_endian_ints() -> None:
    data = encode_hashes(np.array([1, -1, 2**31 - 1, -(2**31)]))
    assert data == bytes.fromhex("00000001ffffffff7fffffff80000000")
    assert decode_hashes(data).tolist() == [1, -1, 2**31 - 1, -(2**31)]
    assert decode_hashes(b"").tolist() == []


def test_damaged_hash_files_are_refused() -> None:
    with pytest.raises(CorruptMetadataError, match="4-byte"):
        decode_hashes(b"\x00\x00\x01", "index/x")
    with pytest.raises(CorruptMetadataError, match="counts 2"):
        decode_hashes(b"\x00\x00\x00\x01", "index/x", row_count=2)


# --- the assignment ----------------------------------------------------------------------------


def empty(settings: AssignSettings) -> PartitionIndex:
    return PartitionIndex(UNPARTITIONED, settings, np.zeros(0, np.int32), np.zeros(0, np.int32))


def test_new_keys_fill_buckets_in_order_and_known_keys_stay() -> None:
    index = empty(AssignSettings(target=2))
    assert index.assign(np.array([10, 11, 10, 12, 13, 14])).tolist() == [0, 0, 0, 1, 1, 2]
    assert index.assign(np.array([14, 15, 11, 16])).tolist() == [2, 2, 0, 3]
    loaded = PartitionIndex(
        UNPARTITIONED, AssignSettings(target=3), np.array([5, 6, 7, 8]), np.array([0, 0, 0, 1])
    )
    assert loaded.assign(np.array([9, 8, 10, 11])).tolist() == [1, 1, 1, 2]


def test_max_buckets_sends_new_keys_to_open_buckets() -> None:
    index = empty(AssignSettings(target=1, max_buckets=2))
    out = index.assign(np.array([1, 2, 3, 4, 5])).tolist()
    assert out[:2] == [0, 1]
    assert set(out[2:]) <= {0, 1}
    with pytest.raises(InvalidOptionError, match="target-row-num"):
        empty(AssignSettings(target=1)).assign(np.arange(40_000))


def test_parallel_assigners_open_their_own_buckets() -> None:
    """With two assigners a key's channel is (|partition hash % 2| + |key hash % 2|) % 2
    (the empty partition row's hash is odd), and a channel opens only the buckets of its
    parity."""
    settings = AssignSettings.of(
        {"dynamic-bucket.target-row-num": "2", "dynamic-bucket.initial-buckets": "2"}
    )
    assert (settings.channels, settings.assigners) == (2, 2)
    hashes = np.array([2, 4, 6, 1, 3, -5])
    out = empty(settings).assign(hashes).tolist()
    assert hash_row(UNPARTITIONED[4:]) % 2 == 1
    assert out == [1, 1, 3, 0, 0, 2]


def test_options_are_checked() -> None:
    with pytest.raises(InvalidOptionError):
        AssignSettings.of({"dynamic-bucket.max-buckets": "0"})
    with pytest.raises(InvalidOptionError):
        AssignSettings.of({"dynamic-bucket.target-row-num": "0"})


# --- writes -----------------------------------------------------------------------------------


def index_of(table: shoal.Table) -> dict[tuple[str, int], list[int]]:
    store = table._store
    return {
        (store.partitions.path(e.partition), e.bucket): sorted(read_hashes(store, e).tolist())
        for e in hash_entries(store, table.latest_snapshot())
    }


def test_writes_keep_the_index_and_overwrites_replace_it(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.t",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"dynamic-bucket.target-row-num": "2", "write-only": "true"},
    )
    assert table.options.get("bucket") is None
    table.upsert(pa.concat_tables([rows([1, 2, 3]), rows([1], dt="d2")]))
    table.delete(rows([2, 4]))  # a delete of an unknown key takes a place, as in Paimon
    index = index_of(table)
    assert {k: len(v) for k, v in index.items()} == {
        ("dt=d1", 0): 2,
        ("dt=d1", 1): 2,
        ("dt=d2", 0): 1,
    }
    key_type = [parse_type("BIGINT NOT NULL")]
    assert sorted(index[("dt=d1", 0)] + index[("dt=d1", 1)]) == sorted(
        hash_of(i, key_type) for i in (1, 2, 3, 4)
    )
    table.compact("full")
    assert index_of(table) == index
    table.overwrite(rows([7]), partition={"dt": "d1"})
    assert set(index_of(table)) == {("dt=d1", 0), ("dt=d2", 0)}
    assert index_of(table)[("dt=d1", 0)] == [hash_of(7, key_type)]
    table.drop_partitions([{"dt": "d2"}])
    assert set(index_of(table)) == {("dt=d1", 0)}
    assert table.to_arrow().to_pylist() == [{"dt": "d1", "id": 7, "v": "x"}]


def hash_of(key: int, types: list[object]) -> int:
    from shoal.write.bucket import hash_row

    return hash_row(encode_row((key,), types))  # type: ignore[arg-type]


def test_a_concurrent_index_change_makes_the_write_assign_again(
    catalog: shoal.Catalog,
) -> None:
    """Two writers add the same new key to a partition at once; the loser sees the
    winner's index on its retry, so the key ends in one bucket."""
    options = {"dynamic-bucket.target-row-num": "1", "write-only": "true"}
    table = catalog.create_table("db.c", SCHEMA, primary_keys=["id"], options=options)
    table.upsert(rows([1]))
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def write(ids: list[int], v: str) -> None:
        try:
            writer = shoal.open_table(table.path)
            barrier.wait()
            writer.upsert(rows(ids, v))
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=write, args=([5, 6], "a")),
        threading.Thread(target=write, args=([6, 5], "b")),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    files = table.system_table("files")
    buckets: dict[int, set[int]] = {}
    for path, bucket in zip(
        files["file_path"].to_pylist(), files["bucket"].to_pylist(), strict=True
    ):
        for key in pq.read_table(path, columns=["_KEY_id"])["_KEY_id"].to_pylist():
            buckets.setdefault(key, set()).add(bucket)
    assert all(len(b) == 1 for b in buckets.values()), buckets
    assert sorted(table.to_arrow()["id"].to_pylist()) == [1, 5, 6]
    assert sum(len(v) for v in index_of(table).values()) == 3


def test_a_commit_over_a_changed_index_is_refused(catalog: shoal.Catalog) -> None:
    """The commit compares the hash index files a write assigned from with the latest
    snapshot's; another set raises SequenceConflictError, which makes a write assign
    again."""
    options = {"write-only": "true"}
    table = catalog.create_table("db.i", SCHEMA, primary_keys=["id"], options=options)
    table.upsert(rows([1]))
    (name,) = index_of_names(table)
    committer = FileStoreCommit(table._store)
    with pytest.raises(SequenceConflictError, match="hash index"):
        committer.commit(
            CommitRequest([], allow_empty=True, index_base={UNPARTITIONED: frozenset()})
        )
    snapshot = committer.commit(
        CommitRequest([], allow_empty=True, index_base={UNPARTITIONED: frozenset({name})})
    )
    assert snapshot is not None
    assert snapshot.index_manifest == table.snapshot(snapshot.id - 1).index_manifest


def index_of_names(table: shoal.Table) -> list[str]:
    return [e.index_file.file_name for e in hash_entries(table._store, table.latest_snapshot())]
