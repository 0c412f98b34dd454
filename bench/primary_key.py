"""The primary-key workload: upserts into a bucketed primary-key table, then a
real-time (merged) read and a full compaction, side by side with pypaimon and with
raw pyarrow doing the same file I/O without any merging.

Upserts: one long-lived process per table, driven one commit at a time in a rotating
order. Reads and compactions: a fresh process per measurement, rotating too; each
shoal compaction runs on its own copy of the table, so every repeat starts from the
same uncompacted state.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import data
from bench.procs import CommitSession, interleave, log, pypaimon_cmd, rotate, run_json, worker_cmd
from bench.report import Ratio
from bench.stats import CommitStats, Spread

SHOAL, PYPAIMON, FLOOR = "shoal", "pypaimon 2.1.0", "pyarrow floor"
PARTIAL = "shoal, partial-update"  # the same upserts merged by the partial-update engine
TABLE = "bench.pk"
NOT_SUPPORTED = "not supported"


@dataclass(frozen=True, slots=True)
class PkConfig:
    batches: int
    rows: int
    repeats: int
    seed: int
    workdir: Path
    pypaimon_python: Path | None  # None: leave pypaimon out
    buckets: int = 4
    more_buckets: int = 16  # the same data in more buckets: the merge's memory must not grow

    @property
    def wide(self) -> str:
        """The name of the shoal table with ``more_buckets``."""
        return f"shoal, {self.more_buckets} buckets"


@dataclass(slots=True)
class PkResult:
    """What one contender measured; None where it does not take part."""

    name: str
    buckets: int | None = None
    upsert: CommitStats | None = None
    plan: Spread | None = None
    read: Spread | None = None  # plan + read (the floor: its read, with nothing to plan)
    rows: int | None = None
    files: int | None = None
    read_rss_before: float | None = None  # MiB, before the clock started
    read_rss: Spread | None = None  # MiB, peak of the reading process
    compact: Spread | None = None
    compact_note: str | None = None  # why there is no compaction
    compacted_files: int | None = None
    written_files: int | None = None
    compact_rss: Spread | None = None


@dataclass(slots=True)
class PkReport:
    batches: int
    rows_per_batch: int
    key_range: int
    distinct_keys: int
    file_rows: int
    repeats: int
    contenders: list[PkResult]
    ratios: list[Ratio]
    notes: list[str] = field(default_factory=list)


def _spread(runs: list[dict[str, Any]], key: str) -> Spread:
    return Spread.of([float(r[key]) for r in runs])


def _repeat(
    commands: dict[str, Callable[[int], dict[str, Any]]], repeats: int, what: str
) -> dict[str, list[dict[str, Any]]]:
    """Run each contender's probe ``repeats`` times, rotating the order every round."""
    order = list(commands)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in order}
    for r in range(repeats):
        log(f"{what}, round {r + 1}/{repeats} ...")
        for name in rotate(order, r):
            runs[name].append(commands[name](r))
    return runs


def _upserts(config: PkConfig, upserts: Path, work: Path) -> dict[str, CommitSession]:
    sessions: dict[str, CommitSession] = {}
    shoal_tables = (
        (SHOAL, config.buckets, "deduplicate", f"shoal-{config.buckets}"),
        (config.wide, config.more_buckets, "deduplicate", f"shoal-{config.more_buckets}"),
        (PARTIAL, config.buckets, "partial-update", "shoal-partial-update"),
    )
    for name, buckets, engine, directory in shoal_tables:
        sessions[name] = CommitSession(
            worker_cmd(
                "shoal-upsert",
                "--data",
                str(upserts),
                "--warehouse",
                str(work / directory),
                "--table",
                TABLE,
                "--bucket",
                str(buckets),
                "--merge-engine",
                engine,
            ),
            work / f"{directory}-upsert.log",
        )
    if config.pypaimon_python is not None:
        sessions[PYPAIMON] = CommitSession(
            pypaimon_cmd(
                config.pypaimon_python,
                "upsert",
                "--data",
                str(upserts),
                "--warehouse",
                str(work / "pypaimon"),
                "--table",
                TABLE,
                "--primary-key",
                data.PRIMARY_KEY,
                "--bucket",
                str(config.buckets),
            ),
            work / "pypaimon-upsert.log",
        )
    return sessions


