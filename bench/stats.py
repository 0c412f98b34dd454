"""Summaries of timings: medians, percentiles, ranges."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), linear between the closest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True, slots=True)
class CommitStats:
    """Latencies of a run of sequential commits, in seconds."""

    count: int
    median: float
    p95: float
    first_median: float
    last_median: float
    total: float
    window: int

    @staticmethod
    def of(latencies: Sequence[float], window: int = 20) -> CommitStats:
        w = min(window, len(latencies))
        return CommitStats(
            count=len(latencies),
            median=statistics.median(latencies),
            p95=percentile(latencies, 95),
            first_median=statistics.median(latencies[:w]),
            last_median=statistics.median(latencies[-w:]),
            total=sum(latencies),
            window=w,
        )


@dataclass(frozen=True, slots=True)
class Spread:
    """Repeated measurements of one operation, in seconds."""

    median: float
    low: float
    high: float
    count: int

    @staticmethod
    def of(values: Sequence[float]) -> Spread:
        return Spread(statistics.median(values), min(values), max(values), len(values))
