"""The time-travel workload: reading an old snapshot by id, by timestamp and by tag.

One append table of ``commits`` small appends (the rows of the small-appends
workload), written by shoal before anything is timed; a tag on snapshot ``target``.
Each measurement is a fresh process that opens the table by path, resolves the
snapshot the way the mode asks (``scan.snapshot-id``, ``scan.timestamp-millis`` =
that snapshot's commit time, ``scan.tag-name``), plans it, then reads every split.
pypaimon reads the same table (it reads what shoal writes) with the same three
options; deltalake reads a Delta table of the same appends, written by deltalake, as
of the same version by number and by time (Delta has no tags); the floor is
``pyarrow.dataset`` over that snapshot's data files, given the list. Rounds rotate the
order of the contenders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import data
from bench.delta_env import delta_cmd
from bench.procs import log, pypaimon_cmd, rotate, run_json, worker_cmd
from bench.report import Ratio, _row, _spread, ratio_table
from bench.stats import Spread

SHOAL, PYPAIMON, FLOOR = "shoal", "pypaimon 2.1.0", "pyarrow floor"
DELTALAKE = "deltalake"
SNAPSHOT, TIMESTAMP, TAG = "snapshot", "timestamp", "tag"
MODES = (SNAPSHOT, TIMESTAMP, TAG)
TAG_NAME = "bench-travel"
TABLE = "bench.travel"


@dataclass(frozen=True, slots=True)
class TravelConfig:
    commits: int
    rows: int
    repeats: int
    seed: int
    workdir: Path
    pypaimon_python: Path | None  # None: leave pypaimon out
    deltalake_python: Path | None = None  # None: leave deltalake out

    @property
    def target(self) -> int:
        """The snapshot travelled to: the middle of the history."""
        return self.commits // 2


@dataclass(slots=True)
class TravelReport:
    commits: int
    rows_per_commit: int
    target: int
    repeats: int
    files: int  # data files of the target snapshot
    plan: dict[str, dict[str, Spread]] = field(default_factory=dict)  # mode -> contender
    plan_and_read: dict[str, dict[str, Spread]] = field(default_factory=dict)
    floor_read: Spread | None = None
    ratios: list[Ratio] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _build(config: TravelConfig) -> tuple[str, int, list[str]]:
    """The table, the target snapshot's commit time and its data files."""
    import shoal

    table = shoal.Catalog(str(config.workdir / "travel")).create_table(
        TABLE, data.SCHEMA, partition_keys=[data.PARTITION_KEY]
    )
    for i in range(config.commits):
        table.append(data.make_batch(i, config.rows, config.seed))
    snapshot = table.snapshot(config.target)
    table.create_tag(TAG_NAME, snapshot_id=config.target)
    files = [p for s in table.scan(snapshot_id=config.target).plan() for p in s.file_paths]
    return table.path, snapshot.time_millis, files


def _build_delta(config: TravelConfig) -> tuple[str, str]:
    """The Delta table of the same appends, and the commit time of the version that
    matches the target snapshot (versions count from 0, snapshots from 1)."""
    assert config.deltalake_python is not None
    rows = config.workdir / "travel-appends.arrow"
    data.write_batches(rows, config.commits, config.rows, config.seed)
    plan = config.workdir / "travel-plan.json"
    plan.write_text(json.dumps([None] * config.commits))
    path = str(config.workdir / "travel-delta")
    python = config.deltalake_python
    log("time travel: writing the same appends with deltalake ...")
    run_json(delta_cmd(python, "build", "--data", str(rows), "--plan", str(plan), "--path", path))
    version = str(config.target - 1)
    at = run_json(delta_cmd(python, "commit-time", "--table-path", path, "--version", version))
    return path, str(at["timestamp_ms"])


def _value(mode: str, config: TravelConfig, time_millis: int) -> str:
    if mode == SNAPSHOT:
        return str(config.target)
    if mode == TIMESTAMP:
        return str(time_millis)
    return TAG_NAME


def run(config: TravelConfig) -> TravelReport:
    log(f"time travel: writing {config.commits} appends of {config.rows:,} rows ...")
    path, time_millis, files = _build(config)
    files_json = config.workdir / "travel-files.json"
    files_json.write_text(json.dumps(files))
    contenders = [SHOAL] if config.pypaimon_python is None else [SHOAL, PYPAIMON]
    delta: tuple[str, str] | None = None
    if config.deltalake_python is not None:
        delta = _build_delta(config)
        contenders.append(DELTALAKE)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    floor: list[dict[str, Any]] = []
    for r in range(config.repeats):
        log(f"time travel, round {r + 1}/{config.repeats} ...")
        for mode in MODES:
            value = _value(mode, config, time_millis)
            for name in rotate(contenders, r):
                if name == SHOAL:
                    cmd = worker_cmd("shoal-travel", "--table-path", path, mode, value)
                elif name == DELTALAKE:
                    if mode == TAG:
                        continue  # Delta Lake has no tags
                    assert config.deltalake_python is not None
                    assert delta is not None
                    by, at = ("version", str(config.target - 1))
                    if mode == TIMESTAMP:
                        by, at = ("timestamp", delta[1])
                    cmd = delta_cmd(
                        config.deltalake_python, "travel", "--table-path", delta[0], by, at
                    )
                else:
                    assert config.pypaimon_python is not None
                    cmd = pypaimon_cmd(
                        config.pypaimon_python, "travel", "--table-path", path, mode, value
                    )
                runs.setdefault((mode, name), []).append(run_json(cmd))
        floor.append(run_json(worker_cmd("raw-probe", "--files", str(files_json))))
    report = TravelReport(config.commits, config.rows, config.target, config.repeats, len(files))
    expected = config.target * config.rows
    for (mode, name), measured in runs.items():
        report.plan.setdefault(mode, {})[name] = Spread.of([m["plan_s"] for m in measured])
        report.plan_and_read.setdefault(mode, {})[name] = Spread.of(
            [m["plan_s"] + m["read_s"] for m in measured]
        )
        wrong = {m["rows"] for m in measured} - {expected}
        if wrong:
            report.notes.append(f"{name} by {mode} read {sorted(wrong)} rows, not {expected:,}")
    report.floor_read = Spread.of([f["read_s"] for f in floor])
    report.ratios = _ratios(report)
    return report


