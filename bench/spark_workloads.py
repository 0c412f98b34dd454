"""The Spark workload: shoal's data source and distributed jobs on local Spark (``local[2]``),
against Spark's own Parquet source and shoal's single-process operations.

Measured in one SparkSession, one measurement after the other; each first runs every
contender once untimed, then round after round of them in a rotating order:

- ``read-all``: an aggregate over every column of a table of ``rows`` rows (10 appends,
  so 10 data files), read through ``spark.read.format("shoal")`` and through
  ``spark.read.parquet`` of the very same data files; ``read-all-sorting`` the same
  with the maximum of the string column, which Spark aggregates by sorting;
- ``read-one``: a one-column aggregate, the shoal read pruned by its ``columns`` option,
  the Parquet read by Spark itself;
- ``write``: the same cached DataFrame (those rows in two partitions) appended to a new
  shoal table through the data source and by ``shoal.spark.write_table`` (Spark's own
  Parquet writer, then shoal's commit), and written by ``df.write.parquet`` (all zstd);
- ``compact``: a full compaction of a primary-key table, ``shoal.spark.compact`` against
  ``Table.compact``, each on a fresh copy;
- ``orphans``: orphan cleanup of an append table with aged stray files,
  ``shoal.spark.remove_orphan_files`` against ``Table.remove_orphan_files``, each on a
  fresh copy.

The reads and the write also run through a floor: the least a Python data source does
(:class:`FloorSource`: the same files read by ``pyarrow.dataset`` in two partitions; a
writer that only takes the batches in), which is what Spark's Python Data Source API
costs before any table logic.

``python -m bench.spark_workloads --result FILE ...`` is the measuring process (it
writes one JSON object to ``FILE``); :func:`run` starts it and returns that object.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from bench import data
from bench.paimon_env import REPO_ROOT
from bench.procs import log, rotate

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

READ_ALL, READ_SORT, READ_ONE = "read-all", "read-all-sorting", "read-one"
WRITE, COMPACT, ORPHANS = "write", "compact", "orphans"
MEASURES = (READ_ALL, READ_SORT, READ_ONE, WRITE, COMPACT, ORPHANS)
SHOAL, FLOOR, PARQUET = "shoal", "floor", "parquet"  # data source, least Python source, Spark
NATIVE = "shoal-parquet"  # shoal.spark.write_table: Spark's Parquet writer, shoal's commit
SPARK_JOB, SINGLE = "spark", "single-process"  # the Spark job against Table's method
CONTENDERS = {
    READ_ALL: (SHOAL, FLOOR, PARQUET),
    READ_SORT: (SHOAL, FLOOR, PARQUET),
    READ_ONE: (SHOAL, FLOOR, PARQUET),
    WRITE: (SHOAL, NATIVE, FLOOR, PARQUET),
    COMPACT: (SPARK_JOB, SINGLE),
    ORPHANS: (SPARK_JOB, SINGLE),
}

READ_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("qty", pa.int32()),
    ]
)
READ_DDL = "id bigint, name string, value double, ts timestamp_ntz, qty int"
ONE_COLUMN = "value"
ONE_DDL = "value double"
READ_FILES = 10  # appends of the read table, one data file each
TASKS = 2  # partitions of the written DataFrame and of the floor's reads: one per core
COMPRESSION = "zstd"  # shoal's default file.compression; Spark's Parquet writer is told
COMPACT_BUCKETS = 8
STRAY_AGE = timedelta(days=2)
_BASE_TS_US = 1_793_491_200_000_000  # 2026-11-01T00:00:00 in microseconds
_NAMES = 100_000

SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "3g",
}
_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
"""


