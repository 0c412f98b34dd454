"""JSON in the layout Paimon's Java writer produces (Jackson's default pretty printer).

Readers only need valid JSON, but writing the same bytes as Paimon keeps metadata
files diffable across engines: two-space indent, ``"key" : value``, arrays inline
as ``[ a, b ]``.
"""

from __future__ import annotations

import json
from typing import Any

from shoal.errors import CorruptMetadataError

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


class RawNumber(str):
    """A number written exactly as spelled (``5.000000000``), as Java's BigDecimal is."""

    __slots__ = ()


def dumps(value: Any) -> str:
    parts: list[str] = []
    _write(value, 0, parts)
    return "".join(parts)


def _write(value: Any, depth: int, out: list[str]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append("{ }")
            return
        pad = "  " * (depth + 1)
        out.append("{\n")
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(",\n")
            out.append(f"{pad}{json.dumps(key, ensure_ascii=False)} : ")
            _write(item, depth + 1, out)
        out.append("\n" + "  " * depth + "}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[ ]")
            return
        out.append("[ ")
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            _write(item, depth, out)
        out.append(" ]")
    elif isinstance(value, bool) or value is None:
        out.append("true" if value else "false" if value is not None else "null")
    elif isinstance(value, RawNumber | int):
        out.append(str(value))
    else:
        out.append(json.dumps(value, ensure_ascii=False))


def loads(text: str | bytes) -> Any:
    return json.loads(text)


def load_json_object(text: str | bytes, path: str) -> dict[str, Any]:
    """A metadata file's JSON object; CorruptMetadataError naming ``path`` otherwise."""
    try:
        data = loads(text)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise CorruptMetadataError(path, f"not valid JSON ({short(exc)})") from None
    if not isinstance(data, dict):
        raise CorruptMetadataError(path, "not a JSON object")
    return data


def is_long(value: object) -> bool:
    """Whether ``value`` is an integer that fits a Java ``long`` (what Paimon writes)."""
    return isinstance(value, int) and not isinstance(value, bool) and LONG_MIN <= value <= LONG_MAX


def short(value: object) -> str:
    """A value (or an exception's message) for an error message, cut to a sane length."""
    text = str(value) if isinstance(value, BaseException) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
