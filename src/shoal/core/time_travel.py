"""Time travel by time: a ``datetime`` or an ISO 8601 string as epoch milliseconds.

A naive time counts as UTC, as event times do (``datetime(2026, 11, 1, 12)`` is
12:00 UTC); a time with an offset is that instant. The read is of the latest snapshot
committed at or before it, as with ``timestamp_ms`` (Paimon's ``scan.timestamp-millis``).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from shoal.errors import InvalidArgumentError


def timestamp_millis(timestamp: object, timestamp_ms: int | None) -> int | None:
    """The epoch milliseconds that ``timestamp`` names, or ``timestamp_ms``.

    Raises:
        InvalidArgumentError: both given, or a ``timestamp`` that is neither a
            ``datetime`` nor an ISO 8601 string.
    """
    if timestamp is None:
        return timestamp_ms
    if timestamp_ms is not None:
        raise InvalidArgumentError(
            "give timestamp or timestamp_ms, not both: they name the same point in time"
        )
    if isinstance(timestamp, str):
        try:
            timestamp = datetime.fromisoformat(timestamp.strip())
        except ValueError:
            raise InvalidArgumentError(
                f"timestamp {timestamp!r} is not an ISO 8601 time "
                "(e.g. '2026-11-01T12:00:00' for UTC, or with an offset '+02:00')"
            ) from None
    if not isinstance(timestamp, datetime):
        kind = "a date" if isinstance(timestamp, date) else type(timestamp).__name__
        raise InvalidArgumentError(
            f"timestamp must be a datetime or an ISO 8601 string, not {kind} ({timestamp!r}); "
            "epoch milliseconds go in timestamp_ms"
        )
    instant = timestamp.replace(tzinfo=UTC) if timestamp.tzinfo is None else timestamp
    # Whole milliseconds toward the past: a snapshot committed in the same millisecond
    # as a time with microseconds is at or before it.
    return (instant - datetime(1970, 1, 1, tzinfo=UTC)) // _MILLI


_MILLI = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