@dataclass(frozen=True, slots=True)
class SparkConfig:
    rows: int  # rows read and written
    repeats: int
    compact_rows: int  # rows upserted into the compaction table
    compact_commits: int
    orphan_commits: int  # appends of 1,000 rows into the orphan table
    strays: int  # aged stray files in the orphan table
    seed: int
    workdir: Path
    measures: tuple[str, ...] = MEASURES

    @staticmethod
    def sized(
        rows: int | None, repeats: int | None, quick: bool, seed: int, workdir: Path
    ) -> SparkConfig:
        """The full run's sizes, or the quick run's (which leaves the sort-based
        aggregate out)."""
        return SparkConfig(
            rows=rows or (1_000_000 if quick else 10_000_000),
            repeats=repeats or (1 if quick else 3),
            compact_rows=200_000 if quick else 1_000_000,
            compact_commits=10 if quick else 20,
            orphan_commits=40 if quick else 100,
            strays=1000 if quick else 2000,
            seed=seed,
            workdir=workdir,
            measures=tuple(m for m in MEASURES if not (quick and m == READ_SORT)),
        )

    def arguments(self) -> list[str]:
        """The command line of the measuring process that gives this configuration."""
        out = []
        for key, value in asdict(self).items():
            text = ",".join(value) if key == "measures" else str(value)
            out += [f"--{key.replace('_', '-')}", text]
        return out


# --- the driver's side -------------------------------------------------------------------------
def run(config: SparkConfig) -> dict[str, Any]:
    """Measure in a fresh process; the JSON object it wrote. Its progress and Spark's
    errors go to stderr, its stdout (where the JVM may print too) to a log file."""
    work = config.workdir / "spark"
    work.mkdir(parents=True, exist_ok=True)
    result = work / "result.json"
    cmd = [sys.executable, "-m", "bench.spark_workloads", "--result", str(result)]
    cmd += config.arguments()
    log(f"spark: {config.rows:,} rows, {config.repeats} repeats")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with (work / "spark.log").open("w") as spark_log:
        done = subprocess.run(cmd, cwd=REPO_ROOT, env=env, stdout=spark_log, check=False)
    if done.returncode != 0:
        tail = (work / "spark.log").read_text()[-4000:]
        raise RuntimeError(
            f"the Spark workload failed ({done.returncode}; its errors are above):\n{tail}"
        )
    answer: dict[str, Any] = json.loads(result.read_text())
    return answer


# --- data ----------------------------------------------------------------------------------------
def read_rows(index: int, offset: int, rows: int, seed: int, names: pa.Array) -> pa.Table:
    """Append ``index`` of the read table: ids from ``offset``, the rest drawn from a
    seeded generator."""
    rng = np.random.default_rng([seed, 11, index])
    ts = _BASE_TS_US + rng.integers(0, 30 * 86_400_000_000, rows)
    return pa.Table.from_arrays(
        [
            pa.array(np.arange(offset, offset + rows, dtype=np.int64)),
            names.take(pa.array(rng.integers(0, len(names), rows))),
            pa.array(rng.normal(100.0, 15.0, rows)),
            pa.array(ts, pa.timestamp("us")),
            pa.array(rng.integers(0, 1000, rows, dtype=np.int32)),
        ],
        schema=READ_SCHEMA,
    )


def file_sizes(total: int, files: int) -> list[int]:
    """``total`` rows in ``files`` appends whose sizes differ by at most one."""
    size, extra = divmod(total, files)
    return [size + (1 if i < extra else 0) for i in range(files)]


def build_read_table(warehouse: Path, rows: int, seed: int) -> str:
    """The table the reads measure (an unpartitioned append table); its path."""
    import shoal

    table = shoal.Catalog(str(warehouse)).create_table("bench.spark_read", READ_SCHEMA)
    names = pa.array([f"name-{k:06d}" for k in range(_NAMES)])
    offset = 0
    for index, count in enumerate(file_sizes(rows, READ_FILES)):
        table.append(read_rows(index, offset, count, seed, names))
        offset += count
    return str(warehouse / "bench.db" / "spark_read")


def build_compaction_table(warehouse: Path, rows: int, commits: int, seed: int) -> str:
    """A primary-key table of ``commits`` upserts and no compaction yet; its path."""
    import shoal

    table = shoal.Catalog(str(warehouse)).create_table(
        "bench.spark_compact",
        data.PK_SCHEMA,
        primary_keys=[data.PRIMARY_KEY],
        options={"bucket": str(COMPACT_BUCKETS), "write-only": "true"},
    )
    per_commit = rows // commits
    for index in range(commits):
        table.upsert(data.make_upsert(index, per_commit, rows, seed))
    return str(warehouse / "bench.db" / "spark_compact")


