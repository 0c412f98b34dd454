"""Avro binary codecs compiled from a schema into straight-line Python.

Planning decodes one manifest record per live data file, and a commit encodes a
few; a general-purpose Avro library walks the schema for every value it reads or
writes, which makes its per-record cost high for Paimon's wide, nested manifest
records. This module turns a schema into the source of one function that reads
(or writes) a whole record field after field, with the common one-byte varint
inlined, and compiles it once per schema.

Only the schema's types and its field names reach the generated source, the names
as ``repr`` string literals (enum symbols are passed in as constants), so a schema
read from a file cannot inject code. Records decode to dicts keyed by field name
(as ``fastavro`` returns them); ``timestamp-millis`` and ``timestamp-micros``
decode to naive UTC datetimes. A schema with any other logical type, a recursive type, or (for
encoding) a union other than ``["null", T]`` is not compiled:
:class:`UnsupportedSchemaError` tells the caller to use a general library instead.

Decoding is bounded on corrupt input: lengths and counts are checked against the
bytes left, so a damaged length never allocates or loops beyond the buffer, and
errors surface as ``ValueError``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

Decoder = Callable[[bytes, int], tuple[Any, int]]
Encoder = Callable[[Any, bytearray], None]

_EPOCH = datetime(1970, 1, 1)
_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_TIMESTAMPS = {"timestamp-millis": "milliseconds", "timestamp-micros": "microseconds"}
_FROM_TIMESTAMPS = {"timestamp-millis": "from_millis", "timestamp-micros": "from_micros"}


class UnsupportedSchemaError(ValueError):
    """The schema uses a feature these compiled codecs leave to a general library."""


def read_long(b: bytes, p: int) -> tuple[int, int]:
    """A zig-zag varint at ``p`` (any length) and the position after it."""
    shift = n = 0
    while True:
        x = b[p]
        p += 1
        n |= (x & 0x7F) << shift
        if x < 0x80:
            return (n >> 1) ^ -(n & 1), p
        shift += 7
        if shift > 63:
            raise ValueError("Avro varint longer than 10 bytes")


# The values of the one-byte zig-zag varints, by byte.
_ZIGZAG = tuple((x >> 1) ^ -(x & 1) for x in range(128))


def write_long(out: bytearray, n: int) -> None:
    n = (n << 1) ^ (n >> 63)
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _from_millis(v: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=v)


def _from_micros(v: int) -> datetime:
    return _EPOCH + timedelta(microseconds=v)


def _since_epoch(value: datetime) -> timedelta:
    """Time since the epoch of a datetime; a naive one is taken as UTC."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value - _EPOCH


def _array_count(b: bytes, p: int) -> tuple[int, int]:
    """The item count of the next array or map block (0 ends it); a negative count is
    followed by the block's byte size, which is skipped."""
    c, p = read_long(b, p)
    if c < 0:
        c = -c
        _, p = read_long(b, p)
    if c > len(b) - p + 1:
        raise ValueError("Avro block count exceeds the bytes left")
    return c, p


