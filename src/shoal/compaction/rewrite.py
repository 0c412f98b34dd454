"""Rewriting one bucket's picked files into new files at the output level.

Files written under older schemas are read with their own columns and mapped onto the
table's schema by field id, so the output is written in the current schema.
The merge streams (one batch per sorted run in memory) into rolling files; rows keep
their sequence numbers, so files left out of the compaction still order correctly
against the output. Delete rows are dropped only when nothing older can remain
below the output.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from shoal import options as O
from shoal.compaction import vectors as V
from shoal.compaction.vectors import BucketVectors
from shoal.core.kv import FIRST_ROW
from shoal.core.paths import data_file_path
from shoal.core.plan import readable_file_check
from shoal.core.store import FileStore
from shoal.format.data_file import FILE_SOURCE_COMPACT, DataFileMeta
from shoal.primary_key.changelog import ChangelogMaker, Mode, compared_columns
from shoal.primary_key.levels import RunFile, run_files, sorted_runs
from shoal.primary_key.merge import BucketMerger
from shoal.primary_key.runs import CompactUnit, EventTimeSplit
from shoal.write.files import CommitMessage, RollingFileWriter, write_all


def rewrite(
    store: FileStore,
    partition: bytes,
    bucket: int,
    unit: CompactUnit,
    *,
    drop_deletes: bool,
    vectors: BucketVectors | None = None,
    upper: Sequence[DataFileMeta] = (),
) -> CommitMessage:
    """Merge ``unit.files`` into files at ``unit.output_level``; the message deletes the
    inputs and adds the outputs. On a table with deletion vectors (``vectors``: the
    bucket's), the inputs are read without their deleted rows and the message also
    replaces the bucket's deletion-vector index file (``compaction/vectors``). On a
    table that looks keys up without deletion vectors (``changelog-producer`` =
    ``lookup``), ``upper`` are the bucket's files above the output level, where the
    keys of level-0 inputs are looked up. With the ``lookup`` or ``full-compaction``
    changelog producer, the message also adds the compaction's changelog files
    (``primary_key/changelog``)."""
    check = readable_file_check(store, store.schema)
    for f in unit.files:
        check(f)
    bucket_path = store.paths.bucket_dir(store.partitions.path(partition), bucket)
    base = {} if vectors is None else V.load(store, vectors.index_files)
    runs = run_files(sorted_runs(unit.files, store.decode_key), bucket_path, base)
    changelog = changelog_of(store, unit)
    level0 = unit.output_level > 0 and any(f.level == 0 for f in unit.files)
    merger = BucketMerger(
        store.file_io,
        store.layout,
        store.merge_settings,
        keep_system=True,
        drop_deletes=drop_deletes,
        schemas=store.schema_of,
        changelog=changelog,
        lookup_compaction=level0 and store.merge_settings.lookup,
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

    found: V.Vectors = {}
    extra: list[pa.Table] = []
    looks_up = vectors is not None or store.merge_settings.lookup or changelog is not None
    if looks_up and level0:
        above = tuple(upper) if vectors is None else vectors.upper_files
        found = _look_up(store, bucket_path, unit, above, base)
        settings = store.merge_settings
        # The rows found join the merge (as the row before, for the changelog, and
        # the row an aggregation or partial-update combines with): with deletion
        # vectors they are marked, and the merged row replaces them.
        joins = settings.sequence_field is not None or settings.combines
        if vectors is None or joins or changelog is not None:
            key_columns = store.layout.key_columns
            extra = [_found_rows(merger, bucket_path, above, found, key_columns)]
    merged = merger.merge(runs, extra)
    if unit.split is None:
        files = write_all(writer(unit.output_level), merged)
    else:
        files = _write_split(writer(unit.output_level), writer(0), merged, unit.split)
    changelog_files: tuple[DataFileMeta, ...] = ()
    if changelog is not None and changelog.tables:
        log = RollingFileWriter(
            store,
            partition,
            bucket,
            layout=store.layout,
            level=unit.output_level,
            changelog=True,
        )
        changelog_files = tuple(write_all(log, changelog.tables))
    message = CommitMessage(
        partition,
        bucket,
        store.num_buckets,
        tuple(files),
        tuple(unit.files),
        changelog_files=changelog_files,
    )
    if vectors is None:
        return message
    after = V.merged(base, unit.files, found)
    if after is None:
        return message
    new_index = V.write_index_file(store, after)
    return replace(
        message,
        new_index_files=() if new_index is None else (new_index,),
        deleted_index_files=vectors.index_files,
    )


def changelog_of(store: FileStore, unit: CompactUnit) -> ChangelogMaker | None:
    """What collects the changelog of the compaction of ``unit``, when it writes one:
    with ``lookup``, a compaction of level-0 files (Paimon's
    ``LookupMergeTreeCompactRewriter``); with ``full-compaction``, one into the top
    level (``FullChangelogMergeTreeCompactRewriter``)."""
    producer = store.options.get(O.CHANGELOG_PRODUCER)
    settings = store.merge_settings
    if producer == "lookup":
        if unit.output_level == 0 or all(f.level != 0 for f in unit.files):
            return None
        mode: Mode = "first-row" if settings.engine == FIRST_ROW else "lookup"
    elif producer == "full-compaction":
        if unit.output_level != store.max_level:
            return None
        mode = "full"
    else:
        return None
    compared = compared_columns(
        store.layout,
        store.options.get(O.CHANGELOG_PRODUCER_ROW_DEDUPLICATE),
        store.options.get(O.CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS),
    )
    return ChangelogMaker(mode, store.layout, settings, store.max_level, compared)


def _look_up(
    store: FileStore,
    bucket_path: str,
    unit: CompactUnit,
    upper: Sequence[DataFileMeta],
    base: V.Vectors,
) -> V.Vectors:
    """The rows above the output level that the unit's level-0 keys replace: the keys
    of its level-0 files (their live rows, when deletes are ignored) that none of its
    files above level 0 holds, looked up in the bucket's upper files."""
    reader = V.KeyReader(store, bucket_path, base)
    level0 = [f for f in unit.files if f.level == 0]
    keys = reader.keys(level0, live_only=store.merge_settings.ignore_delete)
    merged_above = [f for f in unit.files if f.level > 0]
    if merged_above and keys.num_rows:
        held = reader.keys(merged_above)
        keys = keys.join(
            held, keys=list(store.layout.key_columns), join_type="left anti", use_threads=False
        )
    if not keys.num_rows:
        return {}
    return V.look_up(reader, keys, upper)


def _found_rows(
    merger: BucketMerger,
    bucket_path: str,
    upper: Sequence[DataFileMeta],
    found: V.Vectors,
    key_columns: list[str],
) -> pa.Table:
    """The rows ``found`` points at, key-ordered: they join the merge (with a
    ``sequence.field`` it keeps one of them when its field orders after the new row)."""
    by_name = {f.file_name: f for f in upper}
    tables = [
        merger.rows_at(
            RunFile(data_file_path(bucket_path, by_name[name]), by_name[name].schema_id), positions
        )
        for name, positions in found.items()
    ]
    if not tables:
        return merger.read_schema.empty_table()
    return pa.concat_tables(tables).sort_by([(c, "ascending") for c in key_columns])


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
