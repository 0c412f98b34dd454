"""Paimon data types: their JSON form in schema files and their Arrow counterparts.

A schema file spells atomic types as SQL strings (``"INT NOT NULL"``,
``"DECIMAL(10, 2)"``, ``"TIMESTAMP(6) WITH LOCAL TIME ZONE"``) and nested types as
JSON objects (``{"type": "ARRAY", "element": ...}``). Field ids are assigned
depth-first, pre-order, as Paimon does, and are never reused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from shoal.errors import CorruptMetadataError, SchemaMismatchError

MAX_LENGTH = 2147483647

# Roots of atomic types, as they appear in type strings.
BOOLEAN = "BOOLEAN"
TINYINT = "TINYINT"
SMALLINT = "SMALLINT"
INT = "INT"
BIGINT = "BIGINT"
FLOAT = "FLOAT"
DOUBLE = "DOUBLE"
DECIMAL = "DECIMAL"
CHAR = "CHAR"
VARCHAR = "VARCHAR"
BINARY = "BINARY"
VARBINARY = "VARBINARY"
DATE = "DATE"
TIME = "TIME"
TIMESTAMP = "TIMESTAMP"
TIMESTAMP_LTZ = "TIMESTAMP_LTZ"

_DEFAULT_PARAMS: dict[str, tuple[int, ...]] = {
    DECIMAL: (10, 0),
    CHAR: (1,),
    VARCHAR: (1,),
    BINARY: (1,),
    VARBINARY: (1,),
    TIME: (0,),
    TIMESTAMP: (6,),
    TIMESTAMP_LTZ: (6,),
}
_ALIASES = {
    "INTEGER": INT,
    "BOOL": BOOLEAN,
    "NUMERIC": DECIMAL,
    "DEC": DECIMAL,
    "DOUBLE PRECISION": DOUBLE,
    "STRING": VARCHAR,
    "BYTES": VARBINARY,
    "TIMESTAMP WITHOUT TIME ZONE": TIMESTAMP,
    "TIME WITHOUT TIME ZONE": TIME,
    "TIMESTAMP WITH LOCAL TIME ZONE": TIMESTAMP_LTZ,
    "TIMESTAMP_LTZ": TIMESTAMP_LTZ,
}
_ATOMIC = re.compile(
    r"^\s*(?P<root>[A-Z_]+(?: [A-Z]+)*?)\s*(?:\((?P<params>[\d\s,]*)\))?"
    r"(?P<ltz>\s+WITH LOCAL TIME ZONE)?(?P<notnull>\s+NOT NULL)?\s*$"
)


@dataclass(frozen=True, slots=True)
class AtomicType:
    """A scalar type. ``precision`` is the length of CHAR/VARCHAR/BINARY/VARBINARY, the
    precision of DECIMAL/TIME/TIMESTAMP; ``scale`` is DECIMAL's scale."""

    root: str
    nullable: bool = True
    precision: int | None = None
    scale: int | None = None


@dataclass(frozen=True, slots=True)
class ArrayType:
    element: DataType
    nullable: bool = True


@dataclass(frozen=True, slots=True)
class MapType:
    key: DataType
    value: DataType
    nullable: bool = True


@dataclass(frozen=True, slots=True)
class DataField:
    id: int
    name: str
    type: DataType
    description: str | None = None


@dataclass(frozen=True, slots=True)
class RowType:
    fields: tuple[DataField, ...]
    nullable: bool = True


DataType = AtomicType | ArrayType | MapType | RowType


# --- type strings and JSON ---------------------------------------------------------------------


