"""Storage options of GCS and Azure locations: Paimon's keys and the library's names,
the environment, unknown keys refused, secrets never in a message; and an endpoint that
cannot be reached failing within the time limit."""

from __future__ import annotations

import time
from typing import Any

import pytest

import shoal
from shoal.io.azure_file_io import AzureFileIO, AzureOptions, azure_file_io_for, azure_options
from shoal.io.gcs_file_io import GcsFileIO, GcsOptions, gcs_file_io_for, gcs_options
from tests.conftest import EVENTS_SCHEMA, events
from tests.io.stores import closed_port, silent_server
from tests.stores import emulators
from tests.stores.store_support import AzureEnv, GcsEnv

SECRET = "c2VjcmV0LWtleS1ub3QtdG8tYmUtc2hvd24="
BOUND, SLACK = 3.0, 2.0
ACCOUNT = emulators.AZURE_ACCOUNT


def test_gcs_keys_of_paimon_and_of_pyarrow() -> None:
    options, path = gcs_options(
        "gs://bucket/wh",
        {},
        {
            "gs.storage.root.url": "http://h:1",
            "fs.gs.project.id": "p",
            "gs.auth.type": "UNAUTHENTICATED",
        },
    )
    assert path == "bucket/wh"
    assert (options.endpoint_override, options.scheme, options.anonymous) == ("h:1", "http", True)
    assert options.project == "p"
    options, _ = gcs_options(
        "gs://bucket/wh",
        {"STORAGE_EMULATOR_HOST": "http://e:2"},
        {"endpoint_override": "o:3", "anonymous": "false", "retry_time_limit": "7"},
    )
    assert (options.endpoint_override, options.scheme, options.anonymous) == ("o:3", "http", False)
    assert options.retry_limit_seconds == 7.0


@pytest.mark.parametrize(
    ("key", "value", "error"),
    [
        ("gs.endpoint", "x", shoal.UnknownOptionError),
        ("endpoint_overide", "x", shoal.UnknownOptionError),
        ("s3.access-key", SECRET, shoal.UnknownOptionError),
        ("fs.gs.auth.type", "USER_CREDENTIALS", shoal.InvalidOptionError),
        ("fs.gs.auth.service.account.json.keyfile", "/k.json", shoal.InvalidOptionError),
        ("anonymous", "maybe", shoal.InvalidOptionError),
        ("retry_time_limit", "-1", shoal.InvalidOptionError),
    ],
)
def test_gcs_options_that_cannot_be_used(key: str, value: str, error: type[Exception]) -> None:
    with pytest.raises(error) as info:
        gcs_file_io_for("gs://bucket/wh", {key: value})
    assert SECRET not in str(info.value)
    assert SECRET not in repr(info.value.__dict__)


def test_the_nearest_key_is_named() -> None:
    with pytest.raises(shoal.UnknownOptionError) as info:
        gcs_file_io_for("gs://bucket/wh", {"endpoint_overide": "x"})
    assert info.value.suggestion == "endpoint_override"
    with pytest.raises(shoal.UnknownOptionError) as info:
        azure_file_io_for("az://c/wh", {"account_nam": "x"})
    assert info.value.suggestion == "account_name"


def test_azure_uri_forms_and_keys() -> None:
    key = "fs.azure.account.key.acct.dfs.core.windows.net"
    options, path = azure_options("abfss://ctr@acct.dfs.core.windows.net/wh/", {key: SECRET}, {})
    assert path == "ctr/wh"
    assert (options.account, options.account_key) == ("acct", SECRET)
    assert options.account_url == "https://acct.blob.core.windows.net"
    assert SECRET not in repr(options)
    options, path = azure_options(
        "wasbs://ctr@acct.blob.core.windows.net/wh", {"azure.account.key": "k"}, {}
    )
    assert (path, options.account_key) == ("ctr/wh", "k")
    options, path = azure_options(
        "az://ctr/wh",
        {
            "account_name": "a",
            "sas_token": "?sv=1",
            "blob_storage_authority": "h:9",
            "blob_storage_scheme": "http",
        },
        {},
    )
    assert (options.account, options.sas_token, options.account_url) == (
        "a",
        "sv=1",
        "http://h:9/a",
    )
    connection = emulators.azure_connection_string("http://127.0.0.1:5")
    options, _ = azure_options("abfs://ctr/wh", {}, {"AZURE_STORAGE_CONNECTION_STRING": connection})
    assert (options.account, options.account_key) == (emulators.AZURE_ACCOUNT, emulators.AZURE_KEY)
    assert options.account_url == f"http://127.0.0.1:5/{emulators.AZURE_ACCOUNT}"
    options, _ = azure_options(
        "az://ctr/wh", {}, {"AZURE_STORAGE_ACCOUNT_NAME": "e", "AZURE_STORAGE_ACCOUNT_KEY": "k"}
    )
    assert (options.account, options.account_key) == ("e", "k")


