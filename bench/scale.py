"""The scale workload: how shoal's metadata operations grow with the table.

Three synthetic primary-key tables (``bench/scale_table.py``) share a history of
10,000 snapshots over 1,000 daily partitions and hold 10,000, 100,000 and 1,000,000
live data files. On each, in this order (so that every operation finds the table
as the one before left it): planning a scan of one partition, planning the full
scan, the freshness computation, creating and deleting a tag, committing one append
(1,000 upserted rows), and expiring the oldest tenth of the snapshots (1,000). Each run is a fresh
process (``bench/scale_worker.py``) that reports its time, its peak memory and the
metadata files it read; the operations that change nothing, and the tag pair and
the commit, are repeated. The tables are written two at a time (the largest alone)
before anything is measured, on a tmpfs where there is one.

Apache Paimon's Java implementation (1.0, ``bench/java_scale.py``) runs the two plans
and the expiration on the same tables, each run a fresh JVM, alternating with shoal's
runs. Expiration deletes files, so each of its runs, shoal's and Java's, works on its
own copy of the table as the commit left it.
"""

from __future__ import annotations

import functools
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import java_scale, scale_table
from bench.procs import log, run_json
from bench.stats import Spread

PLAN_FILTERED = "plan partition-filtered"
PLAN_FULL = "plan full"
COMMIT = "commit one append"
EXPIRE = "expire snapshots"
CREATE_TAG = "create tag"
DELETE_TAG = "delete tag"
FRESHNESS = "freshness"
OPS = (PLAN_FILTERED, PLAN_FULL, COMMIT, EXPIRE, CREATE_TAG, DELETE_TAG, FRESHNESS)
_WORKER_OPS = {
    PLAN_FILTERED: "plan-filtered",
    PLAN_FULL: "plan-full",
    COMMIT: "commit",
    EXPIRE: "expire",
    CREATE_TAG: "create-tag",
    DELETE_TAG: "delete-tag",
    FRESHNESS: "freshness",
}
JAVA_OPS = (PLAN_FILTERED, PLAN_FULL, EXPIRE)  # the operations Java Paimon runs too
_JAVA = {
    PLAN_FILTERED: java_scale.PLAN_FILTERED,
    PLAN_FULL: java_scale.PLAN_FULL,
    EXPIRE: java_scale.EXPIRE,
}


@dataclass(frozen=True, slots=True)
class ScaleConfig:
    sizes: tuple[int, ...]  # live data files of each table
    snapshots: int
    repeats: int  # runs of each repeated operation, at most
    repeat_budget_s: float  # no further run once an operation's runs took this long
    seed: int
    workdir: Path  # where the tables go (a tmpfs directory is preferred, see tables_dir)
    keep: bool = False

    @staticmethod
    def sized(quick: bool, seed: int, workdir: Path, keep: bool) -> ScaleConfig:
        if quick:
            return ScaleConfig((2_000, 20_000), 1_000, 2, 3.0, seed, workdir, keep)
        return ScaleConfig((10_000, 100_000, 1_000_000), 10_000, 3, 20.0, seed, workdir, keep)

    @property
    def partitions(self) -> int:
        return self.snapshots // 10

    @property
    def expired(self) -> int:
        """Snapshots the expiration removes: the oldest tenth."""
        return self.snapshots // 10


@dataclass(slots=True)
class OpResult:
    """One operation on one table: its runs, summarized."""

    name: str
    seconds: Spread
    peak_mib: float  # median over the runs
    metadata_files_read: int  # the most any run read
    reads: dict[str, int]  # of that run, by kind of file
    listings: int
    answer: dict[str, Any]  # what the first run found


@dataclass(slots=True)
class SizeResult:
    files: int
    snapshots: int
    partitions: int
    build: dict[str, Any]
    ops: dict[str, OpResult] = field(default_factory=dict)
    java: dict[str, OpResult] = field(default_factory=dict)  # Java Paimon's, of JAVA_OPS


@dataclass(slots=True)
class ScaleReport:
    sizes: list[SizeResult]
    repeats: int
    filesystem: str
    notes: list[str] = field(default_factory=list)


