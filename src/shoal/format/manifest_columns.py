"""A manifest's entries as columns: what planning a scan of millions of files needs of
each entry, decoded by compiled code (:mod:`shoal.format.avro.columnar`), and each
whole entry decoded only when it is asked for.

The columns hold the fields that choose and order the files of a scan (kind,
partition, bucket, size, sequence number, level, schema; the file name as a hash) and
mark the entries that need a closer look (extra files, an embedded index, an external
path, some columns only). The records themselves are kept compressed (LZ4, in chunks
of about :data:`CHUNK_BYTES`), ordered by partition, bucket and sequence number, so
that the files of one split lie in a chunk or two of each manifest; a whole entry is
decoded from its record by the decoder :func:`shoal.format.manifest.decode_manifest`
uses. A table's decompressed manifests take about five times what they take so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from shoal.errors import CorruptMetadataError
from shoal.format import data_formats, kernels
from shoal.format import manifest as M
from shoal.format.avro import columnar
from shoal.format.avro.compiled import Decoder
from shoal.format.avro.container import read_blocks
from shoal.format.manifest import ManifestEntry

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
    *(VERSION, KIND, PARTITION, BUCKET, FILE_NAME, FILE_SIZE, MIN_SEQUENCE),
    *(SCHEMA_ID, LEVEL, EXTRA_FILES),
)
# The columns kept, each in the narrowest type its values need.
_KEPT: dict[tuple[str, ...], Any] = {
    KIND: np.int8,
    BUCKET: np.int32,
    FILE_SIZE: np.int64,
    MIN_SEQUENCE: np.int64,
    SCHEMA_ID: np.int64,
    LEVEL: np.int32,
    EXTRA_FILES: np.int32,
    EMBEDDED_INDEX: np.int8,
    EXTERNAL_PATH: np.int8,
    WRITE_COLS: np.int8,
}
CHUNK_BYTES = 64 << 10
# The name extensions of the formats shoal reads, one after another, and their offsets.
_SUFFIXES = kernels.joined([f".{e}".encode() for e in data_formats.extensions()])
_CODEC = pa.Codec("lz4")


class Records:
    """A manifest's records, compressed in chunks, to decode whole entries from."""

    __slots__ = ("_last", "chunk", "chunks", "decode", "offset", "path", "sizes")

    def __init__(  # noqa: PLR0917 - the records' layout
        self,
        path: str,
        decode: Decoder,
        chunks: list[bytes],
        sizes: list[int],
        chunk: np.ndarray,
        offset: np.ndarray,
    ) -> None:
        self.path = path
        self.decode = decode  # of a whole entry (see shoal.format.manifest.entry_decoder)
        self.chunks = chunks  # LZ4
        self.sizes = sizes  # each chunk's bytes
        self.chunk = chunk  # per entry: its record's chunk
        self.offset = offset  # per entry: where its record starts in the chunk
        self._last: tuple[int, bytes] = (-1, b"")  # the chunk decompressed last

    def entry(self, row: int) -> ManifestEntry:
        """The whole entry of ``row``. Raises CorruptMetadataError naming the file for
        a record the entry decoding refuses."""
        try:
            entry, _ = self.decode(self._chunk(int(self.chunk[row])), int(self.offset[row]))
        except Exception as exc:  # the decoders raise many types for damaged bytes
            raise CorruptMetadataError(self.path, f"an entry cannot be read: {exc}") from None
        assert isinstance(entry, ManifestEntry)
        return entry

    def _chunk(self, index: int) -> bytes:
        last = self._last  # one read of the attribute: threads may replace it
        if last[0] == index:
            return last[1]
        data: bytes = _CODEC.decompress(
            self.chunks[index], decompressed_size=self.sizes[index], asbytes=True
        )
        self._last = (index, data)
        return data


class ManifestColumns:
    """The entries of one manifest file, one value per entry in each column, in the
    file's order, with what planning asks of all of them computed as they were
    decoded."""

    __slots__ = (
        "_columns",
        "name_hash",
        "partition_hash",
        "partitions",
        "readable_name",
        "records",
    )

    def __init__(  # noqa: PLR0917 - the decoded parts
        self,
        records: Records,
        columns: dict[tuple[str, ...], np.ndarray],
        name_hash: np.ndarray,
        partition_hash: np.ndarray,
        partitions: dict[int, bytes],
        readable_name: np.ndarray,
    ) -> None:
        self.records = records
        self._columns = columns
        self.name_hash = name_hash  # each file name's hash (see kernels.hashes)
        self.partition_hash = partition_hash  # each partition's hash
        self.partitions = partitions  # each partition's bytes, by its hash
        self.readable_name = readable_name  # the name's extension is of a format shoal reads

    @property
    def path(self) -> str:
        return self.records.path

    def __len__(self) -> int:
        return len(self.name_hash)

    def column(self, field: tuple[str, ...]) -> np.ndarray:
        """A field's values (of a nullable one: whether it is set; zeros when the
        writer's schema lacks it)."""
        return self._columns[field]

    def entry(self, row: int) -> ManifestEntry:
        return self.records.entry(row)


