"""The compiled Avro codecs agree with fastavro, byte for byte and value for value, on
generated schemas and values; corrupt bytes only ever raise ValueError."""

from __future__ import annotations

import contextlib
import io
import json
import string
from datetime import UTC, datetime, timedelta
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoal.format import avro
from shoal.format.avro import compiled as C
from shoal.format.manifest import MANIFEST_ENTRY_AVRO, MANIFEST_FILE_META_AVRO

_names = st.text(string.ascii_letters + "_", min_size=1, max_size=8)
_primitive = st.sampled_from(["null", "boolean", "int", "long", "double", "bytes", "string"])


def _schemas(depth: int = 2) -> st.SearchStrategy[Any]:
    leaf = st.one_of(
        _primitive,
        st.just({"type": "long", "logicalType": "timestamp-millis"}),
        st.just({"type": "long", "logicalType": "timestamp-micros"}),
    )
    if depth == 0:
        return leaf
    inner = _schemas(depth - 1)
    return st.one_of(
        leaf,
        inner.map(lambda t: ["null", t] if not isinstance(t, list) and t != "null" else t),
        inner.map(lambda t: {"type": "array", "items": t}),
        st.lists(st.tuples(_names, inner), min_size=1, max_size=5, unique_by=lambda f: f[0]).map(
            lambda fields: {"type": "record", "fields": [{"name": n, "type": t} for n, t in fields]}
        ),
    )


_record_counter = iter(range(10**9))


def _named(schema: Any) -> Any:
    """Give every record a unique name (Avro requires named records)."""
    if isinstance(schema, list):
        return [_named(s) for s in schema]
    if isinstance(schema, dict):
        out = dict(schema)
        if out["type"] == "record":
            out["name"] = f"r{next(_record_counter)}"
            out["fields"] = [{**f, "type": _named(f["type"])} for f in out["fields"]]
        elif out["type"] == "array":
            out["items"] = _named(out["items"])
        return out
    return schema


def _values(schema: Any) -> st.SearchStrategy[Any]:
    if isinstance(schema, list):
        return st.one_of(st.none(), _values(schema[1]))
    if isinstance(schema, dict):
        kind = schema["type"]
        if kind == "record":
            return st.fixed_dictionaries({f["name"]: _values(f["type"]) for f in schema["fields"]})
        if kind == "array":
            return st.lists(_values(schema["items"]), max_size=4)
        unit = "milliseconds" if schema["logicalType"] == "timestamp-millis" else "microseconds"
        return st.integers(-(10**12), 10**13).map(
            lambda n: datetime(1970, 1, 1) + timedelta(**{unit: n})
        )
    return {
        "null": st.none(),
        "boolean": st.booleans(),
        "int": st.integers(-(2**31), 2**31 - 1),
        "long": st.integers(-(2**63), 2**63 - 1),
        "double": st.floats(allow_nan=False),
        "bytes": st.binary(max_size=20),
        "string": st.text(max_size=20),
    }[schema]


@st.composite
def _schema_and_value(draw: st.DrawFn) -> tuple[Any, Any]:
    schema = _named(draw(_schemas()))
    return schema, draw(_values(schema))


def _fastavro_bytes(schema: Any, value: Any) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), _for_fastavro(value))
    return buf.getvalue()


def _for_fastavro(value: Any) -> Any:
    # fastavro reads naive datetimes as local time; shoal's are UTC.
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC)
    if isinstance(value, dict):
        return {k: _for_fastavro(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_for_fastavro(v) for v in value]
    return value


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_schema_and_value())
def test_codecs_agree_with_fastavro(case: tuple[Any, Any]) -> None:
    schema, value = case
    expected = _fastavro_bytes(schema, value)
    out = bytearray()
    C.compile_encoder(schema)(value, out)
    assert bytes(out) == expected
    decoded, end = C.compile_decoder(schema)(expected, 0)
    assert end == len(expected)
    assert decoded == value


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_schema_and_value(), st.data())
def test_corrupt_bytes_raise_value_error_only(case: tuple[Any, Any], data: st.DataObject) -> None:
    schema, value = case
    good = _fastavro_bytes(schema, value)
    damage = data.draw(
        st.one_of(
            st.integers(0, max(len(good) - 1, 0)).map(lambda n: good[:n]),
            st.binary(min_size=1, max_size=40),
            st.tuples(st.integers(0, len(good)), st.binary(min_size=1, max_size=4)).map(
                lambda t: good[: t[0]] + t[1] + good[t[0] + len(t[1]) :]
            ),
        )
    )
    decode = C.compile_decoder(schema)
    with contextlib.suppress(ValueError):  # any other exception fails the test
        avro.container.decode_block(decode, damage, 1)


