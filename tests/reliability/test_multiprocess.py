"""Writers, compaction, tags, expiration and readers in separate processes at once.

Two tables: an append table, ``events``, and a primary-key table, ``keyed``, both
keeping snapshots for a tiny ``snapshot.time-retained`` (half a second) and at least
one snapshot, so that expiration keeps deleting what readers may still be reading.
For a fixed time (a few seconds; longer under ``-m slow``), each in its own process
(``spawn``):

- two appenders append rows of fresh ids to ``events``;
- an upserter upserts and deletes keys of ``keyed``; a compactor compacts it;
- a tagger creates tags on the latest snapshot of ``keyed`` and deletes older ones;
- an expirer expires the snapshots of both tables by their options;
- two readers read the latest snapshot of either table, a tag of ``keyed``, and
  "slow" reads: a scan pinned to a snapshot, read only once that snapshot has
  expired (of the latest snapshot: it must plan again; of a snapshot chosen by id:
  SnapshotNotFoundError, or its rows if a tag kept them).

Each process reports what it did. The reports must give every snapshot id to
exactly one commit (a commit that took an id expiration had freed would not), so they
say what every snapshot holds: the rows of ``events`` at snapshot ``n`` are those of
the appends up to ``n``; ``keyed`` at ``n`` is the upserts and deletes up to ``n``
(compactions change no row). Then:

- every snapshot of each table was committed by a process that reported it, and
  the final rows are exactly what the reported commits wrote;
- every read returned exactly the rows of the snapshot it says it read;
- no read of the latest snapshot failed (the rule of ``shoal.scan.Scan``:
  one whose snapshot expires under it plans again), and the slow reads did plan
  again, or raised SnapshotNotFoundError for a snapshot asked for by id;
- every snapshot and tag left reads its rows, and every file they reach is there.

The tests after it take the same races one step at a time, in one process, with the
other side run at a chosen FileIO call: a scan whose snapshot expires, a commit,
upsert or compaction whose snapshot expires while it reads it, and a commit whose
snapshot id is taken and freed again before it publishes.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shoal
from shoal.errors import (
    CommitConflictError,
    CorruptDataFileError,
    ShoalError,
    SnapshotNotFoundError,
    TagNotFoundError,
)
from shoal.io import LocalFileIO
from shoal.table import Table
from tests.conftest import EVENTS_SCHEMA, events
from tests.faults import Crash
from tests.reachability import reachable
from tests.reliability.helpers import rows

Report = dict[str, Any]

OPTIONS = {
    "snapshot.time-retained": "500 ms",
    "snapshot.num-retained.min": "1",
    "commit.max-retries": "200",
    # Expiration runs only in the expirer, compaction only in the compactor.
    "write-only": "true",
}
KEYS = 40  # the key space of the upserter
DAY = "2026-11-01"


# --- what each process does --------------------------------------------------------------------
def _digest(values: list[Any]) -> str:
    return hashlib.sha256(json.dumps(values).encode()).hexdigest()


def _events_digest(table: pa.Table) -> str:
    return _digest(sorted(table.column("id").to_pylist()))


def _keyed_digest(table: pa.Table) -> str:
    pairs = zip(table.column("id").to_pylist(), table.column("name").to_pylist(), strict=True)
    return _digest(sorted([i, n] for i, n in pairs))


DIGESTS: dict[str, Callable[[pa.Table], str]] = {"events": _events_digest, "keyed": _keyed_digest}


def _appender(paths: dict[str, str], index: int, deadline: float) -> Report:
    table = shoal.open_table(paths["events"])
    commits = []
    for i in range(10**9):
        if time.monotonic() >= deadline:
            break
        ids = list(range((index * 10**6) + i * 5, (index * 10**6) + i * 5 + 5))
        snapshot = table.append(events(ids, f"2026-11-0{index + 1}"))
        commits.append([snapshot.id, ids])
    return {"commits": commits}


def _upserter(paths: dict[str, str], index: int, deadline: float) -> Report:
    table = shoal.open_table(paths["keyed"])
    rng = random.Random(index)
    commits = []
    version = 0
    while time.monotonic() < deadline:
        version += 1
        keys = sorted(rng.sample(range(KEYS), 5))
        if version % 5 == 0:
            snapshot = table.delete(rows(keys[:2], DAY))
            commits.append([snapshot.id, {str(k): None for k in keys[:2]}])
        else:
            snapshot = table.upsert(rows(keys, DAY, version=version))
            commits.append([snapshot.id, {str(k): f"n{k}v{version}" for k in keys}])
    return {"commits": commits}


def _compactor(paths: dict[str, str], index: int, deadline: float) -> Report:
    table = shoal.open_table(paths["keyed"])
    compactions, conflicts = [], 0
    strategies = ["full", "universal"]
    for i in range(10**9):
        if time.monotonic() >= deadline:
            break
        try:
            result = table.compact(strategy=strategies[i % 2])
        except CommitConflictError:
            conflicts += 1
            continue
        if result.snapshot is not None:
            compactions.append(result.snapshot.id)
        time.sleep(0.05)
    return {"compactions": compactions, "conflicts": conflicts}


def _tagger(paths: dict[str, str], index: int, deadline: float) -> Report:
    table = shoal.open_table(paths["keyed"])
    created, deleted = [], []
    live: list[str] = []
    for i in range(10**9):
        if time.monotonic() >= deadline:
            break
        name = f"t{index}-{i}"
        tag = table.create_tag(name)
        created.append([name, tag.snapshot_id])
        live.append(name)
        if len(live) > 2:
            oldest = live.pop(0)
            table.delete_tag(oldest)
            deleted.append(oldest)
        time.sleep(0.1)
    return {"created": created, "deleted": deleted}


def _expirer(paths: dict[str, str], index: int, deadline: float) -> Report:
    tables = [shoal.open_table(paths["events"]), shoal.open_table(paths["keyed"])]
    expired, gave_way = 0, []
    while time.monotonic() < deadline + 1.0:  # readers' slow reads wait for expirations
        for table in tables:
            try:
                expired += table.expire_snapshots().expired_snapshots
            except ShoalError as exc:  # such as tags changing all through the planning
                gave_way.append(repr(exc))
        time.sleep(0.05)
    return {"expired": expired, "gave_way": gave_way}


def _wait_until_gone(table: Table, snapshot_id: int, deadline: float) -> bool:
    path = table._store.paths.snapshot_path(snapshot_id)
    while time.monotonic() < deadline + 1.0:
        if not os.path.exists(path):
            return True
        time.sleep(0.02)
    return False


# What readers read: (kind, table). Every sixth read is slow, and the first read of
# reader 0 reads the latest snapshot of ``events`` slowly, of reader 1 by id: both
# meet an expiration (no tag holds a snapshot of ``events``).
FAST = [
    ("latest", "events"),
    ("latest", "keyed"),
    ("tag", "keyed"),
    ("latest", "events"),
    ("latest", "keyed"),
]
SLOW = [
    ("slow-latest", "events"),
    ("slow-by-id", "events"),
    ("slow-latest", "keyed"),
    ("slow-by-id", "keyed"),
]


def _read_once(table: Table, name: str, kind: str, deadline: float) -> Report:
    read: Report = {"table": name, "kind": kind}
    if kind == "tag":
        tags = table.list_tags()
        if not tags:
            return {**read, "skipped": True}
        read["tag"] = tags[0].name
        try:
            scan = table.scan(tag=tags[0].name)
        except TagNotFoundError as exc:  # deleted since it was listed
            return {**read, "error": type(exc).__name__, "message": str(exc)}
    elif kind == "slow-by-id":
        latest = table.latest_snapshot()
        assert latest is not None
        scan = table.scan(snapshot_id=latest.id)
    else:
        scan = table.scan()
    assert scan.snapshot is not None
    read["planned"] = scan.snapshot.id
    if kind.startswith("slow"):
        read["expired"] = _wait_until_gone(table, scan.snapshot.id, deadline)
    try:
        rows_read = scan.to_arrow()
    except ShoalError as exc:
        return {**read, "error": type(exc).__name__, "message": str(exc)}
    return {**read, "read": scan.snapshot.id, "digest": DIGESTS[name](rows_read)}


def _reader(paths: dict[str, str], index: int, deadline: float) -> Report:
    tables = {name: shoal.open_table(path) for name, path in paths.items()}
    reads = []
    for i in range(10**9):
        if time.monotonic() >= deadline:
            break
        kind, name = SLOW[(i // 6 + index) % len(SLOW)] if i % 6 == 0 else FAST[i % len(FAST)]
        reads.append(_read_once(tables[name], name, kind, deadline))
    return {"reads": reads}


ROLES: dict[str, Callable[[dict[str, str], int, float], Report]] = {
    "appender": _appender,
    "upserter": _upserter,
    "compactor": _compactor,
    "tagger": _tagger,
    "expirer": _expirer,
    "reader": _reader,
}
PROCESSES = [
    ("appender", 0),
    ("appender", 1),
    ("upserter", 0),
    ("compactor", 0),
    ("tagger", 0),
    ("expirer", 0),
    ("reader", 0),
    ("reader", 1),
]


def _process(role: str, index: int, paths: dict[str, str], out: str, run: Any) -> None:
    """One process: wait until every process is up, work until the deadline, report.
    ``run``: the barrier to wait at and the duration."""
    barrier, duration = run
    barrier.wait()
    deadline = time.monotonic() + duration
    try:
        report = ROLES[role](paths, index, deadline)
    except BaseException:
        Path(out).write_text(json.dumps({"error": traceback.format_exc()}))
        raise
    Path(out).write_text(json.dumps(report))


# --- what the tables must hold -------------------------------------------------------------------
class Model:
    """What every snapshot of the two tables holds, from the writers' reports."""

    def __init__(self, reports: dict[tuple[str, int], Report]) -> None:
        appends = [
            c for (role, _), r in reports.items() if role == "appender" for c in r["commits"]
        ]
        (upserter,) = [r for (role, _), r in reports.items() if role == "upserter"]
        (compactor,) = [r for (role, _), r in reports.items() if role == "compactor"]
        (setup,) = [r for (role, _), r in reports.items() if role == "setup"]
        appends += setup["appends"]
        self.appends: dict[int, list[int]] = {}
        for snapshot_id, ids in appends:
            assert snapshot_id not in self.appends, f"two appends reported snapshot {snapshot_id}"
            self.appends[snapshot_id] = ids
        self.upserts: dict[int, dict[int, str | None]] = {}
        for snapshot_id, changes in setup["upserts"] + upserter["commits"]:
            self.upserts[snapshot_id] = {int(k): v for k, v in changes.items()}
        self.compactions = set(compactor["compactions"])
        assert not self.compactions & self.upserts.keys()
        self._cache: dict[tuple[str, int], str] = {}

    def events_ids(self, snapshot_id: int) -> list[int]:
        return sorted(i for s, ids in self.appends.items() if s <= snapshot_id for i in ids)

    def keyed_rows(self, snapshot_id: int) -> list[list[Any]]:
        state: dict[int, str] = {}
        for s in sorted(self.upserts):
            if s > snapshot_id:
                break
            for key, name in self.upserts[s].items():
                if name is None:
                    state.pop(key, None)
                else:
                    state[key] = name
        return sorted([k, v] for k, v in state.items())

    def digest(self, table: str, snapshot_id: int) -> str:
        key = (table, snapshot_id)
        if key not in self._cache:
            values = (
                self.events_ids(snapshot_id) if table == "events" else self.keyed_rows(snapshot_id)
            )
            self._cache[key] = _digest(values)
        return self._cache[key]


