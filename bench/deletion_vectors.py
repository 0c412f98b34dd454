"""The deletion-vector workload: a compacted primary-key table whose top-level files
carry deletion vectors, read three ways, and the writes that made it, in one run.

The tables: ``rows`` keys upserted into ``buckets`` buckets. The one with
``deletion-vectors.enabled`` lifts every write out of level 0 at once; the one
without is fully compacted. Then a tenth of the keys, spread over every file, are
deleted: the deletion-vector table's write looks the keys up in its files and marks
their rows in deletion vectors (one index file per bucket); the other table's delete
waits as a level-0 file. The real-time read of the first is then Paimon's batch scan:
every file read unmerged, its deleted rows masked; the second merges by key.

Read contenders, each timed in this process, interleaved ``repeats`` times; a ratio is
the median of the ratios of the runs side by side, which a busy machine disturbs less
than a ratio of medians:

- ``raw``: pyarrow reading the same data files (the value columns), the floor;
- ``dv``: shoal's real-time read of the table;
- ``merge``: shoal's merge-on-read of the same rows without vectors: the same
  compacted files with the deletes as a level-0 file, merged by key.

Writes, timed once each: the delete of a tenth of the keys above, then ``upserts``
upserts of a hundredth of the keys each, interleaved between the two tables (the
table without vectors compacting by Paimon's universal rules after each) and a third
with dynamic buckets and no vectors.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from bench.report import Ratio
from shoal.core import deletion_vectors as DVS
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries

COLUMNS = ["id", "name", "value"]
TABLE_DV, TABLE_MERGE, TABLE_DYNAMIC = "bench.dv", "bench.merge", "bench.dynamic"


@dataclass(frozen=True)
class DvConfig:
    rows: int
    buckets: int
    repeats: int
    workdir: Path
    seed: int = 20261101
    upserts: int = 5

    @staticmethod
    def sized(quick: bool, seed: int, workdir: Path) -> DvConfig:
        return DvConfig(
            rows=400_000 if quick else 2_000_000,
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


def _create(catalog: Any, name: str, schema: pa.Schema, config: DvConfig, **options: str) -> Any:
    return catalog.create_table(
        name, schema, primary_keys=["id"], options={"bucket": str(config.buckets), **options}
    )


def build(config: DvConfig) -> tuple[Any, Any, list[str], int, dict[str, float]]:
    """The deletion-vector table and the merge-on-read table, the data files of the
    first (what the raw read reads), the rows both read, and the times of the deletes
    (ms)."""
    import shoal

    rng = np.random.default_rng(config.seed)
    catalog = shoal.Catalog(str(config.workdir / "dv-warehouse"))
    ids = np.arange(config.rows, dtype=np.int64)
    base = _rows(ids, rng)
    dv = _create(catalog, TABLE_DV, base.schema, config, **{"deletion-vectors.enabled": "true"})
    merge = _create(catalog, TABLE_MERGE, base.schema, config, **{"write-only": "true"})
    dv.upsert(base)
    merge.upsert(base)
    merge.compact(strategy="full")
    deleted = pa.table({"id": np.sort(rng.choice(ids, config.rows // 10, replace=False))})
    writes = {
        "dv": _timed(lambda: dv.delete(deleted) and 0)[0],
        "merge": _timed(lambda: merge.delete(deleted) and 0)[0],
    }
    store = dv._store
    files = [
        data_file_path(store.paths.bucket_dir(store.partitions.path(e.partition), e.bucket), e.file)
        for e in live_entries(store, store.snapshots.latest())
    ]
    assert DVS.deletion_files(store, store.snapshots.latest())
    return dv, merge, sorted(files), config.rows - deleted.num_rows, writes


def time_upserts(dv: Any, merge: Any, config: DvConfig) -> dict[str, list[float]]:
    """``config.upserts`` upserts of a hundredth of the keys into each table, taking
    turns; the table without vectors compacts after its writes as Paimon's writers do.
    A third table has dynamic buckets (as many, ``dynamic-bucket.target-row-num`` keys
    each) and no vectors: each of its upserts reads the hash index to find buckets."""
    import shoal

    with merge.update_schema() as update:
        update.remove_option("write-only")
    rng = np.random.default_rng(config.seed + 1)
    catalog = shoal.Catalog(str(config.workdir / "dv-warehouse"))
    target = str(config.rows // config.buckets)
    base = _rows(np.arange(config.rows, dtype=np.int64), rng)
    dynamic = catalog.create_table(
        TABLE_DYNAMIC,
        base.schema,
        primary_keys=["id"],
        options={"dynamic-bucket.target-row-num": target},
    )
    dynamic.upsert(base)
    times: dict[str, list[float]] = {"dv": [], "merge": [], "dynamic": []}
    for _ in range(config.upserts):
        ids = rng.choice(config.rows, config.rows // 100, replace=False)
        data = _rows(ids, rng)
        for name, table in (("dv", dv), ("merge", merge), ("dynamic", dynamic)):
            times[name].append(_timed(lambda t=table, d=data: t.upsert(d) and 0)[0])
    assert dv.to_arrow().num_rows == merge.to_arrow().num_rows
    assert dynamic.to_arrow().num_rows == config.rows
    return times


def _timed(fn: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    rows = fn()
    return (time.perf_counter() - start) * 1000, rows


def run(config: DvConfig) -> dict[str, Any]:
    """Build the tables, then time the three reads; medians in milliseconds."""
    import shoal

    dv_table, merge_table, files, expected, deletes = build(config)
    dv_path, merge_path = dv_table.path, merge_table.path

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

    upserts = time_upserts(dv_table, merge_table, config)
    return {
        "delete_ms": deletes,
        "upsert_ms": {n: statistics.median(t) for n, t in upserts.items()},
        "upsert_dv_over_merge": statistics.median(
            x / y for x, y in zip(upserts["dv"], upserts["merge"], strict=True)
        ),
        "upsert_dynamic_over_fixed": statistics.median(
            x / y for x, y in zip(upserts["dynamic"], upserts["merge"], strict=True)
        ),
        "upserts": config.upserts,
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
        Ratio(
            "deletion-vector upsert / upsert without vectors",
            done["upsert_dv_over_merge"],
            1.0,
            None,
        ),
        Ratio(
            "dynamic-bucket upsert / fixed-bucket upsert",
            done["upsert_dynamic_over_fixed"],
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
        f"Writes: the delete of a tenth of the keys took {done['delete_ms']['dv']:.0f} ms "
        f"with deletion vectors (the write, then the lookup of every key and the vectors) "
        f"and {done['delete_ms']['merge']:.0f} ms without (a level-0 file); an upsert of a "
        f"hundredth of the keys {done['upsert_ms']['dv']:.0f} ms and "
        f"{done['upsert_ms']['merge']:.0f} ms (median of {done['upserts']}); the same "
        f"upserts into a table of dynamic buckets without vectors "
        f"{done['upsert_ms']['dynamic']:.0f} ms.",
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

    dv_table, _, files, _, _ = build(config)
    dv_path = dv_table.path

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
