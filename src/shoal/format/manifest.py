"""Manifest entries and manifest-list entries, and their Avro encoding.

A manifest file holds ADD and DELETE entries of data files; a manifest list
holds one :class:`ManifestFileMeta` per manifest file. Every record begins with
the constant ``_VERSION`` (2), which is a format identifier, not a counter.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from shoal.errors import CorruptMetadataError
from shoal.format import avro, data_file
from shoal.format import stats as S
from shoal.format.avro.compiled import Decoder
from shoal.format.avro.container import Where, read_records, write_records
from shoal.format.avro.strings import StringFinder
from shoal.format.data_file import DataFileMeta, is_file_name
from shoal.format.frozen import constructor
from shoal.format.jsonfmt import short
from shoal.format.stats import SimpleStats

MANIFEST_VERSION = 2
KIND_ADD = 0
KIND_DELETE = 1


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
        return _construct_entry(
            r["_KIND"],
            r["_PARTITION"],
            r["_BUCKET"],
            r["_TOTAL_BUCKETS"],
            DataFileMeta.from_avro(r["_FILE"]),
        )


_construct_entry = constructor(ManifestEntry)


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


# The record name Paimon gives every manifest Avro schema.
AVRO_RECORD = "org.apache.paimon.avro.generated.record"

MANIFEST_ENTRY_AVRO: dict[str, Any] = {
    "type": "record",
    "name": AVRO_RECORD,
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
    "name": AVRO_RECORD,
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


avro.container.prepare(MANIFEST_ENTRY_AVRO)
avro.container.prepare(MANIFEST_FILE_META_AVRO)


def _codec(compression: str) -> str:
    # Paimon's option values name Avro codecs by their short names.
    return {"none": "null", "zstd": "zstandard"}.get(compression, compression)


def encode_manifest(entries: Iterable[ManifestEntry], compression: str = "zstd") -> bytes:
    return write_records(MANIFEST_ENTRY_AVRO, (e.to_avro() for e in entries), _codec(compression))


def decode_manifest(
    data: bytes,
    path: str = "<manifest>",
    keep_partition: Callable[[bytes], bool] | None = None,
) -> list[ManifestEntry]:
    """Entries of a manifest file; with ``keep_partition``, only the entries of the
    partitions it accepts (given their BinaryRow bytes; the other entries are read
    past without being built).

    Raises:
        CorruptMetadataError: naming ``path``, for bytes that are not a manifest of
            the format version shoal reads (damaged, cut short, or not Avro at all).
    """
    if keep_partition is None:
        built = _decode_built(data)
        return built if built is not None else _decode(data, path, _entry)

    def accept(r: dict[str, Any]) -> bool:
        # a record of another format version is built, to be reported
        return r["_VERSION"] != MANIFEST_VERSION or keep_partition(r["_PARTITION"])

    return _decode(data, path, _entry, where=Where(_ENTRY_PARTITION, accept))


def encode_manifest_list(metas: Iterable[ManifestFileMeta], compression: str = "zstd") -> bytes:
    return write_records(MANIFEST_FILE_META_AVRO, (m.to_avro() for m in metas), _codec(compression))


def decode_manifest_list(data: bytes, path: str = "<manifest list>") -> list[ManifestFileMeta]:
    """Entries of a manifest list. Raises CorruptMetadataError naming ``path`` (as
    :func:`decode_manifest` does)."""
    return _decode(data, path, _list_entry)


def manifest_list_file_names(data: bytes, path: str = "<manifest list>") -> list[str]:
    """The manifest names a manifest list holds (no other field is built). Raises
    CorruptMetadataError naming ``path``."""
    return _decode(data, path, _list_entry_name, _LIST_ENTRY_NAME)


class ListNameReader:
    """Reads the manifest names of many manifest lists, decoding each record once.

    A table's base manifest lists mostly extend one another: the next snapshot's base
    list holds this one's records, byte for byte, followed by its delta list's. So a
    block whose bytes begin with a block read already (of the same schema) takes that
    block's names and decodes only the records after it. Blocks are matched by their
    first bytes, and for each start the block read last is kept (of the last
    :data:`MAX_KNOWN` starts): read in snapshot order, that is the previous base list.
    Safe to share between threads."""

    KEY_BYTES = 64  # the start of a block's first record: its version and name
    MAX_KNOWN = 64  # blocks kept, the last read

    def __init__(self) -> None:
        self._known: dict[tuple[bytes, bytes], tuple[bytes, int, list[str]]] = {}
        self._lock = threading.Lock()

    def names(self, data: bytes, path: str = "<manifest list>") -> list[str]:
        """The manifest names the list ``data`` holds, as
        :func:`manifest_list_file_names` reads them. Raises CorruptMetadataError
        naming ``path``."""
        try:
            compiled = _compiled_blocks(data, _LIST_ENTRY_NAME)
        except Exception as exc:  # the decoders raise many types for damaged bytes
            raise _not_avro(path, exc) from None
        if compiled is None:
            return manifest_list_file_names(data, path)
        schema, decode, blocks = compiled
        return [
            n for count, block in blocks for n in self._block(schema, decode, block, count, path)
        ]

    def _block(
        self, schema: bytes, decode: Decoder, block: bytes, count: int, path: str
    ) -> list[str]:
        key = (schema, block[: self.KEY_BYTES])
        with self._lock:
            known = self._known.get(key)
        names: list[str] = []
        start = 0
        if known is not None and known[1] <= count and block.startswith(known[0]):
            start, names = len(known[0]), known[2]
        try:
            records = avro.container.decode_block(decode, block, count - len(names), start)
        except Exception as exc:
            raise _not_avro(path, exc) from None
        names = names + _built(records, path, _list_entry_name)
        with self._lock:
            self._known.pop(key, None)
            self._known[key] = (block, count, names)
            if len(self._known) > self.MAX_KNOWN:
                del self._known[next(iter(self._known))]
        return names


def manifest_file_names(data: bytes, path: str = "<manifest>") -> list[str]:
    """The data file names and extra file names a manifest's entries name. Raises
    CorruptMetadataError naming ``path``."""
    return [name for names in _decode(data, path, _entry_names, _ENTRY_NAMES) for name in names]


def manifest_names_among(data: bytes, finder: StringFinder, path: str = "<manifest>") -> set[str]:
    """The names of ``finder``'s set that a manifest's entries name (data files and
    extra files, ADD and DELETE alike), without decoding every entry: the first entry
    of each block is decoded and checked as every read checks it, and must show the
    lengths written as :class:`StringFinder` reads them; the rest of the block is
    searched. No name the entries hold is left out; a name may rarely be found in
    another value of the entries (see :class:`StringFinder`). A manifest that shows
    otherwise is decoded whole. Raises CorruptMetadataError naming ``path``."""
    try:
        blocks = _blocks_and_first_records(data)
    except Exception as exc:  # the decoders raise many types for damaged bytes
        raise _not_avro(path, exc) from None
    if blocks is None:
        return finder.among(manifest_file_names(data, path))
    found: set[str] = set()
    for block, names in zip(blocks[0], _built(blocks[1], path, _entry_names), strict=True):
        if not all(avro.strings.encoded(name) in block for name in names):
            return finder.among(manifest_file_names(data, path))
        found |= finder.find(block)
    return found


def _blocks_and_first_records(
    data: bytes,
) -> tuple[list[bytes], list[dict[str, Any]]] | None:
    """The blocks of a manifest holding records, and the first record of each (its
    names); None for a manifest the compiled decoders leave to ``fastavro``."""
    compiled = _compiled_blocks(data, _ENTRY_NAMES)
    if compiled is None:
        return None
    _, decode, blocks = compiled
    kept = [block for count, block in blocks if count]
    return kept, [decode(block, 0)[0] for block in kept]


def _compiled_blocks(
    data: bytes, keep: Mapping[str, Any]
) -> tuple[bytes, Decoder, list[tuple[int, bytes]]] | None:
    """The writer's schema, the compiled decoder of the fields ``keep`` names and the
    blocks of an Avro file; None when the compiled decoders leave it to ``fastavro``.
    Raises what the container reader raises."""
    container = avro.container.read_blocks(data)
    if container is None:
        return None
    schema, blocks = container
    decode = avro.container.decoder(schema, keep)
    return None if decode is None else (schema, decode, blocks)


def _not_avro(path: str, exc: Exception) -> CorruptMetadataError:
    return CorruptMetadataError(path, f"not an Avro manifest file: {short(exc)}")


V = TypeVar("V")


def _decode(
    data: bytes,
    path: str,
    build: Callable[[dict[str, Any]], V],
    keep: Mapping[str, Any] | None = None,
    where: Where | None = None,
) -> list[V]:
    """``build`` over the records of an Avro file (holding the fields ``keep`` names,
    or all; those ``where`` accepts); whatever goes wrong on the way (the container, a
    codec, the writer's schema, a record's fields) is reported as CorruptMetadataError
    naming ``path``."""
    try:
        records = read_records(data, keep, where)
    except Exception as exc:  # the decoders raise many types for damaged bytes
        raise _not_avro(path, exc) from None
    return _built(records, path, build)


def _built(
    records: list[dict[str, Any]], path: str, build: Callable[[dict[str, Any]], V]
) -> list[V]:
    """``build`` over ``records`` of the manifest file at ``path``, reporting a record
    that is not one of the format as CorruptMetadataError."""
    try:
        return [build(r) for r in records]
    except KeyError as exc:
        raise CorruptMetadataError(path, f"a record has no field {exc}") from None
    except _FormatVersionError as exc:
        raise CorruptMetadataError(
            path,
            f"manifest format version {exc.version!r} is not one shoal reads "
            f"({MANIFEST_VERSION}); a newer version comes from a newer Paimon, which must "
            "read this table",
        ) from None
    except Exception as exc:  # a field of another type than the format's
        raise CorruptMetadataError(path, f"a record cannot be read: {short(exc)}") from None


class _FormatVersionError(ValueError):
    def __init__(self, version: object) -> None:
        super().__init__(f"format version {version!r}")
        self.version = version


def _entry(r: dict[str, Any]) -> ManifestEntry:
    if r["_VERSION"] != MANIFEST_VERSION:
        raise _FormatVersionError(r["_VERSION"])
    entry = ManifestEntry.from_avro(r)
    if entry.kind not in (KIND_ADD, KIND_DELETE):
        raise ValueError(f"entry kind {entry.kind!r} is neither ADD (0) nor DELETE (1)")
    _check_names(entry.file.file_name, entry.file.extra_files)
    return entry


def _entry_of(  # noqa: PLR0917 - the record's fields, as the decoder passes them
    version: int, kind: int, partition: bytes, bucket: int, total_buckets: int, file: DataFileMeta
) -> ManifestEntry:
    """An entry of its Avro fields, decoded, checked as :func:`_entry` checks it."""
    if version != MANIFEST_VERSION or kind not in (KIND_ADD, KIND_DELETE):
        raise _FormatVersionError(version)  # reported by the dict decoding
    _check_names(file.file_name, file.extra_files)
    known = _PARTITIONS.get(partition)
    if known is None:
        if len(_PARTITIONS) >= _MAX_PARTITIONS:
            _PARTITIONS.clear()
        known = _PARTITIONS.setdefault(partition, partition)
    return _construct_entry(kind, known, bucket, total_buckets, file)


# The partitions met last, each kept once: a partition's entries share its bytes.
_PARTITIONS: dict[bytes, bytes] = {}
_MAX_PARTITIONS = 16384


# Decoding entries straight into objects, no dict per record (see
# shoal.format.avro.compiled.Build).
_ENTRY_BUILD = avro.compiled.Build(
    _entry_of,
    [
        ("_VERSION", None, True),
        ("_KIND", None, True),
        ("_PARTITION", None, True),
        ("_BUCKET", None, True),
        ("_TOTAL_BUCKETS", None, True),
        ("_FILE", data_file.AVRO_BUILD, True),
    ],
    MANIFEST_ENTRY_AVRO,
)


def _decode_built(data: bytes) -> list[ManifestEntry] | None:
    """The entries of a manifest decoded straight into objects; None when that is not
    how this file decodes, or it does not decode (then the dict decoding reads it, and
    says what is wrong with it)."""
    try:
        return avro.container.read_built(data, _ENTRY_BUILD)
    except Exception:
        return None


def entry_decoder(text: bytes) -> Decoder | None:
    """The decoder of one whole entry of a manifest whose writer's schema is ``text``,
    building it straight into an object as :func:`decode_manifest` does: called with
    the decompressed block and a record's start, it returns the entry and where the
    record ends. None for a schema that decoding leaves to the dict decoding."""
    return avro.container.decoder(text, _ENTRY_BUILD)


def _list_entry(r: dict[str, Any]) -> ManifestFileMeta:
    if r["_VERSION"] != MANIFEST_VERSION:
        raise _FormatVersionError(r["_VERSION"])
    meta = ManifestFileMeta.from_avro(r)
    _check_names(meta.file_name, ())
    return meta


# The fields the name-only readers build (the rest of each record is read past).
_LIST_ENTRY_NAME = {"_VERSION": None, "_FILE_NAME": None}
_ENTRY_PARTITION = {"_VERSION": None, "_PARTITION": None}
_ENTRY_NAMES = {
    "_VERSION": None,
    "_KIND": None,
    "_FILE": {"_FILE_NAME": None, "_EXTRA_FILES": None},
}


def _list_entry_name(r: dict[str, Any]) -> str:
    if r["_VERSION"] != MANIFEST_VERSION:
        raise _FormatVersionError(r["_VERSION"])
    name: str = r["_FILE_NAME"]
    _check_names(name, ())
    return name


def _entry_names(r: dict[str, Any]) -> list[str]:
    if r["_VERSION"] != MANIFEST_VERSION:
        raise _FormatVersionError(r["_VERSION"])
    if r["_KIND"] not in (KIND_ADD, KIND_DELETE):
        raise ValueError(f"entry kind {r['_KIND']!r} is neither ADD (0) nor DELETE (1)")
    file = r["_FILE"]
    names = [file["_FILE_NAME"], *(file.get("_EXTRA_FILES") or ())]
    _check_names(names[0], names[1:])
    return names


def _check_names(name: object, extra: Sequence[object]) -> None:
    # Names become paths that maintenance deletes: none may reach outside its folder.
    if not is_file_name(name) or (extra and not all(map(is_file_name, extra))):
        raise ValueError(f"file name {name!r} (or one of its extra files) is not a plain name")


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
