"""FileIO for S3 and S3-compatible object stores, with an atomic create.

S3 has no rename, so the create-if-absent that publishes a snapshot (and creates
schema and tag files) is a conditional put: ``PutObject`` with ``If-None-Match: *``
stores the object only if the key does not exist yet, and the store answers
``412 Precondition Failed`` otherwise. Of several writers racing for one snapshot
id exactly one wins; the others see ``try_create`` return False and commit again
with the next id. Other whole-file writes (``overwrite``, hints, manifests) are
plain puts, which S3 makes visible atomically.

**Requirement:** the store must honour ``If-None-Match: *`` on PutObject. AWS S3 does
(since August 2024), and so do MinIO and moto's server. A store that ignores the
header overwrites instead, and two concurrent commits could then both publish the
same snapshot id: on such a store, commit from one writer at a time.

Two clients share the work:

- boto3 makes every put of a whole file (metadata: snapshots, schemas, tags, hints,
  manifests) and every delete: ``DeleteObject`` for one file, ``DeleteObjects`` in
  batches of 1000 keys, run on the shared I/O pool, for :meth:`S3FileIO.delete_many`
  and for removing a directory (a key prefix).
- pyarrow's ``S3FileSystem`` (``fs``) reads and lists (``pyarrow.dataset`` reads
  Parquet through it) and streams data files out (one PutObject for a small file, a
  multipart upload beyond). Its ``create_dir`` and ``delete_file`` write empty
  "directory marker" objects to imitate directories; shoal uses neither: object
  stores have no directories, and nothing needs them.

Configuration (endpoint, region, credentials, addressing style) comes from
``storage_options`` (:mod:`shoal.io.s3_options`, Paimon's keys among others) over the
usual AWS environment, read when :func:`s3_file_io_for` first sees it; docs/tables.md
lists it, and :mod:`shoal.io.connect` holds the time limits.
"""

from __future__ import annotations

import errno
import functools
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from shoal.errors import InvalidArgumentError, MissingDependencyError, StoreUnreachableError
from shoal.io.connect import reach
from shoal.io.executor import io_threads
from shoal.io.file_io import ObjectStoreFileIO, delete_in_batches
from shoal.io.s3_options import S3Options

try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError
except ImportError as exc:  # depends on the installation
    raise MissingDependencyError("s3:// tables", "s3", exc.name or "boto3") from exc

logger = logging.getLogger(__name__)

DELETE_BATCH = 1000  # the most keys one DeleteObjects request takes
# A conditional put that meets another one in flight on the same key may be refused
# with 409 ConditionalRequestConflict: retry it this many times.
CONFLICT_RETRIES = 5
DEFAULT_REGION = "us-east-1"
ARROW_ATTEMPTS = 3  # pyarrow's own default
BOTO_RETRIES = 5  # throttling and conditional-put conflicts are retried too
CHECK = (
    "the network connection and any proxy (HTTPS_PROXY), the endpoint "
    "(s3.endpoint or AWS_ENDPOINT_URL), the region (s3.region or AWS_REGION) and the credentials"
)
# What boto3 raises for a request that got no answer: the connection failed (refused,
# timed out, DNS, proxy, TLS) or the response did not come (read timeout, closed).
_UNANSWERED = (BotoConnectionError, HTTPClientError)


