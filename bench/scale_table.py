"""The synthetic table of the scale benchmark: the metadata of a long-lived
primary-key table with thousands of snapshots, and no data files behind it.

The table: partitioned by ``dt`` (one day per partition), primary key ``(dt, id)``,
2 buckets, ``compaction.event-time.field`` = ``event_time``, ``write-only`` (a separate
job compacts). Its commits come one partition after another, as a daily stream's do:
each partition gets 10 snapshots, 9 APPENDs that add ``per_bucket`` level-0 files to
each bucket, then one COMPACT that merges the files of the first 5 appends of each
bucket into ``per_bucket`` files at the top level. So per partition and bucket
``5 * per_bucket`` files stay live (the compacted run and the 4 newest appends): the
table ends with ``snapshots * per_bucket`` live files, and since compactions delete
files, expiring the oldest snapshots has data files to delete.

Each snapshot is what shoal's committer (``FileStoreCommit._try_once``) publishes: a
delta manifest of the commit's entries, the previous base and delta manifests merged
into the new base list by shoal's own ``merge_manifests`` (small manifests merged,
Paimon 1.0's full compaction once the manifests that must change pass the threshold,
rolling at the target size), both manifest lists written by shoal's ``ManifestStore.write_list``,
and the freshness state in the snapshot properties (the last snapshot also the
compaction backlog, counted from its live files when the build ends). Only the manifest entries are
encoded here rather than by shoal's Avro encoder: each file's record is built once
as bytes from its fields (a DELETE reuses its ADD's), which makes a million files
affordable; :func:`self_check` proves the bytes equal shoal's encoding and decode
back to the same entries. Every file has its own statistics (random key and value
bounds inside its partition's day), so manifests compress like real ones.

Data files are not written, except the ones that expiring the oldest
``expire_snapshots`` snapshots deletes: those are created empty, so that the
deletions are real.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import operator
import os
import struct
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import shoal
from shoal import options as O
from shoal.core.manifest_merge import merge_manifests
from shoal.core.manifests import ManifestStore
from shoal.core.plan import live_entries
from shoal.core.snapshot_manager import EARLIEST, LATEST
from shoal.core.store import FileStore
from shoal.event_time import backlog
from shoal.event_time.watermark import EventTimeState
from shoal.format import avro, binary_row
from shoal.format import manifest as M
from shoal.format import types as T
from shoal.format.avro.container import BLOCK_BYTES
from shoal.format.data_file import FILE_SOURCE_APPEND, FILE_SOURCE_COMPACT, DataFileMeta
from shoal.format.manifest import ManifestEntry, ManifestFileMeta
from shoal.format.snapshot import BATCH_COMMIT_IDENTIFIER, Snapshot
from shoal.format.stats import SimpleStats
from shoal.write import bucket_sequences

TABLE = "bench.scale"
COMMITS_PER_PARTITION = 10  # 9 appends, then one compaction
APPENDS = COMMITS_PER_PARTITION - 1
COMPACTED_APPENDS = 5  # a compaction merges the files of the first 5 appends
BUCKETS = 2
FIRST_DAY = date(2023, 1, 1)
KEYS = 10_000_000  # ids of one partition
SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("event_time", pa.timestamp("ms")),
        ("name", pa.string()),
        ("value", pa.float64()),
    ]
)
OPTIONS = {
    "bucket": str(BUCKETS),
    "compaction.event-time.field": "event_time",
    "write-only": "true",
}
COMMIT_USER = "scale-bench"
DAY_MS = 86_400_000
_WINDOW_MS = DAY_MS // APPENDS  # the event times of one append
_EPOCH = datetime(1970, 1, 1)


# --- Avro and BinaryRow bytes of one file's record -------------------------------------------
def _zz(n: int) -> bytes:
    """An Avro long: zig-zag varint."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = [_zz(i) for i in range(64)]


def _long(n: int) -> bytes:
    """An Avro long, quickly for the non-negative values below 2**27 this table holds."""
    z = n << 1
    if z < 0x80:
        return _SMALL[n] if n >= 0 else _zz(n)
    if z < 0x4000:
        return bytes((z & 0x7F | 0x80, z >> 7))
    if z < 0x200000:
        return bytes((z & 0x7F | 0x80, z >> 7 & 0x7F | 0x80, z >> 14))
    if z < 0x10000000:
        return bytes((z & 0x7F | 0x80, z >> 7 & 0x7F | 0x80, z >> 14 & 0x7F | 0x80, z >> 21))
    return _zz(n)


