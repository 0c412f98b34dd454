"""The streaming section of the Markdown report: the Structured Streaming ingest
through the ``shoal`` sink against the batch write of the same rows and against Spark's
own Parquet file sink, and the freshness lag of ``shoal demo``'s downstream query."""

from __future__ import annotations

import statistics
from typing import Any

from bench.report import Ratio, ratio_table
from bench.spark_workloads import COMPRESSION, SPARK_CONF, TASKS
from bench.stats import Spread
from bench.streaming import (
    BATCH_K,
    BATCH_K_PK,
    BATCH_ONE,
    BATCH_ONE_PK,
    CONTENDERS,
    DURATIONS,
    PARQUET_STREAM,
    PK_BUCKETS,
    STREAM,
    STREAM_PK,
)

NAMES = {
    STREAM: "stream → shoal sink, append table",
    BATCH_ONE: "batch → shoal source, append table, 1 commit",
    BATCH_K: "batch → shoal source, append table, 1 commit per file",
    STREAM_PK: "stream → shoal sink, primary-key table (upsert)",
    BATCH_ONE_PK: "batch → shoal source, primary-key table, 1 commit",
    BATCH_K_PK: "batch → shoal source, primary-key table, 1 commit per file",
    PARQUET_STREAM: "stream → Spark's Parquet file sink (the floor)",
}
_DURATION_NAMES = {
    "triggerExecution": "whole micro-batch",
    "addBatch": "the sink's write and commit",
    "queryPlanning": "planning",
    "latestOffset": "listing the landing folder",
    "walCommit": "offset log",
}


def spreads(raw: dict[str, Any]) -> dict[str, Spread]:
    return {
        name: Spread.of([run["seconds"] for run in runs])
        for name, runs in raw["runs"].items()
        if runs
    }


def _median(found: dict[str, Spread], name: str) -> float | None:
    spread = found.get(name)
    return spread.median if spread is not None else None


def streaming_ratios(raw: dict[str, Any]) -> list[Ratio]:
    """Each stream's time over the batch writes' and over the Parquet stream's (no
    targets: they say what a micro-batch costs, not whether shoal is fast enough)."""
    found = spreads(raw)
    files = raw["config"]["files"]
    ratios = []
    for stream, one, per_file, kind in (
        (STREAM, BATCH_ONE, BATCH_K, "append"),
        (STREAM_PK, BATCH_ONE_PK, BATCH_K_PK, "primary key"),
    ):
        for other, label in (
            (per_file, f"batch, {files} commits"),
            (one, "batch, 1 commit"),
            (PARQUET_STREAM, "Parquet stream"),
        ):
            ratios.append(
                Ratio(
                    f"time, stream ({kind}) / {label}",
                    _median(found, stream),
                    _median(found, other),
                    None,
                )
            )
    return ratios


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _runs_median(runs: list[dict[str, Any]], key: str) -> Any:
    values = [run[key] for run in runs if run.get(key) is not None]
    return statistics.median(values) if values else None


def _count(value: Any) -> str:
    return "-" if value is None else f"{int(value):,}"


def _times_table(raw: dict[str, Any], found: dict[str, Spread]) -> list[str]:
    rows = raw["config"]["rows"]
    lines = [
        _row(
            [
                "contender",
                "time, ms",
                "rows/s",
                "micro-batches",
                "snapshots",
                "data files",
                "MiB written",
            ]
        ),
        _row(["---", *("---:" for _ in range(6))]),
    ]
    for name in CONTENDERS:
        spread, runs = found.get(name), raw["runs"].get(name, [])
        if spread is None:
            continue
        size = _runs_median(runs, "bytes")
        lines.append(
            _row(
                [
                    NAMES[name],
                    f"{spread.median * 1000:,.0f} [{spread.low * 1000:,.0f}, "
                    f"{spread.high * 1000:,.0f}]",
                    f"{rows / spread.median:,.0f}",
                    _count(_runs_median(runs, "micro_batches")),
                    _count(_runs_median(runs, "snapshots")),
                    _count(_runs_median(runs, "files")),
                    "-" if size is None else f"{size / 2**20:,.1f}",
                ]
            )
        )
    return lines


def _batch_parts(runs: list[dict[str, Any]]) -> dict[str, float]:
    parts = [run["batch_s"] for run in runs if run.get("batch_s")]
    return {key: statistics.median(p[key] for p in parts) for key in DURATIONS if parts}


