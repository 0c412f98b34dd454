"""A read of a shoal table that a join can broadcast when the table is small.

Spark sizes a relation from its statistics, and a Python data source can report none:
Spark's ``PythonScan`` (4.3) implements no ``SupportsReportStatistics``, so every
shoal DataFrame counts as ``sizeInBytes = 8.0 EiB`` and the planner never broadcasts
it. With adaptive execution on, Spark shuffles both sides of the join first and may
turn it into a broadcast join from the shuffled bytes; with it off, the join stays a
sort-merge join. :func:`read_table` plans the read on the driver, adds up the bytes
of the data files the read covers (as Spark sizes its own file tables: bytes on disk
times ``spark.sql.sources.fileCompressionFactor``), and marks the DataFrame with
Spark's broadcast hint when that is within ``spark.sql.autoBroadcastJoinThreshold``,
the rule Spark applies to the tables it can size. A hint changes the plan, never the
rows.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from shoal.core import filter_text
from shoal.errors import InvalidOptionError
from shoal.spark.source_options import PATH, READ, SourceOptions, open_store
from shoal.table import Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

logger = logging.getLogger(__name__)

THRESHOLD_CONF = "spark.sql.autoBroadcastJoinThreshold"
COMPRESSION_CONF = "spark.sql.sources.fileCompressionFactor"
DEFAULT_THRESHOLD = 10 << 20  # Spark's default, 10 MiB

# Spark's byte-size syntax (JavaUtils.byteStringAs): an integer and a binary unit.
_UNITS = {"": 0, "b": 0, "k": 10, "kb": 10, "m": 20, "mb": 20, "g": 30, "gb": 30}
_UNITS |= {"t": 40, "tb": 40, "p": 50, "pb": 50}
_SIZE = re.compile(r"(-?)([0-9]+)\s*([a-z]*)")


def read_table(spark: SparkSession, path: str, **options: str) -> DataFrame:
    """``spark.read.format("shoal").options(**options).load(path)``, with Spark's
    broadcast hint when the data the read covers is within
    ``spark.sql.autoBroadcastJoinThreshold``.

    The size is that of the data files of the snapshot the options select (the latest
    by default), less those the ``filter`` option prunes, measured now: the hint stays
    on the DataFrame however the table grows later. Incremental reads
    (``incremental-between``) are not sized and get no hint.

    Raises:
        InvalidOptionError: an option the ``shoal`` source refuses, or a threshold
            that is not one of Spark's byte sizes.
        UnsupportedFeatureError: an option the source does not implement.
        TableNotFoundError: no table at ``path``.
    """
    parsed = SourceOptions.parse({**options, PATH: path})
    parsed.require_use(READ)
    df = spark.read.format("shoal").options(**options).load(path)
    threshold = broadcast_threshold(spark.conf.get(THRESHOLD_CONF, None))
    size = read_bytes(parsed)
    if size is None or threshold < 0:
        return df
    factor = float(spark.conf.get(COMPRESSION_CONF, None) or 1.0)
    estimate = int(size * factor)
    if estimate > threshold:
        logger.info("%s: %d bytes, above the broadcast threshold %d", path, estimate, threshold)
        return df
    logger.info("%s: %d bytes, broadcast (threshold %d)", path, estimate, threshold)
    return df.hint("broadcast")


def read_bytes(options: SourceOptions) -> int | None:
    """The bytes on disk of the data files a read with ``options`` covers: the live
    files of its snapshot (or of the top level, read-optimized) that its ``filter``
    does not prune; 0 for a table with no snapshot; None for an incremental read."""
    if options.incremental is not None:
        return None
    table = Table(open_store(options.path, options.storage_options))

    planned = table.scan(
        snapshot_id=options.snapshot_id,
        tag=options.tag,
        timestamp_ms=options.timestamp_ms,
        read_optimized=options.read_optimized,
    )
    if options.filter is not None:
        dnf = filter_text.parse(options.filter, planned.table_schema.arrow_schema())
        planned = table.scan(
            snapshot_id=options.snapshot_id,
            tag=options.tag,
            timestamp_ms=options.timestamp_ms,
            read_optimized=options.read_optimized,
            filter=dnf,
        )
    return sum(f.file_size for split in planned.plan() for f in split.files)


def broadcast_threshold(text: str | None) -> int:
    """``spark.sql.autoBroadcastJoinThreshold`` in bytes, read as Spark reads it
    (``10485760b``, ``10m``, ``-1``); negative: broadcasting by size is off."""
    if text is None or not text.strip():
        return DEFAULT_THRESHOLD
    match = _SIZE.fullmatch(text.strip().lower())
    if match is None or match.group(3) not in _UNITS:
        raise InvalidOptionError(
            THRESHOLD_CONF, text, "expected a byte size as Spark reads it, e.g. '10m' or '-1'"
        )
    sign = -1 if match.group(1) else 1
    return sign * (int(match.group(2)) << _UNITS[match.group(3)])
