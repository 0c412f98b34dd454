"""FileStore: everything one table's operations share, built once per open table."""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Any

import pyarrow as pa

from shoal import features
from shoal import options as O
from shoal.core import merge_engine
from shoal.core.changelog_manager import ChangelogManager
from shoal.core.consumers import ConsumerManager
from shoal.core.kv import KeyValueLayout, MergeSettings
from shoal.core.manifests import ManifestStore
from shoal.core.partition import PartitionCodec
from shoal.core.paths import PathFactory
from shoal.core.schema_manager import SchemaManager
from shoal.core.snapshot_manager import SnapshotManager
from shoal.core.tag_manager import TagManager
from shoal.format import binary_row
from shoal.format import types as T
from shoal.format.schema import TableSchema
from shoal.io import FileIO
from shoal.options import Options


class FileStore:
    """A table's location, schema, options and metadata managers.

    ``uri`` is the location as the user gave it; ``root`` is the same place in
    FileIO's terms.
    """

    def __init__(self, file_io: FileIO, uri: str, root: str, schema: TableSchema) -> None:
        self.file_io = file_io
        self.uri = uri
        self.root = root
        self.schema = schema
        self.options = Options(schema.options)
        features.require(schema.options, primary_key=self.is_primary_key, table=uri, scope="read")
        if self.is_primary_key:
            self.merge_settings  # noqa: B018 (an engine shoal does not implement is refused here)
        self.paths = PathFactory(root, data_file_prefix=self.options.get(O.DATA_FILE_PREFIX))
        self.snapshots = SnapshotManager(file_io, self.paths)
        self.schemas = SchemaManager(file_io, self.paths)
        self.partitions = PartitionCodec(
            schema,
            self.options.get(O.PARTITION_DEFAULT_NAME),
            legacy_name=self.options.get(O.PARTITION_LEGACY_NAME),
        )
        self.manifests = ManifestStore(
            file_io,
            self.paths,
            schema.partition_types(),
            self.partitions.decode,
            compression=self.options.get(O.MANIFEST_COMPRESSION),
            target_size=self.options.get(O.MANIFEST_TARGET_FILE_SIZE),
        )
        # When the commits of this open table last looked for expired partitions, so
        # that they look at most once per partition.expiration-check-interval.
        self.partition_expire_checked_at: datetime | None = None

    @cached_property
    def tags(self) -> TagManager:
        return TagManager(self.file_io, self.paths)

    @cached_property
    def changelogs(self) -> ChangelogManager:
        """The long-lived changelogs (kept when changelogs outlive their snapshots)."""
        return ChangelogManager(self.file_io, self.paths)

    @cached_property
    def consumers(self) -> ConsumerManager:
        """The table's consumers: each streaming reader's next snapshot, which
        expiration keeps."""
        return ConsumerManager(self.file_io, self.root)

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        return self.schema.arrow_schema()

    @property
    def num_buckets(self) -> int:
        return self.options.get(O.BUCKET)

    @cached_property
    def bucket_keys(self) -> list[str]:
        explicit = self.options.get(O.BUCKET_KEY)
        if explicit:
            return [k.strip() for k in explicit.split(",") if k.strip()]
        if self.schema.primary_keys:
            trimmed = [k for k in self.schema.primary_keys if k not in self.schema.partition_keys]
            return trimmed or list(self.schema.primary_keys)
        return [f.name for f in self.schema.fields]

    @cached_property
    def bucket_key_types(self) -> list[T.DataType]:
        return [self.schema.field(k).type for k in self.bucket_keys]

    @property
    def target_file_size(self) -> int:
        return self.options.get(O.TARGET_FILE_SIZE)

    @property
    def file_compression(self) -> str:
        return self.options.get(O.FILE_COMPRESSION)

    @property
    def stats_mode(self) -> str:
        return self.options.get(O.STATS_MODE)

    @cached_property
    def event_time_columns(self) -> tuple[str, ...]:
        """The event-time column (``compaction.event-time.field``), if the table has one."""
        name = self.options.get(O.COMPACTION_EVENT_TIME_FIELD)
        return (name,) if name else ()

    @property
    def is_primary_key(self) -> bool:
        return bool(self.schema.primary_keys)

    @cached_property
    def layout(self) -> KeyValueLayout:
        return KeyValueLayout(self.schema)

    @cached_property
    def merge_settings(self) -> MergeSettings:
        return merge_engine.merge_settings(self.schema, self.schema.options, self.uri)

    @property
    def max_level(self) -> int:
        """The top level of the LSM tree, where full compaction writes."""
        levels = self.options.get(O.NUM_LEVELS) or (
            self.options.get(O.NUM_SORTED_RUN_COMPACTION_TRIGGER) + 1
        )
        return levels - 1

    def decode_key(self, data: bytes) -> tuple[Any, ...]:
        """A data file's min or max key as a comparable tuple."""
        return binary_row.deserialize(data, self.layout.key_types)

    def require_writable(self) -> None:
        """Refuse a write or compaction of a table whose options switch on a feature
        shoal does not implement for writes (a changelog producer, say), or on a store
        that cannot publish a commit safely. Raises UnsupportedFeatureError or
        UnsafeCommitError before anything is written."""
        features.require(
            self.schema.options, primary_key=self.is_primary_key, table=self.uri, scope="write"
        )
        self.file_io.require_safe_commit(self.root)

    def schema_of(self, schema_id: int) -> TableSchema:
        return self.schema if schema_id == self.schema.id else self.schemas.schema(schema_id)
