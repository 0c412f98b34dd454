"""The Jackson default pretty printer layout that Paimon's metadata files use."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.format import jsonfmt


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3, "3"),
        (-9223372036854775808, "-9223372036854775808"),
        (1.5, "1.5"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        ("a", '"a"'),
        ('quote " and \\ and \n', '"quote \\" and \\\\ and \\n"'),
        ("ünïcode ✓", '"ünïcode ✓"'),
        ({}, "{ }"),
        ([], "[ ]"),
        ((), "[ ]"),
        ([1], "[ 1 ]"),
        (["a", "b"], '[ "a", "b" ]'),
        ((1, None, True), "[ 1, null, true ]"),
        ([[], {}], "[ [ ], { } ]"),
        ([[1, 2], [3]], "[ [ 1, 2 ], [ 3 ] ]"),
        ({"version": 3}, '{\n  "version" : 3\n}'),
        ({"a": 1, "b": "x"}, '{\n  "a" : 1,\n  "b" : "x"\n}'),
        ({"a": []}, '{\n  "a" : [ ]\n}'),
        ({"a": {}}, '{\n  "a" : { }\n}'),
        ({"keys": ["dt", "id"]}, '{\n  "keys" : [ "dt", "id" ]\n}'),
        ({"o": {"k": "v"}}, '{\n  "o" : {\n    "k" : "v"\n  }\n}'),
    ],
)
def test_dumps(value: Any, text: str) -> None:
    assert jsonfmt.dumps(value) == text


def test_objects_inside_arrays_indent_by_object_depth_only() -> None:
    # Jackson's array indenter is inline and does not deepen the object indent.
    value = {"fields": [{"id": 0, "t": {"type": "ARRAY"}}, {"id": 1}], "n": {"e": [{"f": 1}]}}
    assert jsonfmt.dumps(value) == (
        "{\n"
        '  "fields" : [ {\n'
        '    "id" : 0,\n'
        '    "t" : {\n'
        '      "type" : "ARRAY"\n'
        "    }\n"
        "  }, {\n"
        '    "id" : 1\n'
        "  } ],\n"
        '  "n" : {\n'
        '    "e" : [ {\n'
        '      "f" : 1\n'
        "    } ]\n"
        "  }\n"
        "}"
    )


def test_key_order_is_kept() -> None:
    text = jsonfmt.dumps({"z": 1, "a": 2, "m": 3})
    assert [line.split('"')[1] for line in text.splitlines()[1:-1]] == ["z", "a", "m"]


def test_non_ascii_keys_are_written_like_values() -> None:
    assert jsonfmt.dumps({"größe": "größe"}) == '{\n  "größe" : "größe"\n}'


def test_loads() -> None:
    assert jsonfmt.loads('{"a" : [ 1, 2 ]}') == {"a": [1, 2]}
    assert jsonfmt.loads(b'{"a" : null}') == {"a": None}
    with pytest.raises(json.JSONDecodeError):
        jsonfmt.loads("{")


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_json_values)
def test_dumps_is_valid_json_that_reads_back(value: Any) -> None:
    text = jsonfmt.dumps(value)
    assert jsonfmt.loads(text) == value
    assert json.loads(text) == value


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _json_values, min_size=1, max_size=6))
def test_top_level_objects_put_one_member_per_line(value: dict[str, Any]) -> None:
    lines = jsonfmt.dumps(value).split("\n")
    assert lines[0] == "{"
    assert lines[-1] == "}"
    members = [line for line in lines if line.startswith('  "')]
    assert len(members) == len(value)
    decoder = json.JSONDecoder()
    for key, line in zip(value, members, strict=True):
        parsed_key, end = decoder.raw_decode(line, 2)
        assert parsed_key == key
        assert line[end : end + 3] == " : "
