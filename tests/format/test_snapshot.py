"""Snapshot files: Paimon's JSON names and order, omitted nulls, and damaged files."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

import shoal
from shoal.format.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot

PATH = "/warehouse/db.db/t/snapshot/snapshot-7"


def minimal() -> Snapshot:
    return Snapshot(
        id=7,
        schema_id=0,
        commit_kind="APPEND",
        time_millis=1761998400000,
        total_record_count=30,
        delta_record_count=10,
        base_manifest_list="manifest-list-4b1a-0",
        delta_manifest_list="manifest-list-4b1a-1",
        commit_user="shoal-user",
    )


def full() -> Snapshot:
    return replace(
        minimal(),
        commit_kind="COMPACT",
        uuid="8c4bd7a0-4c51-4fd4-a6a0-36e3b16ba1c1",
        base_manifest_list_size=1234,
        delta_manifest_list_size=567,
        changelog_manifest_list="manifest-list-4b1a-2",
        changelog_manifest_list_size=89,
        index_manifest="index-manifest-77-0",
        writer_version="shoal-0.1.0",
        commit_identifier=42,
        changelog_record_count=3,
        watermark=-9223372036854775808,
        statistics="stat-1-0",
        properties={"k": "v", "owner": "etl"},
        next_row_id=100,
        operation="WRITE",
    )


MINIMAL_JSON = """{
  "version" : 3,
  "id" : 7,
  "schemaId" : 0,
  "baseManifestList" : "manifest-list-4b1a-0",
  "deltaManifestList" : "manifest-list-4b1a-1",
  "commitUser" : "shoal-user",
  "commitIdentifier" : 9223372036854775807,
  "commitKind" : "APPEND",
  "timeMillis" : 1761998400000,
  "totalRecordCount" : 30,
  "deltaRecordCount" : 10
}"""

FULL_JSON = """{
  "version" : 3,
  "uuid" : "8c4bd7a0-4c51-4fd4-a6a0-36e3b16ba1c1",
  "id" : 7,
  "schemaId" : 0,
  "baseManifestList" : "manifest-list-4b1a-0",
  "baseManifestListSize" : 1234,
  "deltaManifestList" : "manifest-list-4b1a-1",
  "deltaManifestListSize" : 567,
  "changelogManifestList" : "manifest-list-4b1a-2",
  "changelogManifestListSize" : 89,
  "indexManifest" : "index-manifest-77-0",
  "commitUser" : "shoal-user",
  "writerVersion" : "shoal-0.1.0",
  "commitIdentifier" : 42,
  "commitKind" : "COMPACT",
  "timeMillis" : 1761998400000,
  "totalRecordCount" : 30,
  "deltaRecordCount" : 10,
  "changelogRecordCount" : 3,
  "watermark" : -9223372036854775808,
  "statistics" : "stat-1-0",
  "properties" : {
    "k" : "v",
    "owner" : "etl"
  },
  "nextRowId" : 100,
  "operation" : "WRITE"
}"""


def test_minimal_snapshot_json_is_jackson_pretty_printed() -> None:
    assert minimal().to_json() == MINIMAL_JSON


def test_full_snapshot_json_has_every_field_in_paimon_order() -> None:
    assert full().to_json() == FULL_JSON


def test_null_optional_fields_are_omitted() -> None:
    data = minimal().to_json_dict()
    assert list(data) == [
        "version",
        "id",
        "schemaId",
        "baseManifestList",
        "deltaManifestList",
        "commitUser",
        "commitIdentifier",
        "commitKind",
        "timeMillis",
        "totalRecordCount",
        "deltaRecordCount",
    ]
    assert None not in data.values()


def test_defaults() -> None:
    s = minimal()
    assert s.version == 3
    assert s.commit_identifier == BATCH_COMMIT_IDENTIFIER == 2**63 - 1
    assert s.uuid is None
    assert s.watermark is None


@pytest.mark.parametrize("make", [minimal, full], ids=["minimal", "full"])
def test_json_round_trip(make: Any) -> None:
    s = make()
    back = Snapshot.from_json(s.to_json(), PATH)
    assert back == s
    assert back.properties == s.properties  # not part of ==, so checked on its own
    assert back.to_json() == s.to_json()


def test_from_json_accepts_bytes() -> None:
    assert Snapshot.from_json(MINIMAL_JSON.encode(), PATH) == minimal()


def test_from_json_accepts_compact_json() -> None:
    compact = json.dumps(json.loads(FULL_JSON), separators=(",", ":"))
    assert Snapshot.from_json(compact, PATH) == full()


def test_unknown_fields_are_ignored() -> None:
    data = json.loads(MINIMAL_JSON)
    data["logOffsets"] = {"0": 12}
    data["someFutureField"] = [1, 2, 3]
    assert Snapshot.from_json(json.dumps(data), PATH) == minimal()


def test_explicit_nulls_for_optional_fields_read_as_none() -> None:
    data = json.loads(MINIMAL_JSON)
    data.update({"watermark": None, "properties": None, "uuid": None})
    s = Snapshot.from_json(json.dumps(data), PATH)
    assert s == minimal()
    assert s.properties is None


@pytest.mark.parametrize("version", [1, 2, 3])
def test_older_versions_are_read(version: int) -> None:
    data = json.loads(MINIMAL_JSON)
    data["version"] = version
    assert Snapshot.from_json(json.dumps(data), PATH).version == version


@pytest.mark.parametrize("kind", ["APPEND", "COMPACT", "OVERWRITE", "ANALYZE"])
def test_every_commit_kind_is_read(kind: str) -> None:
    data = json.loads(MINIMAL_JSON)
    data["commitKind"] = kind
    assert Snapshot.from_json(json.dumps(data), PATH).commit_kind == kind


def _corrupt(text: str | bytes) -> shoal.CorruptMetadataError:
    with pytest.raises(shoal.CorruptMetadataError) as info:
        Snapshot.from_json(text, PATH)
    assert info.value.path == PATH
    assert PATH in str(info.value)
    return info.value


@pytest.mark.parametrize(
    "name",
    [
        "version",
        "id",
        "schemaId",
        "baseManifestList",
        "deltaManifestList",
        "commitUser",
        "commitIdentifier",
        "commitKind",
        "timeMillis",
        "totalRecordCount",
        "deltaRecordCount",
    ],
)
def test_missing_required_field(name: str) -> None:
    data = json.loads(MINIMAL_JSON)
    del data[name]
    error = _corrupt(json.dumps(data))
    assert name in error.reason


@pytest.mark.parametrize("version", [4, 99, "3", None])
def test_unreadable_version(version: object) -> None:
    data = json.loads(MINIMAL_JSON)
    data["version"] = version
    error = _corrupt(json.dumps(data))
    assert "version" in error.reason


def test_unknown_commit_kind() -> None:
    data = json.loads(MINIMAL_JSON)
    data["commitKind"] = "MERGE"
    assert "MERGE" in _corrupt(json.dumps(data)).reason


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        '{"version" : 3,}',
        "not json",
        MINIMAL_JSON[:-10],
        b"\xff\xfe\x00garbage",
    ],
    ids=["empty", "open-brace", "trailing-comma", "text", "truncated", "bad-utf8"],
)
def test_bad_json(text: str | bytes) -> None:
    assert "JSON" in _corrupt(text).reason


@pytest.mark.parametrize("text", ["[]", "3", '"snapshot"', "null"])
def test_json_that_is_not_an_object(text: str) -> None:
    assert "object" in _corrupt(text).reason


@pytest.mark.parametrize(
    "changes",
    [{"version": 0}, {"version": True}, {"id": "seven"}, {"id": None}, {"timeMillis": "now"}],
    ids=["version-0", "version-true", "id-string", "id-null", "time-string"],
)
def test_wrongly_typed_fields_are_corrupt(changes: dict[str, Any]) -> None:
    data = json.loads(MINIMAL_JSON)
    data.update(changes)
    _corrupt(json.dumps(data))
