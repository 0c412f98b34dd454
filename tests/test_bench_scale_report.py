"""The scale workload's comparison with Java Paimon: the ratios, the scale targets and
the rendered section, from synthetic results shaped like what ``bench/scale.py``
measures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.scale import (
    COMMIT,
    EXPIRE,
    FRESHNESS,
    JAVA,
    JAVA_OPS,
    OPS,
    PLAN_FILTERED,
    PLAN_FULL,
    SHOAL,
    OpResult,
    ScaleConfig,
    ScaleReport,
    SizeResult,
    _checks,
    _on_copy,
    _repeat,
    same_answer,
    to_json,
)
from bench.scale_report import render_scale
from bench.scale_targets import Target, ratio, scale_ratios, targets
from bench.stats import Spread


def _op(name: str, seconds: list[float], peak: float, answer: dict[str, Any]) -> OpResult:
    return OpResult(name, Spread.of(seconds), peak, 3, {"manifests": 3}, 1, answer)


def _answer(op: str, files: int) -> dict[str, Any]:
    if op == EXPIRE:
        return {"expired_snapshots": 1_000, "deleted_data_files": files // 100}
    if op in (PLAN_FULL, PLAN_FILTERED):
        planned = files if op == PLAN_FULL else files // 1_000
        return {"splits": planned // 10, "files": planned}
    return {}


def _size(
    files: int,
    shoal_s: dict[str, float],
    java_s: dict[str, float],
    *,
    peak: float = 100.0,
    java_answers: dict[str, dict[str, Any]] | None = None,
) -> SizeResult:
    size = SizeResult(
        files,
        10_000,
        1_000,
        {"live_files": files, "empty_files_created": files // 100},
    )
    for op in OPS:
        seconds = shoal_s.get(op, 0.01)
        size.ops[op] = _op(op, [seconds * 0.9, seconds, seconds * 1.2], peak, _answer(op, files))
    for op in JAVA_OPS:
        answer = (java_answers or {}).get(op, _answer(op, files))
        size.java[op] = _op(op, [java_s[op]] * 3, 300.0, answer)
    return size


def _sizes(*, full_1m: float = 2.0, peak: float = 400.0) -> list[SizeResult]:
    java = {PLAN_FULL: 5.0, PLAN_FILTERED: 1.0, EXPIRE: 6.0}
    return [
        _size(10_000, {COMMIT: 0.02}, java),
        _size(100_000, {PLAN_FULL: 2.6, COMMIT: 0.03}, java),
        _size(
            1_000_000,
            {PLAN_FULL: full_1m, PLAN_FILTERED: 0.5, EXPIRE: 7.0, COMMIT: 0.03},
            java,
            peak=peak,
        ),
    ]


def _by_name(found: list[Target]) -> dict[str, Target]:
    return {t.name: t for t in found}


def test_ratio_is_shoal_median_over_java_median() -> None:
    size = _sizes()[2]
    assert ratio(size, PLAN_FULL) == 2.0 / 5.0
    assert ratio(size, EXPIRE) == 7.0 / 6.0
    assert ratio(size, FRESHNESS) is None  # Java does not run it


def test_targets_met_and_missed() -> None:
    met = _by_name(targets(_sizes()))
    assert [t.met for t in met.values()] == [True, True, False, True, True, True, True]
    full_100k = met["full plan at 100,000 files: shoal / Java ≤ 0.5"]
    assert (full_100k.measured, full_100k.met) == ("0.52", False)
    assert met["commit at 1,000,000 / at 10,000 files ≤ 2"].measured == "1.50"

    missed = _by_name(targets(_sizes(full_1m=2.6, peak=501.0)))
    assert missed["full plan at 1,000,000 files: shoal / Java ≤ 0.5"].met is False
    assert missed["full plan at 1,000,000 files: shoal's peak ≤ 500 MiB"].met is False


def test_freshness_target_holds_at_every_size() -> None:
    sizes = _sizes()
    sizes[0].ops[FRESHNESS] = _op(FRESHNESS, [0.051], 1.0, {})
    freshness = _by_name(targets(sizes))["freshness() ≤ 50 ms at every size"]
    assert (freshness.measured, freshness.met) == ("at most 51.0 ms", False)


def test_targets_of_sizes_not_in_the_run_are_not_measured() -> None:
    java = {PLAN_FULL: 1.0, PLAN_FILTERED: 1.0, EXPIRE: 1.0}
    quick = [_size(2_000, {}, java), _size(20_000, {}, java)]
    found = targets(quick)
    assert [t.met for t in found] == [None, None, None, None, None, True, None]
    assert found[0].measured == "not measured (no table of 1,000,000 files in this run)"


def test_answers_must_agree() -> None:
    size = _sizes()[0]
    assert all(same_answer(size, op) for op in JAVA_OPS)
    java_answers = {PLAN_FULL: {"splits": 1_000, "files": 9_999}}
    other = _size(10_000, {}, dict.fromkeys(JAVA_OPS, 1.0), java_answers=java_answers)
    assert not same_answer(other, PLAN_FULL)
    assert same_answer(other, PLAN_FILTERED)
    del other.java[EXPIRE]
    assert not same_answer(other, EXPIRE)
    other.java[EXPIRE] = size.java[EXPIRE]
    notes = _checks(ScaleReport([other], 3, "tmpfs"))
    assert notes == [
        f"{PLAN_FULL} on 10,000 files: shoal found {{'splits': 1000, 'files': 10000}}, "
        "Java Paimon {'splits': 1000, 'files': 9999}"
    ]


def test_rendered_section_and_json() -> None:
    sizes = _sizes()
    sizes[1].java[PLAN_FULL] = _op(PLAN_FULL, [5.0], 300.0, {"splits": 1, "files": 7})
    lines = render_scale(ScaleReport(sizes, 3, "tmpfs"))
    text = "\n".join(lines)
    assert "### shoal beside Java Paimon 1.0" in text
    assert "| 1M files | 2,000.0 [1,800.0, 2,400.0] | 5,000.0 [5,000.0, 5,000.0] | 400.0 |" in text
    assert "| 300.0 | 0.40 | yes |" in text
    assert "| 100k files |" in text
    assert "| 0.52 | **no**: " in text
    assert "| full plan at 100,000 files: shoal / Java ≤ 0.5 | 0.52 | **no** |" in text
    assert "| expiration at 1,000,000 files: shoal / Java ≤ 1.24 | 1.17 | yes |" in text
    dumped = to_json(ScaleReport(sizes, 3, "tmpfs"))
    java = dumped["sizes"][2]["java"]
    assert set(java) == set(JAVA_OPS)
    assert java[PLAN_FULL] == {"ms": 5_000.0, "peak_mib": 300.0}


def test_ratios_for_the_chart() -> None:
    found = scale_ratios(_sizes())
    assert [(r.label, r.value, r.target) for r in found] == [
        ("shoal plan full / Java Paimon's, 100,000 files", 2.6 / 5.0, 0.5),
        ("shoal plan full / Java Paimon's, 1,000,000 files", 2.0 / 5.0, 0.5),
        ("shoal plan partition-filtered / Java Paimon's, 1,000,000 files", 0.5, 0.66),
        ("shoal expire snapshots / Java Paimon's, 1,000,000 files", 7.0 / 6.0, 1.24),
    ]
    java = dict.fromkeys(JAVA_OPS, 1.0)
    quick = [_size(2_000, {}, java), _size(20_000, {}, java)]
    del quick[1].java[EXPIRE]
    found = scale_ratios(quick)
    assert [r.target for r in found] == [None, None, None]
    assert (found[2].value, found[2].note) == (None, "Java Paimon did not run")


def _config(repeats: int, budget_s: float) -> ScaleConfig:
    return ScaleConfig((2_000,), 1_000, repeats, budget_s, 1, Path("/unused"))


def _runner(log: list[str], name: str, seconds: float) -> Callable[[], dict[str, Any]]:
    def run() -> dict[str, Any]:
        log.append(name)
        return {
            "seconds": seconds,
            "peak_mib": 1.0,
            "metadata_files_read": 0,
            "reads": {},
            "listings": 0,
            "result": {"run": len(log)},
        }

    return run


def test_shoal_and_java_runs_alternate_within_the_budget() -> None:
    log: list[str] = []
    runners = {
        (SHOAL, PLAN_FULL): _runner(log, "shoal", 1.0),
        (JAVA, PLAN_FULL): _runner(log, "java", 2.0),
    }
    done = _repeat(_config(3, 20.0), runners)
    assert log == ["shoal", "java"] * 3
    assert done[SHOAL, PLAN_FULL].seconds.count == 3
    assert done[JAVA, PLAN_FULL].seconds.median == 2.0
    assert done[JAVA, PLAN_FULL].answer == {"run": 2}  # the first run's

    log.clear()
    _repeat(_config(3, 5.0), runners)  # the second round passes the budget
    assert log == ["shoal", "java"] * 2


def test_each_run_on_a_copy_leaves_the_table_as_it_was(tmp_path: Path) -> None:
    table = tmp_path / "files-1" / "bench.db" / "scale"
    (table / "snapshot").mkdir(parents=True)
    (table / "snapshot" / "snapshot-1").write_text("{}")
    seen: list[str] = []

    def destructive(path: str) -> dict[str, Any]:
        assert path != str(table)
        seen.append(path)
        (Path(path) / "snapshot" / "snapshot-1").unlink()
        return {"seconds": 0.1}

    run = _on_copy(str(table), destructive)
    run()
    run()
    assert (table / "snapshot" / "snapshot-1").read_text() == "{}"
    assert len(set(seen)) == 2
    assert not any(Path(p).exists() for p in seen)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["files-1"]
