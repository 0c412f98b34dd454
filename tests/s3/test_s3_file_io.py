"""S3FileIO against a real S3 server: the conditional create, puts, deletes, listing."""

from __future__ import annotations

import pickle
import threading

import pytest
from botocore.exceptions import ClientError

from shoal.errors import InvalidArgumentError
from shoal.io import DeleteError, file_io_for
from shoal.io import s3_file_io as s3io
from shoal.io.s3_file_io import S3FileIO, S3Options
from tests.s3.s3_support import CountingS3FileIO, S3Env


def test_the_server_honours_if_none_match_on_put(s3: S3Env) -> None:
    """What S3FileIO relies on, checked on the bare protocol."""
    s3.client.put_object(Bucket=s3.bucket, Key="k", Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as refused:
        s3.client.put_object(Bucket=s3.bucket, Key="k", Body=b"second", IfNoneMatch="*")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert refused.value.response["Error"]["Code"] == "PreconditionFailed"
    assert s3.get("k") == b"first"


def test_s3_uris_resolve_to_the_s3_file_io(s3: S3Env) -> None:
    file_io, path = file_io_for(f"s3://{s3.bucket}/wh/")
    assert isinstance(file_io, S3FileIO)
    assert file_io.atomic_create
    assert path == f"{s3.bucket}/wh"
    assert file_io.options == S3Options(endpoint_url=s3.endpoint, region="us-east-1")
    assert file_io_for(f"s3://{s3.bucket}/other")[0] is file_io  # one per configuration
    with pytest.raises(InvalidArgumentError, match="environment"):
        file_io_for(f"s3://{s3.bucket}/wh?endpoint_override=elsewhere")


def test_try_create_on_an_existing_key_returns_false_and_keeps_it(s3: S3Env) -> None:
    file_io = S3FileIO()
    path = f"{s3.bucket}/t/snapshot/snapshot-1"
    assert file_io.try_create(path, b"first")
    assert not file_io.try_create(path, b"second")
    assert s3.get("t/snapshot/snapshot-1") == b"first"
    # A put meeting an object with exactly its own bytes (its own earlier attempt,
    # retried after a lost answer) counts as created.
    assert file_io.try_create(path, b"first")
    assert s3.list_keys() == ["t/snapshot/snapshot-1"]


def test_racing_creates_have_exactly_one_winner(s3: S3Env) -> None:
    file_io = S3FileIO()
    path = f"{s3.bucket}/race"
    winners: list[int] = []
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
    assert s3.get("race") == f"writer {winners[0]}".encode()


def test_read_write_list_delete_without_directory_markers(s3: S3Env) -> None:
    file_io = S3FileIO()
    root = f"{s3.bucket}/a"
    file_io.write_bytes(f"{root}/b/file", b"hello")
    file_io.overwrite(f"{root}/b/hint", b"1")
    file_io.overwrite(f"{root}/b/hint", b"2")
    with file_io.open_output_stream(f"{root}/c/data.parquet") as out:
        out.write(b"parquet bytes")
    file_io.mkdirs(f"{root}/empty")
    assert file_io.read_bytes(f"{root}/b/file") == b"hello"
    assert file_io.read_bytes(f"{root}/b/hint") == b"2"
    assert file_io.exists(f"{root}/b/file")
    assert file_io.is_dir(f"{root}/b")
    assert not file_io.exists(f"{root}/b/missing")
    listed = file_io.list_status(f"{root}/b")
    assert [(s.path, s.size, s.is_dir) for s in listed] == [
        (f"{root}/b/file", 5, False),
        (f"{root}/b/hint", 1, False),
    ]
    assert all(s.mtime_ms > 10**12 for s in listed)
    assert file_io.list_status(f"{root}/missing") == []
    assert file_io.delete(f"{root}/b/file")
    assert not file_io.delete(f"{root}/b/file")
    with pytest.raises(FileNotFoundError):
        file_io.read_bytes(f"{root}/b/file")
    assert not file_io.remove_empty_dir(f"{root}/b")
    # Only the files: no "directory" objects were ever written.
    assert s3.list_keys() == ["a/b/hint", "a/c/data.parquet"]


def test_delete_many_sends_batches_of_delete_objects(
    s3: S3Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3io, "DELETE_BATCH", 10)
    file_io = CountingS3FileIO()
    paths = [f"{s3.bucket}/d/f{i:02}" for i in range(25)]
    for path in paths:
        file_io.write_bytes(path, b"x")
    s3.put("keep")
    assert file_io.delete_many(paths) == 25
    assert file_io.requests["DeleteObjects"] == 3
    assert file_io.requests["DeleteObject"] == 0
    assert s3.list_keys() == ["keep"]
    assert file_io.delete_many([]) == 0
    assert file_io.requests["DeleteObjects"] == 3


def test_delete_many_names_what_it_could_not_delete(s3: S3Env) -> None:
    file_io = S3FileIO()
    s3.put("x")
    missing_bucket = f"{s3.bucket}-missing"
    with pytest.raises(DeleteError) as failure:
        file_io.delete_many([f"{s3.bucket}/x", f"{missing_bucket}/y"])
    assert list(failure.value.failed) == [f"{missing_bucket}/y"]
    assert failure.value.deleted == 1
    assert isinstance(failure.value, OSError)
    assert s3.list_keys() == []


def test_delete_dir_removes_one_prefix(s3: S3Env) -> None:
    file_io = S3FileIO()
    for key in ("wh/t/a", "wh/t/b/c", "wh/t2/d", "wh/t/"):
        s3.put(key)
    file_io.delete_dir(f"{s3.bucket}/wh/t")
    assert s3.list_keys() == ["wh/t2/d"]


def test_the_file_io_pickles_and_works_after(s3: S3Env) -> None:
    file_io = S3FileIO()
    file_io.write_bytes(f"{s3.bucket}/p", b"before")
    copy = pickle.loads(pickle.dumps(file_io))
    assert copy.options == file_io.options
    assert copy.read_bytes(f"{s3.bucket}/p") == b"before"
    assert not copy.try_create(f"{s3.bucket}/p", b"after")
