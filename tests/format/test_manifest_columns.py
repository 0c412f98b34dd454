"""Manifest entries decoded into columns by the compiled interpreter of the writer's
schema: every column equals the field of the entries the ordinary decoding builds, each
whole entry decodes from its record, and a manifest the columns cannot read exactly is
left to the ordinary decoding."""

from __future__ import annotations

import io
import json
from datetime import datetime
from typing import Any

import fastavro
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.errors import CorruptMetadataError
from shoal.format import binary_row, data_formats
from shoal.format import manifest as M
from shoal.format import manifest_columns as C
from shoal.format import types as T
from shoal.format.avro import columnar
from shoal.format.avro.container import read_blocks
from shoal.format.data_file import AVRO_SCHEMA as DATA_FILE_AVRO
from shoal.format.data_file import DataFileMeta, is_file_name
from shoal.format.manifest import ManifestEntry
from shoal.format.stats import SimpleStats

INT = T.parse_type("INT")
STRING = T.parse_type("STRING")

names = st.one_of(
    st.sampled_from(["data-1.parquet", "data-2.orc", "data-3.avro", "data-4.PARQUET", "x.lance"]),
    st.text(st.characters(codec="utf-8", exclude_characters="/\\\0"), min_size=1, max_size=12),
)
longs = st.integers(-(1 << 63), (1 << 63) - 1)


@st.composite
def entries(draw: st.DrawFn) -> ManifestEntry:
    day = draw(st.sampled_from(["2026-11-01", "2026-11-02", "ü", ""]))
    partition = binary_row.serialize([day, draw(st.integers(-5, 5))], [STRING, INT])
    stats = SimpleStats.of([draw(st.integers(-9, 9))], [draw(st.integers(-9, 9))], [0], [INT])
    optional_names = st.none() | st.lists(names, max_size=2).map(tuple)
    file = DataFileMeta(
        file_name=draw(names),
        file_size=draw(longs),
        row_count=draw(st.integers(0, 1 << 40)),
        min_key=draw(st.binary(max_size=8)),
        max_key=draw(st.binary(max_size=8)),
        key_stats=stats,
        value_stats=stats,
        min_sequence_number=draw(longs),
        max_sequence_number=draw(longs),
        schema_id=draw(st.integers(0, 3)),
        level=draw(st.integers(0, 5)),
        extra_files=draw(st.lists(names, max_size=2).map(tuple)),
        creation_time=draw(st.none() | st.just(datetime(2026, 11, 27, 1, 2, 3))),
        delete_row_count=draw(st.none() | st.integers(0, 9)),
        embedded_index=draw(st.none() | st.binary(max_size=4)),
        file_source=draw(st.none() | st.integers(0, 1)),
        value_stats_cols=draw(optional_names),
        external_path=draw(st.none() | st.just("s3://elsewhere/data-9.parquet")),
        first_row_id=draw(st.none() | st.integers(0, 9)),
        write_cols=draw(optional_names),
    )
    return ManifestEntry(draw(st.integers(0, 1)), partition, draw(st.integers(-2, 9)), 9, file)


