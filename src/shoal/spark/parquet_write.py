"""Writing an append table with Spark's own Parquet writer.

The ``shoal`` data source hands every row from the JVM to a Python worker, which is
what Spark's Python Data Source API costs. An unbucketed append table stores plain
Parquet files that Spark's JVM writer can produce byte for byte as readers expect
them, so for such a table :func:`write_parquet` lets Spark write the files itself:

1. the rows are cast to the table's Spark types (a schema mismatch fails here,
   before any file is written), with a hidden copy of each partition column that
   Spark partitions its output by, so every file holds one partition's rows;
2. Spark writes Parquet files into a staging directory inside the table,
   ``.spark-write-<uuid>``, in Paimon's layout (``shoal.format.parquet``): the table's
   compression, timestamps as INT64 microseconds, decimals as INT32/INT64 up to
   precision 18 (Spark's standard, not its legacy, format), no field ids; these
   settings are set on the write whatever the session says;
3. the driver reads each file's footer, on the I/O pool: its row count, the bounds
   and null counts of its columns, its partition (the single value of each partition
   column), and checks its columns against the layout shoal's own writer gives them
   (physical type, annotations, field id; the repetition follows the DataFrame's
   nullability, the one difference allowed, and a NOT NULL column's null count must
   be 0); then moves it into its bucket directory under a data-file name;
4. one commit publishes every file; the staging directory is removed.

Nothing is committed unless every file was checked and moved. A write that fails
after moving some files leaves them unreferenced in bucket directories, where
orphan cleanup removes them; the staging directory is removed whatever happens
(one left by a killed driver is the only thing to remove by hand).

Tables this path cannot write (primary keys, fixed buckets, column types Spark's
writer stores differently, object stores, where a move is a copy) go through the
data source: :func:`shoal.spark.write_table` picks the path.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from shoal.core.store import FileStore
from shoal.errors import SchemaMismatchError, ShoalError, UnsupportedFeatureError
from shoal.format import parquet
from shoal.format import types as T
from shoal.format.data_file import DataFileMeta
from shoal.format.snapshot import Snapshot
from shoal.io import FileStatus, LocalFileIO, parallel_map
from shoal.spark.source_options import normalize_path, open_store
from shoal.spark.types import spark_schema
from shoal.spark.write import conformed_names
from shoal.transaction import Transaction, written_scope
from shoal.write.commit import WHOLE_TABLE, OverwriteScope
from shoal.write.files import CommitMessage, append_file_meta, store_format
from shoal.write.stats_collector import StatsCollector, footer_leaves

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger(__name__)

STAGING_PREFIX = ".spark-write-"
PARTITION_COPY_PREFIX = "__shoal_partition_"
_SPARK_CODECS = {"none", "uncompressed", "snappy", "gzip", "lz4", "zstd", "brotli"}
# Types Spark's Parquet writer stores as shoal's writer does (checked again per file).
_PLAIN_TYPES = {
    T.BOOLEAN,
    T.TINYINT,
    T.SMALLINT,
    T.INT,
    T.BIGINT,
    T.FLOAT,
    T.DOUBLE,
    T.VARCHAR,
    T.VARBINARY,
    T.DATE,
    T.DECIMAL,
}
_MICROSECOND_TYPES = {T.TIMESTAMP, T.TIMESTAMP_LTZ}
# Spark's settings that decide its Parquet layout, as Paimon's layout needs them.
_LAYOUT_CONF = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.writeLegacyFormat": "false",
    "spark.sql.parquet.fieldId.write.enabled": "false",
}


def why_not_parquet(store: FileStore) -> str | None:
    """Why :func:`write_parquet` cannot write the table, or None when it can."""
    if store.is_primary_key:
        return "a primary-key table's rows are merged and sequenced per bucket"
    if store.num_buckets > 0:
        return "a fixed-bucket table routes rows by a hash Spark does not compute"
    if not isinstance(store.file_io, LocalFileIO):
        return "moving a file on an object store is a copy"
    fmt = store_format(store, 0)
    if fmt.name != "parquet":
        return f"the table writes {fmt.name} data files"
    if store.file_compression.lower() not in _SPARK_CODECS:
        return f"Spark's Parquet writer has no {store.file_compression!r} codec"
    for field in store.schema.fields:
        if not _spark_writes_it_as_shoal(field.type):
            return f"Spark's Parquet writer stores column {field.name!r} ({field.type}) differently"
    return None


def _spark_writes_it_as_shoal(t: T.DataType) -> bool:
    if not isinstance(t, T.AtomicType):
        return False
    if t.root in _MICROSECOND_TYPES:
        return t.precision == 6
    return t.root in _PLAIN_TYPES


def write_parquet(
    df: DataFrame,
    table_path: str,
    *,
    overwrite: bool = False,
    dynamic_partition_overwrite: bool = False,
    storage_options: Mapping[str, str] | None = None,
) -> Snapshot:
    """Write ``df`` into the append table at ``table_path`` with Spark's Parquet writer,
    in one commit; returns the snapshot. ``overwrite`` replaces the whole table, or with
    ``dynamic_partition_overwrite`` the partitions ``df`` has rows for.

    Raises:
        SchemaMismatchError: ``df`` does not fit the table (nothing is written).
        UnsupportedFeatureError: the table is one this path cannot write (see
            :func:`why_not_parquet`); :func:`shoal.spark.write_table` writes it through
            the data source.
    """
    return write_parquet_into(
        open_store(normalize_path(table_path), storage_options),
        df,
        overwrite=overwrite,
        dynamic_partition_overwrite=dynamic_partition_overwrite,
    )


def write_parquet_into(
    store: FileStore,
    df: DataFrame,
    *,
    overwrite: bool = False,
    dynamic_partition_overwrite: bool = False,
) -> Snapshot:
    """:func:`write_parquet` into the table ``store`` opened already."""
    store.require_writable()
    reason = why_not_parquet(store)
    if reason is not None:
        raise UnsupportedFeatureError(
            f"Spark's Parquet writer cannot write {store.uri}: {reason}; write it through "
            "the 'shoal' data source (shoal.spark.write_table picks it)"
        )
    frame, copies = _table_rows(df, store)
    staging = f"{store.root}/{STAGING_PREFIX}{uuid.uuid4().hex}"
    layout = _expected_layout(store)
    try:
        with _paimon_layout(df.sparkSession):
            writer = frame.write.mode("error").option("compression", _codec(store))
            (writer.partitionBy(*copies) if copies else writer).parquet(staging)
        staged = _staged_files(store, staging)
        names = [store.paths.new_data_file_name() for _ in staged]
        files = parallel_map(
            lambda s: _describe(store, layout, *s), list(zip(staged, names, strict=True))
        )
        messages = _move_into_buckets(store, [f for f in files if f.meta.row_count])
    finally:
        store.file_io.delete_dir(staging)
    scope = None
    if overwrite:
        scope = written_scope(store, messages) if dynamic_partition_overwrite else WHOLE_TABLE
    return _commit(store, messages, scope)


def _table_rows(df: DataFrame, store: FileStore) -> tuple[DataFrame, list[str]]:
    """``df``'s rows in the table's columns and Spark types, plus a hidden copy of each
    partition column (Spark leaves the columns it partitions by out of the files)."""
    from pyspark.sql import functions as F

    names = conformed_names(df.schema, store)
    by_table_name = dict(zip(names, df.columns, strict=True))
    target = spark_schema(store.schema.fields)
    columns = [F.col(f"`{by_table_name[f.name]}`").cast(f.dataType).alias(f.name) for f in target]
    copies = [f"{PARTITION_COPY_PREFIX}{i}" for i in range(len(store.schema.partition_keys))]
    columns += [
        F.col(f"`{by_table_name[k]}`").cast(target[k].dataType).alias(c)
        for k, c in zip(store.schema.partition_keys, copies, strict=True)
    ]
    return df.select(*columns), copies


def _codec(store: FileStore) -> str:
    codec = store.file_compression.lower()
    return "none" if codec == "uncompressed" else codec


@contextmanager
def _paimon_layout(spark: SparkSession) -> Iterator[None]:
    """Spark's Parquet settings of Paimon's layout for the write, the session's own
    restored after it."""
    before = {key: spark.conf.get(key, None) for key in _LAYOUT_CONF}
    for key, value in _LAYOUT_CONF.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, previous in before.items():
            if previous is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, previous)


_Leaf = tuple[str, str, str, int]


def _leaves(footer: pq.FileMetaData) -> dict[str, _Leaf]:
    """Each leaf column of a footer by its path: physical type, logical type, converted
    type, field id."""
    schema = footer.schema
    return {
        schema.column(i).path: (
            schema.column(i).physical_type,
            str(schema.column(i).logical_type),
            schema.column(i).converted_type,
            schema.column(i).max_definition_level,
        )
        for i in range(len(schema))
    }


def _expected_layout(store: FileStore) -> pq.FileMetaData:
    """The footer shoal's own writer gives a file of the table (without rows)."""
    stored = parquet.stored_schema(store.arrow_schema)
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, stored, **parquet.writer_options(stored)) as writer:
        writer.write_table(stored.empty_table())
    return pq.read_metadata(pa.BufferReader(sink.getvalue()))