def build_orphan_table(warehouse: Path, commits: int, strays: int, seed: int) -> str:
    """An append table partitioned by ``dt`` of ``commits`` appends of 1,000 rows,
    with ``strays`` files no snapshot names, aged by ``STRAY_AGE``, spread over its
    bucket directories and its manifest directory; its path."""
    import shoal

    table = shoal.Catalog(str(warehouse)).create_table(
        "bench.spark_orphans", data.SCHEMA, partition_keys=[data.PARTITION_KEY]
    )
    for index in range(commits):
        table.append(data.make_batch(index, 1000, seed))
    root = warehouse / "bench.db" / "spark_orphans"
    directories = [f"{data.PARTITION_KEY}={p}/bucket-0" for p in data.PARTITIONS]
    aged = (datetime.now() - STRAY_AGE).timestamp()
    for i in range(strays):
        if i % (len(directories) + 1) == len(directories):
            path = root / "manifest" / f"manifest-{uuid.uuid4()}-0"
        else:
            path = root / directories[i % (len(directories) + 1)] / f"data-{uuid.uuid4()}-0.parquet"
        path.write_bytes(bytes(1024))
        os.utime(path, (aged, aged))
    return str(root)


# --- the floor: the least a Python data source does -----------------------------------------
class FloorSource(DataSource):
    """Reads the Parquet files of the ``files`` option (a JSON list) with
    ``pyarrow.dataset``, in ``TASKS`` partitions of consecutive files, and
    hands every batch over in Spark's Arrow form (read it with a user schema); writes
    nothing, only takes the batches in."""

    @classmethod
    def name(cls) -> str:
        return "shoal_bench_floor"

    def reader(self, schema: StructType) -> DataSourceReader:
        return FloorReader(json.loads(self.options["files"]), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return DiscardWriter()


class FloorReader(DataSourceReader):
    def __init__(self, files: list[str], schema: StructType) -> None:
        self._files = files
        self._schema = schema

    def partitions(self) -> list[InputPartition]:
        n, k = len(self._files), TASKS
        groups = [self._files[i * n // k : (i + 1) * n // k] for i in range(k)]
        return [InputPartition(group) for group in groups if group]

    def read(self, partition: InputPartition) -> Any:
        import pyarrow.dataset as ds
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self._schema, timezone="UTC")
        files = ds.dataset(partition.value, format="parquet")
        for batch in files.to_batches(columns=target.names, batch_size=131_072):
            yield pa.RecordBatch.from_arrays(batch.columns, schema=target)


class DiscardWriter(DataSourceArrowWriter):
    def write(self, iterator: Any) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()

    def commit(self, messages: Any) -> None:
        pass


# --- the session ---------------------------------------------------------------------------------
def start_spark(work: Path) -> SparkSession:
    """A quiet local[2] session with the ``shoal`` source registered."""
    from pyspark.sql import SparkSession

    import shoal.spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # the workers import the floor source from here when it is not pickled by value
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p
    )
    log_config = work / "log4j2.properties"
    log_config.write_text(_LOG4J2)
    builder = SparkSession.builder.master("local[2]").appName("shoal-bench")
    for key, value in SPARK_CONF.items():
        builder = builder.config(key, value)
    builder = builder.config(
        "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={log_config}"
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    shoal.spark.register(spark)
    spark.dataSource.register(FloorSource)
    return spark


# --- the measurements ----------------------------------------------------------------------------
def all_columns(*, string_max: bool = False) -> list[Column]:
    """The aggregate over every column of the read table. Of the string, its longest
    length, unless ``string_max``: a maximum of strings makes Spark aggregate by sorting
    (a ``SortAggregate``, where the rest is a ``HashAggregate``), which costs every
    contender the same extra second or so."""
    from pyspark.sql import functions as F

    name = F.max("name") if string_max else F.max(F.length("name"))
    return [
        F.count(F.lit(1)).alias("rows"),
        F.sum("id").alias("id"),
        name.alias("name"),
        F.sum("value").alias("value"),
        F.max("ts").alias("ts"),
        F.sum("qty").alias("qty"),
    ]


def one_column() -> list[Column]:
    from pyspark.sql import functions as F

    return [F.count(F.lit(1)).alias("rows"), F.sum(ONE_COLUMN).alias(ONE_COLUMN)]


AGGREGATES: dict[str, Callable[[], list[Column]]] = {
    READ_ALL: all_columns,
    READ_SORT: partial(all_columns, string_max=True),
    READ_ONE: one_column,
}


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    out = action()
    return time.perf_counter() - start, out


def _tree(root: Path) -> tuple[int, int]:
    """Files under ``root`` (Spark's ``_SUCCESS`` and ``.crc`` files left out) and
    their bytes."""
    count = size = 0
    for directory, _, names in os.walk(root):
        for name in names:
            if name.startswith(("_", ".")):
                continue
            count += 1
            size += os.path.getsize(os.path.join(directory, name))
    return count, size


@dataclass(slots=True)
class Workload:
    """The prepared tables and the session; each method measures one contender once
    and returns its time in seconds."""

    spark: SparkSession
    read_table: str
    read_files: list[str]
    compact_table: Path
    orphan_table: Path
    scratch: Path  # copies and written tables go here
    write_df: DataFrame | None = None
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: int = 0

    def _fact(self, measure: str, contender: str, value: dict[str, Any]) -> None:
        self.facts.setdefault(measure, {}).setdefault(contender, value)

    def _next(self, name: str) -> Path:
        self.runs += 1
        return self.scratch / f"{name}-{self.runs}"

    # reads ----------------------------------------------------------------------------------
    def _frame(self, measure: str, contender: str) -> DataFrame:
        """The rows one read aggregates: all columns, or only ``ONE_COLUMN``."""
        one = measure == READ_ONE
        if contender == SHOAL:
            reader = self.spark.read.format("shoal")
            if one:
                reader = reader.option("columns", ONE_COLUMN)
            return reader.load(self.read_table)
        if contender == FLOOR:
            reader = self.spark.read.format(FloorSource.name()).schema(ONE_DDL if one else READ_DDL)
            return reader.option("files", json.dumps(self.read_files)).load()
        frame = self.spark.read.parquet(*self.read_files)
        return frame.select(ONE_COLUMN) if one else frame

    def read(self, measure: str, contender: str) -> float:
        """A new DataFrame, aggregated to one row and collected."""
        aggregates = AGGREGATES[measure]()
        seconds, rows = _timed(lambda: self._frame(measure, contender).agg(*aggregates).collect())
        self._fact(measure, contender, {k: str(v) for k, v in rows[0].asDict().items()})
        return seconds

    # writes ---------------------------------------------------------------------------------
    def source_frame(self) -> DataFrame:
        """The rows of the read table in ``TASKS`` partitions, cached (the
        first use materializes them, untimed)."""
        if self.write_df is None:
            from pyspark import StorageLevel

            frame = self.spark.read.parquet(*self.read_files).repartition(TASKS)
            frame = frame.persist(StorageLevel.MEMORY_ONLY)
            frame.count()
            self.write_df = frame
        return self.write_df

    def _write_new_table(self, contender: str, write: Callable[[DataFrame, str], Any]) -> float:
        """``write(frame, path)`` into a new table, timed; what it wrote, as facts (the
        rows as the table's latest snapshot counts them)."""
        import shoal

        frame = self.source_frame()
        warehouse = self._next(f"write-{contender}")
        shoal.Catalog(str(warehouse)).create_table("bench.written", READ_SCHEMA)
        path = str(warehouse / "bench.db" / "written")
        seconds, _ = _timed(lambda: write(frame, path))
        files, size = _tree(Path(path) / "bucket-0")
        latest = shoal.open_table(path).latest_snapshot()
        count = latest.total_record_count if latest is not None else None
        self._fact(WRITE, contender, {"files": files, "bytes": size, "rows": count})
        shutil.rmtree(warehouse, ignore_errors=True)
        return seconds

    def write_shoal(self) -> float:
        return self._write_new_table(
            SHOAL, lambda frame, path: frame.write.format("shoal").mode("append").save(path)
        )

    def write_native(self) -> float:
        import shoal.spark

        return self._write_new_table(NATIVE, shoal.spark.write_table)

    def write_floor(self) -> float:
        frame = self.source_frame()
        seconds, _ = _timed(lambda: frame.write.format(FloorSource.name()).mode("append").save())
        return seconds

    def write_parquet(self) -> float:
        frame = self.source_frame()
        out = self._next("write-parquet")
        writer = frame.write.option("compression", COMPRESSION)
        seconds, _ = _timed(lambda: writer.parquet(str(out)))
        files, size = _tree(out)
        rows = self.spark.read.parquet(str(out)).count()
        self._fact(WRITE, PARQUET, {"files": files, "bytes": size, "rows": rows})
        shutil.rmtree(out, ignore_errors=True)
        return seconds

    # maintenance ----------------------------------------------------------------------------
    def _on_copy(
        self, measure: str, contender: str, source: Path, operation: Callable[[str], Any]
    ) -> float:
        import shoal

        copy = self._next(measure)
        shutil.copytree(source, copy)
        try:
            seconds, result = _timed(lambda: operation(str(copy)))
            check = shoal.open_table(str(copy)).to_arrow(read_optimized=True).num_rows
            self._fact(measure, contender, {**_summary(result), "rows_after": check})
        finally:
            shutil.rmtree(copy, ignore_errors=True)
        return seconds

    def compact_spark(self) -> float:
        import shoal.spark

        spark = self.spark
        return self._on_copy(
            COMPACT,
            SPARK_JOB,
            self.compact_table,
            lambda p: shoal.spark.compact(spark, p, strategy="full"),
        )

    def compact_single(self) -> float:
        import shoal

        return self._on_copy(
            COMPACT, SINGLE, self.compact_table, lambda p: shoal.open_table(p).compact("full")
        )

    def orphans_spark(self) -> float:
        import shoal.spark

        spark = self.spark
        return self._on_copy(
            ORPHANS,
            SPARK_JOB,
            self.orphan_table,
            lambda p: shoal.spark.remove_orphan_files(spark, p),
        )

    def orphans_single(self) -> float:
        import shoal

        return self._on_copy(
            ORPHANS, SINGLE, self.orphan_table, lambda p: shoal.open_table(p).remove_orphan_files()
        )

    def contenders(self) -> dict[str, dict[str, Callable[[], float]]]:
        reads = {
            measure: {name: partial(self.read, measure, name) for name in CONTENDERS[measure]}
            for measure in AGGREGATES
        }
        return {
            **reads,
            WRITE: {
                SHOAL: self.write_shoal,
                NATIVE: self.write_native,
                FLOOR: self.write_floor,
                PARQUET: self.write_parquet,
            },
            COMPACT: {SPARK_JOB: self.compact_spark, SINGLE: self.compact_single},
            ORPHANS: {SPARK_JOB: self.orphans_spark, SINGLE: self.orphans_single},
        }


def _summary(result: Any) -> dict[str, Any]:
    """What a compaction or an orphan cleanup reports, as plain numbers."""
    if hasattr(result, "deleted_count"):
        return {"deleted": result.deleted_count, "deleted_bytes": result.deleted_bytes}
    return {"compacted_files": result.compacted_files}


def run_measure(
    workload: Workload, measure: str, repeats: int
) -> tuple[dict[str, list[float]], float]:
    """Every contender once, untimed (the JVM's JIT, Python workers with the code
    loaded, the files in the page cache), then ``repeats`` rounds of them in a rotating
    order, each measurement right after the other; the times, and how long the
    warm-up took."""
    contenders = workload.contenders()[measure]
    names = list(CONTENDERS[measure])
    warm_start = time.perf_counter()
    for name in names:
        _settle(workload.spark)
        contenders[name]()
    warm = time.perf_counter() - warm_start
    workload.facts.pop(measure, None)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in rotate(names, r):
            _settle(workload.spark)
            seconds = contenders[name]()
            times[name].append(seconds)
            log(f"spark: {measure}, round {r + 1}/{repeats}, {name}: {seconds:.2f} s")
    return times, warm


def _settle(spark: SparkSession) -> None:
    """Collect the garbage of the measurements before, the JVM's included, so that no
    contender pays for another's."""
    gc.collect()
    jvm = spark.sparkContext._jvm
    if jvm is not None:
        jvm.System.gc()


def _checks(facts: dict[str, dict[str, Any]]) -> list[str]:
    """Notes on contenders whose results differ from the first's (floating-point sums
    aside)."""
    notes = []
    for measure, by_contender in facts.items():
        (first_name, first), *others = by_contender.items()
        for name, other in others:
            for key in sorted(set(first) & set(other) - _SIZES):
                if not _same(first[key], other[key]):
                    notes.append(
                        f"{measure}: {key} differs ({first_name} {first[key]}, {name} {other[key]})"
                    )
    return notes


_SIZES = {"bytes", "files", "deleted_bytes"}


def _same(a: Any, b: Any) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    except (TypeError, ValueError):
        return bool(a == b)


def _maintenance_dir() -> Path:
    """Where the maintenance tables and their copies go: a tmpfs (thousands of small
    files are copied for every measurement) when there is one."""
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="shoal-bench-spark-", dir=base))


