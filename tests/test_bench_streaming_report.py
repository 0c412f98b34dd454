"""The streaming benchmark's section: rendered from results shaped like what
``bench.streaming`` measures and what ``shoal demo -o json`` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.streaming import (
    BATCH_K,
    BATCH_K_PK,
    BATCH_ONE,
    BATCH_ONE_PK,
    CONTENDERS,
    PARQUET_STREAM,
    STREAM,
    STREAM_PK,
    StreamingConfig,
    _checks,
    demo_summary,
    parse_config,
)
from bench.streaming_report import render_streaming, streaming_ratios

ROWS, FILES = 200_000, 5
SECONDS = {
    STREAM: [3.5, 3.0, 4.0],
    BATCH_ONE: [0.7, 0.8, 0.6],
    BATCH_K: [2.5, 2.0, 3.0],
    STREAM_PK: [5.0, 5.5, 6.0],
    BATCH_ONE_PK: [1.5, 1.5, 1.5],
    BATCH_K_PK: [4.0, 4.0, 4.0],
    PARQUET_STREAM: [2.8, 2.8, 2.8],
}
STREAMS = (STREAM, STREAM_PK, PARQUET_STREAM)


def _run(name: str, seconds: float) -> dict[str, Any]:
    run: dict[str, Any] = {"seconds": seconds, "rows": ROWS, "files": 2, "bytes": 5 * 2**20}
    if name in STREAMS:
        parts = ("triggerExecution", "addBatch", "queryPlanning", "latestOffset", "walCommit")
        run["micro_batches"] = FILES
        run["batch_s"] = dict(zip(parts, (0.6, 0.4, 0.03, 0.05, 0.04), strict=True))
    if name != PARQUET_STREAM:
        run["snapshots"] = 1 if name in (BATCH_ONE, BATCH_ONE_PK) else FILES
    return run


def _demo_document() -> dict[str, Any]:
    def step(kind: str) -> dict[str, Any]:
        return {"kind": kind, "snapshot_id": None, "rows": 10}

    kinds = ["ingest", "ingest", "ingest", "compact", "tag", "ingest", "ingest", "compact"]
    return {
        "config": {"events": 2000, "hours": 2},
        "batches": 5,
        "events": 1608,
        "timeline": [step(kind) for kind in kinds],
        "snapshots_before_expire": [1, 2, 3, 4, 5, 6, 7],
        "downstream": {
            "snapshots": 5,
            "median_seconds": 0.97,
            "max_seconds": 3.36,
            "rows": 1285,
            "batches": 4,
        },
        "seconds": 59.9,
        "spark_seconds": 14.5,
        "spark_master": "local[2]",
    }


def _raw(with_demo: bool = True) -> dict[str, Any]:
    runs = {name: [_run(name, s) for s in SECONDS[name]] for name in CONTENDERS}
    raw: dict[str, Any] = {
        "config": {"rows": ROWS, "files": FILES, "repeats": 3, "seed": 1, "workdir": "/x"},
        "runs": runs,
        "landing_bytes": 5 * 2**20,
        "checks": _checks(runs, ROWS, FILES),
        "setup": {"generate_s": 0.5, "session_s": 13.0, "warmup_s": 30.0},
        "versions": {"pyspark": "4.3.0", "java": "17.0.15"},
        "load": [2.0, 3.0],
    }
    if with_demo:
        raw["demo"] = demo_summary(_demo_document(), ["--events", "2000", "--hours", "2"], 61.0)
    return raw


def test_ratios_are_the_medians_over_each_other() -> None:
    ratios = {r.label: r for r in streaming_ratios(_raw())}
    assert ratios[f"time, stream (append) / batch, {FILES} commits"].value == pytest.approx(
        3.5 / 2.5
    )
    assert ratios["time, stream (append) / batch, 1 commit"].value == pytest.approx(3.5 / 0.7)
    assert ratios["time, stream (append) / Parquet stream"].value == pytest.approx(3.5 / 2.8)
    assert ratios[f"time, stream (primary key) / batch, {FILES} commits"].value == pytest.approx(
        5.5 / 4.0
    )
    assert all(r.target is None for r in ratios.values())


def test_section_holds_throughput_micro_batches_and_freshness() -> None:
    text = "\n".join(render_streaming(_raw()))
    assert text.startswith("## Streaming")
    assert "| stream → shoal sink, append table | 3,500 [3,000, 4,000] | 57,143 | 5 | 5 |" in text
    assert (
        "| batch → shoal source, append table, 1 commit | 700 [600, 800] | 285,714 | - | 1 |"
        in text
    )
    # (2.5 - 0.7) / 4 per extra commit; 3.5 / 5 per micro-batch, (3.5 - 2.5) / 5 over a commit
    # 0.7 s of the one-commit batch write per file against 0.7 s per micro-batch
    assert "rows in 140 ms of its time, against the 700 ms" in text
    assert "so 80% of a micro-batch is fixed cost" in text
    assert "each commit past the first adds 450 ms" in text
    assert "a micro-batch of the stream takes 700 ms, 200 ms more" in text
    assert "| whole micro-batch (`triggerExecution`) | 600 | 600 | 600 |" in text
    assert "| downstream lag, median (s) | 0.97 |" in text
    assert "| downstream lag, max (s) | 3.36 |" in text
    assert "| snapshots committed (ingest micro-batches + compactions) | 7 (5 + 2) |" in text
    assert "| of which Spark start (s) | 14.5 |" in text
    assert "rows, not" not in text


def test_section_without_the_demo_or_a_contender() -> None:
    raw = _raw(with_demo=False)
    raw["runs"][PARQUET_STREAM] = []
    text = "\n".join(render_streaming(raw))
    assert "downstream lag" not in text
    assert "| stream → Spark's Parquet file sink" not in text
    assert "Spark's own Parquet sink takes" not in text
    ratios = {r.label: r.value for r in streaming_ratios(raw)}
    assert ratios["time, stream (append) / Parquet stream"] is None


def test_checks_name_short_runs() -> None:
    runs = {STREAM: [_run(STREAM, 1.0) | {"rows": ROWS - 1, "micro_batches": 1}]}
    notes = _checks(runs, ROWS, FILES)
    assert notes == [
        f"stream, round 1: {ROWS - 1:,} rows, not {ROWS:,}",
        f"stream, round 1: 1 micro-batches, not {FILES}",
    ]


def test_measuring_process_command_line(tmp_path: Path) -> None:
    for quick in (False, True):
        config = StreamingConfig.sized(quick, 7, tmp_path)
        parsed, result = parse_config(["--result", str(tmp_path / "r.json"), *config.arguments()])
        assert parsed == config
        assert result == tmp_path / "r.json"
    assert StreamingConfig.sized(True, 7, tmp_path).demo_arguments() == [
        "--events",
        "2000",
        "--hours",
        "2",
    ]
    assert StreamingConfig.sized(False, 7, tmp_path).demo_arguments() == []
