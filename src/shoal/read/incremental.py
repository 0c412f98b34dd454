"""Incremental reads: what changed between two points of a table's history.

Between two snapshot ids ``(start, end]`` (a *delta*): the files that APPEND commits
in that range added, as Paimon's delta scan reads them (compactions rewrite rows
that are already there, and overwrites are not additions). Between two tags (a
*diff*): the files live at the end tag that were not live at the start tag; on a
primary-key table, the rows of the end tag that are new or changed since the start
tag, found by merging both versions of each bucket whose files differ.

A primary-key table with ``deletion-vectors.enabled`` is read as Paimon 0.9 and 1.0
read it, through the batch scan of such a table, which sees only the files above
level 0 (``core/deletion_vectors``):

- its delta holds the files above level 0 that APPEND commits of the range added.
  Writers add level-0 files and compactions (COMPACT commits, which a delta skips)
  lift them, so the delta of such a table is empty;
- its diff pairs, bucket by bucket, the files above level 0 live at only one of the
  two tags: the end tag's rows in them (masked by the end tag's vectors) that have no
  row with their key in the start tag's files (masked by the start tag's vectors),
  or whose row differs from that one. A file live at both tags takes no part, even
  when the end tag's vector masks more of its rows: a key whose row moved out of such
  a file to a new file is new in the diff, whether or not its value changed.

Refused (UnsupportedFeatureError) are the reads whose answer Paimon 0.9 and 1.0 do
not agree on or shoal cannot give:

- a delta of a primary-key table with deletion vectors in which an APPEND commit
  adds a file above level 0 (no writer of Paimon 0.9 or 1.0 commits one): Paimon 0.9
  merges such files by key, masked by the vectors of the snapshot that added them,
  Paimon 1.0 reads them unmerged and unmasked, and both fail
  (IndexOutOfBoundsException) on a range in which more than one commit adds them;
- an append table with deletion vectors: Paimon 0.9 masks a delta's files by the
  vectors of the snapshot that added each, Paimon 1.0 by none, so their deltas differ
  and both hold rows that later vectors delete;
- a primary-key table whose snapshot holds deletion vectors that its options do not
  enable: Paimon ignores such vectors, shoal's reads of a snapshot mask them, and
  shoal does not merge a bucket's files under vectors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal import options as O
from shoal.core import deletion_vectors as DVS
from shoal.core import kv
from shoal.core import predicate as P
from shoal.core.paths import data_file_path
from shoal.core.plan import DataSplit, live_entries, make_splits
from shoal.core.store import FileStore
from shoal.errors import InvalidArgumentError, SnapshotNotFoundError, UnsupportedFeatureError
from shoal.format import manifest as M
from shoal.format.manifest import ManifestEntry
from shoal.format.snapshot import CommitKind, Snapshot
from shoal.io import parallel_map
from shoal.primary_key.levels import RunFile
from shoal.primary_key.merge import BucketMerger
from shoal.read.files import read_merged, read_table

ScanMode = Literal["auto", "delta", "changelog", "diff"]
SCAN_MODES: tuple[str, ...] = ("auto", "delta", "changelog", "diff")
ROW_KIND = "rowkind"
"""The column of row kinds (``+I``, ``-U``, ``+U``, ``-D``) a changelog read adds, named
as in Paimon's ``audit_log`` system table."""
_KIND_NAMES = pa.array(["+I", "-U", "+U", "-D"])


@dataclass(frozen=True, slots=True)
class IncrementalPlan:
    """What an incremental read reads: ``splits`` (merged by key on a primary-key
    table), or, for the difference of two tags on a primary-key table, the two
    snapshots ``diff`` whose rows :func:`keyed_diff` compares, or the ``changelog``
    files of the range, in commit order (:func:`read_changelog`)."""

    splits: list[DataSplit]
    diff: tuple[Snapshot, Snapshot] | None = None
    changelog: tuple[ManifestEntry, ...] | None = None


def resolve_mode(store: FileStore, mode: str) -> str:
    """The scan mode ``mode`` means on this table: ``auto`` is ``changelog`` when the
    table has a changelog producer, else ``delta`` (Paimon's
    ``incremental-between-scan-mode``).

    Raises:
        InvalidArgumentError: a mode that is none of ``SCAN_MODES``.
    """
    if mode not in SCAN_MODES:
        raise InvalidArgumentError(
            f"scan mode {mode!r} is none of {', '.join(SCAN_MODES)} "
            "(Paimon's incremental-between-scan-mode)"
        )
    if mode != "auto":
        return mode
    return "delta" if store.options.get(O.CHANGELOG_PRODUCER) == "none" else "changelog"


