"""A primary-key table's merge engine read from its options: the engine, and for
``aggregation`` each column's aggregate function.

Every option of an engine is implemented as Paimon defines it or refused when the table
opens: an aggregate function shoal does not implement (the functions of later Paimon
releases), values whose Java hash order shoal does not reproduce, the
sequence-group layouts and functions inside sequence groups listed where they are
refused, per-column options shoal does not read. Paimon's function names and type rules
are those of its ``FieldAggregatorFactory`` implementations (0.9 and 1.0 know the same
set).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import TypeVar

from shoal import options as O
from shoal.core.kv import (
    AGGREGATION,
    FIRST_ROW,
    PARTIAL_UPDATE,
    FieldFunction,
    MergeSettings,
    SequenceGroup,
)
from shoal.errors import InvalidOptionError, UnsupportedFeatureError
from shoal.format import types as T
from shoal.format.schema import TableSchema

V = TypeVar("V")


def for_field(option: O.Option[V], field: str) -> O.Option[V]:
    """A per-column option (key with ``<field>``) for the column ``field``."""
    return replace(option, key=option.key.replace(O.FIELD, field))


_INTEGERS = {"TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT"}
_FLOATS = {"FLOAT", "DOUBLE"}
_ORDERED = (
    _INTEGERS
    | _FLOATS
    | {"DECIMAL", "STRING", "VARCHAR", "CHAR", "BOOLEAN", "DATE", "TIME"}
    | {"TIMESTAMP", "TIMESTAMP_LTZ", "TIMESTAMP WITH LOCAL TIME ZONE"}
)

_BINARY = {"VARBINARY", "BYTES"}
# Aggregate functions shoal implements, with the column types each accepts (None: any;
# the collection functions' types are checked in _collection).
IMPLEMENTED: dict[str, set[str] | None] = {
    "sum": _INTEGERS | _FLOATS | {"DECIMAL"},
    "product": _INTEGERS | _FLOATS | {"DECIMAL"},
    "max": _ORDERED,
    "min": _ORDERED,
    "last_value": None,
    "last_non_null_value": None,
    "first_value": None,
    "first_non_null_value": None,
    "listagg": {"STRING", "VARCHAR"},
    "bool_and": {"BOOLEAN"},
    "bool_or": {"BOOLEAN"},
    "collect": {"ArrayType"},
    "merge_map": {"MapType"},
    "nested_update": {"ArrayType"},
    "hll_sketch": _BINARY,
    "theta_sketch": _BINARY,
    "rbm32": _BINARY,
    "rbm64": _BINARY,
    "primary-key": None,
}
# Functions that accept retractions (-U, -D rows); the others need ignore-retract.
RETRACTABLE = {
    "sum",
    "product",
    "last_value",
    "last_non_null_value",
    "collect",
    "merge_map",
    "nested_update",
    "primary-key",
}
# Paimon's functions that shoal does not implement (refused), with the reason.
UNIMPLEMENTED = {
    "merge_map_with_keytime": "it exists only in Paimon releases after 1.0",
    "nested_partial_update": "it exists only in Paimon releases after 1.0",
}
_ALIASES = {"first_not_null_value": "first_non_null_value"}
# Per-column keys that shoal reads; any other fields.<f>.<x> on an aggregation or
# partial-update table is one of Paimon's that shoal does not implement.
_READ_SUFFIXES = (
    ".aggregate-function",
    ".ignore-retract",
    ".list-agg-delimiter",
    ".sequence-group",
    ".distinct",
    ".nested-key",
)


def _root(t: T.DataType) -> str:
    return t.root if isinstance(t, T.AtomicType) else type(t).__name__


def _refuse(table: str, what: str, key: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"table {table!r} uses {what} ({key}), which shoal does not implement, so it "
        "cannot read or write the table without giving wrong results; read and write it "
        "with Paimon's own engines",
        feature=key,
    )


def check_new_field_options(
    schema: TableSchema, raw: Mapping[str, str], keys: Collection[str] | None = None
) -> None:
    """The per-column options (``fields.<f>.*``, ``fields.default-aggregate-function``)
    a user sets on a new table: only for the aggregation and partial-update engines of
    a primary-key table, and each naming a column of it (a table written by Paimon's
    engines may hold others, which they ignore, and so does shoal). ``keys``: only
    these (the options a change sets), default all.

    Raises:
        InvalidOptionError: an option nothing would read.
    """
    engine = O.MERGE_ENGINE.get(raw) if schema.primary_keys else "none (an append table)"
    names = set(schema.field_names)
    for key, value in raw.items():
        if keys is not None and key not in keys:
            continue
        found = O.field_option(key)
        if found is None and key != O.FIELDS_DEFAULT_AGGREGATE_FUNCTION.key:
            continue
        if engine not in (AGGREGATION, PARTIAL_UPDATE):
            raise InvalidOptionError(
                key,
                value,
                f"it applies to the aggregation and partial-update merge engines; this "
                f"table's is {engine}",
            )
        if found is not None and found[0].key == O.FIELDS_SEQUENCE_GROUP.key:
            if engine != PARTIAL_UPDATE:
                raise InvalidOptionError(
                    key, value, f"sequence groups are partial-update's; this table's is {engine}"
                )
            continue  # its columns are checked with the table's merge settings
        if found is not None and found[1] not in names:
            raise InvalidOptionError(key, value, f"column {found[1]!r} is not in the table")


def merge_settings(schema: TableSchema, raw: Mapping[str, str], table: str) -> MergeSettings:
    """The merge settings of a primary-key table (:func:`_merge_settings`), with
    Paimon's lookup merge when the table's compactions look keys up (``changelog-
    producer`` = ``lookup``, ``deletion-vectors.enabled``, or ``force-lookup``); the
    first-row engine keeps its own merge, as Paimon's does."""
    settings = _merge_settings(schema, raw, table)
    lookup = (
        O.CHANGELOG_PRODUCER.get(raw) == "lookup"
        or O.DELETION_VECTORS_ENABLED.get(raw)
        or raw.get("force-lookup", "").strip().lower() == "true"
    )
    if lookup and settings.engine != FIRST_ROW:
        return replace(settings, lookup=True)
    return settings


