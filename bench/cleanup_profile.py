"""cProfile of shoal's snapshot expiration and orphan file removal on the cleanup
workloads' table (``python -m bench --profile-cleanup``).

cProfile sees only the thread it runs in, and both operations read metadata and
delete files on shoal's I/O pool (and orphan cleanup lists the bucket directories on a
thread of its own), so for the profile their ``parallel_map`` is a plain loop and the
listing runs first, in this thread; the wall time of an unprofiled run comes first.
"""

from __future__ import annotations

import cProfile
import gc
import io
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from unittest.mock import patch

from bench import data
from bench.cleanup import commit_plan, scatter_strays, shoal_stray_dirs
from bench.cleanup_workloads import shoal_build
from bench.profiling import _top

A = TypeVar("A")
R = TypeVar("R")


def _inline_map(fn: Callable[[A], R], items: Iterable[A]) -> list[R]:
    return [fn(x) for x in items]


def _inline_io_map(fn: Callable[[A], R], items: Iterable[A], *, concurrent: bool) -> list[R]:
    del concurrent
    return [fn(x) for x in items]


@contextmanager
def _inline_background(fn: Callable[[], R]) -> Iterator[Future[R]]:
    future: Future[R] = Future()
    future.set_result(fn())
    yield future


def _inline_pool() -> ExitStack:
    import shoal.cleanup.expire
    import shoal.cleanup.orphans
    import shoal.core.manifests

    stack = ExitStack()
    for module in (shoal.cleanup.expire, shoal.cleanup.orphans, shoal.core.manifests):
        for name, inline in (
            ("parallel_map", _inline_map),
            ("io_map", _inline_io_map),
            ("in_background", _inline_background),
        ):
            if hasattr(module, name):
                stack.enter_context(patch.object(module, name, inline))
    return stack


def _timed(run: Callable[[str], Any], template: Path, copy: Path) -> tuple[float, Any]:
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(template, copy)
    gc.collect()
    start = time.perf_counter()
    result = run(str(copy))
    return time.perf_counter() - start, result


def _profiled(run: Callable[[str], Any], template: Path, copy: Path, top: int) -> str:
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(template, copy)
    profiler = cProfile.Profile()
    gc.collect()
    with _inline_pool():
        start = time.perf_counter()
        profiler.enable()
        run(str(copy))
        profiler.disable()
        elapsed = time.perf_counter() - start
    return f"under cProfile, one thread: {elapsed:.3f} s\n" + _top(profiler, top)


def _brief(result: Any) -> str:
    """The result without its list of paths."""
    fields = ", ".join(
        f"{name}={getattr(result, name)}" for name in result.__dataclass_fields__ if name != "paths"
    )
    return f"{type(result).__name__}({fields})"


def profile_cleanup(commits: int, rows: int, strays: int, seed: int, top: int = 30) -> str:
    import shoal

    def expire(path: str) -> Any:
        return shoal.open_table(path).expire_snapshots(
            retain_min=10, retain_max=10, older_than=datetime.now(), max_deletes=1_000_000
        )

    def orphans(path: str) -> Any:
        return shoal.open_table(path).remove_orphan_files()

    out = io.StringIO()
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(
        prefix="shoal-profile-", dir=shm if shm.is_dir() else None
    ) as tmp:
        work = Path(tmp)
        appends = work / "commits.arrow"
        data.write_batches(appends, commits, rows, seed)
        template = Path(shoal_build(appends, commit_plan(commits), work / "wh", "bench.cleanup"))
        with_strays = work / "with-strays"
        shutil.copytree(template, with_strays)
        scatter_strays(with_strays, shoal_stray_dirs(with_strays), strays, seed)
        copy = work / "copy"
        for what, run, source in (
            (f"expiration of all but 10 of {commits} snapshots", expire, template),
            (f"orphan removal, {strays:,} strays", orphans, with_strays),
        ):
            seconds, result = _timed(run, source, copy)
            out.write(f"\n##### {what}: {seconds:.3f} s with the I/O pool; {_brief(result)}\n")
            out.write(_profiled(run, source, copy, top))
    return out.getvalue()