class _Source:
    """Generated source, fresh variable names, and the constants the code refers to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}
        self._counter = 0

    def fresh(self, prefix: str = "v") -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def constant(self, value: Any) -> str:
        name = self.fresh("c")
        self.constants[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def _named(schema: Any, names: dict[str, Any], active: frozenset[str]) -> Any:
    """``schema`` with a reference to a named type resolved (recursion refused)."""
    if isinstance(schema, str) and schema not in _PRIMITIVES:
        if schema in active:
            raise UnsupportedSchemaError(f"recursive type {schema!r}")
        if schema not in names:
            raise UnsupportedSchemaError(f"unknown type {schema!r}")
        return names[schema]
    return schema


def _full_name(schema: dict[str, Any]) -> str:
    name = str(schema.get("name", ""))
    namespace = schema.get("namespace")
    return f"{namespace}.{name}" if namespace and "." not in name else name


def _register(schema: dict[str, Any], names: dict[str, Any]) -> None:
    full = _full_name(schema)
    names[full] = schema
    names[full.rsplit(".", 1)[-1]] = schema


class _Skip:
    """Projection marker: read past the value without building it."""


SKIP = _Skip()


class Build:
    """Projection of a record that builds it by calling ``make`` with the values of
    ``fields`` (name, projection of the value, whether the writer's schema must hold
    it), in that order, instead of building a dict: a field the writer's schema lacks
    passes None (a required one leaves the schema uncompiled), a field ``fields`` does
    not name is read past. What ``make`` raises propagates. Decoders are cached by the
    Build's identity: a Build lives as long as the process (a module constant)."""

    __slots__ = ("fields", "make", "types")

    def __init__(
        self,
        make: Callable[..., Any],
        fields: Sequence[tuple[str, Projection, bool]],
        schema: Mapping[str, Any] | None = None,
    ) -> None:
        """``schema``: the record's own Avro schema. Given, a writer's schema whose
        field of ``fields`` (not itself a Build) has another type leaves the schema
        uncompiled, so ``make`` only ever receives values of the types it expects."""
        self.make = make
        self.fields = tuple(fields)
        self.types = {f["name"]: _shape(f["type"]) for f in (schema or {}).get("fields", ())}


def _shape(schema: Any) -> Any:
    """An Avro type without what does not change its values' types (names, defaults,
    docs), to compare a writer's field type with the expected one."""
    if isinstance(schema, list):
        return tuple(_shape(s) for s in schema)
    if not isinstance(schema, Mapping):
        return schema
    kept = {
        k: v
        for k, v in schema.items()
        if k in ("type", "items", "values", "logicalType", "size", "symbols")
    }
    if "fields" in schema:
        kept["fields"] = tuple((f["name"], _shape(f["type"])) for f in schema["fields"])
    shaped = tuple(sorted((k, _shape(v)) for k, v in kept.items()))
    return shaped[0][1] if len(shaped) == 1 and shaped[0][0] == "type" else shaped


# What to decode of a value: everything (None), nothing (SKIP), or, for a record, a
# mapping of the field names to decode to what to decode of each (other fields
# skipped), or a Build.
Projection = Mapping[str, "Projection | None"] | _Skip | Build | None


