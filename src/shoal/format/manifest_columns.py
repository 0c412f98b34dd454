"""A manifest's entries as columns: what planning a scan of millions of files needs of
each entry, decoded by compiled code (:mod:`shoal.format.avro.columnar`), and each
whole entry decoded only when it is asked for.

The columns hold the fields that choose and order the files of a scan (kind,
partition, bucket, file name, size, sequence number, level, schema) and mark the
entries that need a closer look (extra files, an embedded index, an external path,
some columns only). A whole entry is decoded from its record's bytes, which stay in
the decompressed blocks, by the same decoder :func:`shoal.format.manifest.decode_manifest`
uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from shoal.errors import CorruptMetadataError
from shoal.format import data_formats, kernels
from shoal.format import manifest as M
from shoal.format.avro import columnar
from shoal.format.avro.container import read_blocks
from shoal.format.manifest import ManifestEntry

# Where each record starts in the buffer.
RECORD = ("<record>",)
# The fields decoded into columns, by their path in the record.
VERSION = ("_VERSION",)
KIND = ("_KIND",)
PARTITION = ("_PARTITION",)
BUCKET = ("_BUCKET",)
FILE_NAME = ("_FILE", "_FILE_NAME")
FILE_SIZE = ("_FILE", "_FILE_SIZE")
MIN_SEQUENCE = ("_FILE", "_MIN_SEQUENCE_NUMBER")
SCHEMA_ID = ("_FILE", "_SCHEMA_ID")
LEVEL = ("_FILE", "_LEVEL")
EXTRA_FILES = ("_FILE", "_EXTRA_FILES")
# Nullable fields, a column each of whether a value is there (0 when the writer's
# schema lacks the field).
EMBEDDED_INDEX = ("_FILE", "_EMBEDDED_FILE_INDEX")
EXTERNAL_PATH = ("_FILE", "_EXTERNAL_PATH")
WRITE_COLS = ("_FILE", "_WRITE_COLS")

_WANTED: dict[tuple[str, ...], columnar.Want] = {
    VERSION: "value",
    KIND: "value",
    PARTITION: "span",
    BUCKET: "value",
    FILE_NAME: "span",
    FILE_SIZE: "value",
    MIN_SEQUENCE: "value",
    SCHEMA_ID: "value",
    LEVEL: "value",
    EXTRA_FILES: "count",
    EMBEDDED_INDEX: "present",
    EXTERNAL_PATH: "present",
    WRITE_COLS: "present",
}
_REQUIRED: tuple[tuple[str, ...], ...] = (
    VERSION,
    KIND,
    PARTITION,
    BUCKET,
    FILE_NAME,
    FILE_SIZE,
    MIN_SEQUENCE,
    SCHEMA_ID,
    LEVEL,
    EXTRA_FILES,
)


@dataclass(frozen=True, slots=True, eq=False)
class Records:
    """A manifest's decompressed records, to decode whole entries from."""

    path: str
    schema: bytes  # the writer's schema (JSON)
    data: bytes  # the decompressed blocks, one after another

    def entry_at(self, start: int) -> ManifestEntry:
        """The whole entry whose record starts at ``start`` of ``data``. Raises
        CorruptMetadataError naming the file for a record the entry decoding refuses."""
        decode = M.entry_decoder(self.schema)
        try:
            if decode is None:
                raise ValueError("its schema is not one the entry decoding reads")
            entry, _ = decode(self.data, start)
        except Exception as exc:  # the decoders raise many types for damaged bytes
            raise CorruptMetadataError(self.path, f"an entry cannot be read: {exc}") from None
        assert isinstance(entry, ManifestEntry)
        return entry


