"""Structured Streaming into a shoal table: ``df.writeStream.format("shoal")``.

Each micro-batch is written as a batch write is (:class:`~shoal.spark.write.TaskWrite`
in the tasks, :func:`~shoal.spark.write.commit_tasks` at the commit) and published in
one snapshot, at most once. Spark replays a batch whose sink commit it did not record
in the checkpoint's commit log (the driver died between the two), so the commit alone
cannot be trusted to run once. As Paimon's streaming committers do, every snapshot of
the query carries the query's commit user and the batch id as its commit identifier;
before committing batch B the writer finds the newest snapshot of its commit user
(``FileStoreCommit.last_committed_identifier``, Paimon's ``filterCommitted``) and skips
B when that identifier is B or above. The files the replayed tasks wrote are then in
no snapshot, and orphan cleanup removes them.

The commit user must be the same in every run of one query, so it is derived from
the query's checkpoint location (a name-based UUID of it, after the table's
``commit.user-prefix`` and ``_`` when it has one), or given as the ``commit-user``
option. Spark hands the sink its ``checkpointLocation`` only when it is set on the
writer (``.option("checkpointLocation", ...)``), not when it comes from the session's
``spark.sql.streaming.checkpointLocation``; without either option the write is
refused before anything is written.

Output modes: Spark calls ``streamWriter`` with ``overwrite`` False for ``append`` and
True for ``complete``; ``complete`` replaces the whole table with each batch's result
(an OVERWRITE snapshot). ``update`` never reaches the sink: Spark refuses it for every
Python data source at the query's start.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from shoal.core.store import FileStore
from shoal.errors import InvalidOptionError
from shoal.spark.source_options import (
    STREAM_WRITE,
    SourceOptions,
    normalize_path,
    open_store,
)
from shoal.spark.write import (
    ShoalCommitMessage,
    commit_tasks,
    plan_task_write,
    written_files,
)
from shoal.transaction import Transaction
from shoal.write.commit import COMMIT_USER_PREFIX, FileStoreCommit

logger = logging.getLogger(__name__)

# The namespace of the commit users derived from checkpoint locations.
CHECKPOINT_NAMESPACE = uuid.UUID("6f1f2c8e-3a52-5d0c-9a51-7c0b8f6b2d11")

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class ShoalStreamWriter(DataSourceStreamArrowWriter):
    """Appends or upserts each micro-batch into one table (``complete`` mode: replaces
    the table with it), one snapshot per batch, each batch at most once."""

    def __init__(self, options: SourceOptions, schema: StructType, overwrite: bool) -> None:
        options.require_use(STREAM_WRITE)
        store, self._task = plan_task_write(options, schema)
        self._path = options.path
        self._storage = options.storage_options
        self._overwrite = overwrite
        self.commit_user = stream_commit_user(options, store)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ShoalCommitMessage:
        return self._task.write(iterator)

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        """Publish batch ``batchId`` in one snapshot, unless a snapshot of this query's
        commit user with that identifier or a later one exists: then the batch was
        committed in an earlier run and is skipped. An ``append`` batch that wrote no
        rows publishes nothing; a ``complete`` one always replaces the table."""
        store = open_store(self._path, self._storage)
        committer = FileStoreCommit(store, self.commit_user, commit_identifier=batchId)
        committed = committer.last_committed_identifier()
        if committed is not None and committed >= batchId:
            logger.warning(
                "batch %d of commit user %s was committed to %s before (up to batch %d); "
                "skipped, its %d rewritten data files stay for orphan cleanup",
                batchId,
                self.commit_user,
                self._path,
                committed,
                written_files(messages),
            )
            return
        if not self._overwrite and not _has_rows(messages):
            logger.info("batch %d wrote no rows into %s; nothing to commit", batchId, self._path)
            return
        snapshot = commit_tasks(Transaction(store, committer), messages, overwrite=self._overwrite)
        logger.info("batch %d committed as snapshot %d of %s", batchId, snapshot.id, self._path)

    def abort(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        """Deletes nothing: the batch's files are in no snapshot, Spark runs the batch
        again, and orphan cleanup removes them."""
        logger.warning(
            "batch %d of the stream into %s aborted; %d data files of finished tasks (and "
            "any of failed tasks) stay until orphan cleanup removes them",
            batchId,
            self._path,
            written_files(messages),
        )


def stream_commit_user(options: SourceOptions, store: FileStore) -> str:
    """The commit user of a streaming write into ``store``: the ``commit-user`` option,
    or a UUID named by the checkpoint location (after the table's
    ``commit.user-prefix``), the same in every run of the query.

    Raises:
        InvalidOptionError: neither option is given, or the checkpoint location is a
            relative path (Spark resolves it against the driver's working directory,
            which a restart may not share).
    """
    if options.commit_user is not None:
        return options.commit_user
    location = options.checkpoint_location
    if location is None:
        raise InvalidOptionError(
            "checkpointLocation",
            None,
            "a streaming write into a shoal table commits each batch exactly once by "
            "recording a commit user that every run of the query shares, derived from its "
            "checkpoint location; give it on the writer: "
            ".writeStream.option('checkpointLocation', ...) (Spark does not hand "
            "spark.sql.streaming.checkpointLocation to a Python data source), or name the "
            "commit user with .option('commit-user', ...)",
        )
    canonical = canonical_location(location)
    derived = str(uuid.uuid5(CHECKPOINT_NAMESPACE, canonical))
    prefix = store.schema.options.get(COMMIT_USER_PREFIX)
    return f"{prefix}_{derived}" if prefix is not None else derived


def canonical_location(location: str) -> str:
    """A checkpoint location spelled one way: ``file:`` URIs as local paths, no trailing
    slash. Raises InvalidOptionError for a relative path."""
    path = normalize_path(location)
    if path.startswith("file://"):
        path = "/" + path[len("file://") :].lstrip("/")
    if not path.startswith("/") and not _URI.match(path):
        raise InvalidOptionError(
            "checkpointLocation",
            location,
            "give an absolute path or a URI: the commit user that makes each batch commit "
            "once is derived from it, and a relative path names another directory when the "
            "query restarts elsewhere",
        )
    return path.rstrip("/") or "/"


def _has_rows(messages: Sequence[WriterCommitMessage | None]) -> bool:
    return any(
        isinstance(m, ShoalCommitMessage) and (m.rows or any(c.new_files for c in m.messages))
        for m in messages
    )


__all__ = ["ShoalStreamWriter", "canonical_location", "stream_commit_user"]
