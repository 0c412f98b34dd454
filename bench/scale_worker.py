"""One operation of the scale benchmark in its own process:
``python -m bench.scale_worker OP --table-path PATH``, printing one JSON object.

Everything the operation needs is imported and prepared before the clock starts; the
clock covers opening the table by path and the operation. The process counts the
metadata files it reads (``LocalFileIO.read_bytes``, by directory: snapshot files and
hints, manifest lists, manifests, schemas, tags) and the directory listings, and
reports its peak resident memory during the operation above what it held before
(``VmHWM`` after resetting it through ``/proc/self/clear_refs``; ``ru_maxrss`` where
that cannot be reset).

``build`` writes a synthetic table instead (``bench/scale_table.py``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from bench import scale_table
from shoal.io.file_io import LocalFileIO
from shoal.table import Table

TAG = "scale-bench"
COMMIT_ROWS = 1_000

OPS = (
    "plan-filtered",
    "plan-full",
    "commit",
    "expire",
    "create-tag",
    "delete-tag",
    "freshness",
)


def _kind(path: str) -> str:
    directory = path.rsplit("/", 2)[-2] if path.count("/") >= 2 else ""
    name = path.rsplit("/", 1)[-1]
    if directory == "manifest":
        return "manifest lists" if name.startswith("manifest-list-") else "manifests"
    if directory == "snapshot":
        return "snapshots" if name.startswith("snapshot-") else "hints"
    if directory in ("schema", "tag"):
        return f"{directory}s"
    return "other"


class _Counting:
    """Counts reads by kind of metadata file and directory listings, by wrapping the
    FileIO methods that do them."""

    def __init__(self) -> None:
        self.reads: Counter[str] = Counter()
        self.listings = 0
        read, listing = LocalFileIO.read_bytes, LocalFileIO.list_status

        def counted_read(io: LocalFileIO, path: str) -> bytes:
            self.reads[_kind(path)] += 1
            return read(io, path)

        def counted_listing(io: LocalFileIO, path: str, *, recursive: bool = False) -> Any:
            self.listings += 1
            return listing(io, path, recursive=recursive)

        LocalFileIO.read_bytes = counted_read  # type: ignore[method-assign]
        LocalFileIO.list_status = counted_listing  # type: ignore[method-assign]

    @property
    def metadata_files(self) -> int:
        return sum(n for kind, n in self.reads.items() if kind != "other")


class _Memory:
    """Peak resident memory of a stretch of the process, above its start."""

    def __init__(self) -> None:
        self.resettable = _reset_peak()
        self.baseline_kib = _status_kib("VmRSS") if self.resettable else _maxrss_kib()

    def peak_mib(self) -> float:
        peak = _status_kib("VmHWM") if self.resettable else _maxrss_kib()
        return max(peak - self.baseline_kib, 0) / 1024


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _maxrss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _commit_rows(partition: int) -> pa.Table:
    """Upserts of ``COMMIT_ROWS`` keys into the partition, with event times in its day."""
    start = scale_table.day_start_ms(partition) + scale_table.DAY_MS - 3_600_000
    ids = list(range(0, COMMIT_ROWS * 7919, 7919))
    return pa.table(
        {
            "dt": [scale_table.day(partition)] * COMMIT_ROWS,
            "id": ids,
            "event_time": pa.array([start + i for i in range(COMMIT_ROWS)], pa.timestamp("ms")),
            "name": [f"name-{i:06d}" for i in range(COMMIT_ROWS)],
            "value": [float(i) for i in range(COMMIT_ROWS)],
        },
        schema=scale_table.SCHEMA,
    )


def _operation(op: str, path: str, partitions: int) -> Callable[[], dict[str, Any]]:
    """The operation, as a call that opens the table and returns what it found."""
    if op.startswith("plan"):
        # the planner of large tables, with numba and its compiled loops (only plans load it)
        importlib.import_module("shoal.core.columnar_plan")
    if op == "plan-filtered":
        dt = scale_table.day(partitions // 2)

        def plan_filtered() -> dict[str, Any]:
            splits = Table.open(path).scan(filter=[("dt", "=", dt)]).plan()
            return {"splits": len(splits), "files": sum(len(s.files) for s in splits)}

        return plan_filtered
    if op == "plan-full":

        def plan_full() -> dict[str, Any]:
            splits = Table.open(path).scan().plan()
            return {"splits": len(splits), "files": sum(len(s.files) for s in splits)}

        return plan_full
    if op == "commit":
        rows = _commit_rows(partitions - 1)

        def commit() -> dict[str, Any]:
            return {"snapshot": Table.open(path).append(rows).id}

        return commit
    if op == "expire":
        older_than = datetime.now() + timedelta(seconds=1)
        expire = partitions * scale_table.COMMITS_PER_PARTITION // 10

        def expire_snapshots() -> dict[str, Any]:
            done = Table.open(path).expire_snapshots(older_than=older_than, max_deletes=expire)
            return {
                "expired_snapshots": done.expired_snapshots,
                "deleted_data_files": done.deleted_data_files,
                "deleted_manifest_files": done.deleted_manifest_files,
            }

        return expire_snapshots
    if op == "create-tag":

        def create_tag() -> dict[str, Any]:
            return {"snapshot": Table.open(path).create_tag(TAG).snapshot_id}

        return create_tag
    if op == "delete-tag":

        def delete_tag() -> dict[str, Any]:
            Table.open(path).delete_tag(TAG)
            return {}

        return delete_tag
    assert op == "freshness", op

    def freshness() -> dict[str, Any]:
        f = Table.open(path).freshness()
        return {
            "watermark_ms": f.watermark_ms,
            "uncompacted_file_count": f.uncompacted_file_count,
            "buckets_with_uncompacted_files": f.buckets_with_uncompacted_files,
        }

    return freshness


def measure(op: str, path: str, partitions: int) -> dict[str, Any]:
    """Run one operation on the table at ``path``: its time, peak memory, metadata reads."""
    run = _operation(op, path, partitions)
    counting = _Counting()
    memory = _Memory()
    started = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - started
    return {
        "op": op,
        "seconds": seconds,
        "peak_mib": memory.peak_mib(),
        "metadata_files_read": counting.metadata_files,
        "reads": dict(counting.reads),
        "listings": counting.listings,
        "result": result,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_worker")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("op")
    p.add_argument("name", choices=OPS)
    p.add_argument("--table-path", required=True)
    p.add_argument("--partitions", type=int, required=True)
    p = sub.add_parser("build")
    p.add_argument("--warehouse", type=Path, required=True)
    p.add_argument("--files", type=int, required=True)
    p.add_argument("--snapshots", type=int, required=True)
    p.add_argument("--expire", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    args = parser.parse_args(argv)
    out, sys.stdout = sys.stdout, sys.stderr  # stdout carries the one JSON object
    if args.command == "build":
        scale_table.self_check()
        shape = scale_table.Shape(args.files, args.snapshots)
        built = scale_table.build(args.warehouse, shape, args.expire, args.seed)
        answer = scale_table.describe(built)
    else:
        answer = measure(args.name, args.table_path, args.partitions)
    out.write(json.dumps(answer) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