class _DecoderBuilder:
    def __init__(self) -> None:
        self.src = _Source()
        self.names: dict[str, Any] = {}

    def value(self, schema: Any, ind: int, active: frozenset[str], keep: Projection = None) -> str:
        """Emit code that reads one value of ``schema``; returns the variable holding it
        (``None`` when the projection skips it)."""
        schema = _named(schema, self.names, active)
        src = self.src
        v = "None" if keep is SKIP else src.fresh()
        if isinstance(schema, list):
            return self._union(schema, ind, active, keep)
        if isinstance(schema, dict):
            kind = schema.get("type")
            logical = schema.get("logicalType")
            if kind == "record":
                return self._record(schema, ind, active, keep)
            if kind == "array":
                return self._array(schema, ind, active, keep)
            if kind == "map":
                return self._map(schema, ind, active, keep)
            if kind == "enum":
                _register(schema, self.names)
                symbols = src.constant(tuple(schema["symbols"]))
                src.emit(ind, "i, p = read_long(b, p)")
                src.emit(ind, f"if not 0 <= i < len({symbols}): raise ValueError('bad enum')")
                if keep is not SKIP:
                    src.emit(ind, f"{v} = {symbols}[i]")
                return v
            if kind == "fixed":
                _register(schema, self.names)
                size = int(schema["size"])
                src.emit(ind, f"if p + {size} > end: raise ValueError('truncated fixed')")
                src.emit(
                    ind, f"p += {size}" if keep is SKIP else f"{v} = b[p:p + {size}]; p += {size}"
                )
                return v
            if logical is not None:
                if logical in _TIMESTAMPS and kind == "long":
                    raw = self.value("long", ind, active, keep)
                    if keep is not SKIP:
                        src.emit(ind, f"{v} = {_FROM_TIMESTAMPS[logical]}({raw})")
                    return v
                raise UnsupportedSchemaError(f"logical type {logical!r}")
            return self.value(kind, ind, active, keep)
        if schema in ("int", "long"):
            if keep is SKIP:
                src.emit(ind, "if b[p] < 128: p += 1")
                src.emit(ind, "else: _, p = read_long(b, p)")
                return v
            src.emit(ind, "x = b[p]")
            src.emit(ind, f"if x < 128: {v} = ZIGZAG[x]; p += 1")
            src.emit(ind, f"else: {v}, p = read_long(b, p)")
        elif schema in ("string", "bytes"):
            src.emit(ind, "x = b[p]")
            src.emit(ind, "if x < 128 and not x & 1: n = x >> 1; p += 1")  # a length >= 0
            src.emit(ind, "else:")
            src.emit(ind + 1, "n, p = read_long(b, p)")
            src.emit(ind + 1, "if n < 0: raise ValueError('bad Avro length')")
            src.emit(ind, "if p + n > end: raise ValueError('bad Avro length')")
            if keep is SKIP:
                src.emit(ind, "p += n")
                return v
            read = "b[p:p + n].decode()" if schema == "string" else "b[p:p + n]"
            src.emit(ind, f"{v} = {read}; p += n")
        elif schema == "null":
            if keep is not SKIP:
                src.emit(ind, f"{v} = None")
        elif schema == "boolean":
            src.emit(ind, "p += 1" if keep is SKIP else f"{v} = b[p] == 1; p += 1")
        elif schema in ("float", "double"):
            fmt, size = ("<f", 4) if schema == "float" else ("<d", 8)
            if keep is SKIP:
                src.emit(ind, f"if p + {size} > end: raise ValueError('truncated number')")
                src.emit(ind, f"p += {size}")
            else:
                src.emit(ind, f"{v} = unpack_from({fmt!r}, b, p)[0]; p += {size}")
        else:
            raise UnsupportedSchemaError(f"type {schema!r}")
        return v

    def _union(
        self, branches: list[Any], ind: int, active: frozenset[str], keep: Projection
    ) -> str:
        src = self.src
        if len(branches) > 63:  # the index would not fit the one-byte varint read here
            raise UnsupportedSchemaError("unions of more than 63 branches")
        v = "None" if keep is SKIP else src.fresh()
        src.emit(ind, "x = b[p]; p += 1")
        for index, branch in enumerate(branches):
            src.emit(ind, f"{'if' if index == 0 else 'elif'} x == {2 * index}:")
            if branch == "null":  # nothing to read
                src.emit(ind + 1, "pass" if keep is SKIP else f"{v} = None")
                continue
            inner = self.value(branch, ind + 1, active, keep)
            src.emit(ind + 1, "pass" if keep is SKIP else f"{v} = {inner}")
        src.emit(ind, "else: raise ValueError('Avro union index out of range')")
        return v

    def _record(
        self, schema: dict[str, Any], ind: int, active: frozenset[str], keep: Projection
    ) -> str:
        _register(schema, self.names)
        inner_active = active | {_full_name(schema)}
        if isinstance(keep, Build):
            return self._built(schema, ind, inner_active, keep)
        parts = []
        for f in schema["fields"]:
            if keep is None:
                field_keep: Projection = None
            elif isinstance(keep, _Skip) or f["name"] not in keep:
                field_keep = SKIP
            else:
                field_keep = keep[f["name"]]
            value = self.value(f["type"], ind, inner_active, field_keep)
            if field_keep is not SKIP:
                parts.append(f"{_literal(f['name'])}: {value}")
        if keep is SKIP:
            return "None"
        v = self.src.fresh()
        self.src.emit(ind, f"{v} = {{{', '.join(parts)}}}")
        return v

    def _built(self, schema: dict[str, Any], ind: int, active: frozenset[str], build: Build) -> str:
        wanted = {name: projection for name, projection, _ in build.fields}
        values: dict[str, str] = {}
        for f in schema["fields"]:
            name = f["name"]
            if name in wanted and name not in values:
                expected = build.types.get(name)
                projection = wanted[name]
                if (
                    expected is not None
                    and not isinstance(projection, Build)
                    and _shape(f["type"]) != expected
                ):
                    raise UnsupportedSchemaError(f"the field {name!r} of another type")
                values[name] = self.value(f["type"], ind, active, projection)
            else:
                self.value(f["type"], ind, active, SKIP)
        arguments = []
        for name, _, required in build.fields:
            if name not in values and required:
                raise UnsupportedSchemaError(f"a record without the field {name!r}")
            arguments.append(values.get(name, "None"))
        v = self.src.fresh()
        self.src.emit(ind, f"{v} = {self.src.constant(build.make)}({', '.join(arguments)})")
        return v

    def _array(
        self, schema: dict[str, Any], ind: int, active: frozenset[str], keep: Projection
    ) -> str:
        src = self.src
        v, c = ("None" if keep is SKIP else src.fresh()), src.fresh("n")
        if keep is not SKIP:
            src.emit(ind, f"{v} = []")
        src.emit(ind, "while True:")
        self._count(c, ind + 1)
        src.emit(ind + 1, f"for _ in range({c}):")
        item = self.value(schema["items"], ind + 2, active, keep)
        src.emit(ind + 2, "pass" if keep is SKIP else f"{v}.append({item})")
        return v

    def _count(self, c: str, ind: int) -> None:
        """Read a block's item count, inlining the common one-byte count."""
        self.src.emit(ind, "x = b[p]")
        self.src.emit(ind, f"if x < 128 and not x & 1: {c} = x >> 1; p += 1")
        self.src.emit(ind, f"else: {c}, p = array_count(b, p)")
        self.src.emit(ind, f"if not {c}: break")

    def _map(
        self, schema: dict[str, Any], ind: int, active: frozenset[str], keep: Projection
    ) -> str:
        src = self.src
        v, c = ("None" if keep is SKIP else src.fresh()), src.fresh("n")
        if keep is not SKIP:
            src.emit(ind, f"{v} = {{}}")
        src.emit(ind, "while True:")
        self._count(c, ind + 1)
        src.emit(ind + 1, f"for _ in range({c}):")
        key = self.value("string", ind + 2, active, keep if keep is SKIP else None)
        item = self.value(schema["values"], ind + 2, active, keep)
        src.emit(ind + 2, "pass" if keep is SKIP else f"{v}[{key}] = {item}")
        return v


