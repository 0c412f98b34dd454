"""Compaction racing writers, in separate processes.

A primary-key table with two buckets per partition. Two writer processes write to it
at once, each to its own partition: one appends (an upsert on a primary-key table),
the other upserts and deletes. Writers compact after their writes (the table is not
``write-only`` and the sorted-run trigger is low), so their compactions keep removing
files. A third process runs ``Table.compact("full")`` over the whole table, again
and again, while they write.

Then:

- every full compaction returned (committed, or found nothing to do), having planned
  again where it lost a race: no CommitConflictError, which only comes once
  ``commit.max-retries`` re-plans are spent;
- every APPEND snapshot is a write a writer reported, and the real-time view of the
  latest snapshot is what the reported writes make; the snapshot of each full
  compaction reads as its predecessor;
- no data file is left that no snapshot names: a compaction deletes what it rewrote
  for an attempt that lost. (Each writer writes its own partition, so a write never
  has to re-sequence and write its rows again: the only files a lost commit could
  leave behind are those of compactions.)
"""

from __future__ import annotations

import json
import multiprocessing
import random
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

import shoal
from shoal.errors import CommitConflictError
from tests.conftest import EVENTS_SCHEMA
from tests.reachability import reachable, stored
from tests.reliability.helpers import rows

Report = dict[str, Any]
DAYS = ["2026-11-01", "2026-11-02"]  # a writer's own partition
KEYS = 30
OPTIONS = {"bucket": "2"}


def _writer(path: str, index: int, stop: Any, deadline: float) -> Report:
    table = shoal.open_table(path)
    rng = random.Random(index)
    day = DAYS[index]
    commits = []
    version = 0
    while not stop.is_set() and time.monotonic() < deadline:
        version += 1
        keys = sorted(rng.sample(range(KEYS), 4))
        if index == 1 and version % 4 == 0:
            snapshot = table.delete(rows(keys[:2], day))
            commits.append([snapshot.id, {str(k): None for k in keys[:2]}])
            continue
        data = rows(keys, day, version=version)
        snapshot = table.append(data) if index == 0 else table.upsert(data)
        commits.append([snapshot.id, {str(k): f"n{k}v{version}" for k in keys}])
        time.sleep(0.01)  # a stream, not a loop as tight as it gets
    return {"day": day, "commits": commits}


def _compactor(path: str, rounds: int, stop: Any, deadline: float) -> Report:
    table = shoal.open_table(path)
    results: list[Any] = []
    try:
        time.sleep(0.1)  # let the writers build up files
        for _ in range(rounds):
            try:
                result = table.compact("full")
            except CommitConflictError as exc:
                results.append({"error": str(exc)})
            else:
                snapshot_id = result.snapshot.id if result.snapshot is not None else None
                results.append({"snapshot": snapshot_id, "attempts": result.attempts})
            time.sleep(0.1)
    finally:
        stop.set()
    return {"results": results}


def _process(role: str, index: int, path: str, out: str, run: Any) -> None:
    barrier, stop, rounds, limit = run
    barrier.wait()
    deadline = time.monotonic() + limit
    try:
        if role == "writer":
            report = _writer(path, index, stop, deadline)
        else:
            report = _compactor(path, rounds, stop, deadline)
    except BaseException:
        stop.set()
        Path(out).write_text(json.dumps({"error": traceback.format_exc()}))
        raise
    Path(out).write_text(json.dumps(report))


def _model(writers: list[Report], upto: int | None = None) -> dict[tuple[str, int], str]:
    """The rows the reported writes make, up to snapshot ``upto``."""
    changes = sorted(
        (snapshot_id, w["day"], c) for w in writers for snapshot_id, c in w["commits"]
    )
    state: dict[tuple[str, int], str] = {(d, k): f"n{k}" for d in DAYS for k in range(KEYS)}
    for snapshot_id, day, change in changes:
        if upto is not None and snapshot_id > upto:
            break
        for key, name in change.items():
            if name is None:
                state.pop((day, int(key)), None)
            else:
                state[day, int(key)] = name
    return state


def _view(table: shoal.Table, snapshot_id: int | None = None) -> dict[tuple[str, int], str]:
    read = table.to_arrow(snapshot_id=snapshot_id, columns=["dt", "id", "name"]).to_pylist()
    return {(r["dt"], r["id"]): r["name"] for r in read}


@pytest.mark.parametrize(
    "rounds", [pytest.param(8, id="short"), pytest.param(40, id="long", marks=pytest.mark.slow)]
)
def test_full_compactions_racing_two_writers_plan_again_and_leave_no_orphans(
    catalog: shoal.Catalog, tmp_path: Path, rounds: int
) -> None:
    table = catalog.create_table(
        "db.k", EVENTS_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=OPTIONS
    )
    for day in DAYS:  # every key of both partitions, so that deletes delete
        table.upsert(rows(list(range(KEYS)), day))
    setup = {s.id for s in table.snapshots()}
    roles = [("writer", 0), ("writer", 1), ("compactor", 0)]
    context = multiprocessing.get_context("spawn")
    barrier, stop = context.Barrier(len(roles)), context.Event()
    limit = 2.0 * rounds  # a bound on the writers if the compactor hangs
    outs = {key: str(tmp_path / f"{key[0]}-{key[1]}.json") for key in roles}
    processes = [
        context.Process(
            target=_process,
            args=(role, index, table.path, outs[role, index], (barrier, stop, rounds, limit)),
        )
        for role, index in roles
    ]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=limit + 120)
    reports = {key: json.loads(Path(out).read_text()) for key, out in outs.items()}
    errors = {key: r["error"] for key, r in reports.items() if "error" in r}
    assert not errors, "\n".join(f"{key}: {e}" for key, e in errors.items())
    assert [p.exitcode for p in processes] == [0] * len(processes)

    writers = [reports["writer", 0], reports["writer", 1]]
    results = reports["compactor", 0]["results"]
    assert len(results) == rounds
    assert [r for r in results if "error" in r] == [], results
    table = shoal.open_table(table.path)
    snapshots = table.snapshots()
    written = {snapshot_id for w in writers for snapshot_id, _ in w["commits"]}
    assert {s.id for s in snapshots if s.commit_kind == "APPEND"} == written | setup
    compacted = {r["snapshot"] for r in results if r["snapshot"] is not None}
    assert compacted <= {s.id for s in snapshots if s.commit_kind == "COMPACT"}
    assert compacted  # the full compactions did compact
    assert len([s for s in snapshots if s.commit_kind == "COMPACT"]) > len(compacted)  # writers'

    assert _view(table) == _model(writers)
    for snapshot_id in compacted:
        assert _view(table, snapshot_id) == _view(table, snapshot_id - 1), snapshot_id
    orphans = {p for p in stored(table) if "/bucket-" in p} - reachable(table)
    assert not orphans, sorted(orphans)
