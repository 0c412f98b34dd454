"""System tables: a table's metadata as Arrow tables, with Paimon's column names."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa

from shoal.core import deletion_vectors as DVS
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries, read_manifest_metas
from shoal.core.store import FileStore
from shoal.errors import InvalidArgumentError
from shoal.event_time.bounds import EventTimeBounds
from shoal.event_time.watermark import backlog_by_bucket, watermark_of
from shoal.format import binary_row, casts
from shoal.format import types as T
from shoal.format.data_file import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT, DataFileMeta
from shoal.format.evolution import same_fields
from shoal.format.schema import TableSchema
from shoal.format.snapshot import Snapshot

_MS = pa.timestamp("ms")

# The ``status`` of a row of the ``snapshots`` table.
OK = "ok"
DAMAGED = "damaged"


def _local_time(millis: int) -> datetime:
    """Epoch millis as a naive local wall-clock time, as Paimon shows commit times."""
    return datetime.fromtimestamp(millis / 1000, tz=UTC).astimezone().replace(tzinfo=None)


def snapshots_table(store: FileStore, _snapshot: Snapshot | None) -> pa.Table:
    """One row per snapshot file, oldest first. A file that cannot be read is a row
    too, with only its ``snapshot_id``, ``status`` ``damaged`` and the ``error`` (the
    other rows: ``ok`` and null), so that one damaged file hides no snapshot."""
    readable, damaged = store.snapshots.survey()
    ids = sorted([s.id for s in readable] + list(damaged))
    by_id = {s.id: s for s in readable}
    rows = [by_id.get(i) for i in ids]

    def column(value: Callable[[Snapshot], Any], kind: pa.DataType) -> pa.Array:
        return pa.array([value(s) if s is not None else None for s in rows], kind)

    return pa.table(
        {
            "snapshot_id": pa.array(ids, pa.int64()),
            "schema_id": column(lambda s: s.schema_id, pa.int64()),
            "commit_user": column(lambda s: s.commit_user, pa.string()),
            "commit_identifier": column(lambda s: s.commit_identifier, pa.int64()),
            "commit_kind": column(lambda s: s.commit_kind, pa.string()),
            "commit_time": column(lambda s: _local_time(s.time_millis), _MS),
            "base_manifest_list": column(lambda s: s.base_manifest_list, pa.string()),
            "delta_manifest_list": column(lambda s: s.delta_manifest_list, pa.string()),
            "changelog_manifest_list": column(lambda s: s.changelog_manifest_list, pa.string()),
            "total_record_count": column(lambda s: s.total_record_count, pa.int64()),
            "delta_record_count": column(lambda s: s.delta_record_count, pa.int64()),
            "changelog_record_count": column(lambda s: s.changelog_record_count, pa.int64()),
            "watermark": column(lambda s: s.watermark, pa.int64()),
            "next_row_id": column(lambda s: s.next_row_id, pa.int64()),
            "operation": column(lambda s: s.operation, pa.string()),
            "writer_version": column(lambda s: s.writer_version, pa.string()),
            "status": pa.array([OK if i in by_id else DAMAGED for i in ids], pa.string()),
            "error": pa.array(
                [str(damaged[i]) if i in damaged else None for i in ids], pa.string()
            ),
            "read_optimized_watermark": column(lambda s: watermark_of(s.properties), pa.int64()),
        }
    )


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _render_row(values: dict[str, Any]) -> str:
    return json.dumps({k: _json_value(v) for k, v in values.items()})


def files_table(store: FileStore, snapshot: Snapshot | None) -> pa.Table:
    entries = live_entries(store, snapshot) if snapshot is not None else []
    cols: dict[str, list[Any]] = {name: [] for name in _FILES_SCHEMA.names}
    sources = {FILE_SOURCE_APPEND: "APPEND", FILE_SOURCE_COMPACT: "COMPACT"}
    for e in entries:
        f = e.file
        schema = store.schema_of(f.schema_id)
        names, nulls, mins, maxs = _file_stats(f, schema, store.schema)
        partition_path = store.partitions.path(e.partition)
        cols["partition"].append(partition_path or None)
        cols["bucket"].append(e.bucket)
        cols["file_path"].append(
            data_file_path(store.paths.bucket_dir(partition_path, e.bucket), f)
        )
        cols["file_format"].append(f.file_name.rsplit(".", 1)[-1])
        cols["schema_id"].append(f.schema_id)
        cols["level"].append(f.level)
        cols["record_count"].append(f.row_count)
        cols["file_size_in_bytes"].append(f.file_size)
        key_types = [schema.field(k).type for k in schema.primary_keys]
        cols["min_key"].append(_render_key(f.min_key, schema.primary_keys, key_types))
        cols["max_key"].append(_render_key(f.max_key, schema.primary_keys, key_types))
        cols["null_value_counts"].append(_render_row(dict(zip(names, nulls, strict=False))))
        cols["min_value_stats"].append(_render_row(dict(zip(names, mins, strict=False))))
        cols["max_value_stats"].append(_render_row(dict(zip(names, maxs, strict=False))))
        cols["min_sequence_number"].append(f.min_sequence_number)
        cols["max_sequence_number"].append(f.max_sequence_number)
        cols["creation_time"].append(f.creation_time)
        cols["deleteRowCount"].append(f.delete_row_count)
        cols["file_source"].append(
            sources.get(f.file_source) if f.file_source is not None else None
        )
        cols["first_row_id"].append(f.first_row_id)
        cols["write_cols"].append(list(f.write_cols) if f.write_cols is not None else None)
    return pa.table(cols, schema=_FILES_SCHEMA)


def _file_stats(
    f: DataFileMeta, schema: TableSchema, table: TableSchema
) -> tuple[list[str], tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
    """A file's column statistics (names, null counts, minimums, maximums) under the
    table's schema: a file written under another schema has its statistics matched by
    field id, a column added since counts only nulls, and a statistic of another type
    shows only when it converts exactly."""
    names = list(f.value_stats_cols) if f.value_stats_cols is not None else schema.field_names
    types = [schema.field(n).type for n in names]
    mins = _stats_values(f.value_stats.min_values, types) if names else ()
    maxs = _stats_values(f.value_stats.max_values, types) if names else ()
    nulls = tuple(f.value_stats.null_counts or ())
    if schema.id == table.id or same_fields(schema.fields, table.fields):
        return names, nulls, mins, maxs
    position = {n: i for i, n in enumerate(names)}
    by_id = {field.id: field for field in schema.fields}
    out: tuple[list[str], list[Any], list[Any], list[Any]] = ([], [], [], [])
    for field in table.fields:
        source = by_id.get(field.id)
        i = position.get(source.name) if source is not None else None
        if source is not None and i is None:
            continue  # kept without statistics
        out[0].append(field.name)
        if source is None or i is None:
            out[1].append(f.row_count)
            out[2].append(None)
            out[3].append(None)
            continue
        out[1].append(nulls[i] if i < len(nulls) else None)
        out[2].append(_stat_as(mins[i], source.type, field.type))
        out[3].append(_stat_as(maxs[i], source.type, field.type))
    return out[0], tuple(out[1]), tuple(out[2]), tuple(out[3])


def _stat_as(value: Any, old: T.DataType, new: T.DataType) -> Any:
    if old == new:
        return value
    if isinstance(old, T.AtomicType) and isinstance(new, T.AtomicType):
        return casts.exact_stat(value, old, new)[1]
    return None


def _stats_values(data: bytes, types: list[T.DataType]) -> tuple[Any, ...]:
    """Column statistics; unknown (all None) when they cannot be read, as a scan takes them."""
    try:
        return binary_row.deserialize(data, types)
    except ValueError:
        return (None,) * len(types)


def _render_key(data: bytes, names: tuple[str, ...], types: list[T.DataType]) -> str | None:
    if not names:
        return None
    try:
        return _render_row(dict(zip(names, binary_row.deserialize(data, types), strict=True)))
    except ValueError:
        return None


_FILES_SCHEMA = pa.schema(
    [
        ("partition", pa.string()),
        ("bucket", pa.int32()),
        ("file_path", pa.string()),
        ("file_format", pa.string()),
        ("schema_id", pa.int64()),
        ("level", pa.int32()),
        ("record_count", pa.int64()),
        ("file_size_in_bytes", pa.int64()),
        ("min_key", pa.string()),
        ("max_key", pa.string()),
        ("null_value_counts", pa.string()),
        ("min_value_stats", pa.string()),
        ("max_value_stats", pa.string()),
        ("min_sequence_number", pa.int64()),
        ("max_sequence_number", pa.int64()),
        ("creation_time", _MS),
        ("deleteRowCount", pa.int64()),
        ("file_source", pa.string()),
        ("first_row_id", pa.int64()),
        ("write_cols", pa.list_(pa.string())),
    ]
)


def manifests_table(store: FileStore, snapshot: Snapshot | None) -> pa.Table:
    metas = read_manifest_metas(store, snapshot) if snapshot is not None else []
    keys = store.schema.partition_keys
    types = store.schema.partition_types()

    def stats(data: bytes) -> str | None:
        return _render_key(data, keys, types)

    return pa.table(
        {
            "file_name": pa.array([m.file_name for m in metas], pa.string()),
            "file_size": pa.array([m.file_size for m in metas], pa.int64()),
            "num_added_files": pa.array([m.num_added_files for m in metas], pa.int64()),
            "num_deleted_files": pa.array([m.num_deleted_files for m in metas], pa.int64()),
            "schema_id": pa.array([m.schema_id for m in metas], pa.int64()),
            "min_partition_stats": pa.array(
                [stats(m.partition_stats.min_values) for m in metas], pa.string()
            ),
            "max_partition_stats": pa.array(
                [stats(m.partition_stats.max_values) for m in metas], pa.string()
            ),
            "min_row_id": pa.array([m.min_row_id for m in metas], pa.int64()),
            "max_row_id": pa.array([m.max_row_id for m in metas], pa.int64()),
        }
    )


def partitions_table(store: FileStore, snapshot: Snapshot | None) -> pa.Table:
    entries = live_entries(store, snapshot) if snapshot is not None else []
    groups: dict[bytes, dict[str, Any]] = {}
    for e in entries:
        g = groups.setdefault(
            e.partition,
            {
                "record_count": 0,
                "file_size_in_bytes": 0,
                "file_count": 0,
                "last_update_time": None,
                "deleted_record_count": 0,
            },
        )
        g["record_count"] += e.file.row_count
        g["file_size_in_bytes"] += e.file.file_size
        g["file_count"] += 1
        g["deleted_record_count"] += e.file.delete_row_count or 0
        created = e.file.creation_time
        if created is not None and (
            g["last_update_time"] is None or created > g["last_update_time"]
        ):
            g["last_update_time"] = created
    parts = sorted(groups, key=store.partitions.path)
    return pa.table(
        {
            "partition": pa.array([store.partitions.path(p) or None for p in parts], pa.string()),
            "record_count": pa.array([groups[p]["record_count"] for p in parts], pa.int64()),
            "file_size_in_bytes": pa.array(
                [groups[p]["file_size_in_bytes"] for p in parts], pa.int64()
            ),
            "file_count": pa.array([groups[p]["file_count"] for p in parts], pa.int64()),
            "last_update_time": pa.array([groups[p]["last_update_time"] for p in parts], _MS),
            "total_buckets": pa.array([store.num_buckets] * len(parts), pa.int32()),
            "deleted_record_count": pa.array(
                [groups[p]["deleted_record_count"] for p in parts], pa.int64()
            ),
        }
    )


def options_table(store: FileStore, _snapshot: Snapshot | None) -> pa.Table:
    items = sorted(store.schema.options.items())
    return pa.table(
        {
            "key": pa.array([k for k, _ in items], pa.string()),
            "value": pa.array([v for _, v in items], pa.string()),
        }
    )


def schemas_table(store: FileStore, _snapshot: Snapshot | None) -> pa.Table:
    """Paimon's ``$schemas``: every schema version, its lists and maps as flat JSON."""
    schemas = [store.schemas.schema(i) for i in store.schemas.list_ids()]
    return pa.table(
        {
            "schema_id": pa.array([s.id for s in schemas], pa.int64()),
            "fields": pa.array(
                [_flat_json([T.field_to_json(f) for f in s.fields]) for s in schemas],
                pa.string(),
            ),
            "partition_keys": pa.array(
                [_flat_json(list(s.partition_keys)) for s in schemas], pa.string()
            ),
            "primary_keys": pa.array(
                [_flat_json(list(s.primary_keys)) for s in schemas], pa.string()
            ),
            "options": pa.array([_flat_json(dict(s.options)) for s in schemas], pa.string()),
            "comment": pa.array([s.comment for s in schemas], pa.string()),
            "update_time": pa.array([_local_time(s.time_millis) for s in schemas], _MS),
        }
    )


