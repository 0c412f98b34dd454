"""The collector pause: nested and concurrent pauses, and the state it restores."""

from __future__ import annotations

import gc
import threading

import pytest

from shoal.format import collector


@pytest.fixture(autouse=True)
def _collector_running():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_pause_and_resume() -> None:
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_pauses_resume_once_at_the_outermost() -> None:
    with collector.paused():
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_off_before_stays_off() -> None:
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_resumes_after_an_exception() -> None:
    with pytest.raises(KeyError), collector.paused():
        raise KeyError("x")
    assert gc.isenabled()


def test_overlapping_pauses_in_threads_resume_when_the_last_leaves() -> None:
    entered, release = threading.Barrier(2), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with collector.paused():
            entered.wait()
            release.wait()
            seen.append(gc.isenabled())

    thread = threading.Thread(target=first)
    thread.start()
    with collector.paused():
        entered.wait()
    # the thread still holds its pause after this one ended
    assert not gc.isenabled()
    release.set()
    thread.join()
    assert seen == [False]
    assert gc.isenabled()


def test_cycles_made_during_a_pause_are_collected_afterwards() -> None:
    class Node:
        pass

    with collector.paused():
        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        del a, b
    assert gc.collect() >= 2