def _micro_batch_table(raw: dict[str, Any]) -> list[str]:
    streams = [n for n in (STREAM, STREAM_PK, PARQUET_STREAM) if raw["runs"].get(n)]
    lines = [
        _row(["per micro-batch (median), ms", *(NAMES[n].split(" → ")[1] for n in streams)]),
        _row(["---", *("---:" for _ in streams)]),
    ]
    parts = {n: _batch_parts(raw["runs"][n]) for n in streams}
    for key in DURATIONS:
        cells = [f"{parts[n][key] * 1000:,.0f}" if key in parts[n] else "-" for n in streams]
        lines.append(_row([f"{_DURATION_NAMES[key]} (`{key}`)", *cells]))
    return lines


def _fixed_costs(raw: dict[str, Any], found: dict[str, Spread]) -> list[str]:
    """What one more commit costs a batch write, and what a micro-batch costs over a
    batch write's commit: a paragraph from the medians."""
    files = raw["config"]["files"]
    parts = []
    for stream, one, per_file, kind in (
        (STREAM, BATCH_ONE, BATCH_K, "append table"),
        (STREAM_PK, BATCH_ONE_PK, BATCH_K_PK, "primary-key table"),
    ):
        s, b1, bk = (_median(found, n) for n in (stream, one, per_file))
        if s is None or b1 is None or bk is None or files < 2:
            continue
        parts.append(
            f"{kind}: each commit past the first adds {(bk - b1) / (files - 1) * 1000:,.0f} ms "
            f"to the batch write ((batch in {files} commits - batch in 1) / {files - 1}); a "
            f"micro-batch of the stream takes {s / files * 1000:,.0f} ms, "
            f"{(s - bk) / files * 1000:,.0f} ms more than one of those commits"
        )
    return parts


def _why(raw: dict[str, Any], found: dict[str, Spread]) -> list[str]:
    files = raw["config"]["files"]
    rows = raw["config"]["rows"]
    costs = _fixed_costs(raw, found)
    parquet = raw["runs"].get(PARQUET_STREAM) or []
    parquet_batch = _batch_parts(parquet).get("triggerExecution")
    floor = (
        f" Spark's own Parquet sink takes {parquet_batch * 1000:,.0f} ms per micro-batch "
        "of the same file: the least a Spark sink costs here."
        if parquet_batch is not None
        else ""
    )
    one, stream = _median(found, BATCH_ONE), _median(found, STREAM)
    if one is not None and stream:
        work = (
            f"the batch write in one commit handles a file's {rows // files:,} rows in "
            f"{one / files * 1000:,.0f} ms of its time, against the "
            f"{stream / files * 1000:,.0f} ms of a micro-batch of the append stream, so "
            f"{max(0.0, 1 - one / stream):.0%} of a micro-batch is fixed cost, paid once "
            "per micro-batch; "
        )
    else:
        work = "a micro-batch pays a fixed cost; "
    return [
        "Why the numbers look as they do: " + work + "hence the "
        "stream is compared with the batch write in as many commits. "
        "Each write through the source (batch or micro-batch) costs a Spark job: the "
        "driver's planning and its Python planning worker opening the table, the tasks in "
        "Python workers, and the commit in one more Python worker that reads the latest "
        "snapshot and writes the manifests and the snapshot. A micro-batch adds Spark's "
        "own bookkeeping on top: listing the landing folder, the offset log before the "
        "batch and the commit log after it, both written to the checkpoint, the progress "
        "report, and in the sink's commit the lookup of the newest snapshot of the "
        "query's commit user (what makes each batch commit at most once). The "
        "primary-key writes, batch and stream alike, also shuffle the rows into the "
        "table's buckets, and once enough sorted runs pile up a commit compacts them "
        "(the extra snapshots)."
        + floor
        + (" Measured: " + "; ".join(costs) + "." if costs else ""),
        "",
        "In one commit the batch write pays those fixed costs once, so it is the upper "
        "bound of throughput; the stream's value is that each file is in the table "
        "seconds after it lands, one snapshot each, and a restarted query neither loses "
        "nor repeats one.",
    ]


def _demo_table(demo: dict[str, Any]) -> list[str]:
    down = demo["downstream"] or {}
    size = " ".join(demo["arguments"]) or "defaults"
    return [
        _row(["freshness (`shoal demo -o json`)", "value"]),
        _row(["---", "---:"]),
        _row(["demo size", f"{size} ({demo['events']:,} events in {demo['batches']} files)"]),
        _row(
            [
                "snapshots committed (ingest micro-batches + compactions)",
                f"{demo['snapshots']:,} ({demo['ingest_snapshots']:,} + "
                f"{demo['snapshots'] - demo['ingest_snapshots']:,})",
            ]
        ),
        _row(["snapshots read downstream (before expiration)", _count(down.get("snapshots"))]),
        _row(["downstream micro-batches / rows", f"{down.get('batches')} / {down.get('rows'):,}"]),
        _row(
            ["downstream lag, median (s)", f"{down['median_seconds']:.2f}" if down else "-"],
        ),
        _row(["downstream lag, max (s)", f"{down['max_seconds']:.2f}" if down else "-"]),
        _row(["demo total (s)", f"{demo['seconds']:.1f}"]),
        _row(["of which Spark start (s)", f"{demo['spark_seconds']:.1f}"]),
        _row(["process wall time (s)", f"{demo['process_seconds']:.1f}"]),
    ]


