"""cProfile of shoal's append path: where a small commit spends its time."""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import tempfile
import time
from pathlib import Path

from bench import data


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
