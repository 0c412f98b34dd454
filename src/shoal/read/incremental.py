"""Incremental reads: what changed between two points of a table's history.

Between two snapshot ids ``(start, end]`` (a *delta*): the files that APPEND commits
in that range added, as Paimon's delta scan reads them (compactions rewrite rows
that are already there, and overwrites are not additions). Between two tags (a
*diff*): the files live at the end tag that were not live at the start tag; on a
primary-key table, the rows of the end tag that are new or changed since the start
tag, found by merging both versions of each bucket whose files differ.

Tables with deletion vectors are refused (UnsupportedFeatureError): their rows are
deleted by vectors that later snapshots add to files committed earlier, and by
compactions that the delta leaves out, so neither the delta of the APPEND commits nor
a merge of each bucket's files is the change Paimon reads between two points of such
a table; returning them would return deleted rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal.core import deletion_vectors as DVS
from shoal.core.plan import DataSplit, live_entries, make_splits
from shoal.core.store import FileStore
from shoal.errors import InvalidArgumentError, UnsupportedFeatureError
from shoal.format import manifest as M
from shoal.format.manifest import ManifestEntry
from shoal.format.snapshot import CommitKind, Snapshot
from shoal.read.files import read_merged


@dataclass(frozen=True, slots=True)
class IncrementalPlan:
    """What an incremental read reads: ``splits`` (merged by key on a primary-key
    table), or, for the difference of two tags on a primary-key table, the two
    snapshots ``diff`` whose rows :func:`keyed_diff` compares."""

    splits: list[DataSplit]
    diff: tuple[Snapshot, Snapshot] | None = None


def plan_incremental(store: FileStore, start: int | str, end: int | str) -> IncrementalPlan:
    """The read of what was committed after ``start`` up to ``end``: two snapshot ids
    (the delta of the APPEND commits in ``(start, end]``) or two tag names (the
    difference of the tags' data).

    Raises:
        InvalidArgumentError: a snapshot id and a tag name mixed, or a range backwards.
        SnapshotNotFoundError, TagNotFoundError: a point of the range is not there.
    """
    _refuse_deletion_vectors(store, start, end)
    if isinstance(start, str) and isinstance(end, str):
        start_snapshot, end_snapshot = store.tags.get(start)[1], store.tags.get(end)[1]
        if store.is_primary_key:
            return IncrementalPlan([], diff=(start_snapshot, end_snapshot))
        entries = diff_entries(store, start_snapshot, end_snapshot)
        snapshot_id = end_snapshot.id
    elif isinstance(start, int) and isinstance(end, int):
        entries = delta_entries(store, start, end)
        snapshot_id = end
    else:
        raise InvalidArgumentError("incremental takes two snapshot ids or two tag names, not a mix")
    return IncrementalPlan(
        make_splits(store, snapshot_id, entries, whole_buckets=store.is_primary_key)
    )


def _refuse_deletion_vectors(store: FileStore, start: int | str, end: int | str) -> None:
    """Raise UnsupportedFeatureError for a table with deletion vectors: enabled by its
    options, or held by the snapshot or tag the range ends at."""
    if not DVS.enabled(store.schema.options):
        snapshot = store.tags.get(end)[1] if isinstance(end, str) else store.snapshots.find(end)
        if snapshot is None or not DVS.deletion_files(store, snapshot):
            return
    raise UnsupportedFeatureError(
        f"table {store.uri!r} has deletion vectors; shoal does not read incremental ranges "
        f"({start!r}, {end!r}] of such tables yet: read each snapshot or tag instead",
        feature="incremental reads of deletion-vector tables",
    )


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


def diff_entries(store: FileStore, start: Snapshot, end: Snapshot) -> list[ManifestEntry]:
    """Entries live in ``end`` and not in ``start``."""
    before = {e.identifier() for e in live_entries(store, start)}
    return [e for e in live_entries(store, end) if e.identifier() not in before]


def keyed_diff(
    store: FileStore, start: Snapshot, end: Snapshot, columns: Sequence[str] | None
) -> pa.Table:
    """Rows of a primary-key table at ``end`` whose key is absent at ``start`` or
    whose row differs there (keys deleted in between are not rows of ``end``)."""
    before = _by_bucket(live_entries(store, start))
    after = _by_bucket(live_entries(store, end))
    changed = [b for b in after if {e.identifier() for e in after[b]} != _ids(before.get(b, []))]
    keys = list(store.schema.primary_keys)
    new = read_merged(store, _splits(store, end, after, changed), None, None)
    old = read_merged(store, _splits(store, start, before, changed), None, None)
    rows = new.filter(_new_or_changed(new, old, keys)) if old.num_rows else new
    return rows.select(list(columns)) if columns is not None else rows


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