def tables_dir(workdir: Path) -> tuple[Path, bool]:
    """A fresh directory for the tables, on the tmpfs /dev/shm when there is one (the
    tables are tens of thousands of files, which a disk creates slowly); and whether it
    is there (then the caller removes it)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return Path(tempfile.mkdtemp(prefix="shoal-bench-scale-", dir=shm)), True
    path = workdir / "scale"
    path.mkdir(parents=True, exist_ok=True)
    return path, False


def _worker(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench.scale_worker", *args]


def _build(config: ScaleConfig, root: Path) -> dict[int, dict[str, Any]]:
    """Write every table: the largest in one process, the others one after another in
    a second (nothing is measured meanwhile)."""
    sizes = sorted(config.sizes)

    def build(files: int) -> dict[str, Any]:
        log(f"scale: writing the table of {files:,} files and {config.snapshots:,} snapshots")
        return run_json(
            _worker(
                "build",
                "--warehouse",
                str(root / f"files-{files}"),
                "--files",
                str(files),
                "--snapshots",
                str(config.snapshots),
                "--expire",
                str(config.expired),
                "--seed",
                str(config.seed),
            )
        )

    def lane(files: list[int]) -> dict[int, dict[str, Any]]:
        return {n: build(n) for n in files}

    with ThreadPoolExecutor(2) as pool:
        lanes = [pool.submit(lane, sizes[-1:]), pool.submit(lane, sizes[:-1])]
        built: dict[int, dict[str, Any]] = {}
        for done in lanes:
            built.update(done.result())
    return built


def _run(op: str, table: str, partitions: int) -> dict[str, Any]:
    return run_json(
        _worker("op", _WORKER_OPS[op], "--table-path", table, "--partitions", str(partitions))
    )


def _summarize(op: str, runs: list[dict[str, Any]]) -> OpResult:
    most = max(runs, key=lambda r: int(r["metadata_files_read"]))
    return OpResult(
        name=op,
        seconds=Spread.of([float(r["seconds"]) for r in runs]),
        peak_mib=statistics.median(float(r["peak_mib"]) for r in runs),
        metadata_files_read=int(most["metadata_files_read"]),
        reads={str(k): int(v) for k, v in most["reads"].items()},
        listings=int(most["listings"]),
        answer=dict(runs[0]["result"]),
    )


Runner = Callable[[], dict[str, Any]]
SHOAL, JAVA = "shoal", "java"


def _java_run(op: str, table: str, config: ScaleConfig) -> dict[str, Any]:
    """Java Paimon's run of ``op``, shaped like a worker's answer (it counts no reads)."""
    arg = scale_table.day(config.partitions // 2) if op == PLAN_FILTERED else str(config.expired)
    answer = java_scale.run(_JAVA[op], table, arg)
    return {**answer, "metadata_files_read": 0, "reads": {}, "listings": 0}


def _on_copy(table: str, run: Callable[[str], dict[str, Any]]) -> Runner:
    """``run`` on a fresh copy of the table (made and removed around the run, untimed)."""

    def copied() -> dict[str, Any]:
        copy = tempfile.mkdtemp(prefix="copy-", dir=Path(table).parent.parent.parent)
        target = str(Path(copy) / "table")
        try:
            shutil.copytree(table, target)
            return run(target)
        finally:
            shutil.rmtree(copy, ignore_errors=True)

    return copied


def _repeat(config: ScaleConfig, runners: dict[tuple[str, str], Runner]) -> dict[Any, OpResult]:
    """Run the runners in turn (shoal's and Java's alternate; a pair such as create and
    delete tag keeps the table as it was), up to ``repeats`` rounds while the rounds
    took less than the budget."""
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {key: [] for key in runners}
    first = next(iter(runners))
    spent = 0.0
    while len(runs[first]) < config.repeats and (not spent or spent < config.repeat_budget_s):
        for key, runner in runners.items():
            answer = runner()
            runs[key].append(answer)
            spent += float(answer["seconds"])
    return {key: _summarize(key[1], key_runs) for key, key_runs in runs.items()}


def _measure(config: ScaleConfig, files: int, table: str) -> SizeResult:
    """Every operation on the table, shoal's into ``ops``, Java Paimon's into ``java``."""
    result = SizeResult(files, config.snapshots, config.partitions, {})
    for ops in (
        (PLAN_FILTERED,),
        (PLAN_FULL,),
        (FRESHNESS,),
        (CREATE_TAG, DELETE_TAG),
        (COMMIT,),
        (EXPIRE,),
    ):
        log(f"scale: {' / '.join(ops)} on {files:,} files ...")
        runners: dict[tuple[str, str], Runner] = {}
        for op in ops:

            def shoal_run(path: str, op: str = op) -> dict[str, Any]:
                return _run(op, path, config.partitions)

            def java_run(path: str, op: str = op) -> dict[str, Any]:
                return _java_run(op, path, config)

            if op == EXPIRE:  # each run on its own copy of the table as the commit left it
                runners[SHOAL, op] = _on_copy(table, shoal_run)
                runners[JAVA, op] = _on_copy(table, java_run)
            else:
                runners[SHOAL, op] = functools.partial(shoal_run, table)
                if op in JAVA_OPS:
                    runners[JAVA, op] = functools.partial(java_run, table)
        for (side, op), summary in _repeat(config, runners).items():
            (result.ops if side == SHOAL else result.java)[op] = summary
    return result


def run(config: ScaleConfig) -> ScaleReport:
    from bench.cleanup import filesystem

    root, on_tmpfs = tables_dir(config.workdir)
    try:
        built = _build(config, root)
        sizes = []
        for files in sorted(config.sizes):
            build = built[files]
            result = _measure(config, files, str(build["table_path"]))
            result.build = build
            if not config.keep:
                shutil.rmtree(root / f"files-{files}", ignore_errors=True)
            sizes.append(result)
        report = ScaleReport(sizes, config.repeats, filesystem(root))
    finally:
        if config.keep:
            log(f"the scale tables are kept in {root}")
        elif on_tmpfs:
            shutil.rmtree(root, ignore_errors=True)
    report.notes.extend(_checks(report))
    return report


def _checks(report: ScaleReport) -> list[str]:
    """What does not add up in the results, as notes."""
    notes = []
    for size in report.sizes:
        live = size.build.get("live_files")
        if live != size.files:
            notes.append(f"the table of {size.files:,} files holds {live} live files")
        full = size.ops[PLAN_FULL].answer.get("files")
        if full != size.files:
            notes.append(f"planning the {size.files:,}-file table found {full} files")
        expired = size.ops[EXPIRE].answer
        if expired.get("expired_snapshots") != size.snapshots // 10:
            notes.append(f"expiration on {size.files:,} files removed {expired} snapshots")
        if expired.get("deleted_data_files") != size.build.get("empty_files_created"):
            notes.append(
                f"expiration on {size.files:,} files deleted {expired.get('deleted_data_files')} "
                f"data files, not the {size.build.get('empty_files_created')} expected"
            )
        for op in JAVA_OPS:
            if not same_answer(size, op):
                notes.append(
                    f"{op} on {size.files:,} files: shoal found {size.ops[op].answer}, "
                    f"Java Paimon {size.java[op].answer}"
                )
    return notes


# What shoal's and Java Paimon's runs of an operation must agree on.
ANSWER_KEYS = {
    PLAN_FILTERED: ("splits", "files"),
    PLAN_FULL: ("splits", "files"),
    EXPIRE: ("expired_snapshots", "deleted_data_files"),
}


def same_answer(size: SizeResult, op: str) -> bool:
    """Whether shoal and Java Paimon found the same splits and files (or expired the same
    snapshots and data files); False when either did not run."""
    if op not in size.ops or op not in size.java:
        return False
    ours, theirs = size.ops[op].answer, size.java[op].answer
    return all(ours.get(k) is not None and ours.get(k) == theirs.get(k) for k in ANSWER_KEYS[op])


def to_json(report: ScaleReport) -> dict[str, Any]:
    """The raw numbers: per size, per operation, the median time, median peak memory and
    the metadata files read; Java Paimon's median time and peak memory under ``java``."""
    return {
        "sizes": [
            {
                "files": size.files,
                "snapshots": size.snapshots,
                "partitions": size.partitions,
                "ops": {
                    name: {
                        "ms": op.seconds.median * 1000,
                        "peak_mib": op.peak_mib,
                        "metadata_files_read": op.metadata_files_read,
                    }
                    for name, op in ((n, size.ops[n]) for n in OPS)
                },
                "java": {
                    name: {"ms": op.seconds.median * 1000, "peak_mib": op.peak_mib}
                    for name, op in size.java.items()
                },
            }
            for size in report.sizes
        ]
    }