def _merge_settings(schema: TableSchema, raw: Mapping[str, str], table: str) -> MergeSettings:
    """The merge settings of a primary-key table with ``schema`` and options ``raw``.

    Raises:
        UnsupportedFeatureError: an engine option or aggregate function shoal does not
            implement.
        InvalidOptionError: a function Paimon does not know, or one applied to a column
            type it does not take.
    """
    engine = O.MERGE_ENGINE.get(raw)
    sequence_field = O.SEQUENCE_FIELD.get(raw) or None
    ignore_delete = O.IGNORE_DELETE.get(raw)
    if engine not in (AGGREGATION, PARTIAL_UPDATE):
        return MergeSettings(engine, sequence_field, ignore_delete)
    for key in raw:
        if not key.startswith("fields.") or key == O.FIELDS_DEFAULT_AGGREGATE_FUNCTION.key:
            continue
        if not key.endswith(_READ_SUFFIXES) or O.field_option(key) is None:
            raise _refuse(table, f"the per-column option {key!r}", key)
        found = O.field_option(key)
        if found is not None:
            for_field(found[0], found[1]).get(raw)  # a bad value raises InvalidOptionError
    if engine == PARTIAL_UPDATE:
        return _partial_update(schema, raw, table, sequence_field, ignore_delete)
    functions = tuple(
        (f.name, _function(f.name, f.type, schema, raw, sequence_field)) for f in schema.fields
    )
    remove = O.AGGREGATION_REMOVE_RECORD_ON_DELETE.get(raw)
    if remove:
        first = [n for n, f in functions if f.function.startswith("first_")]
        if first:
            raise _refuse(
                table,
                f"first_value or first_non_null_value (columns {first}) with "
                "aggregation.remove-record-on-delete",
                O.AGGREGATION_REMOVE_RECORD_ON_DELETE.key,
            )
    return MergeSettings(engine, sequence_field, ignore_delete, functions, remove)


