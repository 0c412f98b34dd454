"""Bucket assignment: the hash and buckets Paimon's writers compute for the same keys.

The hashes and buckets in the golden tables were computed once, by hand, with
pypaimon 2.1.0's fixed-bucket key extractor (``RowKeyExtractor._binary_row_hash_code``
and ``_bucket_from_hash`` in pypaimon/write/row_key_extractor.py) and pasted here.
Bucket columns are for bucket counts 1, 2, 4 and 7.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.format import binary_row
from shoal.format import types as T
from shoal.write import bucket as B

BUCKET_COUNTS = (1, 2, 4, 7)
LONG = "the quick brown fox jumps over the lazy dog"

# type string -> Arrow type of the column, as a table of that type stores it
ARROW_TYPES = {
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "STRING": pa.string(),
    "SMALLINT": pa.int16(),
    "TINYINT": pa.int8(),
    "BOOLEAN": pa.bool_(),
    "DATE": pa.date32(),
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float32(),
    "TIMESTAMP(3)": pa.timestamp("ms"),
}

# (key type, key value, signed 32-bit hash, buckets for 1, 2, 4, 7 buckets)
SINGLE_KEYS: list[tuple[str, Any, int, tuple[int, int, int, int]]] = [
    ("INT", 0, -300363099, (0, 1, 3, 1)),
    ("INT", 1, 1465514398, (0, 0, 2, 5)),
    ("INT", -1, 1133687267, (0, 1, 3, 6)),
    ("INT", 42, 907821237, (0, 1, 1, 1)),
    ("INT", 2147483647, -1125657321, (0, 1, 1, 5)),
    ("INT", -2147483648, 916225219, (0, 1, 3, 0)),
    ("INT", 123456789, -1751827701, (0, 1, 1, 1)),
    ("INT", None, -1748325344, (0, 0, 0, 3)),
    ("BIGINT", 0, -300363099, (0, 1, 3, 1)),
    ("BIGINT", 1, 1465514398, (0, 0, 2, 5)),
    ("BIGINT", -1, -821098432, (0, 0, 0, 0)),
    ("BIGINT", 2**40, 895061894, (0, 0, 2, 6)),
    ("BIGINT", -(2**63), 302122119, (0, 1, 3, 5)),
    ("BIGINT", 2**63 - 1, -1566569095, (0, 1, 3, 0)),
    ("BIGINT", 987654321012, -885971588, (0, 0, 0, 5)),
    ("BIGINT", None, -1748325344, (0, 0, 0, 3)),
    ("STRING", "", 302122119, (0, 1, 3, 5)),
    ("STRING", "a", 943281246, (0, 0, 2, 5)),
    ("STRING", "abcdefg", -1431907323, (0, 1, 3, 0)),
    ("STRING", "abcdefgh", -843760178, (0, 0, 2, 2)),
    ("STRING", "2026-11-01", 1662768283, (0, 1, 3, 1)),
    ("STRING", LONG, -89515097, (0, 1, 1, 0)),
    ("STRING", "日本語", -476998221, (0, 1, 1, 0)),
    ("STRING", None, -1748325344, (0, 0, 0, 3)),
    ("SMALLINT", 0, -300363099, (0, 1, 3, 1)),
    ("SMALLINT", -1, 2143727727, (0, 1, 3, 1)),
    ("SMALLINT", 32767, 589084209, (0, 1, 1, 0)),
    ("SMALLINT", -32768, -141722409, (0, 1, 1, 3)),
    ("TINYINT", 0, -300363099, (0, 1, 3, 1)),
    ("TINYINT", -1, 2004758659, (0, 1, 3, 1)),
    ("TINYINT", 127, 1260004151, (0, 1, 3, 0)),
    ("TINYINT", -128, -1226381822, (0, 0, 2, 1)),
    ("BOOLEAN", True, 1465514398, (0, 0, 2, 5)),
    ("BOOLEAN", False, -300363099, (0, 1, 3, 1)),
    ("BOOLEAN", None, -1748325344, (0, 0, 0, 3)),
    ("DATE", date(1970, 1, 1), -300363099, (0, 1, 3, 1)),
    ("DATE", date(2024, 2, 29), -1849898870, (0, 0, 2, 1)),
    ("DATE", date(1900, 1, 1), 1161451657, (0, 1, 1, 2)),
    ("DOUBLE", 0.0, -300363099, (0, 1, 3, 1)),
    ("DOUBLE", 1.5, 1860889473, (0, 1, 1, 2)),
    ("DOUBLE", -2.25, -413435051, (0, 1, 3, 1)),
    ("DOUBLE", 1e100, 980366924, (0, 0, 0, 5)),
    ("FLOAT", 0.0, -300363099, (0, 1, 3, 1)),
    ("FLOAT", 1.5, -173842779, (0, 1, 3, 5)),
    ("FLOAT", -2.25, -484958031, (0, 1, 3, 5)),
    ("TIMESTAMP(3)", datetime(2024, 1, 2, 3, 4, 5, 678000), 1606355323, (0, 1, 3, 6)),
    ("TIMESTAMP(3)", datetime(1969, 12, 31, 23, 59, 59, 999000), -821098432, (0, 0, 0, 0)),
]

# (key types, key values, hash, buckets for 1, 2, 4, 7)
PAIR_KEYS: list[tuple[tuple[str, str], tuple[Any, Any], int, tuple[int, int, int, int]]] = [
    (("INT", "STRING"), (1, "a"), -948407462, (0, 0, 2, 2)),
    (("INT", "STRING"), (7, "2026-11-01"), 1550087642, (0, 0, 2, 5)),
    (("INT", "STRING"), (-5, LONG), -1415967793, (0, 1, 1, 2)),
    (("INT", "STRING"), (None, "x"), 398608515, (0, 1, 3, 4)),
    (("INT", "STRING"), (3, None), 2018665652, (0, 0, 0, 3)),
    (("BIGINT", "INT"), (1, 2), 1909828896, (0, 0, 0, 3)),
    (("BIGINT", "INT"), (-1, 0), 2123654578, (0, 0, 2, 3)),
    (("BIGINT", "INT"), (2**62, -7), 1658325485, (0, 1, 1, 5)),
    (("BIGINT", "INT"), (None, 5), 1401948696, (0, 0, 0, 1)),
]

KEY_TYPES = list(dict.fromkeys(t for t, *_ in SINGLE_KEYS))
FIXED_WIDTH_TYPES = [t for t in KEY_TYPES if t != "STRING"]


def _single(type_text: str) -> list[tuple[Any, int, tuple[int, ...]]]:
    return [(v, h, b) for t, v, h, b in SINGLE_KEYS if t == type_text]


def _column_table(type_text: str, values: list[Any]) -> pa.Table:
    return pa.table({"k": pa.array(values, ARROW_TYPES[type_text])})


# --- the hash ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_text", "value", "hash_code", "buckets"),
    SINGLE_KEYS,
    ids=[f"{t}-{v!r}" for t, v, *_ in SINGLE_KEYS],
)
def test_hash_row_single_key(
    type_text: str, value: Any, hash_code: int, buckets: tuple[int, ...]
) -> None:
    row = binary_row.encode_row([value], [T.parse_type(type_text)])
    assert B.hash_row(row) == hash_code
    assert [B.bucket_of(hash_code, n) for n in BUCKET_COUNTS] == list(buckets)


@pytest.mark.parametrize(
    ("type_texts", "values", "hash_code", "buckets"),
    PAIR_KEYS,
    ids=[f"{t[0]}-{t[1]}-{v!r}" for t, v, *_ in PAIR_KEYS],
)
def test_hash_row_two_column_key(
    type_texts: tuple[str, str], values: tuple[Any, Any], hash_code: int, buckets: tuple[int, ...]
) -> None:
    row = binary_row.encode_row(list(values), [T.parse_type(t) for t in type_texts])
    assert B.hash_row(row) == hash_code
    assert [B.bucket_of(hash_code, n) for n in BUCKET_COUNTS] == list(buckets)


def test_hash_is_a_signed_32_bit_int() -> None:
    hashes = [B.hash_row(bytes([i]) * 16) for i in range(256)]
    assert all(-(2**31) <= h < 2**31 for h in hashes)
    assert any(h < 0 for h in hashes)
    assert any(h > 0 for h in hashes)


@pytest.mark.parametrize(
    ("hash_code", "num_buckets", "bucket"),
    [
        # Java: Math.abs(hash % n), with % truncating toward zero
        (-2147483648, 1, 0),
        (-2147483648, 2, 0),
        (-2147483648, 3, 2),
        (-2147483648, 7, 2),
        (2147483647, 7, 1),
        (-7, 4, 3),
        (-8, 4, 0),
        (-1, 7, 1),
        (13, 7, 6),
        (0, 5, 0),
    ],
)
def test_bucket_of_follows_java_remainder(hash_code: int, num_buckets: int, bucket: int) -> None:
    assert B.bucket_of(hash_code, num_buckets) == bucket


# --- assign_buckets ----------------------------------------------------------------------------


@pytest.mark.parametrize("type_text", KEY_TYPES)
@pytest.mark.parametrize("num_buckets", BUCKET_COUNTS)
def test_assign_buckets_single_key_golden(type_text: str, num_buckets: int) -> None:
    cases = _single(type_text)
    table = _column_table(type_text, [v for v, _, _ in cases])
    got = B.assign_buckets(table, ["k"], [T.parse_type(type_text)], num_buckets)
    assert got.dtype == np.int32
    assert got.tolist() == [b[BUCKET_COUNTS.index(num_buckets)] for _, _, b in cases]


@pytest.mark.parametrize("type_text", FIXED_WIDTH_TYPES)
def test_vectorized_path_matches_golden_hashes(type_text: str) -> None:
    cases = _single(type_text)
    table = _column_table(type_text, [v for v, _, _ in cases])
    key_type = T.parse_type(type_text)
    assert B._is_vectorizable(key_type)
    vectorized = B._vectorized_hashes(table, ["k"], [key_type])
    assert vectorized.tolist() == [h for _, h, _ in cases]


@pytest.mark.parametrize("type_text", KEY_TYPES)
def test_row_path_matches_golden_hashes(type_text: str) -> None:
    cases = _single(type_text)
    table = _column_table(type_text, [v for v, _, _ in cases])
    rows = B._row_hashes(table, ["k"], [T.parse_type(type_text)])
    assert rows.tolist() == [h for _, h, _ in cases]


@pytest.mark.parametrize("type_texts", [("INT", "STRING"), ("BIGINT", "INT")])
@pytest.mark.parametrize("num_buckets", BUCKET_COUNTS)
def test_assign_buckets_two_column_key_golden(
    type_texts: tuple[str, str], num_buckets: int
) -> None:
    cases = [(v, h, b) for t, v, h, b in PAIR_KEYS if t == type_texts]
    table = pa.table(
        {
            "a": pa.array([v[0] for v, _, _ in cases], ARROW_TYPES[type_texts[0]]),
            "extra": pa.array(range(len(cases)), pa.int64()),  # not part of the key
            "b": pa.array([v[1] for v, _, _ in cases], ARROW_TYPES[type_texts[1]]),
        }
    )
    key_types = [T.parse_type(t) for t in type_texts]
    got = B.assign_buckets(table, ["a", "b"], key_types, num_buckets)
    assert got.tolist() == [b[BUCKET_COUNTS.index(num_buckets)] for _, _, b in cases]
    expected_hashes = [h for _, h, _ in cases]
    assert B._row_hashes(table, ["a", "b"], key_types).tolist() == expected_hashes
    if all(B._is_vectorizable(t) for t in key_types):
        assert B._vectorized_hashes(table, ["a", "b"], key_types).tolist() == expected_hashes


def test_key_columns_are_taken_by_name_in_key_order() -> None:
    cases = [(v, h) for t, v, h, _ in PAIR_KEYS if t == ("BIGINT", "INT")]
    table = pa.table(
        {
            "i": pa.array([v[1] for v, _ in cases], pa.int32()),
            "l": pa.array([v[0] for v, _ in cases], pa.int64()),
        }
    )
    key_types = [T.parse_type("BIGINT"), T.parse_type("INT")]
    expected = [abs(h) % 7 for _, h in cases]
    assert B.assign_buckets(table, ["l", "i"], key_types, 7).tolist() == expected


@pytest.mark.parametrize("type_text", KEY_TYPES)
def test_chunked_columns_give_the_same_buckets(type_text: str) -> None:
    cases = _single(type_text)
    values = [v for v, _, _ in cases]
    pieces = [_column_table(type_text, values[i : i + 1]) for i in range(len(values))]
    chunked = pa.concat_tables(pieces)
    assert chunked.column("k").num_chunks > 1
    key_type = T.parse_type(type_text)
    got = B.assign_buckets(chunked, ["k"], [key_type], 7)
    assert got.tolist() == [b[3] for _, _, b in cases]


@pytest.mark.parametrize("type_text", ["INT", "STRING"])
def test_empty_table(type_text: str) -> None:
    got = B.assign_buckets(_column_table(type_text, []), ["k"], [T.parse_type(type_text)], 4)
    assert got.dtype == np.int32
    assert got.shape == (0,)


def test_one_bucket_puts_everything_in_bucket_0() -> None:
    table = _column_table("BIGINT", list(range(-500, 500)))
    assert not B.assign_buckets(table, ["k"], [T.parse_type("BIGINT")], 1).any()


def test_sub_millisecond_timestamps_before_epoch_agree_across_paths() -> None:
    key_type = T.parse_type("TIMESTAMP(3)")
    table = pa.table(
        {"k": pa.array([datetime(1969, 12, 31, 23, 59, 59, 999500)], pa.timestamp("us"))}
    )
    # floor(-0.5 ms) = -1 ms, the same key as 23:59:59.999 (hash -821098432 above)
    assert B._row_hashes(table, ["k"], [key_type]).tolist() == [-821098432]
    assert B._vectorized_hashes(table, ["k"], [key_type]).tolist() == [-821098432]


# --- the two paths agree -----------------------------------------------------------------------

_FIXED_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "TINYINT": st.integers(-(2**7), 2**7 - 1),
    "SMALLINT": st.integers(-(2**15), 2**15 - 1),
    "INT": st.integers(-(2**31), 2**31 - 1),
    "BIGINT": st.integers(-(2**63), 2**63 - 1),
    "BOOLEAN": st.booleans(),
    "DATE": st.dates(),
    "DOUBLE": st.floats(allow_nan=False),
    "FLOAT": st.floats(width=32, allow_nan=False),
    "TIMESTAMP(3)": st.datetimes().map(
        lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
    ),
}


@st.composite
def fixed_width_keys(draw: st.DrawFn) -> tuple[list[str], list[list[Any]]]:
    type_texts = draw(st.lists(st.sampled_from(sorted(_FIXED_STRATEGIES)), min_size=1, max_size=4))
    n = draw(st.integers(1, 30))
    columns = [
        draw(st.lists(st.none() | _FIXED_STRATEGIES[t], min_size=n, max_size=n)) for t in type_texts
    ]
    return type_texts, columns


@settings(max_examples=150, deadline=None)
@given(fixed_width_keys(), st.integers(1, 64))
def test_vectorized_and_row_paths_agree(
    keys: tuple[list[str], list[list[Any]]], num_buckets: int
) -> None:
    type_texts, columns = keys
    names = [f"c{i}" for i in range(len(columns))]
    table = pa.table(
        {
            name: pa.array(values, ARROW_TYPES[t])
            for name, t, values in zip(names, type_texts, columns, strict=True)
        }
    )
    key_types = [T.parse_type(t) for t in type_texts]
    vectorized = B._vectorized_hashes(table, names, key_types)
    rows = B._row_hashes(table, names, key_types)
    assert vectorized.tolist() == rows.tolist()
    expected = [
        B.bucket_of(B.hash_row(binary_row.encode_row(list(row), key_types)), num_buckets)
        for row in zip(*columns, strict=True)
    ]
    assert B.assign_buckets(table, names, key_types, num_buckets).tolist() == expected
