"""What a compaction strategy sees and decides: sorted runs in, a unit of work out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from shoal.spec.data_file import DataFileMeta
from shoal.table.levels import SortedRun, sorted_runs

__all__ = ["CompactStrategy", "CompactUnit", "SortedRun", "sorted_runs"]


@dataclass(frozen=True, slots=True)
class CompactUnit:
    """Files to merge (all files of the picked runs) and the level they go to."""

    output_level: int
    files: tuple[DataFileMeta, ...]


class CompactStrategy(Protocol):
    def pick(self, runs: Sequence[SortedRun], max_level: int) -> CompactUnit | None:
        """The runs of one bucket to merge now, or None to leave the bucket alone.

        ``runs`` come newest first: level-0 runs by descending max sequence number,
        then one run per non-empty level, ascending.
        """
        ...
