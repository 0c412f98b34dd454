"""``python -m bench.object_stores``: the object-store libraries on local emulators.

For each store (S3 on moto, GCS on fake-gcs-server, Azure on Azurite) and each library
that can talk to it (pyarrow's filesystems, ``obstore``, the fsspec backend adlfs),
times: listing 1,000 keys, creating 200 small files, reading them back (both on 8
threads, as shoal's I/O pool does), reading one 50 MB file; and whether the library
can make a conditional create (create-if-absent) that the emulator honours, which
shoal's commit needs. Prints a Markdown table (``--output FILE`` writes it there too).

s3fs is left out: it pins an older botocore than boto3 (shoal's S3 client) accepts; so
is gcsfs (2026.10): it asks the bucket's layout of Google's storage-control gRPC service
over TLS, which no emulator serves, and waits there.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import logging
import os
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pyarrow.fs as pafs

from shoal.io.azure_file_io import AzureFileIO, AzureOptions
from shoal.io.gcs_file_io import GcsFileIO, GcsOptions
from tests.stores import emulators

LIST_KEYS, SMALL_FILES, SMALL_SIZE, BIG_SIZE, THREADS = 1000, 200, 2048, 50 << 20, 8


class Client:
    """One library on one store: put, create-if-absent, get, list; paths are
    ``prefix/key`` within the bucket."""

    name = ""
    put: Callable[[str, bytes], None]
    create: Callable[[str, bytes], bool] | None  # False when the key existed; None: no such call
    get: Callable[[str], bytes]
    list: Callable[[str], int]


def _arrow(fs: pafs.FileSystem, bucket: str) -> Client:
    c = Client()
    c.name = "pyarrow"

    def put(key: str, data: bytes) -> None:
        with fs.open_output_stream(f"{bucket}/{key}") as f:
            f.write(data)

    def get(key: str) -> bytes:
        with fs.open_input_stream(f"{bucket}/{key}") as f:
            return bytes(f.read())

    def listing(prefix: str) -> int:
        return len(fs.get_file_info(pafs.FileSelector(f"{bucket}/{prefix}", recursive=True)))

    c.put, c.get, c.list = put, get, listing
    c.create = None
    return c


def _shoal(file_io: Any, bucket: str) -> Client:
    """shoal's own FileIO for the store (pyarrow, and the store's client where it is
    faster or the only way: the conditional create, Azure's whole-file requests)."""
    c = Client()
    c.name = f"shoal ({type(file_io).__name__})"
    c.put = lambda key, data: file_io.write_bytes(f"{bucket}/{key}", data)
    c.get = lambda key: file_io.read_bytes(f"{bucket}/{key}")
    c.list = lambda prefix: sum(
        not s.is_dir for s in file_io.list_status(f"{bucket}/{prefix}", recursive=True)
    )
    c.create = lambda key, data: file_io.try_create(f"{bucket}/{key}", data)
    return c


def _obstore(store: Any) -> Client:
    import obstore as obs

    c = Client()
    c.name = "obstore"

    def create(key: str, data: bytes) -> bool:
        try:
            obs.put(store, key, data, mode="create")
        except obs.exceptions.AlreadyExistsError:
            return False
        return True

    c.put = lambda key, data: obs.put(store, key, data) and None
    c.get = lambda key: bytes(obs.get(store, key).bytes())
    c.list = lambda prefix: sum(len(batch) for batch in obs.list(store, prefix))
    c.create = create
    return c


def _fsspec(fs: Any, bucket: str, exists_error: type[Exception]) -> Client:
    c = Client()
    c.name = type(fs).__module__.split(".")[0]

    def create(key: str, data: bytes) -> bool:
        try:
            fs.pipe_file(f"{bucket}/{key}", data, mode="create")
        except exists_error:
            return False
        return True

    c.put = lambda key, data: fs.pipe_file(f"{bucket}/{key}", data)
    c.get = lambda key: bytes(fs.cat_file(f"{bucket}/{key}"))
    c.list = lambda prefix: len(fs.find(f"{bucket}/{prefix}"))
    c.create = create
    return c


def gcs_clients(endpoint: str, bucket: str) -> list[Client]:
    from obstore.store import GCSStore

    authority = endpoint.split("://", 1)[1]
    fs = pafs.GcsFileSystem(
        anonymous=True, endpoint_override=authority, scheme="http",
        retry_time_limit=timedelta(seconds=5),
    )  # fmt: skip
    store = GCSStore(
        bucket, base_url=endpoint, client_options={"allow_http": True},
        credential_provider=lambda: {"token": "anonymous", "expires_at": None},
    )  # fmt: skip
    shoal_io = GcsFileIO(GcsOptions(endpoint_override=authority, scheme="http", anonymous=True))
    return [_arrow(fs, bucket), _obstore(store), _shoal(shoal_io, bucket)]


