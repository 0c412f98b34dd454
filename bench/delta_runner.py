"""The deltalake side of the cleanup and time-travel benchmarks, run by the deltalake
virtualenv's python.

Standalone on purpose: it runs in ``.venvs/deltalake`` (see ``bench.delta_env``) with
``bench/`` kept off ``sys.path`` (``-P``), and imports neither shoal nor the rest of
``bench``. Each operation prints one JSON object.

    python delta_runner.py build --data appends.arrow --plan plan.json --path DIR
    python delta_runner.py expire --table-path DIR --retain 10
    python delta_runner.py orphans --table-path DIR --older-than-hours 24
    python delta_runner.py commit-time --table-path DIR --version 99
    python delta_runner.py travel --table-path DIR version 99
    python delta_runner.py version
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import json
import os
import sys
import time
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake

PARTITION_KEY = "dt"
LOG = "_delta_log"

# Log files go only when cleanup asks (not at every automatic checkpoint), and then all
# those older than the checkpoint it keeps: the log keeps every version until the
# timed run, which is then told "nothing younger than now", as shoal's is.
CONFIGURATION = {
    "delta.logRetentionDuration": "interval 0 seconds",
    "delta.enableExpiredLogCleanup": "false",
}


def _read_appends(path: str) -> list[pa.Table]:
    with pa.OSFile(path, "rb") as source:
        reader = pa.ipc.open_file(source)
        return [
            pa.Table.from_batches([reader.get_batch(i)]) for i in range(reader.num_record_batches)
        ]


def build(data: str, plan: list[str | None], path: str) -> dict[str, Any]:
    """One Delta commit per batch: None appends it, a partition value overwrites that
    partition (``predicate``) with the batch's rows of it."""
    for i, (batch, overwrite) in enumerate(zip(_read_appends(data), plan, strict=True)):
        config = CONFIGURATION if i == 0 else None
        if overwrite is None:
            write_deltalake(
                path, batch, mode="append", partition_by=[PARTITION_KEY], configuration=config
            )
        else:
            rows = batch.filter(pc.equal(batch.column(PARTITION_KEY), overwrite))
            write_deltalake(
                path,
                rows,
                mode="overwrite",
                predicate=f"{PARTITION_KEY} = '{overwrite}'",
                partition_by=[PARTITION_KEY],
            )
    return {"table_path": path, "version": DeltaTable(path).version()}


def _commits_left(path: str) -> int:
    return sum(1 for n in os.listdir(os.path.join(path, LOG)) if n.endswith(".json"))


def expire(path: str, retain: int, plain: bool) -> dict[str, Any]:
    """Keep the newest ``retain`` versions readable, drop the rest: vacuum every removed
    file that none of them uses (``keep_versions``; ``plain``: every removed file, with
    no regard to those versions), then a checkpoint at the oldest version kept and the
    cleanup of the log files older than it."""
    gc.collect()
    start = time.perf_counter()
    table = DeltaTable(path)
    latest = table.version()
    oldest = latest - retain + 1
    keep = None if plain else list(range(oldest, latest + 1))
    table.vacuum(
        retention_hours=0, dry_run=False, enforce_retention_duration=False, keep_versions=keep
    )
    table.load_as_version(oldest)
    table.create_checkpoint()
    table.cleanup_metadata()
    done = time.perf_counter()
    rows = DeltaTable(path, version=oldest).to_pyarrow_table().num_rows  # untimed check
    try:
        DeltaTable(path, version=oldest - 1)
        older_gone = False
    except Exception:  # deltalake raises its own error types for a version that is gone
        older_gone = True
    return {
        "seconds": done - start,
        "versions_left": _commits_left(path),
        "rows_at_oldest_kept": rows,
        "older_gone": older_gone,
    }


def orphans(path: str, older_than_hours: int) -> dict[str, Any]:
    """A full vacuum: every file the log does not name, older than the threshold."""
    gc.collect()
    start = time.perf_counter()
    deleted = DeltaTable(path).vacuum(
        retention_hours=older_than_hours,
        dry_run=False,
        enforce_retention_duration=False,
        full=True,
    )
    done = time.perf_counter()
    rows = DeltaTable(path).to_pyarrow_table().num_rows  # untimed check: still readable
    return {"seconds": done - start, "deleted": len(deleted), "rows": rows}


def commit_time(path: str, version: int) -> dict[str, Any]:
    """The commit time of ``version`` in epoch milliseconds (from the log, untimed)."""
    for entry in DeltaTable(path).history():
        if entry["version"] == version:
            return {"timestamp_ms": int(entry["timestamp"])}
    raise SystemExit(f"version {version} is not in the log of {path}")


def travel(path: str, mode: str, value: str) -> dict[str, Any]:
    """Cold loading of an old version (by number, or the newest at or before a time in
    epoch milliseconds) by a fresh handle, then reading it to one Arrow table."""
    gc.collect()
    start = time.perf_counter()
    if mode == "version":
        table = DeltaTable(path, version=int(value))
    else:
        table = DeltaTable(path)
        table.load_as_version(datetime.fromtimestamp(int(value) / 1000, UTC))
    files = len(table.file_uris())
    planned = time.perf_counter()
    result = table.to_pyarrow_table()
    done = time.perf_counter()
    return {
        "plan_s": planned - start,
        "read_s": done - planned,
        "rows": result.num_rows,
        "files": files,
        "version": table.version(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="delta_runner.py")
    sub = parser.add_subparsers(dest="op", required=True)
    p = sub.add_parser("build")
    p.add_argument("--data", required=True)
    p.add_argument("--plan", required=True, help="JSON: per commit, null or a dt")
    p.add_argument("--path", required=True)
    p = sub.add_parser("expire")
    p.add_argument("--table-path", required=True)
    p.add_argument("--retain", type=int, required=True)
    p.add_argument("--plain", action="store_true", help="vacuum without keep_versions")
    p = sub.add_parser("orphans")
    p.add_argument("--table-path", required=True)
    p.add_argument("--older-than-hours", type=int, required=True)
    p = sub.add_parser("commit-time")
    p.add_argument("--table-path", required=True)
    p.add_argument("--version", type=int, required=True)
    p = sub.add_parser("travel")
    p.add_argument("--table-path", required=True)
    p.add_argument("mode", choices=["version", "timestamp"])
    p.add_argument("value", help="the version number, or epoch milliseconds")
    sub.add_parser("version")
    args = parser.parse_args(argv)

    out, sys.stdout = sys.stdout, sys.stderr  # stdout carries the one JSON answer
    result: dict[str, Any]
    if args.op == "build":
        with open(args.plan) as f:
            plan = json.load(f)
        result = build(args.data, plan, args.path)
    elif args.op == "expire":
        result = expire(args.table_path, args.retain, args.plain)
    elif args.op == "orphans":
        result = orphans(args.table_path, args.older_than_hours)
    elif args.op == "commit-time":
        result = commit_time(args.table_path, args.version)
    elif args.op == "travel":
        result = travel(args.table_path, args.mode, args.value)
    else:
        result = {name: importlib.metadata.version(name) for name in ("deltalake", "pyarrow")}
    out.write(json.dumps(result) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    # Leave without the interpreter's teardown: now and then deltalake's native threads
    # abort the process there ("terminate called without an active exception") after
    # the answer is out, which would fail a measurement that succeeded.
    os._exit(code)