# Aggregate functions whose fold shoal computes inside a partial-update sequence group
# (where rows older than the group's sequence aggregate in reverse and retractions
# retract whatever their order), but for the cases _group_function refuses; columns
# outside groups take any function.
GROUP_FUNCTIONS = {
    "sum",
    "product",
    "max",
    "min",
    "bool_and",
    "bool_or",
    "last_value",
    "last_non_null_value",
    "first_value",
    "first_non_null_value",
    "listagg",
    "collect",
    "merge_map",
    "nested_update",
    "rbm32",
    "hll_sketch",
    "theta_sketch",
}


def _partial_update(
    schema: TableSchema,
    raw: Mapping[str, str],
    table: str,
    sequence_field: str | None,
    ignore_delete: bool,
) -> MergeSettings:
    """Partial-update's settings as Paimon's ``PartialUpdateMergeFunction.Factory`` and
    ``SchemaValidation`` (0.9, 1.0) read them, refusing what they refuse."""
    # Paimon 0.9 and 1.0 read the older spelling of ignore-delete too.
    legacy = raw.get("partial-update.ignore-delete", "").strip().lower() == "true"
    ignore_delete = ignore_delete or legacy
    remove = O.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.get(raw)
    groups = _sequence_groups(schema, raw, table)
    functions = _partial_update_functions(schema, raw, table, groups)
    if remove and ignore_delete:
        raise InvalidOptionError(
            O.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.key,
            "true",
            "ignore-delete and partial-update.remove-record-on-delete contradict each "
            "other (Paimon refuses both set)",
        )
    if remove and groups:
        raise InvalidOptionError(
            O.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.key,
            "true",
            "sequence groups and partial-update.remove-record-on-delete contradict each "
            "other (Paimon refuses both set); set partial-update.remove-record-on-sequence-group "
            "to remove the row on a group's -D",
        )
    return MergeSettings(
        PARTIAL_UPDATE, sequence_field, ignore_delete, functions, remove, tuple(groups)
    )


def _sequence_groups(
    schema: TableSchema, raw: Mapping[str, str], table: str
) -> list[SequenceGroup]:
    names = set(schema.field_names)
    groups: list[SequenceGroup] = []
    member_of: dict[str, str] = {}
    for key, value in sorted(raw.items()):
        found = O.field_option(key)
        if found is None or found[0].key != O.FIELDS_SEQUENCE_GROUP.key:
            continue
        sequence = tuple(found[1].split(","))
        # Paimon splits on commas and matches names exactly (no trimming).
        for name in sequence:
            if name not in names:
                raise InvalidOptionError(
                    key, value, f"sequence column {name!r} is not in the table"
                )
        members: list[str] = []
        for name in value.split(","):
            if name not in names:
                raise InvalidOptionError(key, value, f"column {name!r} is not in the table")
            if name in member_of:
                raise InvalidOptionError(
                    key,
                    value,
                    f"column {name!r} is in two sequence groups ({member_of[name]} and {key})",
                )
            member_of[name] = key
            if name not in sequence and name not in members:
                members.append(name)
        groups.append(SequenceGroup(sequence, tuple(members)))
    for group in groups:
        for name in group.sequence:
            if name in schema.primary_keys or set(group.members) & set(schema.primary_keys):
                raise _refuse(table, "a primary-key column in a sequence group", name)
            if raw.get(for_field(O.FIELDS_AGGREGATE_FUNCTION, name).key, ""):
                key = for_field(O.FIELDS_AGGREGATE_FUNCTION, name).key
                raise InvalidOptionError(
                    key, raw[key], f"{name!r} orders a sequence group and cannot aggregate"
                )
            others = [g for g in groups if g is not group and name in (*g.sequence, *g.members)]
            if others:
                raise _refuse(
                    table,
                    f"column {name!r} ordering one sequence group and belonging to another",
                    for_field(O.FIELDS_SEQUENCE_GROUP, ",".join(group.sequence)).key,
                )
    removing = O.PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP.get(raw)
    if removing:
        listed = removing.split(",")
        sequences = {n for g in groups for n in g.sequence}
        if not set(listed) <= sequences:
            raise InvalidOptionError(
                O.PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP.key,
                removing,
                "each column must order a sequence group",
            )
        groups = [replace(g, removes=bool(set(g.sequence) & set(listed))) for g in groups]
    return groups


