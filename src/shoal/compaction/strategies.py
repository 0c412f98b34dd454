"""The ``full`` and ``universal`` compaction strategies of primary-key tables.

``UniversalCompaction`` follows Paimon's ``UniversalCompaction`` (apache/paimon
``paimon-core/src/main/java/org/apache/paimon/mergetree/compact/UniversalCompaction.java``,
commit 5dacde516bf6) without its optional early full compaction
(``compaction.optimization-interval``, ``compaction.total-size-threshold``,
``compaction.incremental-size-threshold``) and off-peak size ratio
(``compaction.offpeak.*``). ``ForceUpLevel0`` is Paimon's ``ForceUpLevel0Compaction``
(tables with deletion vectors, or ``compaction.force-up-level-0``): universal
compaction, else every level-0 file lifted. ``FullCompaction`` is Paimon's
``CompactStrategy.pickFullCompaction`` without record-level expiry and forced
rewrites of a bucket that already is one top-level run (with deletion vectors, such
a bucket's files that have vectors are rewritten).

Table options read here (Paimon's keys and defaults; to move into ``shoal.options``):

    compaction.max-size-amplification-percent   int, default 200
    compaction.size-ratio                        int, default 1
    num-sorted-run.compaction-trigger            int, default 5
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from shoal import options as O
from shoal.errors import InvalidOptionError
from shoal.options import Options
from shoal.primary_key.runs import CompactStrategy, CompactUnit, SortedRun

MAX_SIZE_AMPLIFICATION_PERCENT = O.COMPACTION_MAX_SIZE_AMPLIFICATION.key
SIZE_RATIO = O.COMPACTION_SIZE_RATIO.key
NUM_SORTED_RUN_COMPACTION_TRIGGER = O.NUM_SORTED_RUN_COMPACTION_TRIGGER.key


def _unit(output_level: int, runs: Sequence[SortedRun]) -> CompactUnit:
    return CompactUnit(output_level, tuple(f for run in runs for f in run.files))


@dataclass(frozen=True, slots=True)
class FullCompaction:
    """Merge every run of the bucket into the top level."""

    def pick(self, runs: Sequence[SortedRun], max_level: int) -> CompactUnit | None:
        if not runs or (len(runs) == 1 and runs[0].level == max_level):
            return None
        return _unit(max_level, runs)

    def pick_vectors(
        self, runs: Sequence[SortedRun], max_level: int, with_vectors: Collection[str]
    ) -> CompactUnit | None:
        """On a bucket that already is one top-level run, the files with deletion
        vectors (named in ``with_vectors``), rewritten without their deleted rows."""
        if len(runs) != 1 or runs[0].level != max_level:
            return None
        files = tuple(f for f in runs[0].files if f.file_name in with_vectors)
        return CompactUnit(max_level, files) if files else None


def create_unit(runs: Sequence[SortedRun], max_level: int, run_count: int) -> CompactUnit:
    """The unit of the newest ``run_count`` runs, at Paimon's output level.

    The output goes just below the first run left out; level 0 is never an output, so
    a unit that would land there takes further runs up to and including the first
    run above level 0 and goes to that run's level. A unit of all runs goes to
    ``max_level``.
    """
    if run_count == len(runs):
        output_level = max_level
    else:
        output_level = max(0, runs[run_count].level - 1)
    if output_level == 0:
        for run in runs[run_count:]:
            run_count += 1
            if run.level != 0:
                output_level = run.level
                break
    if run_count == len(runs):
        output_level = max_level
    return _unit(output_level, runs[:run_count])


@dataclass(frozen=True, slots=True)
class UniversalCompaction:
    """Paimon's universal compaction (RocksDB's universal style): size amplification,
    then size ratio, then sorted-run count."""

    max_size_amplification_percent: int = 200
    size_ratio: int = 1
    num_sorted_run_trigger: int = 5

    def __post_init__(self) -> None:
        for key, value, minimum in (
            (MAX_SIZE_AMPLIFICATION_PERCENT, self.max_size_amplification_percent, 0),
            (SIZE_RATIO, self.size_ratio, 0),
            (NUM_SORTED_RUN_COMPACTION_TRIGGER, self.num_sorted_run_trigger, 1),
        ):
            if value < minimum:
                raise InvalidOptionError(key, value, f"must be at least {minimum}")

    def pick(self, runs: Sequence[SortedRun], max_level: int) -> CompactUnit | None:
        unit = self.pick_for_size_amp(runs, max_level)
        if unit is None:
            unit = self.pick_for_size_ratio(runs, max_level)
        if unit is None and len(runs) > self.num_sorted_run_trigger:
            unit = self._pick_for_size_ratio(
                runs, max_level, len(runs) - self.num_sorted_run_trigger + 1
            )
        return unit

    def pick_level0(self, runs: Sequence[SortedRun], max_level: int) -> CompactUnit | None:
        """Every level-0 run, and the runs above that size ratio adds to them."""
        level0 = next((i for i, run in enumerate(runs) if run.level > 0), len(runs))
        if level0 == 0:
            return None
        return self._pick_for_size_ratio(runs, max_level, level0, force=True)

    def pick_for_size_amp(self, runs: Sequence[SortedRun], max_level: int) -> CompactUnit | None:
        """Rule 1: all runs but the oldest hold more than ``max-size-amplification-percent``
        of the oldest run's size -> merge everything into ``max_level``."""
        if len(runs) < self.num_sorted_run_trigger:
            return None
        newer = sum(run.total_size for run in runs[:-1])
        if newer * 100 > self.max_size_amplification_percent * runs[-1].total_size:
            return _unit(max_level, runs)
        return None

    def pick_for_size_ratio(self, runs: Sequence[SortedRun], max_level: int) -> CompactUnit | None:
        """Rule 2: starting from the newest run, take the next run while it is no bigger
        than the candidates' size plus ``size-ratio`` percent (once two runs are taken,
        level-0 and level-1 runs are taken whatever their size)."""
        if len(runs) < self.num_sorted_run_trigger:
            return None
        return self._pick_for_size_ratio(runs, max_level, 1)

    def _pick_for_size_ratio(
        self, runs: Sequence[SortedRun], max_level: int, candidate_count: int, force: bool = False
    ) -> CompactUnit | None:
        candidate_size = sum(run.total_size for run in runs[:candidate_count])
        triggered = force or candidate_count > 1
        for run in runs[candidate_count:]:
            # Paimon's test in Java's doubles (the long operand converted too); exact
            # until candidate_size * (100 + size_ratio) passes 2**53
            if candidate_size * (100.0 + self.size_ratio) / 100.0 < float(run.total_size) and (
                # Once a merge is decided, a level-0 or level-1 run is taken whatever its
                # size: create_unit would pull it in anyway (no output to level 0), and it
                # must count towards taking the runs above it, or level 1 grows without
                # ever being merged upward (Paimon #9185, "level 1 inflation").
                not triggered or run.level > 1
            ):
                break
            candidate_size += run.total_size
            candidate_count += 1
            triggered = True
        return create_unit(runs, max_level, candidate_count) if triggered else None


