"""Writing a shoal table from Spark: tasks write files, one commit publishes them.

Each write task gathers Spark's small Arrow batches (10,000 rows by default) into
``write-buffer-size`` bytes before handing them to shoal's writers, which roll files
at ``target-file-size``, and returns a picklable message describing its files. The
commit, in one more Python worker, publishes every task's files in one snapshot.
Nothing is ever deleted here: a failed or retried task, or a job that fails, leaves
files that no snapshot references, and orphan cleanup removes them.
The tasks (:class:`TaskWrite`) and the commit (:func:`commit_tasks`) are shared with
the streaming writer (``stream_write``), which commits each micro-batch the same way.

Primary-key tables need sequence numbers that order each bucket's rows after every
row already in it. The planning worker reads the table once and fixes a *floor*
above every sequence number in the table; every task numbers the rows it writes to a
bucket from that floor. At commit, per bucket and in task order, a task's files are
kept as written when their numbers lie above those of the bucket's latest files and
of the tasks before it; otherwise they are rewritten with their numbers shifted just
above. So a bucket written by one task (``prepare_for_write`` arranges that) is
never rewritten unless another writer added to it meanwhile, and a key written by
several tasks keeps the row of the last task. The committer checks the numbers
against the latest snapshot once more; if a concurrent writer got in between, the
renumbering is done again.

Dynamic-bucket tables (a primary key and ``bucket`` = -1) take each key's bucket from
the table's hash index, which one assigner must own for the assignment to be exact.
Their tasks write no files: each hands its rows to the commit, which writes them in
task order as one write of the table (``Transaction.write``: buckets assigned from the
latest snapshot's hash index, assigned again after a lost race). Every row passes
through the driver, so a large load goes faster into a table with fixed buckets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import IntegerType, StructField, StructType

from shoal.core import kv
from shoal.core.kv import KeyValueLayout
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries
from shoal.core.store import FileStore
from shoal.errors import CorruptDataFileError, InvalidOptionError, SchemaMismatchError
from shoal.format import data_formats
from shoal.format.data_file import DataFileMeta
from shoal.format.snapshot import Snapshot
from shoal.spark.read import table_columns
from shoal.spark.source_options import (
    WRITE,
    OverwriteMode,
    SourceOptions,
    normalize_path,
    open_store,
    reopen,
)
from shoal.spark.timestamp_precision import fit_timestamps
from shoal.transaction import (
    Sequenced,
    Sequencer,
    Transaction,
    merge_new_columns,
    written_scope,
)
from shoal.write.bucket import assign_buckets
from shoal.write.commit import WHOLE_TABLE, OverwriteScope
from shoal.write.conform import conform
from shoal.write.files import (
    AppendWriter,
    CommitMessage,
    RollingFileWriter,
    split_rows,
    write_all,
)
from shoal.write.keyed import KeyValueWriter, next_sequences, require_key_writable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

logger = logging.getLogger(__name__)

BucketKey = tuple[bytes, int]

BUCKET_COLUMN = "__shoal_bucket"


@dataclass(frozen=True)
class ShoalCommitMessage(WriterCommitMessage):
    """What one write task wrote: shoal's commit messages, one per (partition, bucket)."""

    messages: tuple[CommitMessage, ...]
    task: int = 0
    attempt: int = 0
    rows: bytes | None = None  # a dynamic-bucket table's rows, as an Arrow IPC stream


