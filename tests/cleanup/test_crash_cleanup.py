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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from shoal import options as O
from shoal.core.paths import data_file_path
from shoal.core.plan import read_manifest_metas
from shoal.errors import ShoalError, TagNotFoundError
from shoal.format import manifest as M
from shoal.io import parallel_map
from shoal.table import Table
from tests.faults import WRITES, Crash, FaultyFileIO
from tests.reachability import reachable, roots, rows_of_every_root
from tests.reliability.helpers import (
    DAY1,
    DAY4,
    Fault,
    Operation,
    append_table,
    copy_table,
    delete_tag,
    expire,
    expired,
    index_table,
    only_files,
    open_on,
    primary_key_table,
    remove_orphans,
    rows,
    run_with_fault,
    sorted_rows,
    tree,
    with_orphans,
)

Rows = dict[str, list[dict[str, object]]]


# --- the operations ----------------------------------------------------------------------------
def _delete_tag_again(name: str) -> Operation:
    """Deleting the tag again: TagNotFoundError once its file is gone."""

    def delete(table: Table) -> None:
        if any(tag.name == name for tag in table.list_tags()):
            table.delete_tag(name)
        else:
            with pytest.raises(TagNotFoundError):
                table.delete_tag(name)

    return delete


# --- what a run leaves ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """A table, its rows before the operation, and what an uninterrupted run leaves."""

    source: Path  # the table before the operation, never changed
    rows: Rows  # sorted rows of every snapshot ("s<id>") and tag ("t:<name>") before
    kept_snapshots: list[int]  # the snapshots the operation keeps
    kept_tags: set[str]  # the tags the operation keeps
    latest: int
    tree: set[str]  # tree() after an uninterrupted run
    calls: list[tuple[str, str]]  # mutating FileIO calls of an uninterrupted run
    # The changelog of every snapshot and long-lived changelog before, by id, and the
    # long-lived changelogs an uninterrupted run keeps.
    changelogs: dict[int, list[dict[str, object]]] = field(default_factory=dict)
    kept_changelogs: list[int] = field(default_factory=list)

    @staticmethod
    def prepare(source: Path, operation: Operation, scratch: Path) -> Case:
        """Run ``operation`` once without a fault on a copy of ``source``."""
        before = shoal.open_table(str(source))
        rows = rows_of_every_root(before)
        counter = FaultyFileIO()
        reference = copy_table(source, scratch)
        operation(open_on(counter, reference))
        after = shoal.open_table(str(reference))
        case = Case(
            source=source,
            rows=rows,
            kept_snapshots=[s.id for s in after.snapshots()],
            kept_tags={tag.name for tag in after.list_tags()},
            latest=before.latest_snapshot().id,
            tree=tree(reference),
            calls=[(method, os.path.relpath(path, reference)) for method, path in counter.log],
            changelogs=_changelog_rows(before),
            kept_changelogs=after._store.changelogs.list_ids(),
        )
        assert case.calls
        # The uninterrupted run itself keeps every remaining snapshot and tag exact.
        assert rows_of_every_root(after) == {k: rows[k] for k in rows_of_every_root(after)}
        shutil.rmtree(scratch)
        return case


FAULTS = [Fault("fail"), Fault("crash"), Fault("crash", reverse=True)]


def _check_reads(case: Case, table: Table, where: str) -> None:
    """(a): kept snapshots and present tags read as before; kept tags are present."""
    assert table.latest_snapshot().id == case.latest, where
    tags = {tag.name for tag in table.list_tags()}
    assert case.kept_tags <= tags, where
    for snapshot_id in case.kept_snapshots:
        rows = table.to_arrow(snapshot_id=snapshot_id)
        assert sorted_rows(rows) == case.rows[f"s{snapshot_id}"], f"{where}: snapshot {snapshot_id}"
    for name in tags:
        assert sorted_rows(table.to_arrow(tag=name)) == case.rows[f"t:{name}"], (
            f"{where}: tag {name}"
        )
    for changelog_id in case.kept_changelogs:  # kept long-lived changelogs read whole
        changes = table.incremental(
            changelog_id - 1, changelog_id, scan_mode="changelog", row_kind=True
        )
        assert sorted_rows(changes) == case.changelogs[changelog_id], (
            f"{where}: changelog {changelog_id}"
        )


def _changelog_rows(table: Table) -> dict[int, list[dict[str, object]]]:
    """The changelog of every snapshot and long-lived changelog of a changelog table."""
    if table._store.options.get(O.CHANGELOG_PRODUCER) == "none":
        return {}
    ids = [*table._store.changelogs.list_ids(), *(s.id for s in table.snapshots())]
    return {
        i: sorted_rows(table.incremental(i - 1, i, scan_mode="changelog", row_kind=True))
        for i in sorted(set(ids))
    }


