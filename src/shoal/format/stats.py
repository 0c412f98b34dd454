"""SimpleStats: per-column min, max and null count, the min/max as BinaryRows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shoal.format import binary_row
from shoal.format import types as T
from shoal.format.avro import compiled
from shoal.format.frozen import constructor


@dataclass(frozen=True, slots=True)
class SimpleStats:
    """Statistics of some columns; ``null_counts`` may hold None for an unknown count."""

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None

    @staticmethod
    def of(
        mins: Sequence[Any],
        maxs: Sequence[Any],
        null_counts: Sequence[int | None],
        types: Sequence[T.DataType],
    ) -> SimpleStats:
        return SimpleStats(
            binary_row.serialize(mins, types),
            binary_row.serialize(maxs, types),
            tuple(null_counts),
        )

    def to_avro(self) -> dict[str, Any]:
        return {
            "_MIN_VALUES": self.min_values,
            "_MAX_VALUES": self.max_values,
            "_NULL_COUNTS": list(self.null_counts) if self.null_counts is not None else None,
        }

    @staticmethod
    def from_avro(record: dict[str, Any]) -> SimpleStats:
        counts = record.get("_NULL_COUNTS")
        return SimpleStats(
            record["_MIN_VALUES"],
            record["_MAX_VALUES"],
            tuple(counts) if counts is not None else None,
        )


EMPTY_STATS = SimpleStats(binary_row.EMPTY_ROW, binary_row.EMPTY_ROW, ())


def stats_from_avro(record: dict[str, Any]) -> SimpleStats:
    """Like ``SimpleStats.from_avro``, sharing one value for the (common) empty stats."""
    return stats_of(record["_MIN_VALUES"], record["_MAX_VALUES"], record.get("_NULL_COUNTS"))


def stats_of(low: bytes, high: bytes, counts: list[int | None] | None) -> SimpleStats:
    """The statistics of an Avro record's fields (as :func:`stats_from_avro`), the null
    counts shared with other statistics holding the same (a few tuples serve a whole
    table: planning keeps two per live file)."""
    if not counts and low == binary_row.EMPTY_ROW and high == low:
        return EMPTY_STATS if counts is not None else _EMPTY_NO_COUNTS
    if counts is None:
        return _construct(low, high, None)
    shared = tuple(counts)
    known = _COUNTS.get(shared)
    if known is None:
        if len(_COUNTS) >= _MAX_COUNTS:
            _COUNTS.clear()
        known = _COUNTS.setdefault(shared, shared)
    return _construct(low, high, known)


# Null count tuples met last, each kept once (equal tuples are interchangeable).
_COUNTS: dict[tuple[int | None, ...], tuple[int | None, ...]] = {}
_MAX_COUNTS = 4096


_construct = constructor(SimpleStats)


_EMPTY_NO_COUNTS = SimpleStats(binary_row.EMPTY_ROW, binary_row.EMPTY_ROW, None)


def avro_schema(name: str) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            {
                "name": "_NULL_COUNTS",
                "type": ["null", {"type": "array", "items": ["null", "long"]}],
                "default": None,
            },
        ],
    }


# Decoding straight into SimpleStats (see shoal.format.avro.compiled.Build).
AVRO_BUILD = compiled.Build(
    stats_of,
    [("_MIN_VALUES", None, True), ("_MAX_VALUES", None, True), ("_NULL_COUNTS", None, False)],
    avro_schema("stats"),
)