def plan_incremental(
    store: FileStore, start: int | str, end: int | str, mode: str = "auto"
) -> IncrementalPlan:
    """The read of what was committed after ``start`` up to ``end``: two snapshot ids
    (by ``mode``: the delta of the APPEND commits in ``(start, end]``, the changelog
    files of its snapshots, or the difference of the two snapshots' data) or two tag
    names (the difference of the tags' data).

    Raises:
        InvalidArgumentError: a snapshot id and a tag name mixed, a range backwards, or
            an unknown mode.
        SnapshotNotFoundError, TagNotFoundError: a point of the range is not there.
    """
    mode = resolve_mode(store, mode)
    if isinstance(start, int) and isinstance(end, int) and mode != "delta":
        if mode == "changelog":
            return IncrementalPlan([], changelog=tuple(changelog_entries(store, start, end)))
        if end < start:
            raise InvalidArgumentError(f"incremental range ({start}, {end}] runs backwards")
        pair = (store.snapshots.snapshot(start), store.snapshots.snapshot(end))
        if store.is_primary_key:
            return IncrementalPlan([], diff=pair)
        _deletion_vectors(store, start, end)
        entries = diff_entries(store, *pair)
        return IncrementalPlan(make_splits(store, end, entries, whole_buckets=False))
    vectors = _deletion_vectors(store, start, end)
    if isinstance(start, str) and isinstance(end, str):
        start_snapshot, end_snapshot = store.tags.get(start)[1], store.tags.get(end)[1]
        if store.is_primary_key:
            return IncrementalPlan([], diff=(start_snapshot, end_snapshot))
        entries = diff_entries(store, start_snapshot, end_snapshot)
        snapshot_id = end_snapshot.id
    elif isinstance(start, int) and isinstance(end, int):
        entries = delta_entries(store, start, end)
        if vectors:
            entries = _above_level_0(store, start, end, entries)
        snapshot_id = end
    else:
        raise InvalidArgumentError("incremental takes two snapshot ids or two tag names, not a mix")
    return IncrementalPlan(
        make_splits(store, snapshot_id, entries, whole_buckets=store.is_primary_key)
    )


def _deletion_vectors(store: FileStore, start: int | str, end: int | str) -> bool:
    """Whether the range is read as Paimon reads a primary-key table with deletion
    vectors (the table's options enable them).

    Raises:
        UnsupportedFeatureError: an append table with deletion vectors, or a table
            whose snapshot or tag at the end of the range holds deletion vectors
            that its options do not enable.
    """
    if DVS.enabled(store.schema.options):
        if store.is_primary_key:
            return True
    else:
        snapshot = store.tags.get(end)[1] if isinstance(end, str) else store.snapshots.find(end)
        if snapshot is None or not DVS.deletion_files(store, snapshot):
            return False
    raise UnsupportedFeatureError(
        f"table {store.uri!r} has deletion vectors; shoal reads incremental ranges "
        f"({start!r}, {end!r}] only of primary-key tables with "
        "'deletion-vectors.enabled' = 'true': read each snapshot or tag instead",
        feature="incremental reads of deletion-vector tables",
    )


def _above_level_0(
    store: FileStore, start: int, end: int, entries: list[ManifestEntry]
) -> list[ManifestEntry]:
    """The delta of a primary-key table with deletion vectors: the entries above level
    0 (its batch scan sees no others), which must be none.

    Raises:
        UnsupportedFeatureError: an APPEND commit of the range added a file above
            level 0, which Paimon 0.9 and 1.0 read differently (module docstring).
    """
    lifted = [e for e in entries if e.file.level > 0]
    if lifted:
        raise UnsupportedFeatureError(
            f"table {store.uri!r} has deletion vectors and an APPEND commit in "
            f"({start}, {end}] added {lifted[0].file.file_name!r} at level "
            f"{lifted[0].file.level}; Paimon 0.9 and 1.0 read such a delta differently, "
            "so shoal does not read it: read each snapshot instead",
            feature="incremental deltas of deletion-vector tables with appends above level 0",
        )
    return lifted


def delta_entries(store: FileStore, start: int, end: int) -> list[ManifestEntry]:
    """ADD entries of the APPEND snapshots after ``start`` up to ``end``.

    Raises SnapshotNotFoundError when a snapshot of the range has expired.
    """
    if end < start:
        raise InvalidArgumentError(f"incremental range ({start}, {end}] runs backwards")
    entries: list[ManifestEntry] = []
    for snapshot_id in range(start + 1, end + 1):
        snapshot = store.snapshots.snapshot(snapshot_id)
        if snapshot.commit_kind != CommitKind.APPEND:
            continue
        metas = store.manifests.read_list(snapshot.delta_manifest_list)
        for part in store.manifests.read_manifests(metas):
            entries.extend(e for e in part if e.kind == M.KIND_ADD)
    return entries


