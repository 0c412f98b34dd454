"""MERGE of a source into a table by key columns, in one atomic commit.

``table.merge(source, on=[...])`` returns a :class:`MergeBuilder`; its clauses apply as
SQL MERGE defines: each target row that a source row matches (equal, non-null ``on``
values) takes the first WHEN MATCHED clause whose conditions hold (update or delete),
or stays as it is when none holds; each source row that matches no target row takes
the first WHEN NOT MATCHED clause whose condition holds (insert), or is dropped. Two
source rows matching one target row are refused (InvalidArgumentError) before anything
is written.

Values (``set`` of an update, ``values`` of an insert) map a target column to a source
column's name (a ``str``), a ``pyarrow.compute.Expression`` over the source columns, or
any other Python value or ``pa.Scalar`` as a literal (a text literal is
``pa.scalar("...")``); each is cast exactly to its column's type. ``None`` means every
column of the table from the source column of the same name. Conditions take any form
``parse_filter`` takes: ``condition`` over the target's columns, ``source_condition``
over the source's (an insert's ``condition`` is over the source, as there is no target
row); a filter comparing a target column with a source column is not supported.

Append tables: the key's range in the source prunes files by statistics; each live
file left is read for its key (and condition) columns, joined with the source's keys,
and, when a matched clause applies to a row of it, read whole and replaced by its
rewritten rows; inserts are appended. One OVERWRITE commit (APPEND when no file is
replaced) checks that every replaced file is still live, as ``delete_where`` does.
Primary-key tables: the merged view is read for the source's keys only (partitions and
files pruned by them); updates are upserts, deletes ``-D`` rows and inserts ``+I``
rows of one primary-key write.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from shoal import options as O
from shoal.core import deletion_vectors as DVS
from shoal.core import kv
from shoal.core import predicate as P
from shoal.core.kv import PARTIAL_UPDATE
from shoal.core.plan import live_entries, make_splits
from shoal.errors import (
    InvalidArgumentError,
    InvalidFilterError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from shoal.format import types as T
from shoal.format.schema import TableSchema
from shoal.format.snapshot import CommitKind, Snapshot
from shoal.io.executor import bounded_map, parallel_map
from shoal.read.files import read_table
from shoal.row_ops import _check_engine, _exact_scalar
from shoal.scan import Scan, read_schema
from shoal.transaction import Transaction
from shoal.write.commit import CommitRequest
from shoal.write.conform import conform, to_batches
from shoal.write.files import AppendWriter, CommitMessage
from shoal.write.keyed import KeyValueWriter

WHAT = "merge"
_TARGET_ROW = "__shoal_target_row"
_SOURCE_ROW = "__shoal_source_row"
# partition values of the source listed for pruning up to this many; a range beyond
_MAX_LISTED = 1000


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The snapshot a merge committed and how many rows it changed: ``rows`` is
    ``updated + deleted + inserted``."""

    snapshot: Snapshot
    rows: int
    updated: int
    deleted: int
    inserted: int


@dataclass(frozen=True, slots=True)
class Clause:
    """One WHEN clause: ``values`` is an update's ``set`` or an insert's ``values``."""

    action: Literal["update", "delete", "insert"]
    values: Mapping[str, Any] | None = None
    condition: Any = None
    source_condition: Any = None


