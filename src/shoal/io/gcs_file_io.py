"""FileIO for Google Cloud Storage (``gs://bucket/path``) through pyarrow's GcsFileSystem.

GCS has no conditional create through pyarrow, so :class:`~shoal.io.file_io.FileIO`'s
check-then-write create applies: commit from one writer at a time.

Where the store is:

- ``STORAGE_EMULATOR_HOST`` (``http://localhost:4443``, as Google's own clients read
  it) points at an emulator or another endpoint, with anonymous credentials;
- the URI may say it too, with pyarrow's parameters:
  ``gs://anonymous@bucket/path?endpoint_override=localhost:4443&scheme=http``
  (also ``location`` and ``retry_limit_seconds``); they take precedence;
- credentials otherwise come from Google's default chain
  (``GOOGLE_APPLICATION_CREDENTIALS``, the metadata server on Google Cloud).

How long it waits (:mod:`shoal.io.connect`): the client retries a request for a third of
the store time limit (whole seconds, at least one; pyarrow's default is 15 minutes)
unless the URI gives ``retry_limit_seconds``, and the first contact of a process with a
bucket must be answered within the time limit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pyarrow.fs as pafs

from shoal.errors import InvalidArgumentError, StoreUnreachableError
from shoal.io.connect import positive_seconds, reach, store_timeout
from shoal.io.file_io import FileIO

EMULATOR_ENV = "STORAGE_EMULATOR_HOST"
URI_PARAMETERS = ("endpoint_override", "scheme", "location", "retry_limit_seconds")
CHECK = (
    "the network connection and any proxy (HTTPS_PROXY), the endpoint "
    f"({EMULATOR_ENV}, or endpoint_override in the URI) and the credentials "
    "(GOOGLE_APPLICATION_CREDENTIALS)"
)
# The google-cloud-cpp status codes of a request that got no answer: the retry
# policy gave up on a failing connection (UNAVAILABLE) or a timeout (DEADLINE_EXCEEDED).
# pyarrow reports them only in the message of an OSError.
_UNANSWERED = ("UNAVAILABLE", "DEADLINE_EXCEEDED")


@dataclass(frozen=True, slots=True)
class GcsOptions:
    """Where and how to reach GCS; None leaves a setting to pyarrow's defaults."""

    endpoint_override: str | None = None  # "host:port"
    scheme: str | None = None  # "http" or "https"
    anonymous: bool = False
    location: str | None = None  # where new buckets are created
    retry_limit_seconds: float | None = None  # None: derived from timeout
    timeout: float = 30.0  # the store time limit, seconds

    @property
    def retry_time_limit(self) -> timedelta:
        """How long the client retries one request (pyarrow ignores fractions of a
        second)."""
        if self.retry_limit_seconds is not None:
            return timedelta(seconds=self.retry_limit_seconds)
        return timedelta(seconds=max(1, int(self.timeout / 3)))

    def filesystem(self) -> pafs.GcsFileSystem:
        kwargs: dict[str, Any] = {
            "anonymous": self.anonymous,
            "retry_time_limit": self.retry_time_limit,
        }
        if self.endpoint_override:
            kwargs["endpoint_override"] = self.endpoint_override
        if self.scheme:
            kwargs["scheme"] = self.scheme
        if self.location:
            kwargs["default_bucket_location"] = self.location
        return pafs.GcsFileSystem(**kwargs)

    def store(self, bucket: str) -> str:
        """The store as error messages name it."""
        if not self.endpoint_override:
            return f"gs://{bucket}"
        return f"gs://{bucket} at {self.scheme or 'https'}://{self.endpoint_override}"


def gcs_options(uri: str, environ: Mapping[str, str] | None = None) -> tuple[GcsOptions, str]:
    """The options a ``gs://`` (or ``gcs://``) URI and the environment give, and the
    path within the store (``bucket/path``)."""
    env = os.environ if environ is None else environ
    parts = urlsplit(uri)
    user, at, bucket = parts.netloc.rpartition("@")
    if not bucket or (at and user != "anonymous"):
        raise InvalidArgumentError(
            f"{uri!r}: a GCS location is gs://bucket/path (or gs://anonymous@bucket/path)"
        )
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    unknown = sorted(set(query) - set(URI_PARAMETERS))
    if unknown or parts.fragment:
        raise InvalidArgumentError(
            f"{uri!r}: unknown GCS URI parameter {unknown[0] if unknown else '#'!r}; "
            f"the URI takes {', '.join(URI_PARAMETERS)}"
        )
    endpoint, scheme, anonymous = None, None, bool(at)
    emulator = env.get(EMULATOR_ENV, "").strip()
    if emulator:
        parsed = urlsplit(emulator if "://" in emulator else f"http://{emulator}")
        endpoint, scheme, anonymous = parsed.netloc, parsed.scheme, True
    options = GcsOptions(
        endpoint_override=query.get("endpoint_override") or endpoint,
        scheme=query.get("scheme") or scheme,
        anonymous=anonymous,
        location=query.get("location") or None,
        retry_limit_seconds=_seconds(query.get("retry_limit_seconds"), uri),
        timeout=store_timeout(env),
    )
    return options, f"{bucket}{parts.path}".rstrip("/")


def _seconds(text: str | None, uri: str) -> float | None:
    if text is None:
        return None
    seconds = positive_seconds(text)
    if seconds is None:
        raise InvalidArgumentError(
            f"{uri!r}: retry_limit_seconds must be a positive number of seconds"
        )
    return seconds


def gcs_file_io_for(uri: str) -> tuple[FileIO, str]:
    """The FileIO for a ``gs://`` URI, once its bucket answered (see
    :func:`shoal.io.connect.reach`), and ``bucket/path``.

    Raises:
        StoreUnreachableError: the store gave no answer within the time limit.
        InvalidArgumentError: a URI or a ``SHOAL_STORE_TIMEOUT`` that cannot be used.
    """
    options, path = gcs_options(uri)
    bucket = path.split("/", 1)[0]
    store = options.store(bucket)

    def connect() -> FileIO:
        fs = options.filesystem()
        try:
            fs.get_file_info(bucket)  # the bucket's metadata: one request
        except OSError as exc:
            if any(code in str(exc) for code in _UNANSWERED):
                raise StoreUnreachableError(store, str(exc), options.timeout, CHECK) from exc
            # Any other failure is an answer ("not found", "permission denied"): the
            # operations that need the bucket report it.
        return FileIO(fs)

    file_io = reach(
        ("gcs", options, bucket), connect, store=store, check=CHECK, timeout=options.timeout
    )
    return file_io, path
