"""The timed work of the cleanup workloads on shoal's side and the floor's, one function
per operation, each run in a fresh process: ``python -m bench.cleanup_workloads OP ...``
prints one JSON object.

    shoal-build    write the commits of a plan (appends and partition overwrites)
    shoal-expire   open the table and expire every snapshot but the newest ``--retain``
    floor-expire   read and decode the given metadata files, then unlink the given files
    shoal-orphans  open the table and remove its orphan files (default age threshold)
    floor-orphans  walk the table, stat every file, unlink the given strays

Libraries are imported before the clock starts, as in every other worker. The timed
work never includes copying the table: the driver gives each measurement a fresh copy.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import fastavro
import pyarrow.compute as pc

from bench.data import PARTITION_KEY, read_batches


def shoal_build(data: Path, plan: list[str | None], warehouse: Path, table_name: str) -> str:
    """Commit ``plan[i]`` for each batch ``i`` of ``data``: None appends the batch, a
    partition value overwrites that partition with the batch's rows of it."""
    import shoal

    tables = read_batches(data)
    table = shoal.Catalog(str(warehouse)).create_table(
        table_name, tables[0].schema, partition_keys=[PARTITION_KEY]
    )
    for batch, overwrite in zip(tables, plan, strict=True):
        if overwrite is None:
            table.append(batch)
        else:
            rows = batch.filter(pc.equal(batch.column(PARTITION_KEY), overwrite))
            table.overwrite(rows, partition={PARTITION_KEY: overwrite})
    return table.path


def shoal_expire(table_path: str, retain: int) -> dict[str, Any]:
    """Expire all but the newest ``retain`` snapshots; then (untimed) count what is left
    and read the oldest snapshot kept, as a check."""
    import shoal

    gc.collect()
    start = time.perf_counter()
    result = shoal.open_table(table_path).expire_snapshots(
        retain_min=retain, retain_max=retain, older_than=datetime.now(), max_deletes=1_000_000
    )
    done = time.perf_counter()
    table = shoal.open_table(table_path)
    kept = [s.id for s in table.snapshots()]
    return {
        "seconds": done - start,
        "expired_snapshots": result.expired_snapshots,
        "versions_left": len(kept),
        "rows_at_oldest_kept": table.to_arrow(snapshot_id=min(kept)).num_rows,
    }


def floor_expire(root: Path, read: list[str], delete: list[str]) -> dict[str, Any]:
    """The least work of an expiration that is told everything: read and decode each
    metadata file (snapshot JSON, Avro manifest lists and manifests, decoded to plain
    records by fastavro), then ``os.unlink`` each file to delete. Paths are relative to
    ``root``."""
    to_read = [str(root / p) for p in read]
    to_delete = [str(root / p) for p in delete]
    gc.collect()
    start = time.perf_counter()
    records = 0
    for path in to_read:
        with open(path, "rb") as f:
            raw = f.read()
        if path.rsplit("/", 1)[-1].startswith("snapshot-"):
            json.loads(raw)
        else:
            records += sum(1 for _ in fastavro.reader(io.BytesIO(raw)))
    read_done = time.perf_counter()
    for path in to_delete:
        os.unlink(path)
    done = time.perf_counter()
    return {
        "seconds": done - start,
        "read_s": read_done - start,
        "unlink_s": done - read_done,
        "files_read": len(to_read),
        "records": records,
    }


def shoal_orphans(table_path: str) -> dict[str, Any]:
    """Remove the orphan files older than the default threshold (now minus one day)."""
    import shoal

    gc.collect()
    start = time.perf_counter()
    result = shoal.open_table(table_path).remove_orphan_files()
    done = time.perf_counter()
    rows = shoal.open_table(table_path).to_arrow().num_rows  # untimed check: still readable
    return {"seconds": done - start, "deleted": result.deleted_count, "rows": rows}


def floor_orphans(root: Path, strays: list[str]) -> dict[str, Any]:
    """The least work of an orphan cleanup that knows nothing of the table's metadata but
    is told the strays' names: ``os.walk`` the table, ``os.stat`` every file, and unlink
    each stray older than a day."""
    doomed = {str(root / p) for p in strays}
    cutoff = (datetime.now() - timedelta(days=1)).timestamp()
    gc.collect()
    start = time.perf_counter()
    seen = deleted = 0
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            stat = os.stat(path)
            seen += 1
            if path in doomed and stat.st_mtime < cutoff:
                os.unlink(path)
                deleted += 1
    done = time.perf_counter()
    return {"seconds": done - start, "deleted": deleted, "files_seen": seen}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cleanup_workloads")
    sub = parser.add_subparsers(dest="op", required=True)
    p = sub.add_parser("shoal-build")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--plan", type=Path, required=True, help="JSON: per commit, null or a dt")
    p.add_argument("--warehouse", type=Path, required=True)
    p.add_argument("--table", required=True)
    p = sub.add_parser("shoal-expire")
    p.add_argument("--table-path", required=True)
    p.add_argument("--retain", type=int, required=True)
    p = sub.add_parser("floor-expire")
    p.add_argument("--root", type=Path, required=True)
    p.add_argument("--files", type=Path, required=True, help='JSON {"read": [], "delete": []}')
    p = sub.add_parser("shoal-orphans")
    p.add_argument("--table-path", required=True)
    p = sub.add_parser("floor-orphans")
    p.add_argument("--root", type=Path, required=True)
    p.add_argument("--strays", type=Path, required=True, help="JSON list of relative paths")
    args = parser.parse_args(argv)

    out, sys.stdout = sys.stdout, sys.stderr  # stdout carries the one JSON answer
    result: dict[str, Any]
    if args.op == "shoal-build":
        plan = json.loads(args.plan.read_text())
        result = {"table_path": shoal_build(args.data, plan, args.warehouse, args.table)}
    elif args.op == "shoal-expire":
        result = shoal_expire(args.table_path, args.retain)
    elif args.op == "floor-expire":
        files = json.loads(args.files.read_text())
        result = floor_expire(args.root, files["read"], files["delete"])
    elif args.op == "shoal-orphans":
        result = shoal_orphans(args.table_path)
    else:
        assert args.op == "floor-orphans", args.op
        result = floor_orphans(args.root, json.loads(args.strays.read_text()))
    out.write(json.dumps(result) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
