"""The Spark side of the cluster and Spark Connect tests, run as a process of its own.

    python spark_scenarios.py --master spark://127.0.0.1:7077
    python spark_scenarios.py --remote sc://127.0.0.1:15002

It opens one session (a driver of the standalone cluster, or a Spark Connect client),
then reads scenarios from stdin, one JSON line each (``{"scenario": ..., "arguments":
{...}}``), and answers each with one line ``RESULT {"result": ...}`` (or ``{"error":
traceback}``) on stdout. It runs apart from the test process because a process holds
one SparkContext (the suite's local one) and because a Connect client switches the
whole Python process to Spark Connect.

The executors of the cluster get the S3 configuration only from the application's
``spark.executorEnv.*`` settings, made here from this process's ``AWS_*`` variables,
as docs/spark.md tells users to do.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import shoal.spark

JVM_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
ROWS_DDL = "dt string, id bigint, name string, value double"
EVENTS = pa.schema(
    [("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("value", pa.float64())]
)
AWS = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")


def session(master: str | None, remote: str | None) -> SparkSession:
    if remote is not None:
        spark = SparkSession.builder.remote(remote).getOrCreate()
        shoal.spark.register(spark)
        return spark
    builder = (
        SparkSession.builder.master(master or "")
        .appName("shoal-cluster-tests")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "768m")
        .config("spark.driver.extraJavaOptions", JVM_OPTIONS)
        .config("spark.executor.memory", "512m")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        .config("spark.executor.extraJavaOptions", JVM_OPTIONS)
        # The Python the executors run: it has shoal installed.
        .config("spark.pyspark.python", sys.executable)
        # Both executors are there before the first job (the executor-loss test needs
        # a second one to retry on).
        .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")
        .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "180s")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
    )
    for name in AWS:  # the executors' S3: endpoint, credentials, region
        builder = builder.config(f"spark.executorEnv.{name}", os.environ[name])
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    shoal.spark.register(spark)
    return spark


def rows(frame: Any) -> list[dict[str, Any]]:
    return sorted(frame.toArrow().to_pylist(), key=lambda r: json.dumps(r, sort_keys=True))


def frame(spark: SparkSession, values: list[dict[str, Any]]) -> Any:
    return spark.createDataFrame(pa.Table.from_pylist(values, schema=EVENTS))


# --- scenarios ---------------------------------------------------------------------------------
def write_read(spark: SparkSession, *, writes: list[list[dict[str, Any]]], path: str) -> Any:
    """Each batch of ``writes`` appended (upserted on a primary-key table) by the
    data source, then the table read whole and with a filter."""
    for batch in writes:
        frame(spark, batch).write.format("shoal").mode("append").save(path)
    table = spark.read.format("shoal").load(path)
    return {
        "all": rows(table),
        "filtered": rows(table.where((F.col("id") >= 3) & (F.col("dt") == "2026-11-01"))),
        "count": table.count(),
    }


def overwrite(spark: SparkSession, *, path: str, values: list[dict[str, Any]]) -> Any:
    """``shoal.spark.write_table`` in overwrite mode, then the table read back."""
    shoal.spark.write_table(frame(spark, values), path, mode="overwrite")
    return rows(spark.read.format("shoal").load(path))


def compact(spark: SparkSession, *, path: str, strategy: str | None = None) -> Any:
    result = shoal.spark.compact(spark, path, strategy)
    return {
        "snapshot": result.snapshot.id if result.snapshot is not None else None,
        "kind": result.snapshot.commit_kind if result.snapshot is not None else None,
        "compacted_files": result.compacted_files,
        "written_files": result.written_files,
    }


def expire_snapshots(spark: SparkSession, *, path: str, retain_max: int) -> Any:
    return asdict(shoal.spark.expire_snapshots(spark, path, retain_min=1, retain_max=retain_max))


def remove_orphan_files(spark: SparkSession, *, path: str, older_than: str) -> Any:
    result = shoal.spark.remove_orphan_files(spark, path, datetime.fromisoformat(older_than))
    return {"count": result.deleted_count, "bytes": result.deleted_bytes, "paths": result.paths}


def expire_partitions(spark: SparkSession, *, path: str, expiration: str, now: str) -> Any:
    return shoal.spark.expire_partitions(spark, path, expiration, datetime.fromisoformat(now))


def table_functions(spark: SparkSession, *, path: str, name: str) -> Any:
    """The SQL face: a catalog table bound by ``register_table`` written and read with
    SQL, and the table functions of ``register_functions``."""
    shoal.spark.register_functions(spark)
    shoal.spark.register_table(spark, name, path)
    spark.sql(f"INSERT INTO {name} VALUES ('2026-11-02', 100, 'n100-sql', 50.0)").collect()
    selected = rows(spark.sql(f"SELECT * FROM {name} WHERE id >= 5"))
    snapshots = rows(spark.sql(f"SELECT snapshot_id, commit_kind FROM shoal_snapshots('{path}')"))
    expired = spark.sql(f"SELECT * FROM shoal_expire_snapshots('{path}', 1, 1)").collect()
    after = rows(spark.sql(f"SELECT snapshot_id FROM shoal_snapshots('{path}')"))
    return {
        "selected": selected,
        "snapshots": snapshots,
        "expired": [r.asDict() for r in expired],
        "after": after,
    }


def row_operations(
    spark: SparkSession, *, path: str, where: str, update: str, changes: list[dict[str, Any]]
) -> Any:
    """``shoal_delete_where`` and ``shoal_update_where`` from SQL, then a merge of the
    ``changes`` DataFrame by ``shoal.spark.merge``."""
    shoal.spark.register_functions(spark)
    deleted = spark.sql(f'SELECT * FROM shoal_delete_where("{path}", "{where}")').collect()
    query = f"""SELECT * FROM shoal_update_where('{path}', 'id = 1', '{update}')"""
    updated = spark.sql(query).collect()
    merged = (
        shoal.spark.merge(frame(spark, changes), path, on=["dt", "id"])
        .when_matched_update()
        .when_not_matched_insert()
        .execute_with_counts()
    )
    return {
        "deleted": [r.asDict() for r in deleted],
        "updated": [r.asDict() for r in updated],
        "merged": {
            "snapshot_id": merged.snapshot.id,
            "updated": merged.updated,
            "inserted": merged.inserted,
        },
    }


def session_facts(spark: SparkSession) -> Any:
    """What shoal sees of the session: its class, and the tasks a job uses."""
    from shoal.spark.datasource import default_parallelism
    from shoal.spark.jobs import max_tasks

    return {
        "session": f"{type(spark).__module__}.{type(spark).__name__}",
        "default_parallelism": default_parallelism(spark),
        "max_tasks": max_tasks(spark),
    }


def write_with_lost_executor(
    spark: SparkSession, *, path: str, markers: str, count: int, block_after: int
) -> Any:
    """Write ``count`` rows from one task whose first attempt stops after
    ``block_after`` rows until its executor dies (the test kills it); the retried
    attempt writes them all. Returns the attempts' records."""
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "50")
    source = spark.range(0, count, 1, 1).mapInArrow(_SlowEvents(markers, block_after), ROWS_DDL)
    source.write.format("shoal").mode("append").option("write-buffer-size", "1 b").save(path)
    return sorted(p.name for p in Path(markers).iterdir())