def _fnv(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & ((1 << 64) - 1)
    return h


def _expected(entry: ManifestEntry, field: tuple[str, ...]) -> Any:
    f = entry.file
    return {
        C.KIND: entry.kind,
        C.BUCKET: entry.bucket,
        C.FILE_SIZE: f.file_size,
        C.MIN_SEQUENCE: f.min_sequence_number,
        C.SCHEMA_ID: f.schema_id,
        C.LEVEL: f.level,
        C.EXTRA_FILES: len(f.extra_files),
        C.EMBEDDED_INDEX: int(f.embedded_index is not None),
        C.EXTERNAL_PATH: int(f.external_path is not None),
        C.WRITE_COLS: int(f.write_cols is not None),
    }[field]


FIELDS = [
    C.KIND,
    C.BUCKET,
    C.FILE_SIZE,
    C.MIN_SEQUENCE,
    C.SCHEMA_ID,
    C.LEVEL,
    C.EXTRA_FILES,
    C.EMBEDDED_INDEX,
    C.EXTERNAL_PATH,
    C.WRITE_COLS,
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(entries(), max_size=40),
    st.sampled_from(["zstd", "none", "deflate"]),
    st.sampled_from([64, 1 << 16]),
)
def test_columns_equal_the_entries_the_ordinary_decoding_builds(
    written: list[ManifestEntry], compression: str, chunk: int
) -> None:
    data = M.encode_manifest(written, compression)
    assert M.decode_manifest(data) == written
    with pytest.MonkeyPatch.context() as m:
        m.setattr(C, "CHUNK_BYTES", chunk)  # small: the records in many chunks
        columns = C.decode_columns(data, "<manifest>")
    if not all(is_file_name(e.file.file_name) for e in written):
        assert columns is None
        return
    assert columns is not None
    assert len(columns) == len(written)
    for field in FIELDS:
        assert columns.column(field).tolist() == [_expected(e, field) for e in written], field
    assert [columns.entry(i) for i in range(len(written))] == written
    assert [columns.entry(i) for i in reversed(range(len(written)))] == written[::-1]
    assert columns.name_hash.tolist() == [_fnv(e.file.file_name.encode()) for e in written]
    assert columns.partition_hash.tolist() == [_fnv(e.partition) for e in written]
    assert columns.partitions == {_fnv(e.partition): e.partition for e in written}
    readable = [data_formats.format_of(e.file.file_name) is not None for e in written]
    lower = [e.file.file_name.rsplit(".", 1)[-1] in ("parquet", "orc", "avro") for e in written]
    assert columns.readable_name.tolist() == [
        r and low for r, low in zip(readable, lower, strict=True)
    ]


def test_names_with_a_path_another_version_or_kind_are_left_to_the_ordinary_decoding() -> None:
    assert C.decode_columns(_written([_record("a.parquet")]), "<manifest>") is not None
    for bad in ["../x.parquet", "a/b.parquet", "..", ".", "a\\b", ""]:
        assert C.decode_columns(_written([_record(bad)]), "<manifest>") is None, bad
    assert C.decode_columns(_written([_record("a.parquet")], version=3), "<manifest>") is None
    assert C.decode_columns(_written([_record("a.parquet")], kind=2), "<manifest>") is None


def _record(name: str) -> dict[str, Any]:
    file = DataFileMeta(
        name,
        1,
        1,
        b"",
        b"",
        SimpleStats.of([], [], [], []),
        SimpleStats.of([], [], [], []),
        0,
        0,
        0,
        0,
    )
    return file.to_avro()


def _written(
    files: list[dict[str, Any]],
    schema: dict[str, Any] | None = None,
    *,
    version: int = 2,
    kind: int = 0,
) -> bytes:
    records = [
        {
            "_VERSION": version,
            "_KIND": kind,
            "_PARTITION": b"",
            "_BUCKET": 0,
            "_TOTAL_BUCKETS": 1,
            "_FILE": f,
        }
        for f in files
    ]
    buffer = io.BytesIO()
    fastavro.writer(buffer, fastavro.parse_schema(schema or M.MANIFEST_ENTRY_AVRO), records)
    return buffer.getvalue()


def test_a_schema_without_the_newer_fields_reads_them_as_unset() -> None:
    fields = DATA_FILE_AVRO["fields"]
    cut = [f["name"] for f in fields].index("_EXTERNAL_PATH")
    old = {**DATA_FILE_AVRO, "fields": fields[:cut]}
    schema = {
        **M.MANIFEST_ENTRY_AVRO,
        "fields": [*M.MANIFEST_ENTRY_AVRO["fields"][:-1], {"name": "_FILE", "type": old}],
    }
    kept = {f["name"] for f in old["fields"]}
    record = {k: v for k, v in _record("a.parquet").items() if k in kept}
    columns = C.decode_columns(_written([record], schema), "<manifest>")
    assert columns is not None
    assert columns.column(C.EXTERNAL_PATH).tolist() == [0]
    assert columns.column(C.WRITE_COLS).tolist() == [0]
    assert columns.entry(0).file.file_name == "a.parquet"


@pytest.mark.parametrize(
    "damage",
    [
        "truncated",
        "garbage",
        "file size as string",
        "no bucket",
        "bytes after the records",
        "schema not UTF-8",
        "schema not JSON",
    ],
)
def test_a_manifest_the_columns_cannot_read_is_left_to_the_ordinary_decoding(damage: str) -> None:
    data = _written([_record("a.parquet"), _record("b.parquet")])
    if damage == "truncated":
        data = data[:-30]
    elif damage == "garbage":
        data = b"Obj\x01garbage"
    elif damage == "file size as string":
        file_fields = [
            f | {"type": "string"} if f["name"] == "_FILE_SIZE" else f
            for f in DATA_FILE_AVRO["fields"]
        ]
        schema = {
            **M.MANIFEST_ENTRY_AVRO,
            "fields": [
                f | {"type": DATA_FILE_AVRO | {"fields": file_fields}}
                if f["name"] == "_FILE"
                else f
                for f in M.MANIFEST_ENTRY_AVRO["fields"]
            ],
        }
        record = _record("a.parquet") | {"_FILE_SIZE": "1"}
        data = _written([record], schema)
    elif damage == "no bucket":
        schema = {
            **M.MANIFEST_ENTRY_AVRO,
            "fields": [f for f in M.MANIFEST_ENTRY_AVRO["fields"] if f["name"] != "_BUCKET"],
        }
        data = _written([_record("a.parquet")], schema)
    elif damage.startswith("schema"):
        container = read_blocks(data)
        assert container is not None
        at = data.index(container[0])  # the schema's text, its length unchanged
        data = data[:at] + (b"\x80" if damage == "schema not UTF-8" else b"[") + data[at + 1 :]
        with pytest.raises(CorruptMetadataError):
            M.decode_manifest(data, "<manifest>")
    else:
        data = _recount(data, 1)  # a record's bytes left over in the block
    assert C.decode_columns(data, "<manifest>") is None


def _recount(data: bytes, count: int) -> bytes:
    """The container ``data`` (of uncompressed blocks) with its one block claiming
    ``count`` records."""
    buffer = io.BytesIO(data)
    reader = fastavro.reader(buffer)
    records = list(reader)
    out = io.BytesIO()
    fastavro.writer(out, reader.writer_schema, records, codec="null", sync_interval=1 << 30)
    raw = out.getvalue()
    sync = raw[-16:]
    block_start = raw.index(sync) + 16
    old = bytes([len(records) * 2])  # the count, a zig-zag varint of one byte
    assert raw[block_start : block_start + 1] == old
    return raw[:block_start] + bytes([count * 2]) + raw[block_start + 1 :]


# --- the interpreter on schemas of every Avro type ---------------------------------------------

EVERY_TYPE = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "b", "type": "boolean"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "fx", "type": {"type": "fixed", "name": "fx4", "size": 4}},
        {"name": "e", "type": {"type": "enum", "name": "en", "symbols": ["A", "B", "C"]}},
        {"name": "m", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "u", "type": ["null", "string", "long"]},
        {"name": "nested", "type": {"type": "array", "items": {"type": "array", "items": "int"}}},
        {
            "name": "ref",
            "type": {"type": "record", "name": "inner", "fields": [{"name": "x", "type": "long"}]},
        },
        {"name": "again", "type": "inner"},
        {"name": "tail", "type": "long"},
        {"name": "s", "type": "string"},
        {"name": "opt", "type": ["null", "bytes"]},
        {"name": "items", "type": {"type": "array", "items": "string"}},
    ],
}
WANTED: dict[tuple[str, ...], columnar.Want] = {
    ("tail",): "value",
    ("s",): "span",
    ("opt",): "present",
    ("items",): "count",
    ("again", "x"): "value",
}

