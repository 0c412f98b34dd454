"""Rewriting one bucket's picked files into new files at the output level.

The merge streams (one batch per sorted run in memory) into rolling files; rows keep
their sequence numbers, so files left out of the compaction still order correctly
against the output. Delete rows are dropped only when nothing older can remain
below the output.
"""

from __future__ import annotations

from shoal.compaction.runs import CompactUnit
from shoal.spec.data_file import FILE_SOURCE_COMPACT
from shoal.table.levels import run_paths, sorted_runs
from shoal.table.merge import BucketMerger
from shoal.table.store import FileStore
from shoal.table.write import CommitMessage, RollingFileWriter, write_all


def rewrite(
    store: FileStore, partition: bytes, bucket: int, unit: CompactUnit, *, drop_deletes: bool
) -> CommitMessage:
    """Merge ``unit.files`` into files at ``unit.output_level``; the message deletes the
    inputs and adds the outputs."""
    bucket_path = store.paths.bucket_dir(store.partitions.path(partition), bucket)
    paths = run_paths(sorted_runs(unit.files, store.decode_key), bucket_path)
    merger = BucketMerger(
        store.file_io,
        store.layout,
        store.merge_settings,
        keep_system=True,
        drop_deletes=drop_deletes,
    )
    writer = RollingFileWriter(
        store,
        partition,
        bucket,
        layout=store.layout,
        level=unit.output_level,
        file_source=FILE_SOURCE_COMPACT,
    )
    files = write_all(writer, merger.merge(paths))
    return CommitMessage(partition, bucket, store.num_buckets, tuple(files), tuple(unit.files))
