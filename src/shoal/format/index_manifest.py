"""Index manifest entries and their Avro encoding.

A snapshot's ``indexManifest`` names one index manifest file in ``manifest/``: the
ADD entries of the index files (in ``index/``) live in that snapshot, each one index
file of a partition and bucket: the dynamic-bucket hash index (``HASH``) or the
deletion vectors of the bucket's data files (``DELETION_VECTORS``), or a global index
of a newer Paimon. Every record begins with the constant ``_VERSION`` (1), a format
identifier. Records are written with every field Paimon's current schema has; the
fields newer Paimon versions added (the vectors' cardinality, the external path, the
global index) are nullable and may be absent from older files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from shoal.errors import CorruptMetadataError
from shoal.format import avro
from shoal.format.avro.container import read_records, write_records
from shoal.format.data_file import is_file_name, nullable
from shoal.format.jsonfmt import short
from shoal.format.manifest import AVRO_RECORD, KIND_ADD, KIND_DELETE

INDEX_MANIFEST_VERSION = 1
HASH_INDEX = "HASH"
DELETION_VECTORS_INDEX = "DELETION_VECTORS"


@dataclass(frozen=True, slots=True)
class DeletionVectorMeta:
    """Where one data file's deletion vector lies in its index file: ``offset`` is the
    position of the vector's record, ``length`` as Paimon records it (see
    ``format/deletion_vector``), ``cardinality`` the number of deleted rows (absent
    in files of Paimon before 1.1)."""

    data_file_name: str
    offset: int
    length: int
    cardinality: int | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "f0": self.data_file_name,
            "f1": self.offset,
            "f2": self.length,
            "_CARDINALITY": self.cardinality,
        }

    @staticmethod
    def from_avro(r: dict[str, Any]) -> DeletionVectorMeta:
        return DeletionVectorMeta(r["f0"], r["f1"], r["f2"], r.get("_CARDINALITY"))


@dataclass(frozen=True, slots=True)
class GlobalIndexMeta:
    """The row range and fields a global index file covers (newer Paimon versions)."""

    row_range_start: int
    row_range_end: int
    index_field_id: int
    extra_field_ids: tuple[int, ...] | None = None
    index_meta: bytes | None = None
    source_meta: bytes | None = None

    def to_avro(self) -> dict[str, Any]:
        ids = self.extra_field_ids
        return {
            "_ROW_RANGE_START": self.row_range_start,
            "_ROW_RANGE_END": self.row_range_end,
            "_INDEX_FIELD_ID": self.index_field_id,
            "_EXTRA_FIELD_IDS": None if ids is None else list(ids),
            "_INDEX_META": self.index_meta,
            "_SOURCE_META": self.source_meta,
        }

    @staticmethod
    def from_avro(r: dict[str, Any]) -> GlobalIndexMeta:
        ids = r.get("_EXTRA_FIELD_IDS")
        return GlobalIndexMeta(
            r["_ROW_RANGE_START"],
            r["_ROW_RANGE_END"],
            r["_INDEX_FIELD_ID"],
            None if ids is None else tuple(ids),
            r.get("_INDEX_META"),
            r.get("_SOURCE_META"),
        )


@dataclass(frozen=True, slots=True)
class IndexFileMeta:
    """One index file: its type, name and size, its row count (hashes of a hash index,
    vectors of a deletion-vector file) and, for deletion vectors, the range of each
    data file's vector (in the order written; empty for a file of no vectors)."""

    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None = None
    external_path: str | None = None
    global_index: GlobalIndexMeta | None = None


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    kind: int
    partition: bytes
    bucket: int
    index_file: IndexFileMeta

    def with_kind(self, kind: int) -> IndexManifestEntry:
        return IndexManifestEntry(kind, self.partition, self.bucket, self.index_file)

    def bucket_identifier(self) -> tuple[bytes, int, str]:
        """The key under which Paimon keeps one index file per bucket and index type."""
        return (self.partition, self.bucket, self.index_file.index_type)

    def to_avro(self) -> dict[str, Any]:
        f = self.index_file
        ranges = f.dv_ranges
        return {
            "_VERSION": INDEX_MANIFEST_VERSION,
            "_KIND": self.kind,
            "_PARTITION": self.partition,
            "_BUCKET": self.bucket,
            "_INDEX_TYPE": f.index_type,
            "_FILE_NAME": f.file_name,
            "_FILE_SIZE": f.file_size,
            "_ROW_COUNT": f.row_count,
            "_DELETIONS_VECTORS_RANGES": None if ranges is None else [r.to_avro() for r in ranges],
            "_EXTERNAL_PATH": f.external_path,
            "_GLOBAL_INDEX": None if f.global_index is None else f.global_index.to_avro(),
        }

    @staticmethod
    def from_avro(r: dict[str, Any]) -> IndexManifestEntry:
        ranges = r.get("_DELETIONS_VECTORS_RANGES")
        global_index = r.get("_GLOBAL_INDEX")
        file = IndexFileMeta(
            index_type=r["_INDEX_TYPE"],
            file_name=r["_FILE_NAME"],
            file_size=r["_FILE_SIZE"],
            row_count=r["_ROW_COUNT"],
            dv_ranges=None if ranges is None else tuple(map(DeletionVectorMeta.from_avro, ranges)),
            external_path=r.get("_EXTERNAL_PATH"),
            global_index=None if global_index is None else GlobalIndexMeta.from_avro(global_index),
        )
        return IndexManifestEntry(r["_KIND"], r["_PARTITION"], r["_BUCKET"], file)