records = st.fixed_dictionaries(
    {
        "b": st.booleans(),
        "f": st.floats(width=32, allow_nan=False),
        "d": st.floats(allow_nan=False),
        "fx": st.binary(min_size=4, max_size=4),
        "e": st.sampled_from(["A", "B", "C"]),
        "m": st.dictionaries(st.text(max_size=3), st.none() | longs, max_size=3),
        "u": st.none() | st.text(max_size=3) | longs,
        "nested": st.lists(
            st.lists(st.integers(-(1 << 31), (1 << 31) - 1), max_size=3), max_size=3
        ),
        "ref": st.fixed_dictionaries({"x": longs}),
        "again": st.fixed_dictionaries({"x": longs}),
        "tail": longs,
        "s": st.text(max_size=5),
        "opt": st.none() | st.binary(max_size=3),
        "items": st.lists(st.text(max_size=2), max_size=300),
    }
)


@settings(max_examples=60, deadline=None)
@given(st.lists(records, max_size=8), st.sampled_from(["null", "deflate", "zstandard"]))
def test_the_interpreter_walks_every_avro_type(rows: list[dict[str, Any]], codec: str) -> None:
    buffer = io.BytesIO()
    fastavro.writer(buffer, fastavro.parse_schema(EVERY_TYPE), rows, codec=codec, sync_interval=64)
    container = read_blocks(buffer.getvalue())
    assert container is not None
    text, blocks = container
    program = columnar.program(json.loads(text), text, WANTED)
    assert program is not None
    joined = b"".join(b for _, b in blocks)
    spans, pos = [], 0
    for count, block in blocks:
        spans.append((pos, pos + len(block), count))
        pos += len(block)
    table = columnar.decode(np.frombuffer(joined, dtype=np.uint8), spans, program)
    assert table is not None
    cols = program.columns
    assert table[cols[("tail",)]].tolist() == [r["tail"] for r in rows]
    assert table[cols[("again", "x")]].tolist() == [r["again"]["x"] for r in rows]
    s = cols[("s",)]
    assert [joined[a : a + n].decode() for a, n in zip(table[s], table[s + 1], strict=True)] == [
        r["s"] for r in rows
    ]
    assert table[cols[("opt",)]].tolist() == [int(r["opt"] is not None) for r in rows]
    assert table[cols[("items",)]].tolist() == [len(r["items"]) for r in rows]
    assert table[1].tolist()[-1:] == ([len(joined)] if rows else [])


