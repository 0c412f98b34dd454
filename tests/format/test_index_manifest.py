"""Index manifest files: Avro round trips of both index types, files of older Paimon
versions (without the newer nullable fields), damaged files, and the combine rule."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shoal.errors import CorruptMetadataError
from shoal.format import index_manifest as IM
from shoal.format.index_manifest import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    DeletionVectorMeta,
    GlobalIndexMeta,
    IndexFileMeta,
    IndexManifestEntry,
)
from shoal.format.manifest import KIND_ADD, KIND_DELETE

EMPTY_PARTITION = b"\x00" * 12
RECORD = "org.apache.paimon.avro.generated.record"


def dv_entry(
    name: str, bucket: int, ranges: dict[str, tuple[int, int]], kind: int = KIND_ADD
) -> IndexManifestEntry:
    metas = tuple(DeletionVectorMeta(f, o, n, None) for f, (o, n) in ranges.items())
    size = 1 + sum(n + 8 for _, n in ranges.values())
    file = IndexFileMeta(DELETION_VECTORS_INDEX, name, size, len(metas), metas)
    return IndexManifestEntry(kind, EMPTY_PARTITION, bucket, file)


def hash_entry(name: str, bucket: int, rows: int, kind: int = KIND_ADD) -> IndexManifestEntry:
    return IndexManifestEntry(
        kind, EMPTY_PARTITION, bucket, IndexFileMeta(HASH_INDEX, name, 4 * rows, rows)
    )


names = st.from_regex(r"[a-z][a-z0-9\-]{0,20}(\.parquet)?", fullmatch=True)
ranges = st.builds(
    DeletionVectorMeta,
    names,
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.none() | st.integers(0, 2**40),
)
global_indexes = st.builds(
    GlobalIndexMeta,
    st.integers(0, 2**40),
    st.integers(0, 2**40),
    st.integers(0, 1000),
    st.none() | st.tuples(st.integers(0, 100)),
    st.none() | st.binary(max_size=20),
    st.none() | st.binary(max_size=20),
)
files = st.builds(
    IndexFileMeta,
    st.sampled_from([HASH_INDEX, DELETION_VECTORS_INDEX, "btree"]),
    names,
    st.integers(0, 2**40),
    st.integers(0, 2**40),
    st.none() | st.lists(ranges, max_size=4, unique_by=lambda r: r.data_file_name).map(tuple),
    st.none() | names,
    st.none() | global_indexes,
)
entries = st.builds(
    IndexManifestEntry,
    st.sampled_from([KIND_ADD, KIND_DELETE]),
    st.binary(max_size=24),
    st.integers(-2, 1000),
    files,
)


@given(st.lists(entries, max_size=6), st.sampled_from(["zstd", "none", "deflate"]))
def test_round_trip(values: list[IndexManifestEntry], compression: str) -> None:
    data = IM.encode_index_manifest(values, compression)
    assert IM.decode_index_manifest(data) == values
    # a general Avro library reads the same records
    assert [IndexManifestEntry.from_avro(r) for r in fastavro.reader(io.BytesIO(data))] == values


def test_records_carry_version_1_and_paimon_field_order() -> None:
    data = IM.encode_index_manifest([dv_entry("index-a-0", 0, {"data-1.parquet": (1, 24)})])
    reader = fastavro.reader(io.BytesIO(data))
    schema: Any = reader.writer_schema
    assert [f["name"] for f in schema["fields"]] == [
        "_VERSION",
        "_KIND",
        "_PARTITION",
        "_BUCKET",
        "_INDEX_TYPE",
        "_FILE_NAME",
        "_FILE_SIZE",
        "_ROW_COUNT",
        "_DELETIONS_VECTORS_RANGES",
        "_EXTERNAL_PATH",
        "_GLOBAL_INDEX",
    ]
    (record,) = list(reader)
    assert record["_VERSION"] == 1
    assert record["_DELETIONS_VECTORS_RANGES"] == [
        {"f0": "data-1.parquet", "f1": 1, "f2": 24, "_CARDINALITY": None}
    ]


# The schema Paimon 0.9 and 1.0 write (the vectors' cardinality, the external path and
# the global index came later).
OLD_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "org.apache.paimon.avro.generated.record",
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {
            "default": None,
            "name": "_DELETIONS_VECTORS_RANGES",
            "type": [
                "null",
                {
                    "type": "array",
                    "items": [
                        "null",
                        {
                            "type": "record",
                            "name": RECORD + "__DELETIONS_VECTORS_RANGES",
                            "fields": [
                                {"name": "f0", "type": "string"},
                                {"name": "f1", "type": "int"},
                                {"name": "f2", "type": "int"},
                            ],
                        },
                    ],
                },
            ],
        },
    ],
}


def _old_file(records: list[dict[str, Any]]) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(OLD_SCHEMA), records, codec="zstandard")
    return out.getvalue()


def test_files_of_paimon_0_9_and_1_0_read() -> None:
    data = _old_file(
        [
            {
                "_VERSION": 1,
                "_KIND": 0,
                "_PARTITION": EMPTY_PARTITION,
                "_BUCKET": 1,
                "_INDEX_TYPE": "DELETION_VECTORS",
                "_FILE_NAME": "index-x-1",
                "_FILE_SIZE": 33,
                "_ROW_COUNT": 1,
                "_DELETIONS_VECTORS_RANGES": [{"f0": "data-y-0.parquet", "f1": 1, "f2": 24}],
            },
            {
                "_VERSION": 1,
                "_KIND": 0,
                "_PARTITION": EMPTY_PARTITION,
                "_BUCKET": 0,
                "_INDEX_TYPE": "HASH",
                "_FILE_NAME": "index-x-2",
                "_FILE_SIZE": 8,
                "_ROW_COUNT": 2,
                "_DELETIONS_VECTORS_RANGES": None,
            },
        ]
    )
    assert IM.decode_index_manifest(data) == [
        dv_entry("index-x-1", 1, {"data-y-0.parquet": (1, 24)}),
        hash_entry("index-x-2", 0, 2),
    ]


def _old_record(**changes: Any) -> dict[str, Any]:
    record = {
        "_VERSION": 1,
        "_KIND": 0,
        "_PARTITION": EMPTY_PARTITION,
        "_BUCKET": 0,
        "_INDEX_TYPE": "DELETION_VECTORS",
        "_FILE_NAME": "index-x-1",
        "_FILE_SIZE": 33,
        "_ROW_COUNT": 1,
        "_DELETIONS_VECTORS_RANGES": [{"f0": "data-y-0.parquet", "f1": 1, "f2": 24}],
    }
    return record | changes


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"_VERSION": 2}, "format version 2"),
        ({"_KIND": 3}, "neither ADD"),
        ({"_FILE_NAME": "../x"}, "plain name"),
        ({"_INDEX_TYPE": ""}, "not a name"),
        ({"_DELETIONS_VECTORS_RANGES": [{"f0": "a/b", "f1": 1, "f2": 2}]}, "plain name"),
        ({"_DELETIONS_VECTORS_RANGES": [{"f0": "a", "f1": -1, "f2": 2}]}, "negative"),
        (
            {"_DELETIONS_VECTORS_RANGES": [{"f0": "a", "f1": 1, "f2": 2}] * 2},
            "two deletion vectors",
        ),
        ({"_DELETIONS_VECTORS_RANGES": [None]}, "cannot be read"),
    ],
)
def test_malformed_records_are_corrupt(changes: dict[str, Any], message: str) -> None:
    data = _old_file([_old_record(**changes)])
    with pytest.raises(CorruptMetadataError, match=message) as info:
        IM.decode_index_manifest(data, "index-manifest-1")
    assert "index-manifest-1" in str(info.value)


@pytest.mark.parametrize("cut", [0, 10, 50, -3])
def test_damaged_bytes_are_corrupt(cut: int) -> None:
    data = IM.encode_index_manifest([hash_entry("index-a-0", 0, 3)], "none")
    with pytest.raises(CorruptMetadataError):
        IM.decode_index_manifest(data[:cut] if cut else b"not avro at all")


def test_combine_keeps_one_file_per_bucket_and_type() -> None:
    previous = [
        dv_entry("dv-0", 0, {"a": (1, 2)}),
        dv_entry("dv-1", 1, {"b": (1, 2)}),
        hash_entry("h-0", 0, 3),
    ]
    changes = [
        dv_entry("dv-0", 0, {"a": (1, 2)}, KIND_DELETE),
        dv_entry("dv-0b", 0, {"a": (1, 2), "c": (25, 4)}),
        hash_entry("h-0", 0, 3, KIND_DELETE),
        hash_entry("h-0b", 0, 5),
        hash_entry("h-1", 1, 1),
    ]
    combined = IM.combine_index_entries(previous, changes)
    assert sorted(IM.index_file_names(combined)) == ["dv-0b", "dv-1", "h-0b", "h-1"]


def test_combine_of_a_bucket_unaware_table_keeps_vectors_by_file_name() -> None:
    previous = [dv_entry("dv-0", 0, {"a": (1, 2)})]
    added = IM.combine_index_entries(
        previous, [dv_entry("dv-1", 0, {"b": (1, 2)})], bucket_unaware=True
    )
    assert sorted(IM.index_file_names(added)) == ["dv-0", "dv-1"]
    with pytest.raises(ValueError, match="already has a vector"):
        IM.combine_index_entries(
            previous, [dv_entry("dv-2", 0, {"a": (5, 2)})], bucket_unaware=True
        )
    with pytest.raises(ValueError, match="not present"):
        IM.combine_index_entries(
            previous, [dv_entry("dv-9", 0, {}, KIND_DELETE)], bucket_unaware=True
        )
    removed = IM.combine_index_entries(
        previous, [dv_entry("dv-0", 0, {"a": (1, 2)}, KIND_DELETE)], bucket_unaware=True
    )
    assert removed == []


def test_combine_refuses_a_previous_delete() -> None:
    with pytest.raises(ValueError, match="only ADD"):
        IM.combine_index_entries([hash_entry("h", 0, 1, KIND_DELETE)], [])
