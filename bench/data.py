"""Deterministic benchmark data, shared with other processes through Arrow IPC files.

Two workloads: small appends into a partitioned append table (``make_batch``), and
upserts into a primary-key table (``make_upsert``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

PARTITIONS = ("2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04")
PARTITION_KEY = "dt"
SCHEMA = pa.schema(
    [
        pa.field(PARTITION_KEY, pa.string()),
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("ts", pa.timestamp("us")),
    ]
)
_BASE_TS_US = 1_793_491_200_000_000  # 2026-11-01T00:00:00 in microseconds


def make_batch(index: int, rows: int, seed: int) -> pa.RecordBatch:
    """The rows of append ``index``: each partition value ``rows / 4`` times, shuffled."""
    rng = np.random.default_rng([seed, index])
    per_partition = rows // len(PARTITIONS)
    which = rng.permutation(np.repeat(np.arange(len(PARTITIONS)), per_partition))
    dt = pa.DictionaryArray.from_arrays(pa.array(which, pa.int32()), pa.array(PARTITIONS)).cast(
        pa.string()
    )
    ids = np.arange(index * rows, index * rows + len(which), dtype=np.int64)
    names = pa.array([f"name-{k:06d}" for k in rng.integers(0, 100_000, len(which))])
    values = rng.normal(100.0, 15.0, len(which))
    ts = _BASE_TS_US + which * 86_400_000_000 + rng.integers(0, 86_400_000_000, len(which))
    return pa.RecordBatch.from_arrays(
        [dt, pa.array(ids), names, pa.array(values), pa.array(ts, pa.timestamp("us"))],
        schema=SCHEMA,
    )


PK_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("ts", pa.timestamp("us")),
    ]
)
PRIMARY_KEY = "id"
KEY_RANGE_PER_ROW = 0.6  # keys come from [0, 0.6 x all rows): 600,000 for 1M rows


def key_range(batches: int, rows: int) -> int:
    """How many distinct keys the upserts draw from (later batches overwrite earlier ones)."""
    return max(1, int(batches * rows * KEY_RANGE_PER_ROW))


def make_upsert(index: int, rows: int, keys: int, seed: int) -> pa.RecordBatch:
    """The rows of upsert ``index``: ``rows`` random keys from ``[0, keys)`` (repeats and
    all), each with a fresh name, value and timestamp."""
    rng = np.random.default_rng([seed, 1, index])
    ids = rng.integers(0, keys, rows, dtype=np.int64)
    names = pa.array([f"name-{k:06d}" for k in rng.integers(0, 100_000, rows)])
    values = rng.normal(100.0, 15.0, rows)
    ts = _BASE_TS_US + index * 3_600_000_000 + rng.integers(0, 3_600_000_000, rows)
    return pa.RecordBatch.from_arrays(
        [pa.array(ids), names, pa.array(values), pa.array(ts, pa.timestamp("us"))],
        schema=PK_SCHEMA,
    )


def _write_ipc(path: Path, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)


def write_batches(path: Path, appends: int, rows: int, seed: int) -> None:
    """One IPC file holding one record batch per append."""
    _write_ipc(path, SCHEMA, (make_batch(i, rows, seed) for i in range(appends)))


@dataclass(frozen=True, slots=True)
class UpsertCounts:
    distinct_keys: int  # the rows a merged read returns
    batch_keys: int  # the sum over upserts of their distinct keys: rows in the data files


def write_upserts(path: Path, batches: int, rows: int, seed: int) -> UpsertCounts:
    """One IPC file holding one record batch per upsert.

    An upsert that repeats a key keeps its last row only, so the data files hold
    ``batch_keys`` rows and the merged table ``distinct_keys``."""
    keys = key_range(batches, rows)
    upserts = [make_upsert(i, rows, keys, seed) for i in range(batches)]
    _write_ipc(path, PK_SCHEMA, upserts)
    per_batch = [np.unique(b.column(0).to_numpy()) for b in upserts]
    return UpsertCounts(
        distinct_keys=len(np.unique(np.concatenate(per_batch))),
        batch_keys=sum(len(k) for k in per_batch),
    )


def read_batches(path: Path) -> list[pa.Table]:
    """The appends of an IPC file, each as one table, read into memory (no memory map)."""
    with pa.OSFile(str(path), "rb") as source:
        reader = pa.ipc.open_file(source)
        return [
            pa.Table.from_batches([reader.get_batch(i)]) for i in range(reader.num_record_batches)
        ]
