"""pypaimon reads the snapshot and schema JSON shoal writes, and shoal reads its output back.

One subprocess of the interop suite's pypaimon 2.1.0 interpreter parses every document (the
oracle's virtual environment is created on first use; failing to create it fails the test).
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pyarrow as pa
import pytest

from shoal.format import types as T
from shoal.format.schema import TableSchema
from shoal.format.snapshot import Snapshot
from tests.interop.pypaimon_oracle import pypaimon_python

pytestmark = pytest.mark.interop

# Runs inside pypaimon's interpreter: parse each document, report the parsed values and
# pypaimon's own serialization of them.
_READER = r"""
import json, sys
from pypaimon.common.json_util import JSON
from pypaimon.schema.table_schema import TableSchema
from pypaimon.snapshot.snapshot import Snapshot

docs = json.load(sys.stdin)
out = {}
for name, text in docs["snapshots"].items():
    s = JSON.from_json(text, Snapshot)
    out[name] = {"parsed": JSON.to_json(s), "written": JSON.to_json(s, indent=2)}
for name, text in docs["schemas"].items():
    t = TableSchema.from_json(text)
    out[name] = {
        "version": t.version,
        "id": t.id,
        "fields": [[f.id, f.name, str(f.type)] for f in t.fields],
        "highestFieldId": t.highest_field_id,
        "partitionKeys": t.partition_keys,
        "primaryKeys": t.primary_keys,
        "options": t.options,
        "comment": t.comment,
        "timeMillis": t.time_millis,
        "written": JSON.to_json(t, indent=2),
    }
json.dump(out, sys.stdout)
"""

SNAPSHOTS = {
    "snapshot-minimal": Snapshot(
        id=1,
        schema_id=0,
        commit_kind="APPEND",
        time_millis=1761998400000,
        total_record_count=3,
        delta_record_count=3,
        base_manifest_list="manifest-list-a-0",
        delta_manifest_list="manifest-list-a-1",
        commit_user="u1",
    ),
    "snapshot-full": Snapshot(
        id=9,
        schema_id=2,
        commit_kind="OVERWRITE",
        time_millis=1761998400123,
        total_record_count=100,
        delta_record_count=-20,
        watermark=1761990000000,
        properties={"k": "v"},
        base_manifest_list="manifest-list-b-0",
        delta_manifest_list="manifest-list-b-1",
        commit_user="u2",
        commit_identifier=77,
        uuid="6f1f3b8e-8f59-4b8e-9d55-2f3f0e0b6a11",
        base_manifest_list_size=11,
        delta_manifest_list_size=22,
        changelog_manifest_list="manifest-list-b-2",
        changelog_manifest_list_size=33,
        index_manifest="index-manifest-c-0",
        writer_version="shoal",
        changelog_record_count=4,
        statistics="stat-d-0",
        next_row_id=100,
    ),
}

_NESTED = T.fields_from_arrow_schema(
    pa.schema(
        [
            pa.field("k", pa.int32(), nullable=False),
            pa.field("when", pa.timestamp("us", tz="UTC")),
            pa.field("amount", pa.decimal128(20, 4)),
            pa.field("name", pa.string()),
            pa.field("attrs", pa.map_(pa.string(), pa.list_(pa.float64()))),
            pa.field("who", pa.struct([pa.field("n", pa.string()), pa.field("a", pa.int16())])),
        ]
    )
)
SCHEMAS = {
    "schema-nested": TableSchema(
        id=4,
        fields=_NESTED,
        highest_field_id=T.highest_field_id(_NESTED),
        partition_keys=("name",),
        primary_keys=("k", "name"),
        options={"bucket": "2", "bucket-key": "k"},
        comment="a table",
        time_millis=1761998400000,
    ),
    "schema-no-comment": TableSchema(
        id=0,
        fields=_NESTED[:2],
        highest_field_id=1,
        options={},
        comment=None,
        time_millis=5,
    ),
}

# How pypaimon prints each field type (its str() of a parsed type).
PYPAIMON_TYPE_STRINGS = [
    "INT NOT NULL",
    "TIMESTAMP(6) WITH LOCAL TIME ZONE",
    "DECIMAL(20, 4)",
    "STRING",
    "MAP<STRING NOT NULL, ARRAY<DOUBLE>>",
    "ROW<n: STRING, a: SMALLINT>",
]


@pytest.fixture(scope="module")
def pypaimon_view() -> dict[str, Any]:
    docs = {
        "snapshots": {name: s.to_json() for name, s in SNAPSHOTS.items()},
        "schemas": {name: s.to_json() for name, s in SCHEMAS.items()},
    }
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run(
        [str(pypaimon_python()), "-c", _READER],
        input=json.dumps(docs),
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "PYTHONNOUSERSITE": "1"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    view: dict[str, Any] = json.loads(result.stdout)
    return view


@pytest.mark.parametrize("name", list(SNAPSHOTS))
def test_pypaimon_reads_shoal_snapshot(pypaimon_view: dict[str, Any], name: str) -> None:
    parsed = json.loads(pypaimon_view[name]["parsed"])
    ours = SNAPSHOTS[name].to_json_dict()
    # pypaimon drops nothing shoal wrote and invents nothing that shoal left out
    # (its Snapshot has no "operation"; shoal writes none here).
    assert parsed == ours


@pytest.mark.parametrize("name", list(SNAPSHOTS))
def test_shoal_reads_pypaimon_snapshot(pypaimon_view: dict[str, Any], name: str) -> None:
    back = Snapshot.from_json(pypaimon_view[name]["written"], f"pypaimon/{name}")
    assert back == SNAPSHOTS[name]
    assert back.properties == SNAPSHOTS[name].properties


def test_pypaimon_reads_shoal_schema(pypaimon_view: dict[str, Any]) -> None:
    view = pypaimon_view["schema-nested"]
    schema = SCHEMAS["schema-nested"]
    assert view["version"] == 3
    assert view["id"] == 4
    assert [f[0] for f in view["fields"]] == [f.id for f in schema.fields]
    assert [f[1] for f in view["fields"]] == schema.field_names
    assert [f[2] for f in view["fields"]] == PYPAIMON_TYPE_STRINGS
    assert view["highestFieldId"] == T.highest_field_id(_NESTED)
    assert view["partitionKeys"] == ["name"]
    assert view["primaryKeys"] == ["k", "name"]
    assert view["options"] == {"bucket": "2", "bucket-key": "k"}
    assert view["comment"] == "a table"
    assert view["timeMillis"] == 1761998400000


def test_pypaimon_reads_shoal_schema_without_comment(pypaimon_view: dict[str, Any]) -> None:
    view = pypaimon_view["schema-no-comment"]
    assert view["comment"] is None
    assert view["options"] == {}
    assert [f[1] for f in view["fields"]] == ["k", "when"]


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_shoal_reads_pypaimon_schema(pypaimon_view: dict[str, Any], name: str) -> None:
    back = TableSchema.from_json(pypaimon_view[name]["written"], f"pypaimon/{name}")
    assert back == SCHEMAS[name]
