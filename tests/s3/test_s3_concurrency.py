"""Concurrent committers on S3: separate processes racing for snapshot ids."""

from __future__ import annotations

import multiprocessing
import time
from datetime import datetime

import shoal
from tests.conftest import EVENTS_SCHEMA
from tests.s3.s3_support import S3Env, commit_appends

WORKERS = 2
COMMITS = 8


def test_two_processes_never_win_the_same_snapshot_id(s3: S3Env) -> None:
    table = shoal.Catalog(s3.uri("wh")).create_table(
        "db.t", EVENTS_SCHEMA, options={"commit.max-retries": "100"}
    )
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(WORKERS)
    results = context.Queue()
    processes = [
        context.Process(target=commit_appends, args=(table.path, w, COMMITS, start, results))
        for w in range(WORKERS)
    ]
    for process in processes:
        process.start()
    finished = dict(results.get(timeout=120) for _ in processes)
    assert all(isinstance(r, list) for r in finished.values()), finished
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0

    won = [dict(finished[w]) for w in range(WORKERS)]  # snapshot id -> commit user
    ids = [i for w in won for i in w]
    assert len(ids) == len(set(ids)) == WORKERS * COMMITS  # no id won twice
    assert sorted(ids) == list(range(1, WORKERS * COMMITS + 1))
    table = shoal.open_table(table.path)
    for process in won:
        for snapshot_id, user in process.items():
            assert table.snapshot(snapshot_id).commit_user == user  # the winner's file
    assert len({user for w in won for user in w.values()}) == WORKERS
    # Every commit is there, each exactly once.
    expected = sorted(w * 1000 + i for w in range(WORKERS) for i in range(COMMITS))
    assert sorted(table.to_arrow().column("id").to_pylist()) == expected
    assert table.latest_snapshot().total_record_count == WORKERS * COMMITS
    # The attempts that lost removed their manifests: nothing is left unreferenced.
    time.sleep(1.1)  # object times have a resolution of one second
    assert table.remove_orphan_files(older_than=datetime.now(), dry_run=True).paths == ()
