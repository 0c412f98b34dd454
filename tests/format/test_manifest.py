"""Manifest files, manifest lists, DataFileMeta and SimpleStats: Avro round trips and merging."""

from __future__ import annotations

import io
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import fastavro
import pytest

from shoal.errors import CorruptMetadataError
from shoal.format import binary_row
from shoal.format import manifest as M
from shoal.format import types as T
from shoal.format.data_file import AVRO_SCHEMA as DATA_FILE_AVRO
from shoal.format.data_file import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT, DataFileMeta
from shoal.format.manifest import KIND_ADD, KIND_DELETE, ManifestEntry, ManifestFileMeta
from shoal.format.stats import EMPTY_STATS, SimpleStats

INT = T.parse_type("INT")
STRING = T.parse_type("STRING")
PARTITION = binary_row.serialize(["2026-11-01"], [STRING])


def _stats(lo: int, hi: int, nulls: int | None) -> SimpleStats:
    return SimpleStats.of([lo, "a"], [hi, "zzzzzzzzzz"], [nulls, 0], [INT, STRING])


def minimal_file(name: str = "data-1.parquet", level: int = 0) -> DataFileMeta:
    """Every optional field unset."""
    return DataFileMeta(
        file_name=name,
        file_size=1024,
        row_count=10,
        min_key=binary_row.EMPTY_ROW,
        max_key=binary_row.EMPTY_ROW,
        key_stats=EMPTY_STATS,
        value_stats=_stats(1, 10, 0),
        min_sequence_number=0,
        max_sequence_number=9,
        schema_id=0,
        level=level,
    )


def full_file(name: str = "data-2.parquet") -> DataFileMeta:
    """Every optional field set."""
    return DataFileMeta(
        file_name=name,
        file_size=2**40,
        row_count=2**33,
        min_key=binary_row.serialize([1], [INT]),
        max_key=binary_row.serialize([99], [INT]),
        key_stats=SimpleStats.of([1], [99], [0], [INT]),
        value_stats=_stats(-5, 5, None),
        min_sequence_number=-1,
        max_sequence_number=2**62,
        schema_id=3,
        level=5,
        extra_files=("data-2.parquet.index", "data-2.parquet.bloom"),
        creation_time=datetime(2026, 11, 1, 12, 30, 45, 123000),
        delete_row_count=7,
        embedded_index=b"\x00\x01index",
        file_source=FILE_SOURCE_COMPACT,
        value_stats_cols=("id", "name"),
        external_path="s3://bucket/elsewhere/data-2.parquet",
        first_row_id=1000,
        write_cols=("id", "name"),
        write_cols_sequences=(1, 2),
    )


def empty_collections_file() -> DataFileMeta:
    """Optional collections set but empty: distinct from unset."""
    return replace(
        minimal_file("data-3.parquet"),
        value_stats_cols=(),
        write_cols=(),
        write_cols_sequences=(),
        embedded_index=b"",
        external_path="",
        file_source=FILE_SOURCE_APPEND,
        delete_row_count=0,
        first_row_id=0,
    )


ENTRIES = [
    ManifestEntry(KIND_ADD, PARTITION, 0, 1, minimal_file()),
    ManifestEntry(KIND_DELETE, PARTITION, 3, 4, full_file()),
    ManifestEntry(KIND_ADD, binary_row.EMPTY_ROW, -1, -1, empty_collections_file()),
]


def _read_raw(data: bytes) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    reader = fastavro.reader(io.BytesIO(data))
    records = list(reader)
    return reader.writer_schema, reader.codec, records


# --- manifest files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entries",
    [[], ENTRIES[:1], ENTRIES[1:2], ENTRIES[2:], ENTRIES],
    ids=["empty", "all-unset", "all-set", "empty-collections", "mixed"],
)
def test_manifest_round_trip(entries: list[ManifestEntry]) -> None:
    assert M.decode_manifest(M.encode_manifest(entries)) == entries


