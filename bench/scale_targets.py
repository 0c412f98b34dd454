"""The scale workload's targets, judged from its results: shoal against Java Paimon on
the same tables, and shoal's own bounds."""

from __future__ import annotations

from dataclasses import dataclass

from bench.report import Ratio
from bench.scale import COMMIT, EXPIRE, FRESHNESS, PLAN_FILTERED, PLAN_FULL, SizeResult

MILLION = 1_000_000
HUNDRED_K = 100_000
SMALLEST = 10_000
FULL_PLAN_RATIO = 0.5  # shoal / Java, at 100k and 1M files
FULL_PLAN_PEAK_MIB = 500.0  # at 1M files
FILTERED_PLAN_RATIO = 0.66  # the ratio of the objects' planning, not to get worse
EXPIRE_RATIO = 1.24  # likewise
FRESHNESS_MS = 50.0  # at every size
COMMIT_GROWTH = 2.0  # a commit at 1M files / the same commit at 10k


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    measured: str  # the value, or why there is none
    met: bool | None  # None: not measured in this run


def ratio(size: SizeResult, op: str) -> float | None:
    """shoal's median time over Java Paimon's, when both ran and Java's took any time."""
    ours, theirs = size.ops.get(op), size.java.get(op)
    if ours is None or theirs is None or theirs.seconds.median <= 0:
        return None
    return ours.seconds.median / theirs.seconds.median


def _at(sizes: list[SizeResult], files: int) -> SizeResult | None:
    return next((s for s in sizes if s.files == files), None)


def _missing(files: int) -> str:
    return f"not measured (no table of {files:,} files in this run)"


def _ratio_target(sizes: list[SizeResult], files: int, op: str, bound: float, what: str) -> Target:
    name = f"{what} at {files:,} files: shoal / Java ≤ {bound:g}"
    size = _at(sizes, files)
    value = ratio(size, op) if size is not None else None
    if value is None:
        return Target(name, _missing(files) if size is None else "Java did not run", None)
    return Target(name, f"{value:.2f}", value <= bound)


def targets(sizes: list[SizeResult]) -> list[Target]:
    """Every scale target, met or not, or not measured where this run has no
    table of the size it names."""
    out = [_ratio_target(sizes, MILLION, PLAN_FULL, FULL_PLAN_RATIO, "full plan")]
    name = f"full plan at {MILLION:,} files: shoal's peak ≤ {FULL_PLAN_PEAK_MIB:g} MiB"
    largest = _at(sizes, MILLION)
    if largest is None:
        out.append(Target(name, _missing(MILLION), None))
    else:
        peak = largest.ops[PLAN_FULL].peak_mib
        out.append(Target(name, f"{peak:,.0f} MiB", peak <= FULL_PLAN_PEAK_MIB))
    out.append(_ratio_target(sizes, HUNDRED_K, PLAN_FULL, FULL_PLAN_RATIO, "full plan"))
    out.append(
        _ratio_target(sizes, MILLION, PLAN_FILTERED, FILTERED_PLAN_RATIO, "one-partition plan")
    )
    out.append(_ratio_target(sizes, MILLION, EXPIRE, EXPIRE_RATIO, "expiration"))
    name = f"freshness() ≤ {FRESHNESS_MS:g} ms at every size"
    times = [s.ops[FRESHNESS].seconds.median * 1000 for s in sizes if FRESHNESS in s.ops]
    if times:
        out.append(Target(name, f"at most {max(times):,.1f} ms", max(times) <= FRESHNESS_MS))
    else:
        out.append(Target(name, "not measured", None))
    name = f"commit at {MILLION:,} / at {SMALLEST:,} files ≤ {COMMIT_GROWTH:g}"
    small, large = _at(sizes, SMALLEST), _at(sizes, MILLION)
    if small is None or large is None:
        out.append(Target(name, _missing(SMALLEST if small is None else MILLION), None))
    else:
        growth = large.ops[COMMIT].seconds.median / small.ops[COMMIT].seconds.median
        out.append(Target(name, f"{growth:.2f}", growth <= COMMIT_GROWTH))
    return out


_ISSUE_BOUNDS = {
    (PLAN_FULL, HUNDRED_K): FULL_PLAN_RATIO,
    (PLAN_FULL, MILLION): FULL_PLAN_RATIO,
    (PLAN_FILTERED, MILLION): FILTERED_PLAN_RATIO,
    (EXPIRE, MILLION): EXPIRE_RATIO,
}


def scale_ratios(sizes: list[SizeResult]) -> list[Ratio]:
    """shoal's median time over Java Paimon's for each operation both run, on the largest
    table (and full planning on the 100k table when there is one), with the target's bound
    where the table is of the size the target names."""
    if not sizes:
        return []
    largest = max(sizes, key=lambda s: s.files)
    picked = [(op, largest) for op in (PLAN_FULL, PLAN_FILTERED, EXPIRE)]
    middle = _at(sizes, HUNDRED_K)
    if middle is not None and middle is not largest:
        picked.insert(0, (PLAN_FULL, middle))
    out = []
    for op, size in picked:
        ours, theirs = size.ops.get(op), size.java.get(op)
        out.append(
            Ratio(
                f"shoal {op} / Java Paimon's, {size.files:,} files",
                ours.seconds.median if ours else None,
                theirs.seconds.median if theirs else None,
                _ISSUE_BOUNDS.get((op, size.files)),
                None if ours and theirs else "Java Paimon did not run",
            )
        )
    return out