def _staged_files(store: FileStore, staging: str) -> list[FileStatus]:
    listed = store.file_io.list_status(staging, recursive=True)
    return sorted(
        (s for s in listed if not s.is_dir and s.path.endswith(".parquet")), key=lambda s: s.path
    )


@dataclass(frozen=True, slots=True)
class _Staged:
    path: str
    partition: bytes
    meta: DataFileMeta


def _describe(store: FileStore, layout: pq.FileMetaData, staged: FileStatus, name: str) -> _Staged:
    """A staged file as the commit describes it under the data-file name ``name``, read
    from its footer (and, where the footer leaves something out, from its columns)."""
    path = staged.path
    footer = pq.read_metadata(path)
    _check_types(store, footer, path)
    _check_layout(layout, footer, path)
    collector = StatsCollector(
        store.schema.fields, store.stats_mode, always=store.event_time_columns
    )
    if not collector.count_nulls(footer):
        collector.update(pq.read_table(path))
    _check_not_null(collector, path)
    stats = collector.result(footer)
    meta = append_file_meta(store, name, staged.size, footer.num_rows, stats)
    return _Staged(path, store.partitions.to_bytes(_partition_of(store, footer, path)), meta)


def _check_types(store: FileStore, footer: pq.FileMetaData, path: str) -> None:
    written = footer.schema.to_arrow_schema()
    for field in store.arrow_schema:
        index = written.get_field_index(field.name)
        if index < 0 or written.field(index).type != field.type:
            found = "no such column" if index < 0 else str(written.field(index).type)
            raise SchemaMismatchError(
                f"Spark wrote column {field.name!r} of {path} as {found}, where the table "
                f"holds {field.type}; nothing was committed. Write through the 'shoal' "
                "data source instead"
            )


