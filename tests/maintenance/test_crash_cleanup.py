"""Crashes and I/O failures in the operations that delete files.

Each test builds a small table once (several snapshots, overwrites, a dropped
partition, tags, one of them on a snapshot that expires), runs the operation once
without a fault to count its mutating FileIO calls, and then, for every ``n`` up to
that count, runs it on a fresh copy of the table with a fault at call ``n``: an
``OSError`` ("fail") or the process dying there ("crash", see ``tests/faults.py``).
The table is then opened again with the plain FileIO, and:

(a) every snapshot the operation keeps, and every tag still there, reads exactly the
    rows it read before;
(b) running the operation again completes it, after which the table holds the files
    and directories of an uninterrupted run. Tag deletion removes the tag file first,
    so after a fault past that point running it again finds no tag: the files it left
    behind must be ones no snapshot or tag references, and orphan cleanup removes
    them, but for the data files that a DELETE entry of a manifest in use still names
    (orphan cleanup counts any entry as a use).

Tasks on shoal's I/O pool run in a fixed order during a faulty run, so that every
``n`` reproduces one exact state: in submission order, and, for crashes, newest first
too (a real pool may finish a batch of deletions in any order, so a crash may leave
any part of a batch done). A failure leaves the same state in both orders: the rest
of the batch runs.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from shoal.errors import ShoalError, TagNotFoundError
from shoal.io import parallel_map
from shoal.maintenance.orphans import OrphanFilesResult
from shoal.spec import manifest as M
from shoal.table.paths import data_file_path
from shoal.table.scan import read_manifest_metas
from shoal.table.snapshot_manager import EARLIEST, LATEST
from shoal.table.table import Table
from tests.conftest import EVENTS_SCHEMA, events
from tests.faults import WRITES, Crash, FaultyFileIO, Mode, ordered_io_pool
from tests.reachability import reachable, roots, rows_of_every_root

Operation = Callable[[Table], object]
Rows = dict[str, list[dict[str, object]]]

DAY1, DAY2, DAY3, DAY4 = "2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"
# Manifests merged often, so that expiration and tag deletion also delete manifests.
MERGE_MANIFESTS = {"manifest.merge-min-count": "2"}


# --- the tables --------------------------------------------------------------------------------
def _rows(ids: list[int], dt: str, version: int = 0) -> pa.Table:
    """Rows of EVENTS_SCHEMA; ``version`` changes the values an upsert writes."""
    rows = events(ids, dt)
    if version:
        names = pa.array([f"n{i}v{version}" for i in ids])
        rows = rows.set_column(rows.schema.get_field_index("name"), "name", names)
    return rows


def _append_table(root: Path) -> Path:
    """Twelve snapshots; tags on snapshots 2 and 5 (expired by ``_expire``) and 10.

    Of the files deleted by the expired snapshots, some stay for a tag and some go,
    among them all of partition DAY4, whose directories go too."""
    t = shoal.Catalog(str(root)).create_table(
        "db.t",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        options={**MERGE_MANIFESTS, "snapshot.clean-empty-directories": "true"},
    )
    t.append(pa.concat_tables([_rows([1, 2], DAY1), _rows([3], DAY2)]))
    t.append(_rows([4], DAY2))
    t.create_tag("first")
    t.overwrite(_rows([5], DAY1), partition={"dt": DAY1})  # [1, 2] stay for "first"
    t.append(_rows([6], DAY3))
    t.overwrite(_rows([7], DAY3), partition={"dt": DAY3})  # [6] goes
    t.create_tag("middle")
    t.drop_partitions([{"dt": DAY2}])  # [3], [4] stay for "middle"
    t.append(pa.concat_tables([_rows([8, 9], DAY1), _rows([16], DAY4)]))
    t.drop_partitions([{"dt": DAY4}])  # [16] goes
    t.overwrite(_rows([10], DAY1), partition={"dt": DAY1})  # [5] stays, [8, 9] go
    t.append(pa.concat_tables([_rows([11], DAY2), _rows([12], DAY3)]))
    t.create_tag("recent")
    t.overwrite(pa.concat_tables([_rows([13], DAY1), _rows([14], DAY3)]))
    t.append(_rows([15], DAY2))
    assert t.latest_snapshot().id == 12
    return Path(t.path)


def _primary_key_table(root: Path) -> Path:
    """Upserts, deletes, full compactions, a dropped partition; tags on snapshots 2
    and 5 (expired by ``_expire``) and 10."""
    t = shoal.Catalog(str(root)).create_table(
        "db.pk",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={**MERGE_MANIFESTS, "bucket": "2"},
    )
    t.upsert(_rows([1, 2, 3, 4], DAY1, version=1))
    t.upsert(pa.concat_tables([_rows([2, 5], DAY1, version=2), _rows([6], DAY2)]))
    t.create_tag("before-compaction")
    t.compact(strategy="full")
    t.upsert(_rows([1], DAY1, version=3))
    t.delete(_rows([3], DAY1))
    t.create_tag("after-delete")
    t.drop_partitions([{"dt": DAY2}])
    t.upsert(_rows([7], DAY2, version=4))
    t.upsert(_rows([4], DAY1, version=6))
    t.compact(strategy="full")  # the files of the last two upserts go with it
    t.upsert(_rows([8], DAY1))
    t.create_tag("recent")
    t.upsert(_rows([2], DAY1, version=5))
    assert t.latest_snapshot().id == 11
    return Path(t.path)


# --- the operations ----------------------------------------------------------------------------
def _expire(table: Table) -> object:
    return table.expire_snapshots(retain_max=3, older_than=datetime.now() + timedelta(seconds=1))


def _delete_tag(name: str) -> Operation:
    def delete(table: Table) -> None:
        table.delete_tag(name)

    return delete


def _delete_tag_again(name: str) -> Operation:
    """Deleting the tag again: TagNotFoundError once its file is gone."""

    def delete(table: Table) -> None:
        if any(tag.name == name for tag in table.list_tags()):
            table.delete_tag(name)
        else:
            with pytest.raises(TagNotFoundError):
                table.delete_tag(name)

    return delete


def _expired(source: Path, tmp_path: Path) -> Path:
    """A copy of ``source`` after an uninterrupted ``_expire``."""
    target = _copy(source, tmp_path / "expired")
    _expire(shoal.open_table(str(target)))
    return target


# --- what a run leaves ---------------------------------------------------------------------------
def _copy(source: Path, target: Path) -> Path:
    """A copy of the table at ``source``. Files that shoal never rewrites in place are
    hard links, which is much faster; the hints, rewritten in place, are copied."""
    shutil.copytree(source, target, copy_function=_link_unless_hint)
    return target


def _link_unless_hint(source: str, target: str) -> None:
    if os.path.basename(source) in (EARLIEST, LATEST):
        shutil.copy2(source, target)
    else:
        os.link(source, target)


def _tree(root: Path) -> set[str]:
    """Every file and directory under ``root``, relative (directories end in "/")."""
    out: set[str] = set()
    for directory, dirs, files in os.walk(root):
        relative = os.path.relpath(directory, root)
        base = "" if relative == "." else f"{relative}/"
        out.update(f"{base}{d}/" for d in dirs)
        out.update(f"{base}{f}" for f in files)
    return out


def _open_on(file_io: FaultyFileIO, path: Path) -> Table:
    return Table._open(file_io, str(path), str(path), None)


@dataclass(frozen=True)
class Case:
    """A table, its rows before the operation, and what an uninterrupted run leaves."""

    source: Path  # the table before the operation, never changed
    rows: Rows  # sorted rows of every snapshot ("s<id>") and tag ("t:<name>") before
    kept_snapshots: list[int]  # the snapshots the operation keeps
    kept_tags: set[str]  # the tags the operation keeps
    latest: int
    tree: set[str]  # _tree() after an uninterrupted run
    calls: list[tuple[str, str]]  # mutating FileIO calls of an uninterrupted run

    @staticmethod
    def prepare(source: Path, operation: Operation, scratch: Path) -> Case:
        """Run ``operation`` once without a fault on a copy of ``source``."""
        before = shoal.open_table(str(source))
        rows = rows_of_every_root(before)
        counter = FaultyFileIO()
        reference = _copy(source, scratch)
        operation(_open_on(counter, reference))
        after = shoal.open_table(str(reference))
        case = Case(
            source=source,
            rows=rows,
            kept_snapshots=[s.id for s in after.snapshots()],
            kept_tags={tag.name for tag in after.list_tags()},
            latest=before.latest_snapshot().id,
            tree=_tree(reference),
            calls=[(method, os.path.relpath(path, reference)) for method, path in counter.log],
        )
        assert case.calls
        # The uninterrupted run itself keeps every remaining snapshot and tag exact.
        assert rows_of_every_root(after) == {k: rows[k] for k in rows_of_every_root(after)}
        shutil.rmtree(scratch)
        return case


@dataclass(frozen=True)
class Fault:
    mode: Mode
    reverse: bool = False  # the I/O pool runs each batch newest first
    partial: bool = False  # a crashing write writes half its bytes first

    def __str__(self) -> str:
        return "-".join([self.mode] + ["reversed"] * self.reverse + ["partial"] * self.partial)


FAULTS = [Fault("fail"), Fault("crash"), Fault("crash", reverse=True)]


def _run_with_fault(
    work: Path, operation: Operation, file_io: FaultyFileIO, fault: Fault
) -> BaseException | None:
    """Run ``operation`` over ``file_io`` on ``work``; the exception it ended with."""
    table = _open_on(file_io, work)
    outcome: BaseException | None = None
    with ordered_io_pool(reverse=fault.reverse):
        try:
            operation(table)
        except (Crash, OSError, ShoalError) as exc:
            outcome = exc
    file_io.settle()
    assert file_io.fired, f"the operation made fewer than {file_io.fail_at} mutating calls"
    if file_io.mode == "crash":
        # A crash is not an error any code path may handle: it must end the operation.
        assert isinstance(outcome, Crash), f"the operation survived a crash: {outcome!r}"
    return outcome


def _check_reads(case: Case, table: Table, where: str) -> None:
    """(a): kept snapshots and present tags read as before; kept tags are present."""
    assert table.latest_snapshot().id == case.latest, where
    tags = {tag.name for tag in table.list_tags()}
    assert case.kept_tags <= tags, where
    for snapshot_id in case.kept_snapshots:
        rows = table.to_arrow(snapshot_id=snapshot_id)
        assert _sorted(rows) == case.rows[f"s{snapshot_id}"], f"{where}: snapshot {snapshot_id}"
    for name in tags:
        assert _sorted(table.to_arrow(tag=name)) == case.rows[f"t:{name}"], f"{where}: tag {name}"


def _sorted(rows: pa.Table) -> list[dict[str, object]]:
    return rows.sort_by([(n, "ascending") for n in rows.column_names]).to_pylist()


def _check_leftovers(case: Case, work: Path, where: str) -> None:
    """(b) where a fault may leave files behind: every file an uninterrupted run keeps
    is there, and the others are unreferenced: orphan cleanup removes them, except the
    data files that a DELETE entry of a manifest still in use names (orphan cleanup
    counts those as used, as Paimon's does, until manifest compaction drops the entry)."""
    tree = _tree(work)
    assert case.tree <= tree, f"{where}: missing {sorted(case.tree - tree)}"
    leftovers = _files(tree - case.tree)
    table = shoal.open_table(str(work))
    referenced = {os.path.relpath(p, work) for p in reachable(table)}
    assert not leftovers & referenced, f"{where}: referenced {sorted(leftovers & referenced)}"
    named = _named_by_delete_entries(table)
    result = _remove_orphans(table, age=True)
    removed = {os.path.relpath(p, work) for p in result.paths}
    assert leftovers - named == removed - named, where
    assert _files(_tree(work)) == _files(case.tree) | (leftovers - removed), where


def _named_by_delete_entries(table: Table) -> set[str]:
    """The data files that DELETE entries of the manifests of snapshots and tags name
    (relative paths)."""
    store = table._store
    out = set()
    for root in roots(table):
        for meta in read_manifest_metas(store, root):
            for entry in store.manifests.read_manifest(meta.file_name):
                if entry.kind == M.KIND_DELETE:
                    bucket = store.paths.bucket_dir(
                        store.partitions.path(entry.partition), entry.bucket
                    )
                    path = data_file_path(bucket, entry.file)
                    out.add(os.path.relpath(path, table.path))
    return out


def _files(tree: set[str]) -> set[str]:
    return {f for f in tree if not f.endswith("/")}


def _remove_orphans(table: Table, *, age: bool = False) -> OrphanFilesResult:
    """Orphan cleanup with the threshold at now; ``age`` makes every file and directory
    an hour old first, as if the run came later (a directory that a deletion touched is
    new again, and cleanup leaves new directories alone)."""
    if age:
        _age_tree(Path(table.path))
    return table.remove_orphan_files(older_than=datetime.now())


def _age_tree(root: Path) -> None:
    """Make every file and directory under ``root`` an hour old."""
    an_hour_ago = time.time() - 3600
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            os.utime(os.path.join(directory, name), (an_hour_ago, an_hour_ago))


def _sweep(
    case: Case,
    operation: Operation,
    scratch: Path,
    fault: Fault,
    *,
    rerun: Operation | None = None,
    leftovers_allowed: bool = False,
    only: Callable[[str], bool] = lambda method: True,
) -> None:
    """For every mutating call ``n`` of ``operation`` (of the methods ``only`` accepts):
    a fault at ``n``, then (a) and (b) on the table it leaves. ``rerun`` is the second
    run (default: the same). Fails with every ``n`` that went wrong, not only the first."""
    failures = []
    faults = [n for n, (method, _) in enumerate(case.calls, 1) if only(method)]
    assert faults
    for n in faults:
        work = _copy(case.source, scratch / f"fault-{n}")
        file_io = FaultyFileIO(n, fault.mode, partial=fault.partial)
        outcome = _run_with_fault(work, operation, file_io, fault)
        method, path = file_io.log[n - 1]
        where = (
            f"{fault} at call {n}/{len(case.calls)} ({method} {os.path.relpath(path, work)}; "
            f"ended with {type(outcome).__name__})"
        )
        try:
            _check(case, work, rerun or operation, where, leftovers_allowed=leftovers_allowed)
        except (AssertionError, ShoalError, OSError) as exc:
            failures.append(f"{exc}" if isinstance(exc, AssertionError) else f"{where}: {exc!r}")
        shutil.rmtree(work)
    assert not failures, "\n".join(failures)


def _check(
    case: Case, work: Path, rerun: Operation, where: str, *, leftovers_allowed: bool
) -> None:
    table = shoal.open_table(str(work))
    _check_reads(case, table, where)
    rerun(table)
    if leftovers_allowed:
        _check_leftovers(case, work, where)
        return
    tree = _tree(work)
    assert tree == case.tree, (
        f"{where}: left {sorted(tree - case.tree)}, lost {sorted(case.tree - tree)}"
    )


# --- the fault injection itself ------------------------------------------------------------------
def test_a_crash_on_a_pool_thread_reaches_the_caller_and_nothing_runs_after_it(
    tmp_path: Path,
) -> None:
    paths = [str(tmp_path / f"f{i}") for i in range(40)]
    for path in paths:
        Path(path).touch()
    file_io = FaultyFileIO(5)
    with pytest.raises(Crash):
        parallel_map(file_io.delete, paths)  # the real shared pool
    file_io.settle()
    assert file_io.crashed
    assert file_io.calls == 5  # later calls were refused, not counted
    assert sum(not os.path.exists(p) for p in paths) == 4
    with pytest.raises(Crash):
        file_io.write_bytes(str(tmp_path / "after"), b"x")
    assert not (tmp_path / "after").exists()


@pytest.mark.parametrize("method", ["try_create", "overwrite"])
def test_a_partial_atomic_write_never_becomes_visible(tmp_path: Path, method: str) -> None:
    target = tmp_path / "snapshot-1"
    if method == "overwrite":
        target.write_bytes(b"old")
    file_io = FaultyFileIO(1, "crash", partial=True)
    with pytest.raises(Crash):
        getattr(file_io, method)(str(target), b"0123456789")
    assert target.exists() == (method == "overwrite")
    if method == "overwrite":
        assert target.read_bytes() == b"old"
    [temporary] = [p for p in tmp_path.iterdir() if p != target]
    assert temporary.name.startswith(".snapshot-1.")
    assert temporary.read_bytes() == b"01234"


def test_a_partial_write_writes_half_then_crashes(tmp_path: Path) -> None:
    file_io = FaultyFileIO(2, "crash", partial=True)
    file_io.write_bytes(str(tmp_path / "a"), b"0123")
    with pytest.raises(Crash):
        file_io.write_bytes(str(tmp_path / "b"), b"0123")
    assert (tmp_path / "a").read_bytes() == b"0123"
    assert (tmp_path / "b").read_bytes() == b"01"


def test_a_failure_is_one_ordinary_error(tmp_path: Path) -> None:
    file_io = FaultyFileIO(1, "fail")
    with pytest.raises(OSError, match="injected"):
        file_io.write_bytes(str(tmp_path / "a"), b"x")
    file_io.write_bytes(str(tmp_path / "a"), b"y")  # the next call works
    assert (tmp_path / "a").read_bytes() == b"y"
    assert (file_io.calls, file_io.crashed) == (2, False)


# --- expiration ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def append_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _append_table(tmp_path_factory.mktemp("append"))


@pytest.fixture(scope="module")
def primary_key_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _primary_key_table(tmp_path_factory.mktemp("pk"))


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_expire_snapshots_of_an_append_table(
    append_source: Path, tmp_path: Path, fault: Fault
) -> None:
    case = Case.prepare(append_source, _expire, tmp_path / "reference")
    assert case.kept_snapshots == [10, 11, 12]
    assert case.kept_tags == {"first", "middle", "recent"}
    _sweep(case, _expire, tmp_path, fault)


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_expire_snapshots_of_a_primary_key_table(
    primary_key_source: Path, tmp_path: Path, fault: Fault
) -> None:
    case = Case.prepare(primary_key_source, _expire, tmp_path / "reference")
    assert case.kept_snapshots == [9, 10, 11]
    assert case.kept_tags == {"before-compaction", "after-delete", "recent"}
    _sweep(case, _expire, tmp_path, fault)


def test_expire_snapshots_with_partial_writes(append_source: Path, tmp_path: Path) -> None:
    case = Case.prepare(append_source, _expire, tmp_path / "reference")
    fault = Fault("crash", partial=True)
    _sweep(case, _expire, tmp_path, fault, only=WRITES.__contains__)  # the EARLIEST hint


def test_a_commit_cut_short_by_a_partial_write_is_invisible(
    append_source: Path, tmp_path: Path
) -> None:
    """Not a cleanup, but what cleanup runs after: a commit dying half-way through any
    of its writes (data file, manifest, manifest list, snapshot, hint) leaves the table
    as it was or fully committed, never a half-written snapshot; the next commit works."""
    new_rows = _rows([20, 21], DAY4)
    source = shoal.open_table(str(append_source))
    before = rows_of_every_root(source)
    after = _sorted(pa.concat_tables([source.to_arrow(), new_rows]))
    counter = FaultyFileIO()
    _open_on(counter, _copy(append_source, tmp_path / "reference")).append(new_rows)
    assert {"open_output_stream", "write_bytes", "try_create"} <= {m for m, _ in counter.log}
    for n in range(1, counter.calls + 1):
        work = _copy(append_source, tmp_path / f"fault-{n}")
        file_io = FaultyFileIO(n, "crash", partial=True)
        with pytest.raises(Crash):
            _open_on(file_io, work).append(new_rows)
        file_io.settle()
        table = shoal.open_table(str(work))
        committed = table.latest_snapshot().id == 13
        assert rows_of_every_root(table) == {**before, **({"s13": after} if committed else {})}, n
        if not committed:
            table.append(new_rows)
            assert _sorted(shoal.open_table(str(work)).to_arrow()) == after, n
        shutil.rmtree(work)


# --- tag deletion --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sources(append_source: Path, primary_key_source: Path) -> dict[str, Path]:
    return {"append": append_source, "primary-key": primary_key_source}


@pytest.mark.parametrize("fault", FAULTS, ids=str)
@pytest.mark.parametrize(
    "target", [("append", "middle"), ("primary-key", "after-delete")], ids="-".join
)
def test_delete_tag_of_an_expired_snapshot(
    sources: dict[str, Path], tmp_path: Path, target: tuple[str, str], fault: Fault
) -> None:
    table, tag = target
    source = _expired(sources[table], tmp_path)
    case = Case.prepare(source, _delete_tag(tag), tmp_path / "reference")
    assert tag not in case.kept_tags
    assert len(case.calls) > 3  # the tag file, data files and manifests
    _sweep(
        case,
        _delete_tag(tag),
        tmp_path,
        fault,
        rerun=_delete_tag_again(tag),
        leftovers_allowed=True,
    )


# --- orphan cleanup ------------------------------------------------------------------------------
def _with_orphans(source: Path, tmp_path: Path) -> Path:
    """A copy of ``source`` after ``_expire``, with the orphans of an interrupted tag
    deletion and of a commit that died before publishing its snapshot; everything
    under it an hour old."""
    target = _expired(source, tmp_path)
    with pytest.raises(Crash):  # the tag file goes, its files stay
        _delete_tag("middle")(_open_on(FaultyFileIO(2), target))
    counter = FaultyFileIO()
    scratch = _copy(target, tmp_path / "commit")
    _open_on(counter, scratch).append(_rows([30], DAY1))
    shutil.rmtree(scratch)
    publish = [method for method, _ in counter.log].index("try_create") + 1
    with pytest.raises(Crash):  # a data file, manifests and lists, but no snapshot
        _open_on(FaultyFileIO(publish), target).append(_rows([30], DAY1))
    _age_tree(target)
    return target


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_remove_orphan_files(append_source: Path, tmp_path: Path, fault: Fault) -> None:
    source = _with_orphans(append_source, tmp_path)
    case = Case.prepare(source, _remove_orphans, tmp_path / "reference")
    assert case.kept_snapshots == [10, 11, 12]
    assert case.kept_tags == {"first", "recent"}
    assert len(case.calls) >= 8  # the tag's data file, manifests and lists, the commit's
    _sweep(case, _remove_orphans, tmp_path, fault, rerun=lambda t: _remove_orphans(t, age=True))
