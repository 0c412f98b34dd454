"""The options of the ``shoal`` data source, parsed once, and opening a table by path.

Spark hands options over with lower-cased keys; values keep their case. Read options
follow Paimon's keys (``scan.snapshot-id``, ``scan.tag-name``,
``scan.timestamp-millis``, ``incremental-between``, ``read-optimized``); a split
target or open-file cost given as a read option overrides the table's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from shoal import options as O
from shoal.errors import InvalidOptionError, TableNotFoundError
from shoal.io import file_io_for
from shoal.table.paths import PathFactory
from shoal.table.schema_manager import SchemaManager
from shoal.table.store import FileStore

PATH = "path"
SNAPSHOT_ID = "scan.snapshot-id"
TAG_NAME = "scan.tag-name"
TIMESTAMP_MILLIS = "scan.timestamp-millis"
READ_OPTIMIZED = "read-optimized"
INCREMENTAL_BETWEEN = "incremental-between"
COLUMNS = "columns"
FILTER_PUSHDOWN = "filter-pushdown"
DYNAMIC_PARTITION_OVERWRITE = "dynamic-partition-overwrite"
WRITE_BUFFER_SIZE = "write-buffer-size"

DEFAULT_WRITE_BUFFER = 64 << 20

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """What the options of one read or write ask for."""

    path: str
    snapshot_id: int | None = None
    tag: str | None = None
    timestamp_ms: int | None = None
    read_optimized: bool = False
    incremental: tuple[int, int] | tuple[str, str] | None = None
    columns: tuple[str, ...] | None = None
    filter_pushdown: bool = False
    split_target_size: int | None = None
    split_open_file_cost: int | None = None
    dynamic_overwrite: bool = False
    write_buffer_size: int = DEFAULT_WRITE_BUFFER

    @staticmethod
    def parse(options: Mapping[str, str]) -> SourceOptions:
        """Raises InvalidOptionError for a missing path or a value that does not parse."""
        raw = {str(k).lower(): v for k, v in options.items()}
        path = raw.get(PATH)
        if not path:
            raise InvalidOptionError(
                PATH,
                path,
                "the shoal data source needs the table's path: .load(path), "
                ".option('path', ...), or OPTIONS (path '...') / WITH ('path' = '...') in SQL",
            )
        parsed = SourceOptions(
            path=normalize_path(path),
            snapshot_id=_get(raw, SNAPSHOT_ID, int),
            tag=raw.get(TAG_NAME) or None,
            timestamp_ms=_get(raw, TIMESTAMP_MILLIS, int),
            read_optimized=_get(raw, READ_OPTIMIZED, _bool) or False,
            incremental=_get(raw, INCREMENTAL_BETWEEN, _range),
            columns=_get(raw, COLUMNS, _names),
            filter_pushdown=_get(raw, FILTER_PUSHDOWN, _bool) or False,
            split_target_size=_get(raw, O.SPLIT_TARGET_SIZE.key, O.parse_memory_size),
            split_open_file_cost=_get(raw, O.SPLIT_OPEN_FILE_COST.key, O.parse_memory_size),
            dynamic_overwrite=_get(raw, DYNAMIC_PARTITION_OVERWRITE, _bool) or False,
            write_buffer_size=_get(raw, WRITE_BUFFER_SIZE, O.parse_memory_size)
            or DEFAULT_WRITE_BUFFER,
        )
        travel = [
            k
            for k, v in (
                (SNAPSHOT_ID, parsed.snapshot_id),
                (TAG_NAME, parsed.tag),
                (TIMESTAMP_MILLIS, parsed.timestamp_ms),
                (INCREMENTAL_BETWEEN, parsed.incremental),
            )
            if v is not None
        ]
        if len(travel) > 1:
            raise InvalidOptionError(
                travel[1], raw[travel[1]], f"give at most one of {', '.join(travel)}"
            )
        return parsed

    @property
    def time_travel(self) -> bool:
        return any(x is not None for x in (self.snapshot_id, self.tag, self.timestamp_ms))


def normalize_path(path: str) -> str:
    """A table path as shoal opens it. Spark's catalog spells local paths ``file:/x``."""
    if path.startswith("file:") and not path.startswith("file://"):
        return "/" + path[len("file:") :].lstrip("/")
    return path


def open_store(path: str) -> FileStore:
    """The table at ``path`` (latest schema). Raises TableNotFoundError."""
    file_io, root = file_io_for(path)
    schema = SchemaManager(file_io, PathFactory(root)).latest()
    if schema is None:
        raise TableNotFoundError(path)
    return FileStore(file_io, path, root, schema)


def _get(raw: Mapping[str, str], key: str, parse: Callable[[str], V]) -> V | None:
    text = raw.get(key)
    if text is None or text.strip() == "":
        return None
    try:
        return parse(text.strip())
    except ValueError as exc:
        raise InvalidOptionError(key, text, str(exc)) from None


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected 'true' or 'false'")
    return lowered == "true"


def _names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise ValueError("expected comma-separated column names")
    return names


def _range(text: str) -> tuple[int, int] | tuple[str, str]:
    """Two snapshot ids (``3,7``) or two tag names (tag names are never all digits)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise ValueError("expected two snapshot ids or two tag names, e.g. '3,7' or 'v1,v2'")
    start, end = parts
    if start.isdigit() and end.isdigit():
        return int(start), int(end)
    if start.isdigit() or end.isdigit():
        raise ValueError("give two snapshot ids or two tag names, not a mix")
    return start, end
