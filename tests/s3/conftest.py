"""A real S3 server for the object-storage tests: moto's threaded HTTP server on a free
local port, started once per session, with a fresh bucket per test.

The environment points the AWS SDKs (boto3 and pyarrow's S3 client) at it: the
``AWS_ENDPOINT_URL``, fake credentials and a region, as a user would configure a
MinIO or any other S3-compatible endpoint.
"""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator

import pytest
from moto import server as moto_server

from tests.s3.s3_support import S3Env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """The URL of a moto S3 server running for the whole session."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3Env:
    """The AWS environment pointing at the server, and a new empty bucket."""
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    env = S3Env(s3_endpoint, f"shoal-{uuid.uuid4().hex[:16]}")
    env.client.create_bucket(Bucket=env.bucket)
    return env
