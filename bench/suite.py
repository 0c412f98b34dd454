"""The small-appends workload, run for every contender.

Appends: one long-lived process per contender, driven one commit at a time in a
rotating order. Plan and read: a fresh process per measurement, rotating too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import data
from bench.procs import CommitSession, interleave, log, pypaimon_cmd, rotate, run_json, worker_cmd
from bench.report import ContenderResult, Ratio, Report
from bench.stats import CommitStats, Spread

SHOAL, PYPAIMON, FLOOR = "shoal", "pypaimon 2.1.0", "pyarrow floor"
TABLE = "bench.events"


@dataclass(frozen=True, slots=True)
class Config:
    appends: int
    rows: int
    repeats: int
    seed: int
    workdir: Path
    pypaimon_python: Path | None  # None: leave pypaimon out


def _metadata(table_path: str) -> tuple[int, int]:
    count = size = 0
    for sub in ("snapshot", "manifest"):
        for entry in (Path(table_path) / sub).iterdir():
            count += 1
            size += entry.stat().st_size
    return count, size


def run(config: Config) -> Report:
    work = config.workdir
    appends_file = work / "appends.arrow"
    data.write_batches(appends_file, config.appends, config.rows, config.seed)
    results = {name: ContenderResult(name) for name in (SHOAL, PYPAIMON, FLOOR)}
    if config.pypaimon_python is None:
        del results[PYPAIMON]

    # --- appends: one long-lived process per contender, interleaved commit by commit ---------
    sessions = {
        SHOAL: CommitSession(
            worker_cmd(
                "shoal-append",
                "--data",
                str(appends_file),
                "--warehouse",
                str(work / "shoal"),
                "--table",
                TABLE,
            ),
            work / "shoal-append.log",
        ),
        FLOOR: CommitSession(
            worker_cmd("raw-append", "--data", str(appends_file), "--dir", str(work / "raw")),
            work / "raw-append.log",
        ),
    }
    if config.pypaimon_python is not None:
        sessions[PYPAIMON] = CommitSession(
            pypaimon_cmd(
                config.pypaimon_python,
                "append",
                "--data",
                str(appends_file),
                "--warehouse",
                str(work / "pypaimon"),
                "--table",
                TABLE,
            ),
            work / "pypaimon-append.log",
        )
    order = [name for name in results if name in sessions]
    log(f"{config.appends} appends each, interleaved: {', '.join(order)} ...")
    finished = interleave({name: sessions[name] for name in order}, config.appends)
    for name, session in sessions.items():
        results[name].commit = CommitStats.of(session.latencies)
    shoal_path = finished[SHOAL]["table_path"]
    pypaimon_path = finished[PYPAIMON]["table_path"] if PYPAIMON in finished else None

    # --- cold plan and full read: repeated, interleaved, a fresh process each ----------------
    from bench.workloads import shoal_file_paths

    files_json = work / "shoal-files.json"
    files_json.write_text(json.dumps(shoal_file_paths(shoal_path)))
    probes: dict[str, list[dict[str, Any]]] = {name: [] for name in results}
    for r in range(config.repeats):
        log(f"plan and read, round {r + 1}/{config.repeats} ...")
        for name in rotate(order, r):
            if name == SHOAL:
                cmd = worker_cmd("shoal-probe", "--table-path", shoal_path)
            elif name == FLOOR:
                cmd = worker_cmd("raw-probe", "--files", str(files_json))
            else:
                assert config.pypaimon_python is not None
                assert pypaimon_path is not None
                cmd = pypaimon_cmd(config.pypaimon_python, "probe", "--table-path", pypaimon_path)
            probes[name].append(run_json(cmd))

    expected_rows = config.appends * config.rows
    notes = []
    for name, runs in probes.items():
        result = results[name]
        result.read = Spread.of([p["read_s"] for p in runs])
        if "plan_s" in runs[0]:
            result.plan = Spread.of([p["plan_s"] for p in runs])
            result.plan_and_read = Spread.of([p["plan_s"] + p["read_s"] for p in runs])
        result.rows = runs[0]["rows"]
        result.files = runs[0]["files"]
        if any(p["rows"] != expected_rows for p in runs):
            notes.append(f"{name} read {result.rows} rows, expected {expected_rows}")
    results[SHOAL].metadata_files, results[SHOAL].metadata_bytes = _metadata(shoal_path)
    if pypaimon_path is not None:
        results[PYPAIMON].metadata_files, results[PYPAIMON].metadata_bytes = _metadata(
            pypaimon_path
        )

    return Report(
        appends=config.appends,
        rows_per_append=config.rows,
        repeats=config.repeats,
        contenders=list(results.values()),
        ratios=_ratios(results),
        notes=notes,
    )


def _ratios(results: dict[str, ContenderResult]) -> list[Ratio]:
    shoal = results[SHOAL]
    floor = results[FLOOR]
    paimon = results.get(PYPAIMON)

    def commit(c: ContenderResult | None) -> float | None:
        return c.commit.median if c is not None and c.commit is not None else None

    def plan(c: ContenderResult | None) -> float | None:
        return c.plan.median if c is not None and c.plan is not None else None

    def read(c: ContenderResult | None) -> float | None:
        return c.read.median if c is not None and c.read is not None else None

    def both(c: ContenderResult | None) -> float | None:
        return c.plan_and_read.median if c is not None and c.plan_and_read is not None else None

    return [
        Ratio("shoal commit median / pypaimon commit median", commit(shoal), commit(paimon), 0.5),
        Ratio("shoal commit median / pyarrow write median", commit(shoal), commit(floor), 1.7),
        Ratio("shoal cold plan / pypaimon cold plan", plan(shoal), plan(paimon), 0.15),
        Ratio("shoal full read / raw pyarrow.dataset read", read(shoal), read(floor), 1.15),
        Ratio(
            "shoal cold plan + full read / raw pyarrow.dataset read", both(shoal), read(floor), None
        ),
        Ratio(
            "shoal cold plan + full read / pypaimon cold plan + full read",
            both(shoal),
            both(paimon),
            None,
        ),
    ]