@dataclass(frozen=True, slots=True)
class MergeBuilder:
    """A merge to run: the clauses in the order given; ``execute`` commits it."""

    transaction: Transaction
    source: Any
    on: tuple[str, ...]
    clauses: tuple[Clause, ...] = ()

    def when_matched_update(
        self,
        set: Mapping[str, Any] | None = None,
        condition: Any = None,
        *,
        source_condition: Any = None,
    ) -> MergeBuilder:
        """Update the matched target rows where ``condition`` (target columns) and
        ``source_condition`` (source columns) hold: ``set`` maps target columns to
        values (None: every column from the source row)."""
        if set is not None and (not isinstance(set, Mapping) or not set):
            raise InvalidArgumentError("when_matched_update: set is None or {column: value}")
        return self._with(Clause("update", set, condition, source_condition))

    def when_matched_delete(
        self, condition: Any = None, *, source_condition: Any = None
    ) -> MergeBuilder:
        """Delete the matched target rows where the conditions hold."""
        return self._with(Clause("delete", None, condition, source_condition))

    def when_not_matched_insert(
        self, values: Mapping[str, Any] | None = None, condition: Any = None
    ) -> MergeBuilder:
        """Insert the unmatched source rows where ``condition`` (source columns) holds:
        ``values`` maps target columns to values (None: the source row's columns of the
        table; columns left out are null)."""
        if values is not None and (not isinstance(values, Mapping) or not values):
            raise InvalidArgumentError("when_not_matched_insert: values is None or {column: value}")
        return self._with(Clause("insert", values, None, condition))

    def _with(self, clause: Clause) -> MergeBuilder:
        return dataclasses.replace(self, clauses=(*self.clauses, clause))

    def execute(self) -> Snapshot:
        """Run the merge in one atomic commit; returns the new snapshot
        (:meth:`execute_with_counts` also says how many rows each clause changed).

        Raises: as :meth:`execute_with_counts`.
        """
        return self.execute_with_counts().snapshot

    def execute_with_counts(self) -> MergeResult:
        """Run the merge in one atomic commit; returns the snapshot and the rows
        updated, deleted and inserted.

        Raises:
            InvalidArgumentError: no clause, unknown columns, an ``on`` a primary-key
                table cannot match by, or several source rows matching one target row.
            UnsupportedFeatureError: a table whose merge engine or options would give
                the written rows another meaning.
            CommitConflictError: a file the merge replaces was replaced meanwhile.
        """
        return prepare(self).commit()


@dataclass(frozen=True, slots=True)
class PreparedMerge:
    """A merge read and written, not yet committed."""

    transaction: Transaction
    counts: tuple[int, int, int]
    messages: tuple[CommitMessage, ...] = ()
    replaces: bool = False
    keyed: KeyValueWriter | None = None

    def commit(self) -> MergeResult:
        transaction = self.transaction
        if self.keyed is not None:
            snapshot, buckets = transaction.commit_keyed(self.keyed)
            transaction.after_commit(buckets, compact=True)
        else:
            kind = CommitKind.OVERWRITE if self.replaces else CommitKind.APPEND
            committed = transaction.committer.commit(
                CommitRequest(self.messages, kind=kind, allow_empty=True)
            )
            assert committed is not None  # allow_empty
            snapshot = committed
            transaction.after_commit((), compact=False)
        updated, deleted, inserted = self.counts
        return MergeResult(snapshot, updated + deleted + inserted, updated, deleted, inserted)


@dataclass(frozen=True, slots=True)
class _Context:
    """What every step of one merge reads: the table schema, the source conformed to
    its types, and the clauses' filters parsed."""

    schema: TableSchema
    arrow: pa.Schema
    source: pa.Table
    on: tuple[str, ...]
    clauses: tuple[Clause, ...]
    conditions: tuple[tuple[P.Dnf | None, P.Dnf | None], ...]


def prepare(builder: MergeBuilder) -> PreparedMerge:
    """Read what the merge matches in the latest snapshot and write its files."""
    transaction = builder.transaction
    store = transaction.store
    if not builder.clauses:
        raise InvalidArgumentError(
            "merge needs a clause: when_matched_update, when_matched_delete or "
            "when_not_matched_insert"
        )
    transaction.validate()
    latest = store.snapshots.latest()
    schema = read_schema(store, latest, latest=True)
    context = _context(builder, schema)
    if store.is_primary_key:
        _check_primary_key(store, context)
        return _merge_keyed(transaction, latest, context)
    if DVS.enabled(store.schema.options):
        raise UnsupportedFeatureError(
            "merge on an append table with deletion vectors is not implemented; "
            "unset 'deletion-vectors.enabled' or use overwrite",
            feature="deletion-vectors.enabled",
        )
    return _merge_files(transaction, latest, context)


# --- validation --------------------------------------------------------------------------------


def _context(builder: MergeBuilder, schema: TableSchema) -> _Context:
    arrow = schema.arrow_schema()
    on = builder.on
    if not on or not all(isinstance(c, str) for c in on):
        raise InvalidArgumentError(f"merge: on= takes a list of column names, not {on!r}")
    if len(set(on)) != len(on):
        raise InvalidArgumentError(f"merge: on= names a column twice: {list(on)}")
    source = _source_table(builder.source, arrow)
    for column in on:
        if arrow.get_field_index(column) < 0 or source.schema.get_field_index(column) < 0:
            raise InvalidArgumentError(
                f"merge: on column {column!r} must be in the table {arrow.names} and in "
                f"the source {source.column_names}"
            )
    target_types = {f.name: f.type for f in schema.fields}
    source_types = _shoal_types(source.schema)
    conditions = []
    fixed = set(on) | set(schema.primary_keys)
    for clause in builder.clauses:
        if clause.action == "insert":
            _check_values(clause, arrow, source, set())
        elif clause.action == "update":
            _check_values(clause, arrow, source, fixed | set(schema.partition_keys))
        target = None
        if clause.action != "insert":
            target = _parse(clause.condition, target_types, "condition (target columns)")
        conditions.append(
            (target, _parse(clause.source_condition, source_types, "condition (source columns)"))
        )
    return _Context(schema, arrow, source, on, builder.clauses, tuple(conditions))


