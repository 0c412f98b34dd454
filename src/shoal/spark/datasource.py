"""The ``shoal`` Spark data source: read and write shoal tables from PySpark, no JVM jar.

    df = spark.read.format("shoal").load(table_path)
    df = spark.read.format("shoal").option("scan.tag-name", "v1").load(table_path)
    df.write.format("shoal").mode("append").save(table_path)

Installing shoal installs the ``pyspark_shoal`` module, which Spark finds by itself;
:func:`register` does it explicitly and tells the source the session's default
parallelism. The options it reads (and refuses) are in ``source_options`` and, for
users, in docs/spark.md. Two limits of Spark's Python Data Source API shape them:
Spark reuses a read plan made with pushed filters for later queries on the same
DataFrame, so the source takes no pushed filters (the ``filter`` option prunes
instead); and it hands a Python source neither its session's
``partitionOverwriteMode`` nor the mode it implies, so an overwrite of a partitioned
table must name its mode. Spark's session catalog does not pass a table's stored
options to a Python source: :func:`register_table` binds a catalog table to a path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StringType, StructField, StructType

from shoal.errors import InvalidOptionError, SchemaMismatchError
from shoal.read.incremental import ROW_KIND
from shoal.spark.catalog_tables import refuse_catalog_create
from shoal.spark.read import ShoalReader, table_columns
from shoal.spark.source_options import COLUMNS, SourceOptions, open_store
from shoal.spark.stream_read import ShoalStreamReader
from shoal.spark.stream_write import ShoalStreamWriter
from shoal.spark.types import spark_schema
from shoal.spark.write import ShoalWriter, prepare_for_write
from shoal.table import Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ShoalDataSource", "prepare_for_write", "register", "register_table"]


class ShoalDataSource(DataSource):
    """The ``shoal`` format. Spark creates and pickles instances itself."""

    # Options fixed by a subclass that register_table() binds to one table.
    bound_options: ClassVar[Mapping[str, str]] = {}
    # How many tasks the session runs at once, as register() found it; None: the
    # cores of the machine that plans the read.
    parallelism: ClassVar[int | None] = None

    @classmethod
    def name(cls) -> str:
        return "shoal"

    def _options(self) -> SourceOptions:
        return SourceOptions.parse(dict(self.options), self.bound_options)

    def schema(self) -> StructType:
        """The table's columns (at the time-travel point, if one is given), or those of
        the ``columns`` option, all nullable. Refuses ``CREATE TABLE ... USING shoal``
        (``catalog_tables``) unless the format is bound to a table."""
        if not self.bound_options:
            refuse_catalog_create(self.options)
        options = self._options()
        store = open_store(options.path, options.storage_options)
        schema = store.schema
        if options.time_travel:
            snapshot = (
                Table(store)
                .scan(
                    snapshot_id=options.snapshot_id,
                    tag=options.tag,
                    timestamp_ms=options.timestamp_ms,
                )
                .snapshot
            )
            if snapshot is not None:
                schema = store.schema_of(snapshot.schema_id)
        fields = list(schema.fields)
        if options.columns is not None:
            try:
                names = table_columns(options.columns, schema, "option 'columns'")
            except SchemaMismatchError as exc:
                raise InvalidOptionError(COLUMNS, ",".join(options.columns), str(exc)) from None
            fields = [schema.field(n) for n in names]
        out = spark_schema(fields)
        if options.audit_log:  # Paimon's audit_log: the row kind first
            return StructType([StructField(ROW_KIND, StringType(), True), *out.fields])
        return out

    def reader(self, schema: StructType) -> DataSourceReader:
        return ShoalReader(self._options(), schema, self.parallelism)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """``readStream``: micro-batches of the commits, offsets snapshot ids
        (``stream_read``)."""
        return ShoalStreamReader(self._options(), schema, self.parallelism)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return ShoalWriter(self._options(), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """``writeStream``: each micro-batch one snapshot, at most once (``stream_write``)."""
        return ShoalStreamWriter(self._options(), schema, overwrite)


def register(spark: SparkSession) -> None:
    """Register the ``shoal`` format in ``spark``. The format registered knows the
    session's default parallelism: reads split a small table into that many tasks (the
    format Spark finds by itself uses the cores of the machine that plans the read)."""
    spark.dataSource.register(_bound_source(spark, "shoal", {}))


def register_table(
    spark: SparkSession, name: str, path: str, options: Mapping[str, str] | None = None
) -> str:
    """Make ``name`` a table of the session catalog that reads and writes the shoal
    table at ``path``; returns the format bound to it.

    Spark's session catalog stores the ``OPTIONS`` of ``CREATE TABLE ... USING shoal``
    but hands a Python source none of them when the table is read or written, so the
    source cannot find the table. This registers a format ``shoal_<name>`` that knows
    ``path`` (and ``options``) and creates the catalog table with it if it is absent;
    ``SELECT``, ``INSERT INTO`` and ``INSERT OVERWRITE`` then work on ``name``, and
    per-query options still go in ``WITH (...)``. Registration lasts for the session.
    """
    format_name = "shoal_" + re.sub(r"\W", "_", name).lower()
    bound = {str(k).lower(): str(v) for k, v in (options or {}).items()}
    bound["path"] = path
    spark.dataSource.register(_bound_source(spark, format_name, bound))
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING {format_name}")
    return format_name


def _bound_source(
    spark: SparkSession, format_name: str, options: Mapping[str, str]
) -> type[ShoalDataSource]:
    """The ``shoal`` source as the format ``format_name`` with ``options`` fixed and the
    session's default parallelism. Spark pickles the class by value, so workers need
    nothing registered."""
    source_name = format_name  # bound into the class below, pickled by value with it

    def bound_name(cls: type[Any]) -> str:
        return source_name

    attributes = {
        "bound_options": dict(options),
        "name": classmethod(bound_name),
        "parallelism": default_parallelism(spark),
    }
    return type(f"ShoalDataSource_{format_name}", (ShoalDataSource,), attributes)


def default_parallelism(spark: SparkSession) -> int | None:
    """``spark``'s default parallelism, or None where it has no SparkContext (Spark
    Connect)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except (AttributeError, NotImplementedError):
        return None