class _EncoderBuilder:
    def __init__(self) -> None:
        self.src = _Source()
        self.names: dict[str, Any] = {}

    def value(self, schema: Any, expr: str, ind: int, active: frozenset[str]) -> None:
        """Emit code that appends the encoding of ``expr`` (a value of ``schema``)."""
        schema = _named(schema, self.names, active)
        src = self.src
        if isinstance(schema, list):
            non_null = [s for s in schema if s != "null"]
            if len(schema) != 2 or schema[0] != "null" or len(non_null) != 1:
                raise UnsupportedSchemaError("unions other than [null, T]")
            v = src.fresh()
            src.emit(ind, f"{v} = {expr}")
            src.emit(ind, f"if {v} is None: out.append(0)")
            src.emit(ind, "else:")
            src.emit(ind + 1, "out.append(2)")
            self.value(non_null[0], v, ind + 1, active)
            return
        if isinstance(schema, dict):
            kind = schema.get("type")
            if kind == "record":
                _register(schema, self.names)
                inner = active | {_full_name(schema)}
                r = src.fresh("r")
                src.emit(ind, f"{r} = {expr}")
                for f in schema["fields"]:
                    self.value(f["type"], f"{r}.get({_literal(f['name'])})", ind, inner)
                return
            if kind == "array":
                v, item = src.fresh(), src.fresh("i")
                src.emit(ind, f"{v} = {expr}")
                src.emit(ind, f"if {v}:")
                src.emit(ind + 1, f"write_long(out, len({v}))")
                src.emit(ind + 1, f"for {item} in {v}:")
                self.value(schema["items"], item, ind + 2, active)
                src.emit(ind, "out.append(0)")
                return
            logical = schema.get("logicalType")
            if logical is not None:
                if logical not in _TIMESTAMPS or kind != "long":
                    raise UnsupportedSchemaError(f"logical type {logical!r}")
                unit = src.constant(timedelta(**{_TIMESTAMPS[logical]: 1}))
                src.emit(ind, f"write_long(out, since_epoch({expr}) // {unit})")
                return
            if kind in ("map", "enum", "fixed"):
                raise UnsupportedSchemaError(f"encoding {kind}")
            self.value(kind, expr, ind, active)
            return
        if schema in ("int", "long"):
            v = src.fresh()
            src.emit(ind, f"{v} = {expr}")
            src.emit(ind, f"if 0 <= {v} < 64: out.append({v} << 1)")
            src.emit(ind, f"else: write_long(out, {v})")
        elif schema in ("string", "bytes"):
            v = src.fresh()
            src.emit(ind, f"{v} = {expr}.encode()" if schema == "string" else f"{v} = {expr}")
            src.emit(ind, f"if len({v}) < 64: out.append(len({v}) << 1)")
            src.emit(ind, f"else: write_long(out, len({v}))")
            src.emit(ind, f"out += {v}")
        elif schema == "null":
            src.emit(ind, "pass")
        elif schema == "boolean":
            src.emit(ind, f"out.append(1 if {expr} else 0)")
        elif schema in ("float", "double"):
            src.emit(ind, f"out += pack({'<f' if schema == 'float' else '<d'!r}, {expr})")
        else:
            raise UnsupportedSchemaError(f"type {schema!r}")