def _blob(data: bytes) -> bytes:
    """Avro bytes or string: the length, then the bytes."""
    return _long(len(data)) + data


_LONG_LE = struct.Struct("<q")
_VALUE_TAIL = struct.Struct("<qqqd")  # id, event time, the name's slot, value
_DT_SLOT = (48 << 32) | 10  # the dt string (10 bytes) at offset 48 of the row
_NAME_SLOT = (64 << 32) | 11  # the name (11 bytes) at offset 64
# arity, null bitset (row kind 0, no nulls), then the slots
_KEY_HEAD = struct.pack(">i", 1) + bytes(8)
_VALUE_HEAD = struct.pack(">i", 5) + bytes(8) + _LONG_LE.pack(_DT_SLOT)
_KEY_BLOB = _long(len(_KEY_HEAD) + 8)
_VALUE_BLOB = _long(len(_VALUE_HEAD) + _VALUE_TAIL.size + 32)
_NULLS_1 = b"\x02" + _long(1) + b"\x02\x00\x00"  # [0]: a union branch, then the count 0
_NULLS_5 = b"\x02" + _long(5) + b"\x02\x00" * 5 + b"\x00"
_KEY_TYPES = [T.AtomicType(T.BIGINT, nullable=False)]
_VALUE_TYPES = [
    T.AtomicType(T.VARCHAR, nullable=False),
    T.AtomicType(T.BIGINT, nullable=False),
    T.AtomicType(T.TIMESTAMP, precision=3),
    T.AtomicType(T.VARCHAR),
    T.AtomicType(T.DOUBLE),
]


def key_row(key: int) -> bytes:
    """The BinaryRow of the trimmed primary key ``(id,)``."""
    return _KEY_HEAD + _LONG_LE.pack(key)


def value_row(dt: str, key: int, event_ms: int, name: str, value: float) -> bytes:
    """The BinaryRow of the statistics of ``(dt, id, event_time, name, value)``; ``dt``
    is 10 characters and ``name`` 11, so both live in the variable part."""
    tail = _VALUE_TAIL.pack(key, event_ms, _NAME_SLOT, value)
    return _VALUE_HEAD + tail + dt.encode() + bytes(6) + name.encode() + bytes(5)


# The fields of one file that differ from file to file, in this order.
Fields = tuple[str, int, int, int, int, int, int, str, str, float, float, int, int]


def run_tail(level: int, created_ms: int) -> bytes:
    """The ``_FILE`` record's bytes after the sequence numbers, the same for a whole run."""
    source = FILE_SOURCE_APPEND if level == 0 else FILE_SOURCE_COMPACT
    return b"".join(
        (
            b"\x00",  # schema id 0
            _long(level),
            b"\x00",  # no extra files
            b"\x02" + _zz(created_ms),
            b"\x02\x00",  # delete row count 0
            b"\x00",  # no embedded index
            b"\x02" + _long(source),
            b"\x00\x00\x00\x00\x00",  # stats of every column; no external path, ...
        )
    )


def record(fields: Fields, dt: str, tail: bytes) -> bytes:
    """The Avro bytes of a ``_FILE`` record (``tail``: :func:`run_tail`)."""
    name, size, rows, k_low, k_high, e_low, e_high, n_low, n_high, v_low, v_high, s_low, s_high = (
        fields
    )
    min_key = _KEY_BLOB + _KEY_HEAD + _LONG_LE.pack(k_low)
    max_key = _KEY_BLOB + _KEY_HEAD + _LONG_LE.pack(k_high)
    pad_dt = dt.encode() + bytes(6)
    return b"".join(
        (
            _blob(name.encode()),
            _long(size),
            _long(rows),
            min_key,
            max_key,
            min_key,  # the key statistics: the same bounds
            max_key,
            _NULLS_1,
            _VALUE_BLOB,
            _VALUE_HEAD,
            _VALUE_TAIL.pack(k_low, e_low, _NAME_SLOT, v_low),
            pad_dt,
            n_low.encode() + bytes(5),
            _VALUE_BLOB,
            _VALUE_HEAD,
            _VALUE_TAIL.pack(k_high, e_high, _NAME_SLOT, v_high),
            pad_dt,
            n_high.encode() + bytes(5),
            _NULLS_5,
            _long(s_low),
            _long(s_high),
            tail,
        )
    )