def _ratios(report: TravelReport) -> list[Ratio]:
    floor = report.floor_read.median if report.floor_read else None
    out = []
    for mode in MODES:
        plan, both = report.plan[mode], report.plan_and_read[mode]
        paimon_plan = plan[PYPAIMON].median if PYPAIMON in plan else None
        shoal_both = both[SHOAL].median
        out.append(
            Ratio(
                f"by {mode}: shoal cold plan / pypaimon cold plan",
                plan[SHOAL].median,
                paimon_plan,
                None,  # no target set; the latest snapshot's is 0.15 after 200 commits
            )
        )
        out.append(
            Ratio(
                f"by {mode}: shoal cold plan + read / raw pyarrow.dataset read",
                shoal_both,
                floor,
                None,
            )
        )
        out.append(
            Ratio(
                f"by {mode}: shoal read / raw pyarrow.dataset read",
                shoal_both - plan[SHOAL].median,
                floor,
                1.15,
            )
        )
        if DELTALAKE in report.plan[SNAPSHOT]:
            delta = both.get(DELTALAKE)
            out.append(
                Ratio(
                    f"by {mode}: shoal cold plan + read / deltalake's",
                    shoal_both,
                    None if delta is None else delta.median,
                    None,
                    note=None if delta is not None else "Delta Lake has no tags",
                )
            )
    return out


def render(report: TravelReport) -> list[str]:
    contenders = list(report.plan[SNAPSHOT])  # every contender travels by snapshot
    header = [f"{name} {what}" for name in contenders for what in ("plan", "plan + read")]
    lines = [
        "## Time travel: by snapshot id, timestamp and tag",
        "",
        f"Workload: an append table of {report.commits} appends of "
        f"{report.rows_per_commit:,} rows (the small-appends table), written by shoal; read "
        f"as of snapshot {report.target} ({report.files} data files, "
        f"{report.target * report.rows_per_commit:,} rows) by its id, by its commit time "
        "(`scan.timestamp-millis`: the latest snapshot committed at or before it) and by "
        "a tag on it. Each measurement is a fresh process: open the table by path, "
        "resolve the snapshot, plan, read every split to one Arrow table. pypaimon reads "
        "the same table with the same options; deltalake reads a Delta table of the same "
        "appends written by deltalake, as of the same version, by its number "
        "(`DeltaTable(path, version=...)`) and by its commit time (`load_as_version`), "
        "its plan being the log replay up to the file list; the floor reads the snapshot's "
        f"data files with `pyarrow.dataset`, given the list. {report.repeats} rounds: "
        "median [min, max], milliseconds.",
        "",
        _row("by", [*header, "floor read"]),
        _row("---", ["---:"] * (len(header) + 1)),
    ]
    for mode in MODES:
        cells = []
        for name in contenders:
            plan, both = report.plan[mode].get(name), report.plan_and_read[mode].get(name)
            cells += ["no tags", "no tags"] if plan is None else [_spread(plan), _spread(both)]
        lines.append(_row(mode, [*cells, _spread(report.floor_read)]))
    lines += [
        "",
        *ratio_table(report.ratios),
        "",
        "pypaimon 2.1.0 resolves all three (`table.copy({'scan.snapshot-id': ...})`, "
        "`scan.timestamp-millis`, `scan.tag-name`); Delta Lake has versions and commit "
        "times but no tags.",
    ]
    if report.notes:
        lines += ["", *(f"- {note}" for note in report.notes)]
    return lines


def to_json(report: TravelReport) -> dict[str, Any]:
    def ms(s: Spread | None) -> float | None:
        return None if s is None else s.median * 1000

    return {
        "commits": report.commits,
        "target": report.target,
        "files": report.files,
        "plan_ms": {m: {n: ms(s) for n, s in c.items()} for m, c in report.plan.items()},
        "plan_and_read_ms": {
            m: {n: ms(s) for n, s in c.items()} for m, c in report.plan_and_read.items()
        },
        "floor_read_ms": ms(report.floor_read),
        "ratios": [
            {"label": r.label, "value": r.value, "target": r.target, "note": r.note}
            for r in report.ratios
        ],
    }
