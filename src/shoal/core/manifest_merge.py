"""Keeping manifest lists short, so planning does not slow down as history grows.

Each commit carries the previous base and delta manifests into the new base list.
Small manifests are merged in order once they add up to the target size, or once
``manifest.merge-min-count`` of them are left over; when manifests holding DELETE
entries add up to ``manifest.full-compaction-threshold-size``, every manifest is
rewritten with only the live ADD entries. Merging reads only the manifests it
rewrites.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shoal.core.manifests import ManifestStore
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
    delete_bytes = sum(m.file_size for m in metas if m.num_deleted_files > 0)
    if delete_bytes >= full_compaction_size:
        return _full_rewrite(store, metas)
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


def _full_rewrite(store: ManifestStore, metas: Sequence[ManifestFileMeta]) -> MergeResult:
    entries = M.merge_entries(e for part in store.read_manifests(metas) for e in part)
    # Every ADD is in the input, so a DELETE left over cancels nothing: drop it.
    live: list[ManifestEntry] = [e for e in entries if e.kind == M.KIND_ADD]
    new_metas = store.write_manifests(live)
    return MergeResult(new_metas, [m.file_name for m in new_metas])
