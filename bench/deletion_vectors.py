"""The deletion-vector read workload: a compacted primary-key table whose top-level
files carry deletion vectors, read three ways in one run.

The table: ``rows`` keys upserted into ``buckets`` buckets and fully compacted, so
every bucket holds top-level files; then a tenth of the keys, spread over every file,
are marked deleted by deletion vectors (one index file per bucket, as Paimon writes
them) and the table's ``deletion-vectors.enabled`` is switched on. Its real-time read
is then Paimon's batch scan of such a table: every file read unmerged, its deleted
rows masked.

Contenders, each timed in this process, interleaved ``repeats`` times; a ratio is the
median of the ratios of the runs side by side, which a busy machine disturbs less
than a ratio of medians:

- ``raw``: pyarrow reading the same data files (the value columns), the floor;
- ``dv``: shoal's real-time read of the table;
- ``merge``: shoal's merge-on-read of the same rows without vectors: the same
  compacted files with the deletes as a level-0 file, merged by key.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from bench.report import Ratio

COLUMNS = ["id", "name", "value"]
TABLE_DV, TABLE_MERGE = "bench.dv", "bench.merge"


@dataclass(frozen=True)
class DvConfig:
    rows: int
    buckets: int
    repeats: int
    workdir: Path
    seed: int = 20261101

    @staticmethod
    def sized(quick: bool, seed: int, workdir: Path) -> DvConfig:
        return DvConfig(
            rows=200_000 if quick else 400_000,
            buckets=4,
            repeats=9 if quick else 21,
            workdir=workdir,
            seed=seed,
        )


def _rows(ids: np.ndarray, rng: np.random.Generator) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"n{i}" for i in ids]),
            "value": pa.array(rng.random(len(ids))),
        }
    )


def build(config: DvConfig) -> tuple[str, str, list[str], int]:
    """The deletion-vector table and the merge-on-read table; the data files of the
    first (what the raw read reads) and the rows both read."""
    import shoal

    rng = np.random.default_rng(config.seed)
    catalog = shoal.Catalog(str(config.workdir / "dv-warehouse"))
    ids = np.arange(config.rows, dtype=np.int64)
    base = _rows(ids, rng)
    deleted = np.sort(rng.choice(ids, config.rows // 10, replace=False))
    tables = []
    for name in (TABLE_DV, TABLE_MERGE):
        table = catalog.create_table(
            name,
            base.schema,
            primary_keys=["id"],
            options={"bucket": str(config.buckets), "write-only": "true"},
        )
        table.upsert(base)
        table.compact(strategy="full")
        tables.append(table)
    dv, merge = tables
    merge.delete(pa.table({"id": pa.array(deleted, pa.int64())}))
    files = _mark_deleted(dv, set(deleted.tolist()))
    store = dv._store
    schema = store.schema
    options = {**schema.options, "deletion-vectors.enabled": "true"}
    assert store.schemas.try_create(replace(schema, id=schema.id + 1, options=options))
    return dv.path, merge.path, files, config.rows - len(deleted)


def _mark_deleted(table: Any, keys: set[int]) -> list[str]:
    """Publish a snapshot whose deletion vectors delete ``keys`` from the live files;
    returns the files' paths."""
    import pyarrow.parquet as pq

    from shoal.core.paths import data_file_path
    from shoal.core.plan import live_entries
    from shoal.format import deletion_vector as DV
    from shoal.format.index_manifest import (
        DELETION_VECTORS_INDEX,
        DeletionVectorMeta,
        IndexFileMeta,
        IndexManifestEntry,
    )
    from shoal.format.manifest import KIND_ADD
    from shoal.format.snapshot import CommitKind
    from shoal.write.commit import CommitRequest, FileStoreCommit

    store = table._store
    latest = store.snapshots.latest()
    wanted = pa.array(sorted(keys), pa.int64())
    by_bucket: dict[tuple[bytes, int], dict[str, np.ndarray]] = {}
    paths = []
    for entry in live_entries(store, latest):
        bucket_dir = store.paths.bucket_dir(store.partitions.path(entry.partition), entry.bucket)
        path = data_file_path(bucket_dir, entry.file)
        paths.append(path)
        key = pq.read_table(path, columns=["_KEY_id"]).column(0)
        positions = np.flatnonzero(np.asarray(pa.compute.is_in(key, wanted)))
        by_bucket.setdefault((entry.partition, entry.bucket), {})[entry.file.file_name] = positions
    entries = []
    for (partition, bucket), vectors in by_bucket.items():
        data, ranges = DV.encode_file(vectors)
        name = f"index-{uuid.uuid4()}-0"
        store.file_io.write_bytes(store.paths.index_path(name), data)
        meta = IndexFileMeta(
            DELETION_VECTORS_INDEX,
            name,
            len(data),
            len(ranges),
            tuple(DeletionVectorMeta(*r) for r in ranges),
        )
        entries.append(IndexManifestEntry(KIND_ADD, partition, bucket, meta))
    request = CommitRequest([], kind=CommitKind.COMPACT, allow_empty=True, index_changes=entries)
    FileStoreCommit(store).commit(request)
    return sorted(paths)


