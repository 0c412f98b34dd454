"""Manifest entries and manifest-list entries, and their Avro encoding.

A manifest file holds ADD and DELETE entries of data files; a manifest list
holds one :class:`ManifestFileMeta` per manifest file. Every record begins with
the constant ``_VERSION`` (2), which is a format identifier, not a counter.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import fastavro

from shoal.spec import data_file
from shoal.spec import stats as S
from shoal.spec.avro_container import read_records
from shoal.spec.data_file import DataFileMeta
from shoal.spec.stats import SimpleStats

MANIFEST_VERSION = 2
KIND_ADD = 0
KIND_DELETE = 1

FileKind = Literal[0, 1]

# Identity of a file in the merge rule: (partition, bucket, level, name, extra files,
# embedded index, external path).
EntryIdentifier = tuple[bytes, int, int, str, tuple[str, ...], bytes | None, str | None]


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    kind: int
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    def identifier(self) -> EntryIdentifier:
        f = self.file
        return (
            self.partition,
            self.bucket,
            f.level,
            f.file_name,
            f.extra_files,
            f.embedded_index,
            f.external_path,
        )

    def with_kind(self, kind: int) -> ManifestEntry:
        return ManifestEntry(kind, self.partition, self.bucket, self.total_buckets, self.file)

    def to_avro(self) -> dict[str, Any]:
        return {
            "_VERSION": MANIFEST_VERSION,
            "_KIND": self.kind,
            "_PARTITION": self.partition,
            "_BUCKET": self.bucket,
            "_TOTAL_BUCKETS": self.total_buckets,
            "_FILE": self.file.to_avro(),
        }

    @staticmethod
    def from_avro(r: dict[str, Any]) -> ManifestEntry:
        return ManifestEntry(
            kind=r["_KIND"],
            partition=r["_PARTITION"],
            bucket=r["_BUCKET"],
            total_buckets=r["_TOTAL_BUCKETS"],
            file=DataFileMeta.from_avro(r["_FILE"]),
        )


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    """One manifest file as its manifest list describes it."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "_VERSION": MANIFEST_VERSION,
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_NUM_ADDED_FILES": self.num_added_files,
            "_NUM_DELETED_FILES": self.num_deleted_files,
            "_PARTITION_STATS": self.partition_stats.to_avro(),
            "_SCHEMA_ID": self.schema_id,
            "_MIN_BUCKET": self.min_bucket,
            "_MAX_BUCKET": self.max_bucket,
            "_MIN_LEVEL": self.min_level,
            "_MAX_LEVEL": self.max_level,
            "_MIN_ROW_ID": self.min_row_id,
            "_MAX_ROW_ID": self.max_row_id,
        }

    @staticmethod
    def from_avro(r: dict[str, Any]) -> ManifestFileMeta:
        return ManifestFileMeta(
            file_name=r["_FILE_NAME"],
            file_size=r["_FILE_SIZE"],
            num_added_files=r["_NUM_ADDED_FILES"],
            num_deleted_files=r["_NUM_DELETED_FILES"],
            partition_stats=SimpleStats.from_avro(r["_PARTITION_STATS"]),
            schema_id=r["_SCHEMA_ID"],
            min_bucket=r.get("_MIN_BUCKET"),
            max_bucket=r.get("_MAX_BUCKET"),
            min_level=r.get("_MIN_LEVEL"),
            max_level=r.get("_MAX_LEVEL"),
            min_row_id=r.get("_MIN_ROW_ID"),
            max_row_id=r.get("_MAX_ROW_ID"),
        )


_RECORD = "org.apache.paimon.avro.generated.record"

MANIFEST_ENTRY_AVRO: dict[str, Any] = {
    "type": "record",
    "name": _RECORD,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": data_file.AVRO_SCHEMA},
    ],
}

MANIFEST_FILE_META_AVRO: dict[str, Any] = {
    "type": "record",
    "name": _RECORD,
    "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": S.avro_schema("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        *(
            {"name": name, "type": ["null", kind], "default": None}
            for name, kind in (
                ("_MIN_BUCKET", "int"),
                ("_MAX_BUCKET", "int"),
                ("_MIN_LEVEL", "int"),
                ("_MAX_LEVEL", "int"),
                ("_MIN_ROW_ID", "long"),
                ("_MAX_ROW_ID", "long"),
            )
        ),
    ],
}

_PARSED_ENTRY = fastavro.parse_schema(MANIFEST_ENTRY_AVRO)
_PARSED_META = fastavro.parse_schema(MANIFEST_FILE_META_AVRO)


def _codec(compression: str) -> str:
    # Paimon's option values name Avro codecs by their short names.
    return {"none": "null", "zstd": "zstandard"}.get(compression, compression)


def encode_manifest(entries: Iterable[ManifestEntry], compression: str = "zstd") -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, _PARSED_ENTRY, (e.to_avro() for e in entries), codec=_codec(compression))
    return buf.getvalue()


def decode_manifest(data: bytes) -> list[ManifestEntry]:
    """Entries of a manifest file. Raises ``ValueError`` on bytes that are not one."""
    return [ManifestEntry.from_avro(r) for r in _read_records(data)]


def encode_manifest_list(metas: Iterable[ManifestFileMeta], compression: str = "zstd") -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, _PARSED_META, (m.to_avro() for m in metas), codec=_codec(compression))
    return buf.getvalue()


def decode_manifest_list(data: bytes) -> list[ManifestFileMeta]:
    """Entries of a manifest list. Raises ``ValueError`` on bytes that are not one."""
    return [ManifestFileMeta.from_avro(r) for r in _read_records(data)]


def manifest_list_file_names(data: bytes) -> list[str]:
    """The manifest names a manifest list holds (no other field is built)."""
    return [r["_FILE_NAME"] for r in _read_records(data)]


def manifest_file_names(data: bytes) -> list[str]:
    """The data file names and extra file names a manifest's entries name."""
    out: list[str] = []
    for record in _read_records(data):
        file = record["_FILE"]
        out.append(file["_FILE_NAME"])
        out.extend(file.get("_EXTRA_FILES") or ())
    return out


def _read_records(data: bytes) -> list[dict[str, Any]]:
    try:
        return read_records(data)
    except Exception as exc:  # fastavro raises many types for bad blocks, codecs and schemas
        raise ValueError(f"not an Avro manifest file: {exc}") from exc


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """Paimon's merge rule: a DELETE cancels an earlier ADD of the same file; a DELETE
    with no ADD in ``entries`` is kept (its ADD lives in older manifests).

    Raises:
        ValueError: when a file is added twice, which a valid table never does.
    """
    merged: dict[EntryIdentifier, ManifestEntry] = {}
    for entry in entries:
        key = entry.identifier()
        if entry.kind == KIND_ADD:
            if key in merged:
                raise ValueError(f"file {entry.file.file_name} is added twice")
            merged[key] = entry
        elif key in merged and merged[key].kind == KIND_ADD:
            del merged[key]
        else:
            merged[key] = entry
    return list(merged.values())
