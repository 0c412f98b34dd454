"""The event-time compaction benchmark: partial compaction against a full one.

A primary-key table of ``rows`` rows over 8 buckets, written in ``commits`` upserts
(one per simulated hour, ``late`` of each commit's rows up to two hours late, so
each file's event times start a little before its hour). Then, each on a fresh copy
of the table and in a fresh process: a full compaction, and an event-time compaction
whose threshold selects about a quarter of the files. Reported: time, bytes
rewritten, files selected, and the read-optimized freshness afterwards.

``python -m bench.event_time measure PATH STRATEGY THRESHOLD_MS`` is the probe.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench.procs import log, run_json

START = datetime(2026, 11, 1, tzinfo=UTC)
HOUR_MS = 3_600_000
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("event_time", pa.timestamp("ms", tz="UTC")),
        ("user", pa.string()),
        ("amount", pa.float64()),
    ]
)


@dataclass(frozen=True, slots=True)
class EventTimeConfig:
    rows: int = 1_000_000
    commits: int = 40
    late: float = 0.10
    selected_share: float = 0.25
    repeats: int = 3
    seed: int = 20261101


def build(path: Path, config: EventTimeConfig) -> int:
    """Write the table; returns the threshold (epoch ms) selecting about
    ``selected_share`` of the files."""
    import shoal

    rng = np.random.default_rng(config.seed)
    table = shoal.Catalog(str(path)).create_table(
        "bench.events",
        SCHEMA,
        primary_keys=["id"],
        options={
            "bucket": "8",
            "compaction.event-time.field": "event_time",
            "write-only": "true",
        },
    )
    per_commit = config.rows // config.commits
    start_ms = int(START.timestamp() * 1000)
    for hour in range(config.commits):
        ids = rng.integers(0, config.rows, per_commit)
        offsets = rng.integers(0, HOUR_MS, per_commit)
        late = rng.random(per_commit) < config.late
        offsets = np.where(late, offsets - rng.integers(0, 2 * HOUR_MS, per_commit), offsets)
        times = start_ms + hour * HOUR_MS + offsets
        table.upsert(
            pa.table(
                {
                    "id": ids,
                    "event_time": pa.array(times, pa.timestamp("ms", tz="UTC")),
                    "user": [f"u{i % 997}" for i in ids],
                    "amount": rng.random(per_commit) * 100,
                },
                schema=SCHEMA,
            )
        )
    # A file's events start at most two hours before its own hour: a threshold at the
    # end of hour k selects the files of the commits up to about k + 2.
    chosen_commits = int(config.commits * config.selected_share)
    return start_ms + (chosen_commits - 2) * HOUR_MS


def measure(path: str, strategy: str, threshold_ms: int) -> dict[str, Any]:
    """One compaction in this process, timed; with what it rewrote."""
    import shoal

    table = shoal.open_table(path)
    files = table.system_table("files")
    paths, byte_sizes = files["file_path"].to_pylist(), files["file_size_in_bytes"].to_pylist()
    sizes = dict(zip(paths, byte_sizes, strict=True))
    started = time.perf_counter()
    if strategy == "full":
        result = table.compact("full")
    else:
        result = table.compact("event-time", event_time_threshold=threshold_ms)
    elapsed = time.perf_counter() - started
    after = set(table.system_table("files")["file_path"].to_pylist())
    rewritten = [p for p in sizes if p not in after]
    snapshot = table.latest_snapshot()
    watermark = (snapshot.properties or {}).get("shoal.read-optimized-watermark")
    return {
        "seconds": elapsed,
        "files_before": len(sizes),
        "files_rewritten": len(rewritten),
        "bytes_before": sum(sizes.values()),
        "bytes_rewritten": sum(sizes[p] for p in rewritten),
        "compacted_files": result.compacted_files,
        "watermark_ms": int(watermark) if watermark is not None else None,
    }


def run(config: EventTimeConfig, workdir: Path) -> dict[str, Any]:
    """Build once, then time both compactions on fresh copies, interleaved."""
    base = workdir / "event-time-base"
    log(f"event-time: writing {config.rows:,} rows in {config.commits} commits")
    threshold = build(base, config)
    table_path = base / "bench.db" / "events"
    runs: dict[str, list[dict[str, Any]]] = {"full": [], "event-time": []}
    for repeat in range(config.repeats):
        order = ["full", "event-time"] if repeat % 2 == 0 else ["event-time", "full"]
        for strategy in order:
            copy = workdir / f"event-time-{strategy}-{repeat}"
            shutil.copytree(table_path, copy)
            cmd = [sys.executable, "-m", "bench.event_time", "measure", str(copy), strategy]
            runs[strategy].append(run_json([*cmd, str(threshold)]))
            shutil.rmtree(copy, ignore_errors=True)
    return {"config": config, "threshold_ms": threshold, "runs": runs}


def render(done: dict[str, Any]) -> list[str]:
    """The Markdown section of the report."""
    config: EventTimeConfig = done["config"]
    runs = done["runs"]

    def median(strategy: str, key: str) -> float:
        return float(statistics.median(r[key] for r in runs[strategy]))

    def spread(strategy: str) -> str:
        times = [r["seconds"] * 1000 for r in runs[strategy]]
        return f"{statistics.median(times):.0f} [{min(times):.0f}, {max(times):.0f}]"

    full_s, et_s = median("full", "seconds"), median("event-time", "seconds")
    bytes_share = median("event-time", "bytes_rewritten") / median("full", "bytes_rewritten")
    files_share = median("event-time", "files_rewritten") / median("full", "files_rewritten")
    time_share = et_s / full_s
    threshold = datetime.fromtimestamp(done["threshold_ms"] / 1000, UTC)

    def watermark(strategy: str) -> str:
        value = runs[strategy][0]["watermark_ms"]
        if value is None:
            return "-"
        return datetime.fromtimestamp(value / 1000, UTC).strftime("%Y-%m-%d %H:%M")

    return [
        "## Event-time compaction",
        "",
        f"Workload: a primary-key table of {config.rows:,} rows in 8 buckets, written in "
        f"{config.commits} upserts (one per simulated hour from {START:%Y-%m-%d %H:%M} UTC, "
        f"{config.late:.0%} of each commit's rows up to two hours late), then a full "
        "compaction and an event-time compaction with the threshold at "
        f"{threshold:%Y-%m-%d %H:%M} UTC, each on a fresh copy in a fresh process; "
        f"{config.repeats} repeats, interleaved: median [min, max]. Times in milliseconds.",
        "",
        "| metric | full | event-time |",
        "| --- | ---: | ---: |",
        f"| compaction time | {spread('full')} | {spread('event-time')} |",
        f"| files rewritten | {median('full', 'files_rewritten'):,.0f} "
        f"| {median('event-time', 'files_rewritten'):,.0f} |",
        f"| bytes rewritten | {median('full', 'bytes_rewritten'):,.0f} "
        f"| {median('event-time', 'bytes_rewritten'):,.0f} |",
        f"| read-optimized watermark after | {watermark('full')} | {watermark('event-time')} |",
        "",
        "| ratio | value | target | met |",
        "| --- | ---: | ---: | :---: |",
        f"| event-time / full, files rewritten | {files_share:.2f} | - | - |",
        f"| event-time / full, bytes rewritten | {bytes_share:.2f} | - | - |",
        f"| event-time / full, time | {time_share:.2f} | ≤ {_time_target(files_share):.2f} "
        f"| {'yes' if time_share <= _time_target(files_share) else '**no**'} |",
        "",
        "How it is measured (`python -m bench --workload event-time`; code in "
        "`bench/event_time.py`):",
        "",
        "- The table is written once by shoal with `write-only` (no compaction while "
        "writing), so every bucket holds one level-0 file per commit.",
        "- Each measurement copies the table (not timed), opens it in a fresh process and "
        "times `table.compact('full')` or `table.compact('event-time', "
        "event_time_threshold=...)`, planning included.",
        "- The target: time proportional to what is selected, at most 0.35 of the full "
        "compaction's time when a quarter of the files is selected (scaled by the share "
        "selected in this run).",
        "",
    ]


def _time_target(files_share: float) -> float:
    """0.35 of the full time for a quarter of the files, scaled to the share selected."""
    return 0.35 * files_share / 0.25


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "measure":
        print(json.dumps(measure(argv[1], argv[2], int(argv[3]))))
        return 0
    raise SystemExit("usage: python -m bench.event_time measure PATH STRATEGY THRESHOLD_MS")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