def _check_commits(model: Model, tables: dict[str, Table]) -> None:
    """Every snapshot is a reported commit, and the final rows are the commits' rows."""
    events_latest = tables["events"].latest_snapshot()
    keyed_latest = tables["keyed"].latest_snapshot()
    assert events_latest is not None
    assert keyed_latest is not None
    assert sorted(model.appends) == list(range(1, events_latest.id + 1))
    assert sorted(model.upserts.keys() | model.compactions) == list(range(1, keyed_latest.id + 1))
    assert sorted(tables["events"].to_arrow().column("id").to_pylist()) == model.events_ids(
        events_latest.id
    )
    assert _keyed_digest(tables["keyed"].to_arrow()) == model.digest("keyed", keyed_latest.id)


def _check_reads(model: Model, reads: list[Report]) -> dict[str, int]:
    """Every read returned exactly its snapshot's rows; what the slow reads did."""
    seen = {"replanned": 0, "expired-by-id": 0, "tag-gone": 0}
    failures = []
    for read in reads:
        if read.get("skipped"):
            continue
        error = read.get("error")
        if error is None:
            if read["digest"] != model.digest(read["table"], read["read"]):
                failures.append(f"inconsistent read: {read}")
            if read["kind"] != "slow-by-id" and read["read"] != read["planned"]:
                seen["replanned"] += 1
            if read["kind"] == "slow-by-id" and read["read"] != read["planned"]:
                failures.append(f"a read by id read another snapshot: {read}")
        elif error == "SnapshotNotFoundError" and read["kind"] == "slow-by-id":
            seen["expired-by-id"] += 1
        elif error == "TagNotFoundError" and read["kind"] == "tag":
            seen["tag-gone"] += 1  # deleted by the tagger while read
        else:
            failures.append(f"read failed: {read}")
    assert not failures, "\n".join(failures)
    return seen


