"""The values of table options: Paimon's duration and memory-size syntax, Java's
integer ranges, and :class:`Option`, one option's key, parser, default and check."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Generic, TypeVar

from shoal.errors import InvalidOptionError

V = TypeVar("V")

_DURATION_UNITS: dict[str, float] = {
    "ns": 1e-9,
    "nano": 1e-9,
    "nanos": 1e-9,
    "nanosecond": 1e-9,
    "nanoseconds": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "micro": 1e-6,
    "micros": 1e-6,
    "microsecond": 1e-6,
    "microseconds": 1e-6,
    "ms": 1e-3,
    "milli": 1e-3,
    "millis": 1e-3,
    "millisecond": 1e-3,
    "milliseconds": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "m": 60.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
}
_MEMORY_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kibibytes": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mebibytes": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gibibytes": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tebibytes": 1 << 40,
}
_AMOUNT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Zµ]*)\s*$")
_INT = re.compile(r"^\s*[+-]?[0-9]+\s*$")
_JAVA_LONG_MAX = 2**63 - 1
_MAX_DURATION_SECONDS = 10_000 * 366 * 86400.0


def parse_duration(text: str) -> timedelta:
    """Parse Paimon's duration syntax: ``1 h``, ``30 min``, ``1ms``, ``7 d``; no unit is ms."""
    match = _AMOUNT.match(text)
    if match is None:
        raise ValueError(f"not a duration: {text!r} (expected e.g. '1 h', '30 min', '7 d')")
    unit = match.group(2).lower()
    if unit not in _DURATION_UNITS and unit != "":
        raise ValueError(f"unknown duration unit {unit!r} in {text!r}")
    seconds = float(match.group(1)) * (_DURATION_UNITS[unit] if unit else 1e-3)
    if seconds > _MAX_DURATION_SECONDS:
        raise ValueError(f"duration {text!r} is longer than any table needs (over 10000 years)")
    return timedelta(seconds=seconds)


def parse_memory_size(text: str) -> int:
    """Parse Paimon's memory-size syntax: ``128 mb``, ``8MB``, ``1 gb``; no unit is bytes."""
    match = _AMOUNT.match(text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _MEMORY_UNITS:
        raise ValueError(f"not a memory size: {text!r} (expected e.g. '128 mb')")
    size = int(float(match.group(1)) * _MEMORY_UNITS[unit])
    if size > _JAVA_LONG_MAX:
        raise ValueError(f"memory size {text!r} does not fit a 64-bit integer, as Paimon keeps it")
    return size


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError("expected 'true' or 'false'")


def parse_int(text: str) -> int:
    """A Java ``int``, spelled in ASCII digits as Paimon's ``Integer.parseInt`` reads it."""
    if not _INT.match(text):
        raise ValueError(f"not an integer: {text!r}")
    value = int(text.strip())
    if not -(2**31) <= value < 2**31:
        raise ValueError(f"{value} does not fit a 32-bit integer, as Paimon keeps it")
    return value


def parse_long(text: str) -> int:
    """A Java ``long``, spelled in ASCII digits."""
    if not _INT.match(text):
        raise ValueError(f"not an integer: {text!r}")
    value = int(text.strip())
    if not -_JAVA_LONG_MAX - 1 <= value <= _JAVA_LONG_MAX:
        raise ValueError(f"{value} does not fit a 64-bit integer, as Paimon keeps it")
    return value


def parse_str(text: str) -> str:
    return text


@dataclass(frozen=True, slots=True)
class Option(Generic[V]):
    """One table option: its key, how to parse it, its default and what it does."""

    key: str
    parse: Callable[[str], V]
    default: V
    doc: str
    check: Callable[[V], str | None] | None = None

    def get(self, raw: Mapping[str, str]) -> V:
        """The typed value of this option in ``raw``, or its default."""
        text = raw.get(self.key)
        if text is None:
            return self.default
        try:
            value = self.parse(text)
        except (ValueError, TypeError, OverflowError) as exc:
            raise InvalidOptionError(self.key, text, str(exc)) from None
        problem = self.check(value) if self.check is not None else None
        if problem is not None:
            raise InvalidOptionError(self.key, text, problem)
        return value


def at_least(minimum: int) -> Callable[[int], str | None]:
    return lambda v: None if v >= minimum else f"must be at least {minimum}"


def bucket_check(value: int) -> str | None:
    return None if value == -1 or value >= 1 else "must be -1 (unaware) or a positive count"


def one_of(*allowed: str) -> Callable[[str], str | None]:
    return lambda v: None if v in allowed else f"must be one of {', '.join(allowed)}"