def measure(config: SparkConfig) -> dict[str, Any]:
    """Build the tables, start Spark, warm up, then the timed rounds."""
    work = config.workdir / "spark"
    maintenance = _maintenance_dir()
    load_before = os.getloadavg()[0]
    try:
        log("spark: generating the tables ...")
        seconds, tables = _timed(lambda: _build(config, work, maintenance))
        log(f"spark: tables ready in {seconds:.1f} s; starting Spark ...")
        session_s, spark = _timed(lambda: start_spark(work))
        workload = Workload(spark, *tables, scratch=maintenance / "scratch")
        times: dict[str, dict[str, list[float]]] = {}
        warm_s = 0.0
        for name in config.measures:
            times[name], warm = run_measure(workload, name, config.repeats)
            warm_s += warm
        versions = {"pyspark": spark.version, "java": _java_version(spark)}
        spark.stop()
    finally:
        shutil.rmtree(maintenance, ignore_errors=True)
    return {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()},
        "times": times,
        "facts": workload.facts,
        "checks": _checks(workload.facts),
        "setup": {"generate_s": seconds, "session_s": session_s, "warmup_s": warm_s},
        "versions": versions,
        "load": [load_before, os.getloadavg()[0]],
        "read_files": len(workload.read_files),
        "read_bytes": sum(os.path.getsize(f) for f in workload.read_files),
    }