def decode_columns(
    data: bytes, path: str, keep_partition: Callable[[bytes], bool] | None = None
) -> ManifestColumns | None:
    """The entries of the manifest file ``data`` as columns (with ``keep_partition``,
    the entries of the partitions it accepts only); None when the file is not
    one these columns read: another codec, a schema without a field they need, records
    that do not decode, an entry of another format version or kind or a name that is
    not a plain file name, two partitions of one hash. The ordinary decoding then reads
    it, and says what is wrong."""
    try:
        container = read_blocks(data)
    except Exception:  # damaged bytes raise many types: the ordinary reading reports them
        return None
    if container is None:
        return None
    text, blocks = container
    try:
        schema: Any = json.loads(text)
    except ValueError:  # damaged schema text (not JSON, not UTF-8)
        return None
    decode = M.entry_decoder(text)
    if decode is None:
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
    facts = _facts(buffer, table, program.columns, keep_partition)
    if facts is None:
        return None
    starts, ends = table[columnar.RECORD_START], table[columnar.RECORD_END]
    ordered = _ordered(buffer, starts, ends, facts.records)
    del joined, buffer, table, starts, ends  # the records' bytes, now in order
    return ManifestColumns(
        _compressed(path, decode, ordered, facts.order),
        facts.columns,
        facts.name_hash,
        facts.partition_hash,
        facts.partitions,
        facts.readable_name,
    )


class _Facts(NamedTuple):
    columns: dict[tuple[str, ...], np.ndarray]
    name_hash: np.ndarray
    partition_hash: np.ndarray
    partitions: dict[int, bytes]
    readable_name: np.ndarray
    order: np.ndarray  # the entries kept by partition, bucket and sequence number
    records: np.ndarray  # their records' numbers among all the file's, in that order


def _facts(
    buffer: np.ndarray,
    table: np.ndarray,
    index: dict[tuple[str, ...], int],
    keep_partition: Callable[[bytes], bool] | None,
) -> _Facts | None:
    """What planning asks of the decoded entries (of the partitions ``keep_partition``
    accepts); None for entries the columns do not read (see :func:`decode_columns`)."""
    kind = table[index[KIND]]
    if np.any(table[index[VERSION]] != M.MANIFEST_VERSION) or np.any((kind < 0) | (kind > 1)):
        return None
    partitions = table[index[PARTITION]], table[index[PARTITION] + 1]
    partition_hash = kernels.hashes(buffer, *partitions)
    distinct, first, which = np.unique(partition_hash, return_index=True, return_inverse=True)
    values = [
        buffer[s : s + n].tobytes()
        for s, n in zip(*(p[first].tolist() for p in partitions), strict=True)
    ]
    joined_values, offsets = kernels.joined(values)
    if not kernels.all_equal(buffer, *partitions, joined_values, offsets, which):
        return None  # two partitions of one hash
    rows = None
    if keep_partition is not None:
        kept = np.array([keep_partition(v) for v in values], dtype=bool)
        if not kept.all():
            rows = np.flatnonzero(kept[which])
            table, partition_hash = table[:, rows], partition_hash[rows]
            distinct = distinct[kept]
            values = [v for v, k in zip(values, kept.tolist(), strict=True) if k]
            which = np.searchsorted(distinct, partition_hash)
            kind = table[index[KIND]]
    names = table[index[FILE_NAME]], table[index[FILE_NAME] + 1]
    name_hash, readable, unsafe = kernels.name_facts(buffer, *names, *_SUFFIXES)
    if unsafe:
        return None
    columns = {
        field: (
            table[index[field]].astype(kept) if field in index else np.zeros(len(kind), dtype=kept)
        )
        for field, kept in _KEPT.items()
    }
    buckets, bucket = np.unique(columns[BUCKET], return_inverse=True)
    group = which.astype(np.int64) * len(buckets) + bucket
    space = len(distinct) * len(buckets)
    if space > 4 * len(group) + 1024:  # numbered densely, the groups there are
        groups, group = np.unique(group, return_inverse=True)
        space = len(groups)
    order, _ = kernels.order_by_group(group, space, columns[MIN_SEQUENCE])
    by_hash = dict(zip(distinct.tolist(), values, strict=True))
    records = order if rows is None else rows[order]
    return _Facts(columns, name_hash, partition_hash, by_hash, readable, order, records)


def _ordered(
    buffer: np.ndarray, starts: np.ndarray, ends: np.ndarray, order: np.ndarray
) -> pa.Array:
    """The records (``starts`` to ``ends`` of ``buffer``, lying end to end) in ``order``."""
    if not len(order):
        return pa.array([], type=pa.large_binary())
    boundaries = np.append(starts, ends[-1:])
    records = pa.Array.from_buffers(
        pa.large_binary(), len(starts), [None, pa.py_buffer(boundaries), pa.py_buffer(buffer)]
    )
    return records.take(pa.array(order))


def _compressed(path: str, decode: Decoder, ordered: pa.Array, order: np.ndarray) -> Records:
    """The records of ``ordered`` (the entries' records in ``order``) cut into chunks of
    whole records of about :data:`CHUNK_BYTES`, each compressed."""
    if not len(order):
        return Records(path, decode, [], [], np.zeros(0, np.int32), np.zeros(0, np.int32))
    _, offsets_buffer, data = ordered.buffers()
    at = np.frombuffer(offsets_buffer, dtype=np.int64)[
        ordered.offset : ordered.offset + len(order) + 1
    ]
    base = int(at[0])
    at = at - base
    chunk_sorted = at[:-1] // CHUNK_BYTES
    firsts = np.flatnonzero(np.diff(chunk_sorted, prepend=-1))  # each chunk's first record
    bounds = [*at[firsts].tolist(), int(at[-1])]
    chunks = [
        _CODEC.compress(data.slice(base + lo, hi - lo), asbytes=True) for lo, hi in pairwise(bounds)
    ]
    sizes = [hi - lo for lo, hi in pairwise(bounds)]
    number = np.cumsum(np.diff(chunk_sorted, prepend=-1) != 0) - 1  # the chunk of each record
    chunk = np.empty(len(order), dtype=np.int32)
    offset = np.empty(len(order), dtype=np.int32)
    chunk[order] = number
    offset[order] = at[:-1] - at[firsts][number]
    return Records(path, decode, chunks, sizes, chunk, offset)