@pytest.mark.parametrize(
    ("uri", "storage_options"),
    [
        ("az://ctr/wh", {}),  # no account
        ("az://ctr/wh?x=1", {"account_name": "a"}),
        ("abfss://ctr@acct.example.com/wh", {}),
        ("az:///wh", {"account_name": "a"}),
    ],
)
def test_azure_locations_that_cannot_be_used(uri: str, storage_options: dict[str, str]) -> None:
    with pytest.raises(shoal.InvalidArgumentError):
        azure_options(uri, storage_options, {})


@pytest.mark.parametrize(
    ("key", "value", "error"),
    [
        ("fs.azure.account.auth.type", "OAuth", shoal.UnknownOptionError),
        ("account_key_", SECRET, shoal.UnknownOptionError),
        ("client_id", SECRET, shoal.InvalidOptionError),  # without secret and tenant
        ("blob_storage_scheme", "ftp", shoal.InvalidOptionError),
    ],
)
def test_azure_options_that_cannot_be_used(key: str, value: str, error: type[Exception]) -> None:
    with pytest.raises(error) as info:
        azure_options("az://ctr/wh", {"account_name": "a", key: value}, {})
    assert SECRET not in str(info.value)
    assert SECRET not in repr(info.value.__dict__)


def test_storage_options_reach_the_emulators(
    gcs: GcsEnv, azure: AzureEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The emulators configured by options alone, the environment cleared."""
    for name in ("STORAGE_EMULATOR_HOST", "AZURE_STORAGE_CONNECTION_STRING"):
        monkeypatch.delenv(name)
    file_io, path = gcs_file_io_for(
        gcs.uri("wh"), {"gs.storage.root.url": gcs.endpoint, "gs.auth.type": "UNAUTHENTICATED"}
    )
    assert file_io.try_create(f"{path}/x", b"1")
    assert not file_io.try_create(f"{path}/x", b"2")
    assert gcs.get("wh/x") == b"1"
    authority = azure.endpoint.split("://")[1]
    file_io, path = azure_file_io_for(
        f"abfs://{azure.bucket}/wh",
        {
            "account_name": emulators.AZURE_ACCOUNT,
            f"fs.azure.account.key.{ACCOUNT}.blob.core.windows.net": emulators.AZURE_KEY,
            "blob_storage_authority": authority,
            "blob_storage_scheme": "http",
        },
    )
    assert file_io.try_create(f"{path}/x", b"1")
    assert not file_io.try_create(f"{path}/x", b"2")
    assert azure.get("wh/x") == b"1"


def test_an_azure_endpoint_that_cannot_be_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOAL_STORE_TIMEOUT", str(BOUND))
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING", raising=False)
    closed = emulators.azure_connection_string(f"http://127.0.0.1:{closed_port()}")
    with silent_server() as port:
        silent = emulators.azure_connection_string(f"http://127.0.0.1:{port}")
        for connection in (closed, silent):
            started = time.monotonic()
            with pytest.raises(shoal.StoreUnreachableError) as info:
                azure_file_io_for("az://ctr/wh", {"connection_string": connection})
            assert time.monotonic() - started < BOUND + SLACK
            assert info.value.store.startswith("az://ctr at http://127.0.0.1:")
            assert emulators.AZURE_KEY not in str(info.value)


def test_catalog_and_open_table_take_the_storage_options(
    gcs: GcsEnv, azure: AzureEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("STORAGE_EMULATOR_HOST", "AZURE_STORAGE_CONNECTION_STRING"):
        monkeypatch.delenv(name)
    stores = [
        (gcs.uri("wh"), {"fs.gs.storage.root.url": gcs.endpoint, "anonymous": "true"}),
        (
            azure.uri("wh"),
            {"connection_string": emulators.azure_connection_string(azure.endpoint)},
        ),
    ]
    for warehouse, storage_options in stores:
        catalog = shoal.Catalog(warehouse, storage_options=storage_options)
        table = catalog.create_table("db.t", EVENTS_SCHEMA)
        table.append(events([1, 2]))
        reopened = shoal.open_table(f"{warehouse}/db.db/t", storage_options=storage_options)
        assert sorted(reopened.to_arrow()["id"].to_pylist()) == [1, 2]
        with pytest.raises(shoal.UnknownOptionError):
            shoal.Catalog(warehouse, storage_options={**storage_options, "s3.endpoint": "x"})


def _file_ios(port: int) -> list[Any]:
    return [
        GcsFileIO(
            GcsOptions(endpoint_override=f"127.0.0.1:{port}", scheme="http", anonymous=True,
                       timeout=BOUND)
        ),
        AzureFileIO(
            AzureOptions(account=ACCOUNT, account_key=emulators.AZURE_KEY,
                         authority=f"127.0.0.1:{port}", scheme="http", timeout=BOUND)
        ),
    ]  # fmt: skip


def test_a_create_on_a_store_gone_away_fails_within_the_time_limit() -> None:
    """The store answered once, then stopped (refusing connections, or taking them and
    never answering): the create, the commit's one request through the store's own
    client, gives up within about the time limit."""
    with silent_server() as silent:
        for port in (closed_port(), silent):
            for file_io in _file_ios(port):
                started = time.monotonic()
                with pytest.raises(shoal.StoreUnreachableError):
                    file_io.try_create("bucket/snapshot-1", b"1")
                assert time.monotonic() - started < BOUND + SLACK, (port, file_io)
