"""shoal: Apache Paimon-format tables from Python and PySpark.

import shoal
catalog = shoal.Catalog("/data/warehouse")
table = catalog.create_table("db.events", schema, partition_keys=["dt"])
table.append(data)
table.to_arrow(snapshot_id=1)
"""

from collections.abc import Mapping

from shoal.catalog import Catalog
from shoal.cleanup.expire import ExpireResult
from shoal.cleanup.orphans import OrphanFilesResult
from shoal.compaction.compact import CompactResult
from shoal.core.plan import DataSplit
from shoal.core.schema_update import SchemaUpdate
from shoal.errors import (
    CommitConflictError,
    CorruptDataFileError,
    CorruptMetadataError,
    DatabaseNotFoundError,
    FileTimeError,
    InvalidArgumentError,
    InvalidFilterError,
    InvalidInputDataError,
    InvalidOptionError,
    InvalidTagNameError,
    MissingDependencyError,
    NotNullViolationError,
    PartitionExpiredError,
    SchemaConflictError,
    SchemaMismatchError,
    ShoalError,
    SnapshotNotFoundError,
    StoreUnreachableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
    UnknownOptionError,
    UnsafeCommitError,
    UnsupportedFeatureError,
)
from shoal.event_time.freshness import Freshness
from shoal.format.snapshot import Snapshot
from shoal.format.tag import Tag
from shoal.scan import Scan
from shoal.table import Table

__version__ = "0.1.0"


def open_table(path: str, *, storage_options: Mapping[str, str] | None = None) -> Table:
    """Open the table whose directory is ``path`` (a local path or a URI), its store
    configured by ``storage_options`` (docs/tables.md lists the keys of each store)."""
    return Table.open(path, storage_options=storage_options)


__all__ = [
    "Catalog",
    "CompactResult",
    "CommitConflictError",
    "CorruptDataFileError",
    "CorruptMetadataError",
    "DataSplit",
    "DatabaseNotFoundError",
    "ExpireResult",
    "FileTimeError",
    "Freshness",
    "InvalidArgumentError",
    "InvalidFilterError",
    "InvalidInputDataError",
    "InvalidOptionError",
    "InvalidTagNameError",
    "MissingDependencyError",
    "NotNullViolationError",
    "OrphanFilesResult",
    "PartitionExpiredError",
    "Scan",
    "SchemaConflictError",
    "SchemaMismatchError",
    "SchemaUpdate",
    "ShoalError",
    "Snapshot",
    "SnapshotNotFoundError",
    "StoreUnreachableError",
    "Table",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "Tag",
    "TagAlreadyExistsError",
    "TagNotFoundError",
    "UnknownOptionError",
    "UnsafeCommitError",
    "UnsupportedFeatureError",
    "open_table",
]
