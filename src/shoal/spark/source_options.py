"""The options of the ``shoal`` data source, parsed once, and opening a table by path.

Spark hands options over with lower-cased keys; values keep their case. Read options
follow Paimon's keys (``scan.snapshot-id``, ``scan.tag-name``,
``scan.timestamp-millis``, ``incremental-between`` with
``incremental-between-scan-mode``, ``read-optimized``; a path ending in
``$audit_log`` reads the rows with their kinds) and Spark's
(``versionAsOf`` and ``timestampAsOf``, as Delta Lake reads them); a split target or
open-file cost given as a read option overrides the table's. Write options:
Spark's ``partitionOverwriteMode`` (or shoal's ``dynamic-partition-overwrite``),
``mergeSchema`` (as Delta Lake's: columns of the data that the table lacks are added
first) and ``write-buffer-size``; a streaming write's commit user comes from Spark's
``checkpointLocation`` or shoal's ``commit-user`` (``queryName`` is taken and unused).

Every other key is refused: a typo with the nearest known key, one of Paimon's or
Spark's options that the source does not implement by name. So is a known key given
where nothing reads it (``USES``: a write option on a read, a batch read's option on a
stream, ...), except those a format bound to one table fixes for all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, TypeVar

from shoal import options as O
from shoal.core.paths import PathFactory
from shoal.core.schema_manager import SchemaManager
from shoal.core.store import FileStore
from shoal.errors import InvalidOptionError, TableNotFoundError, UnsupportedFeatureError
from shoal.features import unknown_option
from shoal.io import file_io_for
from shoal.read.incremental import SCAN_MODES

PATH = "path"
SNAPSHOT_ID = "scan.snapshot-id"
TAG_NAME = "scan.tag-name"
TIMESTAMP_MILLIS = "scan.timestamp-millis"
READ_OPTIMIZED = "read-optimized"
INCREMENTAL_BETWEEN = "incremental-between"
INCREMENTAL_BETWEEN_SCAN_MODE = "incremental-between-scan-mode"
AUDIT_LOG = "audit_log"
COLUMNS = "columns"
FILTER_PUSHDOWN = "filter-pushdown"
FILTER = "filter"
DYNAMIC_PARTITION_OVERWRITE = "dynamic-partition-overwrite"
WRITE_BUFFER_SIZE = "write-buffer-size"
# Spark's microsecond timestamps into coarser columns, floored (spark/timestamp_precision)
TIMESTAMP_PRECISION_TRUNCATE = "timestamp-precision-truncate"
COMMIT_USER = "commit-user"  # a streaming write's commit user (shoal's own option)
# Spark's own names (lower-cased, as Spark hands them over).
VERSION_AS_OF = "versionasof"
TIMESTAMP_AS_OF = "timestampasof"
PARTITION_OVERWRITE_MODE = "partitionoverwritemode"
MERGE_SCHEMA = "mergeschema"
# Structured Streaming reads (spark/stream_read): Spark's names and Paimon's consumer keys.
STARTING_OFFSETS = "startingoffsets"
MAX_FILES_PER_TRIGGER = "maxfilespertrigger"
MAX_BYTES_PER_TRIGGER = "maxbytespertrigger"
CONSUMER_ID = "consumer-id"
CONSUMER_IGNORE_PROGRESS = "consumer.ignore-progress"
STREAM_KEYS = frozenset(
    {
        STARTING_OFFSETS,
        MAX_FILES_PER_TRIGGER,
        MAX_BYTES_PER_TRIGGER,
        CONSUMER_ID,
        CONSUMER_IGNORE_PROGRESS,
    }
)
CHECKPOINT_LOCATION = "checkpointlocation"  # a streaming write's, when given as an option
QUERY_NAME = "queryname"  # a streaming write's queryName(...), which Spark hands over too

# Storage options (docs/tables.md): every key under the storage namespaces of Paimon
# and of the store libraries travels to the table's FileIO, in the driver and the tasks.
STORAGE_PREFIXES = ("s3.", "s3a.", "fs.", "gs.", "azure.", "aws_", "lock.")

KNOWN_KEYS = frozenset(
    {
        PATH,
        SNAPSHOT_ID,
        TAG_NAME,
        TIMESTAMP_MILLIS,
        READ_OPTIMIZED,
        INCREMENTAL_BETWEEN,
        INCREMENTAL_BETWEEN_SCAN_MODE,
        COLUMNS,
        FILTER,
        FILTER_PUSHDOWN,
        DYNAMIC_PARTITION_OVERWRITE,
        WRITE_BUFFER_SIZE,
        TIMESTAMP_PRECISION_TRUNCATE,
        VERSION_AS_OF,
        TIMESTAMP_AS_OF,
        PARTITION_OVERWRITE_MODE,
        MERGE_SCHEMA,
        COMMIT_USER,
        CHECKPOINT_LOCATION,
        QUERY_NAME,
        O.SPLIT_TARGET_SIZE.key,
        O.SPLIT_OPEN_FILE_COST.key,
        *STREAM_KEYS,
    }
)
# Properties Spark's session catalog hands over with a catalog table's options: they
# describe the catalog entry, not the read or write.
SPARK_CATALOG_PROPERTIES = frozenset(
    {"owner", "provider", "comment", "external", "location", "is_managed_location"}
)
# How the known keys are spelled in messages (Spark's are camel-cased).
_SPELLED = {
    VERSION_AS_OF: "versionAsOf",
    TIMESTAMP_AS_OF: "timestampAsOf",
    PARTITION_OVERWRITE_MODE: "partitionOverwriteMode",
    MERGE_SCHEMA: "mergeSchema",
    CHECKPOINT_LOCATION: "checkpointLocation",
    QUERY_NAME: "queryName",
    STARTING_OFFSETS: "startingOffsets",
    MAX_FILES_PER_TRIGGER: "maxFilesPerTrigger",
    MAX_BYTES_PER_TRIGGER: "maxBytesPerTrigger",
}
# What an option applies to: a batch read, a streaming read, a batch write or a
# streaming write. Given to anything else it would be read by nothing, so it is refused.
Use = Literal["read", "stream read", "write", "stream write"]
READ: Use = "read"
STREAM_READ: Use = "stream read"
WRITE: Use = "write"
STREAM_WRITE: Use = "stream write"
_ORDER = (READ, STREAM_READ, WRITE, STREAM_WRITE)
_ANY = frozenset(_ORDER)
_READS = frozenset({READ, STREAM_READ})
_WRITES = frozenset({WRITE, STREAM_WRITE})
USES: Mapping[str, frozenset[Use]] = {
    PATH: _ANY,
    **dict.fromkeys(
        (
            SNAPSHOT_ID,
            VERSION_AS_OF,
            TAG_NAME,
            TIMESTAMP_MILLIS,
            TIMESTAMP_AS_OF,
            READ_OPTIMIZED,
            INCREMENTAL_BETWEEN,
            INCREMENTAL_BETWEEN_SCAN_MODE,
        ),
        frozenset({READ}),
    ),
    **dict.fromkeys(
        (COLUMNS, FILTER, FILTER_PUSHDOWN, O.SPLIT_TARGET_SIZE.key, O.SPLIT_OPEN_FILE_COST.key),
        _READS,
    ),
    **dict.fromkeys(STREAM_KEYS, frozenset({STREAM_READ})),
    **dict.fromkeys((DYNAMIC_PARTITION_OVERWRITE, PARTITION_OVERWRITE_MODE), frozenset({WRITE})),
    **dict.fromkeys((WRITE_BUFFER_SIZE, TIMESTAMP_PRECISION_TRUNCATE, MERGE_SCHEMA), _WRITES),
    **dict.fromkeys((COMMIT_USER, CHECKPOINT_LOCATION, QUERY_NAME), frozenset({STREAM_WRITE})),
    # Storage options apply to every use: each opens the table's store.
    **dict.fromkeys(STORAGE_PREFIXES, _ANY),
}
# What to do instead, by what the option was given to.
_INSTEAD: Mapping[Use, str] = {
    READ: "",
    STREAM_READ: "; a stream reads from where startingOffsets says, then every commit",
    WRITE: "",
    STREAM_WRITE: (
        "; a streaming write appends or upserts each batch (outputMode('complete') "
        "replaces the table with it)"
    ),
}

OverwriteMode = Literal["static", "dynamic"]

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
    scan_mode: str = "auto"  # Paimon's incremental-between-scan-mode
    audit_log: bool = False  # the path names ``<table>$audit_log``: rows with their kinds
    columns: tuple[str, ...] | None = None
    filter: str | None = None
    split_target_size: int | None = None
    split_open_file_cost: int | None = None
    overwrite_mode: OverwriteMode | None = None
    write_buffer_size: int = DEFAULT_WRITE_BUFFER
    merge_schema: bool = False
    truncate_timestamps: bool = False  # timestamp-precision-truncate
    commit_user: str | None = None
    checkpoint_location: str | None = None
    # The Structured Streaming read options as given (spark/stream_read parses them).
    stream: tuple[tuple[str, str], ...] = ()
    # The keys given for this read or write (not those a bound format fixes), as given.
    given: tuple[tuple[str, str], ...] = ()
    # The storage options (STORAGE_PREFIXES), out of the repr: values may be secrets.
    storage: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def storage_options(self) -> dict[str, str]:
        return dict(self.storage)

    @staticmethod
    def parse(options: Mapping[str, str], bound: Mapping[str, str] | None = None) -> SourceOptions:
        """``options`` over ``bound`` (those a format bound to one table fixes).

        Raises InvalidOptionError for a missing path, an unknown key or a value that
        does not parse, UnsupportedFeatureError for an option the source does not
        implement."""
        given = {str(k).lower(): v for k, v in options.items()}
        raw = {**{str(k).lower(): v for k, v in (bound or {}).items()}, **given}
        storage = {k: v for k, v in raw.items() if k.startswith(STORAGE_PREFIXES)}
        given = {k: v for k, v in given.items() if k not in storage}
        raw = {k: v for k, v in raw.items() if k not in storage}
        _check_keys(raw)
        path = raw.get(PATH)
        if not path:
            raise InvalidOptionError(
                PATH,
                path,
                "the shoal data source needs the table's path: .load(path), "
                ".option('path', ...), or in SQL WITH ('path' = '...') or a temporary view's "
                "OPTIONS (path '...'). Spark's session catalog hands the source none of the "
                "options of a table made by CREATE TABLE ... USING shoal, saveAsTable or "
                "CREATE TABLE ... AS SELECT: shoal.spark.register_table(spark, name, path) "
                "makes a catalog table that knows its path",
            )
        path, audit_log = _system_table(path)
        snapshot_ids = _one_of_names(raw, SNAPSHOT_ID, VERSION_AS_OF, int)
        timestamps = _one_of_names(raw, TIMESTAMP_MILLIS, TIMESTAMP_AS_OF, int, _instant)
        parsed = SourceOptions(
            path=normalize_path(path),
            snapshot_id=snapshot_ids,
            tag=raw.get(TAG_NAME) or None,
            timestamp_ms=timestamps,
            read_optimized=_get(raw, READ_OPTIMIZED, _bool) or False,
            incremental=_get(raw, INCREMENTAL_BETWEEN, _range),
            scan_mode=_scan_mode(raw),
            audit_log=audit_log,
            columns=_get(raw, COLUMNS, _names),
            filter=_filter(raw),
            split_target_size=_get(raw, O.SPLIT_TARGET_SIZE.key, O.parse_memory_size),
            split_open_file_cost=_get(raw, O.SPLIT_OPEN_FILE_COST.key, O.parse_memory_size),
            overwrite_mode=_overwrite_mode(raw),
            write_buffer_size=_get(raw, WRITE_BUFFER_SIZE, O.parse_memory_size)
            or DEFAULT_WRITE_BUFFER,
            merge_schema=_get(raw, MERGE_SCHEMA, _bool, "mergeSchema") or False,
            truncate_timestamps=_get(raw, TIMESTAMP_PRECISION_TRUNCATE, _bool) or False,
            commit_user=(raw.get(COMMIT_USER) or "").strip() or None,
            checkpoint_location=(raw.get(CHECKPOINT_LOCATION) or "").strip() or None,
            stream=tuple((k, raw[k]) for k in sorted(STREAM_KEYS) if k in raw),
            given=tuple(sorted(given.items())),
            storage=tuple(sorted(storage.items())),
        )
        travel = [
            k
            for k in (SNAPSHOT_ID, VERSION_AS_OF, TAG_NAME, TIMESTAMP_MILLIS, TIMESTAMP_AS_OF)
            if (raw.get(k) or "").strip()
        ]
        if parsed.incremental is not None:
            travel.append(INCREMENTAL_BETWEEN)
        if len(travel) > 1:
            raise InvalidOptionError(
                _SPELLED.get(travel[1], travel[1]),
                raw[travel[1]],
                f"give at most one of {', '.join(_SPELLED.get(k, k) for k in travel)}",
            )
        return parsed

    @property
    def time_travel(self) -> bool:
        return any(x is not None for x in (self.snapshot_id, self.tag, self.timestamp_ms))

    def require_use(self, use: Use) -> None:
        """Raises InvalidOptionError for an option given that does not apply to
        ``use`` (a write option on a read, a batch read's on a stream, ...): nothing
        would read it."""
        for key, value in self.given:
            uses = USES.get(key, _ANY)
            if use not in uses:
                where = " or ".join(f"a {u}" for u in _ORDER if u in uses)
                raise InvalidOptionError(
                    _SPELLED.get(key, key),
                    value,
                    f"applies to {where}, not to a {use}{_INSTEAD[use]}",
                )


def _system_table(path: str) -> tuple[str, bool]:
    """The table's path and whether it names its ``audit_log`` system table, as Paimon
    names system tables (``<table>$audit_log``). Raises UnsupportedFeatureError for the
    other system tables, which the source does not read."""
    head, slash, last = path.rstrip("/").rpartition("/")
    name, dollar, system = last.partition("$")
    if not dollar:
        return path, False
    if system.lower() != AUDIT_LOG:
        raise UnsupportedFeatureError(
            f"the shoal data source reads the system table {AUDIT_LOG!r} only, not "
            f"{system!r}; Table.system_table({system!r}) gives the others",
            feature=f"system table {system}",
        )
    return f"{head}{slash}{name}", True


def _scan_mode(raw: Mapping[str, str]) -> str:
    """``incremental-between-scan-mode``, which only an ``incremental-between`` read of two
    snapshot ids reads."""
    mode = (raw.get(INCREMENTAL_BETWEEN_SCAN_MODE) or "").strip().lower()
    if not mode:
        return "auto"
    if mode not in SCAN_MODES:
        raise InvalidOptionError(
            INCREMENTAL_BETWEEN_SCAN_MODE,
            raw[INCREMENTAL_BETWEEN_SCAN_MODE],
            f"expected one of {', '.join(SCAN_MODES)}",
        )
    if not (raw.get(INCREMENTAL_BETWEEN) or "").strip():
        raise InvalidOptionError(
            INCREMENTAL_BETWEEN_SCAN_MODE,
            raw[INCREMENTAL_BETWEEN_SCAN_MODE],
            "applies to an incremental-between read only; give incremental-between too",
        )
    return mode


def _check_keys(raw: Mapping[str, str]) -> None:
    spelled = {_SPELLED.get(k, k) for k in KNOWN_KEYS}
    for key, value in raw.items():
        if key in KNOWN_KEYS or key in SPARK_CATALOG_PROPERTIES:
            continue
        error = unknown_option(key, value, spelled, what="read or write option")
        if isinstance(error, UnsupportedFeatureError):
            raise UnsupportedFeatureError(
                f"the shoal data source does not implement the option {key!r}; see "
                "docs/spark.md for the options it takes",
                feature=key,
            ) from None
        raise error


def _one_of_names(
    raw: Mapping[str, str],
    paimon: str,
    spark: str,
    parse: Callable[[str], int],
    spark_parse: Callable[[str], int] | None = None,
) -> int | None:
    """The value of an option that has a Paimon name and a Spark name."""
    value = _get(raw, paimon, parse)
    if value is not None:
        return value
    return _get(raw, spark, spark_parse or parse, _SPELLED[spark])


def _instant(text: str) -> int:
    """``timestampAsOf`` as epoch milliseconds: an ISO 8601 time with its offset
    (``2026-11-01T08:00:00Z``, ``2026-11-01 10:00:00+02:00``). A time without one is
    refused: Spark reads it in the session time zone, which a Python source cannot see."""
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            "expected an ISO 8601 time with its offset, e.g. '2026-11-01T08:00:00Z'"
        ) from None
    if instant.tzinfo is None:
        raise ValueError(
            "give the time zone too (e.g. '2026-11-01T08:00:00Z' or '+02:00'): Spark reads a "
            "time without one in spark.sql.session.timeZone, which a Python data source "
            "cannot see"
        )
    return int(instant.timestamp() * 1000)


def _filter(raw: Mapping[str, str]) -> str | None:
    """The ``filter`` option's text; ``filter-pushdown=true`` is refused."""
    if _get(raw, FILTER_PUSHDOWN, _bool):
        raise _pushdown_refused()
    return (raw.get(FILTER) or "").strip() or None


def _pushdown_refused() -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        "filter-pushdown is refused: Spark (up to 4.3) keeps the read plan that a Python data "
        "source made with pushed filters on the DataFrame and reuses it for later queries on "
        "that DataFrame that push none (and for the other side of a self-join or union), "
        "which then return only the earlier filter's rows. Spark applies every filter "
        "itself; to read fewer files, give the read option 'filter' (e.g. "
        "\"dt = '2026-11-01' and id > 10\"), which makes the DataFrame that part of the "
        "table for every query on it",
        feature=FILTER_PUSHDOWN,
    )


