"""The cases the standalone cluster and Spark Connect tests share: tables on S3 built
twice alike (one for Spark, one for shoal's Python API in this process), and the
single-process answers that Spark's must equal."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

import pyarrow as pa

import shoal
from shoal.table import Table
from tests.conftest import EVENTS_SCHEMA
from tests.s3.s3_support import S3Env

DAY1, DAY2, DAY3 = "2026-11-01", "2026-11-02", "2026-11-03"
KEYED = {"bucket": "2", "target-file-size": "64 kb"}


def event_rows(ids: list[int], dt: str = DAY1, tag: str = "") -> list[dict[str, Any]]:
    return [{"dt": dt, "id": i, "name": f"n{i}{tag}", "value": i * 0.5} for i in ids]


WRITES = [
    event_rows([1, 2, 3, 4]) + event_rows([5, 6], DAY2),
    event_rows([3, 4, 7], tag="-again") + event_rows([5], DAY2, tag="-again"),
]


def sorted_rows(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in the order the scenario runner sorts them."""
    return sorted(values, key=lambda r: json.dumps(r, sort_keys=True))


def table_rows(table: Table) -> list[dict[str, Any]]:
    return sorted_rows(Table.open(table.path).to_arrow().to_pylist())


def twins(s3: S3Env, name: str, **kwargs: Any) -> tuple[Table, Table]:
    """Two empty tables alike: ``<name>_spark`` and ``<name>_local``."""
    catalog = shoal.Catalog(s3.uri("wh"))
    return (
        catalog.create_table(f"db.{name}_spark", EVENTS_SCHEMA, **kwargs),
        catalog.create_table(f"db.{name}_local", EVENTS_SCHEMA, **kwargs),
    )


def write_both(tables: tuple[Table, ...], writes: list[list[dict[str, Any]]]) -> None:
    """Each batch of ``writes`` in a commit of its own on every table."""
    for table in tables:
        for batch in writes:
            data = pa.Table.from_pylist(batch, schema=EVENTS_SCHEMA)
            if table.primary_keys:
                table.upsert(data)
            else:
                table.append(data)


def history(s3: S3Env, name: str) -> tuple[Table, Table]:
    """Twin partitioned primary-key tables with five commits of small files."""
    pair = twins(s3, name, partition_keys=["dt"], primary_keys=["dt", "id"], options=KEYED)
    write_both(
        pair,
        [
            event_rows([1, 2, 3]) + event_rows([4], DAY2),
            event_rows([2, 5], tag="-b") + event_rows([6], DAY3),
            event_rows([3, 7], tag="-c") + event_rows([4, 8], DAY2, tag="-c"),
            event_rows([9], DAY3, tag="-d"),
            event_rows([1], tag="-e"),
        ],
    )
    return pair


def relative(table: Table, paths: tuple[str, ...] | list[str]) -> list[str]:
    prefix = table.path.rstrip("/") + "/"
    out = []
    for path in paths:
        name = path if "://" in path else "s3://" + path.lstrip("/")
        assert name.startswith(prefix), (name, prefix)
        out.append(name[len(prefix) :])
    return sorted(out)


def strays(s3: S3Env, tables: tuple[Table, ...]) -> list[str]:
    """The same stray files in each table (files of no snapshot); their paths."""
    names = ["dt=2026-11-01/bucket-0/data-stray-1.parquet", "manifest/manifest-stray"]
    for table in tables:
        key = table.path.split(f"s3://{s3.bucket}/", 1)[1]
        for name in names:
            s3.put(f"{key}/{name}", b"x" * 10)
    return sorted(names)


def orphan_cutoff() -> datetime:
    """A time after the stray files were written (object times have whole seconds)."""
    time.sleep(1.5)
    return datetime.now()


def snapshot_ids(table: Table) -> list[int]:
    return [s.id for s in Table.open(table.path).snapshots()]


def compact_answer(table: Table, strategy: str = "full") -> dict[str, Any]:
    result = table.compact(strategy)
    snapshot = result.snapshot
    return {
        "snapshot": snapshot.id if snapshot is not None else None,
        "kind": snapshot.commit_kind if snapshot is not None else None,
        "compacted_files": result.compacted_files,
        "written_files": result.written_files,
    }
