"""Spark registers the ``shoal`` format from this module by itself: it looks for
top-level ``pyspark_*`` modules that expose a ``DefaultSource``."""

from shoal.spark.datasource import ShoalDataSource as DefaultSource

__all__ = ["DefaultSource"]
