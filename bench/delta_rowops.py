"""The deltalake side of the ecosystem benchmark (row-level operations), run by the
deltalake virtualenv's python.

Standalone, as ``delta_runner.py``: it runs in ``.venvs/deltalake`` with ``bench/``
kept off ``sys.path`` (``-P``) and imports neither shoal nor the rest of ``bench``.
Each operation prints one JSON object.

    python delta_rowops.py build --data rows.arrow --files 10 --path DIR
    python delta_rowops.py delete --table-path DIR --predicate "k < 10"
    python delta_rowops.py merge --table-path DIR --source source.arrow --key id
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake


def _read(path: str) -> pa.Table:
    with pa.OSFile(path, "rb") as source:
        return pa.ipc.open_file(source).read_all()


def build(data: str, files: int, path: str) -> dict[str, Any]:
    """The rows in ``files`` appends, one data file each (the shoal table's layout)."""
    rows = _read(data)
    step = -(-rows.num_rows // files)
    for start in range(0, rows.num_rows, step):
        write_deltalake(path, rows.slice(start, step), mode="append")
    table = DeltaTable(path)
    return {"table_path": path, "files": len(table.file_uris()), "version": table.version()}


def _rows(path: str) -> int:
    return DeltaTable(path).to_pyarrow_dataset().count_rows()


def delete(path: str, predicate: str) -> dict[str, Any]:
    """``DeltaTable(path).delete(predicate)`` timed from opening the table to its commit."""
    gc.collect()
    start = time.perf_counter()
    metrics = DeltaTable(path).delete(predicate)
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "deleted": int(metrics.get("num_deleted_rows", -1)),
        "rows": _rows(path),  # untimed check
    }


def merge(path: str, source: str, key: str) -> dict[str, Any]:
    """Upsert ``source`` by ``key``: matched rows updated, the others inserted."""
    rows = _read(source)
    gc.collect()
    start = time.perf_counter()
    metrics = (
        DeltaTable(path)
        .merge(rows, predicate=f"t.{key} = s.{key}", source_alias="s", target_alias="t")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "updated": int(metrics.get("num_target_rows_updated", -1)),
        "inserted": int(metrics.get("num_target_rows_inserted", -1)),
        "rows": _rows(path),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="delta_rowops.py")
    sub = parser.add_subparsers(dest="op", required=True)
    p = sub.add_parser("build")
    p.add_argument("--data", required=True)
    p.add_argument("--files", type=int, required=True)
    p.add_argument("--path", required=True)
    p = sub.add_parser("delete")
    p.add_argument("--table-path", required=True)
    p.add_argument("--predicate", required=True)
    p = sub.add_parser("merge")
    p.add_argument("--table-path", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--key", required=True)
    args = parser.parse_args(argv)

    out, sys.stdout = sys.stdout, sys.stderr  # stdout carries the one JSON answer
    if args.op == "build":
        result = build(args.data, args.files, args.path)
    elif args.op == "delete":
        result = delete(args.table_path, args.predicate)
    else:
        result = merge(args.table_path, args.source, args.key)
    out.write(json.dumps(result) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stderr.flush()
    os._exit(code)  # as delta_runner.py: no teardown of deltalake's native threads
