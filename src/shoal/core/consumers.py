"""Consumers: ``consumer/consumer-<id>`` files, each a reader's next snapshot.

A streaming reader that runs under a consumer id (the ``consumer-id`` read option)
records, as it commits its progress, the id of the next snapshot it will read:
``{"nextSnapshot": N}`` in ``<table>/consumer/consumer-<id>`` (Paimon's ``Consumer``
and ``ConsumerManager``, 0.9 and 1.0). Snapshot and changelog expiration never remove a
snapshot at or above the smallest of these (``cleanup/expire``,
``cleanup/changelog_expire``), so a reader that stops and starts again finds every
snapshot it has not read. A consumer nobody advances would hold expiration back for
ever: ``consumer.expiration-time`` deletes the consumer files not modified for that
long, before each snapshot expiration.

A record replaces the whole file so that a reader sees the old or the new progress,
never a part of either: on the local disk a temporary file renamed into place
(hidden, ``.consumer-<id>.<uuid>.tmp``, so no listing takes it for a consumer), on an
object store a single PUT.
"""

from __future__ import annotations

import logging

from shoal.errors import CorruptMetadataError, InvalidArgumentError
from shoal.format import jsonfmt
from shoal.io import FileIO, io_map

logger = logging.getLogger(__name__)

CONSUMER_PREFIX = "consumer-"
_NEXT_SNAPSHOT = "nextSnapshot"


def check_consumer_id(consumer_id: object) -> str:
    """``consumer_id`` if it names a file in the consumer directory; raises
    InvalidArgumentError for an id that is empty, not a string, or holds a path
    separator or a control character (which would put the file elsewhere, or nowhere)."""
    if not isinstance(consumer_id, str) or not consumer_id:
        raise InvalidArgumentError(f"a consumer id must be a non-empty string, not {consumer_id!r}")
    bad = [c for c in consumer_id if c in "/\\" or ord(c) < 0x20 or ord(c) == 0x7F]
    if bad:
        raise InvalidArgumentError(
            f"consumer id {consumer_id!r} holds {bad[0]!r}; a consumer id names the file "
            f"consumer/{CONSUMER_PREFIX}<id>, so it may hold no path separator or control "
            "character"
        )
    return consumer_id


def _check_next_snapshot(next_snapshot: object) -> int:
    if not jsonfmt.is_long(next_snapshot) or next_snapshot < 1:  # type: ignore[operator]
        raise InvalidArgumentError(
            f"a consumer's next snapshot must be a snapshot id (a positive 64-bit integer), "
            f"not {next_snapshot!r}"
        )
    return next_snapshot  # type: ignore[return-value]


def encode_consumer(next_snapshot: int) -> bytes:
    """The file's bytes as Paimon's Java writer lays them out."""
    return jsonfmt.dumps({_NEXT_SNAPSHOT: next_snapshot}).encode()


def decode_consumer(data: bytes, path: str) -> int:
    """The next snapshot a consumer file holds (other fields are ignored, as Paimon's
    reader ignores them). Raises CorruptMetadataError naming ``path``."""
    obj = jsonfmt.load_json_object(data, path)
    value = obj.get(_NEXT_SNAPSHOT)
    if not jsonfmt.is_long(value):
        raise CorruptMetadataError(
            path, f"{_NEXT_SNAPSHOT} must be a 64-bit integer, not {jsonfmt.short(value)}"
        )
    return int(value)  # type: ignore[arg-type]


class ConsumerManager:
    """The consumers of one table (its ``consumer/`` directory)."""

    def __init__(self, file_io: FileIO, table_path: str) -> None:
        self.file_io = file_io
        self.directory = f"{table_path.rstrip('/')}/consumer"

    def path(self, consumer_id: str) -> str:
        """The file of ``consumer_id``. Raises InvalidArgumentError for an id that
        names no file there."""
        return f"{self.directory}/{CONSUMER_PREFIX}{check_consumer_id(consumer_id)}"

    def next_snapshot(self, consumer_id: str) -> int | None:
        """The next snapshot ``consumer_id`` will read; None when there is no such
        consumer. Raises CorruptMetadataError for a file that cannot be read."""
        return self._read(self.path(consumer_id))

    def record(self, consumer_id: str, next_snapshot: int) -> None:
        """Create or replace the consumer's file (atomically: readers see the old or
        the new value). Raises InvalidArgumentError for a bad id or snapshot id."""
        path = self.path(consumer_id)
        self.file_io.overwrite(path, encode_consumer(_check_next_snapshot(next_snapshot)))

    def delete(self, consumer_id: str) -> None:
        """Remove the consumer's file, if there is one."""
        self.file_io.delete(self.path(consumer_id))

    def consumers(self) -> dict[str, int]:
        """Every consumer's id with its next snapshot, ordered by id (a file removed
        while this reads is left out). Raises CorruptMetadataError for a file that
        cannot be read."""
        ids = self._ids()
        paths = [f"{self.directory}/{CONSUMER_PREFIX}{i}" for i in ids]
        values = io_map(self._read, paths, concurrent=self.file_io.concurrent_reads)
        return {i: v for i, v in zip(ids, values, strict=True) if v is not None}

    def min_next_snapshot(self) -> int | None:
        """The smallest next snapshot of all consumers; None without consumers."""
        return min(self.consumers().values(), default=None)

    def expire(self, older_than_ms: int) -> list[str]:
        """Delete the consumers whose file was last modified before ``older_than_ms``
        (epoch milliseconds, Paimon's ``consumer.expiration-time`` rule); returns their
        ids."""
        expired = []
        for status in self.file_io.list_status(self.directory):
            name = status.path.rsplit("/", 1)[-1]
            if status.is_dir or not name.startswith(CONSUMER_PREFIX):
                continue
            if status.mtime_ms < older_than_ms:
                self.file_io.delete(status.path)
                consumer_id = name[len(CONSUMER_PREFIX) :]
                logger.info(
                    "consumer %r expired: not advanced since %d (epoch ms)",
                    consumer_id,
                    status.mtime_ms,
                )
                expired.append(consumer_id)
        return sorted(expired)

    def _ids(self) -> list[str]:
        ids = []
        for status in self.file_io.list_status(self.directory):
            name = status.path.rsplit("/", 1)[-1]
            if not status.is_dir and name.startswith(CONSUMER_PREFIX):
                ids.append(name[len(CONSUMER_PREFIX) :])
        return sorted(ids)

    def _read(self, path: str) -> int | None:
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise CorruptMetadataError(
                path, "a directory stands where a consumer file should be"
            ) from None
        return decode_consumer(data, path)