def _check_layout(expected: pq.FileMetaData, footer: pq.FileMetaData, path: str) -> None:
    """Spark's columns in Paimon's layout: the physical type, annotations and field ids
    shoal's writer gives them. Repetition follows the nullability of the DataFrame's
    columns, not the table's: a NOT NULL column may be OPTIONAL (the null counts refuse
    any null there), a nullable one REQUIRED; readers read both alike."""
    written = _leaves(footer)
    for column, (physical, logical, converted, levels) in _leaves(expected).items():
        found = written.get(column)
        if found is None or found[:3] != (physical, logical, converted):
            raise SchemaMismatchError(
                f"Spark wrote column {column!r} of {path} as {found and found[:3]}, where "
                f"Paimon's layout is {(physical, logical, converted)}; nothing was "
                "committed. Write through the 'shoal' data source instead"
            )
        if abs(found[3] - levels) > 1:
            raise SchemaMismatchError(f"Spark wrote column {column!r} of {path} nested differently")
    if _has_field_ids(footer):
        raise SchemaMismatchError(f"Spark wrote Parquet field ids into {path}; Paimon writes none")


def _has_field_ids(footer: pq.FileMetaData) -> bool:
    return re.search(r"field_id=\d", str(footer.schema)) is not None


def _check_not_null(collector: StatsCollector, path: str) -> None:
    for field, nulls in zip(collector.fields, collector.null_counts, strict=True):
        if nulls and not field.type.nullable:
            raise SchemaMismatchError(
                f"column {field.name!r} is NOT NULL, but the data holds {nulls} nulls "
                f"(in {path}); nothing was committed"
            )


def _partition_of(store: FileStore, footer: pq.FileMetaData, path: str) -> tuple[Any, ...]:
    """The partition of a file Spark wrote for one value of each partition column."""
    keys = store.schema.partition_keys
    if not keys:
        return ()
    values = _single_values_from_footer(footer, keys)
    if values is None:  # bounds left out of the footer: read the columns
        columns = pq.read_table(path, columns=list(keys))
        values = tuple(columns.column(k)[0].as_py() for k in keys)
        if any(len(columns.column(k).unique()) != 1 for k in keys):
            raise ShoalError(f"{path} holds rows of several partitions; nothing was committed")
    return values


def _single_values_from_footer(
    footer: pq.FileMetaData, keys: tuple[str, ...]
) -> tuple[Any, ...] | None:
    leaves = footer_leaves(footer)
    values = []
    for key in keys:
        found: list[Any] = []
        for g in range(footer.num_row_groups):
            group = footer.row_group(g)
            stats = group.column(leaves[key]).statistics
            if stats is None or not stats.has_null_count:
                return None
            if stats.null_count == group.num_rows:
                found.append(None)
            elif stats.null_count or not stats.has_min_max or stats.min != stats.max:
                return None
            else:
                found.append(stats.min)
        if len(set(found)) != 1:
            return None
        values.append(found[0])
    return tuple(values)


def _move_into_buckets(store: FileStore, files: list[_Staged]) -> list[CommitMessage]:
    """Move every staged file into its partition's bucket directory; the commit
    messages, one per partition."""
    file_io = store.file_io
    by_partition: dict[bytes, list[DataFileMeta]] = {}
    for f in files:
        by_partition.setdefault(f.partition, []).append(f.meta)
    directories = {p: store.paths.bucket_dir(store.partitions.path(p), 0) for p in by_partition}
    for directory in directories.values():
        file_io.mkdirs(directory)
    for f in files:  # a rename on a local disk costs less than a hand-off to the pool
        file_io.rename(f.path, f"{directories[f.partition]}/{f.meta.file_name}")
    return [
        CommitMessage(partition, 0, store.num_buckets, tuple(metas))
        for partition, metas in by_partition.items()
    ]


def _commit(
    store: FileStore, messages: list[CommitMessage], scope: OverwriteScope | None
) -> Snapshot:
    transaction = Transaction(store)
    snapshot = transaction.commit_written(messages, overwrite=scope)
    logger.info(
        "committed snapshot %d of %s: %d files written by Spark's Parquet writer",
        snapshot.id,
        store.uri,
        sum(len(m.new_files) for m in messages),
    )
    transaction.after_commit((), compact=False)
    return snapshot