def _arrow_schema(schema: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(schema, timezone="UTC")
    except (TypeError, ValueError) as exc:
        raise SchemaMismatchError(
            f"the data has a column of a type shoal cannot write: {exc}"
        ) from None


def conformed_names(schema: StructType, store: FileStore) -> list[str]:
    """The table's names for the columns of ``schema``, having checked that data of
    ``schema`` can be written to the table.

    Raises:
        SchemaMismatchError: a column the table does not have, a missing column, or a
            type that does not cast to the table's without loss.
    """
    names = list(table_columns(schema.fieldNames(), store.schema, "the data"))
    arrow = _arrow_schema(schema)
    empty = pa.schema([f.with_name(n) for f, n in zip(arrow, names, strict=True)]).empty_table()
    conform(empty, store.arrow_schema)  # raises before any task writes a file
    return names


def first_free_sequence(store: FileStore) -> int:
    """One above every sequence number live in the table's latest snapshot."""
    latest = store.snapshots.latest()
    if latest is None:
        return 0
    return max((e.file.max_sequence_number + 1 for e in live_entries(store, latest)), default=0)


def merge_schema(schema: StructType, store: FileStore) -> FileStore:
    """``mergeSchema``: the table with the columns of ``schema`` it lacks added (those
    it has are matched as Spark matches them, ignoring case), committed before any task
    writes; ``store`` itself when it has them all.

    Raises:
        SchemaMismatchError: the data does not fit the table even with them.
    """
    fields = []
    for f in _arrow_schema(schema):
        try:
            (name,) = table_columns([f.name], store.schema, "the data")
        except SchemaMismatchError:
            name = f.name  # a column to add
        fields.append(f.with_name(name))
    merged = merge_new_columns(store, pa.schema(fields))
    return store if merged is None else reopen(store)


@dataclass(frozen=True)
class TaskWrite:
    """What every write task of one Spark write does, planned once (``plan_task_write``)
    and pickled to the tasks: the batch writer's and the streaming writer's tasks alike.
    """

    path: str
    names: tuple[str, ...]
    buffer_size: int
    primary_key: bool
    dynamic_buckets: bool
    first_sequence: int
    truncate_timestamps: bool = False  # floor microseconds into coarser columns
    # The table's storage options, out of the repr: values may be secrets.
    storage: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ShoalCommitMessage:
        """Write the task's rows into data files (a dynamic-bucket table's rows go to the
        commit instead) and describe them."""
        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        attempt = context.attemptNumber() if context is not None else 0
        store = open_store(self.path, dict(self.storage))
        if self.dynamic_buckets:
            tables: list[pa.Table] = []
            self._feed(iterator, tables.append, store.arrow_schema)
            return ShoalCommitMessage((), task, attempt, _to_ipc(tables))
        if self.primary_key:
            keyed = KeyValueWriter(store, store.merge_settings)
            self._feed(iterator, keyed.write, store.arrow_schema)
            first = self.first_sequence
            messages = keyed.prepare_commit(dict.fromkeys(keyed.buckets, first))
        else:
            writer = AppendWriter(store)
            try:
                self._feed(iterator, writer.write, store.arrow_schema)
            except BaseException:
                writer.abort()  # close the open files undescribed: no snapshot names them
                raise
            messages = writer.prepare_commit()
        return ShoalCommitMessage(tuple(messages), task, attempt)

    def _feed(
        self,
        batches: Iterator[pa.RecordBatch],
        write: Callable[[pa.Table], None],
        table: pa.Schema,
    ) -> None:
        """Spark's batches, gathered into tables of about the buffer size (one row group
        per 10,000 rows would make files slow to read); microsecond timestamps into
        coarser columns of ``table`` floored or refused (``timestamp_precision``)."""
        pending: list[pa.RecordBatch] = []
        size = 0
        for batch in batches:
            if not batch.num_rows:
                continue
            named = batch.rename_columns(list(self.names))
            pending.append(fit_timestamps(named, table, truncate=self.truncate_timestamps))
            size += batch.nbytes
            if size >= self.buffer_size:
                write(pa.Table.from_batches(pending))
                pending, size = [], 0
        if pending:
            write(pa.Table.from_batches(pending))


def plan_task_write(options: SourceOptions, schema: StructType) -> tuple[FileStore, TaskWrite]:
    """The table (with ``mergeSchema``'s columns added) and its write tasks, having
    checked that shoal can write data of ``schema`` into it.

    Raises:
        UnsupportedFeatureError: the table uses a feature shoal does not write.
        SchemaMismatchError: the data does not fit the table.
    """
    store = open_store(options.path, options.storage_options)
    if store.is_primary_key:
        require_key_writable(store)
    store.require_writable()
    if options.merge_schema:
        store = merge_schema(schema, store)
    task = TaskWrite(
        path=options.path,
        names=tuple(conformed_names(schema, store)),
        buffer_size=options.write_buffer_size,
        primary_key=store.is_primary_key,
        dynamic_buckets=store.is_primary_key and store.num_buckets < 1,
        first_sequence=first_free_sequence(store) if store.is_primary_key else 0,
        truncate_timestamps=options.truncate_timestamps,
        storage=options.storage,
    )
    return store, task


def commit_tasks(
    transaction: Transaction,
    messages: Sequence[WriterCommitMessage | None],
    *,
    overwrite: bool,
    dynamic: bool = False,
) -> Snapshot:
    """Publish every task's files in one snapshot of ``transaction``'s table (replacing
    the whole table with ``overwrite``, or with ``dynamic`` the partitions written),
    then the compaction after the write and the table's maintenance. Nothing raises
    once the snapshot is published: Spark would call abort() after a failed commit."""
    store = transaction.store
    results = [m for m in messages if isinstance(m, ShoalCommitMessage)]
    if store.is_primary_key and store.num_buckets < 1:
        return _commit_rows(transaction, results, overwrite=overwrite, dynamic=dynamic)
    written = [m for r in results for m in r.messages]
    scope = None
    if overwrite:
        scope = written_scope(store, written) if dynamic else WHOLE_TABLE
    if store.is_primary_key:
        snapshot = transaction.commit_sequenced(_sequencer(store, results, scope), overwrite=scope)
    else:
        snapshot = transaction.commit_written(written, overwrite=scope)
    logger.info("committed snapshot %d of %s", snapshot.id, store.uri)
    buckets = {(m.partition, m.bucket) for m in written}
    transaction.after_commit(buckets, compact=scope is None)
    return snapshot


def _commit_rows(
    transaction: Transaction,
    results: list[ShoalCommitMessage],
    *,
    overwrite: bool,
    dynamic: bool,
) -> Snapshot:
    """A dynamic-bucket table's rows, in task order, as one write of the table."""
    store = transaction.store
    tables = [_from_ipc(r.rows) for r in sorted(results, key=lambda r: r.task) if r.rows]
    data = pa.concat_tables(tables) if tables else store.arrow_schema.empty_table()
    scope = None
    if overwrite:
        scope = WHOLE_TABLE
        if dynamic and store.schema.partition_keys:
            rows = conform(data, store.arrow_schema)
            scope = frozenset(p for (p, _), _ in split_rows(store, rows)).__contains__
    snapshot = transaction.write(data, overwrite=scope)
    logger.info("committed snapshot %d of %s", snapshot.id, store.uri)
    return snapshot


def written_files(messages: Sequence[WriterCommitMessage | None]) -> int:
    """How many data files the tasks that finished wrote."""
    return sum(
        len(c.new_files) for m in messages if isinstance(m, ShoalCommitMessage) for c in m.messages
    )


class ShoalWriter(DataSourceArrowWriter):
    """Appends to, upserts into or overwrites one table, in one snapshot per Spark write."""

    def __init__(self, options: SourceOptions, schema: StructType, overwrite: bool) -> None:
        options.require_use(WRITE)
        store, self._task = plan_task_write(options, schema)
        self._path = options.path
        self._storage = options.storage_options
        self._overwrite = overwrite
        self._dynamic = overwrite and overwrite_mode(store, options) == "dynamic"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> ShoalCommitMessage:
        return self._task.write(iterator)

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Publish every task's files in one snapshot."""
        transaction = Transaction(open_store(self._path, self._storage))
        commit_tasks(transaction, messages, overwrite=self._overwrite, dynamic=self._dynamic)

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Deletes nothing: the files of the failed write are referenced by no snapshot,
        and orphan cleanup removes them once they are older than its age guard."""
        logger.warning(
            "write to %s aborted; %d data files of finished tasks (and any of failed tasks) "
            "stay until orphan cleanup removes them",
            self._path,
            written_files(messages),
        )


def _sequencer(
    store: FileStore, results: list[ShoalCommitMessage], scope: OverwriteScope | None
) -> Sequencer:
    """A primary-key write's messages numbered above the rows of the snapshot it
    commits on (and each task's above the earlier task's), renumbering the files whose
    sequence numbers would not sort so. An overwrite replaces everything in the
    buckets it writes, so only the tasks among themselves must be ordered."""
    by_bucket: dict[BucketKey, list[CommitMessage]] = {}
    for result in sorted(results, key=lambda r: r.task):
        for m in result.messages:
            if m.new_files:
                by_bucket.setdefault((m.partition, m.bucket), []).append(m)
    renumber = _Renumber(store)

    def sequence(latest: Snapshot | None) -> Sequenced:
        floors = {} if scope is not None else next_sequences(store, latest, by_bucket)
        return Sequenced(
            [
                m
                for key, parts in by_bucket.items()
                for m in renumber.order(parts, floors.get(key, 0))
            ]
        )

    return sequence


class _Renumber:
    """Shifts the sequence numbers of written files by rewriting them (once per shift)."""

    def __init__(self, store: FileStore) -> None:
        self.store = store
        self.layout = KeyValueLayout(store.schema)
        self._done: dict[tuple[str, int], list[DataFileMeta]] = {}

    def order(self, parts: list[CommitMessage], floor: int) -> list[CommitMessage]:
        """``parts`` (one bucket, in task order) numbered from ``floor`` upwards, each
        above the one before."""
        out = []
        cursor = floor
        for m in parts:
            low = min(f.min_sequence_number for f in m.new_files)
            high = max(f.max_sequence_number for f in m.new_files)
            shift = max(cursor - low, 0)
            out.append(m if shift == 0 else self._shifted(m, shift))
            cursor = high + shift + 1
        return out

    def _shifted(self, m: CommitMessage, shift: int) -> CommitMessage:
        files: list[DataFileMeta] = []
        for f in m.new_files:
            key = (f.file_name, shift)
            if key not in self._done:
                self._done[key] = self._rewrite(m, f, shift)
            files.extend(self._done[key])
        return replace(m, new_files=tuple(files))

    def _rewrite(self, m: CommitMessage, f: DataFileMeta, shift: int) -> list[DataFileMeta]:
        store = self.store
        bucket_dir = store.paths.bucket_dir(store.partitions.path(m.partition), m.bucket)
        path = data_file_path(bucket_dir, f)
        fmt = data_formats.format_of(path)
        if fmt is None:
            raise CorruptDataFileError(f"{path}: not a data file of a format shoal reads")
        schema = self.layout.file_schema
        with store.file_io.open_input_file(path) as source:
            rows = pa.Table.from_batches(list(fmt.read(source, schema, None, 1 << 20)), schema)
        index = rows.schema.get_field_index(kv.SEQUENCE_NUMBER)
        shifted = pc.add(rows.column(index), pa.scalar(shift, pa.int64()))
        rows = rows.set_column(index, rows.schema.field(index), shifted)
        writer = RollingFileWriter(store, m.partition, m.bucket, layout=self.layout, level=f.level)
        return write_all(writer, [rows])


def _to_ipc(tables: list[pa.Table]) -> bytes | None:
    if not tables:
        return None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, tables[0].schema) as stream:
        for table in tables:
            stream.write_table(table)
    return bytes(sink.getvalue())


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.BufferReader(data)).read_all()


def overwrite_mode(store: FileStore, options: SourceOptions) -> OverwriteMode:
    """What ``mode("overwrite")`` replaces in ``store``: the options' choice, and for
    an unpartitioned table (where both modes replace everything) ``static``.

    Raises:
        InvalidOptionError: a partitioned table and no choice in the options. Spark
            hands a Python data source neither its session setting
            ``spark.sql.sources.partitionOverwriteMode`` nor the mode it implies, so
            guessing would wipe the table for a session that means ``dynamic``.
    """
    if options.overwrite_mode is not None:
        return options.overwrite_mode
    if not store.schema.partition_keys:
        return "static"
    raise InvalidOptionError(
        "partitionOverwriteMode",
        None,
        f"an overwrite of the partitioned table {store.uri!r} must say what it replaces: "
        ".option('partitionOverwriteMode', 'static') for the whole table, or 'dynamic' for "
        "the partitions present in the data (in SQL: INSERT OVERWRITE t WITH "
        "('partitionOverwriteMode' = 'dynamic') ...). Spark does not hand its session "
        "setting spark.sql.sources.partitionOverwriteMode to a Python data source",
    )


def prepare_for_write(
    df: DataFrame,
    table_path: str,
    *,
    num_partitions: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> DataFrame:
    """``df`` repartitioned so that every bucket of the table is written by one task.

    A Spark write produces one file per bucket per task. Hashing the rows with the
    table's own bucket function (Paimon's) and repartitioning on (partition columns,
    bucket) makes it one file per bucket per commit, and spares the commit of a
    primary-key table from renumbering buckets that several tasks wrote. Tables
    without fixed buckets are repartitioned on their partition columns (if any).

    ``num_partitions`` defaults to the bucket count of an unpartitioned table, and to
    ``spark.sql.shuffle.partitions`` otherwise. Rows of one key keep no order across
    the shuffle: if ``df`` holds a key more than once, which row wins is unspecified.

    Raises:
        SchemaMismatchError: ``df`` cannot be written to the table (checked here, in the
            driver, before any Spark job runs).
    """
    path = normalize_path(table_path)
    storage = dict(storage_options or {})
    store = open_store(path, storage)
    names = conformed_names(df.schema, store)
    keys = [df.columns[names.index(k)] for k in store.schema.partition_keys]
    if store.num_buckets < 1:
        if not keys:
            return df
        return df.repartition(num_partitions, *keys) if num_partitions else df.repartition(*keys)
    out = StructType([*df.schema.fields, StructField(BUCKET_COLUMN, IntegerType(), True)])
    with_bucket = df.mapInArrow(_bucket_function(path, names, storage), out)
    count = num_partitions or (None if keys else store.num_buckets)
    columns = [*keys, BUCKET_COLUMN]
    parted = (
        with_bucket.repartition(count, *columns) if count else with_bucket.repartition(*columns)
    )
    return parted.drop(BUCKET_COLUMN)


def _bucket_function(
    path: str, names: list[str], storage: dict[str, str]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def add_bucket(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        store = open_store(path, storage)
        for batch in batches:
            rows = conform(batch.rename_columns(names), store.arrow_schema)
            buckets = assign_buckets(
                rows, store.bucket_keys, store.bucket_key_types, store.num_buckets
            )
            yield batch.append_column(BUCKET_COLUMN, pa.array(buckets, pa.int32()))

    return add_bucket