def _build(config: SparkConfig, work: Path, maintenance: Path) -> tuple[str, list[str], Path, Path]:
    """The read table (its path and data files) and the two maintenance tables."""
    import shoal

    read_table = build_read_table(work / "warehouse", config.rows, config.seed)
    files = shoal.open_table(read_table).system_table("files")["file_path"].to_pylist()
    compact = build_compaction_table(
        maintenance / "warehouse", config.compact_rows, config.compact_commits, config.seed
    )
    orphans = build_orphan_table(
        maintenance / "warehouse", config.orphan_commits, config.strays, config.seed
    )
    return read_table, sorted(files), Path(compact), Path(orphans)


def _java_version(spark: SparkSession) -> str:
    try:
        return str(spark.sparkContext._jvm.System.getProperty("java.version"))  # type: ignore[union-attr]
    except Exception:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spark_workloads")
    parser.add_argument("--result", type=Path, required=True, help="where the JSON goes")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compact-rows", type=int, default=1_000_000)
    parser.add_argument("--compact-commits", type=int, default=20)
    parser.add_argument("--orphan-commits", type=int, default=100)
    parser.add_argument("--strays", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261101)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument(
        "--measures", default=",".join(MEASURES), help=f"comma-separated, of {', '.join(MEASURES)}"
    )
    args = parser.parse_args(argv)
    config = SparkConfig(
        rows=args.rows,
        repeats=args.repeats,
        compact_rows=args.compact_rows,
        compact_commits=args.compact_commits,
        orphan_commits=args.orphan_commits,
        strays=args.strays,
        seed=args.seed,
        workdir=args.workdir,
        measures=tuple(m for m in MEASURES if m in args.measures.split(",")),
    )
    result = measure(config)
    args.result.write_text(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