def test_manifest_round_trip_many_entries() -> None:
    entries = [
        ManifestEntry(i % 2, PARTITION, i % 7, 7, minimal_file(f"data-{i}.parquet", level=i % 3))
        for i in range(2500)
    ]
    assert M.decode_manifest(M.encode_manifest(entries)) == entries


@pytest.mark.parametrize(
    "entries",
    [ENTRIES, [replace(e, file=replace(e.file, extra_files=("a", "b"))) for e in ENTRIES]],
    ids=["entries", "extra-files"],
)
def test_entries_decoded_into_objects_equal_those_built_from_dicts(
    entries: list[ManifestEntry],
) -> None:
    data = M.encode_manifest(entries)
    built = M._decode_built(data)
    assert built is not None
    assert built == M._decode(data, "<manifest>", M._entry) == entries
    # the shared empty statistics, as the dict decoding shares them
    assert all(
        (e.file.key_stats is EMPTY_STATS) == (e.file.key_stats == EMPTY_STATS) for e in built
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("_VERSION", 3, "format version 3"),
        ("_KIND", 2, "neither ADD"),
        ("_FILE_NAME", "../escape.parquet", "not a plain name"),
    ],
)
def test_a_record_the_objects_refuse_is_reported_as_the_dicts_report_it(
    field: str, value: Any, message: str
) -> None:
    record = ENTRIES[1].to_avro()
    if field == "_FILE_NAME":
        record["_FILE"] = record["_FILE"] | {field: value}
    else:
        record[field] = value
    buffer = io.BytesIO()
    fastavro.writer(buffer, fastavro.parse_schema(M.MANIFEST_ENTRY_AVRO), [record])
    assert M._decode_built(buffer.getvalue()) is None
    with pytest.raises(CorruptMetadataError, match=message):
        M.decode_manifest(buffer.getvalue())


@pytest.mark.parametrize(
    ("field", "writer_type"),
    [
        ("_CREATION_TIME", ["null", "long"]),  # no timestamp logical type
        ("_FILE_SIZE", "int"),
        ("_EXTRA_FILES", {"type": "array", "items": "bytes"}),
    ],
)
def test_a_field_of_another_type_is_not_decoded_into_objects(field: str, writer_type: Any) -> None:
    """A writer's schema that types a field otherwise than Paimon's is read by the dict
    decoding, which reports it; objects never hold values of another type."""
    file_fields = [
        f | {"type": writer_type} if f["name"] == field else f for f in DATA_FILE_AVRO["fields"]
    ]
    schema = {
        **M.MANIFEST_ENTRY_AVRO,
        "fields": [
            f | {"type": DATA_FILE_AVRO | {"fields": file_fields}} if f["name"] == "_FILE" else f
            for f in M.MANIFEST_ENTRY_AVRO["fields"]
        ],
    }
    record = ENTRIES[1].to_avro()
    file = record["_FILE"]
    if field == "_CREATION_TIME":
        file["_CREATION_TIME"] = 1_700_000_000_000
    if field == "_EXTRA_FILES":
        file["_EXTRA_FILES"] = [b"x"]
    buffer = io.BytesIO()
    fastavro.writer(buffer, fastavro.parse_schema(schema), [record])
    assert M._decode_built(buffer.getvalue()) is None


def test_a_manifest_without_a_required_field_is_reported() -> None:
    schema = {
        **M.MANIFEST_ENTRY_AVRO,
        "fields": [f for f in M.MANIFEST_ENTRY_AVRO["fields"] if f["name"] != "_BUCKET"],
    }
    record = {k: v for k, v in ENTRIES[1].to_avro().items() if k != "_BUCKET"}
    buffer = io.BytesIO()
    fastavro.writer(buffer, fastavro.parse_schema(schema), [record])
    assert M._decode_built(buffer.getvalue()) is None
    with pytest.raises(CorruptMetadataError, match="no field '_BUCKET'"):
        M.decode_manifest(buffer.getvalue())


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_decoding_some_partitions_builds_only_their_entries(compression: str) -> None:
    days = [binary_row.serialize([f"2026-11-0{d}"], [T.AtomicType(T.VARCHAR)]) for d in (1, 2, 3)]
    entries = [
        replace(ENTRIES[i % len(ENTRIES)], partition=days[i % 3], bucket=i % 5)
        for i in range(3000)  # several Avro blocks
    ]
    data = M.encode_manifest(entries, compression)
    for wanted in ({days[1]}, {days[0], days[2]}, set(), set(days)):
        kept = M.decode_manifest(data, keep_partition=wanted.__contains__)
        assert kept == [e for e in entries if e.partition in wanted]


