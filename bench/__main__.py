"""``python -m bench``: the small-appends benchmark; ``--quick`` for a short run."""

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

from bench import paimon_env
from bench.report import render
from bench.suite import Config, run

BENCH_DIR = Path(__file__).resolve().parent


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument(
        "--quick", action="store_true", help="40 appends and 3 repeats (under 2 minutes)"
    )
    p.add_argument("--appends", type=int, help="number of appends (default 200, quick 40)")
    p.add_argument("--rows", type=int, default=1000, help="rows per append (multiple of 4)")
    p.add_argument("--repeats", type=int, help="plan/read repeats (default 5, quick 3)")
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
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.profile:
        from bench.profiling import profile_appends

        print(profile_appends(args.profile, args.rows, args.seed))
        return 0
    if args.rows <= 0 or args.rows % 4:
        raise SystemExit("--rows must be a positive multiple of 4 (one quarter per partition)")
    appends = args.appends or (40 if args.quick else 200)
    repeats = args.repeats or (3 if args.quick else 5)
    python = None if args.no_pypaimon else paimon_env.ensure_pypaimon()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="shoal-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    try:
        report = run(Config(appends, args.rows, repeats, args.seed, workdir, python))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    report.notes.append(
        f"benchmark wall time {time.perf_counter() - started:.0f} s; 1-minute load average "
        f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after (other work on the "
        "machine shows up here)"
    )
    text = render(report)
    print(text)
    if str(args.output) != "-":
        args.output.write_text(text)
        raw = BENCH_DIR / "results" / "latest.json"
        raw.parent.mkdir(exist_ok=True)
        dump = asdict(report)
        dump["ratios"] = [
            {"label": r.label, "value": r.value, "target": r.target} for r in report.ratios
        ]
        raw.write_text(json.dumps(dump, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
