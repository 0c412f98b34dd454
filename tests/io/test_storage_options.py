"""storage_options: S3 configured by them alone (moto, no AWS environment), unknown keys
refused with the nearest known one, secrets kept out of messages, FileIOs shared per
configuration, and commits refused on a store without an atomic create unless a commit
lock is configured."""

from __future__ import annotations

import multiprocessing
import threading
import time
import uuid
from pathlib import Path

import boto3
import pyarrow.fs as pafs
import pytest

import shoal
from shoal.errors import CommitConflictError, InvalidOptionError, UnknownOptionError
from shoal.io import FileIO, LocalFileIO, file_io_for
from shoal.io.commit_lock import CommitLock
from shoal.io.s3_options import S3Options
from tests.conftest import EVENTS_SCHEMA, events
from tests.s3.conftest import s3_endpoint  # noqa: F401  (the moto server fixture)

SECRET = "do-not-print-this-secret"


@pytest.fixture
def no_aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No AWS configuration from the environment or the home directory."""
    import os

    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "absent-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "absent-credentials"))


@pytest.fixture
def bucket(s3_endpoint: str) -> str:  # noqa: F811
    name = f"shoal-opts-{uuid.uuid4().hex[:12]}"
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key=SECRET,
    )
    client.create_bucket(Bucket=name)
    return name


def paimon_keys(endpoint: str) -> dict[str, str]:
    return {
        "s3.endpoint": endpoint,
        "s3.access-key": "testing",
        "s3.secret-key": SECRET,
        "s3.region": "us-east-1",
        "s3.path.style.access": "true",
    }


def test_a_catalog_on_s3_configured_only_by_storage_options(
    no_aws_env: None,
    s3_endpoint: str,  # noqa: F811
    bucket: str,
) -> None:
    options = paimon_keys(s3_endpoint)
    catalog = shoal.Catalog(f"s3://{bucket}/wh", storage_options=options)
    table = catalog.create_table("db.t", EVENTS_SCHEMA, partition_keys=["dt"])
    table.append(events(range(5)))
    reopened = shoal.open_table(f"s3://{bucket}/wh/db.db/t", storage_options=options)
    assert sorted(reopened.to_arrow().column("id").to_pylist()) == [0, 1, 2, 3, 4]
    # The same table through pyiceberg's and deltalake's spellings of the settings.
    for spelled in (
        {
            "s3.endpoint": s3_endpoint,
            "s3.access-key-id": "testing",
            "s3.secret-access-key": SECRET,
            "s3.region": "us-east-1",
        },
        {
            "AWS_ENDPOINT_URL": s3_endpoint,
            "aws_access_key_id": "testing",
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION": "us-east-1",
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        },
        {
            "fs.s3a.endpoint": s3_endpoint.removeprefix("http://"),
            "fs.s3a.connection.ssl.enabled": "false",
            "fs.s3a.access.key": "testing",
            "s3a.secret.key": SECRET,
            "fs.s3a.endpoint.region": "us-east-1",
        },
    ):
        table = shoal.open_table(f"s3://{bucket}/wh/db.db/t", storage_options=spelled)
        assert table.to_arrow().num_rows == 5


def test_without_the_options_the_store_is_not_found(
    no_aws_env: None,
    bucket: str,
) -> None:
    """The options are what reached moto: without them the store is AWS, unreachable
    from here (or without credentials), and nothing is read from the bucket."""
    with pytest.raises(OSError, match=r"amazonaws|credentials|reach"):
        shoal.open_table(f"s3://{bucket}/wh/db.db/t", storage_options={"s3.region": "us-east-1"})


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("s3.acess-key", "s3.access-key"),
        ("s3.secret.kee", "s3.secret.key"),
        ("AWS_SECRET_KEY", "aws_secret_access_key"),
        ("s3.endpiont", "s3.endpoint"),
        ("fs.s3a.connection.maximum", None),
    ],
)
def test_an_unknown_s3_key_is_refused_naming_the_nearest(
    key: str, suggestion: str | None, bucket: str
) -> None:
    with pytest.raises(UnknownOptionError) as raised:
        file_io_for(f"s3://{bucket}/wh", {key: SECRET, "s3.region": "us-east-1"})
    assert raised.value.key == key
    if suggestion is not None:
        assert raised.value.suggestion is not None
        assert raised.value.suggestion.lower() == suggestion.lower()
        assert repr(raised.value.suggestion) in str(raised.value)
    assert SECRET not in str(raised.value)
    assert SECRET not in repr(raised.value.value)


def test_secrets_stay_out_of_reprs_and_errors(s3_endpoint: str) -> None:  # noqa: F811
    options = S3Options().with_storage_options(
        {"s3.endpoint": s3_endpoint, "s3.access-key": "AKIA-shown-nowhere", "s3.secret-key": SECRET}
    )
    assert options.secret_key == SECRET
    assert SECRET not in repr(options)
    assert "AKIA" not in repr(options)
    with pytest.raises(InvalidOptionError) as raised:
        S3Options().with_storage_options({"s3.secret-key": SECRET, "AWS_SECRET_ACCESS_KEY": SECRET})
    assert SECRET not in str(raised.value)
    with pytest.raises(InvalidOptionError, match=r"path\.style"):
        S3Options().with_storage_options({"s3.path.style.access": "maybe"})


def test_file_ios_are_shared_per_configuration(
    no_aws_env: None,
    s3_endpoint: str,  # noqa: F811
    bucket: str,
) -> None:
    options = paimon_keys(s3_endpoint)
    first, path = file_io_for(f"s3://{bucket}/a", options)
    second, _ = file_io_for(f"s3://{bucket}/b", dict(options))
    assert first is second
    assert path == f"{bucket}/a"
    other, _ = file_io_for(f"s3://{bucket}/a", {**options, "s3.secret-key": "another"})
    assert other is not first
    assert other.options.secret_key == "another"  # type: ignore[attr-defined]
    assert first.options.secret_key == SECRET  # type: ignore[attr-defined]
    virtual, _ = file_io_for(f"s3://{bucket}/a", {**options, "s3.path.style.access": "false"})
    assert virtual is not first
    assert virtual.options.path_style is False


def test_a_local_path_takes_no_store_keys(tmp_path: Path) -> None:
    with pytest.raises(UnknownOptionError, match="local path"):
        shoal.Catalog(str(tmp_path), storage_options={"s3.endpoint": "http://x"})
    with pytest.raises(UnknownOptionError) as raised:
        file_io_for(str(tmp_path), {"lock.fil": "x"})
    assert raised.value.suggestion == "lock.file"
    # A commit lock is accepted anywhere; a store with an atomic create does not need it.
    file_io, _ = file_io_for(str(tmp_path), {"lock.file": str(tmp_path / "lock")})
    assert isinstance(file_io, LocalFileIO)
    assert file_io.commit_lock is None


# --- stores without an atomic create -------------------------------------------------------------
def test_a_commit_without_an_atomic_create_is_refused(tmp_path: Path) -> None:
    catalog = shoal.Catalog("mock:///wh")  # pyarrow's in-memory filesystem: no atomic create
    with pytest.raises(shoal.UnsafeCommitError, match=r"lock\.file") as raised:
        catalog.create_table("db.t", EVENTS_SCHEMA)
    assert "two writers" in str(raised.value)
    assert not catalog.table_exists("db.t")


def test_a_commit_lock_lets_such_a_store_commit(tmp_path: Path) -> None:
    lock = str(tmp_path / "commit.lock")
    catalog = shoal.Catalog("mock:///wh", storage_options={"lock.file": lock})
    table = catalog.create_table("db.t", EVENTS_SCHEMA, partition_keys=["dt"])
    table.append(events(range(3)))
    table.append(events(range(3, 5)))
    table.create_tag("v2")
    assert table.to_arrow().num_rows == 5
    assert (tmp_path / "commit.lock").exists()


def test_a_write_without_the_lock_is_refused_before_a_data_file_is_written(
    tmp_path: Path,
) -> None:
    catalog = shoal.Catalog("mock:///wh", storage_options={"lock.file": str(tmp_path / "l")})
    table = catalog.create_table("db.t", EVENTS_SCHEMA, partition_keys=["dt"])
    table.append(events(range(3)))
    store = table._store
    store.file_io = FileIO(store.file_io.fs)  # the same store, opened without the lock

    def data_files() -> list[str]:
        listing = store.file_io.list_status(store.root, recursive=True)
        return sorted(s.path for s in listing if s.path.endswith(".parquet"))

    before = data_files()
    with pytest.raises(shoal.UnsafeCommitError):
        table.append(events(range(3, 5)))
    assert data_files() == before
    assert table.to_arrow().num_rows == 3


def test_the_lock_directory_must_exist(tmp_path: Path) -> None:
    with pytest.raises(InvalidOptionError, match=r"lock\.file"):
        shoal.Catalog("mock:///wh", storage_options={"lock.file": str(tmp_path / "no" / "x")})


def test_a_create_waits_for_the_lock_and_gives_up_in_time(tmp_path: Path) -> None:
    lock = CommitLock(str(tmp_path / "lock"), wait_seconds=0.3)
    file_io = FileIO(pafs.LocalFileSystem()).with_commit_lock(lock)
    target = str(tmp_path / "snapshot-1")
    with CommitLock(lock.path).held():
        started = time.monotonic()
        with pytest.raises(CommitConflictError, match="held by another writer"):
            file_io.try_create(target, b"x")
        assert 0.3 <= time.monotonic() - started < 5
    assert not Path(target).exists()
    released = threading.Event()

    def hold() -> None:
        with CommitLock(lock.path).held():
            released.wait(0.2)

    holder = threading.Thread(target=hold)
    holder.start()
    time.sleep(0.05)
    assert (
        FileIO(pafs.LocalFileSystem())
        .with_commit_lock(CommitLock(lock.path, wait_seconds=10))
        .try_create(target, b"x")
    )
    holder.join()


def _race(args: tuple[str, str, int]) -> list[bool]:
    directory, lock_path, rounds = args
    file_io = FileIO(pafs.LocalFileSystem()).with_commit_lock(CommitLock(lock_path))
    return [file_io.try_create(f"{directory}/snapshot-{i}", b"w") for i in range(rounds)]


def test_the_lock_gives_each_create_exactly_one_winner_across_processes(tmp_path: Path) -> None:
    """Four processes race for the same 30 files through the check-then-write create:
    under the lock each file has exactly one creator."""
    lock = str(tmp_path / "commit.lock")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        results = pool.map(_race, [(str(tmp_path), lock, 30)] * 4)
    assert [sum(r[i] for r in results) for i in range(30)] == [1] * 30


def _append_through_lock(args: tuple[str, str, int]) -> None:
    root, lock_path, writer = args
    file_io = FileIO(pafs.LocalFileSystem()).with_commit_lock(CommitLock(lock_path))
    table = shoal.Table._open(file_io, root, root, None)
    for i in range(3):
        table.append(events([writer * 100 + i]))


def test_concurrent_writers_under_the_lock_lose_no_commit(tmp_path: Path) -> None:
    lock = str(tmp_path / "commit.lock")
    root = str(tmp_path / "wh" / "db.db" / "t")
    file_io = FileIO(pafs.LocalFileSystem()).with_commit_lock(CommitLock(lock))
    from shoal.catalog import build_schema
    from shoal.core.paths import PathFactory
    from shoal.core.schema_manager import SchemaManager

    assert SchemaManager(file_io, PathFactory(root)).try_create(
        build_schema(EVENTS_SCHEMA, [], [], {}, None)
    )
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        pool.map(_append_through_lock, [(root, lock, w) for w in range(3)])
    table = shoal.Table._open(file_io, root, root, None)
    ids = sorted(table.to_arrow().column("id").to_pylist())
    assert ids == sorted(w * 100 + i for w in range(3) for i in range(3))
    assert table.latest_snapshot() is not None
    assert table.latest_snapshot().id == 9
