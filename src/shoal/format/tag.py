"""Tag files: ``tag/tag-<name>``, a copy of the tagged snapshot's JSON.

A tag with a retention adds ``tagCreateTime`` (a Java ``LocalDateTime`` as an array,
``[year, month, day, hour, minute(, second(, nano))]`` with trailing zeros left out)
and ``tagTimeRetained`` (a ``Duration`` as decimal seconds, ``5.000000000``); a tag
without one is the plain snapshot JSON, readable by every Paimon version.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from shoal.errors import CorruptMetadataError, InvalidTagNameError
from shoal.format import jsonfmt
from shoal.format.jsonfmt import load_json_object
from shoal.format.snapshot import Snapshot

_DIGITS = re.compile(r"^\d+$")
# A tag file is ``tag-<name>``, and is created through a hidden temporary file
# ``.tag-<name>.<32 hex digits>.tmp``: names of up to this many UTF-8 bytes keep both
# within the 255 bytes a file name may have on common filesystems.
MAX_TAG_NAME_BYTES = 200
_FILE_NAME_BYTES = 255 - len("tag-")


def check_tag_path(name: str) -> None:
    """Raise InvalidTagNameError for a name that is blank, would leave the tag folder,
    or cannot be a file name (the rule for reading tags, whoever created them)."""
    if not isinstance(name, str):
        raise InvalidTagNameError(repr(name), "a tag name must be a string")
    if not name.strip():
        raise InvalidTagNameError(name, "a tag name must not be blank")
    if "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
        raise InvalidTagNameError(name, "a tag name must not contain '/', '\\' or be '..'")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidTagNameError(name, "a tag name must be valid Unicode text") from None
    if size > _FILE_NAME_BYTES:
        raise InvalidTagNameError(
            name, f"{size} bytes in UTF-8 is too long for a file name ({_FILE_NAME_BYTES} at most)"
        )


def validate_tag_name(name: str) -> None:
    """The rule for names users give: no blank or path-like names, and no all-digit
    ones (a version string would be ambiguous between a tag and a snapshot id).
    Automatic tags may be all digits (``2026110113``), as Paimon names them.
    Names are also kept free of control characters and of leading or trailing
    whitespace, which make tags that listings show but nobody can type."""
    check_tag_path(name)
    if _DIGITS.match(name):
        raise InvalidTagNameError(name, "an all-digit name reads as a snapshot id")
    if name != name.strip():
        raise InvalidTagNameError(name, "a tag name must not begin or end with whitespace")
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise InvalidTagNameError(name, "a tag name must not contain control characters")
    if len(name.encode("utf-8")) > MAX_TAG_NAME_BYTES:
        raise InvalidTagNameError(
            name, f"a tag name must not be longer than {MAX_TAG_NAME_BYTES} bytes in UTF-8"
        )


@dataclass(frozen=True, slots=True)
class Tag:
    """A named savepoint of one snapshot."""

    name: str
    snapshot_id: int
    create_time: datetime | None = None
    time_retained: timedelta | None = None


def local_date_time_json(value: datetime) -> list[int]:
    nanos = value.microsecond * 1000
    out = [value.year, value.month, value.day, value.hour, value.minute]
    if value.second or nanos:
        out.append(value.second)
        if nanos:
            out.append(nanos)
    return out


def parse_local_date_time(value: Any) -> datetime:
    """A Java ``LocalDateTime`` as Jackson writes it. Raises ValueError or TypeError."""
    if not isinstance(value, list) or not 5 <= len(value) <= 7:
        raise ValueError(f"not [year, month, day, hour, minute(, second(, nano))]: {value!r}")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"not a list of integers: {value!r}")
    year, month, day, hour, minute, second, nanos = [*value, 0, 0][:7]
    if not 0 <= nanos < 1_000_000_000:
        raise ValueError(f"nano of second {nanos} is out of range")
    return datetime(year, month, day, hour, minute, second, nanos // 1000)


def parse_duration_seconds(value: Any) -> timedelta:
    """A Java ``Duration`` as Jackson writes it (decimal seconds). Raises ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a number of seconds: {value!r}")
    seconds = float(value)
    if not 0 <= seconds < float("inf"):  # also refuses NaN
        raise ValueError(f"not a non-negative number of seconds: {value!r}")
    return timedelta(seconds=seconds)


def duration_json(value: timedelta) -> jsonfmt.RawNumber:
    """Decimal seconds with nine fraction digits, as Jackson writes a Duration."""
    if value < timedelta(0):
        raise ValueError("a tag retention cannot be negative")
    total_micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    seconds, micros = divmod(total_micros, 1_000_000)
    return jsonfmt.RawNumber(f"{seconds}.{micros * 1000:09d}")


def encode_tag(
    snapshot: Snapshot, create_time: datetime | None, time_retained: timedelta | None
) -> str:
    data = snapshot.to_json_dict()
    if time_retained is not None:
        data["tagCreateTime"] = local_date_time_json(create_time or datetime.now())
        data["tagTimeRetained"] = duration_json(time_retained)
    return jsonfmt.dumps(data)


def decode_tag(name: str, text: str | bytes, path: str) -> tuple[Tag, Snapshot]:
    """The tag and its snapshot from a tag file."""
    data = load_json_object(text, path)
    snapshot = Snapshot.from_json_dict(data, path)
    try:
        created = data.get("tagCreateTime")
        retained = data.get("tagTimeRetained")
        tag = Tag(
            name=name,
            snapshot_id=snapshot.id,
            create_time=parse_local_date_time(created) if created is not None else None,
            time_retained=parse_duration_seconds(retained) if retained is not None else None,
        )
    except (TypeError, ValueError, OverflowError) as exc:
        raise CorruptMetadataError(path, f"bad tag retention fields ({exc})") from None
    return tag, snapshot
