"""The GCS and Azure FileIOs on their emulators: whole-file writes and reads, listings
with sizes and times, the conditional create raced by threads, batched deletes, and
Parquet read through pyarrow."""

from __future__ import annotations

import pickle
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shoal.io import file_io_for
from shoal.io.azure_file_io import AzureFileIO
from shoal.io.gcs_file_io import GcsFileIO
from tests.stores.store_support import StoreEnv


def test_the_uri_gives_the_stores_file_io(store: StoreEnv) -> None:
    file_io, path = file_io_for(store.uri("wh"))
    assert path == f"{store.bucket}/wh"
    assert isinstance(file_io, GcsFileIO if store.scheme == "gs" else AzureFileIO)
    assert file_io.atomic_create
    assert file_io_for(store.uri("other"))[0] is file_io  # one per store and process


def test_write_read_list_delete(store: StoreEnv) -> None:
    file_io, root = file_io_for(store.uri("wh"))
    before = int(time.time() * 1000) - 2000
    file_io.write_bytes(f"{root}/a/one", b"1")
    file_io.write_bytes(f"{root}/a/b/two", b"22")
    file_io.overwrite(f"{root}/a/one", b"111")
    assert file_io.read_bytes(f"{root}/a/one") == b"111"
    assert file_io.exists(f"{root}/a/b/two")
    assert not file_io.exists(f"{root}/a/none")
    with pytest.raises(FileNotFoundError):
        file_io.read_bytes(f"{root}/a/none")

    files = {s.path: s for s in file_io.list_status(f"{root}/a", recursive=True) if not s.is_dir}
    assert {p: s.size for p, s in files.items()} == {f"{root}/a/one": 3, f"{root}/a/b/two": 2}
    assert all(before <= s.mtime_ms <= time.time() * 1000 + 2000 for s in files.values())
    assert file_io.list_status(f"{root}/absent") == []
    assert store.list_keys("wh/") == ["wh/a/b/two", "wh/a/one"]  # no directory markers

    assert file_io.delete(f"{root}/a/one")
    assert not file_io.delete(f"{root}/a/one")
    assert store.list_keys("wh/") == ["wh/a/b/two"]


def test_try_create_is_create_if_absent(store: StoreEnv) -> None:
    file_io, root = file_io_for(store.uri("wh"))
    assert file_io.try_create(f"{root}/snapshot-1", b"mine")
    assert not file_io.try_create(f"{root}/snapshot-1", b"theirs")
    assert store.get("wh/snapshot-1") == b"mine"
    # The same bytes again: a retried create that meets its own object counts as won.
    assert file_io.try_create(f"{root}/snapshot-1", b"mine")


def test_racing_creates_have_exactly_one_winner(store: StoreEnv) -> None:
    file_io, root = file_io_for(store.uri("wh"))
    threads, keys = 6, 15
    wins: dict[int, list[int]] = {k: [] for k in range(keys)}
    start = threading.Barrier(threads)

    def race(writer: int) -> None:
        start.wait()
        for k in range(keys):
            if file_io.try_create(f"{root}/snapshot/snapshot-{k}", f"writer {writer}".encode()):
                wins[k].append(writer)

    workers = [threading.Thread(target=race, args=(w,)) for w in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert all(len(won) == 1 for won in wins.values()), wins
    for k, won in wins.items():
        assert store.get(f"wh/snapshot/snapshot-{k}") == f"writer {won[0]}".encode()


def test_delete_many_in_batches(store: StoreEnv) -> None:
    file_io, root = file_io_for(store.uri("wh"))
    paths = [f"{root}/data/f-{i:04d}" for i in range(300)]
    for i, path in enumerate(paths):
        store.put(path.split("/", 1)[1], str(i).encode())
    absent = [f"{root}/data/none-{i}" for i in range(3)]
    deleted = file_io.delete_many(paths[:280] + absent)
    assert deleted >= 280  # a store whose batch delete cannot tell absent files counts them
    assert store.list_keys("wh/") == [p.split("/", 1)[1] for p in paths[280:]]
    assert file_io.delete_many([]) == 0


def test_parquet_through_open_input_file(store: StoreEnv) -> None:
    file_io, root = file_io_for(store.uri("wh"))
    table = pa.table({"id": list(range(5000)), "name": [f"n{i}" for i in range(5000)]})
    with file_io.open_output_stream(f"{root}/data/f.parquet") as out:
        pq.write_table(table, out, row_group_size=1000)
    with file_io.open_input_file(f"{root}/data/f.parquet") as f:
        read = pq.ParquetFile(f)
        assert read.metadata.num_row_groups == 5
        assert read.read_row_group(3).column("id")[0].as_py() == 3000
    assert pq.read_table(f"{root}/data/f.parquet", filesystem=file_io.fs).equals(table)


def test_a_file_io_travels_to_another_process(store: StoreEnv) -> None:
    """Spark ships FileIOs to its workers by pickling; the copy reaches the same store
    and makes its own client."""
    file_io, root = file_io_for(store.uri("wh"))
    file_io.write_bytes(f"{root}/a", b"1")
    copy = pickle.loads(pickle.dumps(file_io))
    assert type(copy) is type(file_io)
    assert copy.read_bytes(f"{root}/a") == b"1"
    assert copy.try_create(f"{root}/b", b"2")
    assert not copy.try_create(f"{root}/b", b"3")
    with copy.open_input_file(f"{root}/b") as f:
        assert f.read() == b"2"
