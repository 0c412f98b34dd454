"""Tag files: ``tag/tag-<name>``, a copy of the tagged snapshot's JSON.

A tag with a retention adds ``tagCreateTime`` (a Java ``LocalDateTime`` as an array,
``[year, month, day, hour, minute(, second(, nano))]`` with trailing zeros left out)
and ``tagTimeRetained`` (a ``Duration`` as decimal seconds, ``5.000000000``); a tag
without one is the plain snapshot JSON, readable by every Paimon version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from shoal.errors import CorruptMetadataError, InvalidTagNameError
from shoal.spec import jsonfmt
from shoal.spec.snapshot import Snapshot, load_json_object

_DIGITS = re.compile(r"^\d+$")


def check_tag_path(name: str) -> None:
    """Raise InvalidTagNameError for a name that is blank or would leave the tag folder."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidTagNameError(str(name), "a tag name must not be blank")
    if "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
        raise InvalidTagNameError(name, "a tag name must not contain '/', '\\' or be '..'")


def validate_tag_name(name: str) -> None:
    """The rule for names users give: no blank or path-like names, and no all-digit
    ones (a version string would be ambiguous between a tag and a snapshot id).
    Automatic tags may be all digits (``2026110113``), as Paimon names them."""
    check_tag_path(name)
    if _DIGITS.match(name):
        raise InvalidTagNameError(name, "an all-digit name reads as a snapshot id")


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
    year, month, day, hour, minute, second, nanos = [int(v) for v in value] + [0] * (7 - len(value))
    return datetime(year, month, day, hour, minute, second, nanos // 1000)


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
            time_retained=timedelta(seconds=float(retained)) if retained is not None else None,
        )
    except (TypeError, ValueError, OverflowError) as exc:
        raise CorruptMetadataError(path, f"bad tag retention fields ({exc})") from None
    return tag, snapshot
