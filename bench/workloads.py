"""The timed work of shoal and of the raw-pyarrow floor, one function per operation.

Each runs inside its own worker process (see ``bench.worker``): an appender serves
one append at a time, so the parent can interleave contenders commit by commit; a
probe is a fresh process, so a "cold" measurement starts with no cache in the
process. Libraries are imported before the clock starts, as in the pypaimon runner.
"""

from __future__ import annotations

import gc
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from bench.data import PARTITION_KEY, read_batches

COMPRESSION = "zstd"


class ShoalAppender:
    """Creates the table; each ``append(i)`` is one ``table.append`` (one commit)."""

    def __init__(self, data: Path, warehouse: Path, table_name: str) -> None:
        import shoal

        self.tables = read_batches(data)
        self.table = shoal.Catalog(str(warehouse)).create_table(
            table_name, self.tables[0].schema, partition_keys=[PARTITION_KEY]
        )

    def append(self, index: int) -> None:
        self.table.append(self.tables[index])

    def result(self) -> dict[str, Any]:
        return {"table_path": self.table.path}


def shoal_probe(table_path: str) -> dict[str, Any]:
    """Cold planning of the latest snapshot by a fresh handle, then reading every split."""
    import shoal

    gc.collect()
    start = time.perf_counter()
    scan = shoal.open_table(table_path).scan()
    splits = scan.plan()
    planned = time.perf_counter()
    result = scan.to_arrow()
    done = time.perf_counter()
    return {
        "plan_s": planned - start,
        "read_s": done - planned,
        "rows": result.num_rows,
        "files": sum(len(s.file_paths) for s in splits),
        "splits": len(splits),
    }


def shoal_file_paths(table_path: str) -> list[str]:
    """The data files of the table's latest snapshot (what the raw read is given)."""
    import shoal

    return [p for split in shoal.open_table(table_path).scan().plan() for p in split.file_paths]


def _split_by_partition(table: pa.Table) -> list[tuple[str, pa.Table]]:
    """The least work that splits rows by partition: one sort, then zero-copy slices."""
    ordered = table.take(pc.array_sort_indices(table.column(PARTITION_KEY)))
    runs = pc.run_end_encode(ordered.column(PARTITION_KEY).combine_chunks())
    ends = runs.run_ends.to_pylist()
    values = runs.values.to_pylist()
    out = []
    begin = 0
    for value, end in zip(values, ends, strict=True):
        out.append((value, ordered.slice(begin, end - begin)))
        begin = end
    return out


class RawAppender:
    """The floor of an append: Parquet files of each partition's rows, no metadata."""

    def __init__(self, data: Path, directory: Path) -> None:
        self.tables = read_batches(data)
        self.directory = directory
        self.files = 0
        for table in self.tables:
            for value in table.column(PARTITION_KEY).unique().to_pylist():
                (directory / f"{PARTITION_KEY}={value}" / "bucket-0").mkdir(
                    parents=True, exist_ok=True
                )

    def append(self, index: int) -> None:
        for value, rows in _split_by_partition(self.tables[index]):
            name = f"data-{uuid.uuid4()}-0.parquet"
            path = self.directory / f"{PARTITION_KEY}={value}" / "bucket-0" / name
            pq.write_table(rows, str(path), compression=COMPRESSION)
            self.files += 1

    def result(self) -> dict[str, Any]:
        return {"files": self.files}


def raw_probe(file_paths: list[str]) -> dict[str, Any]:
    """The floor of a read: one pyarrow dataset over the table's data files."""
    gc.collect()
    start = time.perf_counter()
    result = ds.dataset(file_paths, format="parquet").to_table()
    done = time.perf_counter()
    return {"read_s": done - start, "rows": result.num_rows, "files": len(file_paths)}


def shoal_travel_probe(table_path: str, mode: str, value: str) -> dict[str, Any]:
    """Cold planning of an old snapshot, chosen by ``mode`` (snapshot, timestamp, tag),
    by a fresh handle, then reading every split."""
    import shoal

    by = {"snapshot": "snapshot_id", "timestamp": "timestamp_ms", "tag": "tag"}[mode]
    argument: int | str = value if mode == "tag" else int(value)
    gc.collect()
    start = time.perf_counter()
    scan = shoal.open_table(table_path).scan(**{by: argument})
    splits = scan.plan()
    planned = time.perf_counter()
    result = scan.to_arrow()
    done = time.perf_counter()
    return {
        "plan_s": planned - start,
        "read_s": done - planned,
        "rows": result.num_rows,
        "files": sum(len(s.file_paths) for s in splits),
    }
