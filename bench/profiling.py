"""cProfile of shoal: where a small append, a real-time read and a compaction spend time."""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar
from unittest.mock import patch

from bench import data

A = TypeVar("A")
R = TypeVar("R")


def profile_appends(appends: int, rows: int, seed: int, top: int = 30) -> str:
    """Profile ``appends`` sequential appends; the top costs by own and cumulative time."""
    import shoal

    tables = [data.make_batch(i, rows, seed) for i in range(appends)]
    with tempfile.TemporaryDirectory(prefix="shoal-profile-") as tmp:
        table = shoal.Catalog(str(Path(tmp))).create_table(
            "bench.events", data.SCHEMA, partition_keys=[data.PARTITION_KEY]
        )
        profiler = cProfile.Profile()
        gc.collect()
        start = time.perf_counter()
        profiler.enable()
        for batch in tables:
            table.append(batch)
        profiler.disable()
        elapsed = time.perf_counter() - start
    out = io.StringIO()
    out.write(
        f"{appends} appends of {rows} rows: {elapsed:.2f} s under cProfile "
        f"({elapsed / appends * 1000:.1f} ms per append)\n"
    )
    for key in ("tottime", "cumulative"):
        out.write(f"\n=== top {top} by {key} ===\n")
        pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(top)
    return out.getvalue()


def _inline_map(fn: Callable[[A], R], items: Iterable[A]) -> list[R]:
    return [fn(x) for x in items]


def _top(profiler: cProfile.Profile, top: int) -> str:
    out = io.StringIO()
    for key in ("tottime", "cumulative"):
        out.write(f"\n=== top {top} by {key} ===\n")
        pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(top)
    return out.getvalue()


def profile_primary_key(batches: int, rows: int, seed: int, buckets: int = 4, top: int = 30) -> str:
    """Profile shoal's real-time read and full compaction of the primary-key workload.

    The upserts (write-only) are not profiled. cProfile sees only the thread it runs
    in, and the merge reads its files' batches on shoal's I/O pool (and compaction
    may rewrite buckets side by side), so for the profile those maps are plain loops
    in this thread (the Arrow work below them is the same; only the overlap is lost).
    """
    import shoal
    import shoal.compaction.compact as compact_module
    import shoal.primary_key.merge as merge_module

    def inline_bounded(fn: Callable[[Any], Any], items: Iterable[Any], workers: int) -> list[Any]:
        del workers
        return [fn(x) for x in items]

    keys = data.key_range(batches, rows)
    upserts = [data.make_upsert(i, rows, keys, seed) for i in range(batches)]
    out = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="shoal-profile-") as tmp:
        table = shoal.Catalog(tmp).create_table(
            "bench.pk",
            data.PK_SCHEMA,
            primary_keys=[data.PRIMARY_KEY],
            options={"bucket": str(buckets), "write-only": "true"},
        )
        for batch in upserts:
            table.upsert(batch)

        with patch.object(merge_module, "parallel_map", _inline_map):
            profiler = cProfile.Profile()
            gc.collect()
            start = time.perf_counter()
            profiler.enable()
            scan = shoal.open_table(table.path).scan()
            scan.plan()
            merged = scan.to_arrow()
            profiler.disable()
            elapsed = time.perf_counter() - start
        out.write(
            f"real-time read of {batches} upserts of {rows} rows into {buckets} buckets "
            f"({merged.num_rows} rows): {elapsed:.2f} s under cProfile\n"
        )
        out.write(_top(profiler, top))

        with (
            patch.object(compact_module, "bounded_map", inline_bounded),
            patch.object(merge_module, "parallel_map", _inline_map),
        ):
            profiler = cProfile.Profile()
            gc.collect()
            start = time.perf_counter()
            profiler.enable()
            result = shoal.open_table(table.path).compact("full")
            profiler.disable()
            elapsed = time.perf_counter() - start
        out.write(
            f"\nfull compaction ({result.compacted_files} files into {result.written_files}, "
            f"buckets one after another): {elapsed:.2f} s under cProfile\n"
        )
        out.write(_top(profiler, top))
    return out.getvalue()
