"""Schema files: ``schema/schema-<id>``, every version kept."""

from __future__ import annotations

import threading

from shoal.core.paths import SCHEMA_PREFIX, PathFactory, id_of
from shoal.errors import CorruptMetadataError
from shoal.format.schema import TableSchema
from shoal.io import FileIO


class SchemaManager:
    def __init__(self, file_io: FileIO, paths: PathFactory) -> None:
        self.file_io = file_io
        self.paths = paths
        self._cache: dict[int, TableSchema] = {}
        self._lock = threading.Lock()

    def list_ids(self) -> list[int]:
        ids = []
        for status in self.file_io.list_status(self.paths.schema_dir):
            schema_id = id_of(status.path.rsplit("/", 1)[-1], SCHEMA_PREFIX)
            if schema_id is not None and not status.is_dir:
                ids.append(schema_id)
        return sorted(ids)

    def latest(self) -> TableSchema | None:
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None

    def schema(self, schema_id: int) -> TableSchema:
        cached = self._cache.get(schema_id)
        if cached is not None:
            return cached
        path = self.paths.schema_path(schema_id)
        try:
            data = self.file_io.read_bytes(path)
        except FileNotFoundError:
            raise CorruptMetadataError(path, "the schema file is missing") from None
        except IsADirectoryError:
            raise CorruptMetadataError(path, "a directory stands in its place") from None
        schema = TableSchema.from_json(data, path)
        with self._lock:
            self._cache[schema_id] = schema
        return schema

    def try_create(self, schema: TableSchema) -> bool:
        """Write a new schema version; False if that id exists already."""
        created = self.file_io.try_create(
            self.paths.schema_path(schema.id), schema.to_json().encode()
        )
        if created:
            with self._lock:
                self._cache[schema.id] = schema
        return created