def _literal(name: Any) -> str:
    """A field name as a Python string literal (``repr`` of a str is always one)."""
    if not isinstance(name, str):
        raise UnsupportedSchemaError(f"field name {name!r} is not a string")
    return repr(name)


def _compile(src: _Source, name: str, helpers: dict[str, Any]) -> Any:
    namespace: dict[str, Any] = {**helpers, **src.constants}
    exec(compile("\n".join(src.lines), f"<avro {name}>", "exec"), namespace)
    return namespace[name]


def compile_decoder(schema: Any, keep: Projection = None) -> Decoder:
    """A function ``(buffer, position) -> (value, next position)`` for one value of
    ``schema`` (a parsed JSON schema), building only what ``keep`` selects (records
    hold only the fields it names; every value is still read past, and checked as it
    is). Raises UnsupportedSchemaError."""
    builder = _DecoderBuilder()
    builder.src.emit(0, "def decode(b, p):")
    builder.src.emit(1, "end = len(b)")
    result = builder.value(schema, 1, frozenset(), keep)
    builder.src.emit(1, f"return {result}, p")
    helpers: dict[str, Any] = {"read_long": read_long, "array_count": _array_count}
    helpers["ZIGZAG"] = _ZIGZAG
    helpers.update(unpack_from=struct.unpack_from, from_millis=_from_millis)
    helpers["from_micros"] = _from_micros
    return _compile(builder.src, "decode", helpers)  # type: ignore[no-any-return]


def compile_encoder(schema: Any) -> Encoder:
    """A function ``(value, out)`` appending the encoding of one value of ``schema``
    to ``out``; records are dicts keyed by field name (a missing key is null).
    Raises UnsupportedSchemaError."""
    builder = _EncoderBuilder()
    builder.src.emit(0, "def encode(value, out):")
    builder.value(schema, "value", 1, frozenset())
    builder.src.emit(1, "return None")
    helpers = {"write_long": write_long, "pack": struct.pack, "since_epoch": _since_epoch}
    return _compile(builder.src, "encode", helpers)  # type: ignore[no-any-return]