def _partial_update_functions(
    schema: TableSchema, raw: Mapping[str, str], table: str, groups: list[SequenceGroup]
) -> tuple[tuple[str, FieldFunction], ...]:
    """The columns of a partial-update table that aggregate: those with their own
    function or, when set, the default one (Paimon needs sequence groups for either)."""
    default = O.FIELDS_DEFAULT_AGGREGATE_FUNCTION.get(raw).strip()
    named = [
        f.name for f in schema.fields if raw.get(for_field(O.FIELDS_AGGREGATE_FUNCTION, f.name).key)
    ]
    if not default and not named:
        return ()
    if not groups:
        key = (
            O.FIELDS_DEFAULT_AGGREGATE_FUNCTION.key
            if default
            else (for_field(O.FIELDS_AGGREGATE_FUNCTION, named[0]).key)
        )
        raise InvalidOptionError(
            key, raw[key], "a partial-update table aggregates only with sequence groups"
        )
    sequence_of = {n: g for g in groups for n in g.sequence}
    member_of = {n: g for g in groups for n in g.members}
    functions = []
    for f in schema.fields:
        if f.name in schema.primary_keys or not (default or f.name in named):
            continue
        function = _function(f.name, f.type, schema, raw, None)
        key = for_field(O.FIELDS_AGGREGATE_FUNCTION, f.name).key
        if f.name not in named:
            key = O.FIELDS_DEFAULT_AGGREGATE_FUNCTION.key
        group = sequence_of.get(f.name)
        if group is not None:
            # The default function applies to a group's sequence column too; these
            # leave it as the group's newest sequence, as without a function.
            single = len(group.sequence) == 1
            if function.function == "last_value" or (
                single and function.function in ("last_non_null_value", "max")
            ):
                continue
            raise _refuse(
                table,
                f"the aggregate function {function.function} on sequence column {f.name!r}",
                key,
            )
        if f.name in member_of:
            _group_function(f.name, f.type, function, raw=raw, table=table, key=key)
        functions.append((f.name, function))
    return tuple(functions)


def _group_function(
    name: str,
    dtype: T.DataType,
    function: FieldFunction,
    *,
    raw: Mapping[str, str],
    table: str,
    key: str,
) -> None:
    """Refuses the functions whose fold inside a sequence group shoal does not compute."""
    fn = function.function
    if fn not in GROUP_FUNCTIONS:
        raise _refuse(
            table, f"the aggregate function {fn} in a sequence group (column {name!r})", key
        )
    if fn == "first_non_null_value" and O.PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP.get(raw):
        # Paimon's row empties on a removal but the aggregator stays "initialized" or
        # not by what came before, through a state shoal does not follow across removals.
        raise _refuse(
            table,
            f"first_non_null_value in a sequence group (column {name!r}) with "
            "partial-update.remove-record-on-sequence-group",
            O.PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP.key,
        )
    if (
        fn == "collect"
        and function.distinct
        and function.ignore_retract
        and isinstance(dtype, T.ArrayType)
        and not isinstance(dtype.element, T.AtomicType)
    ):
        # An older row becomes agg(input, accumulator): Paimon keeps the input's own
        # duplicate rows, arrays or maps there.
        raise _refuse(
            table,
            f"a distinct collect of {_root(dtype.element)} values with ignore-retract in a "
            f"sequence group (column {name!r})",
            key,
        )


