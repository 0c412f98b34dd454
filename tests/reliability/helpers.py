"""What the crash and concurrency tests share: small tables with a history, cheap
copies of them, fault-injected runs, and views of what a table holds.

The tables are built once per test module and never changed; every faulty run works
on a copy (hard links for the files shoal never rewrites in place).
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

import shoal
from shoal.cleanup.orphans import OrphanFilesResult
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries, read_manifest_metas
from shoal.core.snapshot_manager import EARLIEST, LATEST
from shoal.errors import ShoalError
from shoal.format.snapshot import Snapshot
from shoal.table import Table
from tests.conftest import EVENTS_SCHEMA, events
from tests.faults import Crash, FaultyFileIO, Mode, ordered_io_pool
from tests.index_commits import delete_rows, live_files, rehash
from tests.reachability import index_files_of

Operation = Callable[[Table], object]
Rows = list[dict[str, object]]

DAY1, DAY2, DAY3, DAY4 = "2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"
# Manifests merged often, so that expiration and tag deletion also delete manifests.
MERGE_MANIFESTS = {"manifest.merge-min-count": "2"}


# --- the tables --------------------------------------------------------------------------------
def rows(ids: list[int], dt: str, version: int = 0) -> pa.Table:
    """Rows of EVENTS_SCHEMA; ``version`` changes the values an upsert writes."""
    table = events(ids, dt)
    if version:
        names = pa.array([f"n{i}v{version}" for i in ids])
        table = table.set_column(table.schema.get_field_index("name"), "name", names)
    return table


def append_table(root: Path) -> Path:
    """Twelve snapshots; tags on snapshots 2 and 5 (expired by :func:`expire`) and 10.

    Of the files deleted by the expired snapshots, some stay for a tag and some go,
    among them all of partition DAY4, whose directories go too."""
    t = shoal.Catalog(str(root)).create_table(
        "db.t",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        options={**MERGE_MANIFESTS, "snapshot.clean-empty-directories": "true"},
    )
    t.append(pa.concat_tables([rows([1, 2], DAY1), rows([3], DAY2)]))
    t.append(rows([4], DAY2))
    t.create_tag("first")
    t.overwrite(rows([5], DAY1), partition={"dt": DAY1})  # [1, 2] stay for "first"
    t.append(rows([6], DAY3))
    t.overwrite(rows([7], DAY3), partition={"dt": DAY3})  # [6] goes
    t.create_tag("middle")
    t.drop_partitions([{"dt": DAY2}])  # [3], [4] stay for "middle"
    t.append(pa.concat_tables([rows([8, 9], DAY1), rows([16], DAY4)]))
    t.drop_partitions([{"dt": DAY4}])  # [16] goes
    t.overwrite(rows([10], DAY1), partition={"dt": DAY1})  # [5] stays, [8, 9] go
    t.append(pa.concat_tables([rows([11], DAY2), rows([12], DAY3)]))
    t.create_tag("recent")
    t.overwrite(pa.concat_tables([rows([13], DAY1), rows([14], DAY3)]))
    t.append(rows([15], DAY2))
    assert t.latest_snapshot().id == 12
    return Path(t.path)


def primary_key_table(root: Path) -> Path:
    """Upserts, deletes, full compactions, a dropped partition; tags on snapshots 2
    and 5 (expired by :func:`expire`) and 10."""
    t = shoal.Catalog(str(root)).create_table(
        "db.pk",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={**MERGE_MANIFESTS, "bucket": "2"},
    )
    t.upsert(rows([1, 2, 3, 4], DAY1, version=1))
    t.upsert(pa.concat_tables([rows([2, 5], DAY1, version=2), rows([6], DAY2)]))
    t.create_tag("before-compaction")
    t.compact(strategy="full")
    t.upsert(rows([1], DAY1, version=3))
    t.delete(rows([3], DAY1))
    t.create_tag("after-delete")
    t.drop_partitions([{"dt": DAY2}])
    t.upsert(rows([7], DAY2, version=4))
    t.upsert(rows([4], DAY1, version=6))
    t.compact(strategy="full")  # the files of the last two upserts go with it
    t.upsert(rows([8], DAY1))
    t.create_tag("recent")
    t.upsert(rows([2], DAY1, version=5))
    assert t.latest_snapshot().id == 11
    return Path(t.path)


def deletion_vector_table(root: Path) -> Path:
    """The history of :func:`primary_key_table` on a table with deletion vectors:
    every write is followed by the compaction that lifts its level-0 files and marks
    the rows they replace; tags "before-compaction" (expired by :func:`expire`) and
    "recent"."""
    t = shoal.Catalog(str(root)).create_table(
        "db.dv",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={**MERGE_MANIFESTS, "bucket": "2", "deletion-vectors.enabled": "true"},
    )
    t.upsert(rows([1, 2, 3, 4], DAY1, version=1))
    t.upsert(pa.concat_tables([rows([2, 5], DAY1, version=2), rows([6], DAY2)]))
    t.create_tag("before-compaction")
    t.upsert(rows([1], DAY1, version=3))
    t.delete(rows([3], DAY1))
    t.drop_partitions([{"dt": DAY2}])
    t.upsert(rows([7], DAY2, version=4))
    t.compact(strategy="full")
    t.upsert(rows([4, 8], DAY1, version=6))
    t.create_tag("recent")
    t.upsert(rows([2], DAY1, version=5))
    vectors = t.system_table("table_indexes")
    assert vectors.num_rows
    assert set(vectors["index_type"].to_pylist()) == {"DELETION_VECTORS"}
    return Path(t.path)


def index_table(root: Path) -> Path:
    """An append table whose index files come and go (``tests/index_commits``): rows
    marked deleted by deletion vectors and hash index files replaced, ten snapshots,
    tags on snapshots 3 (expired by :func:`expire`) and 8.

    Expiration keeps 8 to 10: of the index files of the expired snapshots, the first
    vector file and hash file stay for tag "first", those that snapshot 8 still
    names stay, and the hash file only snapshot 7 named goes."""
    t = shoal.Catalog(str(root)).create_table(
        "db.ix", EVENTS_SCHEMA, partition_keys=["dt"], options=MERGE_MANIFESTS
    )
    t.append(pa.concat_tables([rows([1, 2, 3], DAY1), rows([4, 5], DAY2)]))
    day1, day2 = live_files(t)
    if day2.partition < day1.partition:
        day1, day2 = day2, day1
    delete_rows(t, day1, [0])  # 2
    rehash(t, day1.partition, 0)  # 3
    t.create_tag("first")
    delete_rows(t, day1, [1])  # 4: the vector file of 2 stays for "first"
    rehash(t, day1.partition, 0)  # 5: so does the hash file of 3
    delete_rows(t, day2, [0])  # 6
    rehash(t, day2.partition, 0)  # 7
    rehash(t, day2.partition, 0)  # 8: the hash file of 7 goes with it
    t.create_tag("recent")
    t.append(rows([6], DAY1))  # 9
    [new] = [
        e
        for e in live_files(t)
        if e.file.file_name not in (day1.file.file_name, day2.file.file_name)
    ]
    delete_rows(t, new, [0])  # 10
    assert t.latest_snapshot().id == 10
    return Path(t.path)


EVENT_SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ms")), ("v", pa.string())])


def at(hour: int) -> datetime:
    """An event time on 2026-01-01 (naive: UTC)."""
    return datetime(2026, 1, 1, hour)


def event_rows(ids: list[int], hour: int, version: str) -> pa.Table:
    return pa.table(
        {"id": ids, "ts": [at(hour)] * len(ids), "v": [f"{version}{i}" for i in ids]},
        schema=EVENT_SCHEMA,
    )


def event_time_table(root: Path) -> Path:
    """A primary-key table with an event-time column: a compacted top level, then
    level-0 files of early, late and mixed event times and a delete."""
    t = shoal.Catalog(str(root)).create_table(
        "db.et",
        EVENT_SCHEMA,
        primary_keys=["id"],
        options={"bucket": "2", "compaction.event-time.field": "ts", "write-only": "true"},
    )
    t.upsert(event_rows([1, 2, 3, 4], 1, "a"))
    t.compact(strategy="full")
    t.upsert(event_rows([2, 5], 2, "b"))
    t.upsert(event_rows([3, 6], 9, "c"))
    t.delete(pa.table({"id": pa.array([4], pa.int64())}))
    t.upsert(pa.concat_tables([event_rows([7], 3, "d"), event_rows([8], 10, "d")]))
    t.create_tag("before")
    assert t.latest_snapshot().id == 6
    return Path(t.path)


def triggering_table(root: Path) -> Path:
    """A primary-key table whose next upsert is followed by a compaction (the trigger
    is two sorted runs per bucket)."""
    t = shoal.Catalog(str(root)).create_table(
        "db.trigger",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "1", "num-sorted-run.compaction-trigger": "2"},
    )
    t.upsert(rows([1, 2, 3], DAY1, version=1))
    t.create_tag("one")
    assert t.latest_snapshot().id == 1
    return Path(t.path)


# --- maintenance runs shared by the crash tests --------------------------------------------------
def expire(table: Table) -> object:
    """Expiration keeping the newest three snapshots."""
    return table.expire_snapshots(retain_max=3, older_than=datetime.now() + timedelta(seconds=1))


def expired(source: Path, target: Path) -> Path:
    """A copy of ``source`` after an uninterrupted :func:`expire`."""
    copy_table(source, target)
    expire(shoal.open_table(str(target)))
    return target


def delete_tag(name: str) -> Operation:
    def delete(table: Table) -> None:
        table.delete_tag(name)

    return delete


def with_orphans(source: Path, scratch: Path, tag: str = "middle") -> Path:
    """A copy of ``source`` after :func:`expire`, with the orphans of an interrupted
    deletion of ``tag`` and of a commit that died before publishing its snapshot;
    everything under it an hour old."""
    target = expired(source, scratch / "orphans")
    try:  # the tag file goes, its files stay
        delete_tag(tag)(open_on(FaultyFileIO(2), target))
    except Crash:
        pass
    else:
        raise AssertionError("the tag deletion made fewer than two mutating calls")
    calls = count_calls(target, lambda t: t.append(rows([30], DAY1)), scratch / "commit")
    publish = [method for method, _ in calls].index("try_create") + 1
    try:  # a data file, manifests and lists, but no snapshot
        open_on(FaultyFileIO(publish), target).append(rows([30], DAY1))
    except Crash:
        pass
    else:
        raise AssertionError("the commit survived its crash")
    age_tree(target)
    return target


# --- copies and views --------------------------------------------------------------------------
def copy_table(source: Path, target: Path) -> Path:
    """A copy of the table at ``source``. Files that shoal never rewrites in place are
    hard links, which is much faster; the hints, rewritten in place, are copied."""
    shutil.copytree(source, target, copy_function=_link_unless_hint)
    return target


def _link_unless_hint(source: str, target: str) -> None:
    if os.path.basename(source) in (EARLIEST, LATEST):
        shutil.copy2(source, target)
    else:
        os.link(source, target)


def tree(root: Path) -> set[str]:
    """Every file and directory under ``root``, relative (directories end in "/")."""
    out: set[str] = set()
    for directory, dirs, files in os.walk(root):
        relative = os.path.relpath(directory, root)
        base = "" if relative == "." else f"{relative}/"
        out.update(f"{base}{d}/" for d in dirs)
        out.update(f"{base}{f}" for f in files)
    return out


def only_files(entries: set[str]) -> set[str]:
    return {f for f in entries if not f.endswith("/")}


def open_on(file_io: FaultyFileIO, path: Path) -> Table:
    """The table at ``path``, every file operation going through ``file_io``."""
    return Table._open(file_io, str(path), str(path), None)


def reachable_from(table: Table, roots: list[Snapshot]) -> set[str]:
    """Paths of the data files, extra files, manifests, manifest lists, index manifests
    and index files that readers of ``roots`` need (``tests.reachability.reachable``
    for a chosen set of roots)."""
    store = table._store
    out: set[str] = set()
    for snapshot in roots:
        out.update(index_files_of(store, snapshot))
        for entry in live_entries(store, snapshot):
            bucket_dir = store.paths.bucket_dir(
                store.partitions.path(entry.partition), entry.bucket
            )
            out.add(data_file_path(bucket_dir, entry.file))
            out.update(f"{bucket_dir}/{x}" for x in entry.file.extra_files)
        out.update(
            store.paths.manifest_path(m.file_name) for m in read_manifest_metas(store, snapshot)
        )
        out.add(store.paths.manifest_path(snapshot.base_manifest_list))
        out.add(store.paths.manifest_path(snapshot.delta_manifest_list))
    return out


def sorted_rows(table: pa.Table) -> Rows:
    return table.sort_by([(n, "ascending") for n in table.column_names]).to_pylist()


def age_tree(root: Path) -> None:
    """Make every file and directory under ``root`` an hour old."""
    an_hour_ago = time.time() - 3600
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            os.utime(os.path.join(directory, name), (an_hour_ago, an_hour_ago))


def remove_orphans(table: Table, *, age: bool = False) -> OrphanFilesResult:
    """Orphan cleanup with the threshold at now; ``age`` makes every file and directory
    an hour old first, as if the run came later (a directory that a deletion touched is
    new again, and cleanup leaves new directories alone)."""
    if age:
        age_tree(Path(table.path))
    return table.remove_orphan_files(older_than=datetime.now())


# --- faulty runs -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fault:
    mode: Mode
    reverse: bool = False  # the I/O pool runs each batch newest first
    partial: bool = False  # a crashing write writes half its bytes first

    def __str__(self) -> str:
        return "-".join([self.mode] + ["reversed"] * self.reverse + ["partial"] * self.partial)


def run_with_fault(
    work: Path, operation: Operation, file_io: FaultyFileIO, fault: Fault
) -> BaseException | None:
    """Run ``operation`` over ``file_io`` on the table at ``work``, tasks on the I/O
    pool in a fixed order; the exception it ended with (None if it completed)."""
    table = open_on(file_io, work)
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


def count_calls(source: Path, operation: Operation, scratch: Path) -> list[tuple[str, str]]:
    """The mutating FileIO calls of ``operation`` run without a fault on a copy of
    ``source`` (method, path relative to the table), in order."""
    counter = FaultyFileIO()
    work = copy_table(source, scratch)
    with ordered_io_pool():
        operation(open_on(counter, work))
    calls = [(method, os.path.relpath(path, work)) for method, path in counter.log]
    shutil.rmtree(work)
    return calls
