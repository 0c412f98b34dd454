"""The Spark side of the command line: the session, reading source files, writing a
DataFrame into a table (:mod:`shoal.spark`).

Commands that do not run on Spark start without ``pyspark``: the session comes from
:func:`shoal.spark.session.spark_session`, source files are read by
:mod:`shoal.spark.source_files`, both imported when a Spark command runs. Every write
goes through :func:`write_dataframe`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from shoal.cli.common import storage_options
from shoal.errors import InvalidArgumentError
from shoal.table import Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from shoal.spark.source_files import SourceRead

Format = Literal["parquet", "json", "csv"]
WriteMode = Literal["append", "upsert", "overwrite"]
ParseMode = Literal["failfast", "permissive"]
FORMATS: tuple[Format, ...] = ("parquet", "json", "csv")
PARSE_MODES: tuple[ParseMode, ...] = ("failfast", "permissive")


def spark_session(master: str) -> SparkSession:
    """The active (or default) SparkSession, or a new one on ``master``, with the
    ``shoal`` data source registered."""
    from shoal.spark.session import spark_session as session

    return session(master)


WRITE_MODES: tuple[WriteMode, ...] = ("append", "upsert", "overwrite")


def table_struct(spark: SparkSession, table: Table) -> StructType:
    """The Spark schema of ``table``'s rows, as the data source reads them."""
    return spark.read.format("shoal").options(**storage_options()).load(table.path).schema


def read_source(
    spark: SparkSession,
    source: str,
    fmt: Format,
    table: Table,
    *,
    header: bool = True,
    parse_mode: ParseMode = "failfast",
) -> SourceRead:
    """The rows of ``source`` (a file, directory or glob) with the table's columns, as
    :attr:`~shoal.spark.source_files.SourceRead.frame`.

    JSON and CSV are parsed with the table's schema; Parquet keeps its own types and
    each column is cast to the table's type. A value that cannot be read as its
    column's type fails the job that consumes the rows (``failfast``), or becomes a null
    that :meth:`~shoal.spark.source_files.SourceRead.nulled_values` counts
    (``permissive``); a null in a NOT NULL column fails it in both modes. Run that job
    inside :meth:`~shoal.spark.source_files.SourceRead.checked`, which turns such a
    failure into :class:`shoal.InvalidInputDataError`.
    """
    from shoal.spark.source_files import read_source as read

    not_null = [f.name for f in table.schema if not f.nullable]
    struct = table_struct(spark, table)
    return read(spark, source, fmt, struct, not_null=not_null, header=header, parse_mode=parse_mode)


def write_dataframe(
    frame: DataFrame,
    table: Table,
    mode: WriteMode,
    *,
    dynamic_partition_overwrite: bool = False,
) -> None:
    """Write ``frame`` into ``table`` in one commit: by Spark's own Parquet writer for
    an unbucketed append table, through the ``shoal`` data source otherwise.

    The rows are first shuffled so that one task writes each bucket (one file per
    bucket). ``upsert`` needs a primary-key table (where an append is an upsert);
    ``overwrite`` replaces the whole table, or with ``dynamic_partition_overwrite``
    only the partitions present in ``frame``.
    """
    from shoal.spark.datasource import prepare_for_write
    from shoal.spark.table_write import write_table

    if mode == "upsert" and not table.primary_keys:
        raise InvalidArgumentError(
            f"upsert needs a primary-key table; {table.name or table.path} is an append "
            "table (use --mode append)"
        )
    if dynamic_partition_overwrite and mode != "overwrite":
        raise InvalidArgumentError("dynamic partition overwrite applies to --mode overwrite")
    storage = storage_options()
    write_table(
        prepare_for_write(frame, table.path, storage_options=storage),
        table.path,
        "overwrite" if mode == "overwrite" else "append",
        dynamic_partition_overwrite=dynamic_partition_overwrite,
        storage_options=storage,
    )