def file_meta(fields: Fields, dt: str, level: int, created_ms: int) -> DataFileMeta:
    """The same file as shoal's value (for :func:`self_check`)."""
    name, size, rows, k_low, k_high, e_low, e_high, n_low, n_high, v_low, v_high, s_low, s_high = (
        fields
    )
    keys = SimpleStats.of([k_low], [k_high], [0], _KEY_TYPES)
    return DataFileMeta(
        file_name=name,
        file_size=size,
        row_count=rows,
        min_key=keys.min_values,
        max_key=keys.max_values,
        key_stats=keys,
        value_stats=SimpleStats.of(
            [dt, k_low, _EPOCH + timedelta(milliseconds=e_low), n_low, v_low],
            [dt, k_high, _EPOCH + timedelta(milliseconds=e_high), n_high, v_high],
            [0] * 5,
            _VALUE_TYPES,
        ),
        min_sequence_number=s_low,
        max_sequence_number=s_high,
        schema_id=0,
        level=level,
        creation_time=_EPOCH + timedelta(milliseconds=created_ms),
        delete_row_count=0,
        file_source=FILE_SOURCE_APPEND if level == 0 else FILE_SOURCE_COMPACT,
    )


def _entry_prefix(kind: int, partition: bytes, bucket: int) -> bytes:
    """The Avro bytes of a manifest entry before its ``_FILE`` record."""
    return b"\x04" + _long(kind) + _blob(partition) + _long(bucket) + _long(BUCKETS)


class EncodedFile:
    """A data file as the merge rule and the encoder see it: its identity and the Avro
    bytes of its ADD entry (a DELETE differs in the kind only)."""

    __slots__ = ("add", "bucket", "file_name", "ident", "level", "partition", "row_count")
    extra_files: tuple[str, ...] = ()
    schema_id = 0
    embedded_index = None
    external_path = None

    def __init__(self, name: str, rows: int, level: int, partition: bytes, bucket: int) -> None:
        self.file_name = name
        self.row_count = rows
        self.level = level
        self.partition = partition
        self.bucket = bucket
        self.add = b""
        # ManifestEntry.identifier() of either entry
        self.ident = (partition, bucket, level, name, (), None, None)

    def entry_bytes(self, kind: int) -> bytes:
        if kind == M.KIND_ADD:
            return self.add
        prefix = _entry_prefix(kind, self.partition, self.bucket)
        return prefix + self.add[len(_entry_prefix(M.KIND_ADD, self.partition, self.bucket)) :]


def encode_run(
    runs: list[Fields], dt: str, partition: bytes, bucket: int, *, level: int, created_ms: int
) -> list[EncodedFile]:
    """The files of one sorted run of one bucket, encoded."""
    tail = run_tail(level, created_ms)
    prefix = _entry_prefix(M.KIND_ADD, partition, bucket)
    out = []
    for fields in runs:
        file = EncodedFile(fields[0], fields[2], level, partition, bucket)
        file.add = prefix + record(fields, dt, tail)
        out.append(file)
    return out


class Entry(ManifestEntry):
    """A manifest entry of an :class:`EncodedFile`, with its identity precomputed (the
    merge rule asks for it once per entry per merge)."""

    __slots__ = ()

    def identifier(self) -> Any:
        return self.file.ident  # type: ignore[attr-defined]


def add(file: EncodedFile) -> Entry:
    return Entry(M.KIND_ADD, file.partition, file.bucket, BUCKETS, file)  # type: ignore[arg-type]


def delete(file: EncodedFile) -> Entry:
    return Entry(M.KIND_DELETE, file.partition, file.bucket, BUCKETS, file)  # type: ignore[arg-type]


