"""Row-level deletes and updates by a filter, each one atomic commit.

Append tables: the live files whose statistics may match the filter are read for
the filter's columns, and whole (each with its own schema, mapped to the table's)
only when a row matches; a file with a matching row is
replaced in one OVERWRITE commit by its rewritten remainder (DELETE of the file, ADD
of the new one), and the files without one are left as they are. The commit checks
that every file it replaces is still live, so a concurrent compaction or overwrite
makes it fail with CommitConflictError before anything is published; a concurrent
append only adds files, which are kept.

Primary-key tables: the matching rows of the merged view are read and written back
as ``-D`` rows (delete) or as upserts with the new values (update), numbered above
the bucket's rows as every primary-key write is.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from shoal import options as O
from shoal.core import deletion_vectors as DVS
from shoal.core import kv
from shoal.core import predicate as P
from shoal.core.kv import AGGREGATION, FIRST_ROW, PARTIAL_UPDATE
from shoal.core.plan import live_entries, make_splits
from shoal.core.store import FileStore
from shoal.errors import InvalidArgumentError, UnsupportedFeatureError
from shoal.format.snapshot import CommitKind, Snapshot
from shoal.io.executor import bounded_map
from shoal.read.files import read_table
from shoal.scan import Scan, read_schema
from shoal.transaction import Transaction
from shoal.write.commit import CommitRequest
from shoal.write.files import AppendWriter, CommitMessage

DELETE = "delete_where"
UPDATE = "update_where"


@dataclass(frozen=True, slots=True)
class RowOpResult:
    """The snapshot a row-level operation committed and how many rows it changed."""

    snapshot: Snapshot
    rows: int


@dataclass(frozen=True, slots=True)
class Prepared:
    """A row-level operation read and written, not yet committed: ``commit`` publishes
    it (the files it replaces are checked still live then)."""

    transaction: Transaction
    rows: int
    messages: tuple[CommitMessage, ...] = ()
    keyed: pa.Table | None = None
    kind: int = kv.INSERT

    def commit(self) -> RowOpResult:
        transaction = self.transaction
        if self.keyed is not None:
            return RowOpResult(transaction.write(self.keyed, kind=self.kind), self.rows)
        snapshot = transaction.committer.commit(
            CommitRequest(self.messages, kind=CommitKind.OVERWRITE, allow_empty=True)
        )
        assert snapshot is not None  # allow_empty
        transaction.after_commit((), compact=False)
        return RowOpResult(snapshot, self.rows)


def delete_where(transaction: Transaction, raw_filter: Any) -> RowOpResult:
    """Delete the rows matching ``raw_filter`` (any form ``parse_filter`` takes)."""
    return prepare(transaction, raw_filter, None).commit()


def update_where(
    transaction: Transaction, raw_filter: Any, values: Mapping[str, Any]
) -> RowOpResult:
    """Set the columns of ``values`` (Python scalars, cast exactly to each column's
    type) in the rows matching ``raw_filter``."""
    return prepare(transaction, raw_filter, values).commit()


def prepare(
    transaction: Transaction, raw_filter: Any, values: Mapping[str, Any] | None
) -> Prepared:
    """Read the rows ``raw_filter`` matches in the latest snapshot and write what
    replaces them: a delete when ``values`` is None, else an update setting them."""
    store = transaction.store
    what = DELETE if values is None else UPDATE
    if values is not None and (not isinstance(values, Mapping) or not values):
        raise InvalidArgumentError("update_where needs set={column: value, ...} with a column")
    transaction.validate()
    latest = store.snapshots.latest()
    schema = read_schema(store, latest, latest=True)
    types = {f.name: f.type for f in schema.fields}
    dnf = P.parse_filter(raw_filter, types)
    if dnf is None:
        raise InvalidArgumentError(
            f"{what} got an empty filter, which would match every row; name the rows "
            "(to remove every row use overwrite with no rows)"
        )
    arrow_schema = schema.arrow_schema()
    scalars = None if values is None else _scalars(store, arrow_schema, dict(values))
    if store.is_primary_key:
        _check_engine(store, what, values)
        rows = Scan(
            store, latest, _keyed_columns(store, scalars), dnf, latest=True, schema=schema
        ).to_arrow()
        if scalars is None:
            return Prepared(transaction, rows.num_rows, keyed=rows, kind=kv.DELETE)
        for name, scalar in scalars.items():
            index = rows.schema.get_field_index(name)
            rows = rows.set_column(
                index, rows.schema.field(index), pa.repeat(scalar, rows.num_rows)
            )
        return Prepared(transaction, rows.num_rows, keyed=rows)
    if DVS.enabled(store.schema.options):
        raise UnsupportedFeatureError(
            f"{what} on an append table with deletion vectors is not implemented; "
            "unset 'deletion-vectors.enabled' or use overwrite",
            feature="deletion-vectors.enabled",
        )
    return _rewrite_files(transaction, latest, schema, dnf, scalars)


def _keyed_columns(store: FileStore, scalars: dict[str, pa.Scalar] | None) -> list[str] | None:
    """The columns a primary-key row operation reads: a delete needs only the key,
    unless ``changelog-producer`` is ``input``, whose changelog keeps the rows as
    written (a delete's whole old row, as Paimon's own DELETE writes it)."""
    if scalars is None and store.options.get(O.CHANGELOG_PRODUCER) != "input":
        return list(store.schema.primary_keys)
    return None


def _rewrite_files(
    transaction: Transaction,
    latest: Snapshot | None,
    schema: Any,
    dnf: P.Dnf,
    scalars: dict[str, pa.Scalar] | None,
) -> Prepared:
    """Each live file that may match, read for the filter's columns; those with a
    matching row read whole and replaced by their remainder (or their rows with the
    values set), one file per task on every core: encoding Parquet takes one core per
    file."""
    store = transaction.store
    entries = [] if latest is None else live_entries(store, latest, dnf, target=schema)
    expression = P.to_expression(dnf)
    used = P.columns_of(dnf)
    filter_columns = [name for name in schema.field_names if name in used]
    hit: list[tuple[Any, list[Any], np.ndarray]] = []
    for entry in entries:
        assert latest is not None
        splits = make_splits(store, latest.id, [entry], schema=schema)
        # the filter's columns first: a file without a matching row is read no further
        mask = _matches(read_table(store, splits, schema, filter_columns, None), expression)
        if mask.any():
            hit.append((entry, splits, mask))

    def rewrite(found: tuple[Any, list[Any], np.ndarray]) -> list[CommitMessage]:
        entry, splits, mask = found
        table = read_table(store, splits, schema, None, None)
        if scalars is None:
            rest = table.filter(pa.array(~mask))
        else:
            rest = _with_values(table, pa.array(mask), scalars)
        deleted = CommitMessage(
            entry.partition, entry.bucket, entry.total_buckets, deleted_files=(entry.file,)
        )
        if not rest.num_rows:
            return [deleted]
        writer = AppendWriter(store)
        writer.write(rest)
        return [deleted, *writer.prepare_commit()]

    written = bounded_map(rewrite, hit, os.cpu_count() or 1)
    changed = sum(int(np.count_nonzero(mask)) for _, _, mask in hit)
    return Prepared(transaction, changed, tuple(m for messages in written for m in messages))


def _matches(table: pa.Table, expression: pc.Expression) -> np.ndarray:
    """Whether each row of ``table`` matches (a null result is no match)."""
    projected = ds.dataset(table).to_table(columns={"m": expression})
    column = pc.fill_null(projected.column("m"), False)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=bool)


def _with_values(table: pa.Table, mask: pa.Array, scalars: dict[str, pa.Scalar]) -> pa.Table:
    for name, scalar in scalars.items():
        index = table.schema.get_field_index(name)
        column = pc.if_else(mask, scalar, table.column(index))
        table = table.set_column(index, table.schema.field(index), column)
    return table


def _scalars(store: FileStore, schema: pa.Schema, values: dict[str, Any]) -> dict[str, pa.Scalar]:
    """Each value as a scalar of its column's type, refused unless exact."""
    fixed = set(store.schema.primary_keys) | set(store.schema.partition_keys)
    out = {}
    for name, value in values.items():
        if not isinstance(name, str) or schema.get_field_index(name) < 0:
            raise InvalidArgumentError(
                f"update_where: unknown column {name!r}; the table has {schema.names}"
            )
        if name in fixed:
            kind = "primary-key" if name in store.schema.primary_keys else "partition"
            raise InvalidArgumentError(
                f"update_where cannot set the {kind} column {name!r}; delete the rows "
                "and write them again with the new value"
            )
        field = schema.field(name)
        out[name] = _exact_scalar(field, value)
    return out


