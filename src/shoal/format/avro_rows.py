"""Paimon's Avro layout of data files: the Avro schema of a row type, and rows
between Arrow and Avro records.

Paimon (Java, 0.9 and 1.0) writes each column as (a nullable type as the union
``["null", T]`` with default null):

- BOOLEAN, FLOAT, DOUBLE as themselves; TINYINT, SMALLINT and INT as ``int``, BIGINT
  as ``long``; CHAR and VARCHAR as ``string``; BINARY and VARBINARY as ``bytes``;
- DECIMAL as ``bytes`` with the ``decimal`` logical type (big-endian two's complement
  of the unscaled value);
- DATE as ``int`` (``date``), TIME of precision <= 3 as ``int`` (``time-millis``);
- TIMESTAMP of precision <= 3 as ``long`` (``timestamp-millis``), <= 6
  (``timestamp-micros``); TIMESTAMP_LTZ likewise with ``local-timestamp-millis`` and
  ``local-timestamp-micros`` (the same instants since the epoch); higher precisions
  have no Avro type (Paimon refuses them);
- ARRAY as ``array``; MAP with CHAR or VARCHAR keys as ``map``, with other keys as an
  ``array`` of ``key``/``value`` records (with the ``map`` logical type);
- ROW as a ``record`` named ``<parent>_<field>``, the top level
  ``org.apache.paimon.avro.generated.record``.

Reading takes each file's own schema (its header) with the logical types left out, so
values arrive as the integers and bytes stored, and builds Arrow arrays of them.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pyarrow as pa

from shoal.errors import SchemaMismatchError
from shoal.format import types as T

ROOT_NAME = "org.apache.paimon.avro.generated.record"


def unstorable(t: T.DataType) -> str | None:
    """Why Paimon's Avro files cannot hold values of ``t`` (None when they can)."""
    if isinstance(t, T.ArrayType):
        return unstorable(t.element)
    if isinstance(t, T.MapType):
        return unstorable(t.key) or unstorable(t.value)
    if isinstance(t, T.RowType):
        return next((r for f in t.fields if (r := unstorable(f.type))), None)
    if t.root in (T.TIMESTAMP, T.TIMESTAMP_LTZ) and (t.precision or 0) > 6:
        return f"Avro holds timestamps to the microsecond, not {T.type_string(t)}"
    if t.root == T.TIME and (t.precision or 0) > 3:
        return f"Avro holds times to the millisecond, not {T.type_string(t)}"
    return None


def _nullable(schema: Any, nullable: bool) -> Any:
    return ["null", schema] if nullable else schema


def avro_type(t: pa.DataType, nullable: bool, name: str) -> Any:
    """The Avro schema Paimon writes for values of Arrow type ``t`` (shoal's Arrow type
    of a Paimon type); ``name`` names its records."""
    if pa.types.is_struct(t):
        return _nullable(record_schema(list(t), name), nullable)
    if pa.types.is_list(t):
        items = avro_type(t.value_type, t.value_field.nullable, name)
        return _nullable({"type": "array", "items": items}, nullable)
    if pa.types.is_map(t):
        value_type = avro_type(t.item_type, t.item_field.nullable, f"{name}_value")
        if pa.types.is_string(t.key_type):
            schema: Any = {
                "type": "map",
                "values": avro_type(t.item_type, t.item_field.nullable, name),
            }
        else:
            value: dict[str, Any] = {"name": "value", "type": value_type}
            if t.item_field.nullable:
                value["default"] = None
            key = {"name": "key", "type": avro_type(t.key_type, False, f"{name}_key")}
            entry = {"type": "record", "name": name, "fields": [key, value]}
            schema = {"type": "array", "items": entry, "logicalType": "map"}
        return _nullable(schema, nullable)
    return _nullable(_atomic(t), nullable)


