"""The highest sequence number of each bucket, carried in the snapshots of a
primary-key table, so that a write numbers its rows without reading manifests.

A primary-key write numbers its rows above every row already in the buckets it
writes (Paimon's writer restores each bucket's maximum sequence number from its
files), and the commit checks that no concurrent writer went above them meanwhile.
Both would read the manifests that may hold the written partitions, which at a
million files is a few manifests of a hundred thousand entries each. Instead each
shoal commit records, in the snapshot's ``properties``:

- ``shoal.sequences.snapshot-id``: the id of the snapshot the record describes; a
  snapshot whose properties carry a record of another id (copied forward by some
  other writer) is treated as carrying none;
- ``shoal.sequences.by-partition``: for each partition it knows, the highest
  ``max_sequence_number`` of the live files of each of its buckets that hold files,
  as zlib-compressed JSON in base64. A partition named knows all its buckets: a
  bucket it does not list holds no file.

A commit carries the previous snapshot's record forward, updated from its own
entries. A partition a commit writes that the record does not know is read once
(the read the write did anyway) and known from then on. A DELETE of the file that
held a bucket's maximum, with no ADD of the same commit reaching it again (an
overwrite, a partition dropped or expired), makes that partition unknown, as does
any DELETE the record cannot account for. Only the :data:`MAX_PARTITIONS` partitions
written last are kept. So a partition the record knows holds exactly what a scan of
its files gives, and every other partition is read as before.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Collection, Iterable, Mapping

from shoal.core.plan import live_entries
from shoal.core.store import FileStore
from shoal.format import collector
from shoal.format import manifest as M
from shoal.format.manifest import ManifestEntry
from shoal.format.snapshot import Snapshot

SNAPSHOT_ID = "shoal.sequences.snapshot-id"
BY_PARTITION = "shoal.sequences.by-partition"
MAX_PARTITIONS = 4096

BucketKey = tuple[bytes, int]
# partition -> bucket -> the highest sequence number of its live files
Known = dict[bytes, dict[int, int]]


def recorded(snapshot: Snapshot | None) -> Known:
    """The partitions ``snapshot``'s record knows (none when it carries no usable one),
    a copy the caller may change."""
    properties = (snapshot.properties or {}) if snapshot is not None else {}
    if snapshot is None or properties.get(SNAPSHOT_ID) != str(snapshot.id):
        return {}
    text = properties.get(BY_PARTITION)
    if not isinstance(text, str):
        return {}
    known = _DECODED.get(text)
    if known is None:
        known = _decoded(text)
        if len(_DECODED) >= _DECODED_KEPT:
            _DECODED.clear()
        _DECODED[text] = known
    return {partition: dict(buckets) for partition, buckets in known.items()}


# The records decoded last, by their text: a commit reads its base snapshot's record
# when it numbers its rows, when it checks for concurrent writers and when it writes
# the next record, and a record of thousands of partitions takes milliseconds to decode.
_DECODED: dict[str, Known] = {}
_DECODED_KEPT = 4


def _decoded(text: str) -> Known:
    try:
        with collector.paused():  # a dict and a list per partition, no cycles among them
            raw = json.loads(zlib.decompress(base64.b64decode(text)))
            return {
                bytes.fromhex(p): {int(b): int(s) for b, s in buckets} for p, buckets in raw.items()
            }
    except (ValueError, TypeError, AttributeError, zlib.error, binascii.Error):
        return {}  # damaged or of another shape: read the manifests instead


def _partition_state(entries: Iterable[ManifestEntry], partitions: Collection[bytes]) -> Known:
    """The record of ``partitions`` from their live ADD entries."""
    known: Known = {p: {} for p in partitions}
    for e in entries:
        buckets = known.get(e.partition)
        if buckets is not None:
            high = e.file.max_sequence_number
            if high > buckets.get(e.bucket, -1):
                buckets[e.bucket] = high
    return known


def known_for(store: FileStore, snapshot: Snapshot | None, partitions: Collection[bytes]) -> Known:
    """The record of each of ``partitions`` in ``snapshot``: from its properties where
    they know the partition, else from the live files of the partitions they do not
    know (the manifests that may hold those only)."""
    if snapshot is None:
        return {p: {} for p in partitions}
    record = recorded(snapshot)
    known = {p: record[p] for p in partitions if p in record}
    missing = [p for p in partitions if p not in record]
    if missing:
        found = live_entries(store, snapshot, partitions=missing)
        known.update(_partition_state(found, missing))
    return known


def next_sequences(
    store: FileStore, snapshot: Snapshot | None, buckets: Iterable[BucketKey]
) -> dict[BucketKey, int]:
    """The first free sequence number of each of ``buckets`` that holds files in
    ``snapshot`` (a bucket left out holds none: it starts at 0)."""
    wanted = set(buckets)
    if snapshot is None or not wanted:
        return {}
    known = known_for(store, snapshot, {p for p, _ in wanted})
    out = {}
    for partition, bucket in wanted:
        high = known[partition].get(bucket)
        if high is not None:
            out[(partition, bucket)] = high + 1
    return out


def after(
    store: FileStore, latest: Snapshot | None, entries: Iterable[ManifestEntry], *, learn: bool
) -> Known:
    """The record of the snapshot that commits ``entries`` on top of ``latest``; with
    ``learn``, the partitions the entries add files to that it does not know are read
    (a sequenced write read them already, so they come from the cache)."""
    adds: dict[BucketKey, int] = {}
    deletes: dict[BucketKey, int] = {}
    for e in entries:
        into = adds if e.kind == M.KIND_ADD else deletes
        key = (e.partition, e.bucket)
        high = e.file.max_sequence_number
        if high > into.get(key, -1):
            into[key] = high
    record = recorded(latest)
    written = {p for p, _ in adds}
    unknown = [p for p in written if p not in record] if learn else []
    if unknown and latest is not None:  # read by the write already: cached
        record.update(_partition_state(live_entries(store, latest, partitions=unknown), unknown))
    elif unknown:
        record.update({p: {} for p in unknown})
    for partition in {p for p, _ in adds} | {p for p, _ in deletes}:
        buckets = record.pop(partition, None)
        if buckets is not None and _apply(buckets, partition, adds, deletes):
            record[partition] = buckets  # re-inserted last: written most recently
    while len(record) > MAX_PARTITIONS:
        del record[next(iter(record))]
    return record


def _apply(
    buckets: dict[int, int],
    partition: bytes,
    adds: Mapping[BucketKey, int],
    deletes: Mapping[BucketKey, int],
) -> bool:
    """Update one partition's buckets by a commit's entries; False when the result is
    not known without reading the partition's files."""
    touched = {b for p, b in adds if p == partition} | {b for p, b in deletes if p == partition}
    for bucket in touched:
        current = buckets.get(bucket)
        added = adds.get((partition, bucket))
        deleted = deletes.get((partition, bucket))
        if deleted is not None and (
            current is None  # a DELETE the record cannot account for
            # the file holding the maximum may be gone: only an ADD reaching it again
            # (a compaction's output) keeps it known
            or (deleted >= current and (added is None or added < current))
        ):
            return False
        if added is not None and (current is None or added > current):
            buckets[bucket] = added
    return True


def to_properties(known: Known, snapshot_id: int) -> dict[str, str]:
    """The snapshot properties carrying ``known`` for snapshot ``snapshot_id``."""
    raw = {p.hex(): sorted(buckets.items()) for p, buckets in known.items()}
    text = json.dumps(raw, separators=(",", ":")).encode()
    return {
        SNAPSHOT_ID: str(snapshot_id),
        BY_PARTITION: base64.b64encode(zlib.compress(text, 6)).decode("ascii"),
    }
