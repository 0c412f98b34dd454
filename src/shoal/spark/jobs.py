"""Compaction, orphan cleanup and snapshot expiration as Spark jobs.

Each job runs the single-process operation itself, with only the steps whose cost
grows with the table's files in Spark tasks; planning, every decision and the commit
stay on the driver, so the results equal those of the table methods:

- :func:`compact` runs the table's transaction with the bucket rewrites in tasks
  (groups of about equal input bytes);
- :func:`remove_orphan_files` runs ``cleanup.orphans.remove_orphan_files`` with an
  executor of tasks: directories listed, manifests read and the sweep run in tasks,
  and a DataFrame ``left_anti`` join on the file name in between (it spills where
  the history's names do not fit in memory);
- :func:`expire_snapshots` runs ``cleanup.expire.expire_snapshots`` with a deleter
  of tasks, batch after batch in the same order as on one machine;
- :func:`expire_partitions` is one commit, on the driver.

A job packs its items into at most twice ``spark.default.parallelism`` groups (a
Python task costs about 30 ms) and runs one task per group: ``spark.range(n,
numPartitions=n)`` joined with a broadcast table of the pickled groups gives task
``i`` exactly group ``i``. A ``ShoalError`` raised in a task comes back as a row and
is raised again on the driver with its own class. Nothing is deleted or committed
before every task of the reading steps has succeeded.
"""

from __future__ import annotations

import heapq
import logging
import os
import pickle
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, NoReturn, TypeVar

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from shoal.cleanup import expire as _expire
from shoal.cleanup import orphans as _orphans
from shoal.cleanup.expire import ExpireResult
from shoal.cleanup.orphans import OrphanFilesResult
from shoal.compaction.compact import CompactResult, CompactTask, run_task
from shoal.core.paths import PathFactory
from shoal.core.schema_manager import SchemaManager
from shoal.core.store import FileStore
from shoal.errors import InvalidArgumentError, ShoalError, TableNotFoundError
from shoal.io import FileIO, FileStatus, file_io_for
from shoal.table import Table
from shoal.transaction import Transaction
from shoal.write.files import CommitMessage

logger = logging.getLogger(__name__)

__all__ = ["compact", "expire_partitions", "expire_snapshots", "remove_orphan_files"]

TASKS_PER_CORE = 2  # tasks per job and core of spark.default.parallelism, at most

Item = TypeVar("Item")

_ERROR = "error"  # the column a task's ShoalError travels in
_LISTED = pa.schema(
    [
        ("dir", pa.string()),
        ("path", pa.string()),
        ("name", pa.string()),
        ("size", pa.int64()),
        ("mtime_ms", pa.int64()),
    ]
)
_NAMES = pa.schema([("name", pa.string())])
_MESSAGES = pa.schema([("index", pa.int64()), ("message", pa.binary())])
_COUNT = pa.schema([("deleted", pa.int64())])
_SWEPT = pa.schema([("path", pa.string()), ("size", pa.int64()), ("mtime_ms", pa.int64())])


