"""The public ``Scan``: one planned read of one snapshot, and what it does when a
file of that snapshot is missing."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from shoal.core import deletion_vectors as DVS
from shoal.core import predicate as P
from shoal.core.plan import (
    ALL_LEVELS,
    DataSplit,
    columnar_manifests,
    live_entries,
    make_splits,
    restrict,
)
from shoal.core.store import FileStore
from shoal.errors import (
    CorruptDataFileError,
    CorruptMetadataError,
    ShoalError,
    SnapshotNotFoundError,
    TagNotFoundError,
)
from shoal.format.schema import TableSchema
from shoal.format.snapshot import Snapshot
from shoal.read.files import (
    merged_batches,
    plain_dataset,
    read_batches,
    read_merged,
    read_table,
)
from shoal.read.frames import batch_reader, to_pandas, to_polars

logger = logging.getLogger(__name__)


# How many times a read of the latest snapshot plans again when that snapshot expires
# under it (each time against the snapshot that is then the latest).
EXPIRED_SNAPSHOT_REPLANS = 3


def read_schema(store: FileStore, snapshot: Snapshot | None, *, latest: bool) -> TableSchema:
    """The schema a read returns rows of, as Paimon chooses it: the table's schema for
    a read of the latest snapshot, the snapshot's own for time travel (a snapshot from
    before a column was added, renamed or dropped reads with the columns it had)."""
    if latest or snapshot is None:
        return store.schema
    return store.schema_of(snapshot.schema_id)


class Scan:
    """A planned read of one snapshot: ``plan()`` for splits, or the rows directly.

    On a primary-key table the real-time view merges each bucket's files by key; the
    read-optimized view reads only the top level of each bucket, without merging.

    Readers and snapshot expiration. A scan pins one snapshot and reads only the
    files it names, so a read sees one snapshot entirely or fails; it never mixes
    two. Expiration keeps every snapshot that was the latest at some moment within
    ``snapshot.time-retained`` (the default is an hour), so a read that takes less
    than that finds its files. A faster expiration (a tiny retention,
    ``snapshot.num-retained.max``, an explicit ``older_than``) may delete the files of
    a snapshot while it is read; then, if the read hits a missing manifest or data
    file of a snapshot that a newer one has replaced (expiration deletes a snapshot's
    files first, its snapshot file last):

    - a scan of the latest snapshot (no ``snapshot_id``, ``tag`` or ``timestamp_ms``)
      plans again against the snapshot that is now the latest and reads that, up
      to ``EXPIRED_SNAPSHOT_REPLANS`` times; ``snapshot`` then names the snapshot
      read. ``to_batches`` does so only before its first batch: after it, the rows
      already given cannot be taken back, and it raises SnapshotNotFoundError;
    - a scan of a snapshot chosen by id or time raises SnapshotNotFoundError once its
      snapshot file is gone too (waiting a moment for the expiration to get there),
      and a scan of a tag deleted meanwhile raises TagNotFoundError: the data asked
      for is gone, and another snapshot's would not be it.

    A missing file of the latest snapshot, of a snapshot that stays, or of a tag that
    is still there is damage, and its CorruptMetadataError or CorruptDataFileError
    propagates. The splits that
    ``plan()`` returns for other workers are not planned again: a worker reading a
    split of an expired snapshot gets CorruptDataFileError.
    """

    def __init__(
        self,
        store: FileStore,
        snapshot: Snapshot | None,
        columns: Sequence[str] | None,
        dnf: P.Dnf | None,
        *,
        read_optimized: bool = False,
        latest: bool = False,
        tag: str | None = None,
        schema: TableSchema | None = None,
    ) -> None:
        self._store = store
        self.snapshot = snapshot
        self.columns = list(columns) if columns is not None else None
        self._dnf = dnf
        self._splits: list[DataSplit] | None = None
        if schema is None:
            schema = read_schema(store, snapshot, latest=latest)
        self.table_schema = schema
        self.schema: pa.Schema = schema.arrow_schema()
        # Paimon reads a primary-key table with deletion vectors without merging: only
        # the files above level 0, their deleted rows masked (core/deletion_vectors).
        self.deletion_vectors = DVS.enabled(store.schema.options)
        self.merging = DVS.merges(store, read_optimized=read_optimized)
        self.read_optimized = read_optimized
        self._latest = latest  # the snapshot is the latest one, not asked for
        self._tag = tag

    def plan(self) -> list[DataSplit]:
        """The splits to read, each a picklable unit of work."""
        if self._splits is None:
            self._splits = [] if self.snapshot is None else self._plan(self.snapshot)
        return self._splits

    def _plan(self, snapshot: Snapshot) -> list[DataSplit]:
        store = self._store
        prune = self._dnf
        if self.merging:
            # Only key columns prune a merged read: every version of a row has its key.
            prune = restrict(prune, set(store.schema.primary_keys))
        target = self.table_schema
        levels = ALL_LEVELS
        if store.is_primary_key and self.deletion_vectors:
            # the read-optimized view of such a table is its batch scan (Paimon 0.9, 1.0)
            levels = (1, levels[1])
        elif store.is_primary_key and self.read_optimized:
            levels = (store.max_level, store.max_level)
        deletions = DVS.deletion_files(store, snapshot)
        columnar = columnar_manifests(store, snapshot, prune)
        if columnar is not None:
            from shoal.core import columnar_plan  # numba, loaded for large tables only

            splits = columnar_plan.plan(
                store,
                snapshot,
                *columnar,
                schema=target,
                whole_buckets=self.merging,
                levels=levels,
                deletions=deletions,
            )
            if splits is not None:
                return splits
        entries = live_entries(store, snapshot, prune, target=target)
        low, high = levels
        if levels != ALL_LEVELS:
            entries = [e for e in entries if low <= e.file.level <= high]
        return make_splits(
            store,
            snapshot.id,
            entries,
            whole_buckets=self.merging,
            schema=target,
            deletions=deletions,
        )

    def to_arrow(self) -> pa.Table:
        for replans in itertools.count():
            try:
                return self._read()
            except (CorruptMetadataError, CorruptDataFileError) as exc:
                self._after_missing_file(exc, can_replan=replans < EXPIRED_SNAPSHOT_REPLANS)
        raise AssertionError("unreachable")

    def _read(self) -> pa.Table:
        if self.merging:
            return read_merged(self._store, self.plan(), self.columns, self._dnf, self.table_schema)
        return read_table(
            self._store,
            self.plan(),
            self.table_schema,
            self.columns,
            self._dnf,
            key_value=self._store.is_primary_key,
        )

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        for replans in itertools.count():
            started = False
            try:
                for batch in self._batches():
                    started = True
                    yield batch
                return
            except (CorruptMetadataError, CorruptDataFileError) as exc:
                can_replan = not started and replans < EXPIRED_SNAPSHOT_REPLANS
                self._after_missing_file(exc, can_replan=can_replan)

    def to_reader(self) -> pa.RecordBatchReader:
        """The rows as a ``pa.RecordBatchReader`` that reads each batch when it is asked
        for: the batches of :meth:`to_batches` themselves, not copies. Its schema is
        the read's (the selected ``columns``)."""
        return batch_reader(self.to_batches(), self._rows_schema())

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """The Arrow C stream interface: polars, DuckDB, pyarrow and any other Arrow
        consumer read the scan's batches as they are read, without a copy. Each call
        reads the scan again (its snapshot stays the one planned)."""
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> object:
        """The schema of the rows the stream gives (the selected ``columns``; ``schema``
        is the whole table's), for consumers that bind before they read."""
        return self._rows_schema().__arrow_c_schema__()

    def plain_dataset(self) -> ds.Dataset | None:
        """The read as a ``pyarrow.dataset`` of the planned Parquet files, when it is
        exactly that: an append table's files read as they are (no deleted rows, no
        file written under another schema, no column whose type a read converts, a
        filter only on the columns read, applied as the dataset's filter). Else None.
        DuckDB pushes its projection and filters into such a dataset; a stream gives
        it every column. A file of it that expiration deletes fails the consumer's
        read with the consumer's own error (a scan replans or raises
        CorruptDataFileError)."""
        if self.merging or self._store.is_primary_key:
            return None
        return plain_dataset(self._store, self.plan(), self.table_schema, self.columns, self._dnf)

    def to_pandas(self, **options: Any) -> Any:
        """The rows as a pandas DataFrame (``options`` go to ``pa.Table.to_pandas``);
        MissingDependencyError without pandas (``pip install 'shoal[pandas]'``)."""
        return to_pandas(self.to_reader(), **options)

    def to_polars(self) -> Any:
        """The rows as a polars DataFrame, taken over the Arrow C stream interface;
        MissingDependencyError without polars (``pip install 'shoal[polars]'``)."""
        return to_polars(self.to_reader())

    def _rows_schema(self) -> pa.Schema:
        if self.columns is None:
            return self.schema
        return pa.schema([self.schema.field(name) for name in self.columns])

    def _batches(self) -> Iterator[pa.RecordBatch]:
        if self.merging:
            merged = merged_batches(
                self._store, self.plan(), self.columns, self._dnf, self.table_schema
            )
            for table in merged:
                yield from table.to_batches()
            return
        yield from read_batches(
            self._store,
            self.plan(),
            self.table_schema,
            self.columns,
            self._dnf,
            key_value=self._store.is_primary_key,
        )

    def _after_missing_file(self, error: ShoalError, *, can_replan: bool) -> None:
        """A file of the pinned snapshot is missing: plan again against the latest
        snapshot when the pinned one expired and may be replaced, else raise."""
        snapshot = self.snapshot
        if snapshot is None:
            raise error
        store = self._store
        if self._tag is not None:
            if not store.tags.exists(self._tag):
                raise TagNotFoundError(self._tag) from error
            raise error
        snapshots = store.snapshots
        if not snapshots.superseded(snapshot.id):
            raise error  # the latest snapshot never expires: the table is damaged
        if self._latest:
            if can_replan:
                self._replan()
                return
        elif not snapshots.wait_until_gone(snapshot.id):
            raise error  # superseded but kept: the table is damaged
        raise SnapshotNotFoundError(
            f"snapshot {snapshot.id} expired while it was read; read a newer snapshot, "
            "or keep snapshots longer ('snapshot.time-retained') or tag this one",
            snapshot_id=snapshot.id,
        ) from error

    def _replan(self) -> None:
        store = self._store
        latest = store.snapshots.latest()
        logger.info(
            "snapshot %s expired while it was read; reading snapshot %s instead",
            self.snapshot.id if self.snapshot is not None else None,
            None if latest is None else latest.id,
        )
        self.snapshot = latest
        self._splits = None
        self.table_schema = store.schema
        self.schema = store.schema.arrow_schema()