def _check_roots(model: Model, tables: dict[str, Table]) -> None:
    """Every snapshot and tag left reads its rows and reaches only files on disk."""
    for name, table in tables.items():
        for snapshot in table.snapshots():
            read = table.to_arrow(snapshot_id=snapshot.id)
            assert DIGESTS[name](read) == model.digest(name, snapshot.id), snapshot.id
        for tag in table.list_tags():
            assert DIGESTS[name](table.to_arrow(tag=tag.name)) == model.digest(
                name, tag.snapshot_id
            )
        missing = sorted(p for p in reachable(table) if not os.path.exists(p))
        assert not missing, f"{name}: files a snapshot or tag reaches are gone: {missing}"


# --- the test ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "duration",
    [pytest.param(3.0, id="short"), pytest.param(30.0, id="long", marks=pytest.mark.slow)],
)
def test_writers_compaction_tags_expiration_and_readers_at_once(
    catalog: shoal.Catalog, tmp_path: Path, duration: float
) -> None:
    events_table = catalog.create_table(
        "db.events", EVENTS_SCHEMA, partition_keys=["dt"], options=OPTIONS
    )
    keyed_table = catalog.create_table(
        "db.keyed", EVENTS_SCHEMA, primary_keys=["dt", "id"], options={**OPTIONS, "bucket": "2"}
    )
    paths = {"events": events_table.path, "keyed": keyed_table.path}
    # A first snapshot in each, so that readers have one from the start.
    first = list(range(-5, 0))
    assert events_table.append(events(first, DAY)).id == 1
    assert keyed_table.upsert(rows(list(range(KEYS)), DAY)).id == 1
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(PROCESSES))
    outs = {key: str(tmp_path / f"{key[0]}-{key[1]}.json") for key in PROCESSES}
    processes = [
        context.Process(
            target=_process, args=(role, index, paths, outs[(role, index)], (barrier, duration))
        )
        for role, index in PROCESSES
    ]
    for p in processes:
        p.start()
    for p in processes:
        p.join(timeout=duration + 180)
    reports = {key: json.loads(Path(out).read_text()) for key, out in outs.items()}
    errors = {key: r["error"] for key, r in reports.items() if "error" in r}
    assert not errors, "\n".join(f"{key}: {e}" for key, e in errors.items())
    assert [p.exitcode for p in processes] == [0] * len(processes)

    reports[("setup", 0)] = {
        "appends": [[1, first]],
        "upserts": [[1, {str(k): f"n{k}" for k in range(KEYS)}]],
    }
    model = Model(reports)
    tables = {
        "events": shoal.open_table(paths["events"]),
        "keyed": shoal.open_table(paths["keyed"]),
    }
    _check_commits(model, tables)
    reads = [
        r for (role, _), report in reports.items() if role == "reader" for r in report["reads"]
    ]
    seen = _check_reads(model, reads)
    _check_roots(model, tables)

    # The run did what it is for: expiration deleted snapshots under the readers, and
    # the slow reads met it.
    (expirer,) = [r for (role, _), r in reports.items() if role == "expirer"]
    assert expirer["expired"] > 0
    assert seen["replanned"] > 0, seen
    assert seen["expired-by-id"] > 0, seen


