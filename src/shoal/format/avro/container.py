"""Avro object container files (manifests are small ones, read by the hundred).

Reading: the writer's schema is taken from each file's header, compiled once per
distinct schema (:mod:`shoal.format.avro.compiled`), and every block decoded with it.
Writing: the header of a schema is built once; a file is that header, a fresh sync
marker and the encoded records in blocks. Codecs other than null, deflate and
zstandard, and schemas the compiled codecs leave out, go through ``fastavro``.
"""

from __future__ import annotations

import io
import json
import os
import struct
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import fastavro

from shoal.format.avro import compiled, compression

MAGIC = b"Obj\x01"
SYNC_SIZE = 16
# Uncompressed bytes of records per block when writing.
BLOCK_BYTES = 64 << 10
_DECODERS: dict[tuple[bytes, str], compiled.Decoder | None] = {}
_DECODERS_BY_ID: dict[
    tuple[bytes, int], tuple[Mapping[str, Any] | compiled.Build | None, compiled.Decoder | None]
] = {}
_SCHEMAS: dict[bytes, Any] = {}
_LOCK = threading.Lock()
# Schemas compiled and kept at most; a table has a handful.
_MAX_SCHEMAS = 256


@dataclass(frozen=True, slots=True)
class Where:
    """A filter on records decided by a few of their fields: ``fields`` names them (as
    ``keep`` does), ``accept`` takes a record holding them. A record it rejects is
    read past, never built."""

    fields: Mapping[str, Any]
    accept: Callable[[dict[str, Any]], bool]


def read_records(
    data: bytes, keep: Mapping[str, Any] | None = None, where: Where | None = None
) -> list[dict[str, Any]]:
    """Every record of a container file (that ``where`` accepts). Raises ValueError on
    bytes that are not one.

    ``keep`` names the fields to build (nested mappings for nested records, None for a
    whole value; see :data:`shoal.format.avro.compiled.Projection`); the others are
    read past. Records may hold more than ``keep`` names."""
    container = read_blocks(data)
    if container is None:
        return _accepted(list(fastavro.reader(io.BytesIO(data))), where)  # type: ignore[arg-type]
    text, blocks = container
    decode = decoder(text, keep)
    probe = None if where is None or decode is None else decoder(text, where.fields)
    schema = _schema(text) if decode is None else None
    records: list[dict[str, Any]] = []
    for count, block in blocks:
        if decode is not None and probe is not None:
            assert where is not None
            records.extend(_decode_block_where(decode, probe, where.accept, block, count))
            continue
        if decode is not None:
            records.extend(_accepted(decode_block(decode, block, count), where))
            continue
        buffer = io.BytesIO(block)
        assert schema is not None
        for _ in range(count):
            record: dict[str, Any] = fastavro.schemaless_reader(buffer, schema, None)  # type: ignore[assignment]
            if where is None or where.accept(record):
                records.append(record)
    return records


def read_built(data: bytes, build: compiled.Build) -> list[Any] | None:
    """Every record of a container file, each built by ``build``; None when the
    compiled decoders leave the file to ``fastavro`` or its schema lacks a field
    ``build`` requires. Raises ValueError on bytes that are not a container file, and
    what ``build`` raises."""
    container = read_blocks(data)
    if container is None:
        return None
    text, blocks = container
    decode = decoder(text, build)
    if decode is None:
        return None
    records: list[Any] = []
    for count, block in blocks:
        records.extend(decode_block(decode, block, count))
    return records


def read_blocks(data: bytes) -> tuple[bytes, list[tuple[int, bytes]]] | None:
    """The writer's schema (its JSON text) and the blocks, decompressed, of a container
    file, each with its count of records; None for a codec shoal leaves to
    ``fastavro``. Raises ValueError on bytes that are not a container file."""
    if data[:4] != MAGIC:
        raise ValueError("not an Avro object container file (bad magic)")
    meta, pos = _known_header(data)
    if "avro.schema" not in meta:
        raise ValueError("Avro header holds no schema")
    codec = meta.get("avro.codec", b"null").decode()
    if codec not in compression.CODECS:
        return None
    sync = data[pos : pos + SYNC_SIZE]
    pos += SYNC_SIZE
    blocks = []
    while pos < len(data):
        count, pos = _long(data, pos)
        size, pos = _long(data, pos)
        if count < 0 or not 0 <= size <= len(data) - pos:
            raise ValueError("Avro block header is out of range")
        block = data[pos : pos + size]
        pos += size
        if data[pos : pos + SYNC_SIZE] != sync:
            raise ValueError("Avro block does not end with the file's sync marker")
        pos += SYNC_SIZE
        block = compression.decompress(codec, block)
        if count > len(block):  # every record of a manifest takes at least one byte
            raise ValueError(f"Avro block claims {count} records in {len(block)} bytes")
        blocks.append((count, block))
    return meta["avro.schema"], blocks


