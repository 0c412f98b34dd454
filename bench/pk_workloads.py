"""The timed work of the primary-key workload, one function per operation.

Each runs inside its own worker process (see ``bench.worker``). Every probe reports
the process's peak resident memory twice: just before the clock starts (libraries
imported, nothing read yet) and when the operation is done, so the growth the
operation caused can be told from the interpreter's own footprint.

The peak is the kernel's high-water mark of this process image (``VmHWM``), not
``ru_maxrss``: on Linux ``ru_maxrss`` carries the parent's peak across fork and
exec, so every probe would report at least the driver's own footprint.
"""

from __future__ import annotations

import gc
import resource
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.data import PRIMARY_KEY, read_batches

COMPRESSION = "zstd"


def peak_rss_mb() -> float:
    """This process's peak resident set size since exec, in MiB."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    # no /proc: ru_maxrss (bytes on macOS, KiB elsewhere), which may include the parent's
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


class ShoalUpserter:
    """Creates the primary-key table; each ``append(i)`` is one ``table.upsert`` (one
    commit). ``write-only`` keeps compaction out of the upserts."""

    def __init__(
        self,
        data: Path,
        warehouse: Path,
        table_name: str,
        buckets: int,
        merge_engine: str = "deduplicate",
    ) -> None:
        import shoal

        self.tables = read_batches(data)
        self.table = shoal.Catalog(str(warehouse)).create_table(
            table_name,
            self.tables[0].schema,
            primary_keys=[PRIMARY_KEY],
            options={"bucket": str(buckets), "write-only": "true", "merge-engine": merge_engine},
        )

    def append(self, index: int) -> None:
        self.table.upsert(self.tables[index])

    def result(self) -> dict[str, Any]:
        return {"table_path": self.table.path}


def shoal_realtime_read(table_path: str) -> dict[str, Any]:
    """A fresh handle plans the latest snapshot and reads the merged (real-time) view."""
    import shoal

    gc.collect()
    rss_before = peak_rss_mb()
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
        "rss_before_mb": rss_before,
        "rss_peak_mb": peak_rss_mb(),
    }


def shoal_compact(table_path: str) -> dict[str, Any]:
    """A fresh handle runs a full compaction; then (untimed) the read-optimized view is
    counted, which after a full compaction must hold every live key."""
    import shoal

    gc.collect()
    rss_before = peak_rss_mb()
    start = time.perf_counter()
    compacted = shoal.open_table(table_path).compact("full")
    done = time.perf_counter()
    rss_peak = peak_rss_mb()
    rows = shoal.open_table(table_path).to_arrow(read_optimized=True).num_rows
    return {
        "compact_s": done - start,
        "compacted_files": compacted.compacted_files,
        "written_files": compacted.written_files,
        "rows": rows,
        "rss_before_mb": rss_before,
        "rss_peak_mb": rss_peak,
    }


def shoal_data_files(table_path: str) -> list[str]:
    """The data files of the table's latest snapshot (what the raw floor is given)."""
    import shoal

    return [p for split in shoal.open_table(table_path).scan().plan() for p in split.file_paths]


def raw_read(file_paths: list[str]) -> dict[str, Any]:
    """The floor of a read: every file read whole with pyarrow, nothing merged."""
    gc.collect()
    rss_before = peak_rss_mb()
    start = time.perf_counter()
    tables: list[pa.Table] = [pq.read_table(p, partitioning=None) for p in file_paths]
    done = time.perf_counter()
    return {
        "read_s": done - start,
        "rows": sum(t.num_rows for t in tables),
        "files": len(file_paths),
        "rss_before_mb": rss_before,
        "rss_peak_mb": peak_rss_mb(),
    }


def raw_rewrite(file_paths: list[str], out_dir: Path) -> dict[str, Any]:
    """The floor of a compaction: read each file and write it back (zstd), nothing merged."""
    out_dir.mkdir(parents=True, exist_ok=True)
    gc.collect()
    rss_before = peak_rss_mb()
    rows = 0
    start = time.perf_counter()
    for i, path in enumerate(file_paths):
        table = pq.read_table(path, partitioning=None)
        pq.write_table(table, str(out_dir / f"{i:05d}.parquet"), compression=COMPRESSION)
        rows += table.num_rows
    done = time.perf_counter()
    return {
        "compact_s": done - start,
        "compacted_files": len(file_paths),
        "written_files": len(file_paths),
        "rows": rows,
        "rss_before_mb": rss_before,
        "rss_peak_mb": peak_rss_mb(),
    }