def _overwrite_mode(raw: Mapping[str, str]) -> OverwriteMode | None:
    """What ``mode("overwrite")`` replaces, where the options say: Spark's
    ``partitionOverwriteMode`` or shoal's ``dynamic-partition-overwrite``."""
    spark = _get(raw, PARTITION_OVERWRITE_MODE, _mode, "partitionOverwriteMode")
    dynamic = _get(raw, DYNAMIC_PARTITION_OVERWRITE, _bool)
    own: OverwriteMode | None = None if dynamic is None else ("dynamic" if dynamic else "static")
    if spark is not None and own is not None and spark != own:
        raise InvalidOptionError(
            DYNAMIC_PARTITION_OVERWRITE,
            raw[DYNAMIC_PARTITION_OVERWRITE],
            f"contradicts partitionOverwriteMode = {raw[PARTITION_OVERWRITE_MODE]!r}",
        )
    return spark or own


def _mode(text: str) -> OverwriteMode:
    lowered = text.lower()
    if lowered == "static":
        return "static"
    if lowered == "dynamic":
        return "dynamic"
    raise ValueError("expected 'static' or 'dynamic'")


def normalize_path(path: str) -> str:
    """A table path as shoal opens it. Spark's catalog spells local paths ``file:/x``."""
    if path.startswith("file:") and not path.startswith("file://"):
        return "/" + path[len("file:") :].lstrip("/")
    return path


def open_store(path: str, storage_options: Mapping[str, str] | None = None) -> FileStore:
    """The table at ``path`` (latest schema), its store configured by
    ``storage_options``. Raises TableNotFoundError."""
    file_io, root = file_io_for(path, storage_options)
    schema = SchemaManager(file_io, PathFactory(root)).latest()
    if schema is None:
        raise TableNotFoundError(path)
    return FileStore(file_io, path, root, schema)


def reopen(store: FileStore) -> FileStore:
    """The table of ``store`` again, with its latest schema, through the same FileIO."""
    schema = SchemaManager(store.file_io, PathFactory(store.root)).latest()
    if schema is None:
        raise TableNotFoundError(store.uri)
    return FileStore(store.file_io, store.uri, store.root, schema)


def _get(
    raw: Mapping[str, str], key: str, parse: Callable[[str], V], spelled: str | None = None
) -> V | None:
    text = raw.get(key)
    if text is None or text.strip() == "":
        return None
    try:
        return parse(text.strip())
    except ValueError as exc:
        raise InvalidOptionError(spelled or key, text, str(exc)) from None


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