class _SlowEvents:
    """Events from ids; attempt 0 of partition 0 yields ``block_after`` rows, says so
    in a marker file named with its process id, and waits until its executor is gone.
    Each attempt leaves a record ``attempt-<n>-<executor pid>``."""

    def __init__(self, markers: str, block_after: int) -> None:
        self.markers = markers
        self.block_after = block_after

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        context = TaskContext.get()
        attempt = context.attemptNumber() if context is not None else 0
        executor = _executor_pid()
        Path(self.markers, f"attempt-{attempt}-{executor}").touch()
        done = 0
        for batch in batches:
            ids = batch.column(0).to_pylist()
            yield pa.RecordBatch.from_pylist(
                [
                    {"dt": "2026-11-01", "id": i, "name": f"{i:06d}-" + "x" * 2000, "value": i / 2}
                    for i in ids
                ],
                schema=EVENTS,
            )
            done += len(ids)
            if attempt == 0 and done >= self.block_after:
                Path(self.markers, f"blocked-{executor}").touch()
                _wait_for_death(executor)


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def _executor_pid() -> int:
    """The executor JVM above this Python worker (daemon, then the JVM)."""
    pid = os.getpid()
    while pid > 1:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        if b"CoarseGrainedExecutorBackend" in command:
            return pid
        pid = _parent(pid)
    raise RuntimeError("no executor JVM above this process")


def _wait_for_death(executor: int, limit: float = 600) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not Path(f"/proc/{executor}").exists():
            os._exit(1)
        time.sleep(0.2)
    raise RuntimeError("the executor was not killed")


SCENARIOS: dict[str, Callable[..., Any]] = {
    f.__name__: f
    for f in (
        write_read,
        overwrite,
        compact,
        expire_snapshots,
        remove_orphan_files,
        expire_partitions,
        table_functions,
        row_operations,
        session_facts,
        write_with_lost_executor,
    )
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--master")
    parser.add_argument("--remote")
    args = parser.parse_args()
    spark = session(args.master, args.remote)
    print("RESULT " + json.dumps({"result": "ready"}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            result = SCENARIOS[request["scenario"]](spark, **request["arguments"])
            answer = {"result": result}
        except Exception:
            answer = {"error": traceback.format_exc()}
        print("RESULT " + json.dumps(answer, default=str), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
