"""The cleanup workloads: snapshot expiration and orphan file removal, side by side with
deltalake and with a floor that does only the file system work (and, for expiration,
the metadata decoding) the operation cannot avoid.

One table of ``commits`` commits (small appends into a table partitioned by ``dt``;
every 20th commit, from the 11th, overwrites one partition, so that files get deleted)
is written once by shoal and once by deltalake, then every measurement runs in a fresh
process on a fresh copy of it (the copy is not timed), repeated with the contenders
interleaved in a rotating order. What each run deleted is found by listing the copy
before and after, outside the clock.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import fastavro

from bench import data
from bench.delta_env import DELTALAKE_VERSION, delta_cmd
from bench.paimon_env import PYPAIMON_VERSION
from bench.procs import log, rotate, run_json
from bench.report import Ratio
from bench.stats import Spread

SHOAL, DELTA, FLOOR = "shoal", f"deltalake {DELTALAKE_VERSION}", "floor"
DELTA_PLAIN = f"deltalake {DELTALAKE_VERSION}, plain vacuum"
PYPAIMON, PYICEBERG = f"pypaimon {PYPAIMON_VERSION}", "pyiceberg 0.12.0"
NO_EXPIRE = "cannot expire snapshots (no file deletion)"
NO_ORPHANS = "cannot remove orphan files (no file deletion)"
TABLE = "bench.cleanup"
OVERWRITE_EVERY, OVERWRITE_AT = 20, 10
STRAY_AGE = timedelta(days=2)
STRAY_BYTES = 1024
DELTA_ORPHAN_HOURS = 24  # shoal's default: now minus one day


@dataclass(frozen=True, slots=True)
class CleanupConfig:
    commits: int
    rows: int
    repeats: int
    retain: int
    strays: int
    seed: int
    workdir: Path
    deltalake_python: Path | None  # None: leave deltalake out


@dataclass(slots=True)
class CleanupResult:
    """What one contender measured; ``note`` says why it does not take part."""

    name: str
    seconds: Spread | None = None
    note: str | None = None
    deleted_data: int | None = None  # files deleted under the partition directories
    deleted_metadata: int | None = None  # files deleted anywhere else
    created: int | None = None  # files the run wrote
    versions_left: int | None = None
    rows_check: int | None = None  # rows read afterwards (untimed)
    parts: dict[str, Spread] = field(default_factory=dict)  # the floor's steps


@dataclass(slots=True)
class CleanupReport:
    workload: str  # "expire" or "orphans"
    commits: int
    rows_per_commit: int
    overwrites: int
    retain: int
    strays: int
    stray_layout: dict[str, str]  # contender -> where its strays are
    metadata_read: int  # files the floor reads and decodes (expiration)
    repeats: int
    filesystem: str  # where the tables were: "tmpfs", "ext4", ...
    contenders: list[CleanupResult]
    ratios: list[Ratio]
    notes: list[str] = field(default_factory=list)


def commit_plan(commits: int) -> list[str | None]:
    """Per commit: None for an append, or the partition it overwrites."""
    plan: list[str | None] = []
    for i in range(commits):
        if i % OVERWRITE_EVERY == OVERWRITE_AT:
            plan.append(data.PARTITIONS[(i // OVERWRITE_EVERY) % len(data.PARTITIONS)])
        else:
            plan.append(None)
    return plan


def _cleanup_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "bench.cleanup_workloads", *args]


# --- the prepared tables (written once per run, shared by both workloads) ---------------------
@dataclass(frozen=True, slots=True)
class Prepared:
    shoal: Path
    delta: Path | None


def prepare(config: CleanupConfig) -> Prepared:
    """The shoal and deltalake tables of the commit plan, written once per work directory
    and shape (in parallel: nothing is timed here)."""
    work = config.workdir
    marker = work / "prepared.json"
    shape = [config.commits, config.rows, config.seed, config.deltalake_python is not None]
    if marker.exists():
        known = json.loads(marker.read_text())
        if known["shape"] == shape:
            delta = Path(known["delta"]) if known["delta"] else None
            return Prepared(Path(known["shoal"]), delta)
    for stale in ("shoal", "delta"):
        shutil.rmtree(work / stale, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    appends = work / "commits.arrow"
    plan_file = work / "plan.json"
    data.write_batches(appends, config.commits, config.rows, config.seed)
    plan_file.write_text(json.dumps(commit_plan(config.commits)))
    jobs: dict[str, list[str]] = {
        "shoal": _cleanup_cmd(
            "shoal-build",
            "--data",
            str(appends),
            "--plan",
            str(plan_file),
            "--warehouse",
            str(work / "shoal"),
            "--table",
            TABLE,
        )
    }
    if config.deltalake_python is not None:
        jobs["delta"] = delta_cmd(
            config.deltalake_python,
            "build",
            "--data",
            str(appends),
            "--plan",
            str(plan_file),
            "--path",
            str(work / "delta" / "cleanup"),
        )
    log(f"cleanup: writing {config.commits} commits with {', '.join(jobs)} ...")
    with ThreadPoolExecutor(len(jobs)) as pool:
        done = dict(zip(jobs, pool.map(run_json, jobs.values()), strict=True))
    shoal_path = Path(done["shoal"]["table_path"])
    delta_path = Path(done["delta"]["table_path"]) if "delta" in done else None
    marker.write_text(
        json.dumps(
            {"shape": shape, "shoal": str(shoal_path), "delta": delta_path and str(delta_path)}
        )
    )
    return Prepared(shoal_path, delta_path)


def filesystem(path: Path) -> str:
    """The type of the file system ``path`` is on (from /proc/mounts), or "unknown"."""
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "unknown"
    resolved = str(path.resolve())
    best, kind = "", "unknown"
    for mount, fs in mounts:
        inside = resolved == mount or resolved.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, fs
    return kind


def _files(root: Path) -> set[str]:
    """Every file under ``root``, relative to it."""
    out: set[str] = set()
    for directory, _, names in os.walk(root):
        rel = os.path.relpath(directory, root)
        out.update(name if rel == "." else f"{rel}/{name}" for name in names)
    return out


def _is_data(rel: str) -> bool:
    return rel.startswith(f"{data.PARTITION_KEY}=")


@dataclass(frozen=True, slots=True)
class _Run:
    answer: dict[str, Any]
    deleted: set[str]
    created: set[str]


def _measure(source: Path, scratch: Path, command: Callable[[Path], list[str]]) -> _Run:
    """Run ``command`` (given the copy's path) on a fresh copy of ``source``; list the copy
    before and after, outside the clock."""
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(source, scratch)  # copy2: modification times come along
    try:
        before = _files(scratch)
        answer = run_json(command(scratch))
        after = _files(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return _Run(answer, before - after, after - before)


def _repeat(
    sources: dict[str, Path],
    commands: dict[str, Callable[[Path], list[str]]],
    repeats: int,
    work: Path,
    what: str,
) -> dict[str, list[_Run]]:
    order = list(commands)
    runs: dict[str, list[_Run]] = {name: [] for name in order}
    for r in range(repeats):
        log(f"{what}, round {r + 1}/{repeats} ...")
        for i, name in enumerate(rotate(order, r)):
            runs[name].append(_measure(sources[name], work / f"run-{i}", commands[name]))
    return runs


def _fill(result: CleanupResult, runs: list[_Run]) -> None:
    result.seconds = Spread.of([float(r.answer["seconds"]) for r in runs])
    first = runs[0]
    result.deleted_data = sum(1 for p in first.deleted if _is_data(p))
    result.deleted_metadata = len(first.deleted) - result.deleted_data
    result.created = len(first.created)
    for key in ("read_s", "unlink_s"):
        if key in first.answer:
            result.parts[key] = Spread.of([float(r.answer[key]) for r in runs])


def _not_taking_part(note: str) -> list[CleanupResult]:
    return [CleanupResult(PYPAIMON, note=note), CleanupResult(PYICEBERG, note=note)]


# --- snapshot expiration -----------------------------------------------------------------------
def _manifest_file_names(manifest_list: Path) -> list[str]:
    """The manifests a manifest list names."""
    records: list[dict[str, Any]] = list(
        fastavro.reader(io.BytesIO(manifest_list.read_bytes()))  # type: ignore[arg-type]
    )
    return [str(r["_FILE_NAME"]) for r in records]


def expire_reads(table: Path, retain: int) -> list[str]:
    """The metadata an expiration of all but the newest ``retain`` snapshots cannot do
    without, relative to the table: the snapshot files from the earliest to the oldest
    kept, their base and delta manifest lists (the manifests they name are the candidates
    for deletion), and the manifests named by the delta lists after the earliest (their
    DELETE entries name the data files to delete)."""
    ids = sorted(
        int(n.rsplit("-", 1)[1]) for n in os.listdir(table / "snapshot") if n.startswith("snap")
    )
    earliest, end = ids[0], ids[-1] - retain + 1
    reads: list[str] = []
    for snapshot_id in range(earliest, end + 1):
        name = f"snapshot/snapshot-{snapshot_id}"
        snapshot = json.loads((table / name).read_text())
        delta = f"manifest/{snapshot['deltaManifestList']}"
        reads += [name, f"manifest/{snapshot['baseManifestList']}", delta]
        if snapshot_id > earliest:
            reads += [f"manifest/{name}" for name in _manifest_file_names(table / delta)]
    return reads


def run_expire(config: CleanupConfig) -> CleanupReport:
    prepared = prepare(config)
    work = config.workdir / "expire"
    work.mkdir(parents=True, exist_ok=True)
    retain = str(config.retain)

    # what the floor is told: the files shoal deletes (one untimed run on a scratch copy)
    # and the metadata an expiration must decode
    scratch = _measure(
        prepared.shoal,
        work / "scratch",
        lambda p: _cleanup_cmd("shoal-expire", "--table-path", str(p), "--retain", retain),
    )
    floor_files = work / "floor-files.json"
    reads = expire_reads(prepared.shoal, config.retain)
    floor_files.write_text(json.dumps({"read": reads, "delete": sorted(scratch.deleted)}))

    sources = {SHOAL: prepared.shoal, FLOOR: prepared.shoal}
    commands: dict[str, Callable[[Path], list[str]]] = {
        SHOAL: lambda p: _cleanup_cmd("shoal-expire", "--table-path", str(p), "--retain", retain),
        FLOOR: lambda p: _cleanup_cmd(
            "floor-expire", "--root", str(p), "--files", str(floor_files)
        ),
    }
    python = config.deltalake_python
    if python is not None and prepared.delta is not None:
        sources[DELTA] = sources[DELTA_PLAIN] = prepared.delta
        commands[DELTA] = lambda p: delta_cmd(
            python, "expire", "--table-path", str(p), "--retain", retain
        )
        commands[DELTA_PLAIN] = lambda p: delta_cmd(
            python, "expire", "--table-path", str(p), "--retain", retain, "--plain"
        )
    runs = _repeat(sources, commands, config.repeats, work, "snapshot expiration")

    results = {name: CleanupResult(name) for name in runs}
    notes: list[str] = []
    for name, contender_runs in runs.items():
        result = results[name]
        _fill(result, contender_runs)
        answer = contender_runs[0].answer
        result.versions_left = answer.get("versions_left")
        result.rows_check = answer.get("rows_at_oldest_kept")
        if answer.get("older_gone") is False:
            notes.append(f"{name}: the version before the oldest kept is still readable")
        if any(r.deleted != contender_runs[0].deleted for r in contender_runs):
            notes.append(f"{name}: the repeats deleted different files")
    shoal_deleted = scratch.deleted
    if runs[FLOOR][0].deleted != shoal_deleted or runs[SHOAL][0].deleted != shoal_deleted:
        notes.append("shoal and the floor deleted different files")
    checks = {r.rows_check for r in results.values() if r.rows_check is not None}
    if len(checks) > 1:
        notes.append(f"the oldest kept versions hold different row counts: {sorted(checks)}")
    contenders = [results[n] for n in (SHOAL, DELTA, DELTA_PLAIN, FLOOR) if n in results]
    return CleanupReport(
        workload="expire",
        commits=config.commits,
        rows_per_commit=config.rows,
        overwrites=sum(1 for p in commit_plan(config.commits) if p is not None),
        retain=config.retain,
        strays=0,
        stray_layout={},
        metadata_read=len(reads),
        repeats=config.repeats,
        filesystem=filesystem(config.workdir),
        contenders=[*contenders, *_not_taking_part(NO_EXPIRE)],
        ratios=_expire_ratios(results),
        notes=notes,
    )


def _median(result: CleanupResult | None) -> float | None:
    return result.seconds.median if result is not None and result.seconds else None


def _expire_ratios(results: dict[str, CleanupResult]) -> list[Ratio]:
    shoal = _median(results[SHOAL])
    return [
        Ratio(
            "shoal expiration / floor (decode the metadata, unlink the files)",
            shoal,
            _median(results[FLOOR]),
            2.0,
        ),
        Ratio(
            "shoal expiration / deltalake (vacuum keeping the last versions, checkpoint, "
            "log cleanup)",
            shoal,
            _median(results.get(DELTA)),
            1.0,
        ),
        Ratio(
            "shoal expiration / deltalake with a plain vacuum (no regard to the kept versions)",
            shoal,
            _median(results.get(DELTA_PLAIN)),
            None,
        ),
        Ratio("pypaimon expiration", None, None, None, note=NO_EXPIRE),
        Ratio("pyiceberg expiration", None, None, None, note=NO_EXPIRE),
    ]


# --- orphan files ------------------------------------------------------------------------------
def scatter_strays(
    root: Path, directories: list[tuple[str, str]], count: int, seed: int
) -> list[str]:
    """Write ``count`` stray files round-robin over ``directories`` (relative directory,
    file name pattern with ``{}`` for a uuid), aged by ``STRAY_AGE``; their paths,
    relative to ``root``."""
    rng = random.Random(seed)
    aged = (datetime.now() - STRAY_AGE).timestamp()
    payload = bytes(STRAY_BYTES)
    strays = []
    for i in range(count):
        directory, pattern = directories[i % len(directories)]
        rel = f"{directory}/{pattern.format(uuid.UUID(int=rng.getrandbits(128)))}"
        path = root / rel
        path.write_bytes(payload)
        os.utime(path, (aged, aged))
        strays.append(rel)
    return strays


def shoal_stray_dirs(table: Path) -> list[tuple[str, str]]:
    buckets = sorted(
        str(p.relative_to(table)) for p in table.glob(f"{data.PARTITION_KEY}=*/bucket-*")
    )
    return [(b, "data-{}-0.parquet") for b in buckets] + [("manifest", "manifest-{}-0")]


def _delta_stray_dirs(table: Path) -> list[tuple[str, str]]:
    partitions = sorted(p.name for p in table.glob(f"{data.PARTITION_KEY}=*"))
    return [(p, "part-00000-{}-c000.snappy.parquet") for p in partitions]


def _orphans_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("shoal.cleanup.orphans") is not None


def run_orphans(config: CleanupConfig) -> CleanupReport:
    prepared = prepare(config)
    work = config.workdir / "orphans"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shoal_template = work / "shoal"
    shutil.copytree(prepared.shoal, shoal_template)
    shoal_dirs = shoal_stray_dirs(shoal_template)
    strays = {SHOAL: scatter_strays(shoal_template, shoal_dirs, config.strays, config.seed)}
    strays[FLOOR] = strays[SHOAL]
    layout = {SHOAL: _layout(shoal_dirs, config.strays)}
    strays_file = work / "strays.json"
    strays_file.write_text(json.dumps(strays[SHOAL]))

    sources = {SHOAL: shoal_template, FLOOR: shoal_template}
    commands: dict[str, Callable[[Path], list[str]]] = {
        FLOOR: lambda p: _cleanup_cmd(
            "floor-orphans", "--root", str(p), "--strays", str(strays_file)
        ),
    }
    results: dict[str, CleanupResult] = {}
    if _orphans_available():
        commands[SHOAL] = lambda p: _cleanup_cmd("shoal-orphans", "--table-path", str(p))
    else:
        results[SHOAL] = CleanupResult(SHOAL, note="not in this revision (no remove_orphan_files)")
    python = config.deltalake_python
    if python is not None and prepared.delta is not None:
        delta_template = work / "delta"
        shutil.copytree(prepared.delta, delta_template)
        delta_dirs = _delta_stray_dirs(delta_template)
        strays[DELTA] = scatter_strays(delta_template, delta_dirs, config.strays, config.seed)
        layout[DELTA] = _layout(delta_dirs, config.strays)
        sources[DELTA] = delta_template
        hours = str(DELTA_ORPHAN_HOURS)
        commands[DELTA] = lambda p: delta_cmd(
            python, "orphans", "--table-path", str(p), "--older-than-hours", hours
        )
    runs = _repeat(sources, commands, config.repeats, work, "orphan file removal")

    notes: list[str] = []
    for name, contender_runs in runs.items():
        result = results[name] = CleanupResult(name)
        _fill(result, contender_runs)
        result.rows_check = contender_runs[0].answer.get("rows")
        expected = set(strays[name])
        for run in contender_runs:
            wrong = run.deleted - expected
            missed = expected - run.deleted
            if wrong or missed:
                notes.append(
                    f"{name}: deleted {len(wrong)} files that are not strays "
                    f"(e.g. {sorted(wrong)[:3]}) and left {len(missed)} strays"
                )
                break
    contenders = [results[n] for n in (SHOAL, DELTA, FLOOR) if n in results]
    return CleanupReport(
        workload="orphans",
        commits=config.commits,
        rows_per_commit=config.rows,
        overwrites=sum(1 for p in commit_plan(config.commits) if p is not None),
        retain=config.retain,
        strays=config.strays,
        stray_layout=layout,
        metadata_read=0,
        repeats=config.repeats,
        filesystem=filesystem(config.workdir),
        contenders=[*contenders, *_not_taking_part(NO_ORPHANS)],
        ratios=_orphan_ratios(results),
        notes=notes,
    )


def _layout(directories: list[tuple[str, str]], count: int) -> str:
    per = count // len(directories)
    return f"about {per:,} in each of {', '.join(f'`{d}/`' for d, _ in directories)}"


def _orphan_ratios(results: dict[str, CleanupResult]) -> list[Ratio]:
    shoal = _median(results.get(SHOAL))
    return [
        Ratio(
            "shoal orphan removal / floor (walk, stat, unlink the strays)",
            shoal,
            _median(results[FLOOR]),
            1.5,
        ),
        Ratio(
            "shoal orphan removal / deltalake full vacuum", shoal, _median(results.get(DELTA)), 1.0
        ),
        Ratio("pypaimon orphan removal", None, None, None, note=NO_ORPHANS),
        Ratio("pyiceberg orphan removal", None, None, None, note=NO_ORPHANS),
    ]
