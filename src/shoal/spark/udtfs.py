"""shoal's metadata and maintenance procedures as SQL table functions.

Spark has no ``CALL`` for procedures written in Python and no metadata tables for a
Python source, so :func:`register_functions` registers Python UDTFs in the session::

    SELECT * FROM shoal_snapshots('/data/wh/db.db/events')
    SELECT * FROM shoal_tags('/data/wh/db.db/events')
    SELECT * FROM shoal_freshness('/data/wh/db.db/events')
    SELECT * FROM shoal_expire_snapshots('/data/wh/db.db/events', 10)
    SELECT * FROM shoal_remove_orphan_files('/data/wh/db.db/events', '2026-11-01T00:00', false)
    SELECT * FROM shoal_compact('/data/wh/db.db/events', 'full')
    SELECT * FROM shoal_delete_where('/data/wh/db.db/events', "dt = '2026-11-01'")

The row-level functions (``shoal_delete_where``, ``shoal_update_where``) are in
:mod:`shoal.spark.row_functions`.

The metadata functions return the table's system table of that name
(``Table.system_table``); ``shoal_freshness`` returns the one row of
``Table.freshness()``. Their columns are taken from the table when the query is
analyzed, so they are always the system tables' columns; the path must therefore be
a literal.

The procedures return one row: the fields of the result the table method returns.
Their arguments after the path are optional (also by name, ``retain_max => 5``),
``NULL`` meaning the table method's default; times are ISO strings (naive: local
time). A procedure runs the single-process table method in the one task that
evaluates it: Python code on an executor has no SparkSession and cannot start Spark
jobs. For a distributed run, call :mod:`shoal.spark.jobs` from the driver. A
procedure runs each time its query is evaluated, so collect its result once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import fields
from datetime import datetime
from typing import Any, cast

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.functions import udtf
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.udtf import AnalyzeArgument, AnalyzeResult, UserDefinedTableFunction

from shoal.errors import InvalidArgumentError
from shoal.event_time.freshness import Freshness
from shoal.spark.row_functions import (
    DELETE_RESULT,
    UPDATE_RESULT,
    DeleteWhereFunction,
    UpdateWhereFunction,
)
from shoal.table import Table

__all__ = [
    "CompactFunction",
    "ExpireSnapshotsFunction",
    "FreshnessFunction",
    "RemoveOrphanFilesFunction",
    "SnapshotsFunction",
    "TagsFunction",
    "register_functions",
]

Row = tuple[Any, ...]


Storage = tuple[tuple[str, str], ...]


def register_functions(
    spark: SparkSession, *, storage_options: Mapping[str, str] | None = None
) -> None:
    """Register shoal's table functions in ``spark``'s session (see the module
    docstring); registering again replaces them. ``storage_options`` configure the
    store of every table the functions open (docs/tables.md); they are pickled with
    the functions, so the tasks that evaluate them need no configuration of their own."""
    storage: Storage = tuple(sorted((storage_options or {}).items()))
    functions: tuple[tuple[str, type, str | None], ...] = (
        ("shoal_snapshots", SnapshotsFunction, None),
        ("shoal_tags", TagsFunction, None),
        ("shoal_freshness", FreshnessFunction, None),
        ("shoal_expire_snapshots", ExpireSnapshotsFunction, EXPIRE_RESULT),
        ("shoal_remove_orphan_files", RemoveOrphanFilesFunction, ORPHANS_RESULT),
        ("shoal_compact", CompactFunction, COMPACT_RESULT),
        ("shoal_delete_where", DeleteWhereFunction, DELETE_RESULT),
        ("shoal_update_where", UpdateWhereFunction, UPDATE_RESULT),
    )
    for name, handler, return_type in functions:
        bound = _with_storage(handler, storage) if storage else handler
        # Given a class, udtf() returns the function itself (Spark Connect's own class of
        # it under a Connect session), not a decorator.
        function = cast("UserDefinedTableFunction", udtf(bound, returnType=return_type))
        spark.udtf.register(name, function)


def _with_storage(handler: type, storage: Storage) -> type:
    """A subclass of ``handler`` that opens tables with ``storage``. Its name is no
    attribute of this module, so cloudpickle sends the class itself (with the options)
    rather than a reference to ``handler``."""
    attributes: dict[str, Any] = {"storage": storage}
    system = getattr(handler, "SYSTEM_TABLE", None)
    if system is not None:
        attributes["analyze"] = staticmethod(lambda path: _analyze(system, path, storage))
    return type(f"{handler.__name__}WithStorage", (handler,), attributes)


# --- metadata ------------------------------------------------------------------------------
def _metadata(name: str, path: str, storage: Storage = ()) -> pa.Table:
    table = Table.open(path, storage_options=dict(storage))
    if name == "freshness":
        result = table.freshness()
        values = {f.name: [getattr(result, f.name)] for f in fields(Freshness)}
        return pa.table(values, schema=pa.schema([(n, pa.int64()) for n in values]))
    return table.system_table(name)


def _analyze(name: str, path: AnalyzeArgument, storage: Storage = ()) -> AnalyzeResult:
    if not isinstance(path.value, str):
        raise InvalidArgumentError(
            f"shoal_{name} takes the table's path as a string literal, such as "
            f"shoal_{name}('/data/warehouse/db.db/events')"
        )
    return AnalyzeResult(from_arrow_schema(_metadata(name, path.value, storage).schema))


def _rows(table: pa.Table) -> Iterator[Row]:
    for row in table.to_pylist():
        yield tuple(row.values())


class SnapshotsFunction:
    """``shoal_snapshots(path)``: the system table ``snapshots``."""

    SYSTEM_TABLE = "snapshots"
    storage: Storage = ()  # set by register_functions(storage_options=...)

    @staticmethod
    def analyze(path: AnalyzeArgument) -> AnalyzeResult:
        return _analyze("snapshots", path)

    def eval(self, path: str) -> Iterator[Row]:
        yield from _rows(_metadata("snapshots", path, self.storage))


class TagsFunction:
    """``shoal_tags(path)``: the system table ``tags``."""

    SYSTEM_TABLE = "tags"
    storage: Storage = ()  # set by register_functions(storage_options=...)

    @staticmethod
    def analyze(path: AnalyzeArgument) -> AnalyzeResult:
        return _analyze("tags", path)

    def eval(self, path: str) -> Iterator[Row]:
        yield from _rows(_metadata("tags", path, self.storage))


class FreshnessFunction:
    """``shoal_freshness(path)``: ``Table.freshness()`` of the latest snapshot, one row."""

    SYSTEM_TABLE = "freshness"
    storage: Storage = ()  # set by register_functions(storage_options=...)

    @staticmethod
    def analyze(path: AnalyzeArgument) -> AnalyzeResult:
        return _analyze("freshness", path)

    def eval(self, path: str) -> Iterator[Row]:
        yield from _rows(_metadata("freshness", path, self.storage))


# --- procedures ----------------------------------------------------------------------------
EXPIRE_RESULT = "expired_snapshots bigint, deleted_data_files bigint, deleted_manifest_files bigint"
ORPHANS_RESULT = "deleted_count bigint, deleted_bytes bigint, paths array<string>"
COMPACT_RESULT = "snapshot_id bigint, compacted_files bigint, written_files bigint"


def _time(value: str | None, argument: str) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            f"{argument} must be an ISO time such as '2026-11-01T00:00:00', not {value!r}"
        ) from None


class ExpireSnapshotsFunction:
    """``shoal_expire_snapshots(path, retain_max, retain_min, older_than, max_deletes)``:
    ``Table.expire_snapshots``."""

    storage: Storage = ()  # set by register_functions(storage_options=...)

    def eval(
        self,
        path: str,
        retain_max: int | None = None,
        retain_min: int | None = None,
        older_than: str | None = None,
        max_deletes: int | None = None,
    ) -> Iterator[Row]:
        result = Table.open(path, storage_options=dict(self.storage)).expire_snapshots(
            retain_min=retain_min,
            retain_max=retain_max,
            older_than=_time(older_than, "older_than"),
            max_deletes=max_deletes,
        )
        yield (result.expired_snapshots, result.deleted_data_files, result.deleted_manifest_files)


class RemoveOrphanFilesFunction:
    """``shoal_remove_orphan_files(path, older_than, dry_run)``:
    ``Table.remove_orphan_files``."""

    storage: Storage = ()  # set by register_functions(storage_options=...)

    def eval(
        self, path: str, older_than: str | None = None, dry_run: bool | None = None
    ) -> Iterator[Row]:
        result = Table.open(path, storage_options=dict(self.storage)).remove_orphan_files(
            older_than=_time(older_than, "older_than"), dry_run=bool(dry_run)
        )
        yield (result.deleted_count, result.deleted_bytes, list(result.paths))


class CompactFunction:
    """``shoal_compact(path, strategy, event_time_threshold)``: ``Table.compact``; the
    threshold is an ISO time (naive: UTC) or epoch milliseconds."""

    storage: Storage = ()  # set by register_functions(storage_options=...)

    def eval(
        self, path: str, strategy: str | None = None, event_time_threshold: Any = None
    ) -> Iterator[Row]:
        threshold = event_time_threshold
        if isinstance(threshold, str):
            threshold = _time(threshold, "event_time_threshold")
        result = Table.open(path, storage_options=dict(self.storage)).compact(strategy, threshold)
        snapshot_id = result.snapshot.id if result.snapshot is not None else None
        yield (snapshot_id, result.compacted_files, result.written_files)
