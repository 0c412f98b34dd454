"""The positional constructor of frozen dataclasses builds what ``__init__`` builds."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import pytest

from shoal.format.data_file import DataFileMeta
from shoal.format.frozen import constructor
from shoal.format.manifest import ManifestEntry
from shoal.format.stats import EMPTY_STATS, SimpleStats


def _file() -> DataFileMeta:
    stats = SimpleStats(b"\x01", b"\x02", (0, None))
    return DataFileMeta(
        "data-1.parquet", 10, 2, b"k0", b"k1", EMPTY_STATS, stats, 1, 2, 0, 3,
        ("extra",), datetime(2026, 1, 1), 0, None, 1, ("a",), None, None, None, None,
    )  # fmt: skip


@pytest.mark.parametrize(
    "value",
    [_file(), ManifestEntry(0, b"p", 1, 2, _file()), SimpleStats(b"a", b"b", None)],
    ids=lambda v: type(v).__name__,
)
def test_same_as_init(value: object) -> None:
    fields = [getattr(value, f.name) for f in dataclasses.fields(value)]  # type: ignore[arg-type]
    built = constructor(type(value))(*fields)
    assert built == value
    assert hash(built) == hash(value)
    assert repr(built) == repr(value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, dataclasses.fields(value)[0].name, None)  # type: ignore[arg-type]


def test_every_field_needed() -> None:
    with pytest.raises(TypeError):
        constructor(SimpleStats)(b"a", b"b")


def test_refuses_classes_it_cannot_build() -> None:
    @dataclasses.dataclass(frozen=True)
    class Plain:
        x: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            pass

    with pytest.raises(TypeError, match="slotted"):
        constructor(Plain)
    with pytest.raises(TypeError, match="__post_init__"):
        constructor(Checked)
