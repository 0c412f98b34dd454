"""Tag files: a copy of the snapshot JSON, plus Jackson-style retention fields when the
tag has a retention; tag names; damaged tag files."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

import shoal
from shoal.format.snapshot import Snapshot
from shoal.format.tag import Tag, check_tag_path, decode_tag, encode_tag, validate_tag_name

PATH = "/warehouse/db.db/t/tag/tag-v1"
RETENTION_FIELDS = ("tagCreateTime", "tagTimeRetained")


def snapshot() -> Snapshot:
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
        base_manifest_list_size=1234,
        delta_manifest_list_size=567,
    )


def field_text(text: str, key: str) -> str:
    """The literal JSON text of one top-level field's value."""
    match = re.search(rf'^  "{key}" : (.*?),?$', text, re.MULTILINE)
    assert match is not None, f"{key} not in\n{text}"
    return match.group(1)


# --- encode / decode ----------------------------------------------------------------------


def test_a_tag_without_retention_is_exactly_the_snapshot_json() -> None:
    text = encode_tag(snapshot(), None, None)
    assert text == snapshot().to_json()
    assert not any(key in json.loads(text) for key in RETENTION_FIELDS)
    # A create time alone is not written: only a retention makes a tag file richer.
    assert encode_tag(snapshot(), datetime(2026, 11, 1, 12, 0), None) == snapshot().to_json()


def test_round_trip_without_retention() -> None:
    tag, snap = decode_tag("v1", encode_tag(snapshot(), None, None), PATH)
    assert tag == Tag("v1", 7, None, None)
    assert snap == snapshot()


@pytest.mark.parametrize(
    ("created", "retained"),
    [
        (datetime(2026, 11, 1, 13, 5), timedelta(seconds=5)),
        (datetime(2026, 11, 1, 13, 5, 7), timedelta(days=1)),
        (datetime(2026, 11, 1, 13, 5, 7, 250_000), timedelta(hours=25, minutes=1)),
        (datetime(1969, 1, 1, 0, 0, 0, 123_456), timedelta(milliseconds=1500)),
        (datetime(2026, 12, 31, 23, 59, 59, 999_999), timedelta(days=365, microseconds=1)),
    ],
)
def test_round_trip_with_retention(created: datetime, retained: timedelta) -> None:
    text = encode_tag(snapshot(), created, retained)
    data = json.loads(text)
    assert {k: v for k, v in data.items() if k not in RETENTION_FIELDS} == json.loads(
        snapshot().to_json()
    )
    tag, snap = decode_tag("v1", text, PATH)
    assert tag == Tag("v1", 7, created, retained)
    assert snap == snapshot()
    assert encode_tag(snap, tag.create_time, tag.time_retained) == text


@given(
    created=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)),
    retained=st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=36_500)),
)
def test_round_trip_property(created: datetime, retained: timedelta) -> None:
    tag, _ = decode_tag("v1", encode_tag(snapshot(), created, retained), PATH)
    assert (tag.create_time, tag.time_retained) == (created, retained)


@pytest.mark.parametrize(
    ("created", "array"),
    [
        (datetime(2026, 11, 1, 13, 5), "[ 2026, 11, 1, 13, 5 ]"),
        (datetime(2026, 11, 1, 0, 0), "[ 2026, 11, 1, 0, 0 ]"),
        (datetime(2026, 11, 1, 13, 5, 7), "[ 2026, 11, 1, 13, 5, 7 ]"),
        (datetime(2026, 11, 1, 13, 5, 0, 1), "[ 2026, 11, 1, 13, 5, 0, 1000 ]"),
        (datetime(1969, 1, 1, 0, 0, 0, 123_456), "[ 1969, 1, 1, 0, 0, 0, 123456000 ]"),
        (datetime(2026, 11, 1, 13, 5, 7, 500_000), "[ 2026, 11, 1, 13, 5, 7, 500000000 ]"),
    ],
)
def test_create_time_is_a_local_date_time_array_without_trailing_zeros(
    created: datetime, array: str
) -> None:
    text = encode_tag(snapshot(), created, timedelta(hours=1))
    assert field_text(text, "tagCreateTime") == array


@pytest.mark.parametrize(
    ("retained", "seconds"),
    [
        (timedelta(seconds=5), "5.000000000"),
        (timedelta(days=1), "86400.000000000"),
        (timedelta(hours=25, minutes=1), "90060.000000000"),
        (timedelta(milliseconds=1500), "1.500000000"),
        (timedelta(days=1, microseconds=5), "86400.000005000"),
        (timedelta(microseconds=1), "0.000001000"),
    ],
)
def test_time_retained_is_decimal_seconds_with_nine_fraction_digits(
    retained: timedelta, seconds: str
) -> None:
    text = encode_tag(snapshot(), datetime(2026, 11, 1, 13, 5), retained)
    assert field_text(text, "tagTimeRetained") == seconds