def test_decoding_some_partitions_still_reports_another_format_version() -> None:
    record = ENTRIES[0].to_avro() | {"_VERSION": 3}
    buffer = io.BytesIO()
    fastavro.writer(buffer, fastavro.parse_schema(M.MANIFEST_ENTRY_AVRO), [record])
    with pytest.raises(CorruptMetadataError, match="format version 3"):
        M.decode_manifest(buffer.getvalue(), keep_partition=lambda _: False)


def test_manifest_keeps_optional_fields_unset_and_set() -> None:
    decoded = M.decode_manifest(M.encode_manifest(ENTRIES))
    unset, full, empty = (e.file for e in decoded)
    assert unset.creation_time is None
    assert unset.delete_row_count is None
    assert unset.embedded_index is None
    assert unset.file_source is None
    assert unset.value_stats_cols is None
    assert unset.external_path is None
    assert unset.first_row_id is None
    assert unset.write_cols is None
    assert unset.write_cols_sequences is None
    assert unset.extra_files == ()
    assert full.creation_time == datetime(2026, 11, 1, 12, 30, 45, 123000)
    assert full.creation_time.tzinfo is None
    assert full.value_stats.null_counts == (None, 0)
    assert empty.value_stats_cols == ()
    assert empty.write_cols == ()
    assert empty.embedded_index == b""


def test_manifest_defaults_to_zstandard() -> None:
    _, codec, _ = _read_raw(M.encode_manifest(ENTRIES))
    assert codec == "zstandard"
    _, codec, _ = _read_raw(M.encode_manifest_list([_meta()]))
    assert codec == "zstandard"


@pytest.mark.parametrize(
    ("compression", "codec"),
    [("zstd", "zstandard"), ("none", "null"), ("null", "null"), ("deflate", "deflate")],
)
def test_manifest_compression_option_names_the_avro_codec(compression: str, codec: str) -> None:
    data = M.encode_manifest(ENTRIES, compression)
    assert _read_raw(data)[1] == codec
    assert M.decode_manifest(data) == ENTRIES
    data = M.encode_manifest_list([_meta()], compression)
    assert _read_raw(data)[1] == codec
    assert M.decode_manifest_list(data) == [_meta()]


def test_every_manifest_record_has_version_2() -> None:
    _, _, records = _read_raw(M.encode_manifest(ENTRIES * 3))
    assert len(records) == 9
    assert all(r["_VERSION"] == 2 for r in records)
    assert [r["_KIND"] for r in records[:3]] == [0, 1, 0]
    assert records[0]["_PARTITION"] == PARTITION


def test_creation_time_is_stored_as_wall_clock_millis_in_utc() -> None:
    _, _, records = _read_raw(M.encode_manifest(ENTRIES[1:2]))
    assert records[0]["_FILE"]["_CREATION_TIME"] == datetime(
        2026, 11, 1, 12, 30, 45, 123000, tzinfo=UTC
    )


def test_manifest_entry_avro_field_order() -> None:
    schema, _, _ = _read_raw(M.encode_manifest(ENTRIES))
    assert [f["name"] for f in schema["fields"]] == [
        "_VERSION",
        "_KIND",
        "_PARTITION",
        "_BUCKET",
        "_TOTAL_BUCKETS",
        "_FILE",
    ]