def _parse_atomic(text: str) -> AtomicType:
    match = _ATOMIC.match(text.upper())
    if match is None:
        raise ValueError(f"unknown data type {text!r}")
    root = match.group("root")
    if match.group("ltz"):
        root = TIMESTAMP_LTZ if root == TIMESTAMP else root + " WITH LOCAL TIME ZONE"
    nullable = match.group("notnull") is None
    if root in ("STRING", "BYTES"):
        return AtomicType(_ALIASES[root], nullable, MAX_LENGTH)
    root = _ALIASES.get(root, root)
    params_text = match.group("params")
    params = tuple(int(p) for p in params_text.split(",")) if params_text else ()
    if root in _DEFAULT_PARAMS:
        defaults = _DEFAULT_PARAMS[root]
        if len(params) > len(defaults):
            raise ValueError(f"unknown data type {text!r}")
        params = params + defaults[len(params) :]
        _check_params(text, root, params)
        if root == DECIMAL:
            return AtomicType(root, nullable, params[0], params[1])
        return AtomicType(root, nullable, params[0])
    if root not in (BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DATE) or params:
        raise ValueError(f"unknown data type {text!r}")
    return AtomicType(root, nullable)


def _check_params(text: str, root: str, params: tuple[int, ...]) -> None:
    """Paimon's bounds on a type's length, precision and scale."""
    if root == DECIMAL:
        precision, scale = params
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise ValueError(
                f"data type {text!r}: DECIMAL needs a precision of 1 to 38 and a scale of "
                "0 to the precision"
            )
    elif root in (TIME, TIMESTAMP, TIMESTAMP_LTZ):
        if not 0 <= params[0] <= 9:
            raise ValueError(f"data type {text!r}: the precision must be 0 to 9")
    elif not 0 <= params[0] <= MAX_LENGTH:
        raise ValueError(f"data type {text!r}: the length must be 0 to {MAX_LENGTH}")


def type_string(t: AtomicType) -> str:
    """The SQL string Paimon writes for an atomic type."""
    root = t.root
    if root == VARCHAR and t.precision == MAX_LENGTH:
        text = "STRING"
    elif root == VARBINARY and t.precision == MAX_LENGTH:
        text = "BYTES"
    elif root == DECIMAL:
        text = f"DECIMAL({t.precision}, {t.scale})"
    elif root == TIMESTAMP_LTZ:
        text = f"TIMESTAMP({t.precision}) WITH LOCAL TIME ZONE"
    elif t.precision is not None:
        text = f"{root}({t.precision})"
    else:
        text = root
    return text if t.nullable else text + " NOT NULL"


def parse_type(value: Any, next_id: list[int] | None = None) -> DataType:
    """A data type from its schema-file JSON (a string or an object).

    Raises:
        ValueError: for an unknown type, or one nested deeper than ``MAX_NESTING``;
            callers wrap it with the file's name.
    """
    return _parse_type(value, 0)


# Nested types deeper than this are refused: no real schema comes near, and every
# recursive walk over a type (Arrow conversion, comparison, JSON) stays far from
# Python's recursion limit.
MAX_NESTING = 64


def _parse_type(value: Any, depth: int) -> DataType:
    if depth > MAX_NESTING:
        raise ValueError(f"data type nested deeper than {MAX_NESTING} levels")
    if isinstance(value, str):
        return _parse_atomic(value)
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise ValueError(f"not a data type: {value!r}")
    kind, _, rest = value["type"].partition(" ")
    nullable = rest.strip().upper() != "NOT NULL"
    if kind == "ARRAY":
        return ArrayType(_parse_type(value["element"], depth + 1), nullable)
    if kind == "MULTISET":
        raise ValueError("MULTISET columns are not supported")
    if kind == "MAP":
        key, item = _parse_type(value["key"], depth + 1), _parse_type(value["value"], depth + 1)
        return MapType(key, item, nullable)
    if kind == "ROW":
        fields = value["fields"]
        if not isinstance(fields, list):
            raise ValueError(f"the fields of a ROW type are not a list: {fields!r}")
        return RowType(tuple(_parse_field(f, depth + 1) for f in fields), nullable)
    raise ValueError(f"unknown data type {value!r}")