def test_field_names_cannot_inject_code() -> None:
    hostile = "x'): import os; os._exit(3) #"
    schema = {"type": "record", "name": "r", "fields": [{"name": hostile, "type": "long"}]}
    out = bytearray()
    C.compile_encoder(schema)({hostile: 7}, out)
    assert C.compile_decoder(schema)(bytes(out), 0) == ({hostile: 7}, len(out))


def test_unsupported_schemas_are_left_to_fastavro() -> None:
    recursive = {
        "type": "record",
        "name": "node",
        "fields": [{"name": "next", "type": ["null", "node"]}],
    }
    decimal = {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}
    for schema in (recursive, decimal):
        with pytest.raises(C.UnsupportedSchemaError):
            C.compile_decoder(schema)
    with pytest.raises(C.UnsupportedSchemaError):
        C.compile_encoder(["null", "int", "string"])
    # The container falls back to fastavro for such a schema.
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(recursive), [{"next": {"next": None}}])
    assert avro.container.read_records(buf.getvalue()) == [{"next": {"next": None}}]


@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard"])
@pytest.mark.parametrize("schema", [MANIFEST_ENTRY_AVRO, MANIFEST_FILE_META_AVRO])
def test_container_files_read_by_fastavro(schema: dict[str, Any], codec: str) -> None:
    """Files of many blocks, written here, read by fastavro as they were written."""
    records = [_manifest_record(schema, i) for i in range(3000)]
    data = avro.container.write_records(schema, records, codec)
    read = list(fastavro.reader(io.BytesIO(data)))
    assert len(read) == len(records)
    assert [r["_FILE_NAME"] if "_FILE_NAME" in r else r["_FILE"]["_FILE_NAME"] for r in read] == [
        r["_FILE_NAME"] if "_FILE_NAME" in r else r["_FILE"]["_FILE_NAME"] for r in records
    ]
    assert avro.container.read_records(data) == [_naive(r) for r in read]
    header_schema = json.loads(fastavro.reader(io.BytesIO(data)).metadata["avro.schema"])
    assert header_schema["fields"][0]["name"] == "_VERSION"


def _naive(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, dict):
        return {k: _naive(v) for k, v in value.items()}
    return value


def _manifest_record(schema: dict[str, Any], i: int) -> dict[str, Any]:
    stats = {"_MIN_VALUES": b"\x00" * 8, "_MAX_VALUES": b"\x01" * 8, "_NULL_COUNTS": [0, None]}
    if schema is MANIFEST_FILE_META_AVRO:
        return {
            "_VERSION": 2,
            "_FILE_NAME": f"manifest-{i}",
            "_FILE_SIZE": i * 1000,
            "_NUM_ADDED_FILES": i,
            "_NUM_DELETED_FILES": 0,
            "_PARTITION_STATS": stats,
            "_SCHEMA_ID": 0,
        }
    file = {
        "_FILE_NAME": f"data-{i}.parquet",
        "_FILE_SIZE": 10_000 + i,
        "_ROW_COUNT": 1 << (i % 40),
        "_MIN_KEY": b"",
        "_MAX_KEY": b"",
        "_KEY_STATS": stats,
        "_VALUE_STATS": stats,
        "_MIN_SEQUENCE_NUMBER": -i,
        "_MAX_SEQUENCE_NUMBER": i,
        "_SCHEMA_ID": 0,
        "_LEVEL": i % 5,
        "_EXTRA_FILES": [f"x{i}"] if i % 3 == 0 else [],
        "_CREATION_TIME": datetime(2026, 11, 1, tzinfo=UTC) + timedelta(milliseconds=i),
        "_FILE_SOURCE": i % 2,
        "_VALUE_STATS_COLS": None if i % 2 else ["a", "b"],
    }
    return {
        "_VERSION": 2,
        "_KIND": i % 2,
        "_PARTITION": bytes([i % 256]) * 4,
        "_BUCKET": i % 7,
        "_TOTAL_BUCKETS": 7,
        "_FILE": file,
    }


