"""The full compaction of manifests, as Paimon 1.0's ``ManifestFileMerger`` does it:
triggered by the size of the manifests that must change, keeping the large manifests
of partitions no DELETE touches, rewriting the rest without DELETE entries and
without the files they delete, nothing live lost."""

from __future__ import annotations

import dataclasses
from typing import Any

import pyarrow as pa

import shoal
from shoal.core.manifest_merge import merge_manifests
from shoal.core.manifests import ManifestStore
from shoal.core.plan import live_entries
from shoal.format import manifest as M
from shoal.format.manifest import ManifestEntry

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64())])


def _setup(tmp_path: object) -> tuple[ManifestStore, dict[str, ManifestEntry], shoal.Table]:
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, partition_keys=["dt"])
    table.append(pa.table({"dt": ["a", "b"], "id": [1, 2]}, schema=SCHEMA))
    latest = table.latest_snapshot()
    assert latest is not None
    by_day = {
        table._store.partitions.decode(e.partition)[0]: e
        for e in live_entries(table._store, latest)
    }
    return table._store.manifests, by_day, table


def _copies(entry: ManifestEntry, prefix: str, n: int) -> list[ManifestEntry]:
    return [
        dataclasses.replace(
            entry, file=dataclasses.replace(entry.file, file_name=f"{prefix}-{i}.parquet")
        )
        for i in range(n)
    ]


def _live(store: ManifestStore, metas: list[M.ManifestFileMeta]) -> set[M.EntryIdentifier]:
    entries = M.merge_entries(e for part in store.read_manifests(metas) for e in part)
    return {e.identifier() for e in entries if e.kind == M.KIND_ADD}


def test_full_compaction_keeps_untouched_partitions_and_drops_deleted_files(
    tmp_path: object,
) -> None:
    base_store, by_day, table = _setup(tmp_path)
    a_files, b_files = _copies(by_day["a"], "a", 300), _copies(by_day["b"], "b", 300)
    target = min(len(M.encode_manifest(a_files)), len(M.encode_manifest(b_files)))
    store = ManifestStore(
        base_store.file_io,
        base_store.paths,
        base_store.partition_types,
        table._store.partitions.decode,
        target_size=target,
    )
    (a_meta,) = store.write_manifests(a_files)
    (b_meta,) = store.write_manifests(b_files)
    added = _copies(by_day["b"], "b-new", 1)
    delta = store.write_manifests([b_files[7].with_kind(M.KIND_DELETE), *added])
    metas = [a_meta, b_meta, *delta]
    expected = _live(store, metas)

    # below the trigger (the delta is all that must change): the minor merge, which
    # leaves fewer than merge-min-count small files as they are
    minor = merge_manifests(
        store, metas, target_size=target, min_count=30, full_compaction_size=1 << 30
    )
    assert (minor.metas, minor.written) == (metas, [])

    read: list[str] = []
    read_manifest = store.read_manifest

    def counted(name: str, partitions: Any = None) -> list[ManifestEntry]:
        read.append(name)
        return read_manifest(name, partitions)

    store.read_manifest = counted  # type: ignore[method-assign]
    full = merge_manifests(store, metas, target_size=target, min_count=30, full_compaction_size=1)
    assert full.metas[0] == a_meta  # no DELETE in its partition: kept, unread
    assert a_meta.file_name not in read
    assert b_meta.file_name in read
    assert b_meta not in full.metas  # held the deleted file: rewritten
    assert {m.file_name for m in full.metas[1:]} == set(full.written)
    assert sum(m.num_deleted_files for m in full.metas) == 0
    assert _live(store, full.metas) == expected
    assert b_files[7].identifier() not in expected


def test_full_compaction_keeps_a_large_manifest_without_deleted_files(tmp_path: object) -> None:
    """A large manifest of the deleted partition that holds none of the deleted files is
    read but kept as it is."""
    base_store, by_day, table = _setup(tmp_path)
    b_old, b_new = _copies(by_day["b"], "b-old", 300), _copies(by_day["b"], "b-more", 300)
    target = min(len(M.encode_manifest(b_old)), len(M.encode_manifest(b_new)))
    store = ManifestStore(
        base_store.file_io,
        base_store.paths,
        base_store.partition_types,
        table._store.partitions.decode,
        target_size=target,
    )
    (old_meta,) = store.write_manifests(b_old)
    (new_meta,) = store.write_manifests(b_new)
    delta = store.write_manifests([b_new[3].with_kind(M.KIND_DELETE)])
    metas = [old_meta, new_meta, *delta]
    expected = _live(store, metas)
    full = merge_manifests(store, metas, target_size=target, min_count=30, full_compaction_size=1)
    assert full.metas[0] == old_meta
    assert new_meta not in full.metas
    assert sum(m.num_deleted_files for m in full.metas) == 0
    assert _live(store, full.metas) == expected
