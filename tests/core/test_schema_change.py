"""Schema changes applied to a TableSchema: field ids, highestFieldId, nested paths, the
options that follow a rename, and every refusal (raised before anything is written)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from shoal.core import schema_change as C
from shoal.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    SchemaMismatchError,
    UnknownOptionError,
    UnsupportedFeatureError,
)
from shoal.format import types as T
from shoal.format.schema import TableSchema

INT = T.AtomicType(T.INT)
BIGINT = T.AtomicType(T.BIGINT)
STRING = T.AtomicType(T.VARCHAR, True, T.MAX_LENGTH)


def schema(
    arrow: pa.Schema,
    *,
    partition_keys: tuple[str, ...] = (),
    primary_keys: tuple[str, ...] = (),
    options: dict[str, str] | None = None,
) -> TableSchema:
    fields = T.fields_from_arrow_schema(arrow)
    return TableSchema(
        id=0,
        fields=fields,
        highest_field_id=T.highest_field_id(fields),
        partition_keys=partition_keys,
        primary_keys=primary_keys,
        options=options or {},
    )


NESTED = schema(
    pa.schema(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
            ("arr", pa.list_(pa.struct([("x", pa.int32())]))),
            ("m", pa.map_(pa.string(), pa.struct([("v", pa.int32())]))),
        ]
    )
)
KEYED = schema(
    pa.schema(
        [
            pa.field("dt", pa.string(), False),
            pa.field("id", pa.int64(), False),
            ("v", pa.int32()),
            ("ts", pa.timestamp("ms")),
        ]
    ),
    partition_keys=("dt",),
    primary_keys=("dt", "id"),
    options={"bucket": "2", "sequence.field": "ts", "compaction.event-time.field": "ts"},
)


def apply(base: TableSchema, *changes: C.SchemaChange, data: bool = False) -> TableSchema:
    return C.apply_changes(base, list(changes), has_snapshots=data, time_millis=123)


def by_name(s: TableSchema) -> dict[str, T.DataField]:
    return {f.name: f for f in s.fields}


# --- adding ----------------------------------------------------------------------------------


def test_a_new_column_takes_the_next_id_and_a_new_version() -> None:
    new = apply(NESTED, C.AddColumn(("score",), T.AtomicType(T.DOUBLE), comment="points"))
    assert new.id == 1
    assert new.time_millis == 123
    assert new.fields[-1] == T.DataField(
        NESTED.highest_field_id + 1, "score", T.AtomicType(T.DOUBLE), "points"
    )
    assert new.highest_field_id == NESTED.highest_field_id + 1
    assert new.fields[:-1] == NESTED.fields


def test_nested_fields_of_a_new_column_are_numbered_depth_first() -> None:
    row = T.from_arrow(
        pa.struct([("p", pa.struct([("q", pa.int8())])), ("r", pa.int8())]), True, [0]
    )
    new = apply(NESTED, C.AddColumn(("deep",), row))
    top = NESTED.highest_field_id
    added = new.fields[-1]
    assert added.id == top + 1
    assert isinstance(added.type, T.RowType)
    p, r = added.type.fields
    assert (p.id, r.id) == (top + 2, top + 4)
    assert isinstance(p.type, T.RowType)
    assert p.type.fields[0].id == top + 3
    assert new.highest_field_id == top + 4


def test_positions_after_and_first() -> None:
    new = apply(
        NESTED,
        C.AddColumn(("after_id",), INT, after="id"),
        C.AddColumn(("at_start",), INT, first=True),
    )
    assert new.field_names[:3] == ["at_start", "id", "after_id"]


def test_a_field_is_added_inside_a_row_and_through_arrays_and_maps() -> None:
    new = apply(
        NESTED,
        C.AddColumn(("s", "c"), BIGINT, after="a"),
        C.AddColumn(("arr", "element", "y"), STRING),
        C.AddColumn(("m", "value", "w"), INT),
    )
    top = NESTED.highest_field_id
    s = by_name(new)["s"].type
    assert isinstance(s, T.RowType)
    assert [(f.name, f.id) for f in s.fields] == [("a", 3), ("c", top + 1), ("b", 4)]
    arr = by_name(new)["arr"].type
    assert isinstance(arr, T.ArrayType)
    assert isinstance(arr.element, T.RowType)
    assert [(f.name, f.id) for f in arr.element.fields][-1] == ("y", top + 2)
    m = by_name(new)["m"].type
    assert isinstance(m, T.MapType)
    assert isinstance(m.value, T.RowType)
    assert m.value.fields[-1].id == top + 3
    assert new.highest_field_id == top + 3
    # The written schema parses back to the same fields.
    assert TableSchema.from_json(new.to_json(), "schema-1").fields == new.fields


@pytest.mark.parametrize(
    ("change", "error", "words"),
    [
        (C.AddColumn(("name",), INT), InvalidArgumentError, "exists already"),
        (C.AddColumn(("s", "a"), INT), InvalidArgumentError, "exists already"),
        (C.AddColumn(("x",), T.AtomicType(T.INT, False)), InvalidArgumentError, "nullable"),
        (C.AddColumn(("x",), INT, after="nope"), InvalidArgumentError, "siblings"),
        (C.AddColumn(("nope", "x"), INT), InvalidArgumentError, "does not exist"),
        (C.AddColumn(("name", "x"), INT), InvalidArgumentError, "only ROW columns"),
        (C.AddColumn(("_KEY_id",), INT), InvalidArgumentError, "kept for Paimon"),
        (C.AddColumn(("_SEQUENCE_NUMBER",), INT), InvalidArgumentError, "kept for Paimon"),
    ],
)
def test_additions_that_are_refused(
    change: C.SchemaChange, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        apply(NESTED, change)


def test_ids_of_dropped_columns_are_never_given_out_again() -> None:
    dropped = apply(NESTED, C.DropColumn(("m",)))
    assert dropped.highest_field_id == NESTED.highest_field_id
    again = apply(dropped, C.AddColumn(("m",), INT))
    assert by_name(again)["m"].id == NESTED.highest_field_id + 1


# --- renaming, dropping ------------------------------------------------------------------------


def test_a_rename_keeps_the_id_and_renames_the_options_naming_the_column() -> None:
    base = schema(
        pa.schema([("a", pa.int64()), ("b", pa.int64()), ("c", pa.string())]),
        options={"bucket": "2", "bucket-key": "a,b"},
    )
    new = apply(base, C.RenameColumn(("b",), "bee"))
    assert by_name(new)["bee"].id == by_name(base)["b"].id
    assert new.options["bucket-key"] == "a,bee"
    nested = apply(NESTED, C.RenameColumn(("s", "a"), "alpha"))
    s = by_name(nested)["s"].type
    assert isinstance(s, T.RowType)
    assert [f.name for f in s.fields] == ["alpha", "b"]


def test_renaming_the_event_time_and_sequence_columns_follows_in_the_options() -> None:
    keyed = schema(
        pa.schema([pa.field("id", pa.int64(), False), ("ts", pa.timestamp("ms"))]),
        primary_keys=("id",),
        options={"bucket": "1", "sequence.field": "ts", "compaction.event-time.field": "ts"},
    )
    new = apply(keyed, C.RenameColumn(("ts",), "event_time"))
    assert new.options["sequence.field"] == "event_time"
    assert new.options["compaction.event-time.field"] == "event_time"


@pytest.mark.parametrize(
    ("change", "error", "words"),
    [
        (C.RenameColumn(("dt",), "day"), InvalidArgumentError, "partition column"),
        (C.RenameColumn(("id",), "key"), UnsupportedFeatureError, "primary-key column"),
        (C.RenameColumn(("v",), "ts"), InvalidArgumentError, "exists already"),
        (C.RenameColumn(("nope",), "x"), InvalidArgumentError, "does not exist"),
        (C.DropColumn(("dt",)), InvalidArgumentError, "partition column"),
        (C.DropColumn(("id",)), InvalidArgumentError, "primary-key column"),
        (C.DropColumn(("ts",)), InvalidOptionError, "sequence.field"),
        (C.DropColumn(("nope",)), InvalidArgumentError, "does not exist"),
    ],
)
def test_key_columns_and_missing_columns_are_refused(
    change: C.SchemaChange, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        apply(KEYED, change)


def test_the_last_column_of_a_table_or_a_row_cannot_be_dropped() -> None:
    single = schema(pa.schema([("only", pa.int32()), ("s", pa.struct([("a", pa.int32())]))]))
    one_left = apply(single, C.DropColumn(("only",)))
    assert one_left.field_names == ["s"]
    with pytest.raises(InvalidArgumentError, match="last column of the table"):
        apply(one_left, C.DropColumn(("s",)))
    with pytest.raises(InvalidArgumentError, match="last column of 's'"):
        apply(single, C.DropColumn(("s", "a")))


# --- types -------------------------------------------------------------------------------------


def test_a_type_change_keeps_id_and_nullability() -> None:
    base = schema(pa.schema([pa.field("n", pa.int32(), False), ("m", pa.int32())]))
    new = apply(base, C.UpdateColumnType(("n",), BIGINT), C.UpdateColumnType(("m",), BIGINT))
    assert by_name(new)["n"] == T.DataField(0, "n", T.AtomicType(T.BIGINT, False))
    assert by_name(new)["m"] == T.DataField(1, "m", BIGINT)
    nested = apply(NESTED, C.UpdateColumnType(("s", "a"), BIGINT))
    s = by_name(nested)["s"].type
    assert isinstance(s, T.RowType)
    assert s.fields[0] == T.DataField(3, "a", BIGINT)


@pytest.mark.parametrize(
    ("path", "new_type", "error", "words"),
    [
        (("v",), T.AtomicType(T.TIME, True, 0), SchemaMismatchError, "Paimon does not cast"),
        (("v",), T.AtomicType(T.DATE), SchemaMismatchError, "Paimon does not cast"),
        (("id",), T.AtomicType(T.DECIMAL, True, 20, 0), InvalidArgumentError, "primary-key"),
        (("dt",), STRING, InvalidArgumentError, "partition column"),
    ],
)
def test_type_changes_that_are_refused(
    path: C.Path, new_type: T.DataType, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        apply(KEYED, C.UpdateColumnType(path, new_type))


def test_nested_types_change_field_by_field() -> None:
    with pytest.raises(UnsupportedFeatureError, match="one by one"):
        apply(NESTED, C.UpdateColumnType(("s",), INT))


def test_with_data_only_type_changes_shoal_reads_exactly() -> None:
    narrowing = C.UpdateColumnType(("v",), T.AtomicType(T.SMALLINT))
    assert by_name(apply(KEYED, narrowing))["v"].type == T.AtomicType(T.SMALLINT)
    with pytest.raises(UnsupportedFeatureError, match="exactly"):
        apply(KEYED, narrowing, data=True)
    widened = apply(KEYED, C.UpdateColumnType(("v",), BIGINT), data=True)
    assert by_name(widened)["v"].type == BIGINT


def test_the_event_time_column_keeps_a_column_to_name() -> None:
    with pytest.raises(InvalidOptionError, match=r"sequence\.field"):
        apply(KEYED, C.DropColumn(("ts",)))
    freed = apply(
        KEYED, C.RemoveOption("sequence.field"), C.RemoveOption("compaction.event-time.field")
    )
    assert "ts" not in apply(freed, C.DropColumn(("ts",))).field_names


# --- options and comment -----------------------------------------------------------------------


def test_options_set_and_removed() -> None:
    new = apply(
        KEYED,
        C.SetOption("snapshot.num-retained.max", "50"),
        C.SetOption("user.owner", "ops"),
        C.RemoveOption("compaction.event-time.field"),
        C.UpdateComment("events"),
        data=True,
    )
    assert new.options == {
        "bucket": "2",
        "sequence.field": "ts",
        "snapshot.num-retained.max": "50",
        "user.owner": "ops",
    }
    assert new.comment == "events"


@pytest.mark.parametrize(
    ("change", "data", "error", "words"),
    [
        (C.SetOption("merge-engine", "first-row"), True, InvalidOptionError, "cannot change"),
        (C.SetOption("bucket-key", "id"), True, InvalidOptionError, "cannot change"),
        (C.RemoveOption("merge-engine"), True, InvalidOptionError, "cannot change"),
        (C.SetOption("bucket", "4"), True, UnsupportedFeatureError, "bucket count"),
        (C.RemoveOption("bucket"), True, UnsupportedFeatureError, "bucket count"),
        (C.SetOption("snapshot.num-retained.mx", "5"), False, UnknownOptionError, "did you mean"),
        (C.SetOption("snapshot.num-retained.max", "x"), False, InvalidOptionError, "retained"),
        (C.SetOption("snapshot.num-retained.max", "0"), False, InvalidOptionError, "retained"),
        (
            C.SetOption("deletion-vectors.enabled", "true"),
            True,
            InvalidOptionError,
            "deletion-vectors.modifiable",
        ),
        (
            C.SetOption("deletion-vectors.merge-on-read", "true"),
            False,
            UnsupportedFeatureError,
            "does not implement",
        ),
        (C.SetOption("path", "/x"), False, InvalidOptionError, "definition"),
        (C.SetOption("primary-key", "id"), False, InvalidOptionError, "definition"),
    ],
)
def test_options_that_are_refused(
    change: C.SchemaChange, data: bool, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        apply(KEYED, change, data=data)


def test_immutable_options_change_while_the_table_has_no_data() -> None:
    new = apply(KEYED, C.SetOption("bucket", "4"), C.SetOption("merge-engine", "first-row"))
    assert new.options["bucket"] == "4"
    assert new.options["merge-engine"] == "first-row"


def test_a_table_without_data_takes_dynamic_buckets() -> None:
    assert apply(KEYED, C.SetOption("bucket", "-1")).options["bucket"] == "-1"
    assert "bucket" not in apply(KEYED, C.RemoveOption("bucket")).options


def test_setting_an_option_to_its_value_is_no_change() -> None:
    assert apply(KEYED, C.SetOption("bucket", "2"), data=True).options == KEYED.options


# --- paths -------------------------------------------------------------------------------------


def test_column_paths() -> None:
    assert C.column_path("a.b") == ("a", "b")
    assert C.column_path(["a.b"]) == ("a.b",)
    for bad in ("", "a..b", [], ["a", ""]):
        with pytest.raises(InvalidArgumentError):
            C.column_path(bad)


def test_columns_to_add_keeps_the_data_order_and_skips_present_ones() -> None:
    added = C.columns_to_add(
        NESTED, [("z", INT), ("id", BIGINT), ("y", T.AtomicType(T.INT, False))]
    )
    assert [(a.path, a.type) for a in added] == [(("z",), INT), (("y",), INT)]
