"""Every mutating operation, interrupted at every mutating FileIO call.

For each operation (commits of every kind, compactions, partition drops and
expiration, tags, rollback, snapshot expiration, orphan cleanup) a run without a
fault on a copy of a small table counts its mutating calls and records the state
after it. Then, for each ``n`` and each fault (an ``OSError`` at call ``n``; the
process dying there; dying half-way through writing a metadata file), on a fresh copy
of the table with the fault at call ``n``, the table opened again with a plain FileIO:

(a) reads as exactly the state before or exactly the state after the operation: the
    rows of its latest snapshot and its tags (name and snapshot), never a mix and
    never an error. Rollback is the one operation of two steps a reader can tell
    apart: the latest snapshot switches in one step, and the tags of the snapshots
    it dropped go after it (they stay readable until then);
(b) every snapshot and tag there reads the rows it read before (or, if the
    operation made it, the rows of the uninterrupted run), and every file a
    snapshot or tag reaches is on disk; but for the snapshots an interrupted
    expiration was removing (their files go before their snapshot files, so that
    running it again finds them): those may be unreadable until it runs again;
(c) running the operation again completes it: the state after, and for
    maintenance the snapshots of the uninterrupted run. An operation that cannot
    be repeated (an append, creating, deleting or renaming a tag) runs again only
    when the fault left the state before.

Tasks on shoal's I/O pool run in submission order during a faulty run, so that every
``n`` is one reproducible state (``tests/cleanup/test_crash_cleanup.py`` also runs
the cleanup operations newest first and checks the files they leave).

CI runs a fixed-seed sample of ``n`` per operation and fault; the exhaustive matrix
is marked ``slow``: ``python3 -m pytest tests/reliability/test_fault_matrix.py -m slow``.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

import shoal
from shoal.core.plan import live_entries
from shoal.core.tag_manager import TagManager
from shoal.table import Table
from tests.faults import WRITES, Crash, FaultyFileIO
from tests.reachability import rows_of_every_root
from tests.reliability.helpers import (
    DAY1,
    DAY2,
    DAY4,
    Fault,
    Operation,
    Rows,
    append_table,
    at,
    copy_table,
    count_calls,
    delete_tag,
    deletion_vector_table,
    event_time_table,
    expire,
    expired,
    index_table,
    open_on,
    primary_key_table,
    reachable_from,
    remove_orphans,
    rows,
    run_with_fault,
    sorted_rows,
    tree,
    triggering_table,
    with_orphans,
)

SAMPLE = 3  # values of n per operation and fault in the sampled matrix
FAIL, CRASH, PARTIAL = Fault("fail"), Fault("crash"), Fault("crash", partial=True)


@dataclass(frozen=True)
class State:
    """What a reader of the table sees: the latest snapshot's rows and the tags."""

    rows: Rows
    tags: tuple[tuple[str, int], ...]

    @staticmethod
    def of(table: Table) -> State:
        tags = tuple(sorted((t.name, t.snapshot_id) for t in table.list_tags()))
        return State(sorted_rows(table.to_arrow()), tags)


Between = Callable[[State, State, State], bool]


def _neither(state: State, before: State, after: State) -> bool:
    return False


def _rollback_between(state: State, before: State, after: State) -> bool:
    """Rolled back, with some of the tags of the dropped snapshots still there."""
    return state.rows == after.rows and set(after.tags) <= set(state.tags) <= set(before.tags)


@dataclass(frozen=True)
class Op:
    """One operation of the matrix, on one of the source tables."""

    name: str
    source: str
    run: Operation
    repeatable: bool = True  # running it once more after it completed changes nothing
    commits: bool = True  # makes snapshots (else the snapshots after it are exact)
    rerun: Operation | None = None  # the second run, when it differs from the first
    between: Between = _neither  # a state other than before and after that is allowed
    expires: bool = False  # removes snapshots with their files (see _check_roots)
    faults: tuple[Fault, ...] = (FAIL, CRASH, PARTIAL)
    done: Callable[[Table, Table], None] | None = None  # (c) beyond the state
    # a write to a table with deletion vectors: a snapshot it made reads as before
    # until the compaction after it lifts its level-0 files
    lifts: bool = False

    def __str__(self) -> str:
        return self.name


def _levels(table: Table) -> list[tuple[bytes, int, int, int]]:
    """The live files of the latest snapshot: partition, bucket, level, rows."""
    store = table._store
    latest = table.latest_snapshot()
    assert latest is not None
    return sorted(
        (e.partition, e.bucket, e.file.level, e.file.row_count) for e in live_entries(store, latest)
    )


def _same_levels(table: Table, reference: Table) -> None:
    assert _levels(table) == _levels(reference)


