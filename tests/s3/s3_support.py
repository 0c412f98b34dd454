"""Helpers of the object-storage tests: the bucket under test, an S3FileIO that records
the requests it sends, and the body of a committer process."""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

import shoal
from shoal.io.s3_file_io import S3FileIO
from tests.conftest import events


@dataclass(frozen=True)
class S3Env:
    """The server and the bucket of one test."""

    endpoint: str
    bucket: str

    @functools.cached_property
    def client(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def uri(self, path: str = "") -> str:
        return f"s3://{self.bucket}/{path}".rstrip("/")

    def list_keys(self, prefix: str = "") -> list[str]:
        """Every key under ``prefix``, sorted."""
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix
        )
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def put(self, key: str, data: bytes = b"stray") -> None:
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)

    def get(self, key: str) -> bytes:
        return bytes(self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def download(self, prefix: str, target: Path) -> Path:
        """A local copy of every object under ``prefix/`` (the tree below it)."""
        for key in self.list_keys(f"{prefix}/"):
            local = target / key[len(prefix) + 1 :]
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_bytes(self.get(key))
        return target


class CountingS3FileIO(S3FileIO):
    """An S3FileIO that records the S3 requests its boto3 client sends (by operation
    name) and the paths of each ``delete_many`` and ``delete`` call, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: Counter[str] = Counter()
        self.deletes: list[tuple[str, tuple[str, ...]]] = []  # ("many"|"one", paths)
        self._record_lock = threading.Lock()
        self.client.meta.events.register("before-call.s3", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        with self._record_lock:
            self.requests[model.name] += 1

    def delete_many(self, paths: Sequence[str]) -> int:
        with self._record_lock:
            self.deletes.append(("many", tuple(paths)))
        return super().delete_many(paths)

    def delete(self, path: str) -> bool:
        with self._record_lock:
            self.deletes.append(("one", (path,)))
        return super().delete(path)


def commit_appends(uri: str, worker: int, count: int, start: Any, results: Any) -> None:
    """The body of one committer process: once every process is ready (``start``, a
    barrier), ``count`` appends of rows of its own to the table at ``uri``; puts the
    (snapshot id, commit user) of each on ``results``, or the error it stopped with."""
    try:
        table = shoal.open_table(uri)
        start.wait(timeout=60)
        won = []
        for i in range(count):
            snapshot = table.append(events([worker * 1000 + i]))
            won.append((snapshot.id, snapshot.commit_user))
        results.put((worker, won))
    except BaseException as exc:
        results.put((worker, repr(exc)))
        raise