@dataclass(frozen=True, slots=True)
class ForceUpLevel0:
    """Universal compaction, or when it picks nothing every level-0 file: a write's
    rows leave level 0 at once (Paimon's strategy for tables that look keys up in
    the levels above, as deletion vectors do)."""

    universal: UniversalCompaction

    def pick(self, runs: Sequence[SortedRun], max_level: int) -> CompactUnit | None:
        unit = self.universal.pick(runs, max_level)
        return unit if unit is not None else self.universal.pick_level0(runs, max_level)


def universal_for(options: Options) -> UniversalCompaction:
    """Universal compaction set up from a table's options."""
    return UniversalCompaction(
        options.get(O.COMPACTION_MAX_SIZE_AMPLIFICATION),
        options.get(O.COMPACTION_SIZE_RATIO),
        options.get(O.NUM_SORTED_RUN_COMPACTION_TRIGGER),
    )


def universal_strategy_for(options: Options) -> CompactStrategy:
    """Universal compaction as Paimon's writers and compaction jobs run it, lifting
    every level-0 file with deletion vectors, the lookup changelog producer or
    ``compaction.force-up-level-0``."""
    universal = universal_for(options)
    if (
        options.get(O.DELETION_VECTORS_ENABLED)
        or options.get(O.COMPACTION_FORCE_UP_LEVEL_0)
        or options.get(O.CHANGELOG_PRODUCER) == "lookup"
    ):
        return ForceUpLevel0(universal)
    return universal


def strategy_for(name: str, options: Options) -> CompactStrategy:
    """The strategy called ``name`` ("full" or "universal"), set up from ``options``."""
    if name == "full":
        return FullCompaction()
    if name == "universal":
        return universal_strategy_for(options)
    raise InvalidOptionError(
        "compaction.strategy", name, "expected 'full', 'universal' or 'event-time'"
    )
