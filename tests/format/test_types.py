"""Paimon data types: type strings, nested JSON, and the mapping to and from Arrow."""

from __future__ import annotations

import pyarrow as pa
import pytest

import shoal
from shoal.format import types as T
from shoal.format.types import MAX_LENGTH, ArrayType, AtomicType, DataField, MapType, RowType

# --- atomic type strings -----------------------------------------------------------------------

# (text in a schema file, parsed type, the string shoal writes back)
ATOMIC_CASES = [
    ("BOOLEAN", AtomicType(T.BOOLEAN), "BOOLEAN"),
    ("TINYINT", AtomicType(T.TINYINT), "TINYINT"),
    ("SMALLINT", AtomicType(T.SMALLINT), "SMALLINT"),
    ("INT", AtomicType(T.INT), "INT"),
    ("INTEGER", AtomicType(T.INT), "INT"),
    ("BIGINT", AtomicType(T.BIGINT), "BIGINT"),
    ("FLOAT", AtomicType(T.FLOAT), "FLOAT"),
    ("DOUBLE", AtomicType(T.DOUBLE), "DOUBLE"),
    ("DATE", AtomicType(T.DATE), "DATE"),
    ("DECIMAL(10, 2)", AtomicType(T.DECIMAL, True, 10, 2), "DECIMAL(10, 2)"),
    ("DECIMAL(38,18)", AtomicType(T.DECIMAL, True, 38, 18), "DECIMAL(38, 18)"),
    ("DECIMAL(5)", AtomicType(T.DECIMAL, True, 5, 0), "DECIMAL(5, 0)"),
    ("DECIMAL", AtomicType(T.DECIMAL, True, 10, 0), "DECIMAL(10, 0)"),
    ("CHAR(5)", AtomicType(T.CHAR, True, 5), "CHAR(5)"),
    ("CHAR", AtomicType(T.CHAR, True, 1), "CHAR(1)"),
    ("VARCHAR(20)", AtomicType(T.VARCHAR, True, 20), "VARCHAR(20)"),
    ("VARCHAR", AtomicType(T.VARCHAR, True, 1), "VARCHAR(1)"),
    ("STRING", AtomicType(T.VARCHAR, True, MAX_LENGTH), "STRING"),
    ("VARCHAR(2147483647)", AtomicType(T.VARCHAR, True, MAX_LENGTH), "STRING"),
    ("BINARY(16)", AtomicType(T.BINARY, True, 16), "BINARY(16)"),
    ("VARBINARY(8)", AtomicType(T.VARBINARY, True, 8), "VARBINARY(8)"),
    ("BYTES", AtomicType(T.VARBINARY, True, MAX_LENGTH), "BYTES"),
    ("VARBINARY(2147483647)", AtomicType(T.VARBINARY, True, MAX_LENGTH), "BYTES"),
    ("TIME", AtomicType(T.TIME, True, 0), "TIME(0)"),
    ("TIME(3)", AtomicType(T.TIME, True, 3), "TIME(3)"),
    ("TIMESTAMP", AtomicType(T.TIMESTAMP, True, 6), "TIMESTAMP(6)"),
    ("TIMESTAMP(0)", AtomicType(T.TIMESTAMP, True, 0), "TIMESTAMP(0)"),
    ("TIMESTAMP(3)", AtomicType(T.TIMESTAMP, True, 3), "TIMESTAMP(3)"),
    ("TIMESTAMP(9)", AtomicType(T.TIMESTAMP, True, 9), "TIMESTAMP(9)"),
    (
        "TIMESTAMP(6) WITH LOCAL TIME ZONE",
        AtomicType(T.TIMESTAMP_LTZ, True, 6),
        "TIMESTAMP(6) WITH LOCAL TIME ZONE",
    ),
    (
        "TIMESTAMP(3) WITH LOCAL TIME ZONE",
        AtomicType(T.TIMESTAMP_LTZ, True, 3),
        "TIMESTAMP(3) WITH LOCAL TIME ZONE",
    ),
    (
        "TIMESTAMP WITH LOCAL TIME ZONE",
        AtomicType(T.TIMESTAMP_LTZ, True, 6),
        "TIMESTAMP(6) WITH LOCAL TIME ZONE",
    ),
    ("TIMESTAMP_LTZ(3)", AtomicType(T.TIMESTAMP_LTZ, True, 3), "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    # NOT NULL suffixes
    ("BOOLEAN NOT NULL", AtomicType(T.BOOLEAN, False), "BOOLEAN NOT NULL"),
    ("INT NOT NULL", AtomicType(T.INT, False), "INT NOT NULL"),
    ("INTEGER NOT NULL", AtomicType(T.INT, False), "INT NOT NULL"),
    ("BIGINT NOT NULL", AtomicType(T.BIGINT, False), "BIGINT NOT NULL"),
    ("STRING NOT NULL", AtomicType(T.VARCHAR, False, MAX_LENGTH), "STRING NOT NULL"),
    ("BYTES NOT NULL", AtomicType(T.VARBINARY, False, MAX_LENGTH), "BYTES NOT NULL"),
    ("VARCHAR(3) NOT NULL", AtomicType(T.VARCHAR, False, 3), "VARCHAR(3) NOT NULL"),
    ("DECIMAL(10, 2) NOT NULL", AtomicType(T.DECIMAL, False, 10, 2), "DECIMAL(10, 2) NOT NULL"),
    ("DATE NOT NULL", AtomicType(T.DATE, False), "DATE NOT NULL"),
    ("TIME(3) NOT NULL", AtomicType(T.TIME, False, 3), "TIME(3) NOT NULL"),
    ("TIMESTAMP(3) NOT NULL", AtomicType(T.TIMESTAMP, False, 3), "TIMESTAMP(3) NOT NULL"),
    (
        "TIMESTAMP(9) WITH LOCAL TIME ZONE NOT NULL",
        AtomicType(T.TIMESTAMP_LTZ, False, 9),
        "TIMESTAMP(9) WITH LOCAL TIME ZONE NOT NULL",
    ),
    # case-insensitive, as Paimon's parser is
    ("bigint not null", AtomicType(T.BIGINT, False), "BIGINT NOT NULL"),
    ("decimal(12, 4)", AtomicType(T.DECIMAL, True, 12, 4), "DECIMAL(12, 4)"),
]


@pytest.mark.parametrize(
    ("text", "parsed", "written"), ATOMIC_CASES, ids=[c[0] for c in ATOMIC_CASES]
)
def test_parse_atomic_type_string(text: str, parsed: AtomicType, written: str) -> None:
    assert T.parse_type(text) == parsed


@pytest.mark.parametrize(
    ("text", "parsed", "written"), ATOMIC_CASES, ids=[c[0] for c in ATOMIC_CASES]
)
def test_type_string_is_paimons_spelling(text: str, parsed: AtomicType, written: str) -> None:
    assert T.type_string(parsed) == written
    assert T.type_to_json(parsed) == written


@pytest.mark.parametrize(
    ("text", "parsed", "written"), ATOMIC_CASES, ids=[c[0] for c in ATOMIC_CASES]
)
def test_written_type_string_parses_back(text: str, parsed: AtomicType, written: str) -> None:
    assert T.parse_type(written) == parsed
    assert T.type_string(T.parse_type(written)) == written


@pytest.mark.parametrize(
    "text",
    [
        "",
        "FOO",
        "INT(3)",
        "BOOLEAN(1)",
        "DATE(2)",
        "DECIMAL(a, b)",
        "VARIANT",
        "MULTISET",
        "TIME(3) WITH LOCAL TIME ZONE",
        "ARRAY<INT>",
        "INT NOT",
        "NOT NULL",
    ],
)
def test_unknown_type_string_raises_value_error(text: str) -> None:
    with pytest.raises(ValueError, match="data type"):
        T.parse_type(text)


@pytest.mark.parametrize(
    "value",
    [5, None, ["INT"], {"element": "INT"}, {"type": 3}, {"type": "STRUCT", "fields": []}],
    ids=["int", "none", "list", "no-type", "type-not-str", "unknown-kind"],
)
def test_non_type_json_raises_value_error(value: object) -> None:
    with pytest.raises(ValueError, match="data type"):
        T.parse_type(value)


def test_multiset_is_rejected() -> None:
    with pytest.raises(ValueError, match="MULTISET"):
        T.parse_type({"type": "MULTISET", "element": "INT"})


# --- nested types as JSON ----------------------------------------------------------------------

NESTED_CASES = [
    (
        {"type": "ARRAY", "element": "INT"},
        ArrayType(AtomicType(T.INT)),
    ),
    (
        {"type": "ARRAY NOT NULL", "element": "STRING NOT NULL"},
        ArrayType(AtomicType(T.VARCHAR, False, MAX_LENGTH), nullable=False),
    ),
    (
        {"type": "ARRAY", "element": {"type": "ARRAY", "element": "DECIMAL(20, 4)"}},
        ArrayType(ArrayType(AtomicType(T.DECIMAL, True, 20, 4))),
    ),
    (
        {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"},
        MapType(AtomicType(T.VARCHAR, False, MAX_LENGTH), AtomicType(T.BIGINT)),
    ),
    (
        {
            "type": "MAP NOT NULL",
            "key": "INT NOT NULL",
            "value": {"type": "ARRAY", "element": "DOUBLE"},
        },
        MapType(AtomicType(T.INT, False), ArrayType(AtomicType(T.DOUBLE)), nullable=False),
    ),
    (
        {
            "type": "ROW",
            "fields": [
                {"id": 3, "name": "x", "type": "INT"},
                {"id": 4, "name": "y", "type": "STRING", "description": "why"},
            ],
        },
        RowType(
            (
                DataField(3, "x", AtomicType(T.INT)),
                DataField(4, "y", AtomicType(T.VARCHAR, True, MAX_LENGTH), "why"),
            )
        ),
    ),
    (
        {
            "type": "ROW NOT NULL",
            "fields": [
                {
                    "id": 7,
                    "name": "inner",
                    "type": {
                        "type": "ROW",
                        "fields": [
                            {"id": 8, "name": "ts", "type": "TIMESTAMP(3) WITH LOCAL TIME ZONE"}
                        ],
                    },
                },
                {
                    "id": 9,
                    "name": "tags",
                    "type": {"type": "MAP", "key": "STRING NOT NULL", "value": "STRING"},
                },
            ],
        },
        RowType(
            (
                DataField(
                    7,
                    "inner",
                    RowType((DataField(8, "ts", AtomicType(T.TIMESTAMP_LTZ, True, 3)),)),
                ),
                DataField(
                    9,
                    "tags",
                    MapType(
                        AtomicType(T.VARCHAR, False, MAX_LENGTH),
                        AtomicType(T.VARCHAR, True, MAX_LENGTH),
                    ),
                ),
            ),
            nullable=False,
        ),
    ),
    ({"type": "ROW", "fields": []}, RowType(())),
]
NESTED_IDS = [
    "array",
    "array-not-null",
    "array-of-array",
    "map",
    "map-of-array",
    "row",
    "deep",
    "empty-row",
]


@pytest.mark.parametrize(("json_value", "parsed"), NESTED_CASES, ids=NESTED_IDS)
def test_parse_nested_type_json(json_value: dict[str, object], parsed: T.DataType) -> None:
    assert T.parse_type(json_value) == parsed


@pytest.mark.parametrize(("json_value", "parsed"), NESTED_CASES, ids=NESTED_IDS)
def test_nested_type_json_round_trip(json_value: dict[str, object], parsed: T.DataType) -> None:
    assert T.type_to_json(parsed) == json_value
    assert T.parse_type(T.type_to_json(parsed)) == parsed


def test_field_json_omits_missing_description() -> None:
    field = DataField(0, "id", AtomicType(T.BIGINT, False))
    assert T.field_to_json(field) == {"id": 0, "name": "id", "type": "BIGINT NOT NULL"}
    described = DataField(1, "name", AtomicType(T.VARCHAR, True, MAX_LENGTH), "the name")
    assert T.field_to_json(described) == {
        "id": 1,
        "name": "name",
        "type": "STRING",
        "description": "the name",
    }
    assert T.parse_field(T.field_to_json(described)) == described


def test_parse_fields_json_wraps_errors_with_path() -> None:
    with pytest.raises(shoal.CorruptMetadataError) as info:
        T.parse_fields_json("/t/schema/schema-0", [{"id": 0, "name": "a", "type": "NOPE"}])
    assert info.value.path == "/t/schema/schema-0"
    assert "/t/schema/schema-0" in str(info.value)
    with pytest.raises(shoal.CorruptMetadataError):
        T.parse_fields_json("p", [{"name": "a", "type": "INT"}])  # no id
    with pytest.raises(shoal.CorruptMetadataError):
        T.parse_fields_json("p", None)


# --- field ids ---------------------------------------------------------------------------------


def _row(*fields: DataField) -> RowType:
    return RowType(tuple(fields))


INT = AtomicType(T.INT)


@pytest.mark.parametrize(
    ("fields", "highest"),
    [
        ((), -1),
        ((DataField(0, "a", INT),), 0),
        ((DataField(4, "a", INT), DataField(2, "b", INT)), 4),
        ((DataField(0, "a", _row(DataField(1, "b", _row(DataField(5, "c", INT))))),), 5),
        ((DataField(0, "a", ArrayType(_row(DataField(3, "e", INT)))),), 3),
        ((DataField(0, "m", MapType(INT, _row(DataField(11, "v", INT)))),), 11),
        ((DataField(0, "m", MapType(_row(DataField(12, "k", INT)), INT)),), 12),
        ((DataField(20, "top", INT), DataField(1, "r", _row(DataField(2, "x", INT)))), 20),
    ],
    ids=["none", "one", "unordered", "nested-row", "array-of-row", "map-value", "map-key", "top"],
)
def test_highest_field_id(fields: tuple[DataField, ...], highest: int) -> None:
    assert T.highest_field_id(fields) == highest
    assert T.highest_field_id(list(fields)) == highest


# --- Arrow -------------------------------------------------------------------------------------

TO_ARROW_CASES = [
    ("BOOLEAN", pa.bool_()),
    ("TINYINT", pa.int8()),
    ("SMALLINT", pa.int16()),
    ("INT", pa.int32()),
    ("BIGINT", pa.int64()),
    ("FLOAT", pa.float32()),
    ("DOUBLE", pa.float64()),
    ("DATE", pa.date32()),
    ("CHAR(3)", pa.string()),
    ("VARCHAR(5)", pa.string()),
    ("STRING", pa.string()),
    ("BINARY(4)", pa.binary()),
    ("VARBINARY(4)", pa.binary()),
    ("BYTES", pa.binary()),
    ("DECIMAL(10, 2)", pa.decimal128(10, 2)),
    ("DECIMAL(38, 0)", pa.decimal128(38, 0)),
    ("TIME(0)", pa.time32("s")),
    ("TIME(1)", pa.time32("ms")),
    ("TIME(3)", pa.time32("ms")),
    ("TIME(6)", pa.time64("us")),
    ("TIME(9)", pa.time64("ns")),
    ("TIMESTAMP(0)", pa.timestamp("s")),
    ("TIMESTAMP(1)", pa.timestamp("ms")),
    ("TIMESTAMP(3)", pa.timestamp("ms")),
    ("TIMESTAMP(4)", pa.timestamp("us")),
    ("TIMESTAMP(6)", pa.timestamp("us")),
    ("TIMESTAMP(9)", pa.timestamp("ns")),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", pa.timestamp("ms", tz="UTC")),
    ("TIMESTAMP(6) WITH LOCAL TIME ZONE", pa.timestamp("us", tz="UTC")),
    ("INT NOT NULL", pa.int32()),
]


@pytest.mark.parametrize(("text", "arrow"), TO_ARROW_CASES, ids=[c[0] for c in TO_ARROW_CASES])
def test_atomic_to_arrow(text: str, arrow: pa.DataType) -> None:
    assert T.to_arrow(T.parse_type(text)) == arrow


def test_nested_to_arrow_keeps_nullability_and_names() -> None:
    array = T.to_arrow(ArrayType(AtomicType(T.INT, False)))
    assert pa.types.is_list(array)
    assert array.value_field.type == pa.int32()
    assert array.value_field.nullable is False

    mapping = T.to_arrow(MapType(AtomicType(T.VARCHAR, False, MAX_LENGTH), AtomicType(T.BIGINT)))
    assert pa.types.is_map(mapping)
    assert mapping.key_field.type == pa.string()
    assert mapping.key_field.nullable is False
    assert mapping.item_field.type == pa.int64()
    assert mapping.item_field.nullable is True

    row = T.to_arrow(
        _row(DataField(1, "a", AtomicType(T.INT, False)), DataField(2, "b", AtomicType(T.DOUBLE)))
    )
    assert row == pa.struct([pa.field("a", pa.int32(), False), pa.field("b", pa.float64(), True)])


def test_fields_to_arrow_schema() -> None:
    fields = (
        DataField(0, "id", AtomicType(T.BIGINT, False)),
        DataField(1, "name", AtomicType(T.VARCHAR, True, MAX_LENGTH)),
        DataField(2, "tags", ArrayType(AtomicType(T.VARCHAR, True, MAX_LENGTH))),
    )
    schema = T.fields_to_arrow_schema(fields)
    assert schema.names == ["id", "name", "tags"]
    assert schema.field("id").nullable is False
    assert schema.field("name").nullable is True
    assert schema.field("tags").type == pa.list_(pa.string())


FROM_ARROW_CASES = [
    (pa.bool_(), "BOOLEAN"),
    (pa.int8(), "TINYINT"),
    (pa.int16(), "SMALLINT"),
    (pa.int32(), "INT"),
    (pa.int64(), "BIGINT"),
    (pa.uint8(), "SMALLINT"),
    (pa.uint16(), "INT"),
    (pa.uint32(), "BIGINT"),
    (pa.float32(), "FLOAT"),
    (pa.float64(), "DOUBLE"),
    (pa.date32(), "DATE"),
    (pa.date64(), "DATE"),
    (pa.decimal128(10, 2), "DECIMAL(10, 2)"),
    (pa.decimal128(38, 38), "DECIMAL(38, 38)"),
    (pa.decimal256(38, 4), "DECIMAL(38, 4)"),
    (pa.string(), "STRING"),
    (pa.large_string(), "STRING"),
    (pa.string_view(), "STRING"),
    (pa.binary(), "BYTES"),
    (pa.large_binary(), "BYTES"),
    (pa.binary_view(), "BYTES"),
    (pa.binary(16), "BINARY(16)"),
    (pa.time32("s"), "TIME(0)"),
    (pa.time32("ms"), "TIME(3)"),
    (pa.time64("us"), "TIME(3)"),
    (pa.time64("ns"), "TIME(3)"),
    (pa.timestamp("s"), "TIMESTAMP(0)"),
    (pa.timestamp("ms"), "TIMESTAMP(3)"),
    (pa.timestamp("us"), "TIMESTAMP(6)"),
    (pa.timestamp("ns"), "TIMESTAMP(9)"),
    (pa.timestamp("us", tz="UTC"), "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    (pa.timestamp("ms", tz="Asia/Tokyo"), "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    (pa.dictionary(pa.int32(), pa.string()), "STRING"),
]


@pytest.mark.parametrize(
    ("arrow", "text"), FROM_ARROW_CASES, ids=[str(c[0]) for c in FROM_ARROW_CASES]
)
def test_atomic_from_arrow(arrow: pa.DataType, text: str) -> None:
    assert T.from_arrow(arrow, True, [0]) == T.parse_type(text)
    assert T.from_arrow(arrow, False, [0]) == T.parse_type(text + " NOT NULL")


@pytest.mark.parametrize(
    "arrow",
    [
        pa.uint64(),
        pa.float16(),
        pa.null(),
        pa.duration("s"),
        pa.month_day_nano_interval(),
        pa.decimal256(40, 2),
        pa.dense_union([pa.field("a", pa.int32())]),
        pa.list_(pa.uint64()),
        pa.struct([pa.field("ok", pa.int32()), pa.field("bad", pa.duration("ms"))]),
        pa.map_(pa.string(), pa.uint64()),
    ],
    ids=str,
)
def test_unsupported_arrow_type_raises_schema_mismatch(arrow: pa.DataType) -> None:
    with pytest.raises(shoal.SchemaMismatchError):
        T.from_arrow(arrow, True, [0])
    with pytest.raises(shoal.SchemaMismatchError):
        T.fields_from_arrow_schema(pa.schema([pa.field("c", arrow)]))


NESTED_ARROW = pa.schema(
    [
        pa.field("a", pa.int32(), nullable=False),
        pa.field(
            "b",
            pa.struct(
                [
                    pa.field("c", pa.int32()),
                    pa.field("d", pa.struct([pa.field("e", pa.string())])),
                ]
            ),
        ),
        pa.field("f", pa.list_(pa.struct([pa.field("g", pa.int64())]))),
        pa.field("m", pa.map_(pa.string(), pa.struct([pa.field("h", pa.bool_())]))),
        pa.field("z", pa.float64()),
    ]
)


def test_field_ids_are_depth_first_pre_order_from_zero() -> None:
    fields = T.fields_from_arrow_schema(NESTED_ARROW)
    a, b, f, m, z = fields
    assert [x.id for x in fields] == [0, 1, 5, 7, 9]
    assert (a.name, b.name, f.name, m.name, z.name) == ("a", "b", "f", "m", "z")
    assert isinstance(b.type, RowType)
    c, d = b.type.fields
    assert (c.id, c.name, d.id, d.name) == (2, "c", 3, "d")
    assert isinstance(d.type, RowType)
    assert [(x.id, x.name) for x in d.type.fields] == [(4, "e")]
    assert isinstance(f.type, ArrayType)
    assert isinstance(f.type.element, RowType)
    assert [(x.id, x.name) for x in f.type.element.fields] == [(6, "g")]
    assert isinstance(m.type, MapType)
    assert m.type.key == AtomicType(T.VARCHAR, False, MAX_LENGTH)
    assert isinstance(m.type.value, RowType)
    assert [(x.id, x.name) for x in m.type.value.fields] == [(8, "h")]
    assert T.highest_field_id(fields) == 9


def test_from_arrow_draws_nested_ids_from_counter() -> None:
    counter = [10]
    t = T.from_arrow(
        pa.struct([pa.field("x", pa.int32()), pa.field("y", pa.int32())]), True, counter
    )
    assert isinstance(t, RowType)
    assert [f.id for f in t.fields] == [10, 11]
    assert counter == [12]


def test_from_arrow_nullability() -> None:
    fields = T.fields_from_arrow_schema(
        pa.schema(
            [
                pa.field("req", pa.int64(), nullable=False),
                pa.field("opt", pa.int64()),
                pa.field("arr", pa.list_(pa.field("item", pa.int32(), nullable=False))),
                pa.field("mp", pa.map_(pa.string(), pa.field("value", pa.int32(), False))),
            ]
        )
    )
    req, opt, arr, mp = (f.type for f in fields)
    assert req == AtomicType(T.BIGINT, False)
    assert opt == AtomicType(T.BIGINT, True)
    assert arr == ArrayType(AtomicType(T.INT, False))
    assert mp == MapType(AtomicType(T.VARCHAR, False, MAX_LENGTH), AtomicType(T.INT, False))


ROUND_TRIP_ARROW = pa.schema(
    [
        pa.field("bool", pa.bool_()),
        pa.field("i8", pa.int8()),
        pa.field("i16", pa.int16()),
        pa.field("i32", pa.int32(), nullable=False),
        pa.field("i64", pa.int64()),
        pa.field("f32", pa.float32()),
        pa.field("f64", pa.float64()),
        pa.field("dec", pa.decimal128(20, 3)),
        pa.field("str", pa.string()),
        pa.field("bin", pa.binary()),
        pa.field("date", pa.date32()),
        pa.field("t_s", pa.time32("s")),
        pa.field("t_ms", pa.time32("ms")),
        pa.field("ts_s", pa.timestamp("s")),
        pa.field("ts_ms", pa.timestamp("ms")),
        pa.field("ts_us", pa.timestamp("us")),
        pa.field("ts_ns", pa.timestamp("ns")),
        pa.field("ltz", pa.timestamp("us", tz="UTC")),
        pa.field("list", pa.list_(pa.field("element", pa.int64(), nullable=False))),
        pa.field("map", pa.map_(pa.string(), pa.float64())),
        pa.field(
            "row",
            pa.struct([pa.field("x", pa.int32(), False), pa.field("y", pa.list_(pa.string()))]),
            nullable=False,
        ),
    ]
)


def test_arrow_schema_round_trip() -> None:
    fields = T.fields_from_arrow_schema(ROUND_TRIP_ARROW)
    assert T.fields_to_arrow_schema(fields) == ROUND_TRIP_ARROW


def test_arrow_fields_json_round_trip() -> None:
    fields = T.fields_from_arrow_schema(ROUND_TRIP_ARROW)
    as_json = [T.field_to_json(f) for f in fields]
    assert T.parse_fields_json("p", as_json) == fields