def test_data_file_meta_avro_field_order() -> None:
    # Field ids 0-20 of DataFileMeta, PAIMON.md §5.5.
    assert [f["name"] for f in DATA_FILE_AVRO["fields"]] == [
        "_FILE_NAME",
        "_FILE_SIZE",
        "_ROW_COUNT",
        "_MIN_KEY",
        "_MAX_KEY",
        "_KEY_STATS",
        "_VALUE_STATS",
        "_MIN_SEQUENCE_NUMBER",
        "_MAX_SEQUENCE_NUMBER",
        "_SCHEMA_ID",
        "_LEVEL",
        "_EXTRA_FILES",
        "_CREATION_TIME",
        "_DELETE_ROW_COUNT",
        "_EMBEDDED_FILE_INDEX",
        "_FILE_SOURCE",
        "_VALUE_STATS_COLS",
        "_EXTERNAL_PATH",
        "_FIRST_ROW_ID",
        "_WRITE_COLS",
        "_WRITE_COLS_SEQUENCES",
    ]
    stats = next(f for f in DATA_FILE_AVRO["fields"] if f["name"] == "_VALUE_STATS")["type"]
    assert [f["name"] for f in stats["fields"]] == ["_MIN_VALUES", "_MAX_VALUES", "_NULL_COUNTS"]


def _older_data_file_schema() -> dict[str, Any]:
    """DataFileMeta as an older Paimon wrote it: no fields after _EXTERNAL_PATH."""
    fields = DATA_FILE_AVRO["fields"]
    cut = [f["name"] for f in fields].index("_FIRST_ROW_ID")
    return {**DATA_FILE_AVRO, "fields": fields[:cut]}


def test_manifest_written_without_newer_nullable_fields_reads() -> None:
    schema = {
        **M.MANIFEST_ENTRY_AVRO,
        "fields": [
            *M.MANIFEST_ENTRY_AVRO["fields"][:-1],
            {"name": "_FILE", "type": _older_data_file_schema()},
        ],
    }
    old_names = {f["name"] for f in _older_data_file_schema()["fields"]}
    record = ENTRIES[1].to_avro()
    record["_FILE"] = {k: v for k, v in record["_FILE"].items() if k in old_names}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [record], codec="null")
    (entry,) = M.decode_manifest(buf.getvalue())
    assert entry.file == replace(
        full_file(), first_row_id=None, write_cols=None, write_cols_sequences=None
    )


@pytest.mark.parametrize(
    "data",
    [b"", b"not avro at all", b"Obj\x01garbage"],
    ids=["empty", "text", "bad-header"],
)
def test_decoding_garbage_raises_corrupt_metadata(data: bytes) -> None:
    with pytest.raises(CorruptMetadataError, match="not an Avro manifest") as info:
        M.decode_manifest(data, "/t/manifest/manifest-x-0")
    assert info.value.path == "/t/manifest/manifest-x-0"
    with pytest.raises(CorruptMetadataError, match="not an Avro manifest"):
        M.decode_manifest_list(data)


def test_truncated_manifest_raises_corrupt_metadata() -> None:
    data = M.encode_manifest(ENTRIES)
    with pytest.raises(CorruptMetadataError, match="not an Avro manifest"):
        M.decode_manifest(data[: len(data) - 20])


# --- manifest lists ----------------------------------------------------------------------------


def _meta(**overrides: Any) -> ManifestFileMeta:
    base = ManifestFileMeta(
        file_name="manifest-0f3c-0",
        file_size=4096,
        num_added_files=3,
        num_deleted_files=1,
        partition_stats=SimpleStats.of(["2026-01-01"], ["2026-12-31"], [0], [STRING]),
        schema_id=2,
    )
    return replace(base, **overrides)


META_ALL_SET = _meta(
    min_bucket=0,
    max_bucket=15,
    min_level=0,
    max_level=5,
    min_row_id=0,
    max_row_id=2**40,
)


