"""Connecting to object stores: one time limit, and a first contact that keeps to it.

Left to their defaults, the store clients can keep a caller waiting on a store they
cannot reach for many minutes without a word: Google's client retries a request for
15 minutes, and a connection to an address that drops packets waits as long as the
client's stall timeout (two minutes for Google's, not configurable through pyarrow).
So shoal bounds both:

- **The time limit** ``SHOAL_STORE_TIMEOUT`` (seconds, default 30) configures every
  store client: their connect timeouts and how long they retry (see
  :mod:`shoal.io.s3_file_io` and :mod:`shoal.io.gcs_file_io` for the figures).
- **The first contact.** The first time a process sets up a FileIO for a store (a
  bucket behind an endpoint), :func:`reach` sends it one request and waits for an
  answer at most the time limit; any answer counts, "not found" and "access denied"
  included. No answer in time, or a connection failure, raises
  :class:`~shoal.errors.StoreUnreachableError` naming the store and what to check.
  The request runs on a daemon thread, so a client that overruns its own limits
  cannot hold the caller past the bound; it finishes, or the process ends, in the
  background.

Opening a catalog or a table on an unreachable store therefore fails within the time
limit. Later requests keep the clients' limits.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar, cast

from shoal.errors import InvalidArgumentError, StoreUnreachableError

logger = logging.getLogger(__name__)

V = TypeVar("V")

STORE_TIMEOUT_ENV = "SHOAL_STORE_TIMEOUT"
DEFAULT_STORE_TIMEOUT = 30.0  # seconds
# Stores reached at most once per process: far more than a process uses.
_REMEMBERED = 64

_reached: dict[Hashable, Any] = {}
_lock = threading.Lock()


def store_timeout(environ: Mapping[str, str] | None = None) -> float:
    """The time limit for reaching an object store, in seconds: ``SHOAL_STORE_TIMEOUT``
    when set, else 30. Raises InvalidArgumentError for a value that is not a positive
    number of seconds."""
    env = os.environ if environ is None else environ
    text = env.get(STORE_TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_STORE_TIMEOUT
    seconds = positive_seconds(text)
    if seconds is None:
        raise InvalidArgumentError(
            f"{STORE_TIMEOUT_ENV}={text!r}: give the time limit for reaching an object store "
            f"as a positive number of seconds, such as {DEFAULT_STORE_TIMEOUT:g}"
        )
    return seconds


def positive_seconds(text: str) -> float | None:
    """``text`` as a finite, positive number of seconds; None when it is not one."""
    try:
        seconds = float(text)
    except ValueError:
        return None
    return seconds if 0 < seconds < float("inf") else None


def reach(key: Hashable, connect: Callable[[], V], *, store: str, check: str, timeout: float) -> V:
    """What ``connect()`` returns (a FileIO that has had an answer from its store).

    ``connect`` sets up the client and sends the store one request; it raises
    StoreUnreachableError when the client reports that the store cannot be connected
    to, and returns once the store answered anything. Its result is remembered under
    ``key`` for the life of the process; the first call waits at most ``timeout``
    seconds for it, then raises StoreUnreachableError naming ``store`` and ``check``
    (what the user should check)."""
    with _lock:
        if key in _reached:
            return cast(V, _reached[key])
    result = _within(connect, store=store, check=check, timeout=timeout)
    with _lock:
        if len(_reached) >= _REMEMBERED:
            _reached.pop(next(iter(_reached)))
        return cast(V, _reached.setdefault(key, result))


def _within(connect: Callable[[], V], *, store: str, check: str, timeout: float) -> V:
    outcome: list[tuple[bool, Any]] = []
    finished = threading.Event()

    def attempt() -> None:
        try:
            outcome.append((True, connect()))
        except Exception as exc:  # handed over to the waiting thread
            outcome.append((False, exc))
        finally:
            finished.set()

    threading.Thread(target=attempt, name=f"shoal-connect {store}", daemon=True).start()
    if not finished.wait(timeout):
        logger.debug("no answer from %s within %s s; giving up on it", store, timeout)
        raise StoreUnreachableError(store, f"no answer within {timeout:g} s", timeout, check)
    done, value = outcome[0]
    if not done:
        raise value
    return cast(V, value)