def test_zero_retention_is_written_as_a_plain_decimal() -> None:
    text = encode_tag(snapshot(), datetime(2026, 11, 1, 13, 5), timedelta(0))
    assert re.fullmatch(r"0\.0+", field_text(text, "tagTimeRetained"))


def java_tag_file(create_time: str, retained: str) -> str:
    """A tag file as Java Paimon writes it: the snapshot JSON and the two fields."""
    body = snapshot().to_json()
    assert body.endswith("\n}")
    return f'{body[:-2]},\n  "tagCreateTime" : {create_time},\n  "tagTimeRetained" : {retained}\n}}'


@pytest.mark.parametrize(
    ("array", "expected"),
    [
        # TagTest#testFromSnapshotAndTagTtl; nanoseconds are cut to microseconds.
        ("[ 1969, 1, 1, 0, 0, 0, 123456789 ]", datetime(1969, 1, 1, 0, 0, 0, 123456)),
        ("[ 2026, 11, 1, 13, 5 ]", datetime(2026, 11, 1, 13, 5)),
        ("[ 2026, 11, 1, 13, 5, 7 ]", datetime(2026, 11, 1, 13, 5, 7)),
        ("[ 2026, 11, 1, 13, 5, 0, 1000 ]", datetime(2026, 11, 1, 13, 5, 0, 1)),
    ],
)
def test_decodes_tags_written_by_java(array: str, expected: datetime) -> None:
    tag, snap = decode_tag("v1", java_tag_file(array, "5.000000000"), PATH)
    assert tag == Tag("v1", 7, expected, timedelta(seconds=5))
    assert snap == snapshot()


def test_decodes_pypaimon_float_retention() -> None:
    # pypaimon writes timedelta.total_seconds(): 7200.0
    tag, _ = decode_tag("v1", java_tag_file("[ 2026, 11, 1, 13, 5 ]", "7200.0"), PATH)
    assert tag.time_retained == timedelta(hours=2)


# --- names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["", " ", "\t", "  \n", "1", "123", "2026110113", "a/b", "/abs", "b/", "a\\b", "\\", "..", "."],
)
def test_invalid_names(name: str) -> None:
    with pytest.raises(shoal.InvalidTagNameError) as info:
        validate_tag_name(name)
    assert info.value.tag == name
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "name",
    ["v1.0", "2026-11-01", "release_1", "2026-11-01 13", "1.0", "-1", "a..b", "ünï cödé", "v"],
)
def test_valid_names(name: str) -> None:
    validate_tag_name(name)


def test_automatic_tags_may_be_all_digits_but_not_paths() -> None:
    check_tag_path("2026110113")
    for name in ("", "..", "a/b", "a\\b"):
        with pytest.raises(shoal.InvalidTagNameError):
            check_tag_path(name)


# --- damaged files ------------------------------------------------------------------------


def _with(**fields: object) -> str:
    return json.dumps({**json.loads(snapshot().to_json()), **fields})


def _without(key: str) -> str:
    return json.dumps({k: v for k, v in json.loads(snapshot().to_json()).items() if k != key})


CORRUPT = {
    "empty": "",
    "truncated": snapshot().to_json()[:40],
    "not utf-8": b"\xff\xfe\x00",
    "array": "[1, 2]",
    "string": '"tag"',
    "no id": _without("id"),
    "no schema id": _without("schemaId"),
    "create time a string": _with(tagCreateTime="2026-11-01", tagTimeRetained=5),
    "create time bad month": _with(tagCreateTime=[2026, 13, 1, 0, 0], tagTimeRetained=5),
    "create time too long": _with(tagCreateTime=[2026, 1, 1, 0, 0, 0, 0, 0], tagTimeRetained=5),
    "create time null part": _with(tagCreateTime=[None, 1, 1, 0, 0], tagTimeRetained=5),
    "create time empty": _with(tagCreateTime=[], tagTimeRetained=5),
    "retention a word": _with(tagCreateTime=[2026, 1, 1, 0, 0], tagTimeRetained="soon"),
    "retention an object": _with(tagCreateTime=[2026, 1, 1, 0, 0], tagTimeRetained={"s": 1}),
}


@pytest.mark.parametrize("content", CORRUPT.values(), ids=CORRUPT.keys())
def test_corrupt_tag_files(content: str | bytes) -> None:
    with pytest.raises(shoal.CorruptMetadataError) as info:
        decode_tag("v1", content, PATH)
    assert info.value.path == PATH
    assert PATH in str(info.value)


OUT_OF_RANGE = {
    "create time year out of range": _with(tagCreateTime=[10**30, 1, 1, 0, 0], tagTimeRetained=5),
    "retention too long": _with(tagCreateTime=[2026, 1, 1, 0, 0], tagTimeRetained=1e300),
}


@pytest.mark.parametrize("content", OUT_OF_RANGE.values(), ids=OUT_OF_RANGE.keys())
def test_out_of_range_tag_fields_are_corrupt(content: str) -> None:
    with pytest.raises(shoal.CorruptMetadataError) as info:
        decode_tag("v1", content, PATH)
    assert info.value.path == PATH