def _flat_json(value: object) -> str:
    """JSON without spaces, as Paimon's system tables print it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _java_duration(value: timedelta) -> str:
    """A duration as ``java.time.Duration#toString`` prints it: ``PT24H``, ``PT1M30S``."""
    total = value.days * 86400 + value.seconds
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    text = "PT" + (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if seconds or value.microseconds or text == "PT":
        fraction = f".{value.microseconds:06d}".rstrip("0") if value.microseconds else ""
        text += f"{seconds}{fraction}S"
    return text


def tags_table(store: FileStore, _snapshot: Snapshot | None) -> pa.Table:
    pairs = store.tags.tags()
    return pa.table(
        {
            "tag_name": pa.array([t.name for t, _ in pairs], pa.string()),
            "snapshot_id": pa.array([t.snapshot_id for t, _ in pairs], pa.int64()),
            "schema_id": pa.array([s.schema_id for _, s in pairs], pa.int64()),
            "commit_time": pa.array([_local_time(s.time_millis) for _, s in pairs], _MS),
            "record_count": pa.array([s.total_record_count for _, s in pairs], pa.int64()),
            "create_time": pa.array([t.create_time for t, _ in pairs], _MS),
            "time_retained": pa.array(
                [
                    _java_duration(t.time_retained) if t.time_retained is not None else None
                    for t, _ in pairs
                ],
                pa.string(),
            ),
        }
    )


def consumers_table(store: FileStore, _snapshot: Snapshot | None) -> pa.Table:
    """One row per consumer, by id (Paimon's ``$consumers``)."""
    consumers = store.consumers.consumers()
    return pa.table(
        {
            "consumer_id": pa.array(list(consumers), pa.string()),
            "next_snapshot_id": pa.array(list(consumers.values()), pa.int64()),
        }
    )


def freshness_table(store: FileStore, snapshot: Snapshot | None) -> pa.Table:
    """The compaction backlog per (partition, bucket) with live files: the files below
    the top level, their minimum event time (epoch ms), count and size. The totals and
    the watermark are ``Table.freshness()``."""
    entries = live_entries(store, snapshot) if snapshot is not None else []
    keyed = store.is_primary_key
    bounds = EventTimeBounds(store).of if keyed and store.event_time_columns else None
    backlog = backlog_by_bucket(entries, bounds, store.max_level if keyed else None)
    backlog.sort(key=lambda b: (store.partitions.path(b.partition), b.bucket))
    return pa.table(
        {
            "partition": pa.array(
                [store.partitions.path(b.partition) or None for b in backlog], pa.string()
            ),
            "bucket": pa.array([b.bucket for b in backlog], pa.int32()),
            "min_uncompacted_event_time": pa.array([b.min_event_time for b in backlog], pa.int64()),
            "uncompacted_file_count": pa.array([b.file_count for b in backlog], pa.int64()),
            "uncompacted_bytes": pa.array([b.size_in_bytes for b in backlog], pa.int64()),
        }
    )


_DV_RANGE = pa.struct(
    [
        pa.field("f0", pa.string(), False),
        pa.field("f1", pa.int32(), False),
        pa.field("f2", pa.int32(), False),
        pa.field("_CARDINALITY", pa.int64()),
    ]
)
_TABLE_INDEXES_SCHEMA = pa.schema(
    [
        ("partition", pa.string()),
        pa.field("bucket", pa.int32(), False),
        pa.field("index_type", pa.string(), False),
        pa.field("file_name", pa.string(), False),
        pa.field("file_size", pa.int64(), False),
        pa.field("row_count", pa.int64(), False),
        ("dv_ranges", pa.list_(_DV_RANGE)),
        ("row_range_start", pa.int64()),
        ("row_range_end", pa.int64()),
        ("index_field_id", pa.int32()),
        ("index_field_name", pa.string()),
    ]
)


def table_indexes_table(store: FileStore, snapshot: Snapshot | None) -> pa.Table:
    """The index files of the snapshot (Paimon's ``$table_indexes``): hash indexes and
    deletion vectors, each deletion-vector file with the range and deleted row count of
    every data file's vector (``f0`` the data file, ``f1`` the offset, ``f2`` the
    length)."""
    entries = DVS.index_entries(store, snapshot) if snapshot is not None else []
    names = {f.id: f.name for f in store.schema.fields}
    rows = []
    for e in entries:
        f, g = e.index_file, e.index_file.global_index
        ranges = f.dv_ranges
        rows.append(
            {
                "partition": _partition_string(store.partitions.decode(e.partition)),
                "bucket": e.bucket,
                "index_type": f.index_type,
                "file_name": f.file_name,
                "file_size": f.file_size,
                "row_count": f.row_count,
                "dv_ranges": None
                if ranges is None
                else [
                    {
                        "f0": r.data_file_name,
                        "f1": r.offset,
                        "f2": r.length,
                        "_CARDINALITY": r.cardinality,
                    }
                    for r in ranges
                ],
                "row_range_start": g.row_range_start if g else None,
                "row_range_end": g.row_range_end if g else None,
                "index_field_id": g.index_field_id if g else None,
                "index_field_name": names.get(g.index_field_id) if g else None,
            }
        )
    return pa.Table.from_pylist(rows, schema=_TABLE_INDEXES_SCHEMA)


def _partition_string(values: tuple[Any, ...]) -> str:
    """A partition as Paimon casts its row to a string: ``{v1, v2}``."""

    def one(v: Any) -> str:
        if v is None:
            return "null"
        if isinstance(v, bool):
            return str(v).lower()
        return str(v)

    return "{" + ", ".join(one(v) for v in values) + "}"


# The system tables that describe one snapshot (the latest, or the one time travel
# names); the others describe the table as it is.
NEEDS_SNAPSHOT = frozenset({"files", "manifests", "partitions", "freshness", "table_indexes"})

SYSTEM_TABLES: dict[str, Callable[[FileStore, Snapshot | None], pa.Table]] = {
    "snapshots": snapshots_table,
    "files": files_table,
    "manifests": manifests_table,
    "partitions": partitions_table,
    "options": options_table,
    "schemas": schemas_table,
    "tags": tags_table,
    "consumers": consumers_table,
    "freshness": freshness_table,
    "table_indexes": table_indexes_table,
}


AUDIT_LOG = "audit_log"
"""Paimon's ``$audit_log``: a snapshot's rows with their kinds (``Table.system_table``),
or a changelog read with them (``Table.incremental(..., row_kind=True)``)."""


def system_table(store: FileStore, name: str, snapshot: Snapshot | None) -> pa.Table:
    builder = SYSTEM_TABLES.get(name)
    if builder is None:
        raise InvalidArgumentError(
            f"unknown system table {name!r}; choose one of {sorted([*SYSTEM_TABLES, AUDIT_LOG])}"
        )
    return builder(store, snapshot)
