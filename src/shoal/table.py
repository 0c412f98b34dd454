"""The public table: writes (each one atomic commit), time-travel reads, system tables."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from shoal import options as O
from shoal.cleanup.expire import ExpireResult, expire_snapshots
from shoal.cleanup.orphans import OrphanFilesResult, remove_orphan_files
from shoal.cleanup.rollback import rollback
from shoal.cleanup.tags import delete_tag, rename_tag
from shoal.compaction.compact import CompactResult
from shoal.core import kv
from shoal.core import predicate as P
from shoal.core.kv import FIRST_ROW
from shoal.core.paths import PathFactory
from shoal.core.schema_change import SchemaChange
from shoal.core.schema_manager import SchemaManager
from shoal.core.schema_update import SchemaUpdate, changes_build, commit_schema
from shoal.core.store import FileStore
from shoal.core.time_travel import timestamp_millis
from shoal.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    ShoalError,
    SnapshotNotFoundError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from shoal.event_time.bounds import check_event_time_field
from shoal.event_time.freshness import Freshness, freshness
from shoal.event_time.metrics import prometheus_text
from shoal.format.schema import TableSchema
from shoal.format.snapshot import Snapshot
from shoal.format.tag import Tag
from shoal.io import FileIO, file_io_for
from shoal.options import parse_duration
from shoal.read.files import read_merged, read_table
from shoal.read.incremental import (
    ROW_KIND,
    ScanMode,
    keyed_diff,
    plan_incremental,
    read_changelog,
)
from shoal.read.system_tables import AUDIT_LOG, NEEDS_SNAPSHOT, system_table
from shoal.row_merge import MergeBuilder
from shoal.row_ops import delete_where, update_where
from shoal.scan import Scan, read_schema
from shoal.transaction import Transaction, merge_new_columns, partition_scope
from shoal.write.commit import WHOLE_TABLE, FileStoreCommit
from shoal.write.conform import to_batches

if TYPE_CHECKING:
    from datetime import datetime


logger = logging.getLogger(__name__)

SCHEMA_MODES = ("strict", "merge")


class Table:
    """A Paimon-format table. Open it with ``Catalog.get_table`` or ``shoal.open_table``."""

    def __init__(self, store: FileStore, name: str | None = None) -> None:
        self._store = store
        self.name = name
        self._committer = FileStoreCommit(store)

    @staticmethod
    def open(
        uri: str, name: str | None = None, *, storage_options: Mapping[str, str] | None = None
    ) -> Table:
        """Open the table at ``uri`` (a path or URI), its store configured by
        ``storage_options`` (docs/tables.md lists the keys). Raises TableNotFoundError,
        InvalidArgumentError for a URI that no filesystem serves, or InvalidOptionError
        for a storage option its store does not take."""
        if not isinstance(uri, str) or not uri.strip():
            raise InvalidArgumentError(f"a table is opened by its path or URI, not {uri!r}")
        try:
            file_io, root = file_io_for(uri, storage_options)
        except ShoalError:
            raise
        except ValueError as exc:  # pyarrow.ArrowInvalid: a URI no filesystem knows
            raise InvalidArgumentError(f"table location {uri!r}: {exc}") from None
        return Table._open(file_io, uri, root, name)

    @staticmethod
    def _open(file_io: FileIO, uri: str, root: str, name: str | None) -> Table:
        schema = SchemaManager(file_io, PathFactory(root)).latest()
        if schema is None:
            raise TableNotFoundError(name or uri)
        return Table(FileStore(file_io, uri, root, schema), name)

    # --- description -------------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._store.uri

    @property
    def schema(self) -> pa.Schema:
        return self._store.arrow_schema

    @property
    def partition_keys(self) -> list[str]:
        return list(self._store.schema.partition_keys)

    @property
    def primary_keys(self) -> list[str]:
        return list(self._store.schema.primary_keys)

    @property
    def options(self) -> dict[str, str]:
        return dict(self._store.schema.options)

    def __repr__(self) -> str:
        return f"Table({self.name or self.path!r})"

    # --- snapshots ---------------------------------------------------------------------------
    def latest_snapshot(self) -> Snapshot | None:
        return self._store.snapshots.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self._store.snapshots.snapshot(snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        """Every readable snapshot, oldest first.

        A snapshot whose file is damaged (cut short, emptied, not a snapshot) is left
        out, with a warning in the log: the others stay readable, and this list is where
        to find the snapshot to roll back to. ``damaged_snapshots()`` names the ones left
        out; reading at one of them still raises CorruptMetadataError."""
        readable, damaged = self._store.snapshots.survey()
        for snapshot_id, error in damaged.items():
            logger.warning("snapshot %s is left out of the listing: %s", snapshot_id, error)
        return readable

    def damaged_snapshots(self) -> dict[int, CorruptMetadataError]:
        """The snapshots whose file cannot be read, by id, each with the error a read at
        it raises (``path`` names the file, ``reason`` what is wrong). Empty for a
        healthy table.

        ``rollback_to(snapshot_id=...)`` to the newest readable snapshot below a damaged
        one removes it with every later snapshot; restoring the file from a backup keeps
        them."""
        return self._store.snapshots.survey()[1]

    # --- writing -----------------------------------------------------------------------------
    def _transaction(self) -> Transaction:

        return Transaction(self._store, self._committer)

    def append(self, data: Any, *, schema_mode: str = "strict") -> Snapshot:
        """Add rows in one atomic commit; returns the new snapshot.

        ``data`` is a pyarrow Table or RecordBatch, a pandas DataFrame, a dict of
        columns, or a stream, written batch by batch as it is read: a
        RecordBatchReader, an iterable of RecordBatches, any object with
        ``__arrow_c_stream__`` or ``__arrow_c_array__`` (polars, DuckDB). Arrow data is
        not copied on the way in. On a primary-key table this is :meth:`upsert`.
        Raises SchemaMismatchError before anything is committed.

        ``schema_mode="merge"`` first adds the columns of ``data`` that the table lacks
        (nullable, in the data's order, one new schema version); other differences
        still raise SchemaMismatchError, before anything is written.
        """
        data = self._merge_schema(data, schema_mode)
        return self._transaction().write(data)

    def upsert(self, data: Any) -> Snapshot:
        """Insert or replace rows by primary key in one commit (the last row of a key in
        ``data`` wins); ``data`` as for :meth:`append`. Its rows are held in memory until
        the commit, since each bucket's file is sorted by key. May be followed by one
        COMPACT commit when a bucket reaches ``num-sorted-run.compaction-trigger`` sorted
        runs (unless ``write-only``)."""
        self._require_primary_key("upsert")
        return self._transaction().write(data)

    def delete(self, keys: Any) -> Snapshot:
        """Delete rows by primary key, in one commit. ``keys`` holds the key columns
        (other columns may be present and are ignored).

        A ``first-row`` table keeps the first row of each key for good, so it refuses
        deletes (InvalidArgumentError, nothing written) unless ``ignore-delete`` is set,
        which makes this a no-op commit.
        """
        self._require_primary_key("delete")
        settings = self._store.merge_settings
        if settings.engine == FIRST_ROW and not settings.ignore_delete:
            raise InvalidArgumentError(
                f"{self.name or self.path} uses the first-row merge engine, which keeps "
                "the first row of each key and cannot delete it; set the table option "
                "'ignore-delete' = 'true' to accept deletes and ignore them"
            )
        return self._transaction().write(keys, kind=kv.DELETE)

    def delete_where(self, filter: Any) -> Snapshot:
        """Delete the rows matching ``filter`` (DNF tuples, a pyarrow Expression or
        text, as for :meth:`scan`) in one atomic commit.

        An append table rewrites only the files holding a matching row (one OVERWRITE
        snapshot deleting each and adding its remainder); a file replaced by a
        concurrent commit meanwhile raises CommitConflictError, nothing committed. A
        primary-key table writes deletes for the keys of the matching rows.
        """
        return delete_where(self._transaction(), filter).snapshot

    def update_where(self, filter: Any, set: Mapping[str, Any]) -> Snapshot:
        """Set columns of the rows matching ``filter`` to the Python values of ``set``
        (each cast exactly to its column's type, else InvalidArgumentError) in one
        atomic commit, rewriting files as :meth:`delete_where` does (append tables) or
        upserting the changed rows (primary-key tables). Primary-key and partition
        columns cannot be set."""
        return update_where(self._transaction(), filter, set).snapshot

    def merge(self, source: Any, on: Sequence[str]) -> MergeBuilder:
        """A MERGE of ``source`` (anything :meth:`append` takes) into this table, rows
        matched by equal ``on`` columns (on a primary-key table, its key): add clauses
        with ``when_matched_update``, ``when_matched_delete`` and
        ``when_not_matched_insert``, then ``execute()`` commits it atomically and returns
        the new snapshot (``execute_with_counts()`` a :class:`~shoal.row_merge.MergeResult`
        with the rows updated, deleted and inserted). See :mod:`shoal.row_merge`."""
        columns = (on,) if isinstance(on, str) else tuple(on)
        return MergeBuilder(self._transaction(), source, columns)

    def _require_primary_key(self, what: str) -> None:
        if not self._store.is_primary_key:
            raise InvalidArgumentError(
                f"{what} needs a primary-key table; {self.name or self.path} is an append table"
            )

    def compact(
        self,
        strategy: str | None = None,
        event_time_threshold: Any = None,
        *,
        on_commit: Callable[[Freshness], object] | None = None,
    ) -> CompactResult:
        """Compact a primary-key table in one COMPACT commit.

        ``strategy``: "full" (every bucket into one sorted run at the top level),
        "universal" (Paimon's size-ratio and run-count rules), "event-time" (only the
        files whose event time starts at or below ``event_time_threshold``, a datetime
        (naive: UTC) or epoch milliseconds; default now minus
        ``compaction.event-time.data-latency``), or None for the ``compaction.strategy``
        option. The real-time view is the same before and after.

        ``on_commit``: called with the :class:`Freshness` of the compaction's snapshot
        once it is committed (not when there was nothing to compact), read from the
        counters the snapshot carries. An exception it raises propagates; the
        compaction stays committed.
        """
        self._require_primary_key("compact")
        if on_commit is not None and not callable(on_commit):
            raise InvalidArgumentError(
                f"on_commit takes a function of the Freshness, not {type(on_commit).__name__}"
            )
        result = self._transaction().compact(strategy, event_time_threshold)
        if on_commit is not None and result.snapshot is not None:
            on_commit(freshness(self._store, result.snapshot))
        return result

    def freshness(self, *, snapshot_id: int | None = None, tag: str | None = None) -> Freshness:
        """The read-optimized freshness watermark and the compaction backlog of the
        latest snapshot (or of ``snapshot_id`` or ``tag``): every row with an event time
        below ``watermark_ms`` is in the read-optimized view. Reads one snapshot file
        when the snapshot carries shoal's backlog counters (every shoal commit records
        them); a snapshot of another writer is scanned."""

        return freshness(self._store, self._resolve(snapshot_id, tag, None))

    def metrics(self, *, snapshot_id: int | None = None, tag: str | None = None) -> str:
        """:meth:`freshness` in Prometheus' text exposition format: one gauge per field,
        labelled ``table``, plus ``shoal_snapshot_id`` (see ``shoal.event_time.metrics``)."""
        snapshot = self._resolve(snapshot_id, tag, None)
        return prometheus_text(
            freshness(self._store, snapshot),
            table=self.name or self.path,
            snapshot_id=snapshot.id if snapshot is not None else None,
        )

    def overwrite(
        self,
        data: Any,
        *,
        partition: Mapping[str, Any] | None = None,
        schema_mode: str = "strict",
    ) -> Snapshot:
        """Replace the whole table, or one partition, with ``data`` in one commit.

        With ``partition``, every row of ``data`` must belong to that partition.
        ``schema_mode="merge"`` adds the columns the table lacks first, as in
        :meth:`append`.
        """
        data = self._merge_schema(data, schema_mode)
        scope = WHOLE_TABLE if partition is None else partition_scope(self._store, [partition])
        return self._transaction().write(data, overwrite=scope)

    def drop_partitions(self, partitions: Sequence[Mapping[str, Any]]) -> Snapshot:
        """Remove partitions in one OVERWRITE commit of DELETE entries.

        Each spec may name only some partition keys. The files stay on disk until
        snapshot expiration finds that no retained snapshot or tag still uses them.
        """

        if not self._store.schema.partition_keys:
            raise InvalidArgumentError("the table is not partitioned")
        if not partitions:
            raise InvalidArgumentError("drop_partitions needs at least one partition spec")
        return self._transaction().drop(partition_scope(self._store, partitions))

    # --- schema ------------------------------------------------------------------------------
    def update_schema(self) -> SchemaUpdate:
        """Change the table's schema: a context manager collecting changes, committed as
        one new schema version when the block ends without an exception.

            with table.update_schema() as update:
                update.add_column("score", pa.float64(), after="name")
                update.rename_column("name", "title")

        The changes apply to the latest schema; each call raises at once when its
        change does not apply (InvalidArgumentError, SchemaMismatchError,
        InvalidOptionError, UnsupportedFeatureError). A concurrent change that makes
        them inapplicable raises SchemaConflictError on leaving the block; nothing is
        written then. Afterwards this table reads and writes with the new schema.
        """
        store = self._store
        base = store.schemas.latest() or store.schema
        has_snapshots = store.snapshots.latest_id() is not None
        return SchemaUpdate(
            base,
            has_snapshots,
            lambda changes: self._commit_changes(changes, base.id),
            check=_check_table_rules,
        )

    def _commit_changes(self, changes: Sequence[SchemaChange], base_id: int) -> TableSchema:
        store = self._store
        schema = commit_schema(
            store.schemas,
            store.snapshots,
            changes_build(changes, _check_table_rules),
            base_id=base_id,
            attempts=store.options.get(O.COMMIT_MAX_RETRIES) + 1,
        )
        assert schema is not None  # changes always make a new version
        self._use_schema(schema)
        return schema

    def _merge_schema(self, data: Any, schema_mode: str) -> Any:
        """``data`` ready to write, with the columns the table lacks added first when
        ``schema_mode`` is "merge"."""
        if schema_mode not in SCHEMA_MODES:
            raise InvalidArgumentError(
                f"schema_mode must be one of {list(SCHEMA_MODES)}, not {schema_mode!r}"
            )
        if schema_mode == "strict":
            return data
        data = to_batches(data)
        rows = data if isinstance(data, pa.Table) else None  # a stream is not read here
        schema = merge_new_columns(self._store, data.schema, rows)
        if schema is not None:
            self._use_schema(schema)
        return data

    def _use_schema(self, schema: TableSchema) -> None:
        """Read and write with ``schema`` from now on."""
        old = self._store
        self._store = FileStore(old.file_io, old.uri, old.root, schema)
        self._store.partition_expire_checked_at = old.partition_expire_checked_at
        self._committer = FileStoreCommit(self._store)

    # --- tags ------------------------------------------------------------------------------
    def create_tag(
        self,
        name: str,
        snapshot_id: int | None = None,
        time_retained: timedelta | str | None = None,
        *,
        replace: bool = False,
    ) -> Tag:
        """Tag a snapshot (the latest when ``snapshot_id`` is None) as a named savepoint.

        Raises:
            InvalidTagNameError: blank, all-digit, or path-like names.
            TagAlreadyExistsError: the name is taken and ``replace`` is False.
            SnapshotNotFoundError: no such snapshot (or the table has none yet).
        """
        store = self._store
        if snapshot_id is None:
            snapshot = store.snapshots.latest()
            if snapshot is None:
                raise SnapshotNotFoundError("the table has no snapshot to tag yet")
        else:
            snapshot = store.snapshots.snapshot(snapshot_id)
        if time_retained is None:
            time_retained = store.options.get(O.TAG_DEFAULT_TIME_RETAINED)
        elif isinstance(time_retained, str):
            try:
                time_retained = parse_duration(time_retained)
            except ValueError as exc:
                raise InvalidArgumentError(f"time_retained: {exc}") from None
        if time_retained is not None and (
            not isinstance(time_retained, timedelta) or time_retained < timedelta(0)
        ):
            raise InvalidArgumentError(
                f"time_retained must be a non-negative timedelta or a duration such as "
                f"'1 d', not {time_retained!r}"
            )
        tags = store.tags
        return tags.create(name, snapshot, time_retained=time_retained, replace=replace)

    def delete_tag(self, name: str) -> None:
        """Remove a tag. Raises TagNotFoundError."""

        delete_tag(self._store, name)

    def rename_tag(self, old: str, new: str) -> None:
        """Rename a tag. Raises TagNotFoundError or TagAlreadyExistsError."""

        rename_tag(self._store, old, new)

    def list_tags(self) -> list[Tag]:
        """Every tag, ordered by snapshot id, then name."""
        return [tag for tag, _ in self._store.tags.tags()]

    def rollback_to(self, *, snapshot_id: int | None = None, tag: str | None = None) -> Snapshot:
        """Make an earlier snapshot (or a tag's snapshot) the latest: later snapshots and
        tags go. Data files stay for orphan cleanup. Stop writers while it runs."""

        return rollback(self._store, snapshot_id=snapshot_id, tag=tag)

    # --- cleanup -----------------------------------------------------------------------------
    def expire_snapshots(
        self,
        retain_min: int | None = None,
        retain_max: int | None = None,
        older_than: datetime | None = None,
        max_deletes: int | None = None,
    ) -> ExpireResult:
        """Remove old snapshots, and the files that only they used.

        Keeps at least ``retain_min`` snapshots (the newest), at most ``retain_max``,
        and every snapshot whose successor was committed after ``older_than``; expires
        at most ``max_deletes`` snapshots in one run. Arguments left as None come from
        the options ``snapshot.num-retained.min``, ``snapshot.num-retained.max``,
        ``snapshot.time-retained`` (``older_than`` = now minus it) and
        ``snapshot.expire.limit``. A file that a retained snapshot, a tag or a
        long-lived changelog still uses is never deleted. Tags whose retention has
        passed are removed first.

        When the ``changelog.*`` retention exceeds the snapshot one (a table with a
        changelog producer), each snapshot removed is kept as a long-lived changelog
        that :meth:`incremental` still reads, and long-lived changelogs expire by
        those options in the same run (docs/changelog.md).

        No snapshot at or above a consumer's next snapshot expires (:meth:`consumers`);
        ``ExpireResult.held_by_consumers`` names the consumers that held snapshots
        back, and consumers not advanced within ``consumer.expiration-time`` are
        deleted first (``ExpireResult.expired_consumers``).
        """

        return expire_snapshots(
            self._store,
            retain_min=retain_min,
            retain_max=retain_max,
            older_than=older_than,
            max_deletes=max_deletes,
        )

    # --- consumers ---------------------------------------------------------------------------
    def consumers(self) -> dict[str, int]:
        """Each consumer's id with the next snapshot it will read, ordered by id.

        Streaming reads under a ``consumer-id`` record their progress there, and
        expiration keeps every snapshot at or above the smallest next snapshot.
        Raises CorruptMetadataError for a consumer file that cannot be read."""
        return self._store.consumers.consumers()

    def reset_consumer(self, consumer_id: str, next_snapshot: int) -> None:
        """Create or move the consumer ``consumer_id`` to read ``next_snapshot`` next
        (Paimon's ``reset_consumer``). A snapshot older than the earliest one (or the
        earliest long-lived changelog) is refused, its rows being gone; a later one
        than the next to be committed too.

        Raises:
            InvalidArgumentError: an id that names no file of ``consumer/`` or a
                snapshot id out of that range.
        """
        self._store.consumers.path(consumer_id)  # the id is checked before the snapshot
        snapshots = self._store.snapshots
        earliest = self._store.changelogs.earliest_id() or snapshots.earliest_id()
        low, high = earliest or 1, (snapshots.latest_id() or 0) + 1
        if not isinstance(next_snapshot, int) or not low <= next_snapshot <= high:
            raise InvalidArgumentError(
                f"next_snapshot must be a snapshot id from the earliest ({low}) to the next "
                f"one to be committed ({high}), not {next_snapshot!r}"
            )
        self._store.consumers.record(consumer_id, next_snapshot)

    def delete_consumer(self, consumer_id: str) -> None:
        """Delete a consumer, so that it holds no snapshot back (none by that id:
        nothing to do, as in Paimon). Raises InvalidArgumentError for an id that
        names no file of ``consumer/``."""
        self._store.consumers.delete(consumer_id)

    def expire_partitions(
        self, expiration_time: timedelta | str | None = None, *, now: datetime | None = None
    ) -> list[dict[str, Any]]:
        """Drop the partitions older than ``expiration_time`` (default: the option
        ``partition.expiration-time``) in one OVERWRITE commit; returns them.

        A partition's age comes from its values (``partition.timestamp-pattern`` and
        ``-formatter``) or from its newest file (``partition.expiration-strategy`` =
        ``update-time``). Values that do not parse as a time are skipped, never dropped.
        """
        return self._transaction().expire_partitions(expiration_time, now)

    def remove_orphan_files(
        self, older_than: datetime | None = None, dry_run: bool = False
    ) -> OrphanFilesResult:
        """Delete files in the table's directories that no snapshot, tag or commit uses
        and that are older than ``older_than`` (default: now minus one day, so a
        commit in flight keeps its files). ``dry_run`` only reports them."""

        return remove_orphan_files(self._store, older_than=older_than, dry_run=dry_run)

    # --- reading -----------------------------------------------------------------------------
    def _resolve(
        self, snapshot_id: int | None, tag: str | None, timestamp_ms: int | None
    ) -> Snapshot | None:
        given = [x is not None for x in (snapshot_id, tag, timestamp_ms)]
        if sum(given) > 1:
            raise InvalidArgumentError("give at most one of snapshot_id, tag and timestamp_ms")
        for label, value in (("snapshot_id", snapshot_id), ("timestamp_ms", timestamp_ms)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise InvalidArgumentError(f"{label} must be an integer, not {value!r}")
        snapshots = self._store.snapshots
        if snapshot_id is not None:
            return snapshots.snapshot(snapshot_id)
        if tag is not None:
            return self._tag_snapshot(tag)
        if timestamp_ms is not None:
            found = snapshots.earlier_or_equal_time_millis(timestamp_ms)
            if found is None:
                raise SnapshotNotFoundError(
                    f"no snapshot was committed at or before {timestamp_ms} ms; "
                    "snapshots() lists the ones there are"
                )
            return found
        return snapshots.latest()

    def _tag_snapshot(self, tag: str) -> Snapshot:
        return self._store.tags.get(tag)[1]

    def scan(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_ms: int | None = None,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        read_optimized: bool = False,
        timestamp: datetime | str | None = None,
    ) -> Scan:
        """Plan a read; at most one of snapshot_id, tag and a time (``timestamp``: a
        datetime or ISO 8601 string, naive meaning UTC; or ``timestamp_ms``).

        ``filter`` (DNF tuples, a ``pyarrow.compute.Expression`` or text such as
        ``"id > 1 and dt = '2026-11-01'"``) prunes files and filters rows exactly;
        ``read_optimized`` selects the view without merging, which for an append
        table is every file.
        """
        timestamp_ms = timestamp_millis(timestamp, timestamp_ms)
        snapshot = self._resolve(snapshot_id, tag, timestamp_ms)
        latest = snapshot_id is None and tag is None and timestamp_ms is None
        schema = read_schema(self._store, snapshot, latest=latest)
        types = {f.name: f.type for f in schema.fields}
        if columns is not None:
            unknown = [c for c in columns if c not in types]
            if unknown:
                raise InvalidArgumentError(
                    f"unknown columns {unknown}; the table has {list(types)}"
                )
        return Scan(
            self._store,
            snapshot,
            columns,
            P.parse_filter(filter, types),
            read_optimized=read_optimized,
            latest=latest,
            tag=tag,
            schema=schema,
        )

    def to_arrow(
        self,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_ms: int | None = None,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        read_optimized: bool = False,
        timestamp: datetime | str | None = None,
    ) -> pa.Table:
        """Rows of the latest snapshot, or of the one chosen by time travel."""
        return self.scan(
            snapshot_id=snapshot_id,
            tag=tag,
            timestamp_ms=timestamp_ms,
            columns=columns,
            filter=filter,
            read_optimized=read_optimized,
            timestamp=timestamp,
        ).to_arrow()

    # --- Arrow out ----------------------------------------------------------------------------
    def to_reader(self, **scan_options: Any) -> pa.RecordBatchReader:
        """The rows as a ``pa.RecordBatchReader``, read batch by batch as it is consumed
        (``scan_options`` are :meth:`scan`'s keywords, as for :meth:`to_arrow`)."""
        return self.scan(**scan_options).to_reader()

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """The Arrow C stream interface over the latest snapshot, streamed: each call
        reads the snapshot that is the latest then (``pl.DataFrame(table)``,
        ``duckdb.sql("select ... from table")``, ``pa.table(table)``)."""
        return self.scan().__arrow_c_stream__(requested_schema)

    def to_pandas(self, **scan_options: Any) -> Any:
        """The rows as a pandas DataFrame; the keywords of :meth:`to_arrow`."""
        return self.scan(**scan_options).to_pandas()

    def to_polars(self, **scan_options: Any) -> Any:
        """The rows as a polars DataFrame; the keywords of :meth:`to_arrow`."""
        return self.scan(**scan_options).to_polars()

    def to_duckdb(self, connection: Any, name: str, **scan_options: Any) -> Any:
        """Register the rows as the view ``name`` of a DuckDB ``connection``; returns
        the connection. The view reads the scan (planned now, with the keywords of
        :meth:`to_arrow`) again at each query, so it keeps reading the same snapshot:
        as the ``pyarrow.dataset`` of its files when the read is a plain set of Parquet
        files (:meth:`Scan.plain_dataset`; DuckDB then reads only the columns a query
        needs), else as the scan's Arrow stream."""
        scan = self.scan(**scan_options)
        dataset = scan.plain_dataset()
        connection.register(name, scan if dataset is None else dataset)
        return connection

    def incremental(
        self,
        start: int | str,
        end: int | str,
        *,
        columns: Sequence[str] | None = None,
        filter: Any = None,
        scan_mode: ScanMode = "auto",
        row_kind: bool = False,
    ) -> pa.Table:
        """Rows committed after ``start`` up to ``end``.

        Two tag names read the difference of the tags' data (files live at ``end``
        that were not at ``start``; on a primary-key table the rows of ``end`` that
        are new or changed since ``start``). Two snapshot ids read the range
        ``(start, end]`` by ``scan_mode`` (Paimon's ``incremental-between-scan-mode``):

        - ``delta``: the files the APPEND commits of the range added, merged by key on
          a primary-key table (each key's latest row written in the range; deletes
          drop the key);
        - ``changelog``: the changelog files of the range's snapshots (a table with
          ``changelog-producer``): every row with its kind, in commit order, as a
          streaming reader sees them. With ``row_kind`` a first column ``rowkind``
          holds the kinds (``+I``, ``-U``, ``+U``, ``-D``, as Paimon's ``audit_log``);
          without it the retractions are left out, as a batch read leaves them out;
        - ``diff``: the difference of the two snapshots' data, as of two tags;
        - ``auto`` (the default): ``changelog`` when the table has a changelog
          producer, else ``delta``.

        Raises:
            InvalidArgumentError: a range backwards, an unknown scan mode, or
                ``row_kind`` for a read that is not of the changelog.
        """
        store = self._store
        dnf = P.parse_filter(filter, {f.name: f.type for f in store.schema.fields})
        plan = plan_incremental(store, start, end, scan_mode)
        if row_kind and plan.changelog is None:
            raise InvalidArgumentError(
                "row kinds come with a read of the changelog: give two snapshot ids and "
                "scan_mode 'changelog' (or 'auto' on a table with a changelog producer)"
            )
        if plan.changelog is not None:
            return read_changelog(store, plan.changelog, columns, dnf, row_kind=row_kind)
        if plan.diff is not None:
            rows = keyed_diff(store, *plan.diff, None)
            if dnf is not None:
                rows = rows.filter(P.to_expression(dnf))
            return rows.select(list(columns)) if columns is not None else rows
        if store.is_primary_key:
            return read_merged(store, plan.splits, columns, dnf)
        return read_table(store, plan.splits, store.schema, columns, dnf)

    def system_table(
        self, name: str, *, snapshot_id: int | None = None, tag: str | None = None
    ) -> pa.Table:
        """Metadata as a table: snapshots, files, manifests, partitions, options, schemas,
        tags, freshness (the compaction backlog per partition and bucket), audit_log (an
        append table's rows with their kind, ``+I``, first in a ``rowkind`` column).

        ``files`` and ``manifests`` follow time travel, as Paimon's ``$files`` does.
        ``snapshots`` lists damaged snapshot files too (its ``status`` and ``error``
        columns), so it is readable whatever snapshot is damaged.
        """
        if name == AUDIT_LOG:
            return self._audit_log(snapshot_id, tag)
        if snapshot_id is None and tag is None and name not in NEEDS_SNAPSHOT:
            # These describe the table as it is and read no snapshot: a damaged latest
            # snapshot must not hide the snapshots listing.
            return system_table(self._store, name, None)
        return system_table(self._store, name, self._resolve(snapshot_id, tag, None))

    def _audit_log(self, snapshot_id: int | None, tag: str | None) -> pa.Table:
        """Paimon's ``audit_log`` of a snapshot: its rows, each with its kind. On an append
        table every row is an insert (``+I``)."""
        if self._store.is_primary_key:
            raise UnsupportedFeatureError(
                "the audit_log of a primary-key table's snapshot (its merged rows with their "
                "kinds) is not read; its changelog with row kinds is "
                "Table.incremental(start, end, row_kind=True)",
                feature=AUDIT_LOG,
            )
        rows = self.to_arrow(snapshot_id=snapshot_id, tag=tag)
        return rows.add_column(0, ROW_KIND, pa.array(["+I"] * rows.num_rows, pa.string()))


def _check_table_rules(schema: TableSchema) -> None:
    """The rules of a table's definition that hold above the metadata layer: the
    event-time column of event-time compaction."""
    check_event_time_field(schema.fields, schema.primary_keys, schema.options)
