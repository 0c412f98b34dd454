"""Benchmark operations in their own process: ``python -m bench.worker OP ...``.

Probes (``shoal-probe``, ``raw-probe``, ``shoal-travel``; for primary keys ``shoal-pk-read``,
``shoal-compact``, ``raw-read``, ``raw-rewrite``) do one measurement and print one
JSON object. Committers (``shoal-append``, ``raw-append``, ``shoal-upsert``) serve a
line protocol, so the parent can interleave contenders one commit at a time:

    worker -> "ready"
    parent -> "<index>"   worker -> "<seconds>"   (time of commit number <index>)
    parent -> "stop"      worker -> one JSON object

The pypaimon side speaks the same protocol (``bench/pypaimon_runner.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench import pk_workloads, workloads
from bench.protocol import serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.worker")
    sub = parser.add_subparsers(dest="op", required=True)
    p = sub.add_parser("shoal-append")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--warehouse", type=Path, required=True)
    p.add_argument("--table", required=True)
    p = sub.add_parser("shoal-probe")
    p.add_argument("--table-path", required=True)
    p = sub.add_parser("shoal-travel")
    p.add_argument("--table-path", required=True)
    p.add_argument("mode", choices=["snapshot", "timestamp", "tag"])
    p.add_argument("value", help="the snapshot id, the epoch milliseconds or the tag name")
    p = sub.add_parser("raw-append")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--dir", type=Path, required=True)
    p = sub.add_parser("raw-probe")
    p.add_argument("--files", type=Path, required=True, help="JSON list of data file paths")
    p = sub.add_parser("shoal-upsert")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--warehouse", type=Path, required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--bucket", type=int, required=True)
    p.add_argument("--merge-engine", default="deduplicate")
    for op in ("shoal-pk-read", "shoal-compact"):
        p = sub.add_parser(op)
        p.add_argument("--table-path", required=True)
    p = sub.add_parser("raw-read")
    p.add_argument("--files", type=Path, required=True, help="JSON list of data file paths")
    p = sub.add_parser("raw-rewrite")
    p.add_argument("--files", type=Path, required=True, help="JSON list of data file paths")
    p.add_argument("--out", type=Path, required=True, help="directory for the rewritten files")
    args = parser.parse_args(argv)

    # the protocol owns stdout; anything a library prints goes to stderr
    out, sys.stdout = sys.stdout, sys.stderr
    if args.op == "shoal-append":
        serve(workloads.ShoalAppender(args.data, args.warehouse, args.table), out)
    elif args.op == "raw-append":
        serve(workloads.RawAppender(args.data, args.dir), out)
    elif args.op == "shoal-upsert":
        upserter = pk_workloads.ShoalUpserter(
            args.data, args.warehouse, args.table, args.bucket, args.merge_engine
        )
        serve(upserter, out)
    else:
        out.write(json.dumps(_probe(args)) + "\n")
    out.flush()
    return 0


def _probe(args: argparse.Namespace) -> dict[str, Any]:
    if args.op == "shoal-probe":
        return workloads.shoal_probe(args.table_path)
    if args.op == "shoal-travel":
        return workloads.shoal_travel_probe(args.table_path, args.mode, args.value)
    if args.op == "shoal-pk-read":
        return pk_workloads.shoal_realtime_read(args.table_path)
    if args.op == "shoal-compact":
        return pk_workloads.shoal_compact(args.table_path)
    files: list[str] = json.loads(args.files.read_text())
    if args.op == "raw-probe":
        return workloads.raw_probe(files)
    if args.op == "raw-read":
        return pk_workloads.raw_read(files)
    assert args.op == "raw-rewrite", args.op
    return pk_workloads.raw_rewrite(files, args.out)


if __name__ == "__main__":
    sys.exit(main())
