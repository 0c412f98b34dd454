"""One shared thread pool for parallel metadata and data-file I/O.

I/O releases the GIL (pyarrow, zstd, file reads), so a thread pool overlaps the
latency of many small files even on two cores.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TypeVar

A = TypeVar("A")
R = TypeVar("R")


class _Pool:
    lock = threading.Lock()
    executor: ThreadPoolExecutor | None = None
    pid = 0


def io_threads() -> int:
    """How many threads the I/O pool runs: ``SHOAL_IO_THREADS``, or four per core up
    to 32 (also the size of a network client's connection pool)."""
    return int(os.environ.get("SHOAL_IO_THREADS", "0")) or min(32, 4 * (os.cpu_count() or 1))


def io_pool() -> ThreadPoolExecutor:
    """The process-wide I/O pool (re-created after a fork)."""
    with _Pool.lock:
        if _Pool.executor is None or _Pool.pid != os.getpid():
            _Pool.executor = ThreadPoolExecutor(
                max_workers=io_threads(), thread_name_prefix="shoal-io"
            )
            _Pool.pid = os.getpid()
        return _Pool.executor


def parallel_map(fn: Callable[[A], R], items: Iterable[A]) -> list[R]:
    """``[fn(x) for x in items]``, run on the I/O pool; results keep the input order.

    Small inputs run inline: a pool round trip costs more than one small read.
    The first failing item's exception (in input order) propagates once it is
    reached; items after it may still be running or queued then.
    """
    work = list(items)
    if len(work) <= 1:
        return [fn(x) for x in work]
    futures = [io_pool().submit(fn, x) for x in work]
    return [f.result() for f in futures]


def io_map(fn: Callable[[A], R], items: Iterable[A], *, concurrent: bool) -> list[R]:
    """``parallel_map`` where the filesystem gains from concurrent calls (remote
    stores), a plain loop where it does not (a local disk, where a pool round trip
    costs more than an unlink or a small read)."""
    if concurrent:
        return parallel_map(fn, items)
    return [fn(x) for x in items]


@contextmanager
def in_background(fn: Callable[[], R]) -> Iterator[Future[R]]:
    """Run ``fn()`` on a thread of its own while the ``with`` block runs; the block
    gets its future. The block is left only once ``fn`` has finished, whether the
    block ends normally or raises, so no work of it outlives the caller.

    The thread is not one of the I/O pool's, so ``fn`` may itself use the pool.
    """
    future: Future[R] = Future()

    def run() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(fn())
        except BaseException as exc:  # handed to whoever reads the future
            future.set_exception(exc)

    threading.Thread(target=run, name="shoal-background", daemon=True).start()
    try:
        yield future
    finally:
        wait([future])


def cpu_parallelism() -> int:
    """How many CPU-heavy tasks (merging, encoding) to run at once.

    Arrow already decodes, sorts and encodes on every core, so running as many Python
    tasks as cores only oversubscribes them (and multiplies memory): use half the
    cores, at least one.
    """
    return max(1, (os.cpu_count() or 1) // 2)


def bounded_map(fn: Callable[[A], R], items: Iterable[A], workers: int) -> list[R]:
    """``[fn(x) for x in items]`` with at most ``workers`` running at once, in order."""
    work = list(items)
    if workers <= 1 or len(work) <= 1:
        return [fn(x) for x in work]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="shoal-cpu") as pool:
        return list(pool.map(fn, work))
