"""FileIO's contract, for the local-disk implementation and the generic pyarrow.fs one."""

from __future__ import annotations

import os
import pickle
import threading
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from shoal.catalog import build_schema
from shoal.core.paths import PathFactory
from shoal.core.schema_manager import SchemaManager
from shoal.core.store import FileStore
from shoal.io import DeleteError, FileIO, LocalFileIO, file_io_for, parallel_map
from shoal.io.commit_lock import CommitLock
from shoal.table import Table
from tests.conftest import EVENTS_SCHEMA, events
from tests.faults import Crash, FaultyFileIO


@pytest.fixture(params=["local", "generic"])
def file_io(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> FileIO:
    if request.param == "local":
        return LocalFileIO()
    lock = CommitLock.at(str(tmp_path_factory.mktemp("lock") / "commit.lock"))
    return FileIO(pafs.LocalFileSystem()).with_commit_lock(lock)


def test_read_write_list_delete(file_io: FileIO, tmp_path: Path) -> None:
    path = f"{tmp_path}/a/b/file"
    file_io.write_bytes(path, b"hello")
    assert file_io.read_bytes(path) == b"hello"
    assert file_io.exists(path)
    file_io.write_bytes(path, b"replaced")
    assert file_io.read_bytes(path) == b"replaced"
    [status] = file_io.list_status(f"{tmp_path}/a/b")
    assert (status.path, status.size, status.is_dir) == (path, 8, False)
    assert status.mtime_ms > 0
    assert file_io.list_status(f"{tmp_path}/missing") == []
    assert file_io.delete(path)
    assert not file_io.delete(path)
    with pytest.raises(FileNotFoundError):
        file_io.read_bytes(path)


def test_listing_below_a_file_is_empty_and_a_file_is_no_directory(
    file_io: FileIO, tmp_path: Path
) -> None:
    (tmp_path / "file").write_bytes(b"x")
    assert file_io.list_status(str(tmp_path / "file" / "below")) == []
    with pytest.raises(NotADirectoryError):
        file_io.list_status(str(tmp_path / "file"))


def test_try_create_does_not_replace(file_io: FileIO, tmp_path: Path) -> None:
    path = f"{tmp_path}/x/snapshot-1"
    assert file_io.try_create(path, b"first")
    assert not file_io.try_create(path, b"second")
    assert file_io.read_bytes(path) == b"first"
    assert [s.path for s in file_io.list_status(f"{tmp_path}/x")] == [path]


def test_delete_many_counts_the_files_it_deleted(file_io: FileIO, tmp_path: Path) -> None:
    paths = [f"{tmp_path}/d/f{i}" for i in range(5)]
    for path in paths[:3]:
        file_io.write_bytes(path, b"x")
    file_io.write_bytes(f"{tmp_path}/d/keep", b"x")
    assert file_io.delete_many(paths) == 3  # the two absent ones are skipped
    assert [s.path for s in file_io.list_status(f"{tmp_path}/d")] == [f"{tmp_path}/d/keep"]
    assert file_io.delete_many([]) == 0


def test_delete_many_tries_every_path_then_names_the_failures(
    file_io: FileIO, tmp_path: Path
) -> None:
    (tmp_path / "a").write_bytes(b"x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "inside").write_bytes(b"x")  # a directory is not a file to delete
    (tmp_path / "b").write_bytes(b"x")
    paths = [str(tmp_path / "a"), str(tmp_path / "dir"), str(tmp_path / "b")]
    with pytest.raises(DeleteError) as failure:
        file_io.delete_many(paths)
    assert list(failure.value.failed) == [str(tmp_path / "dir")]
    assert failure.value.deleted == 2
    copy = pickle.loads(pickle.dumps(failure.value))
    assert (copy.failed, copy.deleted, str(copy)) == (
        failure.value.failed,
        2,
        str(failure.value),
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]


def test_faulty_file_io_counts_each_file_of_delete_many(tmp_path: Path) -> None:
    paths = [str(tmp_path / f"f{i}") for i in range(5)]
    for path in paths:
        Path(path).touch()
    counter = FaultyFileIO()
    assert counter.delete_many(paths) == 5
    assert counter.log == [("delete", p) for p in paths]
    for path in paths:
        Path(path).touch()
    crashing = FaultyFileIO(3)
    with pytest.raises(Crash):
        crashing.delete_many(paths)
    assert [os.path.exists(p) for p in paths] == [False, False, True, True, True]
    failing = FaultyFileIO(2, "fail")
    with pytest.raises(DeleteError) as failure:
        failing.delete_many(paths[2:])
    assert list(failure.value.failed) == [paths[3]]
    assert [os.path.exists(p) for p in paths[2:]] == [False, True, False]


def test_local_create_has_exactly_one_winner(tmp_path: Path) -> None:
    file_io = LocalFileIO()
    path = f"{tmp_path}/race"
    winners = []
    barrier = threading.Barrier(8)

    def race(i: int) -> None:
        barrier.wait()
        if file_io.try_create(path, f"writer {i}".encode()):
            winners.append(i)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1
    assert file_io.read_bytes(path) == f"writer {winners[0]}".encode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["race"]  # no temporary left


def test_uris_resolve_to_filesystem_paths(tmp_path: Path) -> None:
    io, path = file_io_for(f"file://{tmp_path}/wh")
    assert isinstance(io, LocalFileIO)
    assert path == f"{tmp_path}/wh"
    assert file_io_for(str(tmp_path))[1] == str(tmp_path)


def test_parallel_map_keeps_order_and_raises() -> None:
    assert parallel_map(lambda x: x * 2, range(50)) == [x * 2 for x in range(50)]

    def boom(x: int) -> int:
        if x == 7:
            raise ValueError("seven")
        return x

    with pytest.raises(ValueError, match="seven"):
        parallel_map(boom, range(10))


def test_a_table_through_the_generic_file_io(tmp_path: Path) -> None:
    """The code path object stores take (no hard links, pyarrow streams for everything)."""
    lock = CommitLock.at(f"{tmp_path}/commit.lock")
    file_io = FileIO(pafs.LocalFileSystem()).with_commit_lock(lock)
    root = f"{tmp_path}/db.db/t"
    schema = build_schema(EVENTS_SCHEMA, ["dt"], [], {}, None)
    assert SchemaManager(file_io, PathFactory(root)).try_create(schema)
    table = Table(FileStore(file_io, root, root, schema))
    table.append(events(range(5)))
    table.append(events(range(5, 9), dt="2026-11-02"))
    table.drop_partitions([{"dt": "2026-11-01"}])
    assert sorted(table.to_arrow().column("id").to_pylist()) == [5, 6, 7, 8]
    assert table.to_arrow(snapshot_id=2).num_rows == 9
