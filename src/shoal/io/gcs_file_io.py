"""FileIO for Google Cloud Storage (``gs://bucket/path``), with an atomic create.

**The library.** pyarrow's ``GcsFileSystem`` does the data path: reads (``pyarrow.dataset``
reads Parquet through it), listings with sizes and times, streamed writes, deletes.
The create-if-absent that publishes a snapshot goes through Google's own client
(``google-cloud-storage``, the ``gcs`` extra): an upload with ``ifGenerationMatch=0``,
which GCS stores only if no live object has that name and answers ``412 Precondition
Failed`` otherwise, so of several writers racing for one snapshot id exactly one wins.
Measured on the emulator (``bench/object_stores.py``, docs/object-stores.md), pyarrow
lists and reads fastest of the libraries that work against a JSON-API server, and
neither pyarrow nor fsspec's gcsfs offers a conditional create that shoal can rely on
there: obstore's GCS client speaks the XML API, which the emulators do not serve, and
gcsfs waits on Google's storage-control gRPC service before any request.

**Where the store is and who asks** (the first that gives a setting wins):

- the URI's parameters, as pyarrow takes them:
  ``gs://anonymous@bucket/path?endpoint_override=localhost:4443&scheme=http``
  (also ``location`` and ``retry_limit_seconds``);
- ``storage_options``: Paimon's keys (``fs.gs.`` or ``gs.``) ``auth.type``
  (``APPLICATION_DEFAULT``, ``COMPUTE_ENGINE``, ``UNAUTHENTICATED``), ``storage.root.url``
  (the endpoint, ``http://localhost:4443``) and ``project.id``; pyarrow's names
  ``endpoint_override``, ``scheme``, ``anonymous``, ``project_id``,
  ``default_bucket_location`` and ``retry_time_limit`` (seconds). A key file
  (``auth.type`` ``SERVICE_ACCOUNT_JSON_KEYFILE``) is refused: pyarrow's client takes
  none, so point ``GOOGLE_APPLICATION_CREDENTIALS`` at it, which both clients read;
- the environment: ``STORAGE_EMULATOR_HOST`` (an emulator, with anonymous access),
  and Google's default credentials (``GOOGLE_APPLICATION_CREDENTIALS``, the metadata
  server on Google Cloud).

How long it waits (:mod:`shoal.io.connect`): the clients retry a request for a third of
the store time limit (whole seconds, at least one; pyarrow's default is 15 minutes)
unless ``retry_limit_seconds`` says otherwise, and the first contact of a process with
a bucket must be answered within the time limit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pyarrow.fs as pafs

from shoal.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    MissingDependencyError,
    StoreUnreachableError,
)
from shoal.io.connect import positive_seconds, reach, store_timeout
from shoal.io.file_io import FileIO, FileStatus, ObjectStoreFileIO
from shoal.io.store_options import boolean, normalized, refuse_unknown

try:
    from google.api_core import exceptions as google_errors
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    from google.cloud.storage.retry import DEFAULT_RETRY
except ImportError as exc:  # depends on the installation
    raise MissingDependencyError("gs:// tables", "gcs", exc.name or "google-cloud-storage") from exc

EMULATOR_ENV = "STORAGE_EMULATOR_HOST"
URI_PARAMETERS = ("endpoint_override", "scheme", "location", "retry_limit_seconds")
PAIMON_PREFIXES = ("gs.", "fs.gs.")
AUTH_TYPE = "fs.gs.auth.type"
KEYFILE = "fs.gs.auth.service.account.json.keyfile"
ROOT_URL = "fs.gs.storage.root.url"
PROJECT = "fs.gs.project.id"
LIBRARY_KEYS = (
    "endpoint_override",
    "scheme",
    "anonymous",
    "project_id",
    "default_bucket_location",
    "retry_time_limit",
)
KNOWN_KEYS = (AUTH_TYPE, KEYFILE, ROOT_URL, PROJECT, *LIBRARY_KEYS)
DEFAULT_AUTH = ("APPLICATION_DEFAULT", "COMPUTE_ENGINE")
CHECK = (
    "the network connection and any proxy (HTTPS_PROXY), the endpoint "
    f"({EMULATOR_ENV}, endpoint_override or fs.gs.storage.root.url) and the credentials "
    "(GOOGLE_APPLICATION_CREDENTIALS)"
)
# The google-cloud-cpp status codes of a request that got no answer: the retry
# policy gave up on a failing connection (UNAVAILABLE) or a timeout (DEADLINE_EXCEEDED).
# pyarrow reports them only in the message of an OSError.
_UNANSWERED = ("UNAVAILABLE", "DEADLINE_EXCEEDED")


@dataclass(frozen=True, slots=True)
class GcsOptions:
    """Where and how to reach GCS; None leaves a setting to the clients' defaults."""

    endpoint_override: str | None = None  # "host:port"
    scheme: str | None = None  # "http" or "https"
    anonymous: bool = False
    location: str | None = None  # where new buckets are created
    retry_limit_seconds: float | None = None  # None: derived from timeout
    timeout: float = 30.0  # the store time limit, seconds
    project: str | None = None

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
        if self.project:
            kwargs["project_id"] = self.project
        return pafs.GcsFileSystem(**kwargs)

    def store(self, bucket: str) -> str:
        """The store as error messages name it."""
        if not self.endpoint_override:
            return f"gs://{bucket}"
        return f"gs://{bucket} at {self.scheme or 'https'}://{self.endpoint_override}"


