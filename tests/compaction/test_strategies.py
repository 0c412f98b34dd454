"""The full and universal compaction strategies.

The example cases port apache/paimon's
``paimon-core/src/test/java/org/apache/paimon/mergetree/compact/UniversalCompactionTest.java``
(commit 5dacde516bf6) with its numbers; Paimon's ``pick(numLevels, runs)`` takes the
level count, shoal's ``pick(runs, max_level)`` the top level, so ``numLevels = n``
there is ``max_level = n - 1`` here. The tests of the parts shoal leaves out (early
full compaction, off-peak hours, lookup / force-up-level-0) are not ported.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.compaction.strategies import (
    FullCompaction,
    UniversalCompaction,
    create_unit,
    strategy_for,
)
from shoal.errors import InvalidOptionError
from shoal.format.binary_row import EMPTY_ROW
from shoal.format.data_file import DataFileMeta
from shoal.format.stats import EMPTY_STATS
from shoal.options import Options
from shoal.primary_key.runs import CompactStrategy, CompactUnit, SortedRun, sorted_runs

_names = itertools.count()


def file(size: int, level: int = 0, seq: int = 0) -> DataFileMeta:
    return DataFileMeta(
        file_name=f"data-{next(_names)}.parquet",
        file_size=size,
        row_count=1,
        min_key=EMPTY_ROW,
        max_key=EMPTY_ROW,
        key_stats=EMPTY_STATS,
        value_stats=EMPTY_STATS,
        min_sequence_number=seq,
        max_sequence_number=seq,
        schema_id=0,
        level=level,
    )


def level(lvl: int, size: int) -> SortedRun:
    """A run of one file (Paimon's test helper ``level(level, size)``)."""
    return SortedRun(lvl, (file(size, lvl),))


def level0(*sizes: int) -> list[SortedRun]:
    return [level(0, s) for s in sizes]


def sizes(unit: CompactUnit | None) -> list[int]:
    assert unit is not None
    return [f.file_size for f in unit.files]


def files_of(runs: Sequence[SortedRun]) -> tuple[DataFileMeta, ...]:
    return tuple(f for r in runs for f in r.files)


def universal(amp: int, ratio: int, trigger: int) -> UniversalCompaction:
    return UniversalCompaction(
        max_size_amplification_percent=amp, size_ratio=ratio, num_sorted_run_trigger=trigger
    )


# --- full compaction --------------------------------------------------------------------------


def test_full_nothing_to_do() -> None:
    full = FullCompaction()
    assert full.pick([], 5) is None
    assert full.pick([level(5, 10)], 5) is None
    top = SortedRun(5, (file(1, 5), file(2, 5), file(3, 5)))
    assert full.pick([top], 5) is None


def test_full_single_run_below_top_moves_up() -> None:
    run = level(0, 7)
    unit = FullCompaction().pick([run], 5)
    assert unit == CompactUnit(5, run.files)
    unit = FullCompaction().pick([level(3, 7)], 5)
    assert unit is not None
    assert unit.output_level == 5


def test_full_takes_every_run_in_order() -> None:
    runs = [*level0(1, 2), level(1, 3), level(4, 4), SortedRun(5, (file(5, 5), file(6, 5)))]
    unit = FullCompaction().pick(runs, 5)
    assert unit == CompactUnit(5, files_of(runs))
    assert sizes(unit) == [1, 2, 3, 4, 5, 6]


# --- universal: Paimon's own cases ------------------------------------------------------------


def test_output_level() -> None:
    # UniversalCompactionTest.testOutputLevel: createUnit(createLevels(0, 0, 1, 3, 4), 5, n)
    runs = [level(lvl, 1) for lvl in (0, 0, 1, 3, 4)]
    assert [create_unit(runs, 5, n).output_level for n in (1, 2, 3, 4, 5)] == [1, 1, 2, 3, 5]
    # output 0 is pushed up to include the first run above level 0
    assert len(create_unit(runs, 5, 1).files) == 3
    assert len(create_unit(runs, 5, 2).files) == 3
    assert len(create_unit(runs, 5, 3).files) == 3


def test_output_level_pushed_through_every_run_is_max_level() -> None:
    # a unit pushed past level 0 that runs out of runs goes to the top, like a full merge
    unit = create_unit(level0(1, 1, 1), 5, 1)
    assert (unit.output_level, len(unit.files)) == (5, 3)
    unit = create_unit([*level0(1, 1), level(1, 1)], 5, 1)
    assert (unit.output_level, len(unit.files)) == (5, 3)
    unit = create_unit([*level0(1, 1), level(1, 1), level(2, 1)], 5, 1)
    assert (unit.output_level, len(unit.files)) == (1, 3)


def test_pick_by_size_amplification() -> None:
    # testPick, "by size amplification": numLevels 3
    unit = universal(25, 1, 3).pick(level0(1, 2, 3, 3), 2)
    assert sizes(unit) == [1, 2, 3, 3]
    assert unit is not None
    assert unit.output_level == 2


def test_pick_by_size_ratio() -> None:
    # testPick, "by size ratio": numLevels 4
    runs = [level(0, 1), level(1, 1), level(2, 1), level(3, 50)]
    unit = universal(25, 1, 3).pick(runs, 3)
    assert sizes(unit) == [1, 1, 1]
    assert unit is not None
    assert unit.output_level == 2


def test_pick_by_file_num() -> None:
    # testPick, "by file num": 3 is taken by size ratio after picking by file num
    runs = [level(0, 1), level(1, 2), level(2, 3), level(3, 50)]
    unit = universal(25, 1, 3).pick(runs, 3)
    assert sizes(unit) == [1, 2, 3]
    assert unit is not None
    assert unit.output_level == 2


def test_no_output_level_0() -> None:
    # testNoOutputLevel0: numLevels 3
    compaction = universal(25, 1, 3)
    unit = compaction.pick([level(0, 1), level(0, 1), level(1, 1), level(2, 50)], 2)
    assert sizes(unit) == [1, 1, 1]
    assert unit is not None
    assert unit.output_level == 1
    unit = compaction.pick([level(0, 1), level(0, 2), level(1, 3), level(2, 50)], 2)
    assert sizes(unit) == [1, 2, 3]
    assert unit is not None
    assert unit.output_level == 1


def test_file_num_compaction_considers_level_2() -> None:
    # testFileNumCompactionConsidersLevel2 (Paimon #9185): the two level-0 runs picked by
    # file count take level 1 along, and together they are big enough for level 2.
    runs = [level(0, 10), level(0, 20), level(1, 97), level(2, 100)]
    unit = universal(200, 1, 3).pick(runs, 2)
    assert unit is not None
    assert len(unit.files) == 4
    assert unit.output_level == 2


def test_extreme_case_no_output_level_0() -> None:
    # testExtremeCaseNoOutputLevel0: numLevels 6, all runs at level 0
    unit = universal(200, 1, 5).pick(level0(1, 1, 1, 1024, 1024 * 1024), 5)
    assert sizes(unit) == [1, 1, 1, 1024, 1024 * 1024]
    assert unit is not None
    assert unit.output_level == 5


def _append_and_pick_for_size_amp(compaction: UniversalCompaction, current: list[int]) -> list[int]:
    new = [1, *current]
    unit = compaction.pick_for_size_amp(level0(*new), 2)
    return [sum(sizes(unit))] if unit is not None else new


def test_size_amplification() -> None:
    # testSizeAmplification: (25, 0, 1), append a size-1 run and apply pickForSizeAmp
    compaction = universal(25, 0, 1)
    expected = [
        [2], [3], [4], [1, 4], [6], [1, 6], [8], [1, 8], [1, 1, 8], [11], [1, 11],
        [1, 1, 11], [14], [1, 14], [1, 1, 14], [1, 1, 1, 14], [18],
    ]  # fmt: skip
    current = [1]
    for want in expected:
        current = _append_and_pick_for_size_amp(compaction, current)
        assert current == want


def _pick_for_size_ratio(compaction: UniversalCompaction, current: list[int]) -> list[int]:
    # Paimon's helper: run i sits at level i, max level = number of runs
    runs = [level(i, s) for i, s in enumerate(current)]
    unit = compaction.pick_for_size_ratio(runs, len(current))
    if unit is None:
        return current
    picked = sizes(unit)
    assert picked == current[: len(picked)]
    return [sum(picked), *current[len(picked) :]]


def test_size_ratio() -> None:
    # testSizeRatio: (25, 1, 5), append a size-1 run and apply pickForSizeRatio
    compaction = universal(25, 1, 5)
    expected = [
        [5], [1, 5], [1, 1, 5], [1, 1, 1, 5], [4, 5], [1, 4, 5], [1, 1, 4, 5], [3, 4, 5],
        [1, 3, 4, 5], [2, 3, 4, 5], [1, 2, 3, 4, 5], [16], [1, 16], [1, 1, 16],
        [1, 1, 1, 16], [4, 16], [1, 4, 16], [1, 1, 4, 16], [3, 4, 16], [1, 3, 4, 16],
        [2, 3, 4, 16], [1, 2, 3, 4, 16], [11, 16],
    ]  # fmt: skip
    current = [1, 1, 1, 1]
    for want in expected:
        current = _pick_for_size_ratio(compaction, [1, *current])
        assert current == want


def test_size_ratio_threshold() -> None:
    # testSizeRatioThreshold
    assert _pick_for_size_ratio(universal(25, 10, 2), [8, 9, 10]) == [8, 9, 10]
    assert _pick_for_size_ratio(universal(25, 20, 2), [8, 9, 10]) == [27]


# --- universal: each rule and its boundaries ---------------------------------------------------


def test_fewer_runs_than_trigger_never_compacts() -> None:
    # size amplification and size ratio both wait for the trigger count
    compaction = universal(0, 100, 5)
    assert compaction.pick(level0(100, 100, 100, 1), 4) is None
    assert compaction.pick_for_size_amp(level0(100, 100, 100, 1), 4) is None
    assert compaction.pick_for_size_ratio(level0(100, 100, 100, 1), 4) is None


def test_defaults_match_paimon() -> None:
    assert UniversalCompaction() == universal(200, 1, 5)
    # five equal level-0 files: 4 of them are 400% of the oldest > 200%
    unit = UniversalCompaction().pick(level0(1, 1, 1, 1, 1), 5)
    assert unit is not None
    assert (unit.output_level, len(unit.files)) == (5, 5)
    assert UniversalCompaction().pick(level0(1, 1, 1, 1), 5) is None


def test_size_amplification_boundary_is_strict() -> None:
    compaction = universal(200, 1, 2)
    # newer runs exactly 200% of the oldest: no amplification compaction
    assert compaction.pick_for_size_amp([level(0, 100), level(0, 100), level(5, 100)], 5) is None
    unit = compaction.pick_for_size_amp([level(0, 100), level(0, 101), level(5, 100)], 5)
    assert unit is not None
    assert (unit.output_level, sizes(unit)) == (5, [100, 101, 100])


def test_size_amplification_ignores_level_layout() -> None:
    # the oldest run is the last one whatever its level; the unit goes to max level
    runs = [level(0, 50), level(2, 60), level(3, 40)]
    unit = universal(200, 1, 3).pick(runs, 7)
    assert unit == CompactUnit(7, files_of(runs))


def test_size_ratio_boundary_is_inclusive() -> None:
    # candidate * (100 + ratio) / 100 == next size: the next run is taken
    compaction = universal(10_000, 1, 3)
    unit = compaction.pick([level(0, 100), level(2, 101), level(5, 10_000)], 5)
    assert sizes(unit) == [100, 101]
    assert unit is not None
    assert unit.output_level == 4
    assert compaction.pick([level(0, 100), level(2, 102), level(5, 10_000)], 5) is None


def test_size_ratio_in_doubles_like_paimon() -> None:
    # Paimon compares in doubles: at 300 PB a run one byte over the ratio rounds to equal
    # and is taken, as in Java
    big = 3 * 10**17
    compaction = universal(10**6, 1, 3)
    unit = compaction.pick([level(0, big), level(3, big * 101 // 100 + 1), level(5, 10**20)], 5)
    assert unit is not None
    assert unit.output_level == 4
    assert compaction.pick([level(0, big), level(3, big * 102 // 100), level(5, 10**20)], 5) is None


def test_size_ratio_takes_multi_file_runs_whole() -> None:
    top = SortedRun(3, (file(30, 3), file(30, 3), file(41, 3)))
    runs = [level(0, 100), top]
    unit = universal(10_000, 1, 2).pick(runs, 3)
    assert unit == CompactUnit(3, files_of(runs))


def test_after_trigger_low_levels_are_taken_whatever_their_size() -> None:
    # Paimon #9185: once two runs are picked, a level-1 run is taken although it is far
    # bigger than the candidates; the level-3 run above it is not.
    runs = [level(0, 10), level(0, 10), level(1, 1000), level(3, 5000)]
    unit = universal(200, 1, 4).pick(runs, 4)
    assert sizes(unit) == [10, 10, 1000]
    assert unit is not None
    assert unit.output_level == 2
    # the same for a big level-0 run
    runs = [level(0, 1), level(0, 1), level(0, 1000), level(2, 10**6)]
    unit = universal(10**6, 1, 4).pick(runs, 4)
    assert sizes(unit) == [1, 1, 1000]
    assert unit is not None
    assert unit.output_level == 1


def test_size_ratio_needs_the_first_pair() -> None:
    # nothing is triggered when the newest run alone is too small for the next one,
    # even if later runs would satisfy the ratio
    runs = [level(0, 1), level(1, 10), level(2, 10), level(3, 10_000)]
    assert universal(10_000, 1, 4).pick(runs, 3) is None


def test_run_count_merges_down_to_trigger_runs() -> None:
    # 7 runs, trigger 4: the newest 7 - 4 + 1 = 4 are merged into one, leaving 4 runs
    runs = [*level0(1, 100, 10_000, 1_000_000), level(2, 10**8), level(3, 10**10), level(4, 10**12)]
    compaction = universal(200, 1, 4)
    assert compaction.pick_for_size_amp(runs, 4) is None
    assert compaction.pick_for_size_ratio(runs, 4) is None
    unit = compaction.pick(runs, 4)
    assert sizes(unit) == [1, 100, 10_000, 1_000_000]
    assert unit is not None
    assert unit.output_level == 1


def test_run_count_then_size_ratio_and_low_levels() -> None:
    # the same, but the next run is at level 1: taken along (no level-0 output, #9185)
    runs = [*level0(1, 100, 10_000, 1_000_000), level(1, 10**8), level(3, 10**10), level(4, 10**12)]
    unit = universal(200, 1, 4).pick(runs, 4)
    assert sizes(unit) == [1, 100, 10_000, 1_000_000, 10**8]
    assert unit is not None
    assert unit.output_level == 2


def test_run_count_exactly_at_trigger_does_nothing() -> None:
    runs = [*level0(1, 100, 10_000), level(4, 10**12)]
    assert universal(200, 1, 4).pick(runs, 4) is None
    assert universal(200, 1, 3).pick(runs, 4) is not None


def test_runs_from_sorted_runs() -> None:
    # newest level-0 file first, as sorted_runs orders them
    files = [file(10, 0, seq=s) for s in (1, 2, 3)] + [file(1000, 2, seq=0)]
    runs = sorted_runs(files, lambda _key: ())
    assert [r.files[0].max_sequence_number for r in runs[:3]] == [3, 2, 1]
    unit = universal(200, 1, 3).pick(runs, 2)
    assert unit is not None
    assert [f.max_sequence_number for f in unit.files] == [3, 2, 1]
    assert unit.output_level == 1


# --- strategy_for -------------------------------------------------------------------------------


def test_strategy_for_defaults() -> None:
    assert strategy_for("full", Options({})) == FullCompaction()
    assert strategy_for("universal", Options({})) == UniversalCompaction(200, 1, 5)


def test_strategy_for_reads_paimon_keys() -> None:
    options = Options(
        {
            "compaction.max-size-amplification-percent": "300",
            "compaction.size-ratio": " 7 ",
            "num-sorted-run.compaction-trigger": "3",
            "bucket": "4",
        }
    )
    assert strategy_for("universal", options) == UniversalCompaction(300, 7, 3)
    assert strategy_for("full", options) == FullCompaction()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("compaction.max-size-amplification-percent", "lots"),
        ("compaction.max-size-amplification-percent", "-1"),
        ("compaction.size-ratio", "1.5"),
        ("compaction.size-ratio", "-1"),
        ("num-sorted-run.compaction-trigger", "0"),
        ("num-sorted-run.compaction-trigger", ""),
    ],
)
def test_strategy_for_rejects_bad_values(key: str, value: str) -> None:
    with pytest.raises(InvalidOptionError, match=key):
        strategy_for("universal", Options({key: value}))


def test_strategy_for_unknown_name() -> None:
    with pytest.raises(InvalidOptionError, match=r"compaction\.strategy"):
        strategy_for("leveled", Options({}))


# --- properties ---------------------------------------------------------------------------------

_size = st.one_of(st.integers(0, 20), st.integers(0, 10**12))


@st.composite
def lsm(draw: st.DrawFn) -> tuple[list[SortedRun], int]:
    """One bucket's runs, newest first, as sorted_runs gives them, and its max level."""
    max_level = draw(st.integers(1, 6))
    n0 = draw(st.integers(0, 8))
    levels = draw(st.sets(st.integers(1, max_level)))
    runs = [SortedRun(0, (file(draw(_size)),)) for _ in range(n0)]
    for lvl in sorted(levels):
        n = draw(st.integers(1, 3))
        runs.append(SortedRun(lvl, tuple(file(draw(_size), lvl) for _ in range(n))))
    return runs, max_level


_universal = st.builds(
    UniversalCompaction, st.integers(0, 400), st.integers(0, 100), st.integers(1, 8)
)


def _picked_runs(runs: Sequence[SortedRun], unit: CompactUnit) -> int:
    """How many runs ``unit`` takes; fails unless they are a prefix of ``runs``."""
    for k in range(len(runs) + 1):
        if files_of(runs[:k]) == unit.files:
            return k
    raise AssertionError("the unit's files are not the files of a prefix of the runs")


def _check_unit(runs: Sequence[SortedRun], max_level: int, unit: CompactUnit) -> int:
    """Paimon's guarantees for any unit; returns the number of runs picked."""
    k = _picked_runs(runs, unit)
    assert k >= 1
    picked, rest = runs[:k], runs[k:]
    # never down a level, never to level 0, never above the top
    assert all(r.level <= unit.output_level for r in picked)
    assert 1 <= unit.output_level <= max_level
    # the output stays below every run left alone, so the tree stays one run per level
    # above 0; and no level-0 run is left behind
    assert all(r.level > unit.output_level for r in rest)
    # all runs merged <-> output at the top level
    assert (k == len(runs)) == (unit.output_level == max_level)
    return k


def _apply(runs: Sequence[SortedRun], unit: CompactUnit, k: int) -> list[SortedRun]:
    merged = file(sum(f.file_size for f in unit.files), unit.output_level)
    return [SortedRun(unit.output_level, (merged,)), *runs[k:]]


@settings(max_examples=500, deadline=None)
@given(lsm(), _universal)
def test_universal_properties(bucket: tuple[list[SortedRun], int], u: UniversalCompaction) -> None:
    runs, max_level = bucket
    unit = u.pick(runs, max_level)
    trigger = u.num_sorted_run_trigger
    amp = len(runs) >= 2 and (
        sum(r.total_size for r in runs[:-1]) * 100
        > u.max_size_amplification_percent * runs[-1].total_size
    )
    ratio = len(runs) >= 2 and (
        runs[0].total_size * (100 + u.size_ratio) >= runs[1].total_size * 100
    )
    # None iff nothing should happen: fewer runs than the trigger never compact, more
    # always do, and at the trigger count only size amplification or size ratio do.
    if len(runs) < trigger:
        assert unit is None
    elif len(runs) > trigger:
        assert unit is not None
    else:
        assert (unit is not None) == (amp or ratio)
    if unit is None:
        return
    k = _check_unit(runs, max_level, unit)
    assert k >= 2  # a universal unit always merges runs
    if amp:
        assert k == len(runs)
    if len(runs) > trigger:
        assert k >= len(runs) - trigger + 1 or amp or ratio


@settings(max_examples=300, deadline=None)
@given(lsm())
def test_full_properties(bucket: tuple[list[SortedRun], int]) -> None:
    runs, max_level = bucket
    full = FullCompaction()
    unit = full.pick(runs, max_level)
    if not runs or (len(runs) == 1 and runs[0].level == max_level):
        assert unit is None
        return
    assert unit is not None
    assert _check_unit(runs, max_level, unit) == len(runs)
    assert full.pick(_apply(runs, unit, len(runs)), max_level) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(_size, min_size=1, max_size=60), st.integers(1, 6), _universal)
def test_universal_keeps_run_count_at_trigger(
    appends: list[int], max_level: int, u: UniversalCompaction
) -> None:
    """Write one level-0 file, compact once, repeat: the tree stays well formed, holds at
    most ``trigger`` runs after each round and loses no bytes."""
    strategy: CompactStrategy = u
    runs: list[SortedRun] = []
    for size in appends:
        runs = [SortedRun(0, (file(size),)), *runs]
        total = sum(r.total_size for r in runs)
        unit = strategy.pick(runs, max_level)
        if unit is not None:
            runs = _apply(runs, unit, _check_unit(runs, max_level, unit))
        assert len(runs) <= u.num_sorted_run_trigger
        assert sum(r.total_size for r in runs) == total
