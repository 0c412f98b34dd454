"""Pausing Python's cyclic garbage collector while metadata is built in bulk.

Planning a large table builds a few Python objects per live data file, all kept until
the splits are made. Every few hundred new container objects the cyclic collector
runs, and its full collections re-scan every object alive, so building n objects
costs O(n) collections over a growing heap: at a million files about half of the
planning time. None of these objects forms a cycle that only the collector could free
(they are frozen dataclasses, tuples, bytes and strings, freed by reference counts),
so the collector is paused while they are built and set back as it was afterwards.

The pause nests and is shared between threads (manifests are decoded on the I/O
pool): the first to enter pauses the collector if it was running, the last to leave
starts it again. Nothing else changes: reference counting frees everything it frees
either way, and what the collector would have found is found by its next run.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _State:
    """How many pauses are open, and whether the collector ran before the first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.resume = False


_state = _State()


@contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector off for the ``with`` block (and any nested or concurrent
    one), then as it was before the outermost began."""
    state = _state
    with state.lock:
        if state.depth == 0:
            state.resume = gc.isenabled()
            gc.disable()
        state.depth += 1
    try:
        yield
    finally:
        with state.lock:
            state.depth -= 1
            if state.depth == 0 and state.resume:
                gc.enable()