def run(config: PkConfig) -> PkReport:
    work = config.workdir / "primary-key"
    work.mkdir(parents=True, exist_ok=True)
    upserts = work / "upserts.arrow"
    counts = data.write_upserts(upserts, config.batches, config.rows, config.seed)
    results = {
        SHOAL: PkResult(SHOAL, config.buckets),
        PYPAIMON: PkResult(PYPAIMON, config.buckets, compact_note=NOT_SUPPORTED),
        FLOOR: PkResult(FLOOR),
        config.wide: PkResult(config.wide, config.more_buckets),
        PARTIAL: PkResult(PARTIAL, config.buckets),
    }
    python = config.pypaimon_python
    if python is None:
        del results[PYPAIMON]

    # --- upserts: one long-lived process per table, interleaved commit by commit -------------
    sessions = _upserts(config, upserts, work)
    log(f"{config.batches} upserts each, interleaved: {', '.join(sessions)} ...")
    finished = interleave(sessions, config.batches)
    for name, session in sessions.items():
        results[name].upsert = CommitStats.of(session.latencies)
    paths = {name: str(done["table_path"]) for name, done in finished.items()}

    from bench.pk_workloads import shoal_data_files

    files_json = work / "shoal-files.json"
    files_json.write_text(json.dumps(shoal_data_files(paths[SHOAL])))

    # --- real-time read: a fresh process each, repeated, interleaved --------------------------
    def shoal_read(name: str) -> Callable[[int], dict[str, Any]]:
        return lambda _: run_json(worker_cmd("shoal-pk-read", "--table-path", paths[name]))

    reads: dict[str, Callable[[int], dict[str, Any]]] = {
        SHOAL: shoal_read(SHOAL),
        FLOOR: lambda _: run_json(worker_cmd("raw-read", "--files", str(files_json))),
        config.wide: shoal_read(config.wide),
        PARTIAL: shoal_read(PARTIAL),
    }
    if python is not None:
        reads[PYPAIMON] = lambda _: run_json(
            pypaimon_cmd(python, "probe", "--table-path", paths[PYPAIMON])
        )
    read_runs = _repeat(reads, config.repeats, "real-time read")

    # --- full compaction: a fresh process and a fresh copy of the table each ------------------
    def shoal_compact(name: str) -> Callable[[int], dict[str, Any]]:
        def once(r: int) -> dict[str, Any]:
            slug = "".join(c if c.isalnum() else "-" for c in name)
            copy = work / f"compact-{slug}-{r}"
            shutil.copytree(paths[name], copy)
            try:
                return run_json(worker_cmd("shoal-compact", "--table-path", str(copy)))
            finally:
                shutil.rmtree(copy, ignore_errors=True)

        return once

    def raw_rewrite(r: int) -> dict[str, Any]:
        out = work / f"rewrite-{r}"
        try:
            return run_json(
                worker_cmd("raw-rewrite", "--files", str(files_json), "--out", str(out))
            )
        finally:
            shutil.rmtree(out, ignore_errors=True)

    compactions = {
        SHOAL: shoal_compact(SHOAL),
        FLOOR: raw_rewrite,
        config.wide: shoal_compact(config.wide),
        PARTIAL: shoal_compact(PARTIAL),
    }
    compact_runs = _repeat(compactions, config.repeats, "full compaction")

    notes = _collect(results, read_runs, compact_runs, counts)
    return PkReport(
        batches=config.batches,
        rows_per_batch=config.rows,
        key_range=data.key_range(config.batches, config.rows),
        distinct_keys=counts.distinct_keys,
        file_rows=counts.batch_keys,
        repeats=config.repeats,
        contenders=list(results.values()),
        ratios=_ratios(results, config.wide),
        notes=notes,
    )


def _collect(
    results: dict[str, PkResult],
    read_runs: dict[str, list[dict[str, Any]]],
    compact_runs: dict[str, list[dict[str, Any]]],
    counts: data.UpsertCounts,
) -> list[str]:
    """Fill in the probes' measurements; notes on any row count that is not as expected."""
    notes = []
    for name, runs in read_runs.items():
        result = results[name]
        if "plan_s" in runs[0]:
            result.plan = _spread(runs, "plan_s")
            result.read = Spread.of([r["plan_s"] + r["read_s"] for r in runs])
        else:
            result.read = _spread(runs, "read_s")
        result.rows = runs[0]["rows"]
        result.files = runs[0]["files"]
        result.read_rss_before = min(float(r["rss_before_mb"]) for r in runs)
        result.read_rss = _spread(runs, "rss_peak_mb")
        expected = counts.batch_keys if name == FLOOR else counts.distinct_keys
        if any(r["rows"] != expected for r in runs):
            notes.append(f"{name}: read {result.rows:,} rows, expected {expected:,}")
    for name, runs in compact_runs.items():
        result = results[name]
        result.compact = _spread(runs, "compact_s")
        result.compacted_files = runs[0]["compacted_files"]
        result.written_files = runs[0]["written_files"]
        result.compact_rss = _spread(runs, "rss_peak_mb")
        expected = counts.batch_keys if name == FLOOR else counts.distinct_keys
        if any(r["rows"] != expected for r in runs):
            rows = runs[0]["rows"]
            notes.append(f"{name}: {rows:,} rows after compaction, expected {expected:,}")
    return notes


def _ratios(results: dict[str, PkResult], wide: str) -> list[Ratio]:
    shoal, floor, wider = results[SHOAL], results[FLOOR], results[wide]
    paimon = results.get(PYPAIMON)

    def median(s: Spread | CommitStats | None) -> float | None:
        return s.median if s is not None else None

    return [
        Ratio(
            "shoal real-time read (plan + merged read) / raw pyarrow read of the same files",
            median(shoal.read),
            median(floor.read),
            2.0,
        ),
        Ratio(
            "shoal partial-update real-time read / raw pyarrow read of the same data",
            median(results[PARTIAL].read),
            median(floor.read),
            2.0,
        ),
        Ratio(
            "shoal full compaction / raw pyarrow read + rewrite of the same files",
            median(shoal.compact),
            median(floor.compact),
            2.5,
        ),
        Ratio(
            "shoal real-time read / pypaimon real-time read",
            median(shoal.read),
            median(paimon.read) if paimon else None,
            None,
        ),
        Ratio(
            "shoal upsert median / pypaimon upsert median",
            median(shoal.upsert),
            median(paimon.upsert) if paimon else None,
            None,
        ),
        Ratio(
            f"shoal real-time read peak RSS, {wider.buckets} buckets / {shoal.buckets} buckets",
            median(wider.read_rss),
            median(shoal.read_rss),
            1.05,
        ),
        Ratio(
            f"shoal full compaction peak RSS, {wider.buckets} buckets / {shoal.buckets} buckets",
            median(wider.compact_rss),
            median(shoal.compact_rss),
            None,
        ),
        Ratio(
            "pypaimon full compaction",
            None,
            None,
            None,
            note="not supported: pypaimon 2.1.0 has no compaction API",
        ),
    ]
