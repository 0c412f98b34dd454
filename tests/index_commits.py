"""Snapshots that change only a table's index files, built with shoal's encoders.

shoal writes deletion vectors on primary-key tables only (through compaction); these
helpers give the cleanup tests append tables whose index files come and go too: a
snapshot that marks rows of a data file deleted (the bucket's deletion-vector index file replaced
by one holding its old vectors and the new rows) and a snapshot that replaces a
bucket's hash index file. Each is published as a commit would publish it: the
previous snapshot's manifests carried in a new base list, an empty delta, a new
index manifest.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import shoal
from shoal.core import deletion_vectors as DVS
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries, read_manifest_metas
from shoal.format import deletion_vector as DV
from shoal.format.index_manifest import (
    DELETION_VECTORS_INDEX,
    HASH_INDEX,
    DeletionVectorMeta,
    IndexFileMeta,
    IndexManifestEntry,
    encode_index_manifest,
)
from shoal.format.manifest import KIND_ADD, ManifestEntry
from shoal.format.snapshot import Snapshot


def _index_file_name() -> str:
    return f"index-{uuid.uuid4()}-0"


def publish_index(table: shoal.Table, entries: Sequence[IndexManifestEntry]) -> Snapshot:
    """Publish the next snapshot of ``table`` with the same files and ``entries`` as its
    index manifest."""
    store = table._store
    latest = store.snapshots.latest()
    assert latest is not None
    base, base_size = store.manifests.write_list(read_manifest_metas(store, latest))
    delta, delta_size = store.manifests.write_list([])
    name = f"index-manifest-{uuid.uuid4()}-0"
    store.file_io.write_bytes(store.paths.manifest_path(name), encode_index_manifest(entries))
    snapshot = replace(
        latest,
        id=latest.id + 1,
        commit_kind="APPEND",
        time_millis=int(time.time() * 1000),
        delta_record_count=0,
        base_manifest_list=base,
        base_manifest_list_size=base_size,
        delta_manifest_list=delta,
        delta_manifest_list_size=delta_size,
        changelog_manifest_list=None,
        changelog_manifest_list_size=None,
        index_manifest=name,
    )
    assert store.snapshots.try_publish(snapshot)
    return snapshot


def _current(table: shoal.Table) -> tuple[Snapshot, list[IndexManifestEntry]]:
    store = table._store
    latest = store.snapshots.latest()
    assert latest is not None
    return latest, DVS.index_entries(store, latest)


def live_files(table: shoal.Table) -> list[ManifestEntry]:
    """The live data files of the latest snapshot, in a stable order."""
    latest = table._store.snapshots.latest()
    if latest is None:
        return []
    entries = live_entries(table._store, latest)
    return sorted(entries, key=lambda e: e.file.file_name)


def delete_rows(table: shoal.Table, entry: ManifestEntry, positions: Sequence[int]) -> pa.Table:
    """Publish a snapshot that marks rows ``positions`` of the data file ``entry``
    deleted; returns the rows that were visible at those positions and are gone now."""
    store = table._store
    latest, entries = _current(table)
    live = {e.file.file_name for e in live_entries(store, latest)}
    vectors: dict[str, np.ndarray] = {}
    others: list[IndexManifestEntry] = []
    for e in entries:
        same_bucket = (e.partition, e.bucket) == (entry.partition, entry.bucket)
        if e.index_file.index_type != DELETION_VECTORS_INDEX or not same_bucket:
            others.append(e)
            continue
        path = store.paths.index_path(e.index_file.file_name)
        with open(path, "rb") as f:
            data = f.read()
        for r in e.index_file.dv_ranges or ():
            if r.data_file_name in live:
                vectors[r.data_file_name] = DV.decode(data, r.offset, r.length)
    name = entry.file.file_name
    before = vectors.get(name, np.array([], dtype=np.uint64))
    vectors[name] = np.union1d(before, np.asarray(positions, dtype=np.uint64))
    bucket_dir = store.paths.bucket_dir(store.partitions.path(entry.partition), entry.bucket)
    rows = pq.read_table(data_file_path(bucket_dir, entry.file))
    fresh = np.setdiff1d(np.asarray(positions, dtype=np.uint64), before)
    gone = rows.take(pa.array(fresh.astype(np.int64)))
    data, ranges = DV.encode_file(vectors)
    file_name = _index_file_name()
    store.file_io.write_bytes(store.paths.index_path(file_name), data)
    meta = IndexFileMeta(
        DELETION_VECTORS_INDEX,
        file_name,
        len(data),
        len(ranges),
        tuple(DeletionVectorMeta(*r) for r in ranges),
    )
    publish_index(
        table, [*others, IndexManifestEntry(KIND_ADD, entry.partition, entry.bucket, meta)]
    )
    return gone


def rehash(table: shoal.Table, partition: bytes, bucket: int) -> Snapshot:
    """Publish a snapshot that replaces the hash index file of ``partition`` and
    ``bucket`` with a new one (4-byte hashes, as Paimon writes them)."""
    store = table._store
    _, entries = _current(table)
    others = [
        e
        for e in entries
        if (e.partition, e.bucket, e.index_file.index_type) != (partition, bucket, HASH_INDEX)
    ]
    hashes = np.arange(3, dtype=">i4").tobytes()
    file_name = _index_file_name()
    store.file_io.write_bytes(store.paths.index_path(file_name), hashes)
    meta = IndexFileMeta(HASH_INDEX, file_name, len(hashes), 3)
    return publish_index(table, [*others, IndexManifestEntry(KIND_ADD, partition, bucket, meta)])
