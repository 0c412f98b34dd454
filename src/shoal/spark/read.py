"""Reading a shoal table in Spark: the scan plan's splits packed into input partitions.

Spark calls ``reader()``, then ``pushFilters()``, pickles the reader for the tasks,
and only then calls ``partitions()``: everything a task needs besides its files is
fixed in the first two, in the Python worker that plans the query. The snapshot is
resolved once, in ``reader()``, and the files of that snapshot are what the
partitions carry, so every task of a query reads the same snapshot however many
commits land meanwhile.

Each Python task costs tens of milliseconds before it reads a byte, so splits are
packed into partitions of about ``source.split.target-size`` bytes (each file counts
at least ``source.split.open-file-cost``), as Spark packs Parquet files; and, as
Spark does, into at least as many partitions as Spark runs tasks at once while each
still holds that open cost in data, so that a small table keeps every core busy. The
partitions are of about equal weight, since the slowest task ends the query. A
primary-key bucket read with merging is never divided: its files are merged by key
inside one task.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from shoal import options as O
from shoal.core import deletion_vectors as DVS
from shoal.core import filter_text
from shoal.core import predicate as P
from shoal.core.plan import DataSplit
from shoal.core.store import FileStore
from shoal.errors import SchemaMismatchError, UnsupportedFeatureError
from shoal.format.manifest import ManifestEntry
from shoal.format.schema import TableSchema
from shoal.format.snapshot import Snapshot
from shoal.read.files import merged_batches, read_batches
from shoal.read.incremental import (
    ROW_KIND,
    keyed_diff,
    plan_incremental,
    read_changelog,
    resolve_mode,
)
from shoal.scan import Scan
from shoal.spark.source_options import READ, SourceOptions, open_store
from shoal.spark.types import arrow_target, exact_batch
from shoal.table import Table

# How a task reads its splits.
FILES = "files"  # the files as they are (append tables; read-optimized primary-key tables)
MERGED = "merged"  # each bucket's files merged by key (primary-key tables)


class ShoalPartition(InputPartition):
    """The splits one Spark task reads; for a difference of two tags on a primary-key
    table, the two snapshots instead; for a changelog read, one bucket's changelog
    files."""

    def __init__(
        self,
        index: int,
        splits: tuple[DataSplit, ...] = (),
        diff: tuple[Snapshot, Snapshot] | None = None,
        changelog: tuple[ManifestEntry, ...] | None = None,
    ) -> None:
        super().__init__(index)
        self.splits = splits
        self.diff = diff
        self.changelog = changelog

    @property
    def file_count(self) -> int:
        return sum(len(s.files) for s in self.splits)


def table_columns(names: Sequence[str], schema: TableSchema, what: str) -> tuple[str, ...]:
    """The table columns ``names`` refer to (exactly, else ignoring case, as Spark does).

    Raises:
        SchemaMismatchError: a name that is not a column of the table.
    """
    exact = set(schema.field_names)
    folded: dict[str, list[str]] = {}
    for n in schema.field_names:
        folded.setdefault(n.lower(), []).append(n)
    out = []
    for name in names:
        if name in exact:
            out.append(name)
        elif len(folded.get(name.lower(), [])) == 1:
            out.append(folded[name.lower()][0])
        else:
            raise SchemaMismatchError(
                f"{what} names column {name!r}, which the table does not have; "
                f"its columns are {schema.field_names}"
            )
    return tuple(out)


class ShoalReader(DataSourceReader):
    """Reads one snapshot (or one incremental range) of a table into Arrow batches."""

    def __init__(
        self, options: SourceOptions, schema: StructType, parallelism: int | None = None
    ) -> None:
        """``parallelism``: how many tasks Spark runs at once (default: the cores of this
        machine), the fewest partitions a table with enough data is read in."""
        options.require_use(READ)
        store = open_store(options.path, options.storage_options)
        self._store: FileStore | None = store
        self._options = options
        self._schema = schema
        self._parallelism = parallelism or os.cpu_count() or 1
        self._snapshot: Snapshot | None = None
        self._table_schema = store.schema
        incremental = options.incremental
        if incremental is None:
            # The one point where the snapshot is chosen: partitions() plans from it.
            scan = Table(store).scan(
                snapshot_id=options.snapshot_id,
                tag=options.tag,
                timestamp_ms=options.timestamp_ms,
                read_optimized=options.read_optimized,
            )
            self._snapshot = scan.snapshot
            self._table_schema = scan.table_schema
            self._mode = MERGED if scan.merging else FILES
        else:
            self._mode = MERGED if DVS.merges(store, read_optimized=False) else FILES
        names = schema.fieldNames()
        if options.audit_log:
            check_audit_log(store, options)
            names = [n for n in names if n != ROW_KIND]
        self._columns = table_columns(names, self._table_schema, "the read schema")
        self._key_value = store.is_primary_key and self._mode == FILES
        # The read option ``filter``: part of what this DataFrame is, so every query on
        # it prunes and filters alike.
        self._dnf: P.Dnf | None = None
        if options.filter is not None:
            types = {f.name: f.type for f in self._table_schema.fields}
            raw = filter_text.parse(options.filter, self._table_schema.arrow_schema())
            self._dnf = P.parse_filter(raw, types)

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_store"] = None  # tasks open the table themselves
        return state

    @property
    def snapshot(self) -> Snapshot | None:
        """The snapshot this read is pinned to (None for an incremental read or a table
        with no commit yet)."""
        return self._snapshot

    def _open(self) -> FileStore:
        if self._store is None:
            self._store = open_store(self._options.path, self._options.storage_options)
        return self._store

    # --- planning ------------------------------------------------------------------------------
    def partitions(self) -> list[InputPartition]:
        store = self._open()
        options = self._options
        incremental = options.incremental
        if incremental is None:
            if self._snapshot is None:
                return []
            scan = Scan(
                store,
                self._snapshot,
                list(self._columns),
                self._dnf,
                read_optimized=options.read_optimized,
                schema=self._table_schema,
            )
            splits = scan.plan()
        else:
            start, end = incremental
            plan = plan_incremental(store, start, end, options.scan_mode)
            if plan.diff is not None:
                return [ShoalPartition(0, diff=plan.diff)]
            if plan.changelog is not None:
                return [
                    ShoalPartition(i, changelog=files)
                    for i, files in enumerate(changelog_by_bucket(store, plan.changelog))
                ]
            splits = plan.splits
        target = options.split_target_size or store.options.get(O.SPLIT_TARGET_SIZE)
        open_cost = options.split_open_file_cost or store.options.get(O.SPLIT_OPEN_FILE_COST)
        packs = pack_splits(
            splits,
            target,
            open_cost,
            divisible=self._mode == FILES,
            parallelism=self._parallelism,
        )
        return [ShoalPartition(i, tuple(p)) for i, p in enumerate(packs)]

    # --- reading -------------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, ShoalPartition):
            return  # Spark's stand-in partition for an empty plan
        target = arrow_target(self._schema)
        for batch in self._batches(partition):
            if batch.num_rows:
                yield exact_batch(batch, target)

    def _batches(self, partition: ShoalPartition) -> Iterator[pa.RecordBatch]:
        store = self._open()
        columns = list(self._columns)
        if partition.changelog is not None:
            rows = read_changelog(
                store, partition.changelog, columns, self._dnf, row_kind=self._options.audit_log
            )
            yield from rows.to_batches()
            return
        batches = self._data_batches(store, partition, columns)
        if not self._options.audit_log:
            yield from batches
            return
        for batch in batches:  # an append table: every row an insert
            kinds = pa.array(["+I"] * batch.num_rows, pa.string())
            yield pa.RecordBatch.from_arrays(
                [kinds, *batch.columns], names=[ROW_KIND, *batch.schema.names]
            )

    def _data_batches(
        self, store: FileStore, partition: ShoalPartition, columns: list[str]
    ) -> Iterator[pa.RecordBatch]:
        if partition.diff is not None:
            rows = keyed_diff(store, *partition.diff, None)
            if self._dnf is not None:
                rows = rows.filter(P.to_expression(self._dnf))
            yield from rows.select(columns).to_batches()
        elif self._mode == MERGED:
            merged = merged_batches(store, partition.splits, columns, self._dnf, self._table_schema)
            for table in merged:
                yield from table.to_batches()
        else:
            yield from read_batches(
                store,
                partition.splits,
                self._table_schema,
                columns,
                self._dnf,
                key_value=self._key_value,
            )


def check_audit_log(store: FileStore, options: SourceOptions) -> None:
    """Refuse an ``audit_log`` read whose row kinds shoal does not give as Paimon does:
    it gives those of a changelog read (``incremental-between`` of two snapshot ids in
    ``changelog`` mode, or ``auto`` on a table with a changelog producer) and those of an
    append table (every row an insert)."""
    incremental = options.incremental
    changelog = (
        incremental is not None
        and isinstance(incremental[0], int)
        and resolve_mode(store, options.scan_mode) == "changelog"
    )
    if changelog or not store.is_primary_key:
        return
    raise UnsupportedFeatureError(
        f"the audit_log of primary-key table {store.uri!r} is read from its changelog "
        "only: give incremental-between with two snapshot ids on a table with a "
        "changelog producer (incremental-between-scan-mode 'changelog' or 'auto'); the "
        "row kinds of a snapshot's merged rows are not read",
        feature="audit_log",
    )


def changelog_by_bucket(
    store: FileStore, entries: Sequence[ManifestEntry]
) -> list[tuple[ManifestEntry, ...]]:
    """The changelog files of a range, one group per bucket, each in commit order.

    Raises:
        UnsupportedFeatureError: a bucket has more than one changelog file in the
            range. Paimon's batch read merges such a bucket's files by key (a key's
            ``+I`` and later ``-D`` come out as the ``-D`` only), where shoal returns
            every row as a streaming reader sees it; one snapshot at a time the two
            agree.
    """
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = {}
    for entry in entries:
        groups.setdefault((entry.partition, entry.bucket), []).append(entry)
    for (partition, bucket), files in groups.items():
        if len(files) > 1:
            raise UnsupportedFeatureError(
                f"bucket {bucket} of partition {store.partitions.path(partition) or '/'} "
                f"holds {len(files)} changelog files in the incremental-between range; "
                "Paimon's batch read merges them by key, which shoal does not: read one "
                "snapshot at a time (incremental-between 's-1,s'), or read every row "
                "with Table.incremental",
                feature="incremental-between-scan-mode",
            )
    return [tuple(files) for files in groups.values()]


def pack_splits(
    splits: Sequence[DataSplit],
    target: int,
    open_cost: int,
    *,
    divisible: bool,
    parallelism: int = 1,
) -> list[list[DataSplit]]:
    """Splits grouped into packs of about equal weight, in plan order.

    A file weighs its size, at least ``open_cost``. There are enough packs for each to
    weigh about ``target`` or less, and at least ``parallelism`` when the files hold
    ``open_cost`` bytes of data for each pack (Spark's packing of Parquet files, by
    ``maxPartitionBytes``, ``openCostInBytes`` and the default parallelism). Each piece
    goes to the pack its middle falls in, so a pack holds consecutive pieces.

    With ``divisible`` a split's files may go to different packs (files read as they
    are); otherwise a split stays whole (a bucket merged by key).
    """
    units = _pieces(splits, divisible)
    if not units:
        return []
    weights = [sum(max(f.file_size, open_cost) for f in unit.files) for unit in units]
    data = sum(f.file_size for unit in units for f in unit.files)
    total = sum(weights)
    wanted = max(math.ceil(total / max(target, 1)), min(parallelism, data // max(open_cost, 1)))
    count = max(1, min(wanted, len(units)))
    share = total / count or 1.0  # files of no bytes, and no open cost
    packs: list[list[DataSplit]] = [[] for _ in range(count)]
    start = 0
    for unit, weight in zip(units, weights, strict=True):
        packs[min(int((start + weight / 2) / share), count - 1)].append(unit)
        start += weight
    return [_coalesce(pack) for pack in packs if pack]


def _pieces(splits: Sequence[DataSplit], divisible: bool) -> list[DataSplit]:
    """What packing moves as a whole: each file of a divisible split, else each split."""
    if not divisible:
        return list(splits)
    return [piece for split in splits for piece in split.pieces()]


def _coalesce(units: list[DataSplit]) -> list[DataSplit]:
    """Adjacent pieces of one bucket joined back into one split."""
    out: list[DataSplit] = []
    for unit in units:
        last = out[-1] if out else None
        if (
            last is not None
            and last.bucket_path == unit.bucket_path
            and last.snapshot_id == unit.snapshot_id
        ):
            out[-1] = last.joined(unit)
        else:
            out.append(unit)
    return out