def _source_table(raw: Any, arrow: pa.Schema) -> pa.Table:
    """The source as one table, its columns named like the table's cast exactly to
    their types (nullable: a NOT NULL column is checked when rows are written)."""
    data = to_batches(raw)
    if not isinstance(data, pa.Table):
        data = pa.Table.from_batches(list(data), schema=data.schema)
    if len(set(data.column_names)) != data.num_columns:
        raise SchemaMismatchError(f"merge: the source names a column twice: {data.column_names}")
    fields = [
        arrow.field(f.name).with_nullable(True) if arrow.get_field_index(f.name) >= 0 else f
        for f in data.schema
    ]
    return conform(data, pa.schema(fields))


def _shoal_types(schema: pa.Schema) -> dict[str, T.DataType]:
    types = {}
    for field in schema:
        try:
            types[field.name] = T.from_arrow(field.type, True, [0])
        except SchemaMismatchError:  # a source column of a type no filter can name
            continue
    return types


def _parse(raw: Any, types: dict[str, T.DataType], what: str) -> P.Dnf | None:
    if raw is None:
        return None
    dnf = P.parse_filter(raw, types)
    if dnf is None:
        raise InvalidFilterError(f"merge: an empty {what}; leave it out to match every row")
    return dnf


def _check_values(clause: Clause, arrow: pa.Schema, source: pa.Table, fixed: set[str]) -> None:
    name = "set" if clause.action == "update" else "values"
    if clause.values is None:
        missing = [c for c in arrow.names if source.schema.get_field_index(c) < 0]
        if missing:
            raise InvalidArgumentError(
                f"merge: {name}=None takes every column from the source, which lacks "
                f"{missing}; name the columns with {name}={{column: value}}"
            )
        return
    for column, value in clause.values.items():
        if not isinstance(column, str) or arrow.get_field_index(column) < 0:
            raise InvalidArgumentError(
                f"merge: {name} names {column!r}, not a column of the table {arrow.names}"
            )
        if column in fixed:
            raise InvalidArgumentError(
                f"merge: an update cannot set the key or partition column {column!r}; "
                "delete the rows and insert them with the new value"
            )
        if isinstance(value, str) and source.schema.get_field_index(value) < 0:
            raise InvalidArgumentError(
                f"merge: {name}[{column!r}] = {value!r} names no source column "
                f"{source.column_names}; a text literal is pa.scalar({value!r})"
            )


def _check_primary_key(store: Any, context: _Context) -> None:
    schema = context.schema
    keys, partitions = set(schema.primary_keys), set(schema.partition_keys)
    if set(context.on) not in (keys, keys | partitions):
        raise InvalidArgumentError(
            f"merge on the primary-key table {store.uri} matches rows by key: on= must be "
            f"the primary key {list(schema.primary_keys)} (with the partition keys "
            f"{list(schema.partition_keys)} if you like), not {list(context.on)}; a key "
            "identifies one row, any other column may match several"
        )
    if store.options.get(O.ROWKIND_FIELD):
        _check_engine(store, WHAT, {})
    actions = {c.action for c in context.clauses}
    if "delete" in actions:
        _check_engine(store, WHAT, None)
    if "update" in actions:
        _check_engine(store, WHAT, {})


# --- matching ----------------------------------------------------------------------------------


def _key_filter(context: _Context) -> P.Dnf | None:
    """Terms bounding the source's keys (listed partition values, else a key column's
    range), to prune partitions and files; None when nothing bounds them."""
    source = context.source
    partitions = set(context.schema.partition_keys)
    terms: list[tuple[str, str, Any]] = []
    for column in context.on:
        values = source.column(column).drop_null()
        if len(values) == 0:
            continue
        if column in partitions:
            distinct = pc.unique(values)
            if len(distinct) <= _MAX_LISTED:
                terms.append((column, "in", distinct.to_pylist()))
                continue
        try:
            bounds = pc.min_max(values)
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
            continue
        terms += [(column, ">=", bounds["min"].as_py()), (column, "<=", bounds["max"].as_py())]
    if not terms:
        return None
    types = {f.name: f.type for f in context.schema.fields}
    try:
        return P.parse_filter(terms, types)
    except InvalidFilterError:  # a key type no filter takes: no pruning
        return None