def test_arrays_written_in_several_blocks_are_counted_whole() -> None:
    """An array may come in blocks, each with a negative count and its size in bytes."""
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "items", "type": {"type": "array", "items": "long"}}],
    }
    # hand-encoded: block of -2 items (size 2 bytes), items 1 and 2; block of 1 item; end
    record = bytes([3, 4, 2, 4, 2, 6, 0])
    program = columnar.program(schema, b"several-blocks", {("items",): "count"})
    assert program is not None
    table = columnar.decode(np.frombuffer(record, dtype=np.uint8), [(0, len(record), 1)], program)
    assert table is not None
    assert table[program.columns[("items",)]].tolist() == [3]
    # cut short anywhere, the record does not decode
    for cut in range(len(record)):
        short = np.frombuffer(record[:cut], dtype=np.uint8)
        assert columnar.decode(short, [(0, cut, 1)], program) is None


def test_a_wanted_field_of_another_kind_leaves_the_schema_uncompiled() -> None:
    assert columnar.program(EVERY_TYPE, b"k1", {("s",): "value"}) is None
    assert columnar.program(EVERY_TYPE, b"k2", {("u",): "present"}) is None  # three branches
    recursive = {
        "type": "record",
        "name": "node",
        "fields": [{"name": "next", "type": ["null", "node"]}],
    }
    assert columnar.program(recursive, b"k3", {}) is None
    nulls = {
        "type": "record",
        "name": "z",
        "fields": [{"name": "a", "type": {"type": "array", "items": "null"}}],
    }
    assert columnar.program(nulls, b"k4", {}) is None


@settings(max_examples=150, deadline=None)
@given(st.lists(entries(), min_size=1, max_size=5), st.data())
def test_damaged_bytes_never_raise_only_leave_the_manifest_to_the_ordinary_decoding(
    written: list[ManifestEntry], data: st.DataObject
) -> None:
    """Whatever bytes a manifest holds, the columns read it or return None; they never
    raise (the ordinary decoding is the one that reports damage)."""
    raw = bytearray(M.encode_manifest(written, data.draw(st.sampled_from(["none", "zstd"]))))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(len(raw) // 2, len(raw)))
    columns = C.decode_columns(bytes(raw[:cut]), "<manifest>")
    assert columns is None or isinstance(columns, C.ManifestColumns)
