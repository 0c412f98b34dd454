"""The streaming workload: a Structured Streaming ingest through the ``shoal`` sink
against the batch write of the same rows, and the freshness lag of ``shoal demo``'s
downstream query.

*Ingest*: ``rows`` rows (the Spark workload's read-table shape: id bigint, name string,
value double, ts timestamp, qty int) staged as ``files`` Parquet files in a landing
folder. Each contender writes all of them into a fresh target, timed from its start to
its end, in one SparkSession (``local[2]``):

- ``stream``: ``spark.readStream.parquet(landing)`` with ``maxFilesPerTrigger=1`` into
  ``writeStream.format("shoal")``, ``trigger(availableNow=True)``: one micro-batch, so
  one snapshot, per file; into an append table, and (``stream-pk``) upserted into a
  primary-key table (through ``shoal.spark.prepare_for_write``, as the demo does);
- ``batch-1``: ``spark.read.parquet(landing)`` written through the ``shoal`` source in
  one commit; ``batch-k``: each file read and written by itself, one commit each (so
  as many commits as the stream); the same two into the primary-key table
  (``batch-1-pk``, ``batch-k-pk``);
- ``parquet-stream``, the floor: the same stream into Spark's own ``parquet`` file sink.

Every contender first runs once untimed on a landing folder of one file (the JVM's JIT,
Python workers with shoal imported), then round after round of all of them in a
rotating order.

*Freshness*: ``shoal demo -o json`` in a process of its own; its ``downstream``
object (the lag from a commit to the end of the downstream micro-batch that read it).

``python -m bench.streaming --result FILE ...`` is the measuring process of the ingest
(it writes one JSON object to ``FILE``); :func:`run` starts it, then the demo, and
returns both.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.paimon_env import REPO_ROOT
from bench.procs import log, rotate
from bench.spark_workloads import (
    COMPRESSION,
    READ_DDL,
    READ_SCHEMA,
    TASKS,
    _java_version,
    _settle,
    _timed,
    _tree,
    file_sizes,
    read_rows,
    start_spark,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

STREAM, STREAM_PK = "stream", "stream-pk"
BATCH_ONE, BATCH_K = "batch-1", "batch-k"
BATCH_ONE_PK, BATCH_K_PK = "batch-1-pk", "batch-k-pk"
PARQUET_STREAM = "parquet-stream"
CONTENDERS = (STREAM, BATCH_ONE, BATCH_K, STREAM_PK, BATCH_ONE_PK, BATCH_K_PK, PARQUET_STREAM)
PRIMARY_KEY = "id"
PK_BUCKETS = TASKS  # one write task per bucket, one per core
_NAMES = 100_000
# What a micro-batch's time goes to, from Spark's progress reports (durationMs).
DURATIONS = ("triggerExecution", "addBatch", "queryPlanning", "latestOffset", "walCommit")
# The quick run warms up one of each kind of write: the sink, the source's batch
# write, the bucketing shuffle, Spark's file sink.
WARM_UP_QUICK = (STREAM_PK, BATCH_ONE, PARQUET_STREAM)
QUICK_DEMO = ("--events", "2000", "--hours", "2")


@dataclass(frozen=True, slots=True)
class StreamingConfig:
    rows: int
    files: int
    repeats: int
    seed: int
    workdir: Path
    quick: bool = False  # the demo's size: its default, or the quick one

    @staticmethod
    def sized(quick: bool, seed: int, workdir: Path) -> StreamingConfig:
        return StreamingConfig(
            rows=200_000 if quick else 2_000_000,
            files=5 if quick else 20,
            repeats=1 if quick else 3,
            seed=seed,
            workdir=workdir,
            quick=quick,
        )

    def arguments(self) -> list[str]:
        out = []
        for key, value in asdict(self).items():
            if key != "quick":
                out += [f"--{key}", str(value)]
        return [*out, "--quick"] if self.quick else out

    def demo_arguments(self) -> list[str]:
        return list(QUICK_DEMO) if self.quick else []


# --- the driver's side -------------------------------------------------------------------------
def run(config: StreamingConfig) -> dict[str, Any]:
    """The ingest measured in a fresh process, then the demo in another; both answers."""
    work = config.workdir / "streaming"
    work.mkdir(parents=True, exist_ok=True)
    result = work / "result.json"
    cmd = [sys.executable, "-m", "bench.streaming", "--result", str(result)]
    log(f"streaming: {config.rows:,} rows in {config.files} files, {config.repeats} rounds")
    _run_logged(cmd + config.arguments(), work / "ingest.log", "the streaming ingest")
    answer: dict[str, Any] = json.loads(result.read_text())
    answer["demo"] = run_demo(config, work)
    return answer


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run_logged(cmd: list[str], log_path: Path, what: str) -> str:
    """Run ``cmd`` with its stdout to ``log_path`` (the JVM prints there too), its
    stderr (progress, Spark's errors) to ours."""
    with log_path.open("w") as out:
        done = subprocess.run(cmd, cwd=REPO_ROOT, env=_env(), stdout=out, check=False)
    text = log_path.read_text()
    if done.returncode != 0:
        raise RuntimeError(
            f"{what} failed ({done.returncode}; its errors are above):\n{text[-4000:]}"
        )
    return text


def run_demo(config: StreamingConfig, work: Path) -> dict[str, Any]:
    """``shoal demo -o json`` in a process of its own, timed from outside too."""
    warehouse = work / "demo"
    shutil.rmtree(warehouse, ignore_errors=True)
    cli = "import sys; from shoal.cli.app import cli; sys.exit(cli(prog_name='shoal'))"
    cmd = [sys.executable, "-c", cli, "demo", "--warehouse", str(warehouse)]
    cmd += [*config.demo_arguments(), "-o", "json"]
    log(" ".join(["streaming: shoal demo", *config.demo_arguments(), "..."]))
    started = time.perf_counter()
    text = _run_logged(cmd, work / "demo.json", "shoal demo")
    wall = time.perf_counter() - started
    shutil.rmtree(warehouse, ignore_errors=True)
    return demo_summary(json.loads(text[text.index("{") :]), config.demo_arguments(), wall)


def demo_summary(document: dict[str, Any], arguments: list[str], wall: float) -> dict[str, Any]:
    """What the report takes of the demo's JSON document."""
    return {
        "arguments": arguments,
        "config": document["config"],
        "batches": document["batches"],
        "events": document["events"],
        "downstream": document["downstream"],
        "snapshots": max(document["snapshots_before_expire"], default=0),
        "ingest_snapshots": sum(1 for s in document["timeline"] if s["kind"] == "ingest"),
        "seconds": document["seconds"],
        "spark_seconds": document["spark_seconds"],
        "process_seconds": wall,
    }


# --- the landing folder ----------------------------------------------------------------------
def stage(landing: Path, rows: int, files: int, seed: int) -> list[Path]:
    """``rows`` rows in ``files`` Parquet files (ids unique across them), written once,
    before any clock starts; their paths in landing order."""
    landing.mkdir(parents=True, exist_ok=True)
    names = pa.array([f"name-{k:06d}" for k in range(_NAMES)])
    paths, offset = [], 0
    for index, count in enumerate(file_sizes(rows, files)):
        path = landing / f"part-{index:05d}.parquet"
        pq.write_table(read_rows(index, offset, count, seed, names), path, compression=COMPRESSION)
        paths.append(path)
        offset += count
    return paths


# --- the contenders ------------------------------------------------------------------------------
@dataclass(slots=True)
class Ingest:
    """Each method writes every file of ``landing`` into a fresh target once and
    returns its time in seconds; what it wrote goes to ``facts``, the stream's
    micro-batches to ``batches``."""

    spark: SparkSession
    scratch: Path
    runs: int = 0

    def _next(self, name: str) -> Path:
        self.runs += 1
        return self.scratch / f"{name}-{self.runs}"

    def _table(self, name: str, primary_key: bool) -> str:
        import shoal

        warehouse = self._next(name)
        options = {"bucket": str(PK_BUCKETS)} if primary_key else {}
        shoal.Catalog(str(warehouse)).create_table(
            "bench.ingest",
            READ_SCHEMA,
            primary_keys=[PRIMARY_KEY] if primary_key else (),
            options=options,
        )
        return str(warehouse / "bench.db" / "ingest")

    def _source(self, landing: Path) -> DataFrame:
        return (
            self.spark.readStream.schema(READ_DDL)
            .option("maxFilesPerTrigger", 1)
            .parquet(str(landing))
        )

    def _await(self, start: Callable[[], StreamingQuery]) -> tuple[float, StreamingQuery]:
        def go() -> StreamingQuery:
            query = start()
            query.awaitTermination()
            if query.exception() is not None:
                raise RuntimeError(f"the streaming query failed: {query.exception()}")
            return query

        return _timed(go)

    def stream(self, landing: Path, primary_key: bool) -> dict[str, Any]:
        from shoal.spark import prepare_for_write

        path = self._table(STREAM_PK if primary_key else STREAM, primary_key)
        checkpoint = Path(path).parent / "_checkpoint"

        def start() -> StreamingQuery:
            frame = self._source(landing)
            if primary_key:
                frame = prepare_for_write(frame, path)
            return (
                frame.writeStream.format("shoal")
                .option("checkpointLocation", str(checkpoint))
                .trigger(availableNow=True)
                .start(path)
            )

        seconds, query = self._await(start)
        return {"seconds": seconds, **_progress(query), **_table_facts(path)}

    def parquet_stream(self, landing: Path) -> dict[str, Any]:
        out = self._next(PARQUET_STREAM)

        def start() -> StreamingQuery:
            return (
                self._source(landing)
                .writeStream.format("parquet")
                .option("compression", COMPRESSION)
                .option("path", str(out / "data"))
                .option("checkpointLocation", str(out / "_checkpoint"))
                .trigger(availableNow=True)
                .start()
            )

        seconds, query = self._await(start)
        files, size = _tree(out / "data")
        rows = self.spark.read.parquet(str(out / "data")).count()
        return {
            "seconds": seconds,
            **_progress(query),
            "rows": rows,
            "files": files,
            "bytes": size,
        }

    def batch(self, landing: Path, primary_key: bool, per_file: bool) -> dict[str, Any]:
        from shoal.spark import prepare_for_write

        name = (BATCH_K if per_file else BATCH_ONE) + ("-pk" if primary_key else "")
        path = self._table(name, primary_key)
        inputs = sorted(str(p) for p in landing.glob("*.parquet"))
        groups = [[p] for p in inputs] if per_file else [inputs]

        def write() -> None:
            for group in groups:
                frame = self.spark.read.schema(READ_DDL).parquet(*group)
                if primary_key:
                    frame = prepare_for_write(frame, path)
                frame.write.format("shoal").mode("append").save(path)

        seconds, _ = _timed(write)
        return {"seconds": seconds, "commits": len(groups), **_table_facts(path)}

    def contenders(self) -> dict[str, Callable[[Path], dict[str, Any]]]:
        return {
            STREAM: lambda landing: self.stream(landing, primary_key=False),
            STREAM_PK: lambda landing: self.stream(landing, primary_key=True),
            BATCH_ONE: lambda landing: self.batch(landing, primary_key=False, per_file=False),
            BATCH_K: lambda landing: self.batch(landing, primary_key=False, per_file=True),
            BATCH_ONE_PK: lambda landing: self.batch(landing, primary_key=True, per_file=False),
            BATCH_K_PK: lambda landing: self.batch(landing, primary_key=True, per_file=True),
            PARQUET_STREAM: self.parquet_stream,
        }


def _table_facts(path: str) -> dict[str, Any]:
    """The rows the table's latest snapshot counts, its snapshots, and the data files it
    holds (a compaction's inputs left out)."""
    import shoal

    table = shoal.open_table(path)
    latest = table.latest_snapshot()
    files = table.system_table("files")
    return {
        "rows": latest.total_record_count if latest is not None else 0,
        "snapshots": latest.id if latest is not None else 0,
        "files": files.num_rows,
        "bytes": sum(files.column("file_size_in_bytes").to_pylist()),
    }


def _progress(query: StreamingQuery) -> dict[str, Any]:
    """The query's micro-batches that read rows, and the median of each part of their
    time (Spark's progress ``durationMs``), in seconds."""
    batches = [p for p in query.recentProgress if p.get("numInputRows")]
    parts = {
        key: statistics.median(p["durationMs"].get(key, 0) for p in batches) / 1000.0
        for key in DURATIONS
        if batches
    }
    return {"micro_batches": len(batches), "batch_s": parts}


def measure(config: StreamingConfig) -> dict[str, Any]:
    """Stage the files, start Spark, warm up on one file, then the timed rounds."""
    work = config.workdir / "streaming"
    scratch = work / "scratch"
    load_before = os.getloadavg()[0]
    log("streaming: staging the landing folder ...")
    generate_s, paths = _timed(
        lambda: stage(work / "landing", config.rows, config.files, config.seed)
    )
    warm_landing = work / "landing-warm-up"
    warm_landing.mkdir(parents=True, exist_ok=True)
    shutil.copy(paths[0], warm_landing / paths[0].name)
    session_s, spark = _timed(lambda: start_spark(work))
    ingest = Ingest(spark, scratch)
    contenders = ingest.contenders()
    warm_start = time.perf_counter()
    for name in WARM_UP_QUICK if config.quick else CONTENDERS:
        _settle(spark)
        contenders[name](warm_landing)
        log(f"streaming: warmed up {name}")
    warm_s = time.perf_counter() - warm_start
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in CONTENDERS}
    for r in range(config.repeats):
        for name in rotate(list(CONTENDERS), r):
            _settle(spark)
            done = contenders[name](work / "landing")
            runs[name].append(done)
            log(f"streaming: round {r + 1}/{config.repeats}, {name}: {done['seconds']:.2f} s")
            shutil.rmtree(scratch, ignore_errors=True)
    versions = {"pyspark": spark.version, "java": _java_version(spark)}
    spark.stop()
    return {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
        "runs": runs,
        "landing_bytes": sum(p.stat().st_size for p in paths),
        "checks": _checks(runs, config.rows, config.files),
        "setup": {"generate_s": generate_s, "session_s": session_s, "warmup_s": warm_s},
        "versions": versions,
        "load": [load_before, os.getloadavg()[0]],
    }