def _function(
    name: str,
    dtype: T.DataType,
    schema: TableSchema,
    raw: Mapping[str, str],
    sequence_field: str | None,
) -> FieldFunction:
    """Column ``name``'s function, as Paimon's AggregateMergeFunction picks it: the
    sequence field keeps its last value, primary-key columns their key, the others
    their own function, the default function, or last_non_null_value."""
    key = for_field(O.FIELDS_AGGREGATE_FUNCTION, name).key
    ignore = for_field(O.FIELDS_IGNORE_RETRACT, name).get(raw)
    delimiter = for_field(O.FIELDS_LIST_AGG_DELIMITER, name).get(raw)
    if name == sequence_field:
        return FieldFunction("last_value", ignore, delimiter)
    if name in schema.primary_keys:
        return FieldFunction("primary-key", ignore, delimiter)
    function = raw.get(key, "").strip() or O.FIELDS_DEFAULT_AGGREGATE_FUNCTION.get(raw).strip()
    if not raw.get(key, "").strip() and function:
        key = O.FIELDS_DEFAULT_AGGREGATE_FUNCTION.key
    function = _ALIASES.get(function, function or "last_non_null_value")
    if function in UNIMPLEMENTED:
        raise UnsupportedFeatureError(
            f"column {name!r} aggregates with {function} ({key}), which shoal does not "
            f"implement: {UNIMPLEMENTED[function]}; read and write the table with Paimon's "
            "own engines",
            feature=key,
        )
    if function not in IMPLEMENTED:
        raise InvalidOptionError(key, function, "not an aggregate function Paimon knows")
    accepted = IMPLEMENTED[function]
    root = _root(dtype)
    if accepted is not None and root not in accepted:
        raise InvalidOptionError(key, function, f"{function} does not take {root} column {name!r}")
    distinct = for_field(O.FIELDS_DISTINCT, name).get(raw)
    nested = for_field(O.FIELDS_NESTED_KEY, name).get(raw)
    nested_key = tuple(nested.split(",")) if nested else ()
    if function in ("collect", "merge_map", "nested_update"):
        _collection(name, function, dtype, key, distinct=distinct, nested_key=nested_key)
    return FieldFunction(function, ignore, delimiter, distinct, nested_key)


def _unordered(name: str, key: str, what: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"column {name!r} ({key}) puts {what} in a Java hash table whose iteration order "
        "Paimon writes into the merged value; shoal reproduces that order only for BOOLEAN, "
        "TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DATE, TIME and STRING values (and "
        "nested keys of fixed-width fields), so it does not merge this column",
        feature=key,
    )


def _collection(
    name: str,
    function: str,
    dtype: T.DataType,
    key: str,
    *,
    distinct: bool,
    nested_key: tuple[str, ...],
) -> None:
    """Paimon's type rules for collect, merge_map and nested_update, and the values
    whose Java hash order shoal reproduces."""
    if function == "merge_map":
        assert isinstance(dtype, T.MapType)
        if not _hashable(dtype.key):
            raise _unordered(name, key, f"map keys of type {_root(dtype.key)}")
        return
    assert isinstance(dtype, T.ArrayType)
    element = dtype.element
    if function == "collect":
        if distinct and not isinstance(element, T.RowType) and not _hashable(element):
            raise _unordered(name, key, f"distinct elements of type {_root(element)}")
        return
    if not isinstance(element, T.RowType):
        raise InvalidOptionError(
            key, function, f"nested_update takes ARRAY<ROW> columns, not column {name!r}"
        )
    fields = {f.name: f.type for f in element.fields}
    for part in nested_key:
        if part not in fields:
            raise InvalidOptionError(
                for_field(O.FIELDS_NESTED_KEY, name).key,
                ",".join(nested_key),
                f"{part!r} is not a field of the rows of column {name!r}",
            )
        t = fields[part]
        if not isinstance(t, T.AtomicType) or t.root not in _ROW_KEY_TYPES:
            raise _unordered(name, key, f"rows keyed by a {_root(t)} field")


_HASHABLE = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE"}
_HASHABLE |= {"DATE", "TIME"}
_ROW_KEY_TYPES = set(_HASHABLE)
_HASHABLE |= {"CHAR", "VARCHAR", "STRING"}


def _hashable(t: T.DataType) -> bool:
    return isinstance(t, T.AtomicType) and t.root in _HASHABLE
