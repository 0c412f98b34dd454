"""A partition's time, read from its values (no I/O).

Partition expiration by values (``partition.expiration-strategy`` = ``values-time``)
and the refusal to write into an expired partition both need the moment a partition
stands for. Two table options, shared with Paimon, say how to find it:

- ``partition.timestamp-pattern`` joins partition values into one text, each ``$key``
  standing for that key's value (``$dt $hour:00:00``). Empty: the first partition
  value alone.
- ``partition.timestamp-formatter`` is a Java ``DateTimeFormatter`` pattern that
  parses the text (``yyyyMMdd``, ``yyyy-MM-dd HH:mm:ss``). Empty: Paimon's lenient
  default, ``yyyy-M-d`` optionally followed by `` H:m:s`` and a fraction.

A format without a time of day gives midnight. A value that is already a date or a
timestamp (DATE and TIMESTAMP partition columns) is used as it is, whatever the
formatter says. Null values, and texts that do not parse, give no time at all: such
partitions are never expired.

Times are naive local times, as the writers' clocks and the partition values read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from shoal import options as O
from shoal.core.partition import PartitionCodec
from shoal.errors import InvalidOptionError, PartitionExpiredError
from shoal.options import Options

VALUES_TIME = "values-time"
UPDATE_TIME = "update-time"

# Java pattern letters shoal parses, with the field each one fills.
_FIELDS = {
    "y": "year",
    "u": "year",
    "M": "month",
    "d": "day",
    "H": "hour",
    "m": "minute",
    "s": "second",
    "S": "fraction",
}

_DEFAULT_FORMAT = re.compile(
    r"(?P<year>\d{1,10})-(?P<month>\d{1,2})-(?P<day>\d{1,2})"
    r"(?: (?P<hour>\d{1,2}):(?P<minute>\d{1,2}):(?P<second>\d{1,2})(?:\.(?P<fraction>\d{1,9}))?)?"
)


def local_naive(moment: datetime) -> datetime:
    """``moment`` as a naive local time (an aware value is converted; a naive one is
    taken to be local already)."""
    return moment.astimezone().replace(tzinfo=None) if moment.tzinfo is not None else moment


@dataclass(frozen=True, slots=True)
class TimeFormat:
    """A compiled formatter: a regular expression with one named group per field.

    ``lenient`` resolves out-of-range fields by carrying over (month 13 is January of
    the next year), as Paimon's default parser does; otherwise they do not parse.
    """

    regex: re.Pattern[str]
    lenient: bool

    def parse(self, text: str) -> datetime | None:
        match = self.regex.fullmatch(text)
        if match is None:
            return None
        groups = {k: v for k, v in match.groupdict().items() if v is not None}
        fields = {k: int(v) for k, v in groups.items() if k != "fraction"}
        if "year2" in fields:
            fields["year"] = 2000 + fields.pop("year2")
        fields["microsecond"] = int((groups.get("fraction", "") + "000000")[:6])
        try:
            return _carry_over(fields) if self.lenient else _exact(fields)
        except (ValueError, OverflowError):
            return None


def _exact(fields: dict[str, int]) -> datetime:
    """The time the fields name, each in its range (absent time fields are zero)."""
    return datetime(
        fields["year"],
        fields["month"],
        fields["day"],
        fields.get("hour", 0),
        fields.get("minute", 0),
        fields.get("second", 0),
        fields["microsecond"],
    )


def _carry_over(fields: dict[str, int]) -> datetime:
    """The time the fields name, carrying what exceeds a field's range into the next
    larger one (Java's lenient resolver)."""
    months = fields["year"] * 12 + fields["month"] - 1
    first = datetime(months // 12, months % 12 + 1, 1)
    return first + timedelta(
        days=fields["day"] - 1,
        hours=fields.get("hour", 0),
        minutes=fields.get("minute", 0),
        seconds=fields.get("second", 0),
        microseconds=fields["microsecond"],
    )


DEFAULT_FORMAT = TimeFormat(_DEFAULT_FORMAT, lenient=True)


def compile_formatter(pattern: str) -> TimeFormat:
    """A parser for a Java ``DateTimeFormatter`` pattern; empty: Paimon's default.

    Understood: ``y``/``u`` (year; two letters mean 20xx), ``M``, ``d``, ``H``, ``m``,
    ``s`` (one letter: one or two digits; two letters: exactly two), ``S`` (fraction
    of a second), ``'quoted'`` literals, ``[optional]`` sections and any other
    character as itself.

    Raises:
        InvalidOptionError: a letter shoal does not parse (month names, am/pm, ...),
            unbalanced quotes or brackets, a field given twice, or no year, month and day.
    """
    if not pattern:
        return DEFAULT_FORMAT
    parts: list[str] = []
    depth = 0
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "'":
            literal, i = _quoted(pattern, i)
            parts.append(re.escape(literal))
            continue
        if char in "[]":
            depth += 1 if char == "[" else -1
            if depth < 0:
                raise _bad_formatter(pattern, "a ']' closes no '['")
            parts.append("(?:" if char == "[" else ")?")
        elif char.isascii() and char.isalpha():
            count = len(pattern) - i - len(pattern[i:].lstrip(char))
            parts.append(_field_regex(pattern, char, count))
            i += count
            continue
        else:
            parts.append(re.escape(char))
        i += 1
    if depth:
        raise _bad_formatter(pattern, "a '[' is never closed")
    try:
        regex = re.compile("".join(parts))
    except re.error:
        raise _bad_formatter(pattern, "it gives a field twice") from None
    if not _has_date(regex):
        raise _bad_formatter(pattern, "it must give the year (yyyy), month (MM) and day (dd)")
    return TimeFormat(regex, lenient=False)


def _has_date(regex: re.Pattern[str]) -> bool:
    groups = regex.groupindex
    return ("year" in groups or "year2" in groups) and "month" in groups and "day" in groups


def _quoted(pattern: str, start: int) -> tuple[str, int]:
    """The literal of a quoted section starting at ``start`` and the index after it;
    ``''`` is one quote."""
    if pattern.startswith("''", start):
        return "'", start + 2
    text = []
    i = start + 1
    while i < len(pattern):
        if pattern.startswith("''", i):
            text.append("'")
            i += 2
        elif pattern[i] == "'":
            return "".join(text), i + 1
        else:
            text.append(pattern[i])
            i += 1
    raise _bad_formatter(pattern, "a quote is never closed")


def _field_regex(pattern: str, letter: str, count: int) -> str:
    field = _FIELDS.get(letter)
    if field is None or (field not in ("year", "fraction") and count > 2) or count > 9:
        raise _bad_formatter(
            pattern,
            f"shoal parses the letters y, u, M, d, H, m, s and S (numbers only), not "
            f"{letter * count!r}; quote literal text ('T')",
        )
    if field == "year":
        return r"(?P<year2>\d{2})" if count == 2 else rf"(?P<year>\d{{{count},9}})"
    if field == "fraction":
        return rf"(?P<fraction>\d{{{count}}})"
    return rf"(?P<{field}>\d{{1,2}})" if count == 1 else rf"(?P<{field}>\d{{2}})"


def _bad_formatter(pattern: str, reason: str) -> InvalidOptionError:
    return InvalidOptionError(O.PARTITION_TIMESTAMP_FORMATTER.key, pattern, reason)


class PartitionTimeExtractor:
    """Reads the time of a partition from its values, in partition-key order.

    Raises (on construction):
        InvalidOptionError: the pattern names something that is not a partition key,
            or the formatter cannot be parsed (see :func:`compile_formatter`).
    """

    def __init__(self, keys: Sequence[str], pattern: str = "", formatter: str = "") -> None:
        if not keys:
            raise ValueError("a partition time needs partition keys")
        self._keys = tuple(keys)
        self._pattern = pattern
        self._format = compile_formatter(formatter)
        longest_first = sorted(self._keys, key=len, reverse=True)
        self._placeholder = re.compile("|".join(re.escape("$" + k) for k in longest_first))
        if re.search(r"\$\w", self._placeholder.sub("", pattern)):
            raise InvalidOptionError(
                O.PARTITION_TIMESTAMP_PATTERN.key,
                pattern,
                f"each $name must be a partition key; the partition keys are {list(keys)}",
            )
        self._index = {"$" + k: i for i, k in enumerate(self._keys)}
        self._used = {self._index[m.group()] for m in self._placeholder.finditer(pattern)}
        # The one value used as it is: no pattern, or a pattern that is just "$key".
        self._whole: int | None = 0 if not pattern else None
        if pattern and self._placeholder.fullmatch(pattern):
            self._whole = self._index[pattern]

    @staticmethod
    def of(keys: Sequence[str], options: Options) -> PartitionTimeExtractor:
        """The extractor a table's options describe."""
        return PartitionTimeExtractor(
            keys,
            options.get(O.PARTITION_TIMESTAMP_PATTERN),
            options.get(O.PARTITION_TIMESTAMP_FORMATTER),
        )

    def extract(self, values: Sequence[Any]) -> datetime | None:
        """The partition's time, or None when its values are null or do not parse."""
        if self._whole is not None:
            value = values[self._whole]
            if isinstance(value, datetime):
                return local_naive(value)
            if isinstance(value, date):
                return datetime(value.year, value.month, value.day)
            text = _text(value)
            return self._format.parse(text) if text is not None else None
        texts = [_text(v) for v in values]
        if any(texts[i] is None for i in self._used):
            return None
        text = self._placeholder.sub(lambda m: texts[self._index[m.group()]] or "", self._pattern)
        return self._format.parse(text)


def _text(value: Any) -> str | None:
    """A partition value as the text a pattern puts in its place; None for null or blank."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return local_naive(value).isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def is_expired(partition_time: datetime | None, cutoff: datetime) -> bool:
    """Whether a partition of this time is past ``cutoff`` (``now - expiration-time``);
    a partition without a time never is."""
    return partition_time is not None and partition_time < cutoff


def refuse_expired_writes(
    codec: PartitionCodec,
    options: Options,
    partitions: Iterable[bytes],
    now: datetime | None = None,
) -> None:
    """Refuse new data files in partitions that values-time expiration drops.

    Such rows would be dropped again by the next expiration run, so the write fails
    before anything is committed. Only when ``partition.expiration-time`` is set and
    the strategy is values-time; otherwise this is one option lookup and
    ``partitions`` is never read.

    Raises:
        PartitionExpiredError: naming each expired partition the write touches.
    """
    expiration = options.get(O.PARTITION_EXPIRATION_TIME)
    if expiration is None or not codec.keys:
        return
    if options.get(O.PARTITION_EXPIRATION_STRATEGY) != VALUES_TIME:
        return
    targets = list(dict.fromkeys(partitions))
    if not targets:
        return
    cutoff = local_naive(now or datetime.now()) - expiration
    extractor = PartitionTimeExtractor.of(codec.keys, options)
    expired = [
        codec.to_dict(p) for p in targets if is_expired(extractor.extract(codec.decode(p)), cutoff)
    ]
    if expired:
        raise PartitionExpiredError(expired)
