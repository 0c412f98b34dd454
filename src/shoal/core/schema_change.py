"""Schema changes, applied to a table schema as Paimon's ``SchemaManager`` applies them.

A change is a value (``AddColumn``, ``RenameColumn``, ``DropColumn``,
``UpdateColumnType``, ``SetOption``, ``RemoveOption``, ``UpdateComment``);
:func:`apply_changes` turns a schema and a list of changes into the next schema
version, or raises before anything is written. The rules are Paimon's:

- a column is named by its path: ``("a",)`` at the top, ``("a", "b")`` for field ``b`` of
  the ROW column ``a``; ``element`` and ``value`` step into an ARRAY's elements and a
  MAP's values on the way to a ROW;
- a new column (and each field nested in it) takes the next field id above
  ``highestFieldId``; ids of dropped columns are never given out again; a new column is
  nullable, last among its siblings unless ``after`` names one of them or ``first`` is
  set;
- partition columns cannot be renamed, dropped or retyped, nor can primary-key columns
  (shoal does not rename key columns, which Paimon allows from 1.1); the last field of
  a table or a ROW cannot be dropped;
- a type changes only where Paimon casts the old type to the new one
  (:func:`shoal.format.casts.can_cast`), keeping the column's nullability; on a table
  with data, only to types whose old values shoal reads exactly;
- once the table has a snapshot, the options Paimon marks immutable cannot change, and
  ``bucket`` cannot change (shoal does not rescale buckets) nor be removed;
- renaming a column renames it in the options that name it (``bucket-key``,
  ``sequence.field``, ``compaction.event-time.field``), and every option that names
  columns must still name columns of the new schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from shoal import features
from shoal import options as O
from shoal.core import merge_engine
from shoal.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from shoal.format import casts
from shoal.format import types as T
from shoal.format.schema import TableSchema

Path = tuple[str, ...]

# Paimon's immutable table options (CoreOptions' @Immutable, 0.9 to 1.x): once a table
# has a snapshot, changing one would make its files mean something else.
IMMUTABLE_OPTIONS = frozenset(
    {
        "type",
        "bucket-key",
        "bucket-function.type",
        "merge-engine",
        "ignore-delete",
        "sequence.field",
        "sequence.field.sort-order",
        "sequence.snapshot-ordering",
        "rowkind.field",
        "aggregation.remove-record-on-delete",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "primary-key",
        "primary-key.nullable",
        "partition",
        "dynamic-bucket.initial-buckets",
        "force-lookup",
        "row-tracking.enabled",
        "data-evolution.enabled",
        "data-file.path-directory",
        "index-file-in-data-file-dir",
        "blob-field",
        "blob-descriptor-field",
        "blob-view-field",
        "pk-clustering-override",
    }
)
# Keys that are parts of the schema or the table's place, never options to change.
_NEVER_OPTIONS = frozenset({"path", "primary-key", "partition", "type"})
# Names Paimon keeps for the columns of its data files (SystemColumns).
_SYSTEM_NAMES = frozenset({"_VALUE_COUNT", "_SEQUENCE_NUMBER", "_VALUE_KIND"})
_KEY_PREFIX = "_KEY_"
# Options whose value is a comma-separated list of column names; a rename follows them.
_COLUMN_OPTIONS = (O.BUCKET_KEY.key, O.SEQUENCE_FIELD.key, O.COMPACTION_EVENT_TIME_FIELD.key)
_CHECKED_COLUMN_OPTIONS = (*_COLUMN_OPTIONS, O.ROWKIND_FIELD.key)


def column_path(name: str | Sequence[str]) -> Path:
    """A column's path from ``"a.b"`` or ``["a", "b"]`` (a list for names holding dots).

    Raises:
        InvalidArgumentError: an empty name or path segment.
    """
    parts = tuple(name.split(".")) if isinstance(name, str) else tuple(name)
    if not parts or not all(isinstance(p, str) and p for p in parts):
        raise InvalidArgumentError(
            f"a column is named by a non-empty name, or 'a.b' for a nested field, not {name!r}"
        )
    return parts


def dotted(path: Path) -> str:
    return ".".join(path)


@dataclass(slots=True)
class Draft:
    """A schema being changed: what the changes edit before the next version is made."""

    base: TableSchema
    has_snapshots: bool
    fields: tuple[T.DataField, ...]
    highest_field_id: int
    options: dict[str, str]
    comment: str | None
    changed_options: set[str] = field(default_factory=set)

    @staticmethod
    def of(schema: TableSchema, has_snapshots: bool) -> Draft:
        return Draft(
            schema,
            has_snapshots,
            schema.fields,
            schema.highest_field_id,
            dict(schema.options),
            schema.comment,
        )

    def next_id(self) -> int:
        self.highest_field_id += 1
        return self.highest_field_id

    def is_key(self, path: Path) -> str | None:
        """``partition`` or ``primary-key`` when ``path`` is such a column."""
        if len(path) > 1:
            return None
        if path[0] in self.base.partition_keys:
            return "partition"
        if path[0] in self.base.primary_keys:
            return "primary-key"
        return None


# --- the changes -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AddColumn:
    path: Path
    type: T.DataType
    comment: str | None = None
    after: str | None = None
    first: bool = False

    def apply(self, draft: Draft) -> None:
        if not self.type.nullable:
            raise InvalidArgumentError(
                f"column {dotted(self.path)!r}: a new column is nullable (rows written "
                "before it hold no value); leave out NOT NULL"
            )
        if self.after is not None and self.first:
            raise InvalidArgumentError("give at most one of after and first")
        _check_new_name(self.path[-1], self.path)
        column_id = draft.next_id()
        counter = [column_id + 1]
        new_type = _with_new_ids(self.type, counter)
        draft.highest_field_id = counter[0] - 1
        new_field = T.DataField(column_id, self.path[-1], new_type, self.comment)

        def insert(siblings: list[T.DataField]) -> None:
            _require_absent(siblings, self.path[-1], self.path)
            siblings.insert(self._position(siblings), new_field)

        draft.fields = _edit(draft.fields, self.path, insert)

    def _position(self, siblings: list[T.DataField]) -> int:
        if self.first:
            return 0
        if self.after is None:
            return len(siblings)
        names = [f.name for f in siblings]
        if self.after not in names:
            raise InvalidArgumentError(
                f"column {dotted(self.path)!r} is to come after {self.after!r}, which is not "
                f"among its siblings {names}"
            )
        return names.index(self.after) + 1


@dataclass(frozen=True, slots=True)
class RenameColumn:
    path: Path
    new_name: str

    def apply(self, draft: Draft) -> None:
        key = draft.is_key(self.path)
        if key == "partition":
            raise InvalidArgumentError(f"cannot rename partition column {self.path[0]!r}")
        if key == "primary-key":
            raise UnsupportedFeatureError(
                f"cannot rename primary-key column {self.path[0]!r}: shoal does not rename "
                "key columns (data files name them)",
                feature="renaming a primary-key column",
            )
        if not isinstance(self.new_name, str) or not self.new_name:
            raise InvalidArgumentError("a column's new name must be a non-empty string")
        _check_new_name(self.new_name, (*self.path[:-1], self.new_name))

        def rename(siblings: list[T.DataField]) -> None:
            index = _index_of(siblings, self.path)
            _require_absent(siblings, self.new_name, (*self.path[:-1], self.new_name))
            siblings[index] = replace(siblings[index], name=self.new_name)

        draft.fields = _edit(draft.fields, self.path, rename)
        if len(self.path) == 1:
            _rename_in_options(draft.options, self.path[0], self.new_name)


@dataclass(frozen=True, slots=True)
class DropColumn:
    path: Path

    def apply(self, draft: Draft) -> None:
        key = draft.is_key(self.path)
        if key is not None:
            raise InvalidArgumentError(
                f"cannot drop {key} column {self.path[0]!r}: the table's "
                f"{'partitions' if key == 'partition' else 'rows'} are keyed by it"
            )

        def drop(siblings: list[T.DataField]) -> None:
            del siblings[_index_of(siblings, self.path)]
            if not siblings:
                where = "the table" if len(self.path) == 1 else repr(dotted(self.path[:-1]))
                raise InvalidArgumentError(
                    f"cannot drop {dotted(self.path)!r}: it is the last column of {where}"
                )

        draft.fields = _edit(draft.fields, self.path, drop)


@dataclass(frozen=True, slots=True)
class UpdateColumnType:
    path: Path
    type: T.DataType

    def apply(self, draft: Draft) -> None:
        key = draft.is_key(self.path)
        if key is not None:
            raise InvalidArgumentError(f"cannot change the type of {key} column {self.path[0]!r}")

        def retype(siblings: list[T.DataField]) -> None:
            index = _index_of(siblings, self.path)
            old = siblings[index].type
            siblings[index] = replace(siblings[index], type=self._new_type(old, draft))

        draft.fields = _edit(draft.fields, self.path, retype)

    def _new_type(self, old: T.DataType, draft: Draft) -> T.DataType:
        name = dotted(self.path)
        if not isinstance(old, T.AtomicType) or not isinstance(self.type, T.AtomicType):
            raise UnsupportedFeatureError(
                f"column {name!r}: shoal changes the types of scalar columns; change the "
                "fields of a nested column one by one ('a.b')",
                feature="changing a nested type",
            )
        new = replace(self.type, nullable=old.nullable)
        if not casts.can_cast(old, new):
            raise SchemaMismatchError(
                f"column {name!r} cannot change from {casts.describe(old, new)}: Paimon does "
                "not cast it without losing values"
            )
        if draft.has_snapshots and not casts.reads_exactly(old, new):
            raise UnsupportedFeatureError(
                f"column {name!r} cannot change from {casts.describe(old, new)} on a table "
                "with data: shoal would not read the rows written before the change exactly",
                feature="column type change",
            )
        return new


@dataclass(frozen=True, slots=True)
class SetOption:
    key: str
    value: str

    def apply(self, draft: Draft) -> None:
        old = draft.options.get(self.key)
        if old == self.value:
            return
        _check_option_change(draft, self.key)
        if self.key == O.DELETION_VECTORS_ENABLED.key:
            _check_vector_mode(draft, self.value)
        features.check_option_keys({self.key: self.value})
        draft.options[self.key] = self.value
        draft.changed_options.add(self.key)


@dataclass(frozen=True, slots=True)
class RemoveOption:
    key: str

    def apply(self, draft: Draft) -> None:
        _check_option_change(draft, self.key)
        if self.key == O.DELETION_VECTORS_ENABLED.key:
            _check_vector_mode(draft, None)
        if draft.options.pop(self.key, None) is not None:
            draft.changed_options.add(self.key)


@dataclass(frozen=True, slots=True)
class UpdateComment:
    comment: str | None

    def apply(self, draft: Draft) -> None:
        draft.comment = self.comment


SchemaChange = (
    AddColumn
    | RenameColumn
    | DropColumn
    | UpdateColumnType
    | SetOption
    | RemoveOption
    | UpdateComment
)


# --- applying them -----------------------------------------------------------------------------


def apply_changes(
    schema: TableSchema,
    changes: Sequence[SchemaChange],
    *,
    has_snapshots: bool,
    time_millis: int,
    check: Callable[[TableSchema], None] | None = None,
) -> TableSchema:
    """The schema version after ``schema`` that ``changes`` make, in order.

    ``has_snapshots``: whether the table holds a snapshot (immutable options are then
    refused); ``check``: a further check of the result (raising a ShoalError).

    Raises:
        InvalidArgumentError: a column that is not there, a name that is taken, a key
            column dropped or renamed, the last column dropped.
        SchemaMismatchError: a type change Paimon does not allow.
        InvalidOptionError, UnknownOptionError, UnsupportedFeatureError: an option that
            cannot be set, or cannot change any more.
    """
    draft = Draft.of(schema, has_snapshots)
    for change in changes:
        change.apply(draft)
    new_schema = TableSchema(
        id=schema.id + 1,
        fields=draft.fields,
        highest_field_id=draft.highest_field_id,
        partition_keys=schema.partition_keys,
        primary_keys=schema.primary_keys,
        options=draft.options,
        comment=draft.comment,
        time_millis=time_millis,
    )
    _validate(new_schema, draft.changed_options)
    if check is not None:
        check(new_schema)
    return new_schema


def columns_to_add(schema: TableSchema, data: Sequence[tuple[str, T.DataType]]) -> list[AddColumn]:
    """The columns of ``data`` (name, type) that ``schema`` lacks, in their order, as
    nullable columns added last."""
    present = set(schema.field_names)
    return [
        AddColumn((name,), _as_nullable(data_type))
        for name, data_type in data
        if name not in present
    ]


def _as_nullable(t: T.DataType) -> T.DataType:
    return t if t.nullable else replace(t, nullable=True)


# --- paths -------------------------------------------------------------------------------------


def _edit(
    fields: tuple[T.DataField, ...],
    path: Path,
    edit: Callable[[list[T.DataField]], None],
    walked: Path = (),
) -> tuple[T.DataField, ...]:
    """``fields`` with ``edit`` applied to the siblings of the field at ``path``."""
    siblings = list(fields)
    if len(path) == 1:
        edit(siblings)
        return tuple(siblings)
    index = _index_of(siblings, (*walked, path[0]))
    parent = siblings[index]
    inner = _edit_inside(parent.type, path[1:], edit, (*walked, path[0]))
    siblings[index] = replace(parent, type=inner)
    return tuple(siblings)


def _edit_inside(
    t: T.DataType, rest: Path, edit: Callable[[list[T.DataField]], None], walked: Path
) -> T.DataType:
    if isinstance(t, T.RowType):
        return replace(t, fields=_edit(t.fields, rest, edit, walked))
    if isinstance(t, T.ArrayType) and rest[0] == "element" and len(rest) > 1:
        return replace(t, element=_edit_inside(t.element, rest[1:], edit, (*walked, "element")))
    if isinstance(t, T.MapType) and rest[0] == "value" and len(rest) > 1:
        return replace(t, value=_edit_inside(t.value, rest[1:], edit, (*walked, "value")))
    raise InvalidArgumentError(
        f"{dotted(walked)!r} has no field {rest[0]!r}: only ROW columns have fields (reach "
        "a ROW inside an ARRAY by 'element', inside a MAP by 'value')"
    )


def _index_of(siblings: list[T.DataField], path: Path) -> int:
    for i, f in enumerate(siblings):
        if f.name == path[-1]:
            return i
    names = [f.name for f in siblings]
    where = "the table" if len(path) == 1 else repr(dotted(path[:-1]))
    raise InvalidArgumentError(f"column {dotted(path)!r} does not exist; {where} has {names}")


def _require_absent(siblings: list[T.DataField], name: str, path: Path) -> None:
    if any(f.name == name for f in siblings):
        raise InvalidArgumentError(f"column {dotted(path)!r} exists already")


def _check_new_name(name: str, path: Path) -> None:
    if len(path) == 1 and (name in _SYSTEM_NAMES or name.startswith(_KEY_PREFIX)):
        raise InvalidArgumentError(
            f"column name {name!r} is kept for Paimon's data files (the names "
            f"{sorted(_SYSTEM_NAMES)} and those starting with {_KEY_PREFIX!r})"
        )


def _with_new_ids(t: T.DataType, counter: list[int]) -> T.DataType:
    """``t`` with its nested fields numbered from ``counter`` on, depth first."""
    if isinstance(t, T.RowType):
        fields = []
        for f in t.fields:
            field_id = counter[0]
            counter[0] += 1
            fields.append(replace(f, id=field_id, type=_with_new_ids(f.type, counter)))
        return replace(t, fields=tuple(fields))
    if isinstance(t, T.ArrayType):
        return replace(t, element=_with_new_ids(t.element, counter))
    if isinstance(t, T.MapType):
        key = _with_new_ids(t.key, counter)
        return replace(t, key=key, value=_with_new_ids(t.value, counter))
    return t


# --- options -----------------------------------------------------------------------------------


def _check_option_change(draft: Draft, key: str) -> None:
    if key in _NEVER_OPTIONS:
        raise InvalidOptionError(
            key, draft.options.get(key), "it is part of the table's definition, not an option"
        )
    if not draft.has_snapshots:
        return
    if key in IMMUTABLE_OPTIONS:
        raise InvalidOptionError(
            key,
            draft.options.get(key),
            "it cannot change once the table has data (Paimon keeps it as it was created)",
        )
    if key == O.BUCKET.key:
        raise UnsupportedFeatureError(
            "the bucket count of a table with data cannot change in shoal: rows already "
            "written would sit in the wrong buckets; rewrite the data into a new table "
            "with the bucket count wanted",
            feature="rescaling buckets",
        )


def _check_vector_mode(draft: Draft, value: str | None) -> None:
    """Paimon's rule for ``deletion-vectors.enabled`` on a table with data: it changes
    only with ``deletion-vectors.modifiable``, since a table compacted without vectors
    may hold a key in two levels, which a read with vectors returns twice."""
    if not draft.has_snapshots:
        return
    key = O.DELETION_VECTORS_ENABLED.key
    old = O.DELETION_VECTORS_ENABLED.get(draft.options)
    new = O.DELETION_VECTORS_ENABLED.get({} if value is None else {key: value})
    if old == new or O.DELETION_VECTORS_MODIFIABLE.get(draft.options):
        return
    raise InvalidOptionError(
        key,
        value if value is not None else "(default)",
        f"deletion vectors cannot be switched {'on' if new else 'off'} on a table with data: "
        "rows would show twice unless the table is fully compacted first. Compact it "
        f"fully, then set '{O.DELETION_VECTORS_MODIFIABLE.key}' = 'true' before this change",
    )


def _rename_in_options(options: dict[str, str], old: str, new: str) -> None:
    for key in _COLUMN_OPTIONS:
        value = options.get(key)
        if value:
            names = [n.strip() for n in value.split(",")]
            options[key] = ",".join(new if n == old else n for n in names)


def _validate(schema: TableSchema, changed_options: set[str]) -> None:
    """The new schema as a whole: its changed options implemented and valid together,
    and every option that names columns naming columns of it."""
    options = dict(schema.options)
    primary_key = bool(schema.primary_keys)
    for feature, value in features.unimplemented(options, primary_key=primary_key):
        if feature.key in changed_options:
            raise UnsupportedFeatureError(
                f"{feature.key} = {value!r} asks for {feature.what(value)}, which shoal does "
                "not implement",
                feature=feature.key,
            )
    O.validate(options)
    if O.CONSUMER_MODE.key in changed_options:
        features.require_consumer_mode(options)
    check_definition(schema.field_names, schema.partition_keys, schema.primary_keys, options)
    _check_column_options(schema, options)
    merge_engine.check_new_field_options(schema, options, changed_options)


def _check_column_options(schema: TableSchema, options: Mapping[str, str]) -> None:
    names = set(schema.field_names)
    for key in _CHECKED_COLUMN_OPTIONS:
        value = options.get(key) or ""
        missing = [n.strip() for n in value.split(",") if n.strip() and n.strip() not in names]
        if missing:
            raise InvalidOptionError(
                key,
                value,
                f"it names {missing}, which the new schema does not have; the option must "
                "change first (or the column stay)",
            )


def check_definition(
    names: Sequence[str],
    partition_keys: Sequence[str],
    primary_keys: Sequence[str],
    options: Mapping[str, str],
) -> None:
    """The keys and bucket options of a table with columns ``names``, as a table is
    created and as every schema change leaves it.

    Raises:
        SchemaMismatchError: a primary key that repeats a column or leaves out a
            partition column.
        UnsupportedFeatureError: a dynamic-bucket table whose primary key leaves out a
            partition key (Paimon's cross-partition upsert).
        InvalidOptionError: a bucket key, sequence field or row-kind field that does not
            fit the table.
    """
    if primary_keys:
        _check_primary_key_table(names, partition_keys, primary_keys, options)
    elif O.BUCKET.get(options) > 0 and not O.BUCKET_KEY.get(options):
        raise InvalidOptionError(
            "bucket-key",
            None,
            "an append table with fixed buckets needs 'bucket-key' (the columns to hash)",
        )
    for key in [k.strip() for k in O.BUCKET_KEY.get(options).split(",") if k.strip()]:
        if key not in names:
            raise InvalidOptionError(
                "bucket-key", options.get("bucket-key"), f"column {key!r} is not in the schema"
            )
        if key in partition_keys:
            raise InvalidOptionError(
                "bucket-key",
                options.get("bucket-key"),
                f"partition column {key!r} cannot be a bucket key",
            )


def _check_primary_key_table(
    names: Sequence[str],
    partition_keys: Sequence[str],
    primary_keys: Sequence[str],
    options: Mapping[str, str],
) -> None:
    if len(set(primary_keys)) != len(primary_keys):
        raise SchemaMismatchError(f"primary key {list(primary_keys)} repeats a column")
    dynamic = O.BUCKET.get(options) < 1
    outside = [k for k in partition_keys if k not in primary_keys]
    if outside and dynamic:
        raise UnsupportedFeatureError(
            f"a primary key {list(primary_keys)} without the partition keys {outside} on a "
            "table with dynamic buckets makes Paimon's cross-partition upserts (a key moves "
            "between partitions), which shoal does not implement; add the partition keys "
            "to the primary key",
            feature="cross-partition upsert",
        )
    if outside:
        raise SchemaMismatchError(
            f"partition keys {outside} must be part of the primary key {list(primary_keys)}, "
            "so that each key lives in one partition"
        )
    if dynamic and O.BUCKET_KEY.get(options):
        raise InvalidOptionError(
            "bucket-key",
            options.get("bucket-key"),
            "a primary-key table with dynamic buckets (bucket = -1) hashes its whole key; "
            "give a bucket count to choose a bucket key",
        )
    trimmed = [k for k in primary_keys if k not in partition_keys] or list(primary_keys)
    for key in [k.strip() for k in O.BUCKET_KEY.get(options).split(",") if k.strip()]:
        if key not in trimmed:
            raise InvalidOptionError(
                "bucket-key",
                options.get("bucket-key"),
                f"the bucket key of a primary-key table must be part of the key {trimmed}",
            )
    for option in (O.SEQUENCE_FIELD, O.ROWKIND_FIELD):
        column = option.get(options)
        if column and column not in names:
            raise InvalidOptionError(option.key, column, "no such column")
