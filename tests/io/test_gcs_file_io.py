"""gs:// locations: where the store is (URI, STORAGE_EMULATOR_HOST), and a store that
cannot be reached failing within the time limit with StoreUnreachableError."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pyarrow as pa
import pytest

import shoal
from shoal.io import FileIO, file_io_for
from shoal.io.gcs_file_io import EMULATOR_ENV, GcsOptions, gcs_options
from tests.io.stores import closed_port, silent_server

BOUND = 3.0  # seconds: the time limit these tests set
SLACK = 2.0  # what the clock may add to it on a busy machine


@pytest.fixture(autouse=True)
def _short_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOAL_STORE_TIMEOUT", str(BOUND))
    monkeypatch.delenv(EMULATOR_ENV, raising=False)


def unreachable(call: object) -> tuple[shoal.StoreUnreachableError, float]:
    """The error ``call()`` raises, and how long it took."""
    assert callable(call)
    started = time.monotonic()
    with pytest.raises(shoal.StoreUnreachableError) as info:
        call()
    return info.value, time.monotonic() - started


# --- where the store is ------------------------------------------------------------------------
def test_the_emulator_host_and_the_uri_name_the_endpoint() -> None:
    options, path = gcs_options("gs://bucket/wh/", {})
    assert path == "bucket/wh"
    assert options == GcsOptions(timeout=30.0)
    assert options.retry_time_limit == timedelta(seconds=10)  # pyarrow's default: 15 min

    options, _ = gcs_options("gs://bucket/wh", {EMULATOR_ENV: "http://localhost:4443"})
    assert (options.endpoint_override, options.scheme, options.anonymous) == (
        "localhost:4443",
        "http",
        True,
    )
    assert options.store("bucket") == "gs://bucket at http://localhost:4443"

    uri = "gs://anonymous@bucket/wh?endpoint_override=h:9&scheme=http&retry_limit_seconds=4"
    options, path = gcs_options(uri, {EMULATOR_ENV: "localhost:4443", "SHOAL_STORE_TIMEOUT": "2"})
    assert path == "bucket/wh"
    assert (options.endpoint_override, options.scheme, options.anonymous) == ("h:9", "http", True)
    assert options.retry_time_limit == timedelta(seconds=4)
    assert options.timeout == 2.0


@pytest.mark.parametrize(
    "uri",
    [
        "gs:///wh",
        "gs://someone@bucket/wh",
        "gs://bucket/wh?region=eu",
        "gs://bucket/wh?retry_limit_seconds=0",
        "gs://bucket/wh#frag",
    ],
)
def test_a_gcs_uri_that_cannot_be_used_is_refused(uri: str) -> None:
    with pytest.raises(shoal.InvalidArgumentError):
        shoal.Catalog(uri)


# --- a store that cannot be reached --------------------------------------------------------------
def test_a_closed_endpoint_fails_within_the_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv(EMULATOR_ENV, endpoint)
    error, took = unreachable(lambda: shoal.Catalog("gs://bucket/wh"))
    assert took < BOUND + SLACK
    assert isinstance(error, shoal.ShoalError)
    assert isinstance(error, OSError)
    assert error.store == f"gs://bucket at {endpoint}"
    assert error.timeout == BOUND
    message = str(error)
    assert f"gs://bucket at {endpoint}" in message
    assert "UNAVAILABLE" in message  # what the client reported
    assert EMULATOR_ENV in message
    assert "SHOAL_STORE_TIMEOUT" in message

    error, took = unreachable(lambda: shoal.open_table("gs://bucket/wh/db.db/t"))
    assert took < BOUND + SLACK


def test_a_closed_endpoint_in_the_uri(monkeypatch: pytest.MonkeyPatch) -> None:
    port = closed_port()
    uri = f"gs://anonymous@bucket/wh?endpoint_override=127.0.0.1:{port}&scheme=http"
    error, took = unreachable(lambda: file_io_for(uri))
    assert took < BOUND + SLACK
    assert error.store == f"gs://bucket at http://127.0.0.1:{port}"


def test_a_store_that_never_answers_fails_within_the_time_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Google's client waits two minutes for a stalled connection whatever its retry
    limit says: the bound holds all the same."""
    with silent_server() as port:
        monkeypatch.setenv(EMULATOR_ENV, f"http://127.0.0.1:{port}")
        error, took = unreachable(lambda: shoal.Catalog("gs://bucket/wh"))
    assert BOUND - 0.1 < took < BOUND + SLACK
    assert f"no answer within {BOUND:g} s" in str(error)


# --- a store that answers -------------------------------------------------------------------------
class _NotFound(BaseHTTPRequestHandler):
    """Answers every request with 404, as GCS does for a bucket that is not there."""

    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        body = b'{"error": {"code": 404, "message": "Not Found"}}'
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def answering_server() -> Iterator[tuple[int, list[str]]]:
    requests: list[str] = []
    handler = type("Handler", (_NotFound,), {"requests": requests})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], requests
    finally:
        server.shutdown()
        server.server_close()


def test_any_answer_counts_and_a_bucket_is_asked_once(
    answering_server: tuple[int, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, requests = answering_server
    monkeypatch.setenv(EMULATOR_ENV, f"http://127.0.0.1:{port}")
    file_io, path = file_io_for("gs://bucket/wh")
    assert isinstance(file_io, FileIO)
    assert path == "bucket/wh"
    assert isinstance(file_io.fs, pa.fs.GcsFileSystem)
    assert len(requests) == 1  # the bucket's metadata
    assert "/b/bucket" in requests[0]
    shoal.Catalog("gs://bucket/other")
    assert file_io_for("gs://bucket/wh")[0] is file_io
    assert len(requests) == 1
