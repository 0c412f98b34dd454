"""Deterministic benchmark data, shared with other processes through Arrow IPC files."""

from __future__ import annotations

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


def write_batches(path: Path, appends: int, rows: int, seed: int) -> None:
    """One IPC file holding one record batch per append."""
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, SCHEMA) as writer:
        for i in range(appends):
            writer.write_batch(make_batch(i, rows, seed))


def read_batches(path: Path) -> list[pa.Table]:
    """The appends of an IPC file, each as one table, read into memory (no memory map)."""
    with pa.OSFile(str(path), "rb") as source:
        reader = pa.ipc.open_file(source)
        return [
            pa.Table.from_batches([reader.get_batch(i)]) for i in range(reader.num_record_batches)
        ]