# --- manifests written from those bytes, merged by shoal's rule ---------------------------------
class SyntheticManifests(ManifestStore):
    """shoal's ManifestStore (its rolling at the target size, its manifest lists), whose
    manifests are encoded from each file's record bytes and whose reads come from the
    entries it wrote: it never reads a manifest back."""

    def __init__(self, store: FileStore) -> None:
        super().__init__(
            store.file_io,
            store.paths,
            store.schema.partition_types(),
            store.partitions.decode,
            compression=store.options.get(O.MANIFEST_COMPRESSION),
            target_size=store.options.get(O.MANIFEST_TARGET_FILE_SIZE),
        )
        empty = M.encode_manifest([], self.compression)
        self._header = empty[:-16]  # magic and metadata; the sync marker follows
        self.held: dict[str, list[ManifestEntry]] = {}

    def read_manifests(self, metas: Sequence[ManifestFileMeta]) -> list[list[ManifestEntry]]:
        return [self.held[m.file_name] for m in metas]

    def _write_one(self, entries: Sequence[ManifestEntry], data: bytes) -> ManifestFileMeta:
        name = self.paths.new_manifest_name()
        self.file_io.write_bytes(self.paths.manifest_path(name), data)
        self.held[name] = list(entries)
        return self._describe(name, len(data), entries)

    def _encode(self, entries: Sequence[ManifestEntry]) -> bytes:
        return self.encode(entries)

    def encode(self, entries: Sequence[ManifestEntry]) -> bytes:
        """An Avro container file of ``entries``, cut into blocks where shoal's writer
        cuts them (once a block's records reach ``BLOCK_BYTES``)."""
        sync = os.urandom(16)
        out = bytearray(self._header)
        out += sync
        records = [
            e.file.add if e.kind == M.KIND_ADD else e.file.entry_bytes(e.kind)  # type: ignore[attr-defined]
            for e in entries
        ]
        ends = list(itertools.accumulate(map(len, records)))
        start = 0
        while start < len(records):
            base = ends[start - 1] if start else 0
            stop = min(bisect.bisect_left(ends, base + BLOCK_BYTES, lo=start) + 1, len(records))
            _block(out, b"".join(records[start:stop]), stop - start, sync)
            start = stop
        return bytes(out)

    def _describe(self, name: str, size: int, entries: Sequence[ManifestEntry]) -> ManifestFileMeta:
        """As ``ManifestStore._describe``, with the per-entry passes in C."""
        files = list(map(_FILE, entries))
        buckets = list(map(_BUCKET, entries))
        levels = list(map(_LEVEL, files))
        added = list(map(_KIND, entries)).count(M.KIND_ADD)
        return ManifestFileMeta(
            file_name=name,
            file_size=size,
            num_added_files=added,
            num_deleted_files=len(entries) - added,
            partition_stats=self.partition_stats(map(_PARTITION, entries)),
            schema_id=max(map(_SCHEMA_ID, files)),
            min_bucket=min(buckets),
            max_bucket=max(buckets),
            min_level=min(levels),
            max_level=max(levels),
        )

    def forget_all_but(self, names: set[str]) -> None:
        """Drop the entries of manifests no later merge can read."""
        for name in [n for n in self.held if n not in names]:
            del self.held[name]


_FILE = operator.attrgetter("file")
_BUCKET = operator.attrgetter("bucket")
_LEVEL = operator.attrgetter("level")
_KIND = operator.attrgetter("kind")
_PARTITION = operator.attrgetter("partition")
_SCHEMA_ID = operator.attrgetter("schema_id")


def _block(out: bytearray, raw: bytes, count: int, sync: bytes) -> None:
    data = avro.compression.compress("zstandard", raw)
    out += _long(count) if count < 256 else _zz(count)
    out += _zz(len(data))
    out += data
    out += sync


# --- the table's history ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Shape:
    """The size of one synthetic table."""

    files: int  # live data files at the end
    snapshots: int

    @property
    def partitions(self) -> int:
        return self.snapshots // COMMITS_PER_PARTITION

    @property
    def per_bucket(self) -> int:
        """Files one append adds to each bucket (and one compaction writes to it)."""
        return self.files // self.snapshots

    def check(self) -> None:
        if self.snapshots <= 0 or self.snapshots % COMMITS_PER_PARTITION:
            raise ValueError(f"snapshots must be a positive multiple of {COMMITS_PER_PARTITION}")
        if self.files < self.snapshots or self.files % self.snapshots:
            raise ValueError("files must be a positive multiple of snapshots")


def day(partition: int) -> str:
    """The ``dt`` value of partition number ``partition``."""
    return (FIRST_DAY + timedelta(days=partition)).isoformat()


def day_start_ms(partition: int) -> int:
    start = datetime.combine(FIRST_DAY + timedelta(days=partition), datetime.min.time(), UTC)
    return int(start.timestamp() * 1000)