def _same_top_levels(table: Table, reference: Table) -> None:
    """The same levels hold files (an upsert run again adds a level-0 file)."""
    top = table._store.max_level
    assert [f[2] for f in _levels(table) if f[2] == top] == [
        f[2] for f in _levels(reference) if f[2] == top
    ]


def _same_tree(table: Table, reference: Table) -> None:
    assert tree(Path(table.path)) == tree(Path(reference.path))


def _compact(strategy: str, threshold: datetime | None = None) -> Operation:
    def compact(table: Table) -> object:
        return table.compact(strategy=strategy, event_time_threshold=threshold)

    return compact


OPS = [
    Op("append", "append", lambda t: t.append(rows([20, 21], DAY4)), repeatable=False),
    Op(
        "overwrite-partition",
        "append",
        lambda t: t.overwrite(rows([20], DAY1), partition={"dt": DAY1}),
    ),
    Op("overwrite-table", "append", lambda t: t.overwrite(rows([20, 21], DAY2))),
    Op("upsert", "primary-key", lambda t: t.upsert(rows([1, 9], DAY1, version=7))),
    Op("delete", "primary-key", lambda t: t.delete(rows([1, 2], DAY1))),
    # The upsert is followed by a compaction: two commits, each atomic.
    Op(
        "upsert-and-compact",
        "triggering",
        lambda t: t.upsert(rows([1, 2, 3], DAY1, version=2)),
        done=_same_top_levels,
    ),
    Op("compact-full", "primary-key", _compact("full"), done=_same_levels),
    # With deletion vectors: the write's commit, then the compaction that lifts its
    # level-0 files and replaces the bucket's vector file.
    Op(
        "upsert-of-deletion-vectors",
        "deletion-vectors",
        lambda t: t.upsert(rows([1, 9], DAY1, 7)),
        lifts=True,
    ),
    Op(
        "delete-of-deletion-vectors",
        "deletion-vectors",
        lambda t: t.delete(rows([1, 2], DAY1)),
        lifts=True,
    ),
    Op("compact-full-of-deletion-vectors", "deletion-vectors", _compact("full"), done=_same_levels),
    Op("compact-event-time", "event-time", _compact("event-time", at(5)), done=_same_levels),
    Op("drop-partition", "append", lambda t: t.drop_partitions([{"dt": DAY1}])),
    Op(
        "expire-partitions",
        "append",
        lambda t: t.expire_partitions("1 d", now=datetime(2026, 11, 3, 12)),
    ),
    Op("create-tag", "append", lambda t: t.create_tag("new"), repeatable=False, commits=False),
    Op(
        "create-tag-of-expired-snapshot",
        "expired-append",
        lambda t: t.create_tag("new", snapshot_id=11),
        repeatable=False,
        commits=False,
    ),
    Op(
        "delete-tag",
        "append",
        delete_tag("middle"),
        repeatable=False,
        commits=False,
        faults=(FAIL, CRASH),
    ),
    Op(
        "delete-tag-of-expired-snapshot",
        "expired-append",
        delete_tag("middle"),
        repeatable=False,
        commits=False,
        faults=(FAIL, CRASH),
    ),
    Op(
        "rename-tag",
        "append",
        lambda t: t.rename_tag("middle", "renamed"),
        repeatable=False,
        commits=False,
        faults=(FAIL, CRASH),
    ),
    Op(
        "rollback",
        "append",
        lambda t: t.rollback_to(snapshot_id=8),
        commits=False,
        between=_rollback_between,
    ),
    Op(
        "rollback-to-tag-of-expired-snapshot",
        "expired-append",
        lambda t: t.rollback_to(tag="middle"),
        commits=False,
        between=_rollback_between,
    ),
    Op("expire-snapshots", "append", expire, commits=False, expires=True, done=_same_tree),
    Op(
        "expire-snapshots-primary-key",
        "primary-key",
        expire,
        commits=False,
        expires=True,
        done=_same_tree,
    ),
    Op(
        "expire-snapshots-deletion-vectors",
        "deletion-vectors",
        expire,
        commits=False,
        expires=True,
        done=_same_tree,
    ),
    Op(
        "remove-orphan-files-deletion-vectors",
        "deletion-vector-orphans",
        remove_orphans,
        commits=False,
        rerun=lambda t: remove_orphans(t, age=True),
        done=_same_tree,
        faults=(FAIL, CRASH),
    ),
    Op(
        "expire-snapshots-index-files",
        "index",
        expire,
        commits=False,
        expires=True,
        done=_same_tree,
    ),
    Op(
        "delete-tag-of-expired-snapshot-index-files",
        "expired-index",
        delete_tag("first"),
        repeatable=False,
        commits=False,
        faults=(FAIL, CRASH),
    ),
    Op(
        "rollback-to-tag-of-expired-snapshot-index-files",
        "expired-index",
        lambda t: t.rollback_to(tag="first"),
        commits=False,
        between=_rollback_between,
    ),
    Op(
        "remove-orphan-files-index-files",
        "index-orphans",
        remove_orphans,
        commits=False,
        rerun=lambda t: remove_orphans(t, age=True),
        done=_same_tree,
        faults=(FAIL, CRASH),
    ),
    Op(
        "remove-orphan-files",
        "orphans",
        remove_orphans,
        commits=False,
        rerun=lambda t: remove_orphans(t, age=True),
        done=_same_tree,
        faults=(FAIL, CRASH),
    ),
]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sources")
    append = append_table(root / "append")
    index = index_table(root / "index")
    vectors = deletion_vector_table(root / "deletion-vectors")
    return {
        "deletion-vectors": vectors,
        "deletion-vector-orphans": with_orphans(
            vectors, root / "dv-scratch", tag="before-compaction"
        ),
        "index": index,
        "expired-index": expired(index, root / "expired-index"),
        "index-orphans": with_orphans(index, root / "index-scratch", tag="first"),
        "append": append,
        "primary-key": primary_key_table(root / "primary-key"),
        "event-time": event_time_table(root / "event-time"),
        "triggering": triggering_table(root / "triggering"),
        "expired-append": expired(append, root / "expired-append"),
        "orphans": with_orphans(append, root / "scratch"),
    }