class S3FileIO(ObjectStoreFileIO):
    """FileIO on S3: conditional puts for an atomic create, batched deletes.

    See the module docstring for what goes through boto3 and what through pyarrow.
    Instances are thread-safe and picklable (the boto3 client is made lazily, once
    per process)."""

    options: S3Options

    def __init__(self, options: S3Options | None = None) -> None:
        options = options or S3Options.from_env()
        super().__init__(options, _arrow_filesystem(options))

    @staticmethod
    def connect(options: S3Options) -> Any:
        """A boto3 S3 client (thread-safe, as boto3 clients are)."""
        return _boto3_client(options)

    # --- whole-file writes -------------------------------------------------------------------
    def write_bytes(self, path: str, data: bytes) -> None:
        bucket, key = split_path(path)
        try:
            self.client.put_object(Bucket=bucket, Key=key, Body=data)
        except ClientError as exc:
            raise _os_error(exc, path) from exc
        except _UNANSWERED as exc:
            raise self.unreachable(bucket, exc) from exc

    def overwrite(self, path: str, data: bytes) -> None:
        """A plain put: S3 shows readers the old or the new object, never a part."""
        self.write_bytes(path, data)

    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` unless it exists (``PutObject`` with ``If-None-Match: *``);
        False if it did.

        A key found holding exactly ``data`` counts as created: a put whose answer was
        lost and which the SDK then retried meets its own object, and must not be
        taken for a lost race (the caller would discard what it just published)."""
        bucket, key = split_path(path)
        conflicts = 0
        while True:
            try:
                self.client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
            except ClientError as exc:
                status = _status(exc)
                if status == 412:
                    return self._holds(path, data)
                if status == 409 and conflicts < CONFLICT_RETRIES:
                    # Another conditional put on this key is in flight: try again.
                    conflicts += 1
                    time.sleep(random.uniform(0, 0.05 * conflicts))
                    continue
                raise _os_error(exc, path) from exc
            except _UNANSWERED as exc:
                raise self.unreachable(bucket, exc) from exc
            return True

    def _holds(self, path: str, data: bytes) -> bool:
        try:
            return self.read_bytes(path) == data
        except FileNotFoundError:
            return False

    def mkdirs(self, path: str) -> None:
        """Nothing: object stores have no directories, and writes need none."""
        del path

    def open_output_stream(self, path: str) -> Any:
        return self.fs.open_output_stream(path)

    # --- deletes -----------------------------------------------------------------------------
    def delete(self, path: str) -> bool:
        bucket, key = split_path(path)
        try:
            self.client.head_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if _status(exc) == 404:
                return False
            raise _os_error(exc, path) from exc
        except _UNANSWERED as exc:
            raise self.unreachable(bucket, exc) from exc
        try:
            self.client.delete_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            raise _os_error(exc, path) from exc
        except _UNANSWERED as exc:
            raise self.unreachable(bucket, exc) from exc
        return True

    def delete_many(self, paths: Sequence[str]) -> int:
        """``DeleteObjects`` in batches of 1000 keys on the I/O pool; returns how many
        keys the store reports deleted (S3 reports an absent key as deleted too)."""
        return delete_in_batches(paths, DELETE_BATCH, split_path, self._delete_batch)

    def _delete_batch(self, batch: tuple[str, list[str]]) -> tuple[int, dict[str, str]]:
        """One DeleteObjects request: how many keys went, and why the others did not."""
        bucket, keys = batch
        try:
            response = self.client.delete_objects(
                Bucket=bucket,
                Delete={"Objects": [{"Key": k} for k in keys], "Quiet": True},
            )
        except ClientError as exc:
            reason = str(_os_error(exc, f"{bucket}/{keys[0]}"))
            return 0, {f"{bucket}/{k}": reason for k in keys}
        except _UNANSWERED as exc:
            reason = str(self.unreachable(bucket, exc))
            return 0, {f"{bucket}/{k}": reason for k in keys}
        errors = {
            f"{bucket}/{e.get('Key', '')}": f"{e.get('Code', '')}: {e.get('Message', '')}"
            for e in response.get("Errors", [])
        }
        return len(keys) - len(errors), errors

    def delete_dir(self, path: str) -> None:
        """Delete every object under ``path/`` (and a marker object ``path/``)."""
        bucket, key = split_path(path)
        prefix = f"{key.rstrip('/')}/" if key else ""
        paginator = self.client.get_paginator("list_objects_v2")
        try:
            paths = [
                f"{bucket}/{o['Key']}"
                for page in paginator.paginate(Bucket=bucket, Prefix=prefix)
                for o in page.get("Contents", [])
            ]
        except ClientError as exc:
            raise _os_error(exc, path) from exc
        except _UNANSWERED as exc:
            raise self.unreachable(bucket, exc) from exc
        if paths:
            self.delete_many(paths)

    # --- reaching the store ------------------------------------------------------------------
    def probe(self, bucket: str) -> None:
        """Ask the store about ``bucket`` (``HeadBucket``); StoreUnreachableError if the
        request gets no answer. Any answer will do, an error status included: the
        operations that need the bucket report those."""
        try:
            self.client.head_bucket(Bucket=bucket)
        except ClientError:
            pass
        except _UNANSWERED as exc:
            raise self.unreachable(bucket, exc) from exc
        except BotoCoreError as exc:  # no request was sent (no credentials, say)
            logger.debug("could not ask s3://%s whether it is there: %s", bucket, exc)

    def unreachable(self, bucket: str, exc: Exception) -> StoreUnreachableError:
        """The error for a request to ``bucket`` that got no answer."""
        return StoreUnreachableError(
            self.options.store(bucket), str(exc), self.options.timeout, CHECK
        )


def split_path(path: str) -> tuple[str, str]:
    """``bucket/key`` -> (bucket, key)."""
    bucket, _, key = path.partition("/")
    if not bucket:
        raise InvalidArgumentError(f"{path!r} names no bucket")
    return bucket, key


def _status(exc: Any) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


def _os_error(exc: Any, path: str) -> OSError:
    """The OSError for a failed request: FileNotFoundError for a missing key or bucket."""
    error = exc.response.get("Error", {})
    message = f"{error.get('Code', 'S3 error')}: {error.get('Message', exc)}"
    if _status(exc) == 404:
        return FileNotFoundError(errno.ENOENT, message, path)
    return OSError(errno.EIO, message, path)


def _arrow_filesystem(options: S3Options) -> pafs.S3FileSystem:
    kwargs: dict[str, Any] = {
        "region": options.region or DEFAULT_REGION,
        # Small files (most of a table's) go in one PutObject, not a multipart upload.
        "allow_delayed_open": True,
        # A request that gets no answer gives up within about the store time limit.
        "connect_timeout": options.timeout / 6,
        "request_timeout": options.timeout / 6,
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=ARROW_ATTEMPTS),
    }
    if options.endpoint_url:
        endpoint = urlsplit(options.endpoint_url)
        if endpoint.netloc:
            kwargs["endpoint_override"] = endpoint.netloc
            kwargs["scheme"] = endpoint.scheme or "https"
        else:  # "host:port" without a scheme
            kwargs["endpoint_override"] = options.endpoint_url
    if options.path_style is not None:
        kwargs["force_virtual_addressing"] = not options.path_style
    if options.access_key:
        kwargs.update(
            access_key=options.access_key,
            secret_key=options.secret_key,
            session_token=options.session_token,
        )
    return pafs.S3FileSystem(**kwargs)


def _addressing(options: S3Options) -> str:
    if options.path_style is None:
        return "path" if options.endpoint_url else "auto"
    return "path" if options.path_style else "virtual"


def _boto3_client(options: S3Options) -> Any:
    config = Config(
        max_pool_connections=io_threads(),
        connect_timeout=options.timeout / 6,
        read_timeout=options.timeout,
        retries={"mode": "standard", "max_attempts": BOTO_RETRIES},
        s3={"addressing_style": _addressing(options)},
    )
    endpoint = options.endpoint_url
    if endpoint and "://" not in endpoint:
        endpoint = f"https://{endpoint}"
    # A session of its own: boto3's default session is not safe to share across threads.
    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint,
        region_name=options.region or DEFAULT_REGION,
        aws_access_key_id=options.access_key,
        aws_secret_access_key=options.secret_key,
        aws_session_token=options.session_token,
        config=config,
    )


def s3_file_io_for(
    uri: str, storage_options: Mapping[str, str] | None = None
) -> tuple[S3FileIO, str]:
    """The S3FileIO for ``s3://bucket/path`` (configured by ``storage_options`` over
    the environment; one instance per configuration), once the bucket answered (see
    :func:`shoal.io.connect.reach`), and ``bucket/path``.

    Raises:
        StoreUnreachableError: the store gave no answer within the time limit.
        UnknownOptionError / InvalidOptionError: a storage option S3 cannot use.
        InvalidArgumentError: a URI or a ``SHOAL_STORE_TIMEOUT`` that cannot be used.
    """
    parts = urlsplit(uri)
    if parts.query or parts.fragment:
        raise InvalidArgumentError(
            f"{uri!r}: S3 is configured by storage_options (s3.endpoint, s3.region, ...) "
            "or the AWS environment variables, not by the URI"
        )
    bucket = parts.netloc
    path = f"{bucket}{parts.path}".rstrip("/")
    split_path(path)
    options = S3Options.from_env().with_storage_options(storage_options or {})

    def connect() -> S3FileIO:
        resolved = options
        if options.region is None and options.endpoint_url is None:
            resolved = replace(options, region=_bucket_region(bucket))
        file_io = _shared_file_io(resolved)
        file_io.probe(bucket)
        return file_io

    store = options.store(bucket)
    file_io = reach(
        ("s3", options, bucket), connect, store=store, check=CHECK, timeout=options.timeout
    )
    return file_io, path


@functools.lru_cache(maxsize=16)
def _shared_file_io(options: S3Options) -> S3FileIO:
    return S3FileIO(options)


@functools.lru_cache(maxsize=64)
def _bucket_region(bucket: str) -> str:
    try:
        return str(pafs.resolve_s3_region(bucket))
    except OSError as exc:
        logger.warning(
            "could not find the region of bucket %s (%s); using %s", bucket, exc, DEFAULT_REGION
        )
        return DEFAULT_REGION
