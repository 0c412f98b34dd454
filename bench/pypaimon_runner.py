"""The pypaimon side of the benchmark, run by the pypaimon virtualenv's python.

Standalone on purpose: pypaimon 2.1.0 pins pyarrow<20, so this script runs in
``.venvs/pypaimon`` and imports neither shoal nor the rest of ``bench``. It speaks
the same protocol as ``bench.worker``: ``probe`` and ``version`` print one JSON
object; ``append`` and ``upsert`` serve one commit per line of stdin (see
``bench.worker``).

    python pypaimon_runner.py append --data appends.arrow --warehouse DIR --table db.t
    python pypaimon_runner.py upsert --data upserts.arrow --warehouse DIR --table db.pk \
        --primary-key id --bucket 4
    python pypaimon_runner.py probe --table-path DIR/db.db/t
    python pypaimon_runner.py travel --table-path DIR/db.db/t tag my-tag
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset  # imported before any timing, as in every worker
import pyarrow.parquet


def _load_protocol() -> Any:
    """bench/protocol.py, loaded by path: this script runs in pypaimon's virtualenv with
    bench/ kept off sys.path (``-P``), so its sibling modules shadow nothing."""
    spec = importlib.util.spec_from_file_location(
        "shoal_bench_protocol", Path(__file__).with_name("protocol.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


serve = _load_protocol().serve

PARTITION_KEY = "dt"


def _read_appends(path: str) -> list[pa.Table]:
    with pa.OSFile(path, "rb") as source:
        reader = pa.ipc.open_file(source)
        return [
            pa.Table.from_batches([reader.get_batch(i)]) for i in range(reader.num_record_batches)
        ]


def _peak_rss_mb() -> float:
    """Peak RSS since exec in MiB: VmHWM, as ``bench.pk_workloads.peak_rss_mb``."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    # no /proc: ru_maxrss (bytes on macOS, KiB elsewhere), which may include the parent's
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


class Appender:
    """Creates the table; each ``append(i)`` is one batch write: write, prepare, commit.

    By default an append table partitioned by ``dt``; with ``primary_key`` a primary-key
    table with ``bucket`` fixed buckets and ``write-only`` (no partitions), written the
    same way (pypaimon's batch write merges by key on read).
    """

    def __init__(
        self,
        data: str,
        warehouse: str,
        table_name: str,
        primary_key: str | None = None,
        bucket: int | None = None,
    ) -> None:
        from pypaimon import CatalogFactory, Schema

        self.tables = _read_appends(data)
        catalog = CatalogFactory.create({"warehouse": warehouse})
        catalog.create_database(table_name.split(".", maxsplit=1)[0], True)
        if primary_key is None:
            schema = Schema.from_pyarrow_schema(
                self.tables[0].schema, partition_keys=[PARTITION_KEY]
            )
        else:
            schema = Schema.from_pyarrow_schema(
                self.tables[0].schema,
                primary_keys=[primary_key],
                options={"bucket": str(bucket), "write-only": "true"},
            )
        catalog.create_table(table_name, schema, False)
        self.table = catalog.get_table(table_name)

    def append(self, index: int) -> None:
        builder = self.table.new_batch_write_builder()
        write = builder.new_write()
        commit = builder.new_commit()
        write.write_arrow(self.tables[index])
        commit.commit(write.prepare_commit())
        write.close()
        commit.close()

    def result(self) -> dict[str, Any]:
        return {"table_path": self.table.table_path}


def probe(table_path: str) -> dict[str, Any]:
    """Cold planning of the latest snapshot by a fresh handle, then reading every split."""
    from pypaimon.table.file_store_table import FileStoreTable

    gc.collect()
    rss_before = _peak_rss_mb()
    start = time.perf_counter()
    table = FileStoreTable.from_path(table_path)
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    planned = time.perf_counter()
    result = builder.new_read().to_arrow(splits)
    done = time.perf_counter()
    files = sum(len(s.files) for s in splits)
    return {
        "plan_s": planned - start,
        "read_s": done - planned,
        "rows": result.num_rows,
        "files": files,
        "splits": len(splits),
        "rss_before_mb": rss_before,
        "rss_peak_mb": _peak_rss_mb(),
    }


_TRAVEL_OPTIONS = {
    "snapshot": "scan.snapshot-id",
    "timestamp": "scan.timestamp-millis",
    "tag": "scan.tag-name",
}


def travel(table_path: str, mode: str, value: str) -> dict[str, Any]:
    """Cold planning of an old snapshot chosen by ``mode`` (a table option), then
    reading every split."""
    from pypaimon.table.file_store_table import FileStoreTable

    gc.collect()
    start = time.perf_counter()
    table = FileStoreTable.from_path(table_path).copy({_TRAVEL_OPTIONS[mode]: value})
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    planned = time.perf_counter()
    result = builder.new_read().to_arrow(splits)
    done = time.perf_counter()
    return {
        "plan_s": planned - start,
        "read_s": done - planned,
        "rows": result.num_rows,
        "files": sum(len(s.files) for s in splits),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pypaimon_runner")
    sub = parser.add_subparsers(dest="op", required=True)
    p_append = sub.add_parser("append")
    p_append.add_argument("--data", required=True)
    p_append.add_argument("--warehouse", required=True)
    p_append.add_argument("--table", required=True)
    p_upsert = sub.add_parser("upsert")
    p_upsert.add_argument("--data", required=True)
    p_upsert.add_argument("--warehouse", required=True)
    p_upsert.add_argument("--table", required=True)
    p_upsert.add_argument("--primary-key", required=True)
    p_upsert.add_argument("--bucket", type=int, required=True)
    p_probe = sub.add_parser("probe")
    p_probe.add_argument("--table-path", required=True)
    p_travel = sub.add_parser("travel")
    p_travel.add_argument("--table-path", required=True)
    p_travel.add_argument("mode", choices=sorted(_TRAVEL_OPTIONS))
    p_travel.add_argument("value")
    p_sub = sub.add_parser("version")
    del p_sub
    args = parser.parse_args(argv)

    # the protocol owns stdout; anything a library prints goes to stderr
    out, sys.stdout = sys.stdout, sys.stderr
    if args.op == "append":
        serve(Appender(args.data, args.warehouse, args.table), out)
        return 0
    if args.op == "upsert":
        appender = Appender(
            args.data, args.warehouse, args.table, primary_key=args.primary_key, bucket=args.bucket
        )
        serve(appender, out)
        return 0
    if args.op == "probe":
        result = probe(args.table_path)
    elif args.op == "travel":
        result = travel(args.table_path, args.mode, args.value)
    else:
        from importlib.metadata import version

        result = {"pypaimon": version("pypaimon"), "pyarrow": pa.__version__}
    out.write(json.dumps(result) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
