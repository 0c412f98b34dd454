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

from shoal.options import parse_duration
from shoal.spec import types as T


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


def _outside(text: str) -> list[bool]:
    """For each character: whether it stands outside quotes and parentheses."""
    flags: list[bool] = []
    depth, quote = 0, ""
    for char in text:
        if quote:
            flags.append(False)
            if char == quote:
                quote = ""
            continue
        if char in "'\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        flags.append(depth == 0 and not quote)
    return flags


def _split_top_level(text: str, separator: re.Pattern[str] | None = None) -> list[str]:
    """Split on commas (or ``separator``) outside quotes and parentheses:
    ``a decimal(10, 2), b int``; ``x = 'a and b' and y = 1``."""
    outside = _outside(text)
    pattern = separator or re.compile(",")
    parts: list[str] = []
    start = 0
    for match in pattern.finditer(text):
        if match.start() >= start and outside[match.start()] and outside[match.end() - 1]:
            parts.append(text[start : match.start()])
            start = match.end()
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


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
    for part in _split_top_level(ddl):
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

_CONDITION = re.compile(
    r"^\s*(?P<column>[A-Za-z_][\w]*|`[^`]+`)\s*"
    r"(?:(?P<null>is\s+(?:not\s+)?null)|(?P<op>not\s+in|in|!=|<>|<=|>=|==|=|<|>)\s*(?P<value>.*))\s*$",
    re.IGNORECASE | re.DOTALL,
)
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)


def _literal(text: str, data_type: pa.DataType, column: str) -> Any:
    raw = text.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        raw = raw[1:-1]
    elif raw.lower() == "null":
        return None
    try:
        if pa.types.is_boolean(data_type):
            lowered = raw.lower()
            if lowered not in ("true", "false"):
                raise ValueError("expected true or false")
            return lowered == "true"
        if pa.types.is_timestamp(data_type):
            return pa.scalar(datetime.fromisoformat(raw)).cast(data_type).as_py()
        return pa.array([raw], pa.string()).cast(data_type).to_pylist()[0]
    except (ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise click.BadParameter(
            f"{text.strip()!r} is not a value of column {column!r} ({data_type}): {exc}",
            param_hint="--filter",
        ) from None


def _condition(text: str, schema: pa.Schema) -> tuple[str, str, Any]:
    match = _CONDITION.match(text)
    if match is None:
        raise click.BadParameter(
            f'cannot read the condition {text.strip()!r}; write e.g. "id > 10", '
            '"dt = \'2026-11-01\'", "status in (paid, shipped)" or "note is null"',
            param_hint="--filter",
        )
    column = match.group("column").strip("`")
    if column not in schema.names:
        raise click.BadParameter(
            f"unknown column {column!r}; the table has {schema.names}", param_hint="--filter"
        )
    data_type = schema.field(column).type
    if match.group("null"):
        negated = "not" in match.group("null").lower()
        return (column, "!=" if negated else "=", None)
    op = " ".join(match.group("op").lower().split())
    op = {"==": "=", "<>": "!="}.get(op, op)
    value = match.group("value")
    if op in ("in", "not in"):
        inner = value.strip()
        if not (inner.startswith("(") and inner.endswith(")")):
            raise click.BadParameter(
                f"'{op}' takes a list in parentheses: {column} {op} (a, b)",
                param_hint="--filter",
            )
        items = [_literal(v, data_type, column) for v in _split_top_level(inner[1:-1])]
        return (column, op, items)
    return (column, op, _literal(value, data_type, column))


def parse_filter(values: Sequence[str], schema: pa.Schema) -> list[tuple[str, str, Any]] | None:
    """``--filter`` conditions (repeatable, and each may join several with ``and``) as
    the DNF conjunction that ``Table.scan`` takes; values are typed by the column."""
    conditions = [c for value in values for c in _split_top_level(value, _AND)]
    if not conditions:
        return None
    return [_condition(c, schema) for c in conditions]


__all__ = [
    "parse_duration_option",
    "parse_event_time",
    "parse_filter",
    "parse_options",
    "parse_schema",
    "parse_time",
    "split_names",
]
