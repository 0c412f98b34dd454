"""shoal on Spark: the ``shoal`` Python Data Source (no JVM plugin jar) and the
distributed maintenance jobs. The only package of shoal that imports ``pyspark``.

    import shoal.spark
    shoal.spark.register(spark)
    spark.read.format("shoal").load(table_path)
    shoal.spark.read_table(spark, table_path)  # broadcast in joins when small
    shoal.spark.write_table(df, table_path)  # Spark's Parquet writer where it can
    shoal.spark.compact(spark, table_path, strategy="event-time")
    shoal.spark.merge(df, table_path, on=["id"]).when_matched_update().execute()
"""

from shoal.errors import MissingDependencyError

try:
    import pandas  # noqa: F401  (PySpark's Arrow paths import it)
    import pyspark  # noqa: F401
except ImportError as exc:  # depends on the installation
    raise MissingDependencyError("shoal.spark", "spark", exc.name or "pyspark") from exc

from shoal.spark.dataframe_merge import SparkMerge, merge
from shoal.spark.datasource import ShoalDataSource, register, register_table
from shoal.spark.jobs import compact, expire_partitions, expire_snapshots, remove_orphan_files
from shoal.spark.parquet_write import write_parquet
from shoal.spark.sized_read import read_table
from shoal.spark.table_write import write_table
from shoal.spark.udtfs import register_functions
from shoal.spark.write import prepare_for_write

__all__ = [
    "ShoalDataSource",
    "SparkMerge",
    "compact",
    "expire_partitions",
    "expire_snapshots",
    "merge",
    "prepare_for_write",
    "read_table",
    "register",
    "register_functions",
    "register_table",
    "remove_orphan_files",
    "write_parquet",
    "write_table",
]
