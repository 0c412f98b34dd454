"""``python -m bench``: the small-appends, time-travel, primary-key, cleanup (snapshot expiration,
orphan files), event-time, Spark, streaming, scale and ecosystem (row-level operations
against deltalake, DuckDB over the Arrow stream) benchmarks; ``--quick`` for a short run,
``--workload`` for one of them."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import delta_env, paimon_env
from bench.procs import log, pypaimon_cmd, run_json
from bench.report import Ratio, machine_info, render

BENCH_DIR = Path(__file__).resolve().parent
APPENDS, PRIMARY_KEY, EXPIRE, ORPHANS = "appends", "primary-key", "expire", "orphans"
EVENT_TIME = "event-time"
SPARK = "spark"
STREAMING = "streaming"
SCALE = "scale"
TIME_TRAVEL = "time-travel"
DELETION_VECTORS = "deletion-vectors"
ECOSYSTEM = "ecosystem"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument(
        "--quick",
        action="store_true",
        help="a short run of everything (about 6 minutes once the peers' virtual "
        "environments exist): 40 appends, 5 upserts of 20,000 rows, 2 or 3 repeats; "
        "1,000,000 rows on Spark, once; a stream of 200,000 rows in 5 files, once, and "
        "a demo of 2,000 events; scale tables of 2,000 and 20,000 files, with Java Paimon",
    )
    p.add_argument(
        "--workload",
        choices=[
            "all",
            APPENDS,
            TIME_TRAVEL,
            PRIMARY_KEY,
            DELETION_VECTORS,
            EXPIRE,
            ORPHANS,
            EVENT_TIME,
            SPARK,
            STREAMING,
            SCALE,
            ECOSYSTEM,
        ],
        default="all",
        help="run only this workload (default all; the report then holds only it)",
    )
    p.add_argument("--appends", type=int, help="number of appends (default 200, quick 40)")
    p.add_argument(
        "--et-rows",
        type=int,
        help="rows of the event-time compaction table (default 1,000,000, quick 200,000)",
    )
    p.add_argument("--rows", type=int, default=1000, help="rows per append (multiple of 4)")
    p.add_argument(
        "--spark-rows",
        type=int,
        help="rows the Spark workload reads and writes (default 10,000,000, quick 1,000,000)",
    )
    p.add_argument("--spark-repeats", type=int, help="Spark workload repeats (default 3, quick 1)")
    p.add_argument(
        "--repeats",
        type=int,
        help="plan/read repeats of the appends (5, quick 3) and time-travel (5, quick 2) workloads",
    )
    p.add_argument("--pk-batches", type=int, help="number of upserts (default 20, quick 5)")
    p.add_argument("--pk-rows", type=int, help="rows per upsert (default 50,000, quick 20,000)")
    p.add_argument(
        "--pk-repeats", type=int, default=3, help="primary-key read/compaction repeats (3)"
    )
    p.add_argument(
        "--cleanup-commits",
        type=int,
        default=200,
        help="commits of the expiration and orphan-file table (200)",
    )
    p.add_argument("--strays", type=int, default=5000, help="stray files for orphan cleanup")
    p.add_argument("--cleanup-repeats", type=int, help="cleanup repeats (default 5, quick 3)")
    p.add_argument("--no-deltalake", action="store_true", help="leave deltalake out")
    p.add_argument(
        "--cleanup-dir",
        type=Path,
        help="where the cleanup workloads' tables go (default: a temp dir on the tmpfs "
        "/dev/shm when there is one, else under the work directory)",
    )
    p.add_argument("--seed", type=int, default=20261101)
    p.add_argument("--workdir", type=Path, help="where tables go (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the tables after the run")
    p.add_argument("--no-pypaimon", action="store_true", help="leave pypaimon out")
    p.add_argument(
        "--output",
        type=Path,
        default=BENCH_DIR / "RESULTS.md",
        help="Markdown report (default bench/RESULTS.md); '-' for none",
    )
    p.add_argument(
        "--profile",
        type=int,
        metavar="N",
        help="instead: cProfile N shoal appends and print the top costs",
    )
    p.add_argument(
        "--profile-pk",
        action="store_true",
        help="instead: cProfile shoal's real-time read and full compaction of the "
        "primary-key workload (sized by --pk-batches/--pk-rows) and print the top costs",
    )
    p.add_argument(
        "--profile-cleanup",
        action="store_true",
        help="instead: cProfile shoal's snapshot expiration and orphan file removal on "
        "the cleanup table (sized by --cleanup-commits and --strays) and print the top costs",
    )
    return p


def _ratios_json(ratios: list[Ratio]) -> list[dict[str, Any]]:
    return [
        {"label": r.label, "value": r.value, "target": r.target, "note": r.note} for r in ratios
    ]


def _tmpfs_dir() -> Path | None:
    """A fresh directory on /dev/shm, or None. The cleanup workloads copy their tables
    (thousands of small files) before every measurement; on a disk that creates files
    slowly, the copies would take longer than everything measured."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        return None
    return Path(tempfile.mkdtemp(prefix="shoal-bench-cleanup-", dir=shm))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    pk_batches = args.pk_batches or (5 if args.quick else 20)
    pk_rows = args.pk_rows or (20_000 if args.quick else 50_000)
    if args.profile:
        from bench.profiling import profile_appends

        print(profile_appends(args.profile, args.rows, args.seed))
        return 0
    if args.profile_pk:
        from bench.profiling import profile_primary_key

        print(profile_primary_key(pk_batches, pk_rows, args.seed))
        return 0
    if args.profile_cleanup:
        from bench.cleanup_profile import profile_cleanup

        print(profile_cleanup(args.cleanup_commits, args.rows, args.strays, args.seed))
        return 0
    if args.rows <= 0 or args.rows % 4:
        raise SystemExit("--rows must be a positive multiple of 4 (one quarter per partition)")
    everything = [
        APPENDS,
        TIME_TRAVEL,
        PRIMARY_KEY,
        DELETION_VECTORS,
        EXPIRE,
        ORPHANS,
        EVENT_TIME,
        SPARK,
        STREAMING,
        SCALE,
        ECOSYSTEM,
    ]
    workloads = everything if args.workload == "all" else [args.workload]
    python = None if args.no_pypaimon else paimon_env.ensure_pypaimon()
    cleanup = EXPIRE in workloads or ORPHANS in workloads
    if cleanup and args.cleanup_commits <= 20:
        raise SystemExit("--cleanup-commits must be more than 20 (some of them overwrite)")
    with_delta = (
        cleanup or TIME_TRAVEL in workloads or ECOSYSTEM in workloads
    ) and not args.no_deltalake
    delta_python = delta_env.ensure_deltalake() if with_delta else None
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="shoal-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    cleanup_dir = (args.cleanup_dir or _tmpfs_dir() or workdir / "cleanup") if cleanup else None
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    sections: list[list[str]] = []
    dump: dict[str, Any] = {}
    try:
        if APPENDS in workloads:
            from bench.report import render_appends
            from bench.suite import Config, run

            appends = args.appends or (40 if args.quick else 200)
            repeats = args.repeats or (3 if args.quick else 5)
            report = run(Config(appends, args.rows, repeats, args.seed, workdir, python))
            sections.append(render_appends(report))
            dump[APPENDS] = {**asdict(report), "ratios": _ratios_json(report.ratios)}
        if TIME_TRAVEL in workloads:
            from bench import time_travel

            travel = time_travel.run(
                time_travel.TravelConfig(
                    commits=args.appends or (40 if args.quick else 200),
                    rows=args.rows,
                    repeats=args.repeats or (2 if args.quick else 5),
                    seed=args.seed,
                    workdir=workdir,
                    pypaimon_python=python,
                    deltalake_python=delta_python,
                )
            )
            sections.append(time_travel.render(travel))
            dump[TIME_TRAVEL] = time_travel.to_json(travel)
        if PRIMARY_KEY in workloads:
            from bench.pk_report import render_primary_key
            from bench.primary_key import PkConfig
            from bench.primary_key import run as run_pk

            pk = run_pk(PkConfig(pk_batches, pk_rows, args.pk_repeats, args.seed, workdir, python))
            sections.append(render_primary_key(pk))
            dump[PRIMARY_KEY] = {**asdict(pk), "ratios": _ratios_json(pk.ratios)}
        if DELETION_VECTORS in workloads:
            from bench import deletion_vectors

            dv_done = deletion_vectors.run(
                deletion_vectors.DvConfig.sized(args.quick, args.seed, workdir)
            )
            sections.append(deletion_vectors.render(dv_done))
            dump[DELETION_VECTORS] = {
                **dv_done,
                "ratios": _ratios_json(deletion_vectors.ratios(dv_done)),
            }
        if cleanup_dir is not None:
            from bench.cleanup import CleanupConfig, run_expire, run_orphans
            from bench.cleanup_report import render_expire, render_orphans

            config = CleanupConfig(
                commits=args.cleanup_commits,
                rows=args.rows,
                repeats=args.cleanup_repeats or (3 if args.quick else 5),
                retain=10,
                strays=args.strays,
                seed=args.seed,
                workdir=cleanup_dir,
                deltalake_python=delta_python,
            )
            for name, run_cleanup, render_cleanup in (
                (EXPIRE, run_expire, render_expire),
                (ORPHANS, run_orphans, render_orphans),
            ):
                if name in workloads:
                    done = run_cleanup(config)
                    sections.append(render_cleanup(done))
                    dump[name] = {**asdict(done), "ratios": _ratios_json(done.ratios)}
        if EVENT_TIME in workloads:
            from bench import event_time

            et_config = event_time.EventTimeConfig(
                rows=args.et_rows or (200_000 if args.quick else 1_000_000),
                commits=20 if args.quick else 40,
                repeats=2 if args.quick else 3,
                seed=args.seed,
            )
            et_done = event_time.run(et_config, workdir)
            sections.append(event_time.render(et_done))
            dump[EVENT_TIME] = {"threshold_ms": et_done["threshold_ms"], "runs": et_done["runs"]}
        if SPARK in workloads:
            from bench import spark_workloads
            from bench.spark_report import render_spark, spark_ratios

            spark_config = spark_workloads.SparkConfig.sized(
                args.spark_rows, args.spark_repeats, args.quick, args.seed, workdir
            )
            spark_done = spark_workloads.run(spark_config)
            sections.append(render_spark(spark_done))
            dump[SPARK] = {**spark_done, "ratios": _ratios_json(spark_ratios(spark_done))}
        if STREAMING in workloads:
            from bench import streaming
            from bench.streaming_report import render_streaming, streaming_ratios

            streaming_done = streaming.run(
                streaming.StreamingConfig.sized(args.quick, args.seed, workdir)
            )
            sections.append(render_streaming(streaming_done))
            dump[STREAMING] = {
                **streaming_done,
                "ratios": _ratios_json(streaming_ratios(streaming_done)),
            }
        if SCALE in workloads:
            from bench import scale
            from bench.scale_report import render_scale
            from bench.scale_targets import scale_ratios

            scale_done = scale.run(
                scale.ScaleConfig.sized(args.quick, args.seed, workdir, args.keep)
            )
            sections.append(render_scale(scale_done))
            dump[SCALE] = {
                **scale.to_json(scale_done),
                "ratios": _ratios_json(scale_ratios(scale_done.sizes)),
            }
        if ECOSYSTEM in workloads:
            from bench import ecosystem
            from bench.ecosystem_report import ecosystem_ratios, render_ecosystem

            eco_done = ecosystem.run(
                ecosystem.EcoConfig.sized(args.quick, args.seed, workdir, delta_python)
            )
            sections.append(render_ecosystem(eco_done))
            dump[ECOSYSTEM] = {**eco_done, "ratios": _ratios_json(ecosystem_ratios(eco_done))}
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
            if cleanup_dir is not None and args.cleanup_dir is None:
                shutil.rmtree(cleanup_dir, ignore_errors=True)
        elif cleanup_dir is not None:
            log(f"the cleanup tables are kept in {cleanup_dir}")
    versions = run_json(pypaimon_cmd(python, "version")) if python else None
    machine = machine_info(versions)
    if delta_python is not None:
        delta_versions = run_json(delta_env.delta_cmd(delta_python, "version"))
        machine["deltalake"] = delta_versions["deltalake"]
        machine["pyarrow (deltalake venv)"] = delta_versions["pyarrow"]
    notes = [
        f"benchmark wall time {time.perf_counter() - started:.0f} s; 1-minute load average "
        f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after (other work on the "
        "machine shows up here)"
    ]
    text = render(machine, sections, notes)
    print(text)
    if str(args.output) != "-":
        args.output.write_text(text)
        raw = BENCH_DIR / "results" / "latest.json"
        raw.parent.mkdir(exist_ok=True)
        raw.write_text(json.dumps({"machine": machine, **dump}, indent=2, default=str))
        try:  # the chart is a convenience: its failure is logged, the run still succeeds
            from bench.chart import draw

            chart = draw(json.loads(raw.read_text()), args.output.with_suffix(".png"))
        except Exception as e:
            log(f"the chart was not drawn: {type(e).__name__}: {e}")
        else:
            log(f"chart: {chart}" if chart else f"chart: nothing to draw from {raw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