def render_streaming(raw: dict[str, Any]) -> list[str]:
    """The Markdown section."""
    config = raw["config"]
    found = spreads(raw)
    versions = raw["versions"]
    files = config["files"]
    lines = [
        "## Streaming: ingest through the shoal sink, freshness downstream",
        "",
        f"Workload, on local Spark (`local[2]`; pyspark {versions['pyspark']}, Java "
        f"{versions['java']}): {config['rows']:,} rows (columns id bigint, name string, "
        f"value double, ts timestamp, qty int) staged as {files} {COMPRESSION} Parquet "
        f"files ({raw['landing_bytes'] / 2**20:,.1f} MiB) in a landing folder, each "
        "contender writing all of them into a fresh table (the Parquet stream into a "
        "fresh folder), timed from its start to its end: a Structured Streaming query "
        "`spark.readStream.parquet(landing)` with `maxFilesPerTrigger=1` and "
        "`trigger(availableNow=True)` into the `shoal` sink, so one micro-batch and one "
        f"snapshot per file, into an append table and into a primary-key table (`id`, "
        f"{PK_BUCKETS} buckets; upserts through `prepare_for_write`); the batch write of "
        "the same files through the `shoal` source, once in one commit and once in one "
        "commit per file; and the same stream into Spark's own Parquet file sink. "
        f"Every contender once untimed on one file, then {config['repeats']} rounds, "
        "interleaved across contenders: median [min, max]; rows/s from the median.",
        "",
        *_times_table(raw, found),
        "",
        *_micro_batch_table(raw),
        "",
        *ratio_table(streaming_ratios(raw)),
        "",
        *_why(raw, found),
        "",
    ]
    demo = raw.get("demo")
    if demo is not None:
        lines += [
            "The freshness lag of `shoal demo` (its downstream streaming query reads the "
            "table under a consumer id with a 250 ms trigger while the ingest query "
            "upserts one landed JSON file per micro-batch): for every snapshot the ingest "
            "committed, the time from its commit to the end of the downstream micro-batch "
            "that read it. It is bounded below by the trigger interval plus one "
            "downstream micro-batch (a Spark job that plans the snapshot range and reads "
            "its files), and above by a downstream micro-batch that starts just before a "
            "commit and the one after it; the demo's compactions and expiration share "
            "the two cores with both queries.",
            "",
            *_demo_table(demo),
            "",
        ]
    lines += _method(raw)
    return lines


def _method(raw: dict[str, Any]) -> list[str]:
    conf = ", ".join(f"`{k}={v}`" for k, v in SPARK_CONF.items() if "ui" not in k)
    setup, load = raw["setup"], raw["load"]
    notes = [
        "How it is measured (`python -m bench --workload streaming`; code in "
        "`bench/streaming.py`, `bench/streaming_report.py`):",
        "",
        f"- One process runs the ingest in one SparkSession (`local[2]`, {conf}). The "
        "files are written by pyarrow from a seeded generator (ids unique across them) "
        "before Spark starts. Streams read with the schema given and "
        "`maxFilesPerTrigger=1`; each has its own new checkpoint. The primary-key "
        f"stream and batch writes go through `shoal.spark.prepare_for_write` (a shuffle "
        f"into the table's {PK_BUCKETS} buckets, one task each); the append writes take "
        f"Spark's partitions as they come ({TASKS} cores). Spark's Parquet sink writes "
        f"{COMPRESSION}, shoal's default `file.compression`.",
        "- Each run's time includes starting the query (or building the DataFrames) and "
        "waiting for the last commit; a stream's micro-batch parts come from Spark's "
        "progress reports (`durationMs`), median over its micro-batches. After each "
        "run, untimed: the rows its latest snapshot counts (the Parquet folder's rows "
        "read back), its snapshots and its live data files; then it is deleted.",
        "- The demo runs as `shoal demo --warehouse DIR -o json` in a process of its "
        "own after the ingest's Spark stopped; the lag is the demo's own measurement "
        "from its downstream query's progress reports.",
        "",
        f"- Setup, untimed: staging the files {setup['generate_s']:.1f} s, starting "
        f"Spark {setup['session_s']:.1f} s, the warm-up runs {setup['warmup_s']:.1f} s. "
        f"1-minute load average {load[0]:.2f} before, {load[1]:.2f} after.",
    ]
    notes += [f"- {check}" for check in raw["checks"]]
    return notes