# --- the reader rule, one step at a time ------------------------------------------------------
def _expire_all_but_latest(table: Table) -> None:
    table.expire_snapshots(retain_min=1, retain_max=1)


def test_a_scan_of_the_latest_snapshot_reads_the_new_latest_when_its_own_expired(
    catalog: shoal.Catalog,
) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA)
    table.append(events([1, 2]))
    table.append(events([3]))
    reader = shoal.open_table(table.path)  # its own caches, as in another process
    scan, batches = reader.scan(), reader.scan()
    assert scan.snapshot is not None
    assert scan.snapshot.id == 2
    table.append(events([4]))
    _expire_all_but_latest(table)
    assert [s.id for s in table.snapshots()] == [3]
    assert sorted(scan.to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]
    assert scan.snapshot.id == 3
    assert sum(b.num_rows for b in batches.to_batches()) == 4
    assert batches.snapshot is not None
    assert batches.snapshot.id == 3


def test_a_scan_of_a_snapshot_asked_for_fails_when_it_expired(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA)
    table.append(events([1, 2]))
    table.append(events([3]))
    reader = shoal.open_table(table.path)
    by_id = reader.scan(snapshot_id=2)
    latest = reader.latest_snapshot()
    assert latest is not None
    by_time = reader.scan(timestamp_ms=latest.time_millis)
    table.append(events([4]))
    _expire_all_but_latest(table)
    for scan in (by_id, by_time):
        with pytest.raises(SnapshotNotFoundError, match="expired while it was read") as info:
            scan.to_arrow()
        assert info.value.snapshot_id == 2