@dataclass(frozen=True)
class Reference:
    """The operation run once without a fault."""

    before: State
    after: State
    roots: dict[str, Rows]  # every snapshot and tag before, and those the run made
    snapshots: list[int]  # the snapshot ids after it
    old_roots: frozenset[str]  # the snapshots and tags before it
    calls: list[tuple[str, str]]
    table: Table  # the table after it

    @staticmethod
    def of(op: Op, source: Path, scratch: Path) -> Reference:
        calls = count_calls(source, op.run, scratch / "count")
        original = shoal.open_table(str(source))
        done = copy_table(source, scratch / "reference")
        op.run(shoal.open_table(str(done)))
        table = shoal.open_table(str(done))
        before = rows_of_every_root(original)
        after = rows_of_every_root(table)
        for key in before.keys() & after.keys():
            assert before[key] == after[key], f"{op}: the run changed what {key} reads"
        return Reference(
            before=State.of(original),
            after=State.of(table),
            roots={**after, **before},
            snapshots=[s.id for s in table.snapshots()],
            old_roots=frozenset(before),
            calls=calls,
            table=table,
        )


def _check_roots(table: Table, op: Op, reference: Reference, where: str) -> None:
    """(b): every snapshot and tag reads as it did, and reaches only files on disk.

    Expiration deletes the files of the snapshots it expires before their snapshot
    files (so that running it again finds them): a snapshot it was expiring when it
    stopped may be unreadable until it runs again. Every snapshot it keeps reads."""
    snapshots = [s.id for s in table.snapshots()]
    if op.expires:
        snapshots = [i for i in snapshots if i in reference.snapshots]
    reads = {f"s{i}": table.to_arrow(snapshot_id=i) for i in snapshots}
    reads.update({f"t:{t.name}": table.to_arrow(tag=t.name) for t in table.list_tags()})
    for key, read in reads.items():
        allowed = [reference.roots.get(key, reference.after.rows)]
        if op.lifts and key not in reference.old_roots:
            allowed += [reference.before.rows, reference.after.rows]
        assert sorted_rows(read) in allowed, f"{where}: {key} reads differently"
    tagged = [s for _, s in TagManager(table._store.file_io, table._store.paths).tags()]
    roots = [table.snapshot(i) for i in snapshots] + tagged
    missing = sorted(p for p in reachable_from(table, roots) if not os.path.exists(p))
    assert not missing, f"{where}: files a snapshot or tag reaches are gone: {missing}"


def _one_fault(
    op: Op, source: Path, reference: Reference, fault: Fault, *, n: int, work: Path
) -> None:
    copy_table(source, work)
    file_io = FaultyFileIO(n, fault.mode, partial=fault.partial)
    outcome = run_with_fault(work, op.run, file_io, fault)
    method, path = file_io.log[n - 1]
    where = (
        f"{op} {fault} at call {n}/{len(reference.calls)} ({method} "
        f"{os.path.relpath(path, work)}; ended with {type(outcome).__name__})"
    )
    # (a)
    table = shoal.open_table(str(work))
    state = State.of(table)
    before, after = reference.before, reference.after
    assert state in (before, after) or op.between(state, before, after), (
        f"{where}: the table reads neither as before nor as after: "
        f"{len(state.rows)} rows, tags {state.tags}"
    )
    # (b)
    _check_roots(table, op, reference, where)
    # (c)
    if op.repeatable or state != after:
        (op.rerun or op.run)(shoal.open_table(str(work)))
    table = shoal.open_table(str(work))
    assert State.of(table) == after, f"{where}: running it again did not complete it"
    if not op.commits:
        assert [s.id for s in table.snapshots()] == reference.snapshots, where
    if op.done is not None:
        try:
            op.done(table, reference.table)
        except AssertionError as exc:
            raise AssertionError(f"{where}: not done after running it again: {exc}") from None
    _check_roots(table, op, reference, f"{where}, run again")


