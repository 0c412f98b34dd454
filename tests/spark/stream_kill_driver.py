"""A streaming query into a shoal table whose driver dies inside batch 1's sink commit,
right after shoal published the batch's snapshot and before Spark records the batch
in the checkpoint's commit log: the crash that makes Spark replay a committed batch.

    python stream_kill_driver.py <input dir> <checkpoint dir> <table path>

The sink is a subclass of the shoal source (defined here, so Spark pickles it by value)
whose writer, after shoal's own commit of batch 1, kills the driver's JVM. The
driver's own Python then fails, and the script exits with a non-zero status.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from collections.abc import Sequence

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from shoal.spark.datasource import ShoalDataSource
from shoal.spark.stream_write import ShoalStreamWriter

EVENTS_DDL = "dt string, id bigint, name string, value double"
KILLED_BATCH = 1


class DyingWriter(ShoalStreamWriter):
    jvm_pid_file = ""

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        super().commit(messages, batchId)
        if batchId == KILLED_BATCH:
            with open(self.jvm_pid_file) as f:
                os.kill(int(f.read()), signal.SIGKILL)
            os._exit(0)


class DyingSource(ShoalDataSource):
    @classmethod
    def name(cls) -> str:
        return "shoal_dying"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return DyingWriter(self._options(), schema, overwrite)


def main(input_dir: str, checkpoint: str, table: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    pid_file = os.path.join(tempfile.mkdtemp(), "jvm.pid")
    with open(pid_file, "w") as f:
        f.write(str(spark.sparkContext._gateway.proc.pid))  # type: ignore[union-attr]
    DyingWriter.jvm_pid_file = pid_file
    spark.dataSource.register(DyingSource)
    stream = spark.readStream.schema(EVENTS_DDL).option("maxFilesPerTrigger", 1).json(input_dir)
    query = (
        stream.writeStream.format("shoal_dying")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(table)
    )
    query.awaitTermination()
    sys.exit(3)  # not reached: the JVM dies in batch 1


if __name__ == "__main__":
    main(*sys.argv[1:4])
