"""Reading Avro object container files (manifests are small ones, read by the hundred).

``fastavro.reader`` parses the writer's schema from every file's header; manifests of
one table all share a handful of schemas, so this reader parses each schema once and
decodes the blocks with ``fastavro.schemaless_reader``. Codecs other than null,
deflate and zstandard go through ``fastavro.reader``.
"""

from __future__ import annotations

import io
import json
import threading
import zlib
from typing import Any

import fastavro

try:  # Python 3.14 has zstd in the standard library
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - older Pythons use the backport
    from backports import zstd

MAGIC = b"Obj\x01"
SYNC_SIZE = 16
_SCHEMAS: dict[bytes, Any] = {}
_LOCK = threading.Lock()


def read_records(data: bytes) -> list[dict[str, Any]]:
    """Every record of a container file. Raises ValueError on bytes that are not one."""
    if data[:4] != MAGIC:
        raise ValueError("not an Avro object container file (bad magic)")
    meta, pos = _header(data)
    codec = meta.get("avro.codec", b"null")
    if codec not in (b"null", b"deflate", b"zstandard"):
        return list(fastavro.reader(io.BytesIO(data)))  # type: ignore[arg-type]
    schema = _schema(meta["avro.schema"])
    sync = data[pos : pos + SYNC_SIZE]
    pos += SYNC_SIZE
    records: list[dict[str, Any]] = []
    while pos < len(data):
        count, pos = _long(data, pos)
        size, pos = _long(data, pos)
        block = data[pos : pos + size]
        pos += size
        if data[pos : pos + SYNC_SIZE] != sync:
            raise ValueError("Avro block does not end with the file's sync marker")
        pos += SYNC_SIZE
        if codec == b"zstandard":
            block = zstd.decompress(block)
        elif codec == b"deflate":
            block = zlib.decompress(block, -15)
        buffer = io.BytesIO(block)
        for _ in range(count):
            record: dict[str, Any] = fastavro.schemaless_reader(buffer, schema, None)  # type: ignore[assignment]
            records.append(record)
    return records


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
            key_size, pos = _long(data, pos)
            key = data[pos : pos + key_size].decode()
            pos += key_size
            value_size, pos = _long(data, pos)
            meta[key] = data[pos : pos + value_size]
            pos += value_size


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


def _schema(text: bytes) -> Any:
    parsed = _SCHEMAS.get(text)
    if parsed is None:
        parsed = fastavro.parse_schema(json.loads(text))
        with _LOCK:
            _SCHEMAS[text] = parsed
    return parsed