_DV_RANGE_AVRO: dict[str, Any] = {
    "type": "record",
    "name": AVRO_RECORD + "__DELETIONS_VECTORS_RANGES",
    "fields": [
        {"name": "f0", "type": "string"},
        {"name": "f1", "type": "int"},
        {"name": "f2", "type": "int"},
        {"name": "_CARDINALITY", **nullable("long")},
    ],
}

_GLOBAL_INDEX_AVRO: dict[str, Any] = {
    "type": "record",
    "name": AVRO_RECORD + "__GLOBAL_INDEX",
    "fields": [
        {"name": "_ROW_RANGE_START", "type": "long"},
        {"name": "_ROW_RANGE_END", "type": "long"},
        {"name": "_INDEX_FIELD_ID", "type": "int"},
        {"name": "_EXTRA_FIELD_IDS", **nullable({"type": "array", "items": "int"})},
        {"name": "_INDEX_META", **nullable("bytes")},
        {"name": "_SOURCE_META", **nullable("bytes")},
    ],
}

INDEX_MANIFEST_ENTRY_AVRO: dict[str, Any] = {
    "type": "record",
    "name": AVRO_RECORD,
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
            "name": "_DELETIONS_VECTORS_RANGES",
            **nullable({"type": "array", "items": ["null", _DV_RANGE_AVRO]}),
        },
        {"name": "_EXTERNAL_PATH", **nullable("string")},
        {"name": "_GLOBAL_INDEX", **nullable(_GLOBAL_INDEX_AVRO)},
    ],
}

avro.container.prepare(INDEX_MANIFEST_ENTRY_AVRO)


def encode_index_manifest(
    entries: Iterable[IndexManifestEntry], compression: str = "zstd"
) -> bytes:
    """An index manifest file of ``entries`` (Paimon writes only ADD entries into the
    file a snapshot names; the DELETE kind exists for the changes a commit carries).
    ``compression`` is a value of ``manifest.compression``."""
    codec = {"none": "null", "zstd": "zstandard"}.get(compression, compression)
    return write_records(INDEX_MANIFEST_ENTRY_AVRO, (e.to_avro() for e in entries), codec)


def decode_index_manifest(data: bytes, path: str = "<index manifest>") -> list[IndexManifestEntry]:
    """The entries of an index manifest file, in file order.

    Raises:
        CorruptMetadataError: naming ``path``, for bytes that are not an index manifest
            of the format version shoal reads, or whose entries are not well formed
            (an unknown kind, a file name that is not a plain name, a vector range
            that is negative, a data file with two vectors in one entry).
    """
    try:
        records = read_records(data)
    except Exception as exc:  # the decoders raise many types for damaged bytes
        raise CorruptMetadataError(path, f"not an Avro index manifest: {short(exc)}") from None
    entries: list[IndexManifestEntry] = []
    for r in records:
        try:
            version = r["_VERSION"]
            if version != INDEX_MANIFEST_VERSION:
                raise CorruptMetadataError(
                    path,
                    f"index manifest format version {version!r} is not one shoal reads "
                    f"({INDEX_MANIFEST_VERSION}); a newer Paimon must read this table",
                )
            entry = IndexManifestEntry.from_avro(r)
            _check(entry)
        except CorruptMetadataError:
            raise
        except KeyError as exc:
            raise CorruptMetadataError(path, f"a record has no field {exc}") from None
        except Exception as exc:  # a field of another type or value than the format's
            raise CorruptMetadataError(path, f"a record cannot be read: {short(exc)}") from None
        entries.append(entry)
    return entries


