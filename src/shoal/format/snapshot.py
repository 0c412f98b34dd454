"""Snapshot files: the JSON that makes one version of a table visible."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from shoal.errors import CorruptMetadataError
from shoal.format import jsonfmt
from shoal.format.data_file import is_file_name
from shoal.format.jsonfmt import is_long, load_json_object, short

SNAPSHOT_VERSION = 3
BATCH_COMMIT_IDENTIFIER = 2**63 - 1


class CommitKind(StrEnum):
    """What a snapshot's commit did, as Paimon names it (``Snapshot.commit_kind``)."""

    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


COMMIT_KINDS = tuple(kind.value for kind in CommitKind)

# (attribute, JSON name, required) in the order Paimon writes them. Optional fields are
# omitted when None, as Paimon's NON_NULL annotation does.
_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("version", "version", True),
    ("uuid", "uuid", False),
    ("id", "id", True),
    ("schema_id", "schemaId", True),
    ("base_manifest_list", "baseManifestList", True),
    ("base_manifest_list_size", "baseManifestListSize", False),
    ("delta_manifest_list", "deltaManifestList", True),
    ("delta_manifest_list_size", "deltaManifestListSize", False),
    ("changelog_manifest_list", "changelogManifestList", False),
    ("changelog_manifest_list_size", "changelogManifestListSize", False),
    ("index_manifest", "indexManifest", False),
    ("commit_user", "commitUser", True),
    ("writer_version", "writerVersion", False),
    ("commit_identifier", "commitIdentifier", True),
    ("commit_kind", "commitKind", True),
    ("time_millis", "timeMillis", True),
    ("total_record_count", "totalRecordCount", True),
    ("delta_record_count", "deltaRecordCount", True),
    ("changelog_record_count", "changelogRecordCount", False),
    ("watermark", "watermark", False),
    ("statistics", "statistics", False),
    ("properties", "properties", False),
    ("next_row_id", "nextRowId", False),
    ("operation", "operation", False),
)


_INT_FIELDS = (
    "version",
    "id",
    "schema_id",
    "commit_identifier",
    "time_millis",
    "total_record_count",
    "delta_record_count",
    "base_manifest_list_size",
    "delta_manifest_list_size",
    "changelog_manifest_list_size",
    "changelog_record_count",
    "watermark",
    "next_row_id",
)
_STRING_FIELDS = (
    "uuid",
    "base_manifest_list",
    "delta_manifest_list",
    "changelog_manifest_list",
    "index_manifest",
    "commit_user",
    "writer_version",
    "commit_kind",
    "statistics",
    "operation",
)
# Fields naming files of the table (manifest lists and index manifests in manifest/,
# statistics in statistics/).
_FILE_NAME_FIELDS = (
    "base_manifest_list",
    "delta_manifest_list",
    "changelog_manifest_list",
    "index_manifest",
    "statistics",
)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One committed version of a table.

    The first eight fields are shoal's public view of a snapshot; the rest are the
    format's bookkeeping (manifest lists, commit user and identifier).
    """

    id: int
    schema_id: int
    commit_kind: str
    time_millis: int
    total_record_count: int
    delta_record_count: int
    watermark: int | None = None
    properties: dict[str, str] | None = field(default=None, compare=False)
    base_manifest_list: str = ""
    delta_manifest_list: str = ""
    commit_user: str = ""
    commit_identifier: int = BATCH_COMMIT_IDENTIFIER
    version: int = SNAPSHOT_VERSION
    uuid: str | None = None
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    writer_version: str | None = None
    changelog_record_count: int | None = None
    statistics: str | None = None
    next_row_id: int | None = None
    operation: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for attr, name, required in _FIELDS:
            value = getattr(self, attr)
            if value is not None or required:
                out[name] = value
        return out

    def to_json(self) -> str:
        return jsonfmt.dumps(self.to_json_dict())

    @staticmethod
    def from_json_dict(data: dict[str, Any], path: str) -> Snapshot:
        """Parse snapshot JSON; unknown fields are ignored, as Paimon's readers do."""
        values: dict[str, Any] = {}
        for attr, name, required in _FIELDS:
            if name in data:
                values[attr] = data[name]
            elif required:
                raise CorruptMetadataError(path, f"required field {name!r} is missing")
            if required and values.get(attr) is None:
                raise CorruptMetadataError(path, f"required field {name!r} is null")
        for attr in _INT_FIELDS:
            value = values.get(attr)
            if value is not None and not is_long(value):
                raise CorruptMetadataError(
                    path, f"field {attr!r} is not a 64-bit integer: {short(value)}"
                )
        for attr in _STRING_FIELDS:
            value = values.get(attr)
            if value is not None and not isinstance(value, str):
                raise CorruptMetadataError(path, f"field {attr!r} is not a string: {short(value)}")
        for attr in _FILE_NAME_FIELDS:
            value = values.get(attr)
            if value is not None and not is_file_name(value):
                raise CorruptMetadataError(
                    path, f"field {attr!r} is not a file name: {short(value)}"
                )
        properties = values.get("properties")
        if properties is not None and not (
            isinstance(properties, dict) and all(isinstance(v, str) for v in properties.values())
        ):
            raise CorruptMetadataError(path, "field 'properties' is not a map of strings")
        version = values["version"]
        if version < 1 or version > SNAPSHOT_VERSION:
            raise CorruptMetadataError(
                path,
                f"snapshot format version {version!r} is not one shoal reads (1..3); a newer "
                "version comes from a newer Paimon, which must read this table",
            )
        if values["commit_kind"] not in COMMIT_KINDS:
            raise CorruptMetadataError(path, f"unknown commit kind {values['commit_kind']!r}")
        return Snapshot(**values)

    @staticmethod
    def from_json(text: str | bytes, path: str) -> Snapshot:
        return Snapshot.from_json_dict(load_json_object(text, path), path)