class _History:
    """The files of each commit, drawn from one seeded random generator."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.counter = 0
        self.writer = ""

    def new_writer(self) -> None:
        """Each partition's files are written by another job: another file name prefix."""
        self.writer = str(uuid.UUID(bytes=self.rng.bytes(16), version=4))
        self.counter = 0

    def files(
        self, n: int, *, rows: int, events: tuple[int, int], sequence: int, exact: bool
    ) -> list[Fields]:
        """``n`` files of one sorted run with sequence numbers from ``sequence``; with
        ``exact`` the first file's event times span ``events`` exactly."""
        rng = self.rng
        low_event, high_event = events
        slack = max((high_event - low_event) // 8, 1)
        counts = rows + rng.integers(0, max(rows // 4, 1), n)
        ends = sequence + np.cumsum(counts)
        key_low = rng.integers(0, KEYS // 2, n)
        e_low = (low_event + rng.integers(0, slack, n)).tolist()
        e_high = (high_event - rng.integers(0, slack, n)).tolist()
        if exact:
            e_low[0], e_high[0] = low_event, high_event
        names = [f"data-{self.writer}-{self.counter + k}.parquet" for k in range(n)]
        self.counter += n
        return list(
            zip(
                names,
                (counts * 37 + rng.integers(0, 4096, n)).tolist(),
                counts.tolist(),
                key_low.tolist(),
                (key_low + rng.integers(KEYS // 4, KEYS // 2, n)).tolist(),
                e_low,
                e_high,
                [f"name-{x:06d}" for x in rng.integers(0, 500_000, n).tolist()],
                [f"name-{x:06d}" for x in rng.integers(500_000, 1_000_000, n).tolist()],
                (-rng.random(n) * 1000).tolist(),
                (rng.random(n) * 1000).tolist(),
                (ends - counts).tolist(),
                (ends - 1).tolist(),
                strict=True,
            )
        )


@dataclass(frozen=True, slots=True)
class Built:
    """What :func:`build` wrote."""

    table_path: str
    seconds: float
    live_files: int
    added_files: int
    deleted_files: int
    empty_files_created: int  # the data files expiring the oldest snapshots deletes
    manifest_files: int
    manifest_bytes: int
    snapshot_files: int


ROWS_PER_FILE = 50_000  # about, of a level-0 file


def build(warehouse: Path, shape: Shape, expire_snapshots: int, seed: int) -> Built:
    """Create the synthetic table in ``warehouse`` (see the module docstring) and the
    empty data files that expiring its oldest ``expire_snapshots`` snapshots deletes."""
    shape.check()
    started = time.perf_counter()
    table = shoal.Catalog(str(warehouse)).create_table(
        TABLE, SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=OPTIONS
    )
    store: FileStore = table._store
    manifests = SyntheticManifests(store)
    history = _History(seed)
    top = store.max_level
    options = store.options
    per_bucket = shape.per_bucket
    doomed_below = expire_snapshots // COMMITS_PER_PARTITION
    to_create: list[str] = []
    base: list[ManifestFileMeta] = []
    delta: list[ManifestFileMeta] = []
    total_records = 0
    added = deleted = 0
    uncompacted_min: int | None = None
    max_event: int | None = None
    snapshot_id = 0
    for partition in range(shape.partitions):
        history.new_writer()
        dt = day(partition)
        key = store.partitions.to_bytes((dt,))
        day_ms = day_start_ms(partition)
        sequences = [0] * BUCKETS
        runs: list[list[list[EncodedFile]]] = [[] for _ in range(BUCKETS)]
        for commit in range(COMMITS_PER_PARTITION):
            snapshot_id += 1
            commit_ms = day_ms + (commit + 1) * _WINDOW_MS + 60_000
            entries: list[ManifestEntry] = []
            if commit < APPENDS:
                kind = "APPEND"
                window = (day_ms + commit * _WINDOW_MS, day_ms + (commit + 1) * _WINDOW_MS - 1)
                for b in range(BUCKETS):
                    fields = history.files(
                        per_bucket,
                        rows=ROWS_PER_FILE,
                        events=window,
                        sequence=sequences[b],
                        exact=b == 0,
                    )
                    sequences[b] = fields[-1][12] + 1
                    files = encode_run(fields, dt, key, b, level=0, created_ms=commit_ms)
                    runs[b].append(files)
                    entries += [add(f) for f in files]
                added += BUCKETS * per_bucket
                # level-0 files: the oldest of them holds the uncompacted minimum
                if uncompacted_min is None:
                    uncompacted_min = window[0]
                max_event = window[1]
            else:
                kind = "COMPACT"
                window = (day_ms, day_ms + COMPACTED_APPENDS * _WINDOW_MS - 1)
                for b in range(BUCKETS):
                    merged = [f for run in runs[b][:COMPACTED_APPENDS] for f in run]
                    # the outputs' sequence numbers stay inside the merged files' range
                    rows = sum(f.row_count for f in merged) // per_bucket * 4 // 5
                    fields = history.files(
                        per_bucket, rows=rows, events=window, sequence=0, exact=False
                    )
                    entries += [delete(f) for f in merged]
                    outputs = encode_run(fields, dt, key, b, level=top, created_ms=commit_ms)
                    entries += [add(f) for f in outputs]
                    deleted += len(merged)
                    added += len(fields)
                    if partition < doomed_below:
                        bucket_dir = store.paths.bucket_dir(store.partitions.path(key), b)
                        to_create.extend(f"{bucket_dir}/{f.file_name}" for f in merged)
                if partition == 0:  # the files of the first appends left level 0
                    uncompacted_min = day_ms + COMPACTED_APPENDS * _WINDOW_MS
            delta_records = sum(
                e.file.row_count if e.kind == M.KIND_ADD else -e.file.row_count for e in entries
            )
            # As FileStoreCommit._try_once: the delta, then the previous manifests merged.
            delta_metas = manifests.write_manifests(entries)
            merged_metas = merge_manifests(
                manifests,
                [*base, *delta],
                target_size=options.get(O.MANIFEST_TARGET_FILE_SIZE),
                min_count=options.get(O.MANIFEST_MERGE_MIN_COUNT),
                full_compaction_size=options.get(O.MANIFEST_FULL_COMPACTION_SIZE),
            ).metas
            base_name, base_size = manifests.write_list(merged_metas)
            delta_name, delta_size = manifests.write_list(delta_metas)
            base, delta = merged_metas, delta_metas
            manifests.forget_all_but({m.file_name for m in [*base, *delta]})
            total_records += delta_records
            snapshot = Snapshot(
                id=snapshot_id,
                schema_id=0,
                commit_kind=kind,
                time_millis=commit_ms,
                total_record_count=total_records,
                delta_record_count=delta_records,
                properties=EventTimeState(uncompacted_min, max_event).to_properties(),
                base_manifest_list=base_name,
                delta_manifest_list=delta_name,
                commit_user=COMMIT_USER,
                commit_identifier=BATCH_COMMIT_IDENTIFIER,
                base_manifest_list_size=base_size,
                delta_manifest_list_size=delta_size,
            )
            store.file_io.write_bytes(
                store.paths.snapshot_path(snapshot_id), snapshot.to_json().encode()
            )
    if snapshot_id:
        # The committer records the compaction backlog in every snapshot; here only the
        # last one gets it (the others carry none, as another writer's would), counted
        # from its live files, so that freshness and the next commit read it; so does
        # each bucket's highest sequence number, which the next write reads.
        snapshot = dataclasses.replace(
            snapshot, properties={**(snapshot.properties or {}), **_recorded(store, snapshot)}
        )
        store.file_io.write_bytes(
            store.paths.snapshot_path(snapshot_id), snapshot.to_json().encode()
        )
    store.snapshots.write_hint(LATEST, snapshot_id)
    store.snapshots.write_hint(EARLIEST, 1)
    _touch(to_create)
    sizes = [e.stat().st_size for e in os.scandir(store.paths.manifest_dir)]
    return Built(
        table_path=table.path,
        seconds=time.perf_counter() - started,
        live_files=added - deleted,
        added_files=added,
        deleted_files=deleted,
        empty_files_created=len(to_create),
        manifest_files=len(sizes),
        manifest_bytes=sum(sizes),
        snapshot_files=snapshot_id,
    )


def _recorded(store: FileStore, snapshot: Snapshot) -> dict[str, str]:
    """The backlog and bucket sequence properties of ``snapshot``, from a scan of its
    live files (every partition was written by a sequenced write, so the committer's
    record knows the last ``MAX_PARTITIONS`` of them)."""
    live = live_entries(store, snapshot)
    found = backlog.scan(live, backlog.bounds_of(store), store.max_level)
    known: bucket_sequences.Known = {}
    for e in live:
        buckets = known.setdefault(e.partition, {})
        buckets[e.bucket] = max(buckets.get(e.bucket, -1), e.file.max_sequence_number)
    known = dict(list(known.items())[-bucket_sequences.MAX_PARTITIONS :])
    return {
        **backlog.to_properties(found, snapshot.id, store),
        **bucket_sequences.to_properties(known, snapshot.id),
    }


def _touch(paths: list[str]) -> None:
    made: set[str] = set()
    for path in paths:
        directory = path.rsplit("/", 1)[0]
        if directory not in made:
            os.makedirs(directory, exist_ok=True)
            made.add(directory)
        with open(path, "wb"):
            pass


def self_check(seed: int = 7) -> None:
    """Raise AssertionError unless the record bytes here are shoal's encoding of the same
    entries, and decode back to them."""
    history = _History(seed)
    history.new_writer()
    dt = day(3)
    key = binary_row.serialize([dt], [T.AtomicType(T.VARCHAR, nullable=False)])
    window = (day_start_ms(3), day_start_ms(4) - 1)
    created = day_start_ms(4) + 5
    ours: list[ManifestEntry] = []
    theirs: list[ManifestEntry] = []
    for level, rows, exact in ((0, 1000, True), (5, 9000, False)):
        fields = history.files(150, rows=rows, events=window, sequence=7, exact=exact)
        for b in range(BUCKETS):
            for file in encode_run(fields, dt, key, b, level=level, created_ms=created):
                ours += [add(file), delete(file)]
            for f in fields:
                meta = file_meta(f, dt, level, created)
                theirs += [ManifestEntry(kind, key, b, BUCKETS, meta) for kind in (0, 1)]
                assert key_row(f[3]) == binary_row.serialize([f[3]], _KEY_TYPES)
    from shoal.format import avro

    shoal_bytes = avro.container.write_records(
        M.MANIFEST_ENTRY_AVRO, (e.to_avro() for e in theirs), "null"
    )
    raw_theirs = b"".join(_blocks(shoal_bytes, len(M.encode_manifest([], "none"))))
    raw_ours = b"".join(e.file.entry_bytes(e.kind) for e in ours)  # type: ignore[attr-defined]
    assert raw_theirs == raw_ours, "synthetic records differ from shoal's encoding"
    encoded = _encode_plain(ours)
    assert M.decode_manifest(encoded) == theirs, "synthetic records decode to other entries"
    header = len(M.encode_manifest([], "zstd"))
    reference = M.encode_manifest(theirs, "zstd")
    assert _block_counts(encoded, header) == _block_counts(reference, header), (
        "synthetic manifests cut their blocks elsewhere than shoal's"
    )


def _block_counts(data: bytes, start: int) -> list[int]:
    """The record count of each block of an Avro container file whose blocks begin at
    ``start``."""
    counts = []
    pos = start
    while pos < len(data):
        count, pos = _read_long(data, pos)
        size, pos = _read_long(data, pos)
        counts.append(count)
        pos += size + 16
    return counts


def _blocks(data: bytes, start: int) -> list[bytes]:
    """The (uncompressed) blocks of an Avro container file written with the null codec."""
    out = []
    pos = start
    while pos < len(data):
        _, pos = _read_long(data, pos)
        size, pos = _read_long(data, pos)
        out.append(data[pos : pos + size])
        pos += size + 16
    return out


def _read_long(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _encode_plain(entries: list[ManifestEntry]) -> bytes:
    """A zstd container of ``entries`` through :class:`SyntheticManifests`'s encoder."""
    store = SyntheticManifests.__new__(SyntheticManifests)
    store._header = M.encode_manifest([], "zstd")[:-16]
    return store.encode(entries)


def describe(built: Built) -> dict[str, Any]:
    return {
        "table_path": built.table_path,
        "seconds": built.seconds,
        "live_files": built.live_files,
        "added_files": built.added_files,
        "deleted_files": built.deleted_files,
        "empty_files_created": built.empty_files_created,
        "manifest_files": built.manifest_files,
        "manifest_bytes": built.manifest_bytes,
        "snapshot_files": built.snapshot_files,
    }