def _check(entry: IndexManifestEntry) -> None:
    f = entry.index_file
    if entry.kind not in (KIND_ADD, KIND_DELETE):
        raise ValueError(f"entry kind {entry.kind!r} is neither ADD (0) nor DELETE (1)")
    if not isinstance(f.index_type, str) or not f.index_type:
        raise ValueError(f"index type {f.index_type!r} is not a name")
    # Names become paths that maintenance deletes: none may reach outside index/.
    if not is_file_name(f.file_name):
        raise ValueError(f"index file name {f.file_name!r} is not a plain name")
    if f.file_size < 0 or f.row_count < 0:
        raise ValueError(f"index file {f.file_name} has a negative size or row count")
    if f.dv_ranges is None:
        return
    seen: set[str] = set()
    for r in f.dv_ranges:
        if not is_file_name(r.data_file_name):
            raise ValueError(f"data file name {r.data_file_name!r} is not a plain name")
        if r.offset < 0 or r.length < 0 or (r.cardinality is not None and r.cardinality < 0):
            raise ValueError(f"deletion vector range of {r.data_file_name} is negative")
        if r.data_file_name in seen:
            raise ValueError(f"data file {r.data_file_name} has two deletion vectors")
        seen.add(r.data_file_name)


def index_file_names(entries: Sequence[IndexManifestEntry]) -> list[str]:
    """The index file names ``entries`` name."""
    return [e.index_file.file_name for e in entries]


def combine_index_entries(
    previous: Iterable[IndexManifestEntry],
    changes: Iterable[IndexManifestEntry],
    *,
    bucket_unaware: bool = False,
) -> list[IndexManifestEntry]:
    """The ADD entries of the next snapshot's index manifest: ``previous`` (the ADD
    entries of the last one) changed by a commit's ``changes``, as Paimon combines
    them. Hash and deletion-vector indexes keep one file per partition, bucket and
    index type (a DELETE removes that key, then an ADD takes it); on bucket-unaware
    tables deletion-vector files, and global indexes everywhere, are kept by file
    name.

    Raises:
        ValueError: on bucket-unaware deletion vectors, for an ADD of a file or a data
            file's vector already present, or a DELETE of one absent.
    """
    previous = list(previous)
    changes = list(changes)
    if any(e.kind != KIND_ADD for e in previous):
        raise ValueError("an index manifest a snapshot names holds only ADD entries")
    kept: dict[object, IndexManifestEntry] = {}
    dv_files: set[str] = set()
    for e in previous:
        kept[_key(e, bucket_unaware)] = e
        if _by_name_strict(e, bucket_unaware):
            dv_files.update(r.data_file_name for r in e.index_file.dv_ranges or ())
    # Per key kind: a strict by-name combine applies changes in order; the others
    # apply every DELETE, then every ADD.
    strict = [e for e in changes if _by_name_strict(e, bucket_unaware)]
    loose = [e for e in changes if not _by_name_strict(e, bucket_unaware)]
    for e in strict:
        key = _key(e, bucket_unaware)
        names = [r.data_file_name for r in e.index_file.dv_ranges or ()]
        if e.kind == KIND_ADD:
            if key in kept:
                raise ValueError(f"index file {e.index_file.file_name} is already added")
            if dv_files.intersection(names):
                raise ValueError(f"a data file of {e.index_file.file_name} already has a vector")
            dv_files.update(names)
            kept[key] = e
        else:
            if key not in kept:
                raise ValueError(f"index file {e.index_file.file_name} is not present")
            if not dv_files.issuperset(names):
                raise ValueError(f"a data file of {e.index_file.file_name} has no vector")
            dv_files.difference_update(names)
            del kept[key]
    for e in loose:
        if e.kind == KIND_DELETE:
            kept.pop(_key(e, bucket_unaware), None)
    for e in loose:
        if e.kind == KIND_ADD:
            kept[_key(e, bucket_unaware)] = e
    return list(kept.values())


def _by_name_strict(e: IndexManifestEntry, bucket_unaware: bool) -> bool:
    return bucket_unaware and e.index_file.index_type == DELETION_VECTORS_INDEX


def _key(e: IndexManifestEntry, bucket_unaware: bool) -> object:
    t = e.index_file.index_type
    if t in (HASH_INDEX, DELETION_VECTORS_INDEX) and not _by_name_strict(e, bucket_unaware):
        return ("bucket", *e.bucket_identifier())
    return ("name", t, e.index_file.file_name)