def azure_clients(endpoint: str, container: str) -> list[Client]:
    import adlfs
    from azure.core.exceptions import ResourceExistsError
    from obstore.store import AzureStore

    account, key = emulators.AZURE_ACCOUNT, emulators.AZURE_KEY
    authority = endpoint.split("://", 1)[1]
    fs = pafs.AzureFileSystem(
        account_name=account, account_key=key, blob_storage_authority=authority,
        dfs_storage_authority=authority, blob_storage_scheme="http", dfs_storage_scheme="http",
    )  # fmt: skip
    store = AzureStore(
        container, account_name=account, account_key=key, client_options={"allow_http": True},
        config={"endpoint": f"{endpoint}/{account}"},
    )  # fmt: skip
    afs = adlfs.AzureBlobFileSystem(
        connection_string=emulators.azure_connection_string(endpoint), skip_instance_cache=True
    )
    shoal_io = AzureFileIO(
        AzureOptions(account=account, account_key=key, authority=authority, scheme="http")
    )
    return [
        _arrow(fs, container),
        _obstore(store),
        _shoal(shoal_io, container),
        _fsspec(afs, container, (FileExistsError, ResourceExistsError)),  # type: ignore[arg-type]
    ]


def s3_clients(endpoint: str, bucket: str) -> list[Client]:
    from obstore.store import S3Store

    fs = pafs.S3FileSystem(
        access_key="testing", secret_key="testing", region="us-east-1",
        endpoint_override=endpoint.split("://", 1)[1], scheme="http",
    )  # fmt: skip
    store = S3Store(
        bucket, endpoint=endpoint, access_key_id="testing", secret_access_key="testing",
        region="us-east-1", client_options={"allow_http": True},
    )  # fmt: skip
    return [_arrow(fs, bucket), _obstore(store)]


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _pool(fn: Callable[[str], object], keys: list[str]) -> None:
    with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(fn, keys))


def measure(client: Client, seed: Client) -> dict[str, str]:
    """The timings of one client; ``seed`` (pyarrow) writes the 1,000 keys it lists."""
    run = uuid.uuid4().hex[:8]
    row: dict[str, str] = {"library": client.name}
    create = client.create
    try:
        if create is None:
            row["create-if-absent"] = "none"
        else:
            created = create(f"{run}/c", b"1") and not create(f"{run}/c", b"2")
            same = created and client.get(f"{run}/c") == b"1"
            row["create-if-absent"] = "yes" if same else "NO"
    except Exception as exc:
        row["create-if-absent"] = f"fails: {type(exc).__name__}"
    try:
        listed = f"{run}/list"
        _pool(lambda k: seed.put(k, b"x"), [f"{listed}/{i:05d}" for i in range(LIST_KEYS)])
        took = [_timed(lambda: client.list(listed)) for _ in range(3)]
        assert client.list(listed) == LIST_KEYS
        row["list 1,000 keys"] = f"{statistics.median(took) * 1000:.0f} ms"
        small = [f"{run}/small/{i:05d}" for i in range(SMALL_FILES)]
        data = os.urandom(SMALL_SIZE)
        row["create 200 files"] = (
            f"{_timed(lambda: _pool(lambda k: client.put(k, data), small)) * 1000:.0f} ms"
        )
        row["read 200 files"] = f"{_timed(lambda: _pool(client.get, small)) * 1000:.0f} ms"
        seed.put(f"{run}/big", os.urandom(BIG_SIZE))
        took = [_timed(lambda: client.get(f"{run}/big")) for _ in range(2)]
        row["read 50 MB"] = f"{min(took) * 1000:.0f} ms"
    except Exception as exc:
        row["list 1,000 keys"] = f"fails: {type(exc).__name__}: {str(exc).splitlines()[0][:60]}"
    return row


COLUMNS = ["library", "create-if-absent", "list 1,000 keys", "create 200 files",
           "read 200 files", "read 50 MB"]  # fmt: skip


def table(store: str, rows: list[dict[str, str]]) -> str:
    lines = [f"| {store} | " + " | ".join(COLUMNS[1:]) + " |", "|" + " --- |" * len(COLUMNS)]
    lines += ["| " + " | ".join(r.get(c, "") for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.object_stores", description=__doc__)
    parser.add_argument("--output", help="also write the Markdown tables to this file")
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    sections = []
    with emulators.fake_gcs() as gcs:
        emulators.create_gcs_bucket(gcs.endpoint, "bench")
        clients = gcs_clients(gcs.endpoint, "bench")
        sections.append(table("GCS", [measure(c, clients[0]) for c in clients]))
    with emulators.azurite() as az:
        emulators.create_azure_container(az.endpoint, "bench")
        clients = azure_clients(az.endpoint, "bench")
        sections.append(table("Azure", [measure(c, clients[0]) for c in clients]))
    from moto import server as moto_server

    port = emulators.free_port()
    moto = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    moto.start()
    try:
        import boto3

        endpoint = f"http://127.0.0.1:{port}"
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                     aws_access_key_id="testing", aws_secret_access_key="testing",
                     ).create_bucket(Bucket="bench")  # fmt: skip
        clients = s3_clients(endpoint, "bench")
        sections.append(table("S3", [measure(c, clients[0]) for c in clients]))
    finally:
        moto.stop()
    text = "\n\n".join(sections) + "\n"
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