def _accepted(records: list[dict[str, Any]], where: Where | None) -> list[dict[str, Any]]:
    return records if where is None else [r for r in records if where.accept(r)]


def decode_block(decode: compiled.Decoder, block: bytes, count: int, start: int = 0) -> list[Any]:
    """The ``count`` records of ``block`` from position ``start`` on, which must end
    where the block does. Raises ValueError."""
    out = []
    pos = start
    try:
        for _ in range(count):
            record, pos = decode(block, pos)
            out.append(record)
    except (IndexError, OverflowError, UnicodeDecodeError, struct.error) as exc:
        raise ValueError(f"Avro block does not decode: {exc}") from exc
    if pos != len(block):
        raise ValueError("Avro block holds bytes after its records")
    return out


def _decode_block_where(
    decode: compiled.Decoder,
    probe: compiled.Decoder,
    accept: Callable[[dict[str, Any]], bool],
    block: bytes,
    count: int,
) -> list[Any]:
    """The records of a block that ``accept`` takes: each is probed (the few fields it
    looks at built, the rest read past) and decoded whole only when accepted."""
    out = []
    pos = 0
    try:
        for _ in range(count):
            head, end = probe(block, pos)
            if accept(head):
                record, end = decode(block, pos)
                out.append(record)
            pos = end
    except (IndexError, OverflowError, UnicodeDecodeError, struct.error) as exc:
        raise ValueError(f"Avro block does not decode: {exc}") from exc
    if pos != len(block):
        raise ValueError("Avro block holds bytes after its records")
    return out


def write_records(schema: dict[str, Any], records: Iterable[Any], codec: str) -> bytes:
    """A container file of ``records`` (dicts keyed by field name) with ``schema``,
    compressed with ``codec`` (``null``, ``deflate`` or ``zstandard``)."""
    writer = _writer(schema, codec)
    if writer is None:
        buf = io.BytesIO()
        fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec)
        return buf.getvalue()
    header, encode = writer
    sync = os.urandom(SYNC_SIZE)
    out = bytearray(header)
    out += sync
    block = bytearray()
    count = 0
    for record in records:
        encode(record, block)
        count += 1
        if len(block) >= BLOCK_BYTES:
            _write_block(out, block, count, codec, sync)
            block, count = bytearray(), 0
    if count:
        _write_block(out, block, count, codec, sync)
    return bytes(out)


def _write_block(out: bytearray, block: bytearray, count: int, codec: str, sync: bytes) -> None:
    data = compression.compress(codec, bytes(block))
    compiled.write_long(out, count)
    compiled.write_long(out, len(data))
    out += data
    out += sync


# Keyed by the schema object's identity (callers pass module-level constants); the
# schema is kept in the value so its id cannot be reused by another object.
_WRITERS: dict[tuple[int, str], tuple[Any, tuple[bytes, compiled.Encoder] | None]] = {}


def _writer(schema: dict[str, Any], codec: str) -> tuple[bytes, compiled.Encoder] | None:
    """The header (magic and metadata) and record encoder for ``schema`` and ``codec``;
    None when the compiled codecs do not cover them."""
    key = (id(schema), codec)
    cached = _WRITERS.get(key)
    if cached is not None and cached[0] is schema:
        return cached[1]
    writer: tuple[bytes, compiled.Encoder] | None = None
    if codec in compression.CODECS:
        try:
            encode = compiled.compile_encoder(schema)
        except compiled.UnsupportedSchemaError:
            pass
        else:
            # The schema text exactly as fastavro writes it into a header.
            empty = io.BytesIO()
            fastavro.writer(empty, fastavro.parse_schema(schema), [], codec=codec)
            meta, _ = _header(empty.getvalue())
            # Files written with this header are read back with the same schema.
            decoder(meta["avro.schema"])
            header = bytearray(MAGIC)
            compiled.write_long(header, len(meta))
            for name, value in meta.items():
                for part in (name.encode(), value):
                    compiled.write_long(header, len(part))
                    header += part
            header.append(0)
            writer = bytes(header), encode
    with _LOCK:
        _WRITERS[key] = (schema, writer)
    return writer


