"""s3:// on a store that cannot be reached: StoreUnreachableError within the time limit,
naming the store and what to check; and the clients' limits follow the time limit."""

from __future__ import annotations

import time
from collections.abc import Callable

import pyarrow as pa
import pytest

import shoal
from shoal.io import DeleteError, file_io_for
from shoal.io.s3_file_io import S3FileIO, S3Options, _boto3_client
from tests.io.stores import closed_port, silent_server
from tests.s3.s3_support import S3Env

BOUND = 3.0  # seconds: the time limit these tests set
SLACK = 2.0  # what the clock may add to it on a busy machine


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Points the AWS environment at an endpoint, with fake credentials."""
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("SHOAL_STORE_TIMEOUT", str(BOUND))

    def point_at(endpoint: str) -> None:
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)

    return point_at


def unreachable(call: Callable[[], object]) -> tuple[shoal.StoreUnreachableError, float]:
    started = time.monotonic()
    with pytest.raises(shoal.StoreUnreachableError) as info:
        call()
    return info.value, time.monotonic() - started


def test_a_closed_endpoint_fails_within_the_time_limit(aws_env: Callable[[str], None]) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    aws_env(endpoint)
    error, took = unreachable(lambda: shoal.Catalog("s3://bucket/wh"))
    assert took < BOUND + SLACK
    assert isinstance(error, shoal.ShoalError)
    assert isinstance(error, OSError)
    assert error.store == f"s3://bucket at {endpoint}"
    assert error.timeout == BOUND
    message = str(error)
    assert "Could not connect" in message  # what the client reported
    assert "AWS_ENDPOINT_URL" in message
    assert "SHOAL_STORE_TIMEOUT" in message

    _, took = unreachable(lambda: shoal.open_table("s3://bucket/wh/db.db/t"))
    assert took < BOUND + SLACK


def test_a_store_that_never_answers_fails_within_the_time_limit(
    aws_env: Callable[[str], None],
) -> None:
    with silent_server() as port:
        aws_env(f"http://127.0.0.1:{port}")
        error, took = unreachable(lambda: shoal.Catalog("s3://bucket/wh"))
    assert took < BOUND + SLACK
    assert error.store == f"s3://bucket at http://127.0.0.1:{port}"


def test_requests_that_cannot_connect_raise_the_typed_error(
    aws_env: Callable[[str], None],
) -> None:
    """A FileIO made before the store went away: boto3's connection errors come out as
    StoreUnreachableError (an OSError), not as botocore's own."""
    endpoint = f"http://127.0.0.1:{closed_port()}"
    file_io = S3FileIO(S3Options(endpoint_url=endpoint, region="us-east-1", timeout=BOUND))
    error, took = unreachable(lambda: file_io.write_bytes("bucket/wh/x", b"x"))
    assert took < BOUND + SLACK
    assert error.store == f"s3://bucket at {endpoint}"
    unreachable(lambda: file_io.try_create("bucket/wh/y", b"y"))
    unreachable(lambda: file_io.delete("bucket/wh/x"))
    unreachable(lambda: file_io.delete_dir("bucket/wh"))
    with pytest.raises(DeleteError) as info:
        file_io.delete_many(["bucket/wh/x", "bucket/wh/y"])
    assert "cannot reach the object store" in next(iter(info.value.failed.values()))


def test_the_clients_follow_the_time_limit() -> None:
    options = S3Options(endpoint_url="http://127.0.0.1:9", region="us-east-1", timeout=12.0)
    config = _boto3_client(options).meta.config
    assert config.connect_timeout == 2.0
    assert config.read_timeout == 12.0
    assert config.retries["total_max_attempts"] == 6  # five retries
    assert S3Options.from_env({"SHOAL_STORE_TIMEOUT": "7"}).timeout == 7.0
    assert S3Options.from_env({}).timeout == 30.0


def test_a_reachable_store_is_asked_once(s3: S3Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOAL_STORE_TIMEOUT", "9")  # a configuration of its own
    file_io, _ = file_io_for(s3.uri("wh"))
    assert file_io_for(s3.uri("other"))[0] is file_io
    table = shoal.Catalog(s3.uri("wh")).create_table("db.t", pa.schema([("a", pa.int64())]))
    assert table.snapshots() == []
    # A bucket that is not there answers too: the operations that need it report it.
    shoal.Catalog(f"s3://{s3.bucket}-missing/wh")
