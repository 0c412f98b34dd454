"""Several writers on one table: every commit lands, no row is lost."""

from __future__ import annotations

import multiprocessing
import threading

import shoal
from tests.conftest import EVENTS_SCHEMA, events

WRITERS = 4
COMMITS_EACH = 8


def _append_many(path: str, writer: int) -> None:
    table = shoal.open_table(path)
    for i in range(COMMITS_EACH):
        base = (writer * COMMITS_EACH + i) * 10
        table.append(events(range(base, base + 10), dt=f"2026-11-0{writer + 1}"))


def _check(path: str) -> None:
    table = shoal.open_table(path)
    total = WRITERS * COMMITS_EACH
    assert [s.id for s in table.snapshots()] == list(range(1, total + 1))
    ids = sorted(table.to_arrow().column("id").to_pylist())
    assert ids == list(range(total * 10))
    assert table.latest_snapshot().total_record_count == total * 10


def test_threads_appending_to_one_table(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=["dt"], options={"commit.max-retries": "100"}
    )
    threads = [threading.Thread(target=_append_many, args=(table.path, w)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _check(table.path)


def test_processes_appending_to_one_table(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=["dt"], options={"commit.max-retries": "100"}
    )
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_append_many, args=(table.path, w)) for w in range(WRITERS)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * WRITERS
    _check(table.path)
