"""Rewriting one bucket's picked files into new files at the output level.

Files written under older schemas are read with their own columns and mapped onto the
table's schema by field id, so the output is written in the current schema.
The merge streams (one batch per sorted run in memory) into rolling files; rows keep
their sequence numbers, so files left out of the compaction still order correctly
against the output. Delete rows are dropped only when nothing older can remain
below the output.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from shoal.core.plan import readable_file_check
from shoal.core.store import FileStore
from shoal.format.data_file import FILE_SOURCE_COMPACT, DataFileMeta
from shoal.primary_key.levels import run_files, sorted_runs
from shoal.primary_key.merge import BucketMerger
from shoal.primary_key.runs import CompactUnit, EventTimeSplit
from shoal.write.files import CommitMessage, RollingFileWriter, write_all


def rewrite(
    store: FileStore, partition: bytes, bucket: int, unit: CompactUnit, *, drop_deletes: bool
) -> CommitMessage:
    """Merge ``unit.files`` into files at ``unit.output_level``; the message deletes the
    inputs and adds the outputs."""
    check = readable_file_check(store, store.schema)
    for f in unit.files:
        check(f)
    bucket_path = store.paths.bucket_dir(store.partitions.path(partition), bucket)
    runs = run_files(sorted_runs(unit.files, store.decode_key), bucket_path)
    merger = BucketMerger(
        store.file_io,
        store.layout,
        store.merge_settings,
        keep_system=True,
        drop_deletes=drop_deletes,
        schemas=store.schema_of,
    )

    def writer(level: int) -> RollingFileWriter:
        return RollingFileWriter(
            store,
            partition,
            bucket,
            layout=store.layout,
            level=level,
            file_source=FILE_SOURCE_COMPACT,
        )

    merged = merger.merge(runs)
    if unit.split is None:
        files = write_all(writer(unit.output_level), merged)
    else:
        files = _write_split(writer(unit.output_level), writer(0), merged, unit.split)
    return CommitMessage(partition, bucket, store.num_buckets, tuple(files), tuple(unit.files))


def _write_split(
    below: RollingFileWriter,
    above: RollingFileWriter,
    tables: Iterable[pa.Table],
    split: EventTimeSplit,
) -> list[DataFileMeta]:
    """Rows below the threshold (or without event time) to ``below``, the rest to
    ``above``."""
    late: list[pa.Table] = []

    def early_rows() -> Iterator[pa.Table]:
        for table in tables:
            is_late = pc.fill_null(
                pc.greater_equal(event_millis(table.column(split.field)), split.threshold_ms),
                False,
            )
            late.append(table.filter(is_late))
            yield table.filter(pc.invert(is_late))

    files = write_all(below, early_rows())
    return files + write_all(above, (t for t in late if t.num_rows))


def event_millis(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """An event-time column as epoch milliseconds (int64)."""
    if pa.types.is_timestamp(column.type):
        return column.cast(pa.timestamp("ms", column.type.tz), safe=False).cast(pa.int64())
    if pa.types.is_date(column.type):
        days = column.cast(pa.date32()).cast(pa.int32()).cast(pa.int64())
        return pc.multiply(days, 86_400_000)
    return column.cast(pa.int64())