@pytest.mark.parametrize(
    "metas",
    [
        [],
        [_meta()],
        [META_ALL_SET],
        [_meta(), META_ALL_SET, _meta(file_name="manifest-x-1", min_bucket=2, max_row_id=9)],
        [_meta(partition_stats=SimpleStats(binary_row.EMPTY_ROW, binary_row.EMPTY_ROW, None))],
    ],
    ids=["empty", "all-unset", "all-set", "mixed", "null-counts-unset"],
)
def test_manifest_list_round_trip(metas: list[ManifestFileMeta]) -> None:
    assert M.decode_manifest_list(M.encode_manifest_list(metas)) == metas


def test_every_manifest_list_record_has_version_2() -> None:
    schema, _, records = _read_raw(M.encode_manifest_list([_meta(), META_ALL_SET]))
    assert [r["_VERSION"] for r in records] == [2, 2]
    assert [f["name"] for f in schema["fields"]] == [
        "_VERSION",
        "_FILE_NAME",
        "_FILE_SIZE",
        "_NUM_ADDED_FILES",
        "_NUM_DELETED_FILES",
        "_PARTITION_STATS",
        "_SCHEMA_ID",
        "_MIN_BUCKET",
        "_MAX_BUCKET",
        "_MIN_LEVEL",
        "_MAX_LEVEL",
        "_MIN_ROW_ID",
        "_MAX_ROW_ID",
    ]
    assert records[0]["_MIN_BUCKET"] is None
    assert records[1]["_MAX_ROW_ID"] == 2**40


def test_manifest_list_without_newer_nullable_fields_reads() -> None:
    legacy = {
        **M.MANIFEST_FILE_META_AVRO,
        "fields": M.MANIFEST_FILE_META_AVRO["fields"][:7],  # up to _SCHEMA_ID
    }
    record = {k: v for k, v in META_ALL_SET.to_avro().items() if not k.startswith(("_MIN", "_MAX"))}
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(legacy), [record])
    assert M.decode_manifest_list(buf.getvalue()) == [_meta()]


# --- stats -------------------------------------------------------------------------------------


def test_simple_stats_of_serializes_binary_rows() -> None:
    stats = SimpleStats.of([1, None], [5, "b"], [0, 3], [INT, STRING])
    assert stats.min_values == binary_row.serialize([1, None], [INT, STRING])
    assert stats.max_values == binary_row.serialize([5, "b"], [INT, STRING])
    assert stats.null_counts == (0, 3)
    assert binary_row.deserialize(stats.min_values, [INT, STRING]) == (1, None)


@pytest.mark.parametrize(
    "stats",
    [
        EMPTY_STATS,
        SimpleStats.of([1], [2], [None], [INT]),
        SimpleStats(b"\x00\x00\x00\x00" + bytes(8), b"\x00\x00\x00\x00" + bytes(8), None),
    ],
    ids=["empty", "unknown-count", "counts-unset"],
)
def test_simple_stats_avro_dict_round_trip(stats: SimpleStats) -> None:
    assert SimpleStats.from_avro(stats.to_avro()) == stats


def test_empty_stats() -> None:
    assert EMPTY_STATS.min_values == binary_row.EMPTY_ROW
    assert EMPTY_STATS.max_values == binary_row.EMPTY_ROW
    assert EMPTY_STATS.null_counts == ()
    assert EMPTY_STATS.to_avro() == {
        "_MIN_VALUES": binary_row.EMPTY_ROW,
        "_MAX_VALUES": binary_row.EMPTY_ROW,
        "_NULL_COUNTS": [],
    }


# --- merge rule --------------------------------------------------------------------------------


def _add(name: str, level: int = 0, bucket: int = 0) -> ManifestEntry:
    return ManifestEntry(KIND_ADD, PARTITION, bucket, 1, minimal_file(name, level))


def _delete(name: str, level: int = 0, bucket: int = 0) -> ManifestEntry:
    return _add(name, level, bucket).with_kind(KIND_DELETE)


def test_merge_add_then_delete_cancels() -> None:
    assert M.merge_entries([_add("a"), _delete("a")]) == []


def test_merge_delete_without_add_is_kept() -> None:
    assert M.merge_entries([_delete("a")]) == [_delete("a")]