def _exact_scalar(field: pa.Field, value: Any, what: str = UPDATE) -> pa.Scalar:
    if value is None:
        if not field.nullable:
            raise InvalidArgumentError(f"{what}: column {field.name!r} is NOT NULL")
        return pa.scalar(None, field.type)
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    try:
        scalar = pa.scalar(value, field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
        raise InvalidArgumentError(
            f"{what}: {value!r} is not a value of column {field.name!r} ({field.type}): {exc}"
        ) from None
    back = scalar.as_py()
    same = back == value or (
        isinstance(value, float)
        and isinstance(back, float)
        and math.isnan(value)
        and math.isnan(back)
    )
    if not same or (type(value) is bool and not pa.types.is_boolean(field.type)):
        raise InvalidArgumentError(
            f"{what}: {value!r} does not fit column {field.name!r} ({field.type}) "
            f"exactly (it would be {back!r}); pass a value of the column's type"
        )
    return scalar


def _check_engine(store: FileStore, what: str, values: Mapping[str, Any] | None) -> None:
    """Refuse the primary-key tables where -D rows or upserts would not mean a delete
    or an update of the matching rows."""
    settings = store.merge_settings
    name = store.uri
    if settings.engine in (AGGREGATION, FIRST_ROW):
        raise UnsupportedFeatureError(
            f"{what} on {name}: the {settings.engine} merge engine combines or keeps rows "
            "so that rewriting them would not delete or update them; use overwrite",
            feature=f"merge-engine={settings.engine}",
        )
    if store.options.get(O.ROWKIND_FIELD):
        raise UnsupportedFeatureError(
            f"{what} on {name}: a table with 'rowkind.field' takes each row's kind from "
            "that column, so the rows written back would not be deletes or upserts",
            feature="rowkind.field",
        )
    if settings.sequence_field is not None:
        raise UnsupportedFeatureError(
            f"{what} on {name}: a table with 'sequence.field' orders rows by that column, "
            "so rows written again would not reliably win; use overwrite",
            feature="sequence.field",
        )
    if settings.engine == PARTIAL_UPDATE:
        if settings.sequence_groups or settings.functions:
            raise UnsupportedFeatureError(
                f"{what} on {name}: partial-update with sequence groups or aggregate "
                "functions would combine the rows written again; use overwrite",
                feature="fields.*.sequence-group",
            )
        if values is None and not settings.remove_record_on_delete:
            raise UnsupportedFeatureError(
                f"{what} on {name}: a partial-update table ignores deletes unless "
                "'partial-update.remove-record-on-delete' = 'true'",
                feature="partial-update.remove-record-on-delete",
            )
        if values is not None and any(v is None for v in values.values()):
            raise UnsupportedFeatureError(
                f"{what} on {name}: a partial-update table keeps a column's last non-null "
                "value, so it cannot be set to null",
                feature="merge-engine=partial-update",
            )
    if values is None and settings.ignore_delete:
        raise UnsupportedFeatureError(
            f"{what} on {name}: the table sets 'ignore-delete', which drops deletes",
            feature="ignore-delete",
        )
