"""Filters written as text: ``"dt = '2026-11-01' and id > 10"``.

A condition is ``column op value`` (ops ``=``, ``==``, ``!=``, ``<>``, ``<``, ``<=``,
``>``, ``>=``), ``column in (a, b)``, ``column not in (a, b)``, ``column is null`` or
``column is not null``; conditions join with ``and``, and groups of them with ``or``
(``and`` binds tighter, as in SQL). Values are typed by the column: quotes are
optional around strings, dates and times are ISO 8601. The result is the DNF that
:func:`shoal.core.predicate.parse_filter` takes.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pyarrow as pa

from shoal.errors import InvalidFilterError

Condition = tuple[str, str, Any]

_CONDITION = re.compile(
    r"^\s*(?P<column>[A-Za-z_][\w]*|`[^`]+`)\s*"
    r"(?:(?P<null>is\s+(?:not\s+)?null)|(?P<op>not\s+in|in|!=|<>|<=|>=|==|=|<|>)\s*(?P<value>.*))\s*$",
    re.IGNORECASE | re.DOTALL,
)
_AND = re.compile(r"\s+and\s+", re.IGNORECASE)
_OR = re.compile(r"\s+or\s+", re.IGNORECASE)
_COMMA = re.compile(",")


def parse(text: str, schema: pa.Schema) -> list[list[Condition]]:
    """``text`` as OR-ed groups of AND-ed conditions over ``schema``'s columns.

    Raises:
        InvalidFilterError: text that is not such a filter, an unknown column, or a
            value that is not one of the column's type.
    """
    groups = [split_top_level(group, _AND) for group in split_top_level(text, _OR)]
    if not groups or not all(groups):
        raise InvalidFilterError(f"the filter {text!r} holds no condition")
    return [[condition(c, schema) for c in group] for group in groups]


def conjunction(texts: list[str], schema: pa.Schema) -> list[Condition]:
    """Conditions that must all hold: each text one or more joined with ``and``."""
    return [condition(c, schema) for text in texts for c in split_top_level(text, _AND)]


def condition(text: str, schema: pa.Schema) -> Condition:
    """One condition as a ``(column, op, value)`` tuple. Raises InvalidFilterError."""
    match = _CONDITION.match(text)
    if match is None:
        raise InvalidFilterError(
            f'cannot read the condition {text.strip()!r}; write e.g. "id > 10", '
            '"dt = \'2026-11-01\'", "status in (paid, shipped)" or "note is null"'
        )
    column = match.group("column").strip("`")
    if column not in schema.names:
        raise InvalidFilterError(f"unknown column {column!r}; the table has {schema.names}")
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
            raise InvalidFilterError(f"'{op}' takes a list in parentheses: {column} {op} (a, b)")
        items = [_literal(v, data_type, column) for v in split_top_level(inner[1:-1], _COMMA)]
        return (column, op, items)
    return (column, op, _literal(value, data_type, column))


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
        raise InvalidFilterError(
            f"{text.strip()!r} is not a value of column {column!r} ({data_type}): {exc}"
        ) from None


def split_top_level(text: str, separator: re.Pattern[str]) -> list[str]:
    """Split on ``separator`` outside quotes and parentheses:
    ``a decimal(10, 2), b int``; ``x = 'a and b' and y = 1``."""
    outside = _outside(text)
    parts: list[str] = []
    start = 0
    for match in separator.finditer(text):
        if match.start() >= start and outside[match.start()] and outside[match.end() - 1]:
            parts.append(text[start : match.start()])
            start = match.end()
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


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
