"""Schema files: JSON round trips, old versions' implied options, damaged files."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

import shoal
from shoal.format import types as T
from shoal.format.schema import SCHEMA_VERSION, TableSchema

PATH = "/warehouse/db.db/events/schema/schema-0"

ARROW = pa.schema(
    [
        pa.field("dt", pa.string()),
        pa.field("id", pa.int64(), nullable=False),
        pa.field("tags", pa.list_(pa.string())),
    ]
)
FIELDS = T.fields_from_arrow_schema(ARROW)


def events_schema(**overrides: Any) -> TableSchema:
    values: dict[str, Any] = {
        "id": 0,
        "fields": FIELDS,
        "highest_field_id": 2,
        "partition_keys": ("dt",),
        "primary_keys": (),
        "options": {"bucket": "-1", "file.format": "parquet"},
        "comment": "events",
        "time_millis": 1761998400000,
    }
    values.update(overrides)
    return TableSchema(**values)


EVENTS_JSON = """{
  "version" : 3,
  "id" : 0,
  "fields" : [ {
    "id" : 0,
    "name" : "dt",
    "type" : "STRING"
  }, {
    "id" : 1,
    "name" : "id",
    "type" : "BIGINT NOT NULL"
  }, {
    "id" : 2,
    "name" : "tags",
    "type" : {
      "type" : "ARRAY",
      "element" : "STRING"
    }
  } ],
  "highestFieldId" : 2,
  "partitionKeys" : [ "dt" ],
  "primaryKeys" : [ ],
  "options" : {
    "bucket" : "-1",
    "file.format" : "parquet"
  },
  "comment" : "events",
  "timeMillis" : 1761998400000
}"""


def test_schema_json_is_jackson_pretty_printed() -> None:
    assert events_schema().to_json() == EVENTS_JSON


def test_null_comment_is_omitted() -> None:
    text = events_schema(comment=None, options={}).to_json()
    assert '"comment"' not in text
    assert '"options" : { },\n  "timeMillis" : 1761998400000\n}' in text


def test_null_comment_round_trips() -> None:
    schema = events_schema(comment=None)
    assert TableSchema.from_json(schema.to_json(), PATH) == schema


NESTED = T.fields_from_arrow_schema(
    pa.schema(
        [
            pa.field("k", pa.int32(), nullable=False),
            pa.field("when", pa.timestamp("us", tz="UTC")),
            pa.field("amount", pa.decimal128(20, 4)),
            pa.field("attrs", pa.map_(pa.string(), pa.list_(pa.float64()))),
            pa.field(
                "who",
                pa.struct([pa.field("name", pa.string()), pa.field("age", pa.int16(), False)]),
            ),
        ]
    )
)


@pytest.mark.parametrize(
    "schema",
    [
        events_schema(),
        events_schema(partition_keys=(), comment=None, options={}, time_millis=0),
        events_schema(id=12, primary_keys=("dt", "id"), options={"bucket": "4", "x.y": "z"}),
        TableSchema(
            id=3,
            fields=NESTED,
            highest_field_id=T.highest_field_id(NESTED),
            primary_keys=("k",),
            options={"bucket": "2", "bucket-key": "k"},
            comment='nested "quoted" comment\nwith a newline and ünïcode',
            time_millis=1,
        ),
        events_schema(fields=(T.DataField(0, "dt", T.parse_type("STRING"), "partition day"),)),
    ],
    ids=["events", "bare", "primary-key", "nested", "description"],
)
def test_schema_json_round_trip(schema: TableSchema) -> None:
    assert TableSchema.from_json(schema.to_json(), PATH) == schema
    assert TableSchema.from_json(schema.to_json().encode(), PATH) == schema


def test_parsed_schema_helpers() -> None:
    schema = TableSchema.from_json(EVENTS_JSON, PATH)
    assert schema.version == SCHEMA_VERSION == 3
    assert schema.field_names == ["dt", "id", "tags"]
    assert schema.field("id").type == T.parse_type("BIGINT NOT NULL")
    assert schema.partition_fields() == [FIELDS[0]]
    assert schema.partition_types() == [T.parse_type("STRING")]
    assert schema.arrow_schema() == ARROW
    with pytest.raises(KeyError):
        schema.field("missing")


def _with(**changes: Any) -> str:
    data = json.loads(EVENTS_JSON)
    for key, value in changes.items():
        if value is ...:
            del data[key]
        else:
            data[key] = value
    return json.dumps(data)


def test_version_1_implies_bucket_1_and_orc() -> None:
    schema = TableSchema.from_json(_with(version=1, options={}), PATH)
    assert schema.version == 1
    assert dict(schema.options) == {"bucket": "1", "file.format": "orc"}


def test_missing_version_means_version_1() -> None:
    schema = TableSchema.from_json(_with(version=..., options={"a": "b"}), PATH)
    assert schema.version == 1
    assert dict(schema.options) == {"bucket": "1", "file.format": "orc", "a": "b"}


def test_version_2_implies_orc_only() -> None:
    schema = TableSchema.from_json(_with(version=2, options={}), PATH)
    assert dict(schema.options) == {"file.format": "orc"}


def test_version_3_implies_nothing() -> None:
    schema = TableSchema.from_json(_with(version=3, options={}), PATH)
    assert dict(schema.options) == {}


def test_explicit_options_win_over_implied_ones() -> None:
    schema = TableSchema.from_json(
        _with(version=1, options={"bucket": "8", "file.format": "parquet"}), PATH
    )
    assert dict(schema.options) == {"bucket": "8", "file.format": "parquet"}


def test_option_values_are_read_as_strings() -> None:
    schema = TableSchema.from_json(_with(options={"bucket": 4, "flag": True}), PATH)
    assert dict(schema.options) == {"bucket": "4", "flag": "True"}


def test_missing_optional_members_take_defaults() -> None:
    text = _with(
        highestFieldId=...,
        partitionKeys=...,
        primaryKeys=...,
        options=...,
        comment=...,
        timeMillis=...,
    )
    schema = TableSchema.from_json(text, PATH)
    assert schema.highest_field_id == 2
    assert schema.partition_keys == ()
    assert schema.primary_keys == ()
    assert dict(schema.options) == {}
    assert schema.comment is None
    assert schema.time_millis == 0


def _corrupt(text: str | bytes) -> shoal.CorruptMetadataError:
    with pytest.raises(shoal.CorruptMetadataError) as info:
        TableSchema.from_json(text, PATH)
    assert info.value.path == PATH
    assert PATH in str(info.value)
    return info.value


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[]",
        "null",
        EVENTS_JSON[:100],
        _with(id=...),
        _with(fields=...),
        _with(id="zero"),
        _with(fields=[{"id": 0, "name": "dt", "type": "NOT_A_TYPE"}]),
        _with(fields=[{"name": "dt", "type": "STRING"}]),
        _with(fields="dt"),
        _with(options=["bucket"]),
    ],
    ids=[
        "empty",
        "open-brace",
        "array",
        "null",
        "truncated",
        "no-id",
        "no-fields",
        "bad-id",
        "bad-type",
        "field-without-id",
        "fields-not-a-list",
        "options-not-a-map",
    ],
)
def test_damaged_schema_file(text: str) -> None:
    _corrupt(text)


@pytest.mark.parametrize(
    "changes",
    [{"partitionKeys": ["nope"]}, {"primaryKeys": ["id", "nope"]}],
    ids=["partition", "primary"],
)
def test_key_column_that_is_not_a_field(changes: dict[str, Any]) -> None:
    error = _corrupt(_with(**changes))
    assert "nope" in error.reason