def test_a_scan_of_a_tag_deleted_meanwhile_fails_with_tag_not_found(
    catalog: shoal.Catalog,
) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA)
    table.append(events([1, 2]))
    table.create_tag("t")
    table.overwrite(events([3]))  # the tag alone keeps the first file once 1 expired
    _expire_all_but_latest(table)
    scan = shoal.open_table(table.path).scan(tag="t")
    table.delete_tag("t")
    with pytest.raises(TagNotFoundError):
        scan.to_arrow()


def test_a_missing_file_of_a_snapshot_still_there_is_damage(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA)
    table.append(events([1, 2]))
    scan = table.scan()
    (path,) = [p for split in scan.plan() for p in split.file_paths]
    os.remove(path)
    with pytest.raises(CorruptDataFileError):
        scan.to_arrow()


class _StopsAtSnapshotFiles(LocalFileIO):
    """An expiration over this FileIO dies before it deletes the first snapshot file:
    the expired snapshots' files are gone, their snapshot files still there."""

    def delete(self, path: str) -> bool:
        if "/snapshot/snapshot-" in path:
            raise Crash(f"before deleting {path}")
        return super().delete(path)


class _ExpiringUnder(LocalFileIO):
    """The local disk, where the first read of a manifest list first lets another
    writer commit and expire every snapshot but the latest: the snapshot this
    process is working from expires under it, as a concurrent expiration would.
    ``halfway``: the expiration is still at work (it has not deleted the snapshot
    files yet)."""

    def __init__(self, path: str, *, halfway: bool = False) -> None:
        super().__init__()
        self._other = shoal.open_table(path)
        self._expirer = Table._open(_StopsAtSnapshotFiles(), path, path, None)
        self._halfway = halfway
        self.fired = False

    def read_bytes(self, path: str) -> bytes:
        if not self.fired and "/manifest/manifest-list-" in path:
            self.fired = True
            self._other.append(events([100]))
            if self._halfway:
                with pytest.raises(Crash):
                    self._expirer.expire_snapshots(retain_min=1, retain_max=1)
            else:
                self._other.expire_snapshots(retain_min=1, retain_max=1)
        return super().read_bytes(path)