def gcs_options(
    uri: str,
    environ: Mapping[str, str] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> tuple[GcsOptions, str]:
    """The options a ``gs://`` (or ``gcs://``) URI, the storage options and the
    environment give, and the path within the store (``bucket/path``)."""
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
    given = dict(storage_options or {})
    opts = normalized(given, PAIMON_PREFIXES, "fs.gs.")
    refuse_unknown("GCS", given, opts, KNOWN_KEYS)
    endpoint, scheme, anonymous = None, None, bool(at)
    emulator = env.get(EMULATOR_ENV, "").strip()
    if emulator:
        endpoint, scheme = _endpoint(emulator)
        anonymous = True
    if ROOT_URL in opts:
        endpoint, scheme = _endpoint(opts[ROOT_URL])
    if "endpoint_override" in opts:
        endpoint = opts["endpoint_override"]
    scheme = opts.get("scheme") or scheme
    auth = opts.get(AUTH_TYPE, "").strip().upper()
    if KEYFILE in opts or auth == "SERVICE_ACCOUNT_JSON_KEYFILE":
        raise InvalidOptionError(
            KEYFILE if KEYFILE in opts else AUTH_TYPE,
            "<hidden>",
            "shoal's GCS client takes no key file from options: set the environment "
            "variable GOOGLE_APPLICATION_CREDENTIALS to the key file's path instead",
        )
    if auth == "UNAUTHENTICATED":
        anonymous = True
    elif auth and auth not in DEFAULT_AUTH:
        raise InvalidOptionError(
            AUTH_TYPE,
            auth,
            f"shoal takes {', '.join((*DEFAULT_AUTH, 'UNAUTHENTICATED'))} "
            "(Google's default credentials, or none)",
        )
    if "anonymous" in opts:
        anonymous = boolean("anonymous", opts["anonymous"])
    retry = _seconds(query.get("retry_limit_seconds"), "retry_limit_seconds", uri)
    if retry is None and "retry_time_limit" in opts:
        retry = _seconds(opts["retry_time_limit"], "retry_time_limit", None)
    options = GcsOptions(
        endpoint_override=query.get("endpoint_override") or endpoint,
        scheme=query.get("scheme") or scheme,
        anonymous=anonymous,
        location=query.get("location") or opts.get("default_bucket_location") or None,
        retry_limit_seconds=retry,
        timeout=store_timeout(env),
        project=opts.get("project_id") or opts.get(PROJECT) or None,
    )
    return options, f"{bucket}{parts.path}".rstrip("/")


def _endpoint(url: str) -> tuple[str, str]:
    parsed = urlsplit(url if "://" in url else f"http://{url}")
    return parsed.netloc, parsed.scheme


def _seconds(text: str | None, key: str, uri: str | None) -> float | None:
    if text is None:
        return None
    seconds = positive_seconds(text)
    if seconds is None:
        if uri is None:
            raise InvalidOptionError(key, text, "give a positive number of seconds")
        raise InvalidArgumentError(f"{uri!r}: {key} must be a positive number of seconds")
    return seconds


class GcsFileIO(ObjectStoreFileIO):
    """FileIO on GCS: pyarrow for the data path, Google's client for the conditional
    create (see the module docstring). Thread-safe and picklable (the Google client is
    made lazily, once per process)."""

    options: GcsOptions

    def __init__(self, options: GcsOptions) -> None:
        super().__init__(options, options.filesystem())

    @staticmethod
    def connect(options: GcsOptions) -> Any:
        """A google-cloud-storage client."""
        return _google_client(options)

    @property
    def _request_timeout(self) -> tuple[float, float]:
        """(connect, read) seconds for one request of Google's client."""
        return (max(1.0, self.options.timeout / 6), self.options.timeout)

    @property
    def _retry(self) -> Any:
        """Google's default retry policy, retrying for as long as pyarrow's does (its
        default is two minutes)."""
        return DEFAULT_RETRY.with_timeout(self.options.retry_time_limit.total_seconds())

    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` unless an object has that name (``ifGenerationMatch=0``);
        False if one did. An object found holding exactly ``data`` counts as created: a
        retried upload whose first answer was lost meets its own object."""
        bucket, _, key = path.partition("/")
        blob = self.client.bucket(bucket).blob(key)
        try:
            blob.upload_from_string(
                data, if_generation_match=0, timeout=self._request_timeout, retry=self._retry
            )
        except google_errors.PreconditionFailed:
            try:
                return self.read_bytes(path) == data
            except FileNotFoundError:
                return False
        except (google_errors.ServiceUnavailable, google_errors.RetryError) as exc:
            raise StoreUnreachableError(
                self.options.store(bucket), str(exc), self.options.timeout, CHECK
            ) from exc
        except google_errors.GoogleAPICallError as exc:
            raise OSError(f"could not create {path}: {exc.code} {exc.message}") from exc
        except OSError as exc:  # requests' ConnectionError and timeouts are OSErrors
            raise StoreUnreachableError(
                self.options.store(bucket), str(exc), self.options.timeout, CHECK
            ) from exc
        return True

    def list_status(self, path: str, *, recursive: bool = False) -> list[FileStatus]:
        """Entries under a directory. A recursive listing is pyarrow's; one level lists
        through Google's client with a delimiter, since pyarrow's leaves out the
        directories that exist only as a prefix of object names (all of them here)."""
        if recursive:
            return super().list_status(path, recursive=True)
        bucket, _, key = path.partition("/")
        prefix = f"{key.rstrip('/')}/" if key else ""
        try:
            pages = self.client.list_blobs(
                bucket,
                prefix=prefix,
                delimiter="/",
                timeout=self._request_timeout,
                retry=self._retry,
            )
            out = [
                FileStatus(
                    f"{bucket}/{blob.name}",
                    int(blob.size or 0),
                    int(blob.updated.timestamp() * 1000) if blob.updated else 0,
                    False,
                )
                for blob in pages
                if blob.name != prefix
            ]
        except google_errors.NotFound:
            return []
        except google_errors.GoogleAPICallError as exc:
            raise OSError(f"could not list {path}: {exc.code} {exc.message}") from exc
        out.extend(FileStatus(f"{bucket}/{p.rstrip('/')}", 0, 0, True) for p in pages.prefixes)
        return out

    def mkdirs(self, path: str) -> None:
        """Nothing: object stores have no directories (pyarrow would write markers)."""
        del path

    def remove_empty_dir(self, path: str) -> bool:
        del path
        return False


def _google_client(options: GcsOptions) -> Any:
    client_options = None
    if options.endpoint_override:
        client_options = {
            "api_endpoint": f"{options.scheme or 'https'}://{options.endpoint_override}"
        }
    if options.anonymous:
        return storage.Client(
            project=options.project or "anonymous",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options=client_options,
        )
    return storage.Client(project=options.project, client_options=client_options)


def gcs_file_io_for(
    uri: str, storage_options: Mapping[str, str] | None = None
) -> tuple[FileIO, str]:
    """The FileIO for a ``gs://`` URI, once its bucket answered (see
    :func:`shoal.io.connect.reach`), and ``bucket/path``.

    Raises:
        StoreUnreachableError: the store gave no answer within the time limit.
        InvalidArgumentError: a URI or a ``SHOAL_STORE_TIMEOUT`` that cannot be used.
        InvalidOptionError: a storage option that is unknown or cannot be used.
    """
    options, path = gcs_options(uri, storage_options=storage_options)
    bucket = path.split("/", 1)[0]
    store = options.store(bucket)

    def connect() -> FileIO:
        file_io = GcsFileIO(options)
        try:
            file_io.fs.get_file_info(bucket)  # the bucket's metadata: one request
        except OSError as exc:
            if any(code in str(exc) for code in _UNANSWERED):
                raise StoreUnreachableError(store, str(exc), options.timeout, CHECK) from exc
            # Any other failure is an answer ("not found", "permission denied"): the
            # operations that need the bucket report it.
        return file_io

    file_io = reach(
        ("gcs", options, bucket), connect, store=store, check=CHECK, timeout=options.timeout
    )
    return file_io, path