def _check_leftovers(case: Case, work: Path, where: str) -> None:
    """(b) where a fault may leave files behind: every file an uninterrupted run keeps
    is there, and the others are unreferenced: orphan cleanup removes them, except the
    data files that a DELETE entry of a manifest still in use names (orphan cleanup
    counts those as used, as Paimon's does, until manifest compaction drops the entry)."""
    left = tree(work)
    assert case.tree <= left, f"{where}: missing {sorted(case.tree - left)}"
    leftovers = only_files(left - case.tree)
    table = shoal.open_table(str(work))
    referenced = {os.path.relpath(p, work) for p in reachable(table)}
    assert not leftovers & referenced, f"{where}: referenced {sorted(leftovers & referenced)}"
    named = _named_by_delete_entries(table)
    result = remove_orphans(table, age=True)
    removed = {os.path.relpath(p, work) for p in result.paths}
    assert leftovers - named == removed - named, where
    assert only_files(tree(work)) == only_files(case.tree) | (leftovers - removed), where


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
        work = copy_table(case.source, scratch / f"fault-{n}")
        file_io = FaultyFileIO(n, fault.mode, partial=fault.partial)
        outcome = run_with_fault(work, operation, file_io, fault)
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
    left = tree(work)
    assert left == case.tree, (
        f"{where}: left {sorted(left - case.tree)}, lost {sorted(case.tree - left)}"
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
    return append_table(tmp_path_factory.mktemp("append"))


@pytest.fixture(scope="module")
def primary_key_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return primary_key_table(tmp_path_factory.mktemp("pk"))


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_expire_snapshots_of_an_append_table(
    append_source: Path, tmp_path: Path, fault: Fault
) -> None:
    case = Case.prepare(append_source, expire, tmp_path / "reference")
    assert case.kept_snapshots == [10, 11, 12]
    assert case.kept_tags == {"first", "middle", "recent"}
    _sweep(case, expire, tmp_path, fault)


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_expire_snapshots_of_a_primary_key_table(
    primary_key_source: Path, tmp_path: Path, fault: Fault
) -> None:
    case = Case.prepare(primary_key_source, expire, tmp_path / "reference")
    assert case.kept_snapshots == [9, 10, 11]
    assert case.kept_tags == {"before-compaction", "after-delete", "recent"}
    _sweep(case, expire, tmp_path, fault)


def test_expire_snapshots_with_partial_writes(append_source: Path, tmp_path: Path) -> None:
    case = Case.prepare(append_source, expire, tmp_path / "reference")
    fault = Fault("crash", partial=True)
    _sweep(case, expire, tmp_path, fault, only=WRITES.__contains__)  # the EARLIEST hint


def test_a_commit_cut_short_by_a_partial_write_is_invisible(
    append_source: Path, tmp_path: Path
) -> None:
    """Not a cleanup, but what cleanup runs after: a commit dying half-way through any
    of its writes (data file, manifest, manifest list, snapshot, hint) leaves the table
    as it was or fully committed, never a half-written snapshot; the next commit works."""
    new_rows = rows([20, 21], DAY4)
    source = shoal.open_table(str(append_source))
    before = rows_of_every_root(source)
    after = sorted_rows(pa.concat_tables([source.to_arrow(), new_rows]))
    counter = FaultyFileIO()
    open_on(counter, copy_table(append_source, tmp_path / "reference")).append(new_rows)
    assert {"open_output_stream", "write_bytes", "try_create"} <= {m for m, _ in counter.log}
    for n in range(1, counter.calls + 1):
        work = copy_table(append_source, tmp_path / f"fault-{n}")
        file_io = FaultyFileIO(n, "crash", partial=True)
        with pytest.raises(Crash):
            open_on(file_io, work).append(new_rows)
        file_io.settle()
        table = shoal.open_table(str(work))
        committed = table.latest_snapshot().id == 13
        assert rows_of_every_root(table) == {**before, **({"s13": after} if committed else {})}, n
        if not committed:
            table.append(new_rows)
            assert sorted_rows(shoal.open_table(str(work)).to_arrow()) == after, n
        shutil.rmtree(work)


@pytest.fixture(scope="module")
def index_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_table(tmp_path_factory.mktemp("index"))


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_expire_snapshots_of_a_table_with_index_files(
    index_source: Path, tmp_path: Path, fault: Fault
) -> None:
    case = Case.prepare(index_source, expire, tmp_path / "reference")
    assert case.kept_snapshots == [8, 9, 10]
    assert case.kept_tags == {"first", "recent"}
    deleted = {path for method, path in case.calls if method == "delete"}
    assert any(p.startswith("index/") for p in deleted)
    assert any(p.startswith("manifest/index-manifest-") for p in deleted)
    _sweep(case, expire, tmp_path, fault)


# --- tag deletion --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sources(append_source: Path, primary_key_source: Path, index_source: Path) -> dict[str, Path]:
    return {"append": append_source, "primary-key": primary_key_source, "index": index_source}


@pytest.mark.parametrize("fault", FAULTS, ids=str)
@pytest.mark.parametrize(
    "target",
    [("append", "middle"), ("primary-key", "after-delete"), ("index", "first")],
    ids="-".join,
)
def test_delete_tag_of_an_expired_snapshot(
    sources: dict[str, Path], tmp_path: Path, target: tuple[str, str], fault: Fault
) -> None:
    table, tag = target
    source = expired(sources[table], tmp_path / "expired")
    case = Case.prepare(source, delete_tag(tag), tmp_path / "reference")
    assert tag not in case.kept_tags
    assert len(case.calls) > 3  # the tag file, data files and manifests
    if table == "index":  # and the index files only the tag named
        assert any(path.startswith("index/") for _, path in case.calls)
    _sweep(
        case,
        delete_tag(tag),
        tmp_path,
        fault,
        rerun=_delete_tag_again(tag),
        leftovers_allowed=True,
    )


# --- orphan cleanup ------------------------------------------------------------------------------
@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_remove_orphan_files(append_source: Path, tmp_path: Path, fault: Fault) -> None:
    source = with_orphans(append_source, tmp_path)
    case = Case.prepare(source, remove_orphans, tmp_path / "reference")
    assert case.kept_snapshots == [10, 11, 12]
    assert case.kept_tags == {"first", "recent"}
    assert len(case.calls) >= 8  # the tag's data file, manifests and lists, the commit's
    _sweep(case, remove_orphans, tmp_path, fault, rerun=lambda t: remove_orphans(t, age=True))


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_remove_orphan_index_files(index_source: Path, tmp_path: Path, fault: Fault) -> None:
    """The index files and index manifest only the deleted tag named go; those the
    snapshots and the other tag name stay."""
    source = with_orphans(index_source, tmp_path, tag="first")
    case = Case.prepare(source, remove_orphans, tmp_path / "reference")
    assert case.kept_tags == {"recent"}
    deleted = {path for method, path in case.calls if method == "delete"}
    assert any(p.startswith("index/") for p in deleted)
    assert any(p.startswith("manifest/index-manifest-") for p in deleted)
    _sweep(case, remove_orphans, tmp_path, fault, rerun=lambda t: remove_orphans(t, age=True))


# --- changelogs that outlive their snapshots ----------------------------------------------------
def changelog_table(root: Path) -> Path:
    """The history of :func:`primary_key_table` on a table with the ``input`` changelog
    producer whose changelogs outlive its snapshots (``changelog.time-retained``)."""
    source = primary_key_table(root)
    table = shoal.open_table(str(source))
    with table.update_schema() as update:
        update.set_option("changelog-producer", "input")
        update.set_option("changelog.time-retained", "2 h")
    table = shoal.open_table(str(source))
    for version in (7, 8, 9):
        table.upsert(rows([1, 9], DAY1, version=version))
    table.delete(rows([9], DAY1))
    return source


@pytest.fixture(scope="module")
def changelog_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return changelog_table(tmp_path_factory.mktemp("changelog"))


@pytest.mark.parametrize("fault", FAULTS, ids=str)
def test_expire_snapshots_keeping_their_changelogs(
    changelog_source: Path, tmp_path: Path, fault: Fault
) -> None:
    """Snapshot expiration keeps each expired snapshot as a long-lived changelog, then
    changelog expiration removes all but the newest (the changelog's retain_max is the
    run's, only its age is longer): a fault at any step leaves every kept snapshot,
    tag and long-lived changelog readable, and what it leaves behind is unreferenced."""
    case = Case.prepare(changelog_source, expire, tmp_path / "reference")
    assert case.kept_snapshots == [14, 15, 16]
    assert case.kept_changelogs == [13]
    written = {path for method, path in case.calls if method == "try_create"}
    assert {f"changelog/changelog-{i}" for i in range(1, 14)} <= written
    _sweep(case, expire, tmp_path, fault, leftovers_allowed=True)