def _project(value: Any, schema: Any, keep: Any) -> Any:
    """What a projected decode returns: the kept fields of records, recursively."""
    if keep is None or value is None:
        return value
    if isinstance(schema, list):
        return _project(value, schema[1], keep)
    if schema["type"] == "array":
        return [_project(v, schema["items"], keep) for v in value]
    fields = {f["name"]: f["type"] for f in schema["fields"]}
    return {k: _project(value[k], fields[k], sub) for k, sub in keep.items() if k in fields}


def _some_fields(schema: Any) -> st.SearchStrategy[Any]:
    """A projection of ``schema``: for each record, a subset of its fields."""
    if isinstance(schema, list):
        return _some_fields(schema[1])
    if isinstance(schema, dict) and schema["type"] == "array":
        return _some_fields(schema["items"])
    if not isinstance(schema, dict) or schema["type"] != "record":
        return st.none()
    return st.fixed_dictionaries(
        {},
        optional={f["name"]: _some_fields(f["type"]) for f in schema["fields"]},
    )


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(_schema_and_value(), st.data())
def test_projected_decoding_reads_past_what_it_skips(
    case: tuple[Any, Any], data: st.DataObject
) -> None:
    schema, value = case
    keep = data.draw(_some_fields(schema))
    encoded = _fastavro_bytes(schema, value) + b"\x02"  # a marker after the value
    decoded, end = C.compile_decoder(schema, keep)(encoded, 0)
    assert end == len(encoded) - 1
    assert decoded == _project(value, schema, keep)


@pytest.mark.parametrize("schema", ["string", "bytes"])
@pytest.mark.parametrize("length", [b"\x01", b"\x7f", b"\x81\x01"])
def test_negative_lengths_are_corrupt(schema: str, length: bytes) -> None:
    decode = C.compile_decoder(schema)
    with pytest.raises(ValueError, match="bad Avro length"):
        decode(length + b"abc", 0)


# --- building objects instead of dicts -----------------------------------------------------------

_POINT = {
    "type": "record",
    "name": "point",
    "fields": [
        {"name": "x", "type": "long"},
        {"name": "label", "type": ["null", "string"]},
        {"name": "skipped", "type": {"type": "array", "items": "long"}},
        {"name": "y", "type": "long"},
    ],
}


def _point_bytes(x: int, label: str | None, y: int) -> bytes:
    out = bytearray()
    C.compile_encoder(_POINT)({"x": x, "label": label, "skipped": [1, 2], "y": y}, out)
    return bytes(out)


def test_build_calls_make_with_the_fields_in_its_order() -> None:
    build = C.Build(
        lambda *values: values, [("y", None, True), ("x", None, True), ("label", None, False)]
    )
    data = _point_bytes(-5, "here", 300)
    decode = C.compile_decoder(_POINT, build)
    assert decode(data, 0) == ((300, -5, "here"), len(data))


def test_build_passes_none_for_an_optional_field_the_schema_lacks() -> None:
    build = C.Build(lambda *values: values, [("x", None, True), ("z", None, False)])
    data = _point_bytes(7, None, 1)
    assert C.compile_decoder(_POINT, build)(data, 0) == ((7, None), len(data))


def test_build_refuses_a_schema_without_a_required_field() -> None:
    build = C.Build(lambda *values: values, [("z", None, True)])
    with pytest.raises(C.UnsupportedSchemaError, match="'z'"):
        C.compile_decoder(_POINT, build)


def test_build_nests_in_arrays_and_unions() -> None:
    schema = {
        "type": "record",
        "name": "outer",
        "fields": [{"name": "points", "type": ["null", {"type": "array", "items": _POINT}]}],
    }
    inner = C.Build(lambda x, y: x + y, [("x", None, True), ("y", None, True)])
    outer = C.Build(lambda points: points, [("points", inner, True)])
    out = bytearray()
    record = {"points": [{"x": 1, "label": None, "skipped": [], "y": 2}]}
    C.compile_encoder(schema)(record, out)
    assert C.compile_decoder(schema, outer)(bytes(out), 0) == ([3], len(out))
