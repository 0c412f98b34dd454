"""Benchmark operations in their own process: ``python -m bench.worker OP ...``.

Probes (``shoal-probe``, ``raw-probe``) do one measurement and print one JSON
object. Appenders (``shoal-append``, ``raw-append``) serve a line protocol, so the
parent can interleave contenders one commit at a time:

    worker -> "ready"
    parent -> "<index>"   worker -> "<seconds>"   (time of append number <index>)
    parent -> "stop"      worker -> one JSON object

The pypaimon side speaks the same protocol (``bench/pypaimon_runner.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Protocol, TextIO

from bench import workloads


class Appender(Protocol):
    def append(self, index: int) -> None: ...

    def result(self) -> dict[str, Any]: ...


def serve(appender: Appender, out: TextIO) -> None:
    """Answer the parent's append requests until it says stop."""
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        command = line.strip()
        if command == "stop":
            break
        start = time.perf_counter()
        appender.append(int(command))
        out.write(f"{time.perf_counter() - start!r}\n")
        out.flush()
    out.write(json.dumps(appender.result()) + "\n")
    out.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.worker")
    sub = parser.add_subparsers(dest="op", required=True)
    p = sub.add_parser("shoal-append")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--warehouse", type=Path, required=True)
    p.add_argument("--table", required=True)
    p = sub.add_parser("shoal-probe")
    p.add_argument("--table-path", required=True)
    p = sub.add_parser("raw-append")
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--dir", type=Path, required=True)
    p = sub.add_parser("raw-probe")
    p.add_argument("--files", type=Path, required=True, help="JSON list of data file paths")
    args = parser.parse_args(argv)

    # the protocol owns stdout; anything a library prints goes to stderr
    out, sys.stdout = sys.stdout, sys.stderr
    if args.op == "shoal-append":
        serve(workloads.ShoalAppender(args.data, args.warehouse, args.table), out)
    elif args.op == "raw-append":
        serve(workloads.RawAppender(args.data, args.dir), out)
    else:
        result = (
            workloads.shoal_probe(args.table_path)
            if args.op == "shoal-probe"
            else workloads.raw_probe(json.loads(args.files.read_text()))
        )
        out.write(json.dumps(result) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