def _timed(fn: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    rows = fn()
    return (time.perf_counter() - start) * 1000, rows


def run(config: DvConfig) -> dict[str, Any]:
    """Build the tables, then time the three reads; medians in milliseconds."""
    import shoal

    dv_path, merge_path, files, expected = build(config)

    def raw() -> int:
        return ds.dataset(files, format="parquet").to_table(columns=COLUMNS).num_rows

    def dv() -> int:
        return shoal.open_table(dv_path).to_arrow(columns=COLUMNS).num_rows

    def merge() -> int:
        return shoal.open_table(merge_path).to_arrow(columns=COLUMNS).num_rows

    contenders = {"raw": raw, "dv": dv, "merge": merge}
    for fn in contenders.values():
        fn()  # warm the page cache and the thread pools
    times: dict[str, list[float]] = {name: [] for name in contenders}
    rows: dict[str, int] = {}
    for _ in range(config.repeats):
        for name, fn in contenders.items():
            ms, rows[name] = _timed(fn)
            times[name].append(ms)
    assert rows["dv"] == rows["merge"] == expected, rows

    def paired(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))

    return {
        "rows": config.rows,
        "rows_read": expected,
        "buckets": config.buckets,
        "files": len(files),
        "repeats": config.repeats,
        "median_ms": {n: statistics.median(t) for n, t in times.items()},
        "dv_over_raw": paired("dv", "raw"),
        "dv_over_merge": paired("dv", "merge"),
        "runs_ms": times,
    }


def ratios(done: dict[str, Any]) -> list[Ratio]:
    return [
        Ratio("deletion-vector read / raw pyarrow read", done["dv_over_raw"], 1.0, 1.2),
        Ratio(
            "deletion-vector read / merge-on-read of the same rows",
            done["dv_over_merge"],
            1.0,
            None,
        ),
    ]


def render(done: dict[str, Any]) -> list[str]:
    m = done["median_ms"]
    lines = [
        "## Deletion vectors: real-time read of a compacted table",
        "",
        f"Workload: {done['rows']:,} keys (id int64, name string, value float64) in a "
        f"primary-key table of {done['buckets']} buckets, fully compacted "
        f"({done['files']} files); a tenth of the keys deleted by deletion vectors on every "
        f"file, so the read returns {done['rows_read']:,} rows. Reads of the value columns, "
        f"median of {done['repeats']} runs in one process, interleaved; ratios are medians of "
        "the runs' ratios. The merge-on-read "
        "table holds the same compacted files and the deletes as a level-0 file.",
        "",
        "| read | median ms |",
        "|---|---:|",
        f"| raw pyarrow read of the files | {m['raw']:.0f} |",
        f"| shoal, deletion vectors | {m['dv']:.0f} |",
        f"| shoal, merge-on-read | {m['merge']:.0f} |",
        "",
    ]
    for r in ratios(done):
        value = "-" if r.value is None else f"{r.value:.2f}x"
        target = "" if r.target is None else f" (target at most {r.target}x)"
        lines.append(f"- {r.label}: {value}{target}")
    return lines


def profile(config: DvConfig, top: int = 25) -> str:
    """cProfile of ``config.repeats`` deletion-vector reads, after the wall times of the
    raw read and of the parts of shoal's read (open and plan, then read). cProfile
    sees only this thread: Arrow's decoding threads and the I/O pool's masking show
    as time waiting on them."""
    import cProfile
    import io
    import pstats

    import shoal

    dv_path, _, files, _ = build(config)

    def raw() -> int:
        return ds.dataset(files, format="parquet").to_table(columns=COLUMNS).num_rows

    def dv() -> int:
        return shoal.open_table(dv_path).to_arrow(columns=COLUMNS).num_rows

    walls: dict[str, list[float]] = {"raw": [], "open+plan": [], "read": [], "dv": []}
    for fn in (raw, dv):
        fn()
    for _ in range(config.repeats):
        walls["raw"].append(_timed(raw)[0])
        start = time.perf_counter()
        scan = shoal.open_table(dv_path).scan(columns=COLUMNS)
        scan.plan()
        planned = time.perf_counter()
        scan.to_arrow()
        walls["open+plan"].append((planned - start) * 1000)
        walls["read"].append((time.perf_counter() - planned) * 1000)
        walls["dv"].append(_timed(dv)[0])
    out = io.StringIO()
    out.write(
        f"deletion-vector read of {config.rows:,} rows in {config.buckets} buckets, "
        f"{config.repeats} runs; median wall ms: "
        + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in walls.items())
        + "\n"
    )
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(config.repeats):
        dv()
    profiler.disable()
    for key in ("tottime", "cumulative"):
        out.write(f"\n=== top {top} by {key} ===\n")
        pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(top)
    return out.getvalue()


if __name__ == "__main__":
    import sys
    import tempfile

    # python -m bench.deletion_vectors [--quick] [--profile]
    with tempfile.TemporaryDirectory() as tmp:
        quick = "--quick" in sys.argv
        config = DvConfig.sized(quick, 20261101, Path(tmp))
        if "--profile" in sys.argv:
            print(profile(config))
        else:
            print("\n".join(render(run(config))))