def prepare(schema: dict[str, Any], codec: str = "zstandard") -> None:
    """Compile the codecs of ``schema`` now (at import) rather than on first use."""
    _writer(schema, codec)


def decoder(
    text: bytes, keep: Mapping[str, Any] | compiled.Build | None = None
) -> compiled.Decoder | None:
    """The compiled decoder of one record of the schema ``text`` (JSON) building the
    fields ``keep`` names; None when the schema is one the compiled codecs leave out."""
    # Callers mostly pass module-level projections: find those by identity first (the
    # projection is kept in the value, so its id cannot be reused meanwhile).
    known = _DECODERS_BY_ID.get((text, id(keep)))
    if known is not None and known[0] is keep:
        return known[1]
    # a Build is found by identity only (the by-id table keeps it alive)
    key = (
        text,
        f"build {id(keep)}"
        if isinstance(keep, compiled.Build)
        else ""
        if keep is None
        else json.dumps(keep, sort_keys=True),
    )
    if key in _DECODERS:
        found = _DECODERS[key]
        _remember_by_id(text, keep, found)
        return found
    try:
        decode: compiled.Decoder | None = compiled.compile_decoder(json.loads(text), keep)
    except (compiled.UnsupportedSchemaError, KeyError, TypeError, AttributeError, ValueError):
        decode = None  # fastavro reads it, or says what is wrong with it (damaged JSON too)
    with _LOCK:
        if len(_DECODERS) >= _MAX_SCHEMAS:  # files with ever new (damaged) schemas
            _DECODERS.clear()
        _DECODERS[key] = decode
    _remember_by_id(text, keep, decode)
    return decode


def _remember_by_id(
    text: bytes, keep: Mapping[str, Any] | compiled.Build | None, decode: compiled.Decoder | None
) -> None:
    with _LOCK:
        if len(_DECODERS_BY_ID) >= _MAX_SCHEMAS:  # callers that build projections per call
            _DECODERS_BY_ID.clear()
        _DECODERS_BY_ID[(text, id(keep))] = (keep, decode)


# The headers read last, byte for byte, with what they hold: the files of one writer
# share theirs (only the sync marker after it differs), so most files skip parsing it.
_RECENT_HEADERS: list[tuple[bytes, dict[str, bytes]]] = []
_MAX_RECENT_HEADERS = 8


def _known_header(data: bytes) -> tuple[dict[str, bytes], int]:
    """:func:`_header`, from the recent headers when ``data`` begins with one."""
    for header, meta in tuple(_RECENT_HEADERS):  # a copy: other threads insert
        if data.startswith(header):
            return meta, len(header)
    meta, pos = _header(data)
    with _LOCK:
        _RECENT_HEADERS.insert(0, (data[:pos], meta))
        del _RECENT_HEADERS[_MAX_RECENT_HEADERS:]
    return meta, pos


def _header(data: bytes) -> tuple[dict[str, bytes], int]:
    """The metadata map after the magic, and the position after it."""
    meta: dict[str, bytes] = {}
    pos = 4
    while True:
        count, pos = _long(data, pos)
        if count == 0:
            return meta, pos
        if count < 0:  # a block with its size in bytes, which is not needed here
            _, pos = _long(data, pos)
            count = -count
        for _ in range(count):
            key_size, pos = _size(data, pos)
            key = data[pos : pos + key_size].decode()
            pos += key_size
            value_size, pos = _size(data, pos)
            meta[key] = data[pos : pos + value_size]
            pos += value_size


def _size(data: bytes, pos: int) -> tuple[int, int]:
    """A length at ``pos`` that must fit in the bytes after it."""
    size, pos = _long(data, pos)
    if not 0 <= size <= len(data) - pos:
        raise ValueError("Avro header holds a length beyond the end of the file")
    return size, pos


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """An Avro zig-zag varint at ``pos``, and the position after it."""
    shift = result = 0
    while True:
        if pos >= len(data):
            raise ValueError("Avro file ends inside a number")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("Avro varint longer than 10 bytes")


def _schema(text: bytes) -> Any:
    parsed = _SCHEMAS.get(text)
    if parsed is None:
        parsed = fastavro.parse_schema(json.loads(text))
        with _LOCK:
            if len(_SCHEMAS) >= _MAX_SCHEMAS:
                _SCHEMAS.clear()
            _SCHEMAS[text] = parsed
    return parsed
