"""DataFileMeta: everything a manifest says about one data file."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from shoal.format import stats as S
from shoal.format.avro import compiled
from shoal.format.frozen import constructor
from shoal.format.stats import SimpleStats

FILE_SOURCE_APPEND = 0
FILE_SOURCE_COMPACT = 1


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    """Metadata of one data file, field for field as Paimon's manifests hold it.

    ``creation_time`` is the writer's local wall-clock time, naive, stored as Paimon
    stores a ``LocalDateTime``: its fields encoded as if they were UTC.
    """

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time: datetime | None = None
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: int | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = field(default=None)

    def to_avro(self) -> dict[str, Any]:
        return {
            "_FILE_NAME": self.file_name,
            "_FILE_SIZE": self.file_size,
            "_ROW_COUNT": self.row_count,
            "_MIN_KEY": self.min_key,
            "_MAX_KEY": self.max_key,
            "_KEY_STATS": self.key_stats.to_avro(),
            "_VALUE_STATS": self.value_stats.to_avro(),
            "_MIN_SEQUENCE_NUMBER": self.min_sequence_number,
            "_MAX_SEQUENCE_NUMBER": self.max_sequence_number,
            "_SCHEMA_ID": self.schema_id,
            "_LEVEL": self.level,
            "_EXTRA_FILES": list(self.extra_files),
            "_CREATION_TIME": (
                self.creation_time.replace(tzinfo=UTC) if self.creation_time is not None else None
            ),
            "_DELETE_ROW_COUNT": self.delete_row_count,
            "_EMBEDDED_FILE_INDEX": self.embedded_index,
            "_FILE_SOURCE": self.file_source,
            "_VALUE_STATS_COLS": _opt_list(self.value_stats_cols),
            "_EXTERNAL_PATH": self.external_path,
            "_FIRST_ROW_ID": self.first_row_id,
            "_WRITE_COLS": _opt_list(self.write_cols),
            "_WRITE_COLS_SEQUENCES": _opt_list(self.write_cols_sequences),
        }

    @staticmethod
    def from_avro(r: dict[str, Any]) -> DataFileMeta:
        # Planning decodes one of these per live file, so this stays free of helper calls.
        get = r.get
        created = get("_CREATION_TIME")
        if created is not None and created.tzinfo is not None:
            created = created.replace(tzinfo=None)
        stats_cols = get("_VALUE_STATS_COLS")
        write_cols = get("_WRITE_COLS")
        write_seqs = get("_WRITE_COLS_SEQUENCES")
        extra = r["_EXTRA_FILES"]
        return _construct(
            r["_FILE_NAME"],
            r["_FILE_SIZE"],
            r["_ROW_COUNT"],
            r["_MIN_KEY"],
            r["_MAX_KEY"],
            S.stats_from_avro(r["_KEY_STATS"]),
            S.stats_from_avro(r["_VALUE_STATS"]),
            r["_MIN_SEQUENCE_NUMBER"],
            r["_MAX_SEQUENCE_NUMBER"],
            r["_SCHEMA_ID"],
            r["_LEVEL"],
            tuple(extra) if extra else (),
            created,
            get("_DELETE_ROW_COUNT"),
            get("_EMBEDDED_FILE_INDEX"),
            get("_FILE_SOURCE"),
            tuple(stats_cols) if stats_cols is not None else None,
            get("_EXTERNAL_PATH"),
            get("_FIRST_ROW_ID"),
            tuple(write_cols) if write_cols is not None else None,
            tuple(write_seqs) if write_seqs is not None else None,
        )


_construct = constructor(DataFileMeta)


def _of_fields(  # noqa: PLR0917 - one argument per field, as the decoder passes them
    name: str,
    size: int,
    rows: int,
    min_key: bytes,
    max_key: bytes,
    key_stats: SimpleStats,
    value_stats: SimpleStats,
    min_sequence: int,
    max_sequence: int,
    schema_id: int,
    level: int,
    extra: list[str],
    created: datetime | None,
    deleted_rows: int | None,
    embedded_index: bytes | None,
    source: int | None,
    stats_cols: list[str] | None,
    external_path: str | None,
    first_row_id: int | None,
    write_cols: list[str] | None,
    write_seqs: list[int] | None,
) -> DataFileMeta:
    """A DataFileMeta of its Avro fields, decoded (as :meth:`DataFileMeta.from_avro`;
    the compiled decoders give naive creation times)."""
    return _construct(
        name,
        size,
        rows,
        min_key,
        max_key,
        key_stats,
        value_stats,
        min_sequence,
        max_sequence,
        schema_id,
        level,
        tuple(extra) if extra else (),
        created,
        deleted_rows,
        embedded_index,
        source,
        tuple(stats_cols) if stats_cols is not None else None,
        external_path,
        first_row_id,
        tuple(write_cols) if write_cols is not None else None,
        tuple(write_seqs) if write_seqs is not None else None,
    )


# Decoding straight into DataFileMeta (see shoal.format.avro.compiled.Build): the
# fields from_avro reads with [] are required, those it reads with get() optional.
_REQUIRED = (
    "_FILE_NAME",
    "_FILE_SIZE",
    "_ROW_COUNT",
    "_MIN_KEY",
    "_MAX_KEY",
    "_KEY_STATS",
    "_VALUE_STATS",
    "_MIN_SEQUENCE_NUMBER",
    "_MAX_SEQUENCE_NUMBER",
    "_SCHEMA_ID",
    "_LEVEL",
    "_EXTRA_FILES",
)
_OPTIONAL = (
    "_CREATION_TIME",
    "_DELETE_ROW_COUNT",
    "_EMBEDDED_FILE_INDEX",
    "_FILE_SOURCE",
    "_VALUE_STATS_COLS",
    "_EXTERNAL_PATH",
    "_FIRST_ROW_ID",
    "_WRITE_COLS",
    "_WRITE_COLS_SEQUENCES",
)


def is_file_name(value: object) -> bool:
    """Whether ``value`` names a file inside its folder: not empty, no path separator or
    NUL, not ``.`` or ``..``. Names read from metadata become paths that maintenance may
    delete, so a name that could reach outside the table is refused."""
    return (
        isinstance(value, str)
        and value not in ("", ".", "..")
        and "/" not in value
        and "\\" not in value
        and "\0" not in value
    )


def _opt_list(values: tuple[Any, ...] | None) -> list[Any] | None:
    return list(values) if values is not None else None


def nullable(avro_type: Any) -> dict[str, Any]:
    return {"type": ["null", avro_type], "default": None}


_STRINGS = {"type": "array", "items": "string"}

AVRO_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "record__FILE",
    "fields": [
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        {"name": "_MIN_KEY", "type": "bytes"},
        {"name": "_MAX_KEY", "type": "bytes"},
        {"name": "_KEY_STATS", "type": S.avro_schema("record__FILE__KEY_STATS")},
        {"name": "_VALUE_STATS", "type": S.avro_schema("record__FILE__VALUE_STATS")},
        {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
        {"name": "_SCHEMA_ID", "type": "long"},
        {"name": "_LEVEL", "type": "int"},
        {"name": "_EXTRA_FILES", "type": _STRINGS},
        {
            "name": "_CREATION_TIME",
            **nullable({"type": "long", "logicalType": "timestamp-millis"}),
        },
        {"name": "_DELETE_ROW_COUNT", **nullable("long")},
        {"name": "_EMBEDDED_FILE_INDEX", **nullable("bytes")},
        {"name": "_FILE_SOURCE", **nullable("int")},
        {"name": "_VALUE_STATS_COLS", **nullable(_STRINGS)},
        {"name": "_EXTERNAL_PATH", **nullable("string")},
        {"name": "_FIRST_ROW_ID", **nullable("long")},
        {"name": "_WRITE_COLS", **nullable(_STRINGS)},
        {"name": "_WRITE_COLS_SEQUENCES", **nullable({"type": "array", "items": "long"})},
    ],
}


AVRO_BUILD = compiled.Build(
    _of_fields,
    [
        *((n, S.AVRO_BUILD if n.endswith("_STATS") else None, True) for n in _REQUIRED),
        *((n, None, False) for n in _OPTIONAL),
    ],
    AVRO_SCHEMA,
)