@dataclass(frozen=True, slots=True)
class _SourceKeys:
    """The source's key columns and row numbers, rows with a null key left out (a null
    never equals anything, as in SQL); for a one-column key, also the values that more
    than one source row holds."""

    keys: pa.Table
    repeated: pa.Array | None


def _source_keys(context: _Context) -> _SourceKeys:
    source = context.source
    keys = source.select(list(context.on)).append_column(
        _SOURCE_ROW, pa.array(np.arange(source.num_rows, dtype=np.int64))
    )
    valid = None
    for column in context.on:
        ok = pc.is_valid(keys.column(column))
        valid = ok if valid is None else pc.and_(valid, ok)
    keys = keys.filter(valid)
    repeated = None
    if len(context.on) == 1:
        try:
            counts = pc.value_counts(keys.column(0))
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return _SourceKeys(keys, None)
        more = pc.greater(counts.field("counts"), 1)
        repeated = pc.filter(counts.field("values"), more)
    return _SourceKeys(keys, repeated)


def _pairs(
    target: pa.Table, source: _SourceKeys, on: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(target row, source row) of every match: a hash lookup of a one-column key, a
    hash join of several."""
    keys = source.keys
    if target.num_rows == 0 or keys.num_rows == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    if source.repeated is not None:
        column = target.column(on[0])
        try:
            found = pc.index_in(column, value_set=keys.column(0).combine_chunks())
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass
        else:
            hit = np.asarray(pc.is_valid(found).to_numpy(zero_copy_only=False), dtype=bool)
            rows = np.flatnonzero(hit)
            if (
                len(source.repeated)
                and pc.any(pc.is_in(column.take(pa.array(rows)), value_set=source.repeated)).as_py()
            ):
                raise _duplicate(on)
            positions = pc.drop_null(found).to_numpy()
            sources = keys.column(_SOURCE_ROW).combine_chunks().to_numpy()[positions]
            return rows.astype(np.int64), sources
    left = target.select(list(on)).append_column(
        _TARGET_ROW, pa.array(np.arange(target.num_rows, dtype=np.int64))
    )
    try:
        joined = left.join(keys, keys=list(on), join_type="inner")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise UnsupportedFeatureError(
            f"merge cannot match rows by {list(on)}: {exc}", feature="merge on"
        ) from None
    rows = joined.column(_TARGET_ROW).to_numpy()
    sources = joined.column(_SOURCE_ROW).to_numpy()
    if len(np.unique(rows)) != len(rows):
        raise _duplicate(on)
    return rows, sources


def _duplicate(on: Sequence[str]) -> InvalidArgumentError:
    return InvalidArgumentError(
        "merge: multiple source rows matched the same target row; make the source's "
        f"{list(on)} unique (nothing was written)"
    )


def _mask(table: pa.Table, dnf: P.Dnf | None) -> np.ndarray:
    if dnf is None:
        return np.ones(table.num_rows, dtype=bool)
    projected = ds.dataset(table).to_table(columns={"m": P.to_expression(dnf)})
    column = pc.fill_null(projected.column("m"), False)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=bool)


def _choose(
    context: _Context,
    actions: set[str],
    target: pa.Table | None,
    source: pa.Table,
) -> np.ndarray:
    """Per row, the index of the first clause of ``actions`` whose conditions hold on
    the row (``target`` and ``source`` rows aligned), else -1."""
    choice = np.full(source.num_rows, -1, dtype=np.int64)
    for index, clause in enumerate(context.clauses):
        if clause.action not in actions:
            continue
        on_target, on_source = context.conditions[index]
        free = choice < 0
        if not free.any():
            break
        holds = _mask(source, on_source)
        if target is not None:
            holds &= _mask(target, on_target)
        choice[free & holds] = index
    return choice


def _condition_columns(context: _Context) -> list[str]:
    used = set(context.on)
    for target, _ in context.conditions:
        used |= P.columns_of(target)
    return [name for name in context.arrow.names if name in used]


# --- values ------------------------------------------------------------------------------------


def _value_column(context: _Context, field: pa.Field, spec: Any, rows: pa.Table) -> pa.Array:
    """The values ``spec`` gives column ``field`` for the source ``rows``."""
    if isinstance(spec, str):
        column = rows.column(spec)
    elif isinstance(spec, pc.Expression):
        try:
            column = ds.dataset(rows).to_table(columns={"v": spec}).column("v")
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise InvalidArgumentError(
                f"merge: the expression for {field.name!r} does not evaluate over the "
                f"source columns: {exc}"
            ) from None
    else:
        scalar = _exact_scalar(field, spec, WHAT)
        return pa.repeat(scalar, rows.num_rows)
    cast = conform(pa.table({field.name: column}), pa.schema([field.with_nullable(True)]))
    return cast.column(0).combine_chunks()


def _new_rows(
    context: _Context, clause: Clause, target: pa.Table | None, source: pa.Table
) -> pa.Table:
    """The rows ``clause`` writes: for an update, ``target`` rows (or, with set=None,
    the ``source`` rows) with the set columns; for an insert, from ``source``."""
    arrow = context.arrow
    if clause.values is None:
        return source.select(arrow.names)
    columns = []
    for field in arrow:
        if field.name in clause.values:
            columns.append(_value_column(context, field, clause.values[field.name], source))
        elif target is not None:
            columns.append(target.column(field.name))
        else:
            columns.append(pa.nulls(source.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in arrow]))


def _inserts(context: _Context, matched: np.ndarray) -> tuple[pa.Table | None, int]:
    """The rows the insert clauses write for the source rows not ``matched``, in the
    source's order (on a primary-key table the last row of a key wins, as in a write)."""
    if not any(c.action == "insert" for c in context.clauses):
        return None, 0
    rows = context.source.filter(pa.array(~matched))
    choice = _choose(context, {"insert"}, None, rows)
    parts, positions = [], []
    schema = pa.schema([f.with_nullable(True) for f in context.arrow])
    for index in np.unique(choice[choice >= 0]).tolist():
        chosen = choice == index
        new = _new_rows(context, context.clauses[index], None, rows.filter(pa.array(chosen)))
        parts.append(new.cast(schema))
        positions.append(np.flatnonzero(chosen))
    if not parts:
        return None, 0
    order = np.argsort(np.concatenate(positions), kind="stable")
    inserted = pa.concat_tables(parts).take(pa.array(order))
    return inserted, inserted.num_rows


# --- append tables -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _FileMatch:
    entry: Any
    splits: Any
    rows: np.ndarray
    sources: np.ndarray
    choice: np.ndarray


def _merge_files(
    transaction: Transaction, latest: Snapshot | None, context: _Context
) -> PreparedMerge:
    store = transaction.store
    schema = context.schema
    entries = (
        [] if latest is None else live_entries(store, latest, _key_filter(context), target=schema)
    )
    keys = _source_keys(context)
    columns = _condition_columns(context)

    def match(entry: Any) -> tuple[_FileMatch | None, np.ndarray]:
        assert latest is not None
        splits = make_splits(store, latest.id, [entry], schema=schema)
        target = read_table(store, splits, schema, columns, None)
        rows, sources = _pairs(target, keys, context.on)
        if not len(rows):
            return None, sources
        choice = _choose(
            context, {"update", "delete"}, target.take(rows), context.source.take(sources)
        )
        act = choice >= 0
        if not act.any():
            return None, sources
        return _FileMatch(entry, splits, rows[act], sources[act], choice[act]), sources

    # every file is matched before any is written: a refusal leaves nothing behind
    matched = np.zeros(context.source.num_rows, dtype=bool)
    found: list[_FileMatch] = []
    for file_match, sources in parallel_map(match, entries):
        matched[sources] = True
        if file_match is not None:
            found.append(file_match)
    inserts, inserted = _inserts(context, matched)
    # files rewritten side by side, one per core: Arrow encodes a Parquet file on one
    # thread, and each file is written into files of its own
    rewritten = bounded_map(lambda m: _rewrite(store, context, m), found, os.cpu_count() or 1)
    messages = [message for part in rewritten for message in part[0]]
    updated = sum(part[1] for part in rewritten)
    deleted = sum(part[2] for part in rewritten)
    if inserts is not None:
        writer = AppendWriter(store)
        writer.write(inserts)
        messages += writer.prepare_commit()
    return PreparedMerge(
        transaction, (updated, deleted, inserted), tuple(messages), replaces=bool(found)
    )


def _rewrite(
    store: Any, context: _Context, match: _FileMatch
) -> tuple[list[CommitMessage], int, int]:
    """One file's rows with the matched clauses applied, written as new files: the
    messages replacing the file, and how many rows were updated and deleted."""
    table = read_table(store, match.splits, context.schema, None, None)
    keep = np.ones(table.num_rows, dtype=bool)
    updated = deleted = 0
    for index in np.unique(match.choice).tolist():
        clause = context.clauses[index]
        chosen = match.choice == index
        rows = match.rows[chosen]
        if clause.action == "delete":
            keep[rows] = False
            deleted += len(rows)
            continue
        updated += len(rows)
        new = _new_rows(
            context, clause, table.take(rows), context.source.take(match.sources[chosen])
        )
        table = _scatter(table, rows, new, clause.values)
    entry = match.entry
    messages = [
        CommitMessage(
            entry.partition, entry.bucket, entry.total_buckets, deleted_files=(entry.file,)
        )
    ]
    rest = table.filter(pa.array(keep))
    if rest.num_rows:
        writer = AppendWriter(store)
        writer.write(rest)
        messages += writer.prepare_commit()
    return messages, updated, deleted


def _scatter(
    table: pa.Table, rows: np.ndarray, new: pa.Table, values: Mapping[str, Any] | None
) -> pa.Table:
    """``table`` with the set columns of ``rows`` taken from ``new``'s rows in order."""
    index = np.full(table.num_rows, -1, dtype=np.int64)
    index[rows] = np.arange(len(rows), dtype=np.int64)
    hit = index >= 0
    take = pa.array(index, mask=~hit)
    mask = pa.array(hit)
    names = table.column_names if values is None else list(values)
    for name in names:
        position = table.schema.get_field_index(name)
        column = table.column(position).combine_chunks()
        aligned = new.column(name).combine_chunks().take(take)
        table = table.set_column(
            position, table.schema.field(position), pc.if_else(mask, aligned, column)
        )
    return table


# --- primary-key tables ------------------------------------------------------------------------


def _merge_keyed(
    transaction: Transaction, latest: Snapshot | None, context: _Context
) -> PreparedMerge:
    store = transaction.store
    partial = any(c.action == "update" and c.values is not None for c in context.clauses)
    # with changelog-producer = input the changelog keeps a delete as written: the
    # whole old row, as Paimon's own DELETE writes it
    whole_deletes = store.options.get(O.CHANGELOG_PRODUCER) == "input" and any(
        c.action == "delete" for c in context.clauses
    )
    columns = None if partial or whole_deletes else _condition_columns(context)
    target = Scan(
        store, latest, columns, _key_filter(context), latest=True, schema=context.schema
    ).to_arrow()
    rows, sources = _pairs(target, _source_keys(context), context.on)
    matched = np.zeros(context.source.num_rows, dtype=bool)
    matched[sources] = True
    source = context.source
    choice = _choose(context, {"update", "delete"}, target.take(rows), source.take(sources))
    inserts, inserted = _inserts(context, matched)
    keyed = KeyValueWriter(store, store.merge_settings)
    updated = deleted = 0
    for index in np.unique(choice[choice >= 0]).tolist():
        clause = context.clauses[index]
        chosen = choice == index
        if clause.action == "delete":
            keyed.write(target.take(rows[chosen]), kv.DELETE)
            deleted += int(chosen.sum())
            continue
        new = _new_rows(context, clause, target.take(rows[chosen]), source.take(sources[chosen]))
        _check_partial_nulls(store, new, context, clause.values)
        keyed.write(new)
        updated += new.num_rows
    if inserts is not None:
        keyed.write(inserts)
    return PreparedMerge(transaction, (updated, deleted, inserted), keyed=keyed)


def _check_partial_nulls(
    store: Any, new: pa.Table, context: _Context, values: Mapping[str, Any] | None
) -> None:
    """A partial-update table keeps a column's last non-null value: an update to null
    would not take effect, so it is refused."""
    if store.merge_settings.engine != PARTIAL_UPDATE:
        return
    keys = set(context.schema.primary_keys)
    names = new.column_names if values is None else list(values)
    nulls = [c for c in names if c not in keys and new.column(c).null_count]
    if nulls:
        raise UnsupportedFeatureError(
            f"merge on {store.uri}: a partial-update table keeps a column's last non-null "
            f"value, so the update to null of {nulls} would not take effect",
            feature="merge-engine=partial-update",
        )