def parse_field(value: Any) -> DataField:
    return _parse_field(value, 0)


def _parse_field(value: Any, depth: int) -> DataField:
    field_id, name, description = value["id"], value["name"], value.get("description")
    if not isinstance(field_id, int) or isinstance(field_id, bool) or not 0 <= field_id < 2**31:
        raise ValueError(f"field id {field_id!r} is not a non-negative 32-bit integer")
    if not isinstance(name, str) or not name:
        raise ValueError(f"field name {name!r} is not a non-empty string")
    if description is not None and not isinstance(description, str):
        raise ValueError(f"description of field {name!r} is not a string")
    return DataField(field_id, name, _parse_type(value["type"], depth), description)


def type_to_json(t: DataType) -> Any:
    suffix = "" if t.nullable else " NOT NULL"
    if isinstance(t, AtomicType):
        return type_string(t)
    if isinstance(t, ArrayType):
        return {"type": "ARRAY" + suffix, "element": type_to_json(t.element)}
    if isinstance(t, MapType):
        return {"type": "MAP" + suffix, "key": type_to_json(t.key), "value": type_to_json(t.value)}
    return {"type": "ROW" + suffix, "fields": [field_to_json(f) for f in t.fields]}


def field_to_json(f: DataField) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f.id, "name": f.name, "type": type_to_json(f.type)}
    if f.description is not None:
        out["description"] = f.description
    return out


def highest_field_id(fields: tuple[DataField, ...] | list[DataField]) -> int:
    """The largest field id among ``fields`` and every nested field (-1 if none)."""
    highest = -1
    for f in fields:
        highest = max(highest, f.id, _highest_in(f.type))
    return highest


def _highest_in(t: DataType) -> int:
    if isinstance(t, RowType):
        return highest_field_id(t.fields)
    if isinstance(t, ArrayType):
        return _highest_in(t.element)
    if isinstance(t, MapType):
        return max(_highest_in(t.key), _highest_in(t.value))
    return -1


# --- Arrow -------------------------------------------------------------------------------------


def _timestamp_unit(precision: int) -> str:
    if precision == 0:
        return "s"
    if precision <= 3:
        return "ms"
    if precision <= 6:
        return "us"
    return "ns"


def to_arrow(t: DataType) -> pa.DataType:
    """The Arrow type that holds values of ``t`` (nullability lives on the Arrow field)."""
    if isinstance(t, ArrayType):
        return pa.list_(pa.field("element", to_arrow(t.element), t.element.nullable))
    if isinstance(t, MapType):
        return pa.map_(
            pa.field("key", to_arrow(t.key), False),
            pa.field("value", to_arrow(t.value), t.value.nullable),
        )
    if isinstance(t, RowType):
        return pa.struct([field_to_arrow(f) for f in t.fields])
    root = t.root
    simple = _SIMPLE_TO_ARROW.get(root)
    if simple is not None:
        return simple
    assert t.precision is not None
    if root == DECIMAL:
        assert t.scale is not None
        return pa.decimal128(t.precision, t.scale)
    if root == TIME:
        p = t.precision
        return pa.time32("s" if p == 0 else "ms") if p <= 3 else pa.time64(_timestamp_unit(p))
    if root == TIMESTAMP:
        return pa.timestamp(_timestamp_unit(t.precision))
    if root == TIMESTAMP_LTZ:
        return pa.timestamp(_timestamp_unit(t.precision), tz="UTC")
    raise AssertionError(root)


_SIMPLE_TO_ARROW: dict[str, pa.DataType] = {
    BOOLEAN: pa.bool_(),
    TINYINT: pa.int8(),
    SMALLINT: pa.int16(),
    INT: pa.int32(),
    BIGINT: pa.int64(),
    FLOAT: pa.float32(),
    DOUBLE: pa.float64(),
    DATE: pa.date32(),
    CHAR: pa.string(),
    VARCHAR: pa.string(),
    BINARY: pa.binary(),
    VARBINARY: pa.binary(),
}


