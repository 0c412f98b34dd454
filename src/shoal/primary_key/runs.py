"""What a compaction strategy sees and decides: sorted runs in, a unit of work out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from shoal.format.data_file import DataFileMeta
from shoal.primary_key.levels import SortedRun, sorted_runs

__all__ = ["CompactStrategy", "CompactUnit", "EventTimeSplit", "SortedRun", "sorted_runs"]


@dataclass(frozen=True, slots=True)
class EventTimeSplit:
    """Route merged rows by event time: those strictly below ``threshold_ms`` (or with
    no event time) to the output level, the rest back to level 0."""

    field: str
    threshold_ms: int


@dataclass(frozen=True, slots=True)
class CompactUnit:
    """Files to merge and the level they go to; the bucket's other files stay live,
    untouched. Every row keeps its sequence number, so any selection is correct."""

    output_level: int
    files: tuple[DataFileMeta, ...]
    split: EventTimeSplit | None = None


class CompactStrategy(Protocol):
    """Full, universal and event-time compaction: given a bucket's files (as sorted
    runs), the files to merge now; the others are kept."""

    def pick(self, runs: Sequence[SortedRun], max_level: int) -> CompactUnit | None:
        """The files of one bucket to merge now, or None to leave the bucket alone.

        ``runs`` come newest first: level-0 runs by descending max sequence number,
        then one run per non-empty level, ascending.
        """
        ...
