"""Committing schema changes: one new ``schema/schema-<N>`` file per change set.

The next version is written by atomic create, which decides between concurrent
changes. As Paimon's ``SchemaManager.commitChanges`` does, a change set that lost the
race is applied again to the new latest schema and retried; when it no longer applies
there (a column it adds was added meanwhile, one it renames was dropped), or when every
attempt lost, it raises :class:`SchemaConflictError` and writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

import pyarrow as pa

from shoal.core import schema_change as C
from shoal.core.schema_manager import SchemaManager
from shoal.core.snapshot_manager import SnapshotManager
from shoal.errors import InvalidArgumentError, SchemaConflictError, ShoalError
from shoal.format import types as T
from shoal.format.schema import TableSchema

Build = Callable[[TableSchema, bool], TableSchema | None]
"""The next schema version made from the latest one (and whether the table has a
snapshot); None when there is nothing to change."""
Check = Callable[[TableSchema], None]


def commit_schema(
    schemas: SchemaManager,
    snapshots: SnapshotManager,
    build: Build,
    *,
    base_id: int,
    attempts: int,
) -> TableSchema | None:
    """Write the schema ``build`` makes from the latest one; the schema written, or None
    when ``build`` had nothing to change.

    ``base_id`` is the version the caller checked its changes against: a change that
    fails on a later version fails because of a concurrent change.

    Raises:
        SchemaConflictError: the changes no longer apply to a newer latest schema, or
            ``attempts`` attempts lost their race.
        ShoalError: the changes do not apply to the schema they were made for.
    """
    latest_id = base_id
    for _ in range(attempts):
        latest = schemas.latest()
        if latest is None:
            raise AssertionError("an open table has a schema")
        latest_id = latest.id
        try:
            new_schema = build(latest, snapshots.latest_id() is not None)
        except ShoalError as exc:
            if latest.id == base_id:
                raise
            raise _overtaken(latest, base_id, exc) from exc
        if new_schema is None or schemas.try_create(new_schema):
            return new_schema
    raise SchemaConflictError(
        f"every one of {attempts} attempts to write the next schema version lost to a "
        "concurrent schema change; re-open the table and apply the changes again",
        schema_id=latest_id,
    )


def _overtaken(latest: TableSchema, base_id: int, cause: ShoalError) -> SchemaConflictError:
    return SchemaConflictError(
        f"the schema changed from version {base_id} to {latest.id} meanwhile, and the "
        f"changes no longer apply to it: {cause}. Re-open the table, look at its schema "
        "and apply the changes again",
        schema_id=latest.id,
    )


def changes_build(changes: Sequence[C.SchemaChange], check: Check | None = None) -> Build:
    """``changes`` applied to whichever schema is the latest."""

    def build(latest: TableSchema, has_snapshots: bool) -> TableSchema:
        return C.apply_changes(
            latest, changes, has_snapshots=has_snapshots, time_millis=now_millis(), check=check
        )

    return build


def columns_build(columns: Sequence[tuple[str, T.DataType]]) -> Build:
    """The ``columns`` (name, type) that the latest schema lacks added to it, in their
    order; nothing when it has them all."""

    def build(latest: TableSchema, has_snapshots: bool) -> TableSchema | None:
        added = C.columns_to_add(latest, columns)
        if not added:
            return None
        return C.apply_changes(latest, added, has_snapshots=has_snapshots, time_millis=now_millis())

    return build


def now_millis() -> int:
    return int(time.time() * 1000)


def paimon_type(value: Any, what: str) -> T.DataType:
    """A column type given as a pyarrow DataType or a Paimon SQL type (``"BIGINT"``,
    ``"DECIMAL(10, 2)"``). Nested fields get ids when the change is applied.

    Raises:
        InvalidArgumentError: neither, or a SQL type that does not parse.
        SchemaMismatchError: an Arrow type Paimon has no counterpart for.
    """
    if isinstance(value, pa.DataType):
        return T.from_arrow(value, True, [0])
    if isinstance(value, str):
        try:
            return T.parse_type(value)
        except ValueError as exc:
            raise InvalidArgumentError(f"{what}: {exc}") from None
    raise InvalidArgumentError(
        f"{what} is a pyarrow DataType or a Paimon SQL type such as 'BIGINT', not {value!r}"
    )


class SchemaUpdate:
    """The changes of one ``with table.update_schema() as update:`` block.

    Each call checks its change against the schema as the earlier calls leave it, and
    raises there when it does not apply. Leaving the block without an exception
    commits them all as one new schema version; an exception commits nothing.
    """

    def __init__(
        self,
        base: TableSchema,
        has_snapshots: bool,
        commit: Callable[[Sequence[C.SchemaChange]], TableSchema | None],
        check: Check | None = None,
    ) -> None:
        self._base = base
        self._has_snapshots = has_snapshots
        self._commit = commit
        self._check = check
        self._changes: list[C.SchemaChange] = []
        self.schema: TableSchema | None = None
        """The schema committed on leaving the block (None before, or when there was
        nothing to change)."""

    @property
    def changes(self) -> tuple[C.SchemaChange, ...]:
        return tuple(self._changes)

    def __enter__(self) -> SchemaUpdate:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None and self._changes:
            self.schema = self._commit(tuple(self._changes))

    # --- the changes ---------------------------------------------------------------------------
    def add_column(
        self,
        name: str | Sequence[str],
        type: Any,
        after: str | None = None,
        comment: str | None = None,
        *,
        first: bool = False,
    ) -> SchemaUpdate:
        """Add a nullable column (``"a.b"``: field ``b`` of the ROW column ``a``) of
        ``type`` (a pyarrow DataType or a Paimon SQL type), last among its siblings,
        right after the sibling ``after``, or ``first``."""
        data_type = paimon_type(type, f"the type of column {name!r}")
        return self._add(C.AddColumn(C.column_path(name), data_type, comment, after, first))

    def rename_column(self, name: str | Sequence[str], new_name: str) -> SchemaUpdate:
        """Rename a column (nested ones by path); it keeps its field id, so its data."""
        return self._add(C.RenameColumn(C.column_path(name), new_name))

    def drop_column(self, name: str | Sequence[str]) -> SchemaUpdate:
        """Drop a column (nested ones by path). Its id is never given out again."""
        return self._add(C.DropColumn(C.column_path(name)))

    def update_column_type(self, name: str | Sequence[str], new_type: Any) -> SchemaUpdate:
        """Change a scalar column's type where Paimon casts the old type to the new one;
        the column keeps its nullability."""
        data_type = paimon_type(new_type, f"the new type of column {name!r}")
        return self._add(C.UpdateColumnType(C.column_path(name), data_type))

    def set_option(self, key: str, value: Any) -> SchemaUpdate:
        """Set a table option (as ``create_table`` takes them)."""
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"an option key is a non-empty string, not {key!r}")
        return self._add(C.SetOption(key, str(value)))

    def remove_option(self, key: str) -> SchemaUpdate:
        """Remove a table option: its default applies again."""
        return self._add(C.RemoveOption(key))

    def update_comment(self, comment: str | None) -> SchemaUpdate:
        """Set the table's comment (None removes it)."""
        if comment is not None and not isinstance(comment, str):
            raise InvalidArgumentError(f"a comment is a string or None, not {comment!r}")
        return self._add(C.UpdateComment(comment))

    def _add(self, change: C.SchemaChange) -> SchemaUpdate:
        pending = [*self._changes, change]
        C.apply_changes(
            self._base,
            pending,
            has_snapshots=self._has_snapshots,
            time_millis=now_millis(),
            check=self._check,
        )
        self._changes = pending
        return self
