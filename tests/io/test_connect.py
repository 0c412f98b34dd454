"""The store time limit: how it is read, and the first contact that keeps to it."""

from __future__ import annotations

import pickle
import threading
import time
import uuid

import pytest

import shoal
from shoal.io.connect import DEFAULT_STORE_TIMEOUT, STORE_TIMEOUT_ENV, reach, store_timeout


def test_the_time_limit_defaults_to_30_seconds() -> None:
    assert store_timeout({}) == DEFAULT_STORE_TIMEOUT == 30.0
    assert store_timeout({STORE_TIMEOUT_ENV: " "}) == 30.0
    assert store_timeout({STORE_TIMEOUT_ENV: "2.5"}) == 2.5
    assert store_timeout({STORE_TIMEOUT_ENV: "600"}) == 600.0


@pytest.mark.parametrize("value", ["0", "-1", "soon", "inf", "nan", "30 s"])
def test_a_time_limit_that_is_no_positive_number_is_refused(value: str) -> None:
    with pytest.raises(shoal.InvalidArgumentError, match=STORE_TIMEOUT_ENV):
        store_timeout({STORE_TIMEOUT_ENV: value})


def test_a_store_that_does_not_answer_in_time_is_unreachable() -> None:
    release = threading.Event()

    def connect() -> str:
        release.wait(30)  # a client call that ignores its own limits
        return "late"

    started = time.monotonic()
    with pytest.raises(shoal.StoreUnreachableError) as info:
        reach(uuid.uuid4(), connect, store="gs://b", check="the network", timeout=0.5)
    assert time.monotonic() - started < 2
    release.set()
    error = info.value
    assert isinstance(error, shoal.ShoalError)
    assert isinstance(error, OSError)
    assert (error.store, error.timeout) == ("gs://b", 0.5)
    assert "no answer within 0.5 s" in str(error)
    assert "Check the network" in str(error)
    assert STORE_TIMEOUT_ENV in str(error)


def test_what_connect_raises_reaches_the_caller() -> None:
    def connect() -> str:
        raise shoal.InvalidArgumentError("bad URI")

    with pytest.raises(shoal.InvalidArgumentError, match="bad URI"):
        reach(uuid.uuid4(), connect, store="s3://b", check="x", timeout=5)


def test_a_store_is_reached_once_per_process() -> None:
    calls: list[int] = []

    def connect() -> object:
        calls.append(1)
        return object()

    key = uuid.uuid4()
    first = reach(key, connect, store="s3://b", check="x", timeout=5)
    assert reach(key, connect, store="s3://b", check="x", timeout=5) is first
    assert calls == [1]


def test_a_failed_contact_is_not_remembered() -> None:
    outcomes = iter([shoal.StoreUnreachableError("s3://b", "refused", 5, "x"), "answered"])

    def connect() -> str:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    key = uuid.uuid4()
    with pytest.raises(shoal.StoreUnreachableError):
        reach(key, connect, store="s3://b", check="x", timeout=5)
    assert reach(key, connect, store="s3://b", check="x", timeout=5) == "answered"


def test_the_error_pickles() -> None:
    error = shoal.StoreUnreachableError("s3://b at http://h:1", "refused", 3.0, "the endpoint")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is shoal.StoreUnreachableError
    assert str(copy) == str(error)
    assert (copy.store, copy.reason, copy.timeout) == ("s3://b at http://h:1", "refused", 3.0)
