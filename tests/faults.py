"""Fault injection for crash tests: a LocalFileIO that fails or "dies" at its n-th
mutating call, and a deterministic stand-in for the shared I/O pool.

A crash test runs an operation once without a fault to count its mutating calls,
then once per ``n`` in ``1..count`` on a fresh copy of the table with the fault at
call ``n``, and checks what the interrupted operation left behind.

Two kinds of fault:

- ``mode="fail"``: call ``n`` raises an ordinary ``OSError``; later calls work. The
  code under test may handle the error.
- ``mode="crash"``: call ``n`` raises :class:`Crash`, a ``BaseException`` that no
  ``except Exception`` / ``except OSError`` catches, and so does every mutating call
  after it: the process is dead at that point, nothing more reaches the disk and no
  cleanup runs. With ``partial=True`` a crashing ``write_bytes``, ``overwrite`` or
  ``try_create`` first writes half of its bytes. ``overwrite`` and ``try_create``
  write a hidden temporary file and then rename or link it into place, so the half
  lands in the temporary file and the crash comes before the rename or link.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from typing import Any, Literal, TypeVar

from shoal.io import FileIO, LocalFileIO
from shoal.io import executor as shoal_executor

F = TypeVar("F", bound=Callable[..., Any])

Mode = Literal["fail", "crash"]
MODES: tuple[Mode, ...] = ("fail", "crash")


class Crash(BaseException):
    """The process died here (a BaseException: ``except Exception`` cannot catch it)."""


# The methods a partial write cuts short.
WRITES = frozenset({"write_bytes", "overwrite", "try_create"})


def _mutating(method: F) -> F:
    """Count a call of ``method`` and inject the fault at the chosen one.

    Calls that LocalFileIO makes to itself (``try_create`` writing its temporary
    file with ``write_bytes``) are part of the outer call and are not counted."""
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self: FaultyFileIO, path: str, *args: Any) -> Any:
        local = self._local
        if getattr(local, "inside", False):
            if getattr(local, "truncate", False):  # the temporary file of a partial write
                local.truncate = False
                LocalFileIO.write_bytes(self, path, _half(args[0]))
                raise Crash(f"after writing half of {path}")
            return method(self, path, *args)
        fault = self._begin(name, path)
        local.inside = True
        try:
            if fault == "fail":
                raise OSError(errno.EIO, f"injected I/O error in {name}", path)
            if fault == "partial" and name == "write_bytes":
                LocalFileIO.write_bytes(self, path, _half(args[0]))
                raise Crash(f"after writing half of {path}")
            if fault == "partial":  # overwrite / try_create: half of the temporary file
                local.truncate = True
                method(self, path, *args)
                raise AssertionError(f"{name} wrote no temporary file to cut short")
            if fault == "crash":
                raise Crash(f"at mutating call {self.fail_at}: {name} {path}")
            return method(self, path, *args)
        finally:
            local.inside = False
            local.truncate = False
            self._end()

    return wrapper  # type: ignore[return-value]


def _half(data: bytes) -> bytes:
    return bytes(data[: len(data) // 2])


class FaultyFileIO(LocalFileIO):
    """LocalFileIO that counts its mutating calls and injects a fault at one of them.

    ``fail_at=None`` injects nothing: run an operation once and read :attr:`calls`
    to learn how many mutating calls it makes. Thread-safe: the calls are numbered
    in the order they start, whichever thread makes them.
    """

    def __init__(
        self, fail_at: int | None = None, mode: Mode = "crash", *, partial: bool = False
    ) -> None:
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if partial and mode != "crash":
            raise ValueError("a partial write ends in a crash: use mode='crash'")
        if fail_at is not None and fail_at < 1:
            raise ValueError(f"fail_at counts from 1, not {fail_at}")
        self.fail_at = fail_at
        self.mode = mode
        self.partial = partial
        self.calls = 0  # mutating calls started (a call refused after a crash is not one)
        self.log: list[tuple[str, str]] = []  # (method, path) of each counted call
        self.fired = False  # the fault was injected
        self.crashed = False  # the simulated process is dead
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        self._local = threading.local()

    def _begin(self, name: str, path: str) -> str | None:
        """Number this call; the fault to inject into it, if any."""
        with self._lock:
            if self.crashed:
                raise Crash(f"{name} {path} after the crash")
            self.calls += 1
            self.log.append((name, path))
            self._in_flight += 1
            if self.calls != self.fail_at:
                return None
            self.fired = True
            if self.mode == "fail":
                return "fail"
            self.crashed = True
            return "partial" if self.partial and name in WRITES else "crash"

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.notify_all()

    def settle(self) -> None:
        """Wait until no mutating call is running (calls on pool threads may still be
        finishing when the caller has already seen the fault)."""
        with self._idle:
            self._idle.wait_for(lambda: self._in_flight == 0)

    def delete_many(self, paths: Sequence[str]) -> int:
        """Not a mutating call of its own: each file is one counted ``delete`` call (the
        generic loop), so crash matrices stay per file and a fault may fall between any
        two files of a batch."""
        return FileIO.delete_many(self, paths)

    write_bytes = _mutating(LocalFileIO.write_bytes)
    overwrite = _mutating(LocalFileIO.overwrite)
    try_create = _mutating(LocalFileIO.try_create)
    delete = _mutating(LocalFileIO.delete)
    delete_dir = _mutating(LocalFileIO.delete_dir)
    remove_empty_dir = _mutating(LocalFileIO.remove_empty_dir)
    mkdirs = _mutating(LocalFileIO.mkdirs)
    rename = _mutating(LocalFileIO.rename)
    open_output_stream = _mutating(LocalFileIO.open_output_stream)


# --- a deterministic I/O pool ----------------------------------------------------------------
class _BatchFuture(Future):  # type: ignore[type-arg]
    def __init__(self, pool: OrderedPool) -> None:
        super().__init__()
        self._pool = pool

    def result(self, timeout: float | None = None) -> Any:
        self._pool.run_pending()
        return super().result(timeout)


class OrderedPool(Executor):
    """An executor whose tasks run in a fixed order on a worker thread.

    Tasks wait until a result is first asked for; then the batch submitted so far
    runs on a new thread, in submission order or newest first (``reverse``). A
    thread pool may finish concurrent tasks in any order, so a crash at call ``n``
    can leave any subset of a batch done; the two orders make that reproducible and
    cover both ends. Exceptions, ``BaseException`` included, reach the caller through
    the future, as with ``ThreadPoolExecutor``.
    """

    def __init__(self, *, reverse: bool = False) -> None:
        self.reverse = reverse
        self._lock = threading.Lock()
        self._pending: list[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = _BatchFuture(self)
        with self._lock:
            self._pending.append((future, functools.partial(fn, **kwargs), args))
        return future

    def run_pending(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if not batch:
            return
        if self.reverse:
            batch.reverse()
        worker = threading.Thread(target=_run_batch, args=(batch,), name="shoal-io-ordered")
        worker.start()
        worker.join()


def _run_batch(batch: list[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]]) -> None:
    for future, fn, args in batch:
        if not future.set_running_or_notify_cancel():
            continue
        try:
            result = fn(*args)
        except BaseException as exc:  # as ThreadPoolExecutor does: the caller re-raises it
            future.set_exception(exc)
        else:
            future.set_result(result)


@contextlib.contextmanager
def ordered_io_pool(*, reverse: bool = False) -> Iterator[OrderedPool]:
    """Make shoal's shared I/O pool an :class:`OrderedPool` for the duration."""
    state = shoal_executor._Pool
    with state.lock:
        saved = (state.executor, state.pid)
        pool = OrderedPool(reverse=reverse)
        state.executor, state.pid = pool, os.getpid()  # type: ignore[assignment]
    try:
        yield pool
    finally:
        with state.lock:
            state.executor, state.pid = saved