def field_to_arrow(f: DataField) -> pa.Field:
    return pa.field(f.name, to_arrow(f.type), f.type.nullable)


def fields_to_arrow_schema(fields: tuple[DataField, ...] | list[DataField]) -> pa.Schema:
    return pa.schema([field_to_arrow(f) for f in fields])


_ARROW_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def from_arrow(t: pa.DataType, nullable: bool, next_id: list[int]) -> DataType:
    """The Paimon type for an Arrow type; nested fields draw ids from ``next_id``.

    Raises:
        SchemaMismatchError: for Arrow types Paimon has no counterpart for.
    """
    if pa.types.is_dictionary(t):
        return from_arrow(t.value_type, nullable, next_id)
    if pa.types.is_boolean(t):
        return AtomicType(BOOLEAN, nullable)
    for check, root in (
        (pa.types.is_int8, TINYINT),
        (pa.types.is_int16, SMALLINT),
        (pa.types.is_int32, INT),
        (pa.types.is_int64, BIGINT),
        (pa.types.is_uint8, SMALLINT),
        (pa.types.is_uint16, INT),
        (pa.types.is_uint32, BIGINT),
        (pa.types.is_float32, FLOAT),
        (pa.types.is_float64, DOUBLE),
        (pa.types.is_date32, DATE),
        (pa.types.is_date64, DATE),
    ):
        if check(t):
            return AtomicType(root, nullable)
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise SchemaMismatchError(f"decimal precision {t.precision} is above Paimon's 38")
        return AtomicType(DECIMAL, nullable, t.precision, t.scale)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return AtomicType(VARCHAR, nullable, MAX_LENGTH)
    if pa.types.is_fixed_size_binary(t):
        return AtomicType(BINARY, nullable, t.byte_width)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return AtomicType(VARBINARY, nullable, MAX_LENGTH)
    if pa.types.is_time(t):
        return AtomicType(TIME, nullable, min(_ARROW_UNIT_PRECISION[t.unit], 3))
    if pa.types.is_timestamp(t):
        root = TIMESTAMP if t.tz is None else TIMESTAMP_LTZ
        return AtomicType(root, nullable, _ARROW_UNIT_PRECISION[t.unit])
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        vf = t.value_field
        return ArrayType(from_arrow(vf.type, vf.nullable, next_id), nullable)
    if pa.types.is_map(t):
        key = from_arrow(t.key_field.type, False, next_id)
        item = from_arrow(t.item_field.type, t.item_field.nullable, next_id)
        return MapType(key, item, nullable)
    if pa.types.is_struct(t):
        nested = []
        for i in range(t.num_fields):
            child = t.field(i)
            field_id = next_id[0]
            next_id[0] += 1
            nested.append(
                DataField(field_id, child.name, from_arrow(child.type, child.nullable, next_id))
            )
        return RowType(tuple(nested), nullable)
    raise SchemaMismatchError(f"Arrow type {t} has no Paimon counterpart; cast the column first")


def fields_from_arrow_schema(schema: pa.Schema) -> tuple[DataField, ...]:
    """Paimon fields for an Arrow schema, ids assigned depth-first from 0."""
    next_id = [0]
    out = []
    for f in schema:
        field_id = next_id[0]
        next_id[0] += 1
        out.append(DataField(field_id, f.name, from_arrow(f.type, f.nullable, next_id)))
    return tuple(out)


def parse_fields_json(path: str, value: Any) -> tuple[DataField, ...]:
    """Fields from a metadata file, with errors that name the file."""
    if not isinstance(value, list):
        raise CorruptMetadataError(path, "the field list is not a JSON array")
    try:
        return tuple(parse_field(f) for f in value)
    except KeyError as exc:
        raise CorruptMetadataError(path, f"bad field list: a field has no {exc}") from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise CorruptMetadataError(path, f"bad field list: {exc}") from None
