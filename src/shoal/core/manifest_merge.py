"""Keeping manifest lists short, so planning does not slow down as history grows.

Each commit carries the previous base and delta manifests into the new base list.
Small manifests are merged in order once they add up to the target size, or once
``manifest.merge-min-count`` of them are left over. A full compaction comes first, as
Paimon 1.0's ``ManifestFileMerger`` does it: when the manifests that must change (those
holding DELETE entries or smaller than the target) add up to
``manifest.full-compaction-threshold-size``, the files the DELETE entries name are
collected; a large manifest without DELETE entries whose partition statistics hold
none of their partitions is kept unread, and of the others each one that must change
or holds a deleted file is rewritten with its live ADD entries only (all of them
rolled into new files in order), the rest kept. With at most one manifest to look
at, the minor merge runs instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from shoal.core.manifests import ManifestStore
from shoal.format import binary_row
from shoal.format import manifest as M
from shoal.format.manifest import ManifestEntry, ManifestFileMeta


@dataclass(frozen=True, slots=True)
class MergeResult:
    metas: list[ManifestFileMeta]
    written: list[str]  # names of the manifests this merge created


def merge_manifests(
    store: ManifestStore,
    metas: Sequence[ManifestFileMeta],
    *,
    target_size: int,
    min_count: int,
    full_compaction_size: int,
) -> MergeResult:
    full = _full_compaction(store, metas, target_size, full_compaction_size)
    if full is not None:
        return full
    result: list[ManifestFileMeta] = []
    written: list[str] = []
    candidates: list[ManifestFileMeta] = []
    total = 0
    for meta in metas:
        candidates.append(meta)
        total += meta.file_size
        if total >= target_size:
            _merge_group(store, candidates, result, written)
            candidates, total = [], 0
    if len(candidates) >= min_count:
        _merge_group(store, candidates, result, written)
    else:
        result.extend(candidates)
    return MergeResult(result, written)


def _merge_group(
    store: ManifestStore,
    group: list[ManifestFileMeta],
    result: list[ManifestFileMeta],
    written: list[str],
) -> None:
    if len(group) == 1:
        result.extend(group)
        return
    entries = M.merge_entries(e for part in store.read_manifests(group) for e in part)
    new_metas = store.write_manifests(entries)
    result.extend(new_metas)
    written.extend(m.file_name for m in new_metas)


def _full_compaction(
    store: ManifestStore,
    metas: Sequence[ManifestFileMeta],
    target_size: int,
    trigger: int,
) -> MergeResult | None:
    def must_change(m: ManifestFileMeta) -> bool:
        return m.num_deleted_files > 0 or m.file_size < target_size

    if sum(m.file_size for m in metas if must_change(m)) < trigger:
        return None
    with_deletes = [m for m in metas if m.num_deleted_files > 0]
    deleted = {
        e.identifier()
        for part in store.read_manifests(with_deletes)
        for e in part
        if e.kind == M.KIND_DELETE
    }
    result: list[ManifestFileMeta] = []
    to_merge = list(metas)
    if store.partition_types and deleted:
        may_hold = _partitions_predicate(store, {identifier[0] for identifier in deleted})
        to_merge = []
        for m in metas:
            if must_change(m) or may_hold(m):
                to_merge.append(m)
            else:
                result.append(m)
    if len(to_merge) <= 1:
        return None
    rewritten: list[ManifestEntry] = []
    for m, entries in zip(to_merge, store.read_manifests(to_merge), strict=True):
        require_change = must_change(m)
        kept = []
        for e in entries:
            if e.kind == M.KIND_DELETE:
                continue
            if e.identifier() in deleted:
                require_change = True
            else:
                kept.append(e)
        if require_change:
            rewritten.extend(kept)
        else:
            result.append(m)
    new_metas = store.write_manifests(rewritten)
    result.extend(new_metas)
    return MergeResult(result, [m.file_name for m in new_metas])


def _partitions_predicate(
    store: ManifestStore, partitions: set[bytes]
) -> Callable[[ManifestFileMeta], bool]:
    """Whether a manifest's partition statistics may hold a partition inside the
    per-field range of ``partitions`` (Paimon's ``MultiplePartitionPredicate``)."""
    types = store.partition_types
    rows = [binary_row.deserialize(p, types) for p in partitions]
    fields = []
    for i in range(len(types)):
        values = [r[i] for r in rows]
        present = [v for v in values if v is not None]
        low = min(present) if present else None
        high = max(present) if present else None
        fields.append((low, high, len(present) < len(values)))

    def may_hold(meta: ManifestFileMeta) -> bool:
        stats = meta.partition_stats
        try:
            mins = binary_row.deserialize(stats.min_values, types)
            maxs = binary_row.deserialize(stats.max_values, types)
        except ValueError:
            return True
        nulls = stats.null_counts or ()
        count = meta.num_added_files + meta.num_deleted_files
        for i, (low, high, any_null) in enumerate(fields):
            null_count = nulls[i] if i < len(nulls) else None
            may_be_null = null_count is None or null_count > 0
            if low is None:  # every deleted partition is null here
                if not may_be_null:
                    return False
                continue
            all_null = null_count is not None and null_count == count
            if all_null:
                in_range = False
            elif mins[i] is None or maxs[i] is None:
                in_range = True  # unknown statistics
            else:
                in_range = maxs[i] >= low and mins[i] <= high
            if not (in_range or (any_null and may_be_null)):
                return False
        return True

    return may_hold
