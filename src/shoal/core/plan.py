"""Scan planning: from a snapshot to the live data files a query must read, grouped
into splits.

Planning reads the snapshot's base and delta manifest lists, skips manifests whose
partition statistics rule out the filter, reads the rest in parallel, cancels
DELETE entries against their ADDs, then prunes files by partition value and by
column statistics. Splits are picklable units of work for distributed readers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from shoal import options as O
from shoal.core import predicate as P
from shoal.core.deletion_vectors import DeletionFile
from shoal.core.paths import data_file_path
from shoal.errors import UnsupportedFeatureError
from shoal.format import binary_row, casts, collector, data_formats
from shoal.format import manifest as M
from shoal.format import types as T
from shoal.format.data_file import DataFileMeta
from shoal.format.evolution import FieldMapping, same_fields
from shoal.format.manifest import ManifestEntry, ManifestFileMeta
from shoal.format.schema import TableSchema
from shoal.format.snapshot import Snapshot

if TYPE_CHECKING:
    from shoal.core.manifests import Partitions
    from shoal.core.store import FileStore

PartitionFilter = Callable[[bytes], bool]


@dataclass(frozen=True, slots=True)
class DataSplit:
    """Files of one bucket of one partition, read together.

    ``table_uri`` and the file paths are all a worker needs to read the split.
    """

    table_uri: str
    snapshot_id: int
    partition: dict[str, Any]
    bucket: int
    bucket_path: str
    files: Sequence[DataFileMeta]  # a tuple, or files decoded when first read
    # each file's deletion vector (None: no rows deleted), or () when no file has one
    deletion_files: tuple[DeletionFile | None, ...] = ()

    def deletion_of(self, index: int) -> DeletionFile | None:
        return self.deletion_files[index] if self.deletion_files else None

    def pieces(self) -> list[DataSplit]:
        """One split per file, each with its own deletion vector."""
        return [
            replace(self, files=(f,), deletion_files=_some(self.deletion_of(i)))
            for i, f in enumerate(self.files)
        ]

    def joined(self, other: DataSplit) -> DataSplit:
        """This split's files, then ``other``'s (of the same bucket), each keeping its
        deletion vector."""
        deletions: tuple[DeletionFile | None, ...] = ()
        if self.deletion_files or other.deletion_files:
            deletions = tuple(self.deletion_of(i) for i in range(len(self.files))) + tuple(
                other.deletion_of(i) for i in range(len(other.files))
            )
        return replace(self, files=(*self.files, *other.files), deletion_files=deletions)

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    @property
    def file_paths(self) -> list[str]:
        return [data_file_path(self.bucket_path, f) for f in self.files]

    @property
    def size_in_bytes(self) -> int:
        return sum(f.file_size for f in self.files)


def _some(deletion: DeletionFile | None) -> tuple[DeletionFile | None, ...]:
    return () if deletion is None else (deletion,)


def read_manifest_metas(store: FileStore, snapshot: Snapshot) -> list[ManifestFileMeta]:
    """The manifests of a snapshot: base list, then delta list (their order matters)."""
    return [
        *store.manifests.read_list(snapshot.base_manifest_list),
        *store.manifests.read_list(snapshot.delta_manifest_list),
    ]


def live_entries(
    store: FileStore,
    snapshot: Snapshot,
    dnf: P.Dnf | None = None,
    partition_filter: PartitionFilter | None = None,
    *,
    partitions: Collection[bytes] | None = None,
    target: TableSchema | None = None,
) -> list[ManifestEntry]:
    """The ADD entries live in ``snapshot`` that may hold rows matching ``dnf`` (over
    the columns of ``target``, by default the table's schema).

    ``partition_filter`` keeps the entries of the partitions it accepts; ``partitions``
    keeps those of the given partitions only: manifests whose partition statistics
    hold none of them are not read, and of the others only those partitions' entries
    are built. A commit that touches a few partitions reads the manifests of those,
    not the whole table's, and pays for their other entries only by reading past
    them."""
    partition_keys = set(store.schema.partition_keys)
    partition_dnf = restrict(dnf, partition_keys)
    holding: P.Dnf | None = None
    wanted: frozenset[bytes] | None = None
    if partitions is not None:
        wanted = frozenset(partitions)
        holding = _partitions_dnf(store, wanted)
    metas = select_manifests(store, snapshot, partition_dnf, holding)
    selection: Partitions = None
    if wanted is not None and partition_dnf is None and partition_filter is None:
        selection = wanted  # a commit's partitions, read again by its conflict check: cached
    elif wanted is not None:
        partition_filter = _both(partition_filter, wanted.__contains__)
    keep_partition = partition_pruner(store, partition_dnf, partition_filter)
    if selection is None and (partition_dnf is not None or partition_filter is not None):
        selection = keep_partition
    file_pruner = _file_pruner(store, dnf, partition_keys, target or store.schema)
    with collector.paused():  # a few objects per file, no cycles among them
        parts = store.manifests.read_manifests(metas, selection)
        merged = M.merge_entries(e for part in parts for e in part)
        out = []
        for entry in merged:
            if entry.kind != M.KIND_ADD or not keep_partition(entry.partition):
                continue
            if file_pruner is None or file_pruner(entry.file):
                out.append(entry)
    return out


Levels = tuple[int, int]  # the levels of the files a read keeps, both inclusive
ALL_LEVELS: Levels = (-(1 << 31), (1 << 31) - 1)
# A plan of at least this many manifest entries is made from manifest columns
# (shoal.core.columnar_plan); below it, the objects' planning is as fast.
COLUMNAR_MIN_ENTRIES = 50_000


def columnar_manifests(
    store: FileStore, snapshot: Snapshot, dnf: P.Dnf | None
) -> tuple[list[ManifestFileMeta], P.Dnf | None] | None:
    """The manifests a read filtered by ``dnf`` plans from manifest columns, with the
    part of ``dnf`` on partition columns; None when it plans from objects: a filter on
    other columns (the files' statistics decide), or fewer entries than
    :data:`COLUMNAR_MIN_ENTRIES`."""
    partition_keys = set(store.schema.partition_keys)
    if dnf is not None and not P.columns_of(dnf) <= partition_keys:
        return None
    partition_dnf = restrict(dnf, partition_keys)
    metas = select_manifests(store, snapshot, partition_dnf)
    if sum(m.num_added_files + m.num_deleted_files for m in metas) < COLUMNAR_MIN_ENTRIES:
        return None
    return metas, partition_dnf


def select_manifests(
    store: FileStore, snapshot: Snapshot, *dnfs: P.Dnf | None
) -> list[ManifestFileMeta]:
    """The manifests of ``snapshot`` whose partition statistics allow each of ``dnfs``
    (filters on partition columns; None allows every manifest)."""
    return [
        m
        for m in read_manifest_metas(store, snapshot)
        if all(_manifest_may_match(store, m, dnf) for dnf in dnfs)
    ]


def _partitions_dnf(store: FileStore, partitions: Collection[bytes]) -> P.Dnf:
    """``partition = p`` for any ``p`` of ``partitions`` (a null value: ``IS NULL``), the
    filter by which manifests' partition statistics are checked."""
    keys = store.schema.partition_keys
    return tuple(
        tuple(P.Term(k, "=", v) for k, v in zip(keys, store.partitions.decode(p), strict=True))
        for p in partitions
    )


def _both(first: PartitionFilter | None, second: PartitionFilter) -> PartitionFilter:
    if first is None:
        return second
    return lambda partition: second(partition) and first(partition)


def restrict(dnf: P.Dnf | None, columns: set[str]) -> P.Dnf | None:
    """The part of ``dnf`` that only partition values decide (a weaker filter)."""
    if dnf is None:
        return None
    groups = tuple(tuple(t for t in group if t.column in columns) for group in dnf)
    if any(not group for group in groups):
        return None  # some OR branch is unconstrained by partition columns
    return groups


def _manifest_may_match(store: FileStore, meta: ManifestFileMeta, dnf: P.Dnf | None) -> bool:
    if dnf is None:
        return True
    types = store.schema.partition_types()
    stats = meta.partition_stats
    try:
        mins = binary_row.deserialize(stats.min_values, types)
        maxs = binary_row.deserialize(stats.max_values, types)
    except ValueError:
        return True
    nulls = stats.null_counts or ()
    count = meta.num_added_files + meta.num_deleted_files
    index = {k: i for i, k in enumerate(store.schema.partition_keys)}

    def lookup(column: str) -> P.ColumnStats | None:
        i = index.get(column)
        if i is None:
            return None
        null_count = nulls[i] if i < len(nulls) else None
        return P.ColumnStats(mins[i], maxs[i], null_count, count)

    return P.may_match(dnf, lookup)


def partition_pruner(
    store: FileStore, dnf: P.Dnf | None, partition_filter: PartitionFilter | None
) -> PartitionFilter:
    keys = store.schema.partition_keys
    verdicts: dict[bytes, bool] = {}

    def keep(partition: bytes) -> bool:
        verdict = verdicts.get(partition)
        if verdict is None:
            verdict = partition_filter(partition) if partition_filter is not None else True
            if verdict and dnf is not None:
                values = dict(zip(keys, store.partitions.decode(partition), strict=True))
                verdict = P.may_match(dnf, lambda c: P.exact_stats(values[c]))
            verdicts[partition] = verdict
        return verdict

    return keep


# How one filtered column is found in a file's statistics: its position there and
# its type in the file's schema and in the target's, or absent (added later: only nulls).
_StatsColumn = tuple[int, T.DataType, T.DataType] | None
_ABSENT: _StatsColumn = None


def _file_pruner(
    store: FileStore, dnf: P.Dnf | None, partition_keys: set[str], target: TableSchema
) -> Callable[[DataFileMeta], bool] | None:
    """A check that a file may hold rows matching ``dnf`` by its column statistics.

    A file's statistics are those of the schema it was written with, matched to the
    filter's columns by field id: a column the file lacks holds only nulls there, and
    statistics of another type count only when they convert exactly
    (``casts.exact_stat``)."""
    if dnf is None or P.columns_of(dnf) <= partition_keys:
        return None
    filtered = [f for f in target.fields if f.name in P.columns_of(dnf)]
    layouts: dict[tuple[int, tuple[str, ...] | None], tuple[list[T.DataType], dict[str, Any]]] = {}

    def layout(f: DataFileMeta) -> tuple[list[T.DataType], dict[str, _StatsColumn]]:
        key = (f.schema_id, f.value_stats_cols)
        found = layouts.get(key)
        if found is None:
            schema = store.schema_of(f.schema_id)
            names = (
                list(f.value_stats_cols) if f.value_stats_cols is not None else schema.field_names
            )
            found = layouts[key] = (
                [schema.field(n).type for n in names],
                _stats_columns(schema, names, filtered),
            )
        return found

    def keep(f: DataFileMeta) -> bool:
        types, columns = layout(f)
        if not columns:
            return True
        try:
            mins = binary_row.deserialize(f.value_stats.min_values, types) if types else ()
            maxs = binary_row.deserialize(f.value_stats.max_values, types) if types else ()
        except ValueError:
            return True
        nulls = f.value_stats.null_counts or ()

        def lookup(column: str) -> P.ColumnStats | None:
            if column not in columns:
                return None
            found = columns[column]
            if found is _ABSENT:
                return P.ColumnStats(None, None, f.row_count, f.row_count)
            assert found is not None
            i, old, new = found
            null_count = nulls[i] if i < len(nulls) else None
            low, high = _converted(mins[i], old, new), _converted(maxs[i], old, new)
            return P.ColumnStats(low, high, null_count, f.row_count)

        return P.may_match(dnf, lookup)

    return keep


def _stats_columns(
    schema: TableSchema, names: list[str], filtered: list[T.DataField]
) -> dict[str, _StatsColumn]:
    """Where each filtered column is in statistics over ``names`` of ``schema``: columns
    the file holds without statistics are left out (nothing is known of them)."""
    position = {n: i for i, n in enumerate(names)}
    by_id = {f.id: f for f in schema.fields}
    out: dict[str, _StatsColumn] = {}
    for field in filtered:
        source = by_id.get(field.id)
        if source is None:
            out[field.name] = _ABSENT
        elif source.name in position:
            out[field.name] = (position[source.name], source.type, field.type)
    return out


def _converted(value: Any, old: T.DataType, new: T.DataType) -> Any:
    """A statistic of ``old`` as one of ``new``; None (unknown) when not exact."""
    if old == new or value is None:
        return value
    if isinstance(old, T.AtomicType) and isinstance(new, T.AtomicType):
        return casts.exact_stat(value, old, new)[1]
    return None


def make_splits(
    store: FileStore,
    snapshot_id: int,
    entries: Sequence[ManifestEntry],
    *,
    whole_buckets: bool = False,
    schema: TableSchema | None = None,
    deletions: Mapping[str, DeletionFile] | None = None,
) -> list[DataSplit]:
    """Pack each bucket's files, in sequence order, into splits of about the target size;
    every file must be readable as rows of ``schema`` (by default the table's).

    With ``whole_buckets`` (a primary-key table read with merging) a bucket is never
    divided: its files are merged together. ``deletions`` maps data file names to their
    deletion vectors, which the splits carry.
    """
    with collector.paused():  # one split per bucket or target size, no cycles
        return _make_splits(
            store,
            snapshot_id,
            entries,
            whole_buckets=whole_buckets,
            schema=schema,
            deletions=deletions,
        )


def _make_splits(
    store: FileStore,
    snapshot_id: int,
    entries: Sequence[ManifestEntry],
    *,
    whole_buckets: bool,
    schema: TableSchema | None,
    deletions: Mapping[str, DeletionFile] | None,
) -> list[DataSplit]:
    target = store.options.get(O.SPLIT_TARGET_SIZE)
    open_cost = store.options.get(O.SPLIT_OPEN_FILE_COST)
    check = readable_file_check(store, schema or store.schema)
    by_bucket: dict[tuple[bytes, int], list[DataFileMeta]] = defaultdict(list)
    for entry in entries:
        check(entry.file)
        by_bucket[(entry.partition, entry.bucket)].append(entry.file)
    splits = []
    for (partition, bucket), files in by_bucket.items():
        files.sort(key=lambda f: (f.min_sequence_number, f.file_name))
        bucket_path = store.paths.bucket_dir(store.partitions.path(partition), bucket)
        values = store.partitions.to_dict(partition)
        pack: list[DataFileMeta] = []
        weight = 0
        for f in files:
            cost = max(f.file_size, open_cost)
            if pack and weight + cost > target and not whole_buckets:
                splits.append(
                    DataSplit(store.uri, snapshot_id, values, bucket, bucket_path, tuple(pack))
                )
                pack, weight = [], 0
            pack.append(f)
            weight += cost
        if pack:
            splits.append(
                DataSplit(store.uri, snapshot_id, values, bucket, bucket_path, tuple(pack))
            )
    if deletions:
        splits = [_with_deletions(split, deletions) for split in splits]
    return splits


def _with_deletions(split: DataSplit, deletions: Mapping[str, DeletionFile]) -> DataSplit:
    found = tuple(deletions.get(f.file_name) for f in split.files)
    if not any(d is not None for d in found):
        return split
    return replace(split, deletion_files=found)


def readable_file_check(store: FileStore, target: TableSchema) -> Callable[[DataFileMeta], None]:
    """A check that a data file holds what shoal's readers read exactly as rows of
    ``target``: a file of a format shoal reads (Parquet, ORC, Avro: by its name's
    extension) in its bucket directory, with every column, whose
    schema's columns map onto the target's by field id with types shoal converts as
    Paimon does. Raises UnsupportedFeatureError for any other file, before anything
    is read.

    Tables written by Paimon's engines may hold files of other formats (Lance, or
    any a newer Paimon adds), files outside the table (external paths), files with
    some columns only (data
    evolution), and files written before a column changed to a type whose values
    shoal does not convert exactly.
    """
    checked = {target.id}

    def check(f: DataFileMeta) -> None:
        if data_formats.format_of(f.file_name) is None:
            kind = f.file_name.rsplit(".", 1)[-1] if "." in f.file_name else "unknown"
            _refuse(store, f"{kind} data files ({f.file_name})", "file format")
        if f.external_path:
            _refuse(store, f"data files in external paths ({f.external_path})", "external paths")
        if f.write_cols is not None:
            _refuse(store, f"files with some columns only ({f.file_name})", "data evolution")
        if f.schema_id not in checked:
            _check_schema(store, store.schema_of(f.schema_id), target, f.file_name)
            checked.add(f.schema_id)

    return check


def _check_schema(store: FileStore, schema: TableSchema, target: TableSchema, name: str) -> None:
    """Files of ``schema`` read as rows of ``target``: every type change is one shoal
    converts exactly, and a primary-key table's key keeps its order."""
    if same_fields(schema.fields, target.fields):
        return
    what = f"table {store.uri!r}, file {name} of schema {schema.id}"
    FieldMapping(schema.fields, target.fields).check(what)
    if len(schema.primary_keys) != len(target.primary_keys):
        _refuse(store, f"files whose primary key differs ({name})", "primary key change")
    for old_name, new_name in zip(schema.primary_keys, target.primary_keys, strict=True):
        old, new = schema.field(old_name), target.field(new_name)
        if old.id != new.id or not (
            isinstance(old.type, T.AtomicType)
            and isinstance(new.type, T.AtomicType)
            and casts.keeps_order(old.type, new.type)
        ):
            _refuse(
                store,
                f"files whose primary key column {new_name!r} changed from "
                f"{casts.describe(old.type, new.type)} ({name})",
                "primary key change",
            )


def _refuse(store: FileStore, what: str, feature: str) -> None:
    raise UnsupportedFeatureError(
        f"table {store.uri!r} holds {what}, which shoal does not read yet; read it with "
        "Paimon's own engines (Flink, Spark with the Paimon jar)",
        feature=feature,
    )