def _open_expiring(path: str, *, halfway: bool = False) -> tuple[Table, _ExpiringUnder]:
    file_io = _ExpiringUnder(path, halfway=halfway)
    return Table._open(file_io, path, path, None), file_io


@pytest.mark.parametrize("halfway", [False, True], ids=["expired", "expiring"])
def test_a_commit_whose_snapshot_expires_while_it_reads_it_commits_on_the_next(
    catalog: shoal.Catalog, halfway: bool
) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA)
    table.append(events([1, 2]))
    table.append(events([3]))
    writer, file_io = _open_expiring(table.path, halfway=halfway)
    snapshot = writer.append(events([4]))
    assert file_io.fired
    assert snapshot.id == 4  # 3 was the latest when it started; the other writer took 3
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3, 4, 100]
    if halfway:  # the expiration runs again and finishes
        table.expire_snapshots(retain_min=1, retain_max=1)
    assert not [p for p in reachable(table) if not os.path.exists(p)]


def test_a_read_of_the_latest_snapshot_plans_again_while_expiration_is_at_work(
    catalog: shoal.Catalog,
) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA)
    table.append(events([1, 2]))
    table.append(events([3]))
    reader, file_io = _open_expiring(table.path, halfway=True)
    scan = reader.scan()
    assert sorted(scan.to_arrow().column("id").to_pylist()) == [1, 2, 3, 100]
    assert file_io.fired
    assert scan.snapshot is not None
    assert scan.snapshot.id == 3


def test_an_upsert_and_a_compaction_whose_snapshot_expires_meanwhile_plan_again(
    catalog: shoal.Catalog,
) -> None:
    table = catalog.create_table(
        "db.k",
        EVENTS_SCHEMA,
        primary_keys=["dt", "id"],
        options={"bucket": "1", "write-only": "true"},
    )
    table.upsert(events([1, 2]))
    table.upsert(events([2, 3]))
    writer, file_io = _open_expiring(table.path)
    writer.upsert(rows([1], DAY, version=1))
    assert file_io.fired
    compactor, file_io = _open_expiring(table.path)
    result = compactor.compact(strategy="full")
    assert file_io.fired
    assert result.snapshot is not None
    assert result.snapshot.commit_kind == "COMPACT"
    read = table.to_arrow()
    names = dict(zip(read.column("id").to_pylist(), read.column("name").to_pylist(), strict=True))
    assert names == {1: "n1v1", 2: "n2", 3: "n3", 100: "n100"}


class _ExpiringBeforePublish(LocalFileIO):
    """The local disk, where the first atomic create of a snapshot file first lets
    another writer commit twice and expire every snapshot but the latest: the id this
    process is about to publish was taken and freed again meanwhile."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._other = shoal.open_table(path)
        self.fired = False

    def try_create(self, path: str, data: bytes) -> bool:
        if not self.fired and "/snapshot/snapshot-" in path:
            self.fired = True
            self._other.append(events([100]))
            self._other.append(events([101]))
            self._other.expire_snapshots(retain_min=1, retain_max=1)
        return super().try_create(path, data)


def test_a_commit_never_takes_an_id_that_expiration_freed(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA)
    table.append(events([1, 2]))
    file_io = _ExpiringBeforePublish(table.path)
    writer = Table._open(file_io, table.path, table.path, None)
    snapshot = writer.append(events([3]))
    assert file_io.fired
    # Snapshot 2 was free when the commit tried it: 2 and 3 had come and 2 had expired.
    assert snapshot.id == 4
    assert [s.id for s in table.snapshots()] == [3, 4]
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3, 100, 101]
