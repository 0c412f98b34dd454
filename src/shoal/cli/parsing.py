"""Parsing of command-line values: column lists, ``key=value`` options, times,
durations, filters and the small DDL of ``shoal table create``.

Each parser raises :class:`click.BadParameter`, so a bad value is a usage error
(exit code 2) that names the option it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

import click
import pyarrow as pa

from shoal.core import filter_text
from shoal.errors import InvalidFilterError
from shoal.format import types as T
from shoal.options import parse_duration


def split_names(values: Iterable[str]) -> list[str]:
    """Names given as repeated options and/or comma-separated: ``-k a,b -k c``."""
    names = [n.strip() for value in values for n in value.split(",")]
    return [n for n in names if n]


def parse_options(values: Iterable[str]) -> dict[str, str]:
    """``key=value`` pairs (repeatable ``--option``) as a dict; the last one wins."""
    options: dict[str, str] = {}
    for value in values:
        key, eq, raw = value.partition("=")
        if not eq or not key.strip():
            raise click.BadParameter(f"expected key=value, got {value!r}", param_hint="--option")
        options[key.strip()] = raw.strip()
    return options


_COMMA = re.compile(",")
_COLUMN = re.compile(
    r'^\s*(?:"(?P<quoted>[^"]+)"|`(?P<tick>[^`]+)`|(?P<name>[^\s"`]+))\s+(?P<type>.+)$'
)


def parse_schema(ddl: str) -> pa.Schema:
    """A pyarrow schema from ``"id bigint not null, ts timestamp(3), amount decimal(10, 2)"``.

    Types are Paimon's SQL types (``BOOLEAN``, ``TINYINT``, ``SMALLINT``, ``INT``,
    ``BIGINT``, ``FLOAT``, ``DOUBLE``, ``DECIMAL(p, s)``, ``STRING``, ``VARCHAR(n)``,
    ``BYTES``, ``DATE``, ``TIME``, ``TIMESTAMP(p)``, ``TIMESTAMP_LTZ(p)``), any case,
    optionally ``NOT NULL``.
    """
    fields: list[pa.Field] = []
    for part in filter_text.split_top_level(ddl, _COMMA):
        match = _COLUMN.match(part)
        if match is None:
            raise click.BadParameter(f"expected 'name type', got {part!r}", param_hint="--schema")
        name = match.group("quoted") or match.group("tick") or match.group("name")
        try:
            data_type = T.parse_type(match.group("type").strip())
        except ValueError as exc:
            raise click.BadParameter(f"column {name!r}: {exc}", param_hint="--schema") from None
        fields.append(pa.field(name, T.to_arrow(data_type), data_type.nullable))
    if not fields:
        raise click.BadParameter("the schema names no column", param_hint="--schema")
    return pa.schema(fields)


def parse_duration_option(text: str, hint: str) -> timedelta:
    """A Paimon duration (``30 min``, ``1 h``, ``7 d``)."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


def parse_time(text: str, hint: str, *, now: datetime | None = None) -> datetime:
    """An ISO 8601 time (``2026-11-01T12:00``, ``2026-11-01 12:00:00+02:00``), ``now``,
    or a duration meaning that long ago (``2 h``)."""
    value = text.strip()
    if value.lower() == "now":
        return now or datetime.now()
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        pass
    try:
        return (now or datetime.now()) - parse_duration(value)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is neither an ISO 8601 time (2026-11-01T12:00), 'now', nor a "
            "duration such as '2 h'",
            param_hint=hint,
        ) from None


def parse_event_time(text: str, hint: str) -> datetime | int:
    """An event-time threshold: epoch milliseconds (digits) or an ISO 8601 time
    (naive means UTC, as event times are compared)."""
    value = text.strip()
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is neither an ISO 8601 time nor epoch milliseconds", param_hint=hint
        ) from None


# --- filters ----------------------------------------------------------------------------------
def parse_filter(
    values: Sequence[str], schema: pa.Schema
) -> list[list[tuple[str, str, Any]]] | None:
    """``--filter`` texts (repeatable; all must hold) in the grammar of
    :mod:`shoal.core.filter_text`, as the DNF that ``Table.scan`` takes."""
    if not values:
        return None
    try:
        return filter_text.parse(" and ".join(f"({v})" for v in values), schema)
    except InvalidFilterError as exc:
        raise click.BadParameter(str(exc), param_hint="--filter") from None


__all__ = [
    "parse_duration_option",
    "parse_event_time",
    "parse_filter",
    "parse_options",
    "parse_schema",
    "parse_time",
    "split_names",
]