def _candidates(reference: Reference, fault: Fault) -> list[int]:
    """The calls a fault may hit: a partial write needs a write."""
    return [
        n
        for n, (method, _) in enumerate(reference.calls, 1)
        if not fault.partial or method in WRITES
    ]


def _sweep(op: Op, fault: Fault, sources: dict[str, Path], tmp_path: Path, *, sample: bool) -> None:
    source = sources[op.source]
    reference = Reference.of(op, source, tmp_path)
    candidates = _candidates(reference, fault)
    assert candidates, f"{op} makes no call a {fault} fault can hit"
    if sample and len(candidates) > SAMPLE:
        candidates = sorted(random.Random(f"{op}/{fault}").sample(candidates, SAMPLE))
    failures = []
    for n in candidates:
        work = tmp_path / f"fault-{n}"
        try:
            _one_fault(op, source, reference, fault, n=n, work=work)
        except AssertionError as exc:
            failures.append(str(exc))
        except Exception as exc:  # an error reading or running again: (a) or (c) broken
            failures.append(f"{op} {fault} at call {n}: {exc!r}")
        shutil.rmtree(work, ignore_errors=True)
    assert not failures, "\n".join(failures)


MATRIX = [pytest.param(op, fault, id=f"{op}-{fault}") for op in OPS for fault in op.faults]


@pytest.mark.parametrize(("op", "fault"), MATRIX)
def test_fault_sample(op: Op, fault: Fault, sources: dict[str, Path], tmp_path: Path) -> None:
    _sweep(op, fault, sources, tmp_path, sample=True)


@pytest.mark.slow
@pytest.mark.parametrize(("op", "fault"), MATRIX)
def test_fault_exhaustive(op: Op, fault: Fault, sources: dict[str, Path], tmp_path: Path) -> None:
    _sweep(op, fault, sources, tmp_path, sample=False)


def test_every_operation_is_in_the_matrix() -> None:
    """The operations of the public table that change it, each at least once."""
    covered = {op.name.split("-of-")[0] for op in OPS}
    assert {
        "append",
        "overwrite-partition",
        "overwrite-table",
        "upsert",
        "delete",
        "compact-full",
        "compact-event-time",
        "drop-partition",
        "expire-partitions",
        "create-tag",
        "delete-tag",
        "rename-tag",
        "rollback",
        "expire-snapshots",
        "remove-orphan-files",
    } <= covered


def test_the_sources_hold_what_the_operations_need(sources: dict[str, Path]) -> None:
    event_time = shoal.open_table(str(sources["event-time"]))
    assert len(event_time.to_arrow()) == 7
    expired_append = shoal.open_table(str(sources["expired-append"]))
    assert [s.id for s in expired_append.snapshots()] == [10, 11, 12]
    assert {t.name: t.snapshot_id for t in expired_append.list_tags()}["middle"] == 5


def test_time_travel_across_the_gap_an_interrupted_rollback_leaves(
    sources: dict[str, Path], tmp_path: Path
) -> None:
    """Rollback deletes the later snapshots oldest first: stopped half-way, it leaves
    a gap in the ids, which time travel by timestamp passes over."""
    work = copy_table(sources["append"], tmp_path / "work")
    original = shoal.open_table(str(work))
    times = {s.id: s.time_millis for s in original.snapshots()}
    expected = {i: sorted_rows(original.to_arrow(snapshot_id=i)) for i in (8, 10, 12)}
    with pytest.raises(Crash):
        open_on(FaultyFileIO(3), work).rollback_to(snapshot_id=8)  # 9 and 10 are gone
    table = shoal.open_table(str(work))
    assert [s.id for s in table.snapshots()] == [*range(1, 9), 11, 12]
    assert sorted_rows(table.to_arrow()) == expected[12]
    assert sorted_rows(table.to_arrow(timestamp_ms=times[8])) == expected[8]
    assert sorted_rows(table.to_arrow(timestamp_ms=times[10])) == expected[8]
    assert sorted_rows(table.to_arrow(timestamp_ms=times[12])) == expected[12]