def changelog_entries(store: FileStore, start: int, end: int) -> list[ManifestEntry]:
    """The changelog files of the snapshots after ``start`` up to ``end`` (ADD entries
    of their changelog manifest lists), in commit order; snapshots without a changelog
    (compactions, overwrites, tables without a changelog producer) add none. An expired
    snapshot whose changelog outlives it is read from its long-lived changelog
    (``changelog/changelog-<id>``), as Paimon's streaming reads read it.

    Raises SnapshotNotFoundError when a snapshot of the range has expired and its
    changelog with it.
    """
    if end < start:
        raise InvalidArgumentError(f"incremental range ({start}, {end}] runs backwards")
    entries: list[ManifestEntry] = []
    kept = set(store.changelogs.list_ids())  # one listing, not a read per snapshot
    for snapshot_id in range(start + 1, end + 1):
        snapshot = (
            store.changelogs.find(snapshot_id) if snapshot_id in kept else None
        ) or store.snapshots.find(snapshot_id)
        if snapshot is None:
            raise SnapshotNotFoundError(
                f"the changelog of snapshot {snapshot_id} is gone: the snapshot expired and "
                "no long-lived changelog of it is kept (changelog.num-retained.min/max and "
                "changelog.time-retained keep changelogs longer than snapshots)",
                snapshot_id=snapshot_id,
            )
        if not snapshot.changelog_manifest_list:
            continue
        metas = store.manifests.read_list(snapshot.changelog_manifest_list)
        for part in store.manifests.read_manifests(metas):
            entries.extend(e for e in part if e.kind == M.KIND_ADD)
    return entries


def read_changelog(
    store: FileStore,
    entries: Sequence[ManifestEntry],
    columns: Sequence[str] | None,
    dnf: P.Dnf | None,
    *,
    row_kind: bool,
) -> pa.Table:
    """The rows of changelog files, each file's rows in its order, files in the order
    given: every row with its kind, as a streaming reader of the table sees them
    snapshot by snapshot. With ``row_kind`` a first column ``rowkind`` holds each row's
    kind (Paimon's ``audit_log``); without it the retractions (``-U``, ``-D``) are left
    out, as a batch read leaves them out. Files written under an older schema are read
    by field id as the table's current schema."""
    merger = BucketMerger(
        store.file_io,
        store.layout,
        store.merge_settings,
        keep_system=True,
        drop_deletes=False,
        schemas=store.schema_of,
    )

    def read(entry: ManifestEntry) -> pa.Table:
        bucket = store.paths.bucket_dir(store.partitions.path(entry.partition), entry.bucket)
        whole = np.arange(entry.file.row_count)
        return merger.rows_at(
            RunFile(data_file_path(bucket, entry.file), entry.file.schema_id), whole
        )

    schema = store.schema.arrow_schema()
    tables = parallel_map(read, list(entries)) if entries else []
    rows = pa.concat_tables(tables) if tables else merger.read_schema.empty_table()
    rows = rows.select([*schema.names, kv.VALUE_KIND])
    if dnf is not None:
        rows = rows.filter(P.to_expression(dnf))
    if not row_kind:
        rows = rows.filter(pc.invert(kv.is_retract(rows.column(kv.VALUE_KIND))))
    names = list(columns) if columns is not None else schema.names
    out = rows.select(names)
    if row_kind:
        kinds = pc.cast(rows.column(kv.VALUE_KIND), pa.int32())
        out = out.add_column(0, ROW_KIND, pc.take(_KIND_NAMES, kinds))
    return out


def diff_entries(store: FileStore, start: Snapshot, end: Snapshot) -> list[ManifestEntry]:
    """Entries live in ``end`` and not in ``start``."""
    before = {e.identifier() for e in live_entries(store, start)}
    return [e for e in live_entries(store, end) if e.identifier() not in before]


def keyed_diff(
    store: FileStore, start: Snapshot, end: Snapshot, columns: Sequence[str] | None
) -> pa.Table:
    """Rows of a primary-key table at ``end`` whose key is absent at ``start`` or
    whose row differs there (keys deleted in between are not rows of ``end``). On a
    table with deletion vectors, as Paimon diffs it (:func:`vector_diff`)."""
    if DVS.enabled(store.schema.options):
        return vector_diff(store, start, end, columns)
    before = _by_bucket(live_entries(store, start))
    after = _by_bucket(live_entries(store, end))
    changed = [b for b in after if {e.identifier() for e in after[b]} != _ids(before.get(b, []))]
    keys = list(store.schema.primary_keys)
    new = read_merged(store, _splits(store, end, after, changed), None, None)
    old = read_merged(store, _splits(store, start, before, changed), None, None)
    rows = new.filter(_new_or_changed(new, old, keys)) if old.num_rows else new
    return rows.select(list(columns)) if columns is not None else rows


