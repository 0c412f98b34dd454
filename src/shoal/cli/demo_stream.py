"""The demo's two Structured Streaming queries, both through the ``shoal`` source.

*Ingest*: the JSON files that land in the landing folder (one per micro-batch of the
generated stream, as a collector would drop them), parsed with the table's types and
upserted into the table by the ``shoal`` sink, one snapshot per micro-batch,
exactly once (the checkpoint's batch id is the snapshot's commit identifier).

*Downstream*: the table read as a stream from the snapshots the ingest commits (each
micro-batch the rows its range of snapshots wrote) into a memory table, as a
dashboard or a second pipeline would consume it. It reads under a consumer id, so
snapshot expiration keeps every snapshot it has not read yet. Its *freshness lag* is
how long a snapshot waits between its commit and the end of the downstream
micro-batch that read it.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shoal.cli.sparkio import table_struct
from shoal.table import Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INGEST_QUERY = "shoal_demo_ingest"
DOWNSTREAM_QUERY = "shoal_demo_downstream"
DOWNSTREAM_CONSUMER = "demo-downstream"
DOWNSTREAM_TRIGGER = "250 milliseconds"


@dataclass(frozen=True, slots=True)
class DownstreamLag:
    """Seconds from a snapshot's commit to the end of the downstream micro-batch that
    read it, over the ingest's snapshots."""

    snapshots: int
    median_seconds: float
    max_seconds: float
    rows: int
    batches: int


class DemoStreams:
    """The ingest and downstream queries of one demo run, started together."""

    def __init__(self, spark: SparkSession, table: Table, landing: Path, checkpoints: Path):
        from shoal.spark import prepare_for_write

        self.table = table
        landing.mkdir(parents=True, exist_ok=True)
        events = (
            spark.readStream.schema(table_struct(spark, table))
            .option("maxFilesPerTrigger", 1)
            .option("mode", "FAILFAST")
            .json(str(landing))
        )
        self.ingest = (
            prepare_for_write(events, table.path)
            .writeStream.format("shoal")
            .queryName(INGEST_QUERY)
            .option("checkpointLocation", str(checkpoints / "ingest"))
            .start(table.path)
        )
        self.downstream = (
            spark.readStream.format("shoal")
            .option("consumer-id", DOWNSTREAM_CONSUMER)
            .option("startingOffsets", "earliest")
            .load(table.path)
            .writeStream.format("memory")
            .queryName(DOWNSTREAM_QUERY)
            .trigger(processingTime=DOWNSTREAM_TRIGGER)
            .option("checkpointLocation", str(checkpoints / "downstream"))
            .start()
        )
        self._spark = spark
        self._ingested: list[int] = []

    def ingest_all(self) -> int | None:
        """Wait until the ingest query has read every landed file; the snapshot its
        last micro-batch committed (None if it committed none)."""
        before = self.table.latest_snapshot()
        self.ingest.processAllAvailable()
        latest = self.table.latest_snapshot()
        if latest is None or (before is not None and latest.id == before.id):
            return None
        self._ingested.append(latest.id)
        return latest.id

    def drain(self) -> None:
        """Let the downstream query read everything committed so far."""
        self.downstream.processAllAvailable()

    def stop(self) -> None:
        for query in (self.ingest, self.downstream):
            if query.isActive:
                query.stop()

    def lag(self) -> DownstreamLag:
        """The downstream freshness lag of each ingested snapshot, from the query's
        progress reports (the end offset of each micro-batch is a snapshot id)."""
        ends = []
        for progress in self.downstream.recentProgress:
            sources = progress.get("sources") or []
            end = _snapshot_of(sources[0].get("endOffset")) if sources else None
            if end is None or not progress.get("numInputRows"):
                continue
            started = _epoch_seconds(progress["timestamp"])
            ends.append((end, started + progress["batchDuration"] / 1000.0))
        ends.sort()
        lags = []
        for snapshot_id in self._ingested:
            read_at = next((t for end, t in ends if end >= snapshot_id), None)
            if read_at is not None:
                committed = self.table.snapshot(snapshot_id).time_millis / 1000.0
                lags.append(max(0.0, read_at - committed))
        rows = self._spark.table(DOWNSTREAM_QUERY).count()
        return DownstreamLag(
            snapshots=len(lags),
            median_seconds=statistics.median(lags) if lags else 0.0,
            max_seconds=max(lags, default=0.0),
            rows=rows,
            batches=len(ends),
        )


def _snapshot_of(offset: Any) -> int | None:
    """The snapshot id of a ``shoal`` stream offset (a JSON text in progress reports)."""
    if offset is None:
        return None
    value = json.loads(offset) if isinstance(offset, str) else offset
    snapshot = value.get("snapshot") if isinstance(value, dict) else None
    return int(snapshot) if snapshot is not None else None


def _epoch_seconds(timestamp: str) -> float:
    """Spark's progress timestamps (``2026-11-26T19:50:00.123Z``) as epoch seconds."""
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