def test_merge_add_twice_raises() -> None:
    with pytest.raises(ValueError, match="added twice"):
        M.merge_entries([_add("a"), _add("a")])


def test_merge_add_after_delete_of_the_same_identifier_raises() -> None:
    # Java's mergeEntries refuses an ADD whose identifier is already in the map, even
    # when what is there is a DELETE.
    with pytest.raises(ValueError, match="added twice"):
        M.merge_entries([_delete("a"), _add("a")])


def test_merge_add_delete_add_leaves_the_new_add() -> None:
    assert M.merge_entries([_add("a"), _delete("a"), _add("a")]) == [_add("a")]


def test_merge_keeps_unrelated_entries_in_order() -> None:
    merged = M.merge_entries([_add("a"), _add("b"), _delete("x"), _delete("a"), _add("c")])
    assert merged == [_add("b"), _delete("x"), _add("c")]


def test_merge_level_upgrade_is_delete_plus_add() -> None:
    # A compaction upgrade: DELETE at level 0, ADD of the same file at level 5.
    merged = M.merge_entries([_add("a", level=0), _delete("a", level=0), _add("a", level=5)])
    assert merged == [_add("a", level=5)]
    # Without the old ADD in the input, both entries survive.
    merged = M.merge_entries([_delete("a", level=0), _add("a", level=5)])
    assert merged == [_delete("a", level=0), _add("a", level=5)]


def test_merge_identifier_includes_partition_bucket_and_level() -> None:
    other_partition = replace(_add("a"), partition=binary_row.serialize(["x"], [STRING]))
    assert M.merge_entries([_add("a"), other_partition]) == [_add("a"), other_partition]
    assert M.merge_entries([_add("a", bucket=0), _add("a", bucket=1)]) == [
        _add("a", bucket=0),
        _add("a", bucket=1),
    ]
    assert M.merge_entries([_add("a"), _delete("a", bucket=1)]) == [
        _add("a"),
        _delete("a", bucket=1),
    ]


def test_merge_identifier_includes_extra_files_index_and_external_path() -> None:
    base = _add("a")
    variants = [
        replace(base, file=replace(base.file, extra_files=("a.index",))),
        replace(base, file=replace(base.file, embedded_index=b"\x01")),
        replace(base, file=replace(base.file, external_path="s3://x/a")),
    ]
    for variant in variants:
        assert M.merge_entries([base, variant.with_kind(KIND_DELETE)]) == [
            base,
            variant.with_kind(KIND_DELETE),
        ]


def test_merge_ignores_total_buckets_and_stats() -> None:
    add = _add("a")
    delete = replace(add, total_buckets=8, file=replace(add.file, row_count=0)).with_kind(
        KIND_DELETE
    )
    assert M.merge_entries([add, delete]) == []


def test_identifier_and_with_kind() -> None:
    entry = ManifestEntry(KIND_ADD, PARTITION, 2, 4, full_file())
    assert entry.identifier() == (
        PARTITION,
        2,
        5,
        "data-2.parquet",
        ("data-2.parquet.index", "data-2.parquet.bloom"),
        b"\x00\x01index",
        "s3://bucket/elsewhere/data-2.parquet",
    )
    deleted = entry.with_kind(KIND_DELETE)
    assert deleted.kind == KIND_DELETE
    assert replace(deleted, kind=KIND_ADD) == entry


def test_decoded_entries_share_equal_partitions_and_null_counts() -> None:
    stats = SimpleStats(b"\x00" * 16, b"\x01" * 16, (0, None, 3))
    entries = [
        ManifestEntry(
            KIND_ADD,
            PARTITION,
            0,
            1,
            replace(minimal_file(f"data-{i}.parquet"), key_stats=stats, value_stats=stats),
        )
        for i in range(3)
    ]
    decoded = M.decode_manifest(M.encode_manifest(entries))
    assert decoded == entries
    first = decoded[0]
    for entry in decoded[1:]:
        assert entry.partition is first.partition
        assert entry.file.value_stats.null_counts is first.file.key_stats.null_counts