def vector_diff(
    store: FileStore, start: Snapshot, end: Snapshot, columns: Sequence[str] | None
) -> pa.Table:
    """The diff of two snapshots of a primary-key table with deletion vectors, as Paimon
    0.9 and 1.0 read it: per bucket, the rows of the files above level 0 live at
    ``end`` only (masked by ``end``'s vectors) whose key has no row in the files above
    level 0 live at ``start`` only (masked by ``start``'s vectors), or a different row
    there. Each key has at most one row left unmasked in a bucket's files above level
    0, so the files are read without merging, as the batch scan reads them."""
    before = _by_bucket([e for e in live_entries(store, start) if e.file.level > 0])
    after = _by_bucket([e for e in live_entries(store, end) if e.file.level > 0])
    keys = list(store.schema.primary_keys)
    added: list[ManifestEntry] = []
    pairs: list[tuple[list[ManifestEntry], list[ManifestEntry]]] = []
    for bucket, entries in after.items():
        old_ids, new_ids = _ids(before.get(bucket, [])), _ids(entries)
        new = [e for e in entries if e.identifier() not in old_ids]
        old = [e for e in before.get(bucket, []) if e.identifier() not in new_ids]
        if new and old:
            pairs.append((new, old))
        else:
            added.extend(new)
    after_vectors = DVS.deletion_files(store, end)
    before_vectors = DVS.deletion_files(store, start) if pairs else {}
    tables = [_read_masked(store, end, added, after_vectors)]
    for new, old in pairs:
        rows = _read_masked(store, end, new, after_vectors)
        previous = _read_masked(store, start, old, before_vectors)
        if previous.num_rows:
            rows = rows.filter(_new_or_changed(rows, previous, keys))
        tables.append(rows)
    rows = pa.concat_tables(tables)
    return rows.select(list(columns)) if columns is not None else rows


def _read_masked(
    store: FileStore,
    snapshot: Snapshot,
    entries: list[ManifestEntry],
    deletions: dict[str, DVS.DeletionFile],
) -> pa.Table:
    """The rows of ``entries``, files of ``snapshot``, that its vectors
    (``deletions``) leave."""
    if not entries:
        return store.schema.arrow_schema().empty_table()
    splits = make_splits(store, snapshot.id, entries, deletions=deletions)
    return read_table(store, splits, store.schema, None, None, key_value=True)


def _by_bucket(entries: list[ManifestEntry]) -> dict[tuple[bytes, int], list[ManifestEntry]]:
    out: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
    for entry in entries:
        out[(entry.partition, entry.bucket)].append(entry)
    return out


def _ids(entries: list[ManifestEntry]) -> set[object]:
    return {e.identifier() for e in entries}


def _splits(
    store: FileStore,
    snapshot: Snapshot,
    by_bucket: dict[tuple[bytes, int], list[ManifestEntry]],
    buckets: list[tuple[bytes, int]],
) -> list[DataSplit]:
    entries = [e for b in buckets for e in by_bucket.get(b, [])]
    return make_splits(store, snapshot.id, entries, whole_buckets=True)


def _new_or_changed(new: pa.Table, old: pa.Table, keys: list[str]) -> pa.Array:
    """A mask over ``new``: its key is not in ``old``, or some column differs."""
    left = new.select(keys).append_column("__new", pa.array(np.arange(new.num_rows)))
    right = old.select(keys).append_column("__old", pa.array(np.arange(old.num_rows)))
    pairs = left.join(right, keys, join_type="left outer")
    matched = pairs.filter(pc.is_valid(pairs["__old"]))
    new_rows, old_rows = matched["__new"], matched["__old"]
    differs = np.zeros(len(matched), dtype=bool)
    for name in new.column_names:
        if name in keys:
            continue
        a, b = new[name].take(new_rows), old[name].take(old_rows)
        differs |= _unequal(a, b)
    mask = np.ones(new.num_rows, dtype=bool)
    mask[np.asarray(new_rows)[~differs]] = False
    return pa.array(mask)


def _unequal(a: pa.ChunkedArray, b: pa.ChunkedArray) -> np.ndarray:
    """Element-wise "not the same value" (two nulls are the same)."""
    try:
        equal = pc.fill_null(pc.equal(a, b), False)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        return ~np.asarray(pc.or_(equal, both_null))
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # nested types
        return np.array([x != y for x, y in zip(a.to_pylist(), b.to_pylist(), strict=True)])
