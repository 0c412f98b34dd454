"""Column type changes: Paimon's acceptance rules and shoal's exact conversions."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa
import pytest

from shoal.errors import UnsupportedFeatureError
from shoal.format import casts
from shoal.format import types as T


def t(text: str) -> T.AtomicType:
    parsed = T.parse_type(text)
    assert isinstance(parsed, T.AtomicType)
    return parsed


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("INT", "BIGINT"),
        ("BIGINT", "INT"),
        ("FLOAT", "DOUBLE"),
        ("INT", "STRING"),
        ("STRING", "INT"),
        ("DECIMAL(5, 2)", "DECIMAL(10, 2)"),
        ("DECIMAL(10, 2)", "DECIMAL(5, 2)"),
        ("INT", "DECIMAL(12, 2)"),
        ("DATE", "TIMESTAMP(6)"),
        ("TIMESTAMP(3)", "TIMESTAMP(6)"),
        ("TIMESTAMP(6)", "DATE"),
        ("BOOLEAN", "INT"),
        ("INT", "BOOLEAN"),
        ("VARCHAR(5)", "VARCHAR(10)"),
        ("BYTES", "STRING"),
        ("DATE", "STRING"),
        ("INT NOT NULL", "BIGINT"),
    ],
)
def test_paimon_accepts(old: str, new: str) -> None:
    assert casts.can_cast(t(old), t(new))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("DATE", "INT"),
        ("DATE", "DATE"),  # no cast executor converts a date to a date
        ("BOOLEAN", "BOOLEAN"),
        ("BOOLEAN", "DATE"),
        ("INT", "DATE"),
        ("STRING", "ARRAY<INT>"),
        ("TIME", "INT"),
        ("DOUBLE", "BOOLEAN"),
        ("BYTES", "INT"),
    ],
)
def test_paimon_refuses(old: str, new: str) -> None:
    new_type = T.parse_type({"type": "ARRAY", "element": "INT"}) if new == "ARRAY<INT>" else t(new)
    assert not casts.can_cast(t(old), new_type)


def test_nested_types_are_not_retyped_whole() -> None:
    row = T.RowType((T.DataField(1, "a", t("INT")),))
    assert not casts.can_cast(row, row)


@pytest.mark.parametrize(
    ("old", "new", "values", "expected"),
    [
        ("TINYINT", "BIGINT", [1, -128, None], [1, -128, None]),
        ("INT", "DOUBLE", [2**31 - 1, -3], [2147483647.0, -3.0]),
        ("BIGINT", "DOUBLE", [2**62 + 1], [float(2**62)]),
        ("FLOAT", "DOUBLE", [1.5], [1.5]),
        ("INT", "STRING", [-12, 7], ["-12", "7"]),
        ("BOOLEAN", "STRING", [True, False], ["true", "false"]),
        ("BOOLEAN", "INT", [True, False], [1, 0]),
        ("DECIMAL(5, 2)", "DECIMAL(10, 4)", [Decimal("123.45")], [Decimal("123.4500")]),
        ("INT", "DECIMAL(12, 2)", [-2147483648], [Decimal("-2147483648.00")]),
        ("VARCHAR(3)", "STRING", ["abc"], ["abc"]),
        (
            "DATE",
            "TIMESTAMP(6)",
            [datetime.date(1960, 1, 2)],
            [datetime.datetime(1960, 1, 2)],
        ),
        (
            "TIMESTAMP(3)",
            "TIMESTAMP(6)",
            [datetime.datetime(2024, 1, 2, 3, 4, 5, 6000)],
            [datetime.datetime(2024, 1, 2, 3, 4, 5, 6000)],
        ),
    ],
)
def test_exact_conversions(old: str, new: str, values: list, expected: list) -> None:
    old_type, new_type = t(old), t(new)
    assert casts.reads_exactly(old_type, new_type)
    array = pa.array(values, T.to_arrow(old_type))
    out = casts.cast_array(array, old_type, new_type)
    assert out.type == T.to_arrow(new_type)
    assert out.to_pylist() == expected


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("BIGINT", "INT"),
        ("DOUBLE", "FLOAT"),
        ("DOUBLE", "INT"),
        ("STRING", "INT"),
        ("DECIMAL(10, 2)", "DECIMAL(5, 2)"),
        ("DECIMAL(10, 4)", "DECIMAL(10, 2)"),
        ("BIGINT", "DECIMAL(12, 2)"),
        ("DOUBLE", "DECIMAL(12, 2)"),
        ("DOUBLE", "STRING"),
        ("BIGINT", "VARCHAR(10)"),
        ("STRING", "VARCHAR(10)"),
        ("VARCHAR(5)", "CHAR(10)"),
        ("TIMESTAMP(6)", "TIMESTAMP(3)"),
        ("TIMESTAMP(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
        ("DATE", "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
        ("TIMESTAMP(6)", "DATE"),
    ],
)
def test_changes_shoal_refuses_to_read(old: str, new: str) -> None:
    assert not casts.reads_exactly(t(old), t(new))
    with pytest.raises(UnsupportedFeatureError, match="changed type"):
        casts.require_readable(t(old), t(new), "c")


def test_statistics_convert_only_when_exact() -> None:
    assert casts.exact_stat(5, t("INT"), t("BIGINT")) == (True, 5)
    assert casts.exact_stat(5, t("INT"), t("DOUBLE")) == (True, 5.0)
    assert casts.exact_stat(5, t("BIGINT"), t("DOUBLE")) == (False, None)
    assert casts.exact_stat(5, t("INT"), t("STRING")) == (False, None)
    assert casts.exact_stat(Decimal("1.5"), t("DECIMAL(3, 1)"), t("DECIMAL(6, 2)")) == (
        True,
        Decimal("1.5"),
    )
    day = datetime.date(2024, 5, 6)
    assert casts.exact_stat(day, t("DATE"), t("TIMESTAMP(3)")) == (
        True,
        datetime.datetime(2024, 5, 6),
    )
    assert casts.exact_stat(None, t("INT"), t("STRING")) == (True, None)


def test_order_is_kept_by_widening_only() -> None:
    assert casts.keeps_order(t("INT"), t("BIGINT"))
    assert casts.keeps_order(t("DATE"), t("TIMESTAMP(3)"))
    assert casts.keeps_order(t("VARCHAR(3)"), t("STRING"))
    assert not casts.keeps_order(t("INT"), t("STRING"))
    assert not casts.keeps_order(t("BOOLEAN"), t("INT"))
    assert not casts.keeps_order(t("BIGINT"), t("DOUBLE"))
