"""One call to write a DataFrame into a table, by the fastest path the table allows."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from shoal.errors import InvalidArgumentError
from shoal.format.snapshot import Snapshot
from shoal.spark.parquet_write import why_not_parquet, write_parquet_into
from shoal.spark.source_options import normalize_path, open_store
from shoal.spark.timestamp_precision import TRUNCATE_OPTION

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

logger = logging.getLogger(__name__)

Mode = Literal["append", "overwrite"]


def write_table(
    df: DataFrame,
    table_path: str,
    mode: Mode = "append",
    *,
    dynamic_partition_overwrite: bool = False,
    timestamp_precision_truncate: bool = False,
    storage_options: Mapping[str, str] | None = None,
) -> Snapshot | None:
    """Write ``df`` into the table at ``table_path`` in one commit.

    An unbucketed append table is written by Spark's own Parquet writer
    (:func:`shoal.spark.parquet_write.write_parquet`), and the snapshot is returned;
    any other table through the ``shoal`` data source (on a primary-key table an
    append is an upsert), which reports no snapshot (None). ``overwrite`` replaces the
    whole table, or with ``dynamic_partition_overwrite`` the partitions ``df`` has
    rows for. ``timestamp_precision_truncate`` floors microsecond timestamps into
    coarser columns (the source's ``timestamp-precision-truncate``; tables with such
    columns always go through the data source). The rows are written as ``df`` is
    partitioned: :func:`shoal.spark.prepare_for_write` shuffles them to one task per
    bucket first. ``storage_options`` configure the table's store (docs/tables.md).

    Raises:
        SchemaMismatchError: ``df`` does not fit the table; nothing is written.
        InvalidArgumentError: an unknown ``mode``.
    """
    if mode not in ("append", "overwrite"):
        raise InvalidArgumentError(f"mode must be 'append' or 'overwrite', not {mode!r}")
    path = normalize_path(table_path)
    store = open_store(path, storage_options)
    reason = why_not_parquet(store)
    if reason is None:
        return write_parquet_into(
            store,
            df,
            overwrite=mode == "overwrite",
            dynamic_partition_overwrite=dynamic_partition_overwrite,
        )
    logger.info("writing %s through the shoal data source: %s", path, reason)
    writer = df.write.format("shoal").mode(mode).options(**(storage_options or {}))
    if timestamp_precision_truncate:
        writer = writer.option(TRUNCATE_OPTION, "true")
    if mode == "overwrite":
        scope = "dynamic" if dynamic_partition_overwrite else "static"
        writer = writer.option("partitionOverwriteMode", scope)
    writer.save(path)
    return None
