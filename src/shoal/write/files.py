"""Writing data files: split rows by partition and bucket, roll files at the target
size, and describe each file for the commit.

Writers never commit and never delete: they return :class:`CommitMessage` values
(small and picklable, so Spark tasks can send them to the driver), and the
committer publishes them in one snapshot. Files of a write that is never committed
are left for orphan cleanup.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal import options as O
from shoal.core import kv
from shoal.core.kv import KeyValueLayout
from shoal.core.store import FileStore
from shoal.errors import UnsupportedFeatureError
from shoal.format import binary_row, data_formats
from shoal.format import types as T
from shoal.format.data_file import FILE_SOURCE_APPEND, DataFileMeta
from shoal.format.index_manifest import IndexFileMeta
from shoal.format.stats import EMPTY_STATS, SimpleStats
from shoal.io import parallel_map
from shoal.write.bucket import assign_buckets
from shoal.write.conform import conform, to_batches
from shoal.write.stats_collector import StatsCollector

_PARALLEL_WRITE_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class CommitMessage:
    """The files one writer added (and, for compaction, removed) in one bucket, the
    bucket's index files it replaced (a compaction's deletion vectors), and the
    changelog files it wrote (``changelog-producer`` = ``input``)."""

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    deleted_files: tuple[DataFileMeta, ...] = field(default=())
    new_index_files: tuple[IndexFileMeta, ...] = ()
    deleted_index_files: tuple[IndexFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()


def now_millis() -> datetime:
    now = datetime.now()
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


class RollingFileWriter:
    """Data files of one (partition, bucket), rolled at the target file size, in the
    format the table's options give files of ``level`` (``format/data_formats``).

    The size is judged by the Arrow bytes written into the current file, so
    compressed files come out at or below the target. With a key-value ``layout``
    the rows written must already be in the layout's file schema, sorted by key, and
    the files are described as a primary-key table's (keys, sequence numbers, level).
    """

    def __init__(
        self,
        store: FileStore,
        partition: bytes,
        bucket: int,
        *,
        layout: KeyValueLayout | None = None,
        level: int = 0,
        file_source: int = FILE_SOURCE_APPEND,
        changelog: bool = False,
    ) -> None:
        self.store = store
        self.changelog = changelog  # changelog files: named changelog-*, described alike
        self.partition = partition
        self.bucket = bucket
        self.layout = layout
        self.level = level
        self.file_source = file_source
        self._schema = layout.file_schema if layout is not None else store.arrow_schema
        self._format = store_format(store, level)
        self._dir = store.paths.bucket_dir(store.partitions.path(partition), bucket)
        self._target = store.target_file_size
        self._files: list[DataFileMeta] = []
        self._writer: data_formats.FileWriter | None = None
        self._sink: Any = None
        self._name = ""
        self._rows = 0
        self._bytes = 0
        self._stats: StatsCollector | None = None
        self._key_stats: StatsCollector | None = None
        self._next_sequence = 0
        self._sequences: tuple[int, int] | None = None
        self._deletes = 0
        self._first_key: tuple[Any, ...] = ()
        self._last_key: tuple[Any, ...] = ()

    def write(self, table: pa.Table) -> None:
        offset = 0
        while offset < table.num_rows:
            room = self._target - self._bytes
            chunk = table.slice(offset) if offset else table
            size = chunk.nbytes
            if size > room and chunk.num_rows > 1:
                rows = max(1, int(chunk.num_rows * room / max(size, 1)))
                chunk = chunk.slice(0, rows)
                size = chunk.nbytes
            self._append(chunk, size)
            offset += chunk.num_rows
            if self._bytes >= self._target:
                self._roll()

    def _append(self, chunk: pa.Table, size: int) -> None:
        if self._writer is None:
            self._open()
        assert self._writer is not None
        assert self._stats is not None
        self._writer.write(chunk)
        self._stats.update(chunk)
        if self.layout is not None:
            self._track_keys(chunk)
        self._rows += chunk.num_rows
        self._bytes += size

    def _open(self) -> None:
        store = self.store
        paths = store.paths
        self._name = (
            paths.new_changelog_file_name() if self.changelog else paths.new_data_file_name()
        )
        # A data file's name ends in its format's extension, by which readers pick it.
        self._name = f"{self._name.rpartition('.')[0]}.{self._format.name}"
        self._sink = store.file_io.open_output_stream(f"{self._dir}/{self._name}")
        try:
            self._writer = self._format.writer(self._sink, self._schema, store.file_compression)
        except BaseException:
            self._sink.close()
            raise
        footer = self._format.name == "parquet"
        self._stats = StatsCollector(
            store.schema.fields, store.stats_mode, always=store.event_time_columns, footer=footer
        )
        if self.layout is not None:
            key_fields = [
                T.DataField(i, name, t)
                for i, (name, t) in enumerate(
                    zip(self.layout.key_columns, self.layout.key_types, strict=True)
                )
            ]
            self._key_stats = StatsCollector(key_fields, "full", footer=footer)
            self._first_key = ()
            self._sequences = None
            self._deletes = 0

    def _track_keys(self, chunk: pa.Table) -> None:
        assert self.layout is not None
        assert self._key_stats is not None
        self._key_stats.update(chunk)
        keys = self.layout.key_columns
        if not self._first_key:
            self._first_key = tuple(chunk.column(k)[0].as_py() for k in keys)
        self._last_key = tuple(chunk.column(k)[-1].as_py() for k in keys)
        bounds = pc.min_max(chunk.column(kv.SEQUENCE_NUMBER))
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if self._sequences is not None:
            low, high = min(low, self._sequences[0]), max(high, self._sequences[1])
        self._sequences = (low, high)
        self._deletes += pc.sum(kv.is_retract(chunk.column(kv.VALUE_KIND))).as_py() or 0

    def _roll(self) -> None:
        if self._writer is None:
            return
        assert self._stats is not None
        # The footer of a Parquet file just written holds the bounds of most columns.
        footer = self._writer.close()
        size = self._sink.tell()
        self._sink.close()
        stats = self._stats.result(footer)
        if self.layout is not None:
            assert self._key_stats is not None
            assert self._sequences is not None
            key_types = self.layout.key_types
            meta = DataFileMeta(
                file_name=self._name,
                file_size=size,
                row_count=self._rows,
                min_key=binary_row.serialize(self._first_key, key_types),
                max_key=binary_row.serialize(self._last_key, key_types),
                key_stats=self._key_stats.result(footer)[0],
                value_stats=stats[0],
                min_sequence_number=self._sequences[0],
                max_sequence_number=self._sequences[1],
                schema_id=self.store.schema.id,
                level=self.level,
                creation_time=now_millis(),
                delete_row_count=self._deletes,
                file_source=self.file_source,
                value_stats_cols=stats[1],
            )
        else:
            meta = append_file_meta(
                self.store,
                self._name,
                size,
                self._rows,
                stats,
                first_sequence=self._next_sequence,
                level=self.level,
                file_source=self.file_source,
            )
            self._next_sequence += self._rows
        self._files.append(meta)
        self._writer, self._sink, self._stats = None, None, None
        self._rows = self._bytes = 0

    def close(self) -> list[DataFileMeta]:
        self._roll()
        return self._files

    def abort(self) -> None:
        """Close an open file without describing it (the write failed)."""
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = None


def store_format(store: FileStore, level: int) -> data_formats.DataFormat:
    """The format of the files a table writes at ``level`` (``file.format``, or
    ``file.format.per.level`` for that level).

    Raises:
        UnsupportedFeatureError: the format cannot hold a column of the table's
            schema (as Paimon refuses it), naming the option.
    """
    fmt = data_formats.format_for_level(
        store.options.get(O.FILE_FORMAT), store.options.get(O.FILE_FORMAT_PER_LEVEL), level
    )
    reason = fmt.unstorable(store.schema.fields)
    if reason is not None:
        raise UnsupportedFeatureError(
            f"table {store.uri!r} writes {fmt.name} data files at level {level}, and {reason}; "
            "choose another file.format (or file.format.per.level)",
            feature="file.format",
        )
    return fmt


def append_file_meta(
    store: FileStore,
    name: str,
    size: int,
    rows: int,
    stats: tuple[SimpleStats, tuple[str, ...] | None],
    *,
    first_sequence: int = 0,
    level: int = 0,
    file_source: int = FILE_SOURCE_APPEND,
) -> DataFileMeta:
    """The description of a data file of an append table (no keys): its value
    statistics and ``_VALUE_STATS_COLS`` in ``stats``, its rows numbered from
    ``first_sequence``."""
    value_stats, stats_cols = stats
    return DataFileMeta(
        file_name=name,
        file_size=size,
        row_count=rows,
        min_key=binary_row.EMPTY_ROW,
        max_key=binary_row.EMPTY_ROW,
        key_stats=EMPTY_STATS,
        value_stats=value_stats,
        min_sequence_number=first_sequence,
        max_sequence_number=first_sequence + rows - 1,
        schema_id=store.schema.id,
        level=level,
        creation_time=now_millis(),
        delete_row_count=0,
        file_source=file_source,
        value_stats_cols=stats_cols,
    )


def write_all(writer: RollingFileWriter, tables: Iterable[pa.Table]) -> list[DataFileMeta]:
    """Write every table and close the writer; on a failure, close the open file
    without describing it (it is never committed) and re-raise."""
    try:
        for table in tables:
            writer.write(table)
    except BaseException:
        writer.abort()
        raise
    return writer.close()


def split_rows(store: FileStore, table: pa.Table) -> Iterator[tuple[tuple[bytes, int], pa.Table]]:
    """Rows grouped by (partition, bucket): one stable sort by a combined group code,
    then zero-copy slices of the sorted table."""
    codes = np.zeros(table.num_rows, dtype=np.int64)
    dictionaries: list[pa.Array] = []
    for key in store.schema.partition_keys:
        encoded = pc.dictionary_encode(table.column(key), null_encoding="encode")
        encoded = encoded.combine_chunks()
        dictionaries.append(encoded.dictionary)
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        codes = codes * len(encoded.dictionary) + indices
    num_buckets = max(store.num_buckets, 1)
    if store.num_buckets > 0:
        buckets = assign_buckets(table, store.bucket_keys, store.bucket_key_types, num_buckets)
        codes = codes * num_buckets + buckets

    def group_key(code: int) -> tuple[bytes, int]:
        code, bucket = divmod(code, num_buckets)
        values = []
        for dictionary in reversed(dictionaries):
            code, index = divmod(code, len(dictionary))
            values.append(dictionary[index].as_py())
        return store.partitions.to_bytes(tuple(reversed(values))), bucket

    if (codes == codes[0]).all():
        yield group_key(int(codes[0])), table
        return
    order = np.argsort(codes, kind="stable")
    ordered_codes = codes[order]
    starts = np.flatnonzero(np.diff(ordered_codes)) + 1
    bounds = [0, *starts.tolist(), len(order)]
    ordered = table.take(order)
    for start, end in itertools.pairwise(bounds):
        yield group_key(int(ordered_codes[start])), ordered.slice(start, end - start)


class AppendWriter:
    """Writes rows of an append table (or any table's rows, as they are) into data files."""

    def __init__(self, store: FileStore) -> None:
        store.require_writable()
        self.store = store
        self._writers: dict[tuple[bytes, int], RollingFileWriter] = {}

    def write(self, data: Any) -> None:
        """Add rows; raises SchemaMismatchError before writing anything they would break.
        On any failure the open files are closed undescribed (never committed)."""
        try:
            self._write(data)
        except BaseException:
            self.abort()
            raise

    def _write(self, data: Any) -> None:
        source = to_batches(data)
        batches: Iterable[pa.Table | pa.RecordBatch] = (
            [source] if isinstance(source, pa.Table) else source
        )
        for batch in batches:
            table = conform(batch, self.store.arrow_schema)
            if not table.num_rows:
                continue
            work = []
            for key, rows in split_rows(self.store, table):
                writer = self._writers.get(key)
                if writer is None:
                    writer = self._writers[key] = RollingFileWriter(self.store, *key)
                work.append((writer, rows))
            if table.nbytes >= _PARALLEL_WRITE_BYTES:
                # Files of different buckets are independent and Parquet encoding releases
                # the GIL; for small writes a thread hand-off costs more than it saves.
                parallel_map(lambda item: item[0].write(item[1]), work)
            else:
                for writer, rows in work:
                    writer.write(rows)

    def prepare_commit(self) -> list[CommitMessage]:
        """Close every open file and describe what was written, per bucket."""
        messages = []
        for (partition, bucket), writer in self._writers.items():
            files = writer.close()
            if files:
                messages.append(
                    CommitMessage(partition, bucket, self.store.num_buckets, tuple(files))
                )
        self._writers.clear()
        return messages

    def abort(self) -> None:
        for writer in self._writers.values():
            writer.abort()
        self._writers.clear()
