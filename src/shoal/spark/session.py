"""The SparkSession of shoal's command line: the caller's active session as it is,
or a new quiet one (UTC session time zone, no UI, Spark's start-up logging at ERROR)."""

from __future__ import annotations

import os
import sys
import tempfile

from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from shoal.spark.datasource import register


def spark_session(master: str) -> SparkSession:
    """The active (or default) SparkSession as it is, or else a new one on ``master``;
    the ``shoal`` data source is registered on it."""
    try:
        session = SparkSession.active()  # a caller's session keeps its configuration
    except PySparkRuntimeError:
        session = None
    if session is None:
        # Executors run Python too: the interpreter that has shoal installed.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        if master.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        session = (
            SparkSession.builder.master(master)
            .appName("shoal")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={_log_config()}")
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
    register(session)
    return session


# Spark's shell sets the level to WARN unless the root logger is at WARN already (and
# then says so on stderr); the chatty loggers of a local start-up go down to ERROR. A
# failed task is not logged with its Java stack trace: the job's failure reaches the
# command, which reports it (a source value that does not parse is an error message,
# not a stack trace).
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = off
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
logger.files.name = org.apache.spark.sql.execution.datasources.FileFormatWriter
logger.files.level = off
"""


def _log_config() -> str:
    """A log4j2 configuration that keeps the JVM to errors, so Spark's start-up chatter
    does not bury the command's output."""
    path = os.path.join(tempfile.gettempdir(), "shoal-spark-log4j2.properties")
    staged = f"{path}.{os.getpid()}"
    with open(staged, "w", encoding="utf-8") as out:
        out.write(_LOG4J2)
    os.replace(staged, path)  # another process may be reading it right now
    return path
