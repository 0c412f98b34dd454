"""The clock of cleanup: the age thresholds it compares files and snapshots with."""

from __future__ import annotations

from datetime import datetime


def epoch_millis(time: datetime) -> int:
    """Epoch milliseconds of ``time``; a naive datetime means local time."""
    return int(time.timestamp() * 1000)