@dataclass(frozen=True, slots=True, eq=False)
class ManifestColumns:
    """The entries of one manifest file, one row each, in the file's order, with what
    planning asks of all of them computed as they are decoded."""

    records: Records
    table: np.ndarray  # the decoded columns, one row of it per column (int64)
    columns: dict[tuple[str, ...], int]
    name_hash: np.ndarray  # each file name's hash (uint64, see kernels.hashes)
    partition_hash: np.ndarray  # each partition's hash
    partitions: dict[int, bytes]  # each partition's bytes, by its hash
    plain_names: bool  # every name is a plain file name (``is_file_name``)
    readable_name: np.ndarray  # the name ends with the extension of a format shoal reads

    @property
    def path(self) -> str:
        return self.records.path

    @property
    def buffer(self) -> np.ndarray:
        return np.frombuffer(self.records.data, dtype=np.uint8)

    def __len__(self) -> int:
        return int(self.table.shape[1])

    def column(self, field: tuple[str, ...]) -> np.ndarray:
        """A field's values (of a nullable one: whether it is set; zeros when the
        writer's schema lacks it)."""
        index = columnar.RECORD_START if field == RECORD else self.columns.get(field)
        if index is None:
            return np.zeros(len(self), dtype=np.int64)
        values: np.ndarray = self.table[index]
        return values

    def spans(self, field: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Where a bytes or string field's values start in the buffer, and their lengths."""
        index = self.columns[field]
        return self.table[index], self.table[index + 1]

    def strings(self, field: tuple[str, ...], rows: np.ndarray) -> pa.Array:
        """A string field of ``rows`` as an Arrow array (UTF-8 unchecked: see
        ``pa.Array.validate(full=True)``)."""
        starts, lengths = self.spans(field)
        data, offsets = kernels.gather(self.buffer, starts[rows], lengths[rows])
        return pa.Array.from_buffers(
            pa.large_string(), len(rows), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )

    def value_bytes(self, field: tuple[str, ...], row: int) -> bytes:
        """The bytes of a bytes or string field of one row."""
        starts, lengths = self.spans(field)
        start = int(starts[row])
        return self.records.data[start : start + int(lengths[row])]

    def entry_at(self, start: int) -> ManifestEntry:
        return self.records.entry_at(start)


def decode_columns(data: bytes, path: str) -> ManifestColumns | None:
    """The entries of the manifest file ``data`` as columns; None when the file is not
    one these columns read (another codec, a schema without a field they need, records
    that do not decode, two partitions of one hash): the ordinary decoding then reads
    it, and says what is wrong."""
    try:
        container = read_blocks(data)
    except ValueError:
        return None
    if container is None:
        return None
    text, blocks = container
    if M.entry_decoder(text) is None:
        return None
    try:
        schema: Any = json.loads(text)
    except ValueError:
        return None
    program = columnar.program(schema, text, _WANTED)
    if program is None or not all(f in program.columns for f in _REQUIRED):
        return None
    spans = []
    pos = 0
    for count, block in blocks:
        spans.append((pos, pos + len(block), count))
        pos += len(block)
    joined = b"".join(block for _, block in blocks)
    del blocks, container
    buffer = np.frombuffer(joined, dtype=np.uint8)
    table = columnar.decode(buffer, spans, program)
    if table is None:
        return None
    index = program.columns
    names = table[index[FILE_NAME]], table[index[FILE_NAME] + 1]
    partitions = table[index[PARTITION]], table[index[PARTITION] + 1]
    partition_hash = kernels.hashes(buffer, *partitions)
    distinct, first, which = np.unique(partition_hash, return_index=True, return_inverse=True)
    values = [
        joined[s : s + n] for s, n in zip(*(p[first].tolist() for p in partitions), strict=True)
    ]
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    joined_values = np.frombuffer(b"".join(values), dtype=np.uint8)
    if not kernels.all_equal(buffer, *partitions, joined_values, offsets, which):
        return None  # two partitions of one hash
    readable = np.zeros(len(names[0]), dtype=bool)
    for extension in data_formats.extensions():
        suffix = np.frombuffer(f".{extension}".encode(), dtype=np.uint8)
        readable |= kernels.ends_with(buffer, *names, suffix)
    return ManifestColumns(
        Records(path, text, joined),
        table,
        index,
        kernels.hashes(buffer, *names),
        partition_hash,
        dict(zip(distinct.tolist(), values, strict=True)),
        not kernels.unsafe_names(buffer, *names),
        readable,
    )