def _checks(runs: dict[str, list[dict[str, Any]]], rows: int, files: int) -> list[str]:
    """Notes on any run that did not write every row, or whose stream did not run one
    micro-batch per file."""
    notes = []
    for name, done in runs.items():
        for i, one in enumerate(done):
            if one["rows"] != rows:
                notes.append(f"{name}, round {i + 1}: {one['rows']:,} rows, not {rows:,}")
            batches = one.get("micro_batches")
            if batches is not None and batches != files:
                notes.append(f"{name}, round {i + 1}: {batches} micro-batches, not {files}")
    return notes


def parse_config(argv: list[str]) -> tuple[StreamingConfig, Path]:
    """The measuring process's command line (:meth:`StreamingConfig.arguments` after
    ``--result FILE``): the configuration and where the JSON goes."""
    parser = argparse.ArgumentParser(prog="python -m bench.streaming")
    parser.add_argument("--result", type=Path, required=True, help="where the JSON goes")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20261101)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--quick", action="store_true", help="warm up fewer contenders")
    args = parser.parse_args(argv)
    config = StreamingConfig(
        args.rows, args.files, args.repeats, args.seed, args.workdir, args.quick
    )
    return config, args.result


def main(argv: list[str] | None = None) -> int:
    config, result = parse_config(sys.argv[1:] if argv is None else argv)
    result.write_text(json.dumps(measure(config), indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
