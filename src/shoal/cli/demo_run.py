"""The demo pipeline: micro-batches into a primary-key table through a Structured
Streaming query (:mod:`shoal.cli.demo_stream`), event-time compaction on a simulated
clock beside it, a tag, snapshot expiration and orphan cleanup, the
last three as shoal's Spark jobs (:mod:`shoal.spark`).

The steps report what they did as plain values; :mod:`shoal.cli.demo` renders them.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pyarrow.parquet as pq

from shoal.catalog import Catalog
from shoal.cleanup.expire import ExpireResult
from shoal.cleanup.orphans import OrphanFilesResult
from shoal.cli.demo_data import (
    EVENT_TIME,
    PARTITION_KEYS,
    PRIMARY_KEYS,
    SCHEMA,
    MicroBatch,
    StreamConfig,
    generate,
)
from shoal.cli.demo_stream import DOWNSTREAM_CONSUMER, DemoStreams, DownstreamLag
from shoal.compaction.compact import CompactResult
from shoal.format.snapshot import CommitKind
from shoal.table import Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TABLE = "demo.orders"
MIDNIGHT = datetime(2026, 11, 2)  # simulated; the run crosses it about two thirds in


@dataclass(frozen=True, slots=True)
class DemoConfig:
    events: int = 20_000
    hours: int = 6
    batch_minutes: int = 20
    compact_minutes: int = 60
    latency: timedelta = timedelta(minutes=30)
    retain: int = 5
    seed: int = 7

    @property
    def stream(self) -> StreamConfig:
        start = MIDNIGHT - timedelta(hours=round(self.hours * 2 / 3))
        return StreamConfig(self.events, start, self.hours, self.batch_minutes, self.seed)

    def table_options(self) -> dict[str, str]:
        return {
            "bucket": "4",
            "write-only": "true",  # compaction is an explicit job
            "sequence.field": EVENT_TIME,  # a late 'created' never overrides 'shipped'
            "compaction.event-time.field": EVENT_TIME,
            "compaction.event-time.data-latency": f"{int(self.latency.total_seconds())} s",
        }


def to_millis(value: datetime) -> int:
    """A naive UTC time as epoch milliseconds."""
    return int(value.replace(tzinfo=UTC).timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class Step:
    """One line of the timeline: an ingested micro-batch or a compaction."""

    kind: Literal["ingest", "compact", "tag"]
    sim_time: datetime
    snapshot_id: int | None
    watermark_ms: int | None
    seconds: float
    rows: int = 0
    late_rows: int = 0
    threshold: datetime | None = None
    compacted_files: int = 0
    written_files: int = 0
    tag: str | None = None

    @property
    def lag(self) -> timedelta | None:
        """How far the read-optimized view trails the simulated clock."""
        if self.watermark_ms is None:
            return None
        return timedelta(milliseconds=max(0, to_millis(self.sim_time) - self.watermark_ms))


@dataclass(frozen=True, slots=True)
class OrphanReport:
    stray_file: str
    default_run: OrphanFilesResult
    dry_run: OrphanFilesResult
    real_run: OrphanFilesResult


@dataclass(frozen=True, slots=True)
class Summary:
    snapshots: list[int]
    tags: dict[str, int]
    tag_rows: dict[str, int]
    watermark_ms: int | None
    uncompacted_files: int
    files: int
    file_bytes: int
    top_level_files: int
    rows: int
    read_optimized_rows: int
    status_counts: dict[str, int]


@dataclass
class DemoRun:
    """Everything one run did, in order."""

    warehouse: str
    table_path: str
    config: DemoConfig
    batches: int = 0
    events: int = 0
    late_events: int = 0
    spark_seconds: float = 0.0
    spark_master: str = ""
    timeline: list[Step] = field(default_factory=list)
    expire: ExpireResult | None = None
    expire_before: list[int] = field(default_factory=list)
    downstream_next: int | None = None  # the downstream consumer's next snapshot at expiry
    orphans: OrphanReport | None = None
    downstream: DownstreamLag | None = None
    summary: Summary | None = None
    seconds: float = 0.0


def watermark_of(table: Table) -> int | None:
    return table.freshness().watermark_ms


def create_table(warehouse: str, config: DemoConfig) -> Table:
    return Catalog(warehouse).create_table(
        TABLE,
        SCHEMA,
        partition_keys=list(PARTITION_KEYS),
        primary_keys=list(PRIMARY_KEYS),
        options=config.table_options(),
        comment="shoal demo: orders with late-arriving events",
    )


class Pipeline:
    """Runs the demo's steps against one table, reporting each step as it ends."""

    def __init__(
        self,
        spark: SparkSession,
        table: Table,
        run: DemoRun,
        on_step: Callable[[Step], None] = lambda _step: None,
    ) -> None:
        self.spark = spark
        self.table = table
        self.run = run
        self.on_step = on_step
        self.landing = Path(run.warehouse) / "landing"
        self.streams: DemoStreams | None = None
        self.batches = [b for b in generate(run.config.stream) if b.events]
        run.batches = len(self.batches)
        run.events = sum(len(b.events) for b in self.batches)
        run.late_events = sum(b.late_count for b in self.batches)

    def _record(self, step: Step) -> None:
        self.run.timeline.append(step)
        self.on_step(step)

    def ingest(self, batch: MicroBatch) -> None:
        """Land the batch as a JSON file; the ingest query upserts it into the table."""
        assert self.streams is not None
        started = time.perf_counter()
        before = self.table.latest_snapshot()
        batch.write_json(self.landing)
        snapshot_id = self.streams.ingest_all()
        first = before.id + 1 if before is not None else 1
        written = sum(
            s.delta_record_count or 0
            for s in self.table.snapshots()
            if s.id >= first and s.commit_kind != CommitKind.COMPACT
        )
        self._record(
            Step(
                "ingest",
                batch.end,
                snapshot_id,
                watermark_of(self.table),
                time.perf_counter() - started,
                rows=written,
                late_rows=batch.late_count,
            )
        )

    def compact(self, now: datetime) -> CompactResult:
        """Event-time compaction of everything older than the simulated now minus the
        data latency."""
        import shoal.spark

        started = time.perf_counter()
        threshold = now - self.run.config.latency
        result = shoal.spark.compact(self.spark, self.table.path, "event-time", threshold)
        self._record(
            Step(
                "compact",
                now,
                result.snapshot.id if result.snapshot is not None else None,
                watermark_of(self.table),
                time.perf_counter() - started,
                threshold=threshold,
                compacted_files=result.compacted_files,
                written_files=result.written_files,
            )
        )
        return result

    def tag(self, name: str, now: datetime) -> None:
        tag = self.table.create_tag(name)
        self._record(Step("tag", now, tag.snapshot_id, watermark_of(self.table), 0.0, tag=name))

    def start_streams(self) -> DemoStreams:
        """The ingest and downstream queries (:mod:`shoal.cli.demo_stream`)."""
        self.streams = DemoStreams(
            self.spark, self.table, self.landing, Path(self.run.warehouse) / "checkpoints"
        )
        return self.streams

    def stream(self) -> None:
        """Every micro-batch, with a compaction every ``compact_minutes`` of simulated
        time, and the tag of the day after the first compaction past midnight; then the
        ingest query stops and the downstream query reads what is left."""
        config = self.run.config
        every = timedelta(minutes=config.compact_minutes)
        stream = config.stream
        next_compaction = stream.start + every
        tagged = False
        streams = self.streams or self.start_streams()
        for batch in self.batches:
            self.ingest(batch)
            if batch.end >= next_compaction:
                self.compact(batch.end)
                next_compaction += every
                if not tagged and batch.end >= MIDNIGHT:
                    self.tag(f"day-{(MIDNIGHT - timedelta(days=1)).date()}", batch.end)
                    tagged = True
        if not tagged:
            self.tag("end-of-run", stream.end)
        streams.ingest.stop()
        streams.drain()
        self.run.downstream = streams.lag()

    def stop_streams(self) -> None:
        if self.streams is not None:
            self.streams.stop()

    def expire(self) -> ExpireResult:
        """Keep the newest ``retain`` snapshots, and every snapshot the downstream
        query's consumer has not confirmed reading (Spark confirms a micro-batch's read
        when the next one starts). Retention is by count here: the run's snapshots are
        seconds old in real time."""
        import shoal.spark

        self.run.expire_before = [s.id for s in self.table.snapshots()]
        self.run.downstream_next = self.table.consumers().get(DOWNSTREAM_CONSUMER)
        result = shoal.spark.expire_snapshots(
            self.spark,
            self.table.path,
            retain_max=self.run.config.retain,
            older_than=datetime.now(),
        )
        self.run.expire = result
        return result

    def clean_orphans(self) -> OrphanReport:
        """A crashed writer's file: kept by the default age guard, found by a dry run at
        now, deleted by a run at now (safe here: no other writer is running)."""
        import shoal.spark

        stray = self._plant_stray_file()
        path = self.table.path
        default = shoal.spark.remove_orphan_files(self.spark, path)
        time.sleep(0.05)  # the file's modification time lies before "now"
        dry = shoal.spark.remove_orphan_files(self.spark, path, datetime.now(), dry_run=True)
        real = shoal.spark.remove_orphan_files(self.spark, path, datetime.now())
        report = OrphanReport(stray, default, dry, real)
        self.run.orphans = report
        return report

    def _plant_stray_file(self) -> str:
        rng = random.Random(self.run.config.seed)
        name = f"data-{uuid.UUID(int=rng.getrandbits(128), version=4)}-0.parquet"
        bucket = Path(self.table.path) / f"dt={self.run.config.stream.start.date()}" / "bucket-0"
        bucket.mkdir(parents=True, exist_ok=True)
        path = bucket / name
        pq.write_table(SCHEMA.empty_table(), path)
        return str(path)

    def summarize(self, status_counts: dict[str, int]) -> Summary:
        table = self.table
        files = table.system_table("files")
        levels = files.column("level").to_pylist()
        top = max(levels) if levels else 0
        tags = {t.name: t.snapshot_id for t in table.list_tags()}
        freshness = table.freshness()
        summary = Summary(
            snapshots=[s.id for s in table.snapshots()],
            tags=tags,
            tag_rows={n: table.to_arrow(tag=n, columns=["order_id"]).num_rows for n in tags},
            watermark_ms=freshness.watermark_ms,
            uncompacted_files=freshness.uncompacted_file_count,
            files=files.num_rows,
            file_bytes=sum(files.column("file_size_in_bytes").to_pylist()),
            top_level_files=sum(1 for level in levels if level == top),
            rows=table.to_arrow(columns=["order_id"]).num_rows,
            read_optimized_rows=table.to_arrow(columns=["order_id"], read_optimized=True).num_rows,
            status_counts=status_counts,
        )
        self.run.summary = summary
        return summary


def status_counts(spark: SparkSession, table: Table) -> dict[str, int]:
    """Orders by status, read back through Spark."""
    frame = spark.read.format("shoal").load(table.path).groupBy("status").count()
    return {str(r["status"]): int(r["count"]) for r in frame.collect()}


def describe_config(config: DemoConfig) -> dict[str, Any]:
    stream = config.stream
    return {
        "events": config.events,
        "seed": config.seed,
        "simulated_start": stream.start.isoformat(),
        "simulated_end": stream.end.isoformat(),
        "batch_minutes": config.batch_minutes,
        "compact_minutes": config.compact_minutes,
        "latency_seconds": config.latency.total_seconds(),
        "retain_snapshots": config.retain,
        "table_options": config.table_options(),
    }