def _atomic(t: pa.DataType) -> Any:
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_binary(t):
        return "bytes"
    if pa.types.is_decimal(t):
        return {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_timestamp(t) and t.unit != "ns":
        unit = "micros" if t.unit == "us" else "millis"
        local = "local-" if t.tz is not None else ""
        return {"type": "long", "logicalType": f"{local}timestamp-{unit}"}
    raise SchemaMismatchError(f"Paimon's Avro data files have no type for {t}")


def record_schema(fields: list[pa.Field], name: str) -> Any:
    """The Avro record of ``fields`` (a nullable field defaults to null)."""
    out = []
    for f in fields:
        field: dict[str, Any] = {
            "name": f.name,
            "type": avro_type(f.type, f.nullable, f"{name}_{f.name}"),
        }
        if f.nullable:
            field["default"] = None
        out.append(field)
    return {"type": "record", "name": name, "fields": out}


def file_schema(schema: pa.Schema) -> Any:
    """The Avro schema of a data file of ``schema`` (a table's Arrow schema, or a
    primary-key table's file schema): the record as a nullable row, as Paimon writes
    it."""
    return ["null", record_schema(list(schema), ROOT_NAME)]


def without_logical_types(schema: Any) -> Any:
    """``schema`` with every logical type left out (values read as stored)."""
    if isinstance(schema, list):
        return [without_logical_types(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k != "logicalType"}
    if schema.get("logicalType") == "decimal":
        out.pop("precision", None)
        out.pop("scale", None)
    if "fields" in out:
        out["fields"] = [{**f, "type": without_logical_types(f["type"])} for f in out["fields"]]
    if "items" in out:
        out["items"] = without_logical_types(out["items"])
    if "values" in out:
        out["values"] = without_logical_types(out["values"])
    return out


# --- values ----------------------------------------------------------------------------------

Convert = Callable[[Any], Any]


def _decimal(scale: int) -> Convert:
    def convert(value: Any) -> Any:
        if value is None:
            return None
        return Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-scale)

    return convert


def _list_of(inner: Convert | None) -> Convert | None:
    if inner is None:
        return None
    return lambda v: None if v is None else [inner(x) for x in v]


def reader(t: pa.DataType) -> Convert | None:
    """The conversion of a value of Arrow type ``t`` as Avro holds it (logical types
    left out) into one Arrow takes for ``t`` in stored units (None: as it is)."""
    if pa.types.is_list(t):
        return _list_of(reader(t.value_type))
    if pa.types.is_map(t):
        key, value = reader(t.key_type), reader(t.item_type)
        k: Convert = key or _same
        v: Convert = value or _same
        if pa.types.is_string(t.key_type):
            return lambda m: None if m is None else [(k(a), v(b)) for a, b in m.items()]
        return lambda m: None if m is None else [(k(e["key"]), v(e["value"])) for e in m]
    if pa.types.is_struct(t):
        return _record_of([(f.name, reader(f.type)) for f in t])
    if pa.types.is_decimal(t):
        return _decimal(t.scale)
    return None


def writer(t: pa.DataType) -> Convert | None:
    """The conversion of a value of Arrow type ``t`` (as ``to_pylist`` gives it in the
    types of :func:`integer_schema`) into what the Avro schema holds (None: as it is)."""
    if pa.types.is_list(t):
        return _list_of(writer(t.value_type))
    if pa.types.is_map(t):
        key, value = writer(t.key_type), writer(t.item_type)
        k: Convert = key or _same
        v: Convert = value or _same
        if pa.types.is_string(t.key_type):
            return lambda m: None if m is None else {k(a): v(b) for a, b in m}
        return lambda m: None if m is None else [{"key": k(a), "value": v(b)} for a, b in m]
    if pa.types.is_struct(t):
        return _record_of([(f.name, writer(f.type)) for f in t])
    return None  # a decimal goes as it is: the Avro writer encodes its unscaled bytes


def _same(value: Any) -> Any:
    return value


def _record_of(inner: list[tuple[str, Convert | None]]) -> Convert | None:
    if all(c is None for _, c in inner):
        return None
    return lambda r: None if r is None else {n: (c(r[n]) if c else r[n]) for n, c in inner}


def _integers(t: pa.DataType) -> pa.DataType:
    """``t`` with dates, times and timestamps as the integers Avro stores."""
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_integers(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_integers(t.key_type)),
            t.item_field.with_type(_integers(t.item_type)),
        )
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_integers(f.type)) for f in t])
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    return t


def integer_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` (in stored units) with temporal values as the integers Avro stores."""
    return pa.schema([f.with_type(_integers(f.type)) for f in schema])