# --- the public jobs -------------------------------------------------------------------------
def compact(
    spark: SparkSession,
    table_path: str,
    strategy: str | None = None,
    event_time_threshold: datetime | int | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> CompactResult:
    """Compact the primary-key table at ``table_path`` with one Spark task per group
    of buckets and one COMPACT commit; the arguments are those of ``Table.compact``,
    and so is everything but the rewrite (the same transaction, on the driver)."""
    store = _open_table(table_path, storage_options)
    if not store.is_primary_key:
        raise InvalidArgumentError(
            f"compact needs a primary-key table; {table_path} is an append table"
        )
    rewrite_all = partial(_rewrite_on_spark, spark, _StoreRef.of(store))
    return Transaction(store).compact(strategy, event_time_threshold, rewrite_all=rewrite_all)


def remove_orphan_files(
    spark: SparkSession,
    table_path: str,
    older_than: datetime | None = None,
    dry_run: bool = False,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> OrphanFilesResult:
    """Delete the files of the table at ``table_path`` that nothing reaches and that
    are older than ``older_than`` (default: now minus one day), as
    ``Table.remove_orphan_files`` does: the same run, with the listing, the manifest
    reads and the sweep in Spark tasks. ``dry_run`` only reports the files."""
    store = _open_table(table_path, storage_options)
    executor = _OrphansOnSpark(spark, max_tasks(spark))
    return _orphans.remove_orphan_files(
        store, older_than=older_than, dry_run=dry_run, executor=executor
    )


def expire_snapshots(  # noqa: PLR0917 (positional like Table.expire_snapshots)
    spark: SparkSession,
    table_path: str,
    retain_min: int | None = None,
    retain_max: int | None = None,
    older_than: datetime | None = None,
    max_deletes: int | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> ExpireResult:
    """Expire snapshots of the table at ``table_path`` as ``Table.expire_snapshots``
    does (arguments left as None come from the table options), deleting the data
    files and manifests in Spark tasks."""
    store = _open_table(table_path, storage_options)
    return _expire.expire_snapshots(
        store,
        retain_min=retain_min,
        retain_max=retain_max,
        older_than=older_than,
        max_deletes=max_deletes,
        delete=partial(_delete_on_spark, spark, store.file_io),
    )


def expire_partitions(
    spark: SparkSession,
    table_path: str,
    expiration_time: timedelta | str | None = None,
    now: datetime | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Drop the partitions of the table at ``table_path`` older than
    ``expiration_time`` (default: ``partition.expiration-time``), as
    ``Table.expire_partitions`` does; returns them.

    This runs on the driver, and ``spark`` is taken only for a signature like the
    other jobs': expiring partitions is one OVERWRITE commit of DELETE entries, made
    from the live files' metadata, and deletes no file (snapshot expiration removes
    the files later), so there is no work to hand out, and a commit is made by one
    process."""
    del spark
    table = Table.open(table_path, storage_options=storage_options)
    return table.expire_partitions(expiration_time, now=now)


# --- grouping --------------------------------------------------------------------------------
def max_tasks(spark: SparkSession) -> int:
    """How many tasks one step of a job uses at most: ``TASKS_PER_CORE`` per unit of
    the default parallelism."""
    try:
        parallelism = int(spark.sparkContext.defaultParallelism)
    except AttributeError:  # Spark Connect has no SparkContext
        value = spark.conf.get("spark.default.parallelism", None) or spark.conf.get(
            "spark.sql.shuffle.partitions", "1"
        )
        parallelism = int(value or 1)
    return max(1, TASKS_PER_CORE * parallelism)


def chunks(items: Sequence[Item], count: int) -> list[list[Item]]:
    """``items`` cut into at most ``count`` consecutive groups whose sizes differ by at
    most one; no group is empty."""
    count = min(count, len(items))
    if count == 0:
        return []
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        out.append(list(items[start:end]))
        start = end
    return out


def balanced(items: Sequence[Item], weight: Callable[[Item], int], count: int) -> list[list[Item]]:
    """``items`` in at most ``count`` groups of about equal total ``weight`` (largest
    first, each to the lightest group); no group is empty."""
    count = min(count, len(items))
    groups: list[list[Item]] = [[] for _ in range(count)]
    loads = [(0, index) for index in range(count)]
    for item in sorted(items, key=weight, reverse=True):
        load, index = heapq.heappop(loads)
        groups[index].append(item)
        heapq.heappush(loads, (load + weight(item), index))
    return groups


# --- opening the table -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _StoreRef:
    """What a task needs to open the table: the driver's FileIO (pickled with the task,
    so the store's configuration, storage options included, travels with it), the
    table's location and the schema of the job."""

    file_io: FileIO
    uri: str
    root: str
    schema_id: int

    @staticmethod
    def of(store: FileStore) -> _StoreRef:
        return _StoreRef(store.file_io, store.uri, store.root, store.schema.id)

    def open(self) -> FileStore:
        schema = SchemaManager(self.file_io, PathFactory(self.root)).schema(self.schema_id)
        if schema is None:
            raise TableNotFoundError(self.uri)
        return FileStore(self.file_io, self.uri, self.root, schema)


def _open_table(uri: str, storage_options: Mapping[str, str] | None = None) -> FileStore:
    """The table's store on the driver, refused as ``shoal.open_table`` refuses it; a
    local path is made absolute, so that tasks find it whatever their directory."""
    if "://" not in uri:
        uri = os.path.abspath(os.path.expanduser(uri))
    file_io, root = file_io_for(uri, storage_options)
    schema = SchemaManager(file_io, PathFactory(root)).latest()
    if schema is None:
        raise TableNotFoundError(uri)
    store = FileStore(file_io, uri, root, schema)
    Table(store)  # the checks of an open table (fixed buckets for primary keys)
    return store


# --- running groups in tasks -----------------------------------------------------------------
def _run_groups(
    spark: SparkSession,
    payloads: Sequence[object],
    work: Callable[[Any], Iterator[pa.Table]],
    schema: pa.Schema,
) -> DataFrame:
    """One Spark task per payload: ``work(payload)`` yields tables of ``schema``. The
    result has ``schema``'s columns and the error column."""
    out_schema = schema.append(pa.field(_ERROR, pa.binary()))
    count = len(payloads)
    if count == 0:
        return spark.createDataFrame(out_schema.empty_table())
    groups = spark.createDataFrame(
        pa.table(
            {
                "id": pa.array(range(count), pa.int64()),
                "payload": pa.array([pickle.dumps(p) for p in payloads], pa.binary()),
            }
        )
    )
    # Partition i of the range holds exactly the id i; the broadcast join keeps that
    # partitioning, so task i runs group i.
    tasks = spark.range(0, count, 1, count).join(F.broadcast(groups), "id")
    return tasks.mapInArrow(_Tasks(work, schema), _spark_schema(out_schema))


@dataclass(frozen=True, slots=True)
class _Tasks:
    """The function ``mapInArrow`` runs: the work of each payload in the task's rows,
    with a ShoalError turned into a row that carries it."""

    work: Callable[[Any], Iterator[pa.Table]]
    schema: pa.Schema

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        out_schema = self.schema.append(pa.field(_ERROR, pa.binary()))
        for batch in batches:
            for payload in batch.column("payload").to_pylist():
                try:
                    for table in self.work(pickle.loads(payload)):
                        columns = [*table.columns, pa.nulls(table.num_rows, pa.binary())]
                        done = pa.Table.from_arrays(columns, schema=out_schema)
                        yield from done.to_batches()
                except ShoalError as exc:
                    row = {f.name: [None] for f in self.schema} | {_ERROR: [_encode_error(exc)]}
                    yield pa.RecordBatch.from_pydict(row, schema=out_schema)


def _collect(frame: DataFrame) -> pa.Table:
    """The rows of ``frame`` on the driver, without the error column; raises the
    first task error."""
    table = frame.toArrow()
    if _ERROR not in table.column_names:
        return table
    _raise_task_errors(table.select([_ERROR]))
    return table.drop_columns([_ERROR])


def _is_error() -> Column:
    return F.col(_ERROR).isNotNull()


def _encode_error(exc: ShoalError) -> bytes:
    """The class, message and attributes of ``exc`` (its constructor may take other
    arguments than its message, so the exception itself may not unpickle)."""
    try:
        return pickle.dumps((type(exc), str(exc), dict(vars(exc))))
    except (pickle.PicklingError, TypeError, AttributeError):
        return pickle.dumps((type(exc), str(exc), {}))


def _raise_task_errors(errors: pa.Table) -> None:
    for data in errors.column(_ERROR).to_pylist():
        if data is not None:
            _raise_error(data)


def _raise_error(data: bytes) -> NoReturn:
    cls, message, attributes = pickle.loads(data)
    exc = cls.__new__(cls)
    exc.args = (message,)
    exc.__dict__.update(attributes)
    exc.add_note("(raised in a Spark task)")
    raise exc


def _spark_schema(schema: pa.Schema) -> StructType:
    return from_arrow_schema(schema)


# --- the work of the tasks -------------------------------------------------------------------
def _rewrite_on_spark(
    spark: SparkSession, ref: _StoreRef, store: FileStore, tasks: Sequence[CompactTask]
) -> list[CommitMessage]:
    """compaction's ``RewriteAll``: the tasks in groups of about equal input bytes, one
    Spark task per group; the messages in the order of ``tasks``."""
    del store  # the tasks open the table from ``ref``
    groups = balanced(list(enumerate(tasks)), lambda t: t[1].input_bytes, max_tasks(spark))
    rewritten = _collect(_run_groups(spark, [(ref, g) for g in groups], _rewrite_group, _MESSAGES))
    by_index = dict(
        zip(
            rewritten.column("index").to_pylist(),
            rewritten.column("message").to_pylist(),
            strict=True,
        )
    )
    return [pickle.loads(by_index[index]) for index in range(len(tasks))]


def _rewrite_group(payload: tuple[_StoreRef, list[tuple[int, CompactTask]]]) -> Iterator[pa.Table]:
    ref, group = payload
    store = ref.open()
    for index, task in group:  # one after another: a Spark task has one core
        message = pickle.dumps(run_task(store, task))
        yield pa.table({"index": [index], "message": [message]}, schema=_MESSAGES)


@dataclass(frozen=True, slots=True)
class _OrphansOnSpark:
    """Orphan cleanup's executor: the directories listed and the manifest lists read
    in tasks, a group of them per task."""

    spark: SparkSession
    most: int  # tasks per step, at most

    def list_candidates(
        self, store: FileStore, directories: Sequence[tuple[str, bool]]
    ) -> _CandidatesOnSpark:
        groups = [(store.file_io, g) for g in chunks(directories, self.most)]
        listed = _run_groups(self.spark, groups, _list_directories, _LISTED).persist()
        return _CandidatesOnSpark(self.spark, _StoreRef.of(store), self.most, listed)

    def manifests_named_by(self, store: FileStore, list_names: Sequence[str]) -> set[str]:
        ref = _StoreRef.of(store)
        groups = [(ref, g) for g in chunks(list_names, self.most)]
        read = _collect(_run_groups(self.spark, groups, _manifests_of, _NAMES))
        return set(read.column("name").to_pylist())


@dataclass(frozen=True, slots=True)
class _CandidatesOnSpark:
    """Candidates listed in tasks and left in Spark, cached: a row per file, and a row
    without a path per directory that holds none."""

    spark: SparkSession
    ref: _StoreRef
    most: int
    listed: DataFrame

    def survey(self) -> _orphans.Survey:
        files = self.listed.where(~_is_error() & F.col("path").isNotNull())
        odd = self.listed.where(_is_error() | F.col("path").isNull())
        rows = _collect(odd.unionByName(files.orderBy("mtime_ms").limit(1))).to_pylist()
        oldest = [_status(r) for r in rows if r["path"] is not None]
        empty = frozenset(r["dir"] for r in rows if r["path"] is None)
        return _orphans.Survey(oldest[0] if oldest else None, empty)

    def sweep(self, reach: _orphans.Reach, sweep: _orphans.Sweep) -> list[FileStatus]:
        """The names ``reach`` holds (the entries of its manifests read in tasks and
        left in Spark), a ``left_anti`` join of the candidates with them, then ``sweep``
        in tasks, one directory's candidates in one task."""
        groups = [(self.ref, g) for g in chunks(reach.manifests, self.most)]
        files = _run_groups(self.spark, groups, _files_of, _NAMES)
        named = pa.table(
            {"name": sorted(reach.names), _ERROR: pa.nulls(len(reach.names), pa.binary())},
            schema=_NAMES.append(pa.field(_ERROR, pa.binary())),
        )
        reached = files.unionByName(self.spark.createDataFrame(named)).persist()
        try:
            # Every manifest was read before anything is deleted.
            _raise_task_errors(reached.where(_is_error()).select(_ERROR).toArrow())
            used = reached.where(~_is_error()).drop(_ERROR)
            candidates = self.listed.where(~_is_error() & F.col("path").isNotNull()).drop(_ERROR)
            unused = candidates.join(used, "name", "left_anti").repartition(self.most, "dir")
            task = _SweepTask(self.ref.file_io, sweep)
            swept = _collect(unused.mapInArrow(task, _spark_schema(_SWEPT)))
        finally:
            reached.unpersist()
        return [_status(r) for r in swept.to_pylist()]

    def close(self) -> None:
        self.listed.unpersist()


def _status(row: dict[str, Any]) -> FileStatus:
    return FileStatus(row["path"], row["size"], row["mtime_ms"], False)


def _list_directories(payload: tuple[FileIO, list[tuple[str, bool]]]) -> Iterator[pa.Table]:
    """The candidates of the directories; an empty directory gives a row without a
    path."""
    file_io, directories = payload
    listed = _orphans.list_directories(file_io, directories)
    rows: dict[str, list[Any]] = {f.name: [] for f in _LISTED}
    for (directory, _), files in zip(directories, listed, strict=True):
        if not files:
            for name, column in rows.items():
                column.append(directory if name == "dir" else None)
        for status in files:
            rows["dir"].append(directory)
            rows["path"].append(status.path)
            rows["name"].append(_orphans.file_name(status.path))
            rows["size"].append(status.size)
            rows["mtime_ms"].append(status.mtime_ms)
    yield pa.table(rows, schema=_LISTED)


def _manifests_of(payload: tuple[_StoreRef, list[str]]) -> Iterator[pa.Table]:
    ref, list_names = payload
    names = _orphans.manifests_named_by(ref.open(), list_names)
    yield pa.table({"name": sorted(names)}, schema=_NAMES)


def _files_of(payload: tuple[_StoreRef, list[str]]) -> Iterator[pa.Table]:
    ref, manifest_names = payload
    names = _orphans.files_named_by(ref.open(), manifest_names, None)
    yield pa.table({"name": sorted(names)}, schema=_NAMES)


@dataclass(frozen=True, slots=True)
class _SweepTask:
    """The function ``mapInArrow`` runs over candidates that no root names: the run's
    sweep."""

    file_io: FileIO
    sweep: _orphans.Sweep

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        file_io = self.file_io
        candidates = [
            _status(row)
            for batch in batches
            for row in batch.select(["path", "size", "mtime_ms"]).to_pylist()
        ]
        swept = self.sweep(file_io, candidates)
        yield pa.RecordBatch.from_pylist([f._asdict() for f in swept], schema=_SWEPT)


def _delete_on_spark(spark: SparkSession, file_io: FileIO, paths: Sequence[str]) -> int:
    """expiration's ``BulkDelete``: the paths in consecutive batches (sorted, so a
    directory's files mostly share a task), one Spark task per batch."""
    batches = chunks(sorted(paths), max_tasks(spark))
    counts = _collect(_run_groups(spark, [(file_io, b) for b in batches], _delete_batch, _COUNT))
    return sum(counts.column("deleted").to_pylist())


def _delete_batch(payload: tuple[FileIO, list[str]]) -> Iterator[pa.Table]:
    file_io, paths = payload
    yield pa.table({"deleted": [_expire.delete_paths(file_io, paths)]}, schema=_COUNT)
