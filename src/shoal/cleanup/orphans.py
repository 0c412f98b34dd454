"""Orphan file cleanup: deleting the files in a table's directories that nothing uses.

A file is an orphan when no snapshot, tag or long-lived changelog (of the table or of
one of its branches) reaches it: the files of a commit that failed, of the snapshots a
rollback removed, or of an expiration that stopped half-way. A run

1. lists the directories cleanup owns: stray files in ``snapshot/`` and
   ``changelog/`` (anything but snapshot and long-lived changelog files and hints, such
   as the temporary files of atomic writes),
   ``manifest/``, ``index/``, ``statistics/`` and every bucket directory (while step 2
   reads the roots and their manifest lists);
2. reads every root (snapshots, then tags, then changelogs and branches) and collects
   the names they reach: manifest lists, the manifests in them, the index manifest and
   the index files it names (hash indexes, deletion vectors), the statistics file, and
   the data file and extra files of every manifest entry, ADD and DELETE alike (a
   DELETE entry in the history still names a file a reader of an older snapshot
   needs). Manifests are searched for the candidates' names rather
   than decoded whole (:class:`~shoal.format.avro.strings.StringFinder`). Only names
   that are also candidates are kept, so memory follows the candidates, not the length
   of the history;
3. deletes the candidates older than the threshold that nothing reaches;
4. removes the bucket and partition directories left empty.

Safety rules:

- The age threshold is the only protection of a commit in flight, whose files exist
  before its snapshot does: it defaults to one day ago and may not lie in the future.
  Files whose modification time is not in milliseconds stop the run.
- Matching is by file name (names carry a UUID), never by full path.
- Metadata that an existing root references and that is missing or cannot be decoded
  aborts the run: reading it as "references nothing" would delete the files it names.
  Metadata of a snapshot expired while the run reads it is skipped.
- Directories are removed only when empty, one at a time, never recursively, and
  never the table root. ``schema/``, ``tag/``, ``consumer/``, the changelog files
  and hints of ``changelog/``, ``branch/``, unknown directories, files in the table
  root or in partition directories, and subdirectories of buckets are never touched.

One run is one sequence, :func:`remove_orphan_files`, wherever it runs; an
:class:`OrphanExecutor` (threads here, Spark tasks in ``shoal.spark.jobs``) runs only
the steps whose cost grows with the table's files, on picklable values.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence, Set
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Protocol, TypeVar

from shoal.cleanup.clock import epoch_millis
from shoal.cleanup.directories import parent, remove_empty_directories
from shoal.cleanup.index_files import index_names
from shoal.core.paths import BUCKET_PREFIX, SNAPSHOT_PREFIX, PathFactory
from shoal.core.snapshot_manager import EARLIEST, LATEST, SnapshotManager
from shoal.core.store import FileStore
from shoal.core.tag_manager import TagManager
from shoal.errors import (
    CorruptMetadataError,
    FileTimeError,
    InvalidArgumentError,
)
from shoal.format.avro.strings import StringFinder
from shoal.format.manifest import ListNameReader
from shoal.format.snapshot import Snapshot
from shoal.io import DeleteError, FileIO, FileStatus, in_background, io_map

logger = logging.getLogger(__name__)

DEFAULT_AGE = timedelta(days=1)
# Any time at or below this (1970-04-26 in milliseconds) is a time in seconds: 10**10
# seconds is the year 2286.
MIN_MILLISECOND_MTIME = 10**10
DELETE_BATCH = 10_000  # files handed to the I/O pool at once
CHANGELOG_PREFIX = "changelog-"
BRANCH_PREFIX = "branch-"

A = TypeVar("A")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class OrphanFilesResult:
    """What one orphan cleanup deleted (or, in a dry run, would delete)."""

    deleted_count: int = 0
    deleted_bytes: int = 0
    paths: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DataDirectories:
    """The bucket directories of a table and the partition directories above them, as
    listed (with their modification times)."""

    buckets: tuple[FileStatus, ...]
    partitions: tuple[FileStatus, ...]

    def leaf_partitions(self) -> list[str]:
        """Partition directories holding neither a bucket nor a deeper partition: they
        may be empty, so cleanup tries to remove them."""
        parents = {parent(d.path) for d in (*self.buckets, *self.partitions)}
        return [d.path for d in self.partitions if d.path not in parents]


def file_name(path: str) -> str:
    """The last component of a path: what cleanup matches files by."""
    return path.rpartition("/")[2]


# --- the threshold ---------------------------------------------------------------------------
def threshold_millis(older_than: datetime | None, now: datetime | None = None) -> int:
    """Epoch milliseconds below which a file is old enough to delete (naive datetimes
    are local time). Raises InvalidArgumentError for a threshold after ``now``."""
    if older_than is not None and not isinstance(older_than, datetime):
        raise InvalidArgumentError(f"older_than must be a datetime, not {older_than!r}")
    now_ms = epoch_millis(now or datetime.now())
    if older_than is None:
        return now_ms - int(DEFAULT_AGE.total_seconds() * 1000)
    threshold = epoch_millis(older_than)
    if threshold > now_ms:
        raise InvalidArgumentError(
            f"older_than ({older_than}) lies in the future: the files of commits in flight "
            "would be deleted. Give a time in the past, such as now minus one day"
        )
    return threshold


# --- step 1: candidates ----------------------------------------------------------------------
def find_data_directories(file_io: FileIO, root: str, partition_depth: int) -> DataDirectories:
    """The bucket directories ``<k1=v1>/.../bucket-<n>`` under ``root``, descending
    ``partition_depth`` levels into directories whose name holds ``=``; each level is
    listed in parallel."""
    level = [root]
    partitions: list[FileStatus] = []
    for _ in range(partition_depth):
        found = _list_subdirectories(file_io, level, lambda name: "=" in name)
        partitions.extend(found)
        level = [d.path for d in found]
    buckets = _list_subdirectories(file_io, level, _is_bucket_name)
    return DataDirectories(tuple(buckets), tuple(partitions))


def _list_subdirectories(
    file_io: FileIO, directories: list[str], accept: Callable[[str], bool]
) -> list[FileStatus]:
    listed = io_map(file_io.list_status, directories, concurrent=file_io.concurrent_reads)
    return [s for batch in listed for s in batch if s.is_dir and accept(file_name(s.path))]


def _is_bucket_name(name: str) -> bool:
    suffix = name[len(BUCKET_PREFIX) :]
    return name.startswith(BUCKET_PREFIX) and suffix.isdigit()


def list_candidates(
    file_io: FileIO, directory: str, *, snapshot_dir: bool = False
) -> list[FileStatus]:
    """The files directly in ``directory`` that cleanup may delete: every file (never a
    subdirectory), and in the snapshot directory every file that is neither a snapshot
    nor a hint."""
    return [
        s
        for s in file_io.list_status(directory)
        if not s.is_dir and not (snapshot_dir and _is_snapshot_metadata(file_name(s.path)))
    ]


def _is_snapshot_metadata(name: str) -> bool:
    """A snapshot or long-lived changelog file, or a hint of their directories."""
    if name in (EARLIEST, LATEST):
        return True
    return any(
        name.startswith(prefix) and name[len(prefix) :].isdigit()
        for prefix in (SNAPSHOT_PREFIX, CHANGELOG_PREFIX)
    )


def metadata_directories(store: FileStore) -> list[tuple[str, bool]]:
    """The metadata directories whose files are candidates, each with whether it is
    the snapshot directory (see :func:`list_candidates`)."""
    root = store.root
    return [
        (store.paths.snapshot_dir, True),
        (store.paths.changelog_dir, True),
        (store.paths.manifest_dir, False),
        (f"{root}/index", False),
        (f"{root}/statistics", False),
    ]


def candidate_directories(store: FileStore, data: DataDirectories) -> list[tuple[str, bool]]:
    """The directories whose files are candidates, each with whether it is the
    snapshot directory: the metadata directories, then the bucket directories in the
    order of ``data.buckets``."""
    return [*metadata_directories(store), *((b.path, False) for b in data.buckets)]


def list_directories(
    file_io: FileIO, directories: Sequence[tuple[str, bool]]
) -> list[list[FileStatus]]:
    """The candidates of each of ``directories`` (see :func:`candidate_directories`),
    in their order, listed on the I/O pool where the filesystem gains from it."""
    return io_map(
        lambda d: list_candidates(file_io, d[0], snapshot_dir=d[1]),
        directories,
        concurrent=file_io.concurrent_reads,
    )


def check_modification_times(files: Iterable[FileStatus]) -> None:
    """Raise FileTimeError if a file's time looks like seconds (or is missing): the age
    threshold would then count every file as old."""
    for status in files:
        if status.mtime_ms <= MIN_MILLISECOND_MTIME:
            raise FileTimeError(status.path, status.mtime_ms)


# --- step 2: what the roots reach ------------------------------------------------------------
def table_roots(store: FileStore) -> list[Snapshot]:
    """Every snapshot, then every tag's snapshot, then every long-lived changelog, of the
    table and then of each branch (branches share the table's data and manifests).

    Snapshots are read before tags: a tag is only ever created on an existing snapshot,
    so a tag created meanwhile names a snapshot read already, or is read itself.
    """
    manifest_dir = store.paths.manifest_dir
    roots = _roots_of(store.file_io, store.snapshots, store.paths, manifest_dir)
    for branch in _branch_paths(store):
        branch_snapshots = SnapshotManager(store.file_io, branch)
        roots.extend(_roots_of(store.file_io, branch_snapshots, branch, manifest_dir))
    return roots


def _roots_of(
    file_io: FileIO, snapshots: SnapshotManager, paths: PathFactory, manifest_dir: str
) -> list[Snapshot]:
    found = io_map(snapshots.find, snapshots.list_ids(), concurrent=file_io.concurrent_reads)
    roots = [s for s in found if s is not None]
    roots.extend(s for _, s in TagManager(file_io, paths).tags())
    roots.extend(_changelogs(file_io, paths.changelog_dir, manifest_dir))
    return roots


def _changelogs(file_io: FileIO, directory: str, manifest_dir: str) -> list[Snapshot]:
    """Long-lived changelogs (kept when their lifecycle is decoupled): each holds an
    expired snapshot whose changelog files readers still use. The data manifest lists
    and the index manifest such a snapshot named went with it (Paimon's expiration
    deletes them, as shoal's does): a changelog reaches only those still there."""
    out = []
    for status in file_io.list_status(directory):
        name = file_name(status.path)
        if status.is_dir or not name.startswith(CHANGELOG_PREFIX):
            continue
        if not name[len(CHANGELOG_PREFIX) :].isdigit():
            continue
        try:
            data = file_io.read_bytes(status.path)
        except FileNotFoundError:
            continue  # expired meanwhile
        changelog = Snapshot.from_json(data, status.path)
        out.append(_still_there(file_io, manifest_dir, changelog))
    return out


def _still_there(file_io: FileIO, manifest_dir: str, changelog: Snapshot) -> Snapshot:
    """``changelog`` without the manifest lists and index manifest that are gone."""

    def there(name: str | None) -> bool:
        return bool(name) and file_io.exists(f"{manifest_dir}/{name}")

    return replace(
        changelog,
        base_manifest_list=changelog.base_manifest_list
        if there(changelog.base_manifest_list)
        else "",
        delta_manifest_list=changelog.delta_manifest_list
        if there(changelog.delta_manifest_list)
        else "",
        index_manifest=changelog.index_manifest if there(changelog.index_manifest) else None,
    )


def _branch_paths(store: FileStore) -> list[PathFactory]:
    branch_dir = f"{store.root}/branch"
    return [
        PathFactory(s.path)
        for s in store.file_io.list_status(branch_dir)
        if s.is_dir and file_name(s.path).startswith(BRANCH_PREFIX)
    ]


def manifest_list_names(roots: Iterable[Snapshot]) -> list[str]:
    """The base, delta and changelog manifest lists of ``roots``, each once, in the
    order of ``roots`` (in which consecutive base lists extend one another: see
    :class:`~shoal.format.manifest.ListNameReader`)."""
    out: dict[str, None] = {}
    for root in roots:
        for name in (root.base_manifest_list, root.delta_manifest_list):
            if name:  # a long-lived changelog's data lists may be gone
                out[name] = None
        if root.changelog_manifest_list:
            out[root.changelog_manifest_list] = None
    return list(out)


def root_file_names(roots: Sequence[Snapshot]) -> set[str]:
    """The metadata files the snapshot JSON of ``roots`` names directly: manifest lists,
    index manifests and statistics files."""
    out = set(manifest_list_names(roots))
    for root in roots:
        out.update(n for n in (root.index_manifest, root.statistics) if n)
    return out


def index_files_named_by(store: FileStore, roots: Iterable[Snapshot]) -> set[str]:
    """The index files that the index manifests of ``roots`` name (each index manifest
    read once). An index manifest that a root still references and that cannot be
    read raises CorruptMetadataError."""
    by_manifest = {root.index_manifest: root for root in roots if root.index_manifest}

    def read(root: Snapshot) -> frozenset[str] | None:
        return _read_referenced(
            store,
            root.index_manifest or "",
            lambda _: index_names(store, root, strict=True).files,
        )

    return {n for names in _map_reads(store, read, by_manifest.values()) if names for n in names}


def manifests_named_by(store: FileStore, list_names: Iterable[str]) -> set[str]:
    """Every manifest that the manifest lists ``list_names`` name. A list that a root
    still references and that cannot be read raises CorruptMetadataError."""

    reader = ListNameReader()

    def read(name: str) -> list[str] | None:
        return _read_referenced(store, name, lambda n: store.manifests.list_file_names(n, reader))

    return {n for names in _map_reads(store, read, list_names) if names for n in names}


def files_named_by(
    store: FileStore, manifest_names: Iterable[str], keep: Set[str] | None
) -> set[str]:
    """The data files and extra files that the manifests ``manifest_names`` name, ADD
    and DELETE entries alike, restricted to ``keep`` (None: every name; given, the
    manifests are searched for these names rather than decoded whole). A manifest
    that a root still references and that cannot be read raises CorruptMetadataError."""
    entry_names: Callable[[str], Iterable[str]] = (
        store.manifests.manifest_file_names if keep is None else _entry_names_among(store, keep)
    )

    def read(name: str) -> Iterable[str] | None:
        return _read_referenced(store, name, entry_names)

    return {n for names in _map_reads(store, read, manifest_names) if names for n in names}


@dataclass(frozen=True, slots=True)
class Reach:
    """What the roots name: ``names``, the files their JSON names, the manifests their
    manifest lists name and the index files their index manifests name;
    ``manifests``, whose entries name the rest (the data files and their extra
    files). A candidate is used when its name is among them, whatever directory it
    lies in: matching is by name alone."""

    names: frozenset[str]
    manifests: tuple[str, ...]

    @staticmethod
    def of(
        roots: Sequence[Snapshot], manifests: Iterable[str], index_files: Iterable[str] = ()
    ) -> Reach:
        """The reach of ``roots``, whose manifest lists name ``manifests`` and whose
        index manifests name ``index_files``."""
        named = tuple(sorted(manifests))
        return Reach(frozenset(root_file_names(roots)).union(named, index_files), named)

    def used_among(self, store: FileStore, candidates: Set[str]) -> set[str]:
        """The names of ``candidates`` that the roots reach; the manifests are searched
        for these names only (see :func:`files_named_by`)."""
        used = files_named_by(store, self.manifests, candidates)
        used.update(self.names.intersection(candidates))
        return used


def used_names(
    store: FileStore,
    roots: Sequence[Snapshot],
    *candidates: Set[str],
    manifests: Set[str] | None = None,
) -> set[str]:
    """The names among ``candidates`` that some root in ``roots`` reaches;
    ``manifests``, when given, are the manifests the roots' manifest lists name (read
    already)."""
    if manifests is None:
        manifests = manifests_named_by(store, manifest_list_names(roots))
    reach = Reach.of(roots, manifests, index_files_named_by(store, roots))
    return reach.used_among(store, set().union(*candidates))


def _manifest_names(store: FileStore, list_name: str) -> list[str]:
    return store.manifests.list_file_names(list_name)


def _entry_names_among(store: FileStore, keep: Set[str]) -> Callable[[str], set[str]]:
    finder = StringFinder(keep)
    return lambda manifest_name: store.manifests.manifest_names_among(manifest_name, finder)


def _read_referenced(store: FileStore, name: str, read: Callable[[str], R]) -> R | None:
    """``read(name)``; None when it fails because the snapshot referencing the file
    expired meanwhile. Raises when an existing root still references it."""
    try:
        return read(name)
    except CorruptMetadataError:
        if _still_referenced(store, name):
            raise
        logger.info("%s went with a snapshot that expired during cleanup; skipped", name)
        return None


def _still_referenced(store: FileStore, name: str) -> bool:
    """Whether a root that exists now references the manifest or manifest list ``name``
    (read afresh; any read failure here raises)."""
    roots = table_roots(store)
    if name in root_file_names(roots):
        return True
    return any(name in _manifest_names(store, n) for n in manifest_list_names(roots))


def _map_reads(store: FileStore, fn: Callable[[A], R], items: Iterable[A]) -> list[R]:
    """``fn`` over ``items``, on the I/O pool where the filesystem gains from it."""
    return io_map(fn, items, concurrent=store.file_io.concurrent_reads)


# --- step 3: choosing and deleting ----------------------------------------------------------
def older(statuses: Iterable[FileStatus], threshold_ms: int) -> list[FileStatus]:
    """The files or directories of ``statuses`` last modified before the threshold:
    the age guard, the only protection of a commit in flight."""
    return [s for s in statuses if s.mtime_ms < threshold_ms]


@dataclass(frozen=True, slots=True)
class Sweep:
    """The last step over candidates, the same code wherever an executor runs it: the
    orphans among them (older than the threshold, named by no root) are deleted, or
    in a dry run only reported. Picklable, so it can run where the candidates were
    listed."""

    threshold_ms: int
    dry_run: bool = False

    def choose(
        self, candidates: Iterable[FileStatus], used: Set[str] = frozenset()
    ) -> list[FileStatus]:
        """The orphans among ``candidates``, whose names ``used`` does not hold."""
        old = older(candidates, self.threshold_ms)
        # file_name inlined: this runs once per candidate
        return [c for c in old if c.path.rpartition("/")[2] not in used]

    def __call__(
        self, file_io: FileIO, candidates: Iterable[FileStatus], used: Set[str] = frozenset()
    ) -> list[FileStatus]:
        """Delete the orphans among ``candidates`` (``used``: the names of candidates
        that some root reaches, for an executor that has not left those out already);
        returns those deleted or found gone, or in a dry run those a run would delete."""
        orphans = self.choose(candidates, used)
        return orphans if self.dry_run else _delete_in_batches(file_io, orphans)


def delete_files(file_io: FileIO, files: Sequence[FileStatus]) -> list[FileStatus]:
    """Delete ``files`` with ``FileIO.delete_many`` (batched on object stores, on the
    I/O pool); returns those deleted or found gone. A file that cannot be deleted is
    left, with a warning."""
    try:
        file_io.delete_many([f.path for f in files])
    except DeleteError as exc:
        for path, reason in exc.failed.items():
            logger.warning("could not delete orphan file %s: %s", path, reason)
        return [f for f in files if f.path not in exc.failed]
    return list(files)


def _delete_in_batches(file_io: FileIO, files: list[FileStatus]) -> list[FileStatus]:
    """Delete ``files`` a batch at a time, so that the pending deletions stay few."""
    deleted: list[FileStatus] = []
    for start in range(0, len(files), DELETE_BATCH):
        deleted.extend(delete_files(file_io, files[start : start + DELETE_BATCH]))
    return deleted


# --- step 4: empty directories ---------------------------------------------------------------
def remove_emptied_directories(
    store: FileStore,
    data: DataDirectories,
    empty_buckets: Iterable[str],
    deleted_paths: Iterable[str],
    threshold_ms: int,
) -> list[str]:
    """Step 4 after the deletes: remove the bucket directories that ``deleted_paths``
    emptied or that were listed empty (``empty_buckets``), and the leaf partition
    directories, then their parents, when they were older than the threshold before
    the run (deleting files makes a directory look new)."""
    removable = {d.path for d in older((*data.buckets, *data.partitions), threshold_ms)}
    removable.discard(store.root)
    bucket_paths = {b.path for b in data.buckets}
    touched = {parent(p) for p in deleted_paths} & bucket_paths
    tried = touched | set(empty_buckets) | set(data.leaf_partitions())
    return remove_empty_directories(store.file_io, tried, removable)


# --- where the steps run ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Survey:
    """What a run checks of a listing before it goes on: the candidate modified
    earliest (None when there is none), and the listed directories that hold no
    candidate."""

    oldest: FileStatus | None
    empty_directories: frozenset[str]


class Candidates(Protocol):
    """The candidate files of one run, held where an :class:`OrphanExecutor` listed
    them."""

    def survey(self) -> Survey:
        """The oldest candidate and the empty directories; raises what the listing
        raised."""
        ...

    def sweep(self, reach: Reach, sweep: Sweep) -> list[FileStatus]:
        """Run ``sweep`` over the candidates whose name ``reach`` does not hold (every
        manifest read before the first delete); returns what it deleted, or in a dry
        run would delete."""
        ...

    def close(self) -> None:
        """Release the listing."""
        ...


class OrphanExecutor(Protocol):
    """Where a run's steps over the table's files run: listing the candidate
    directories, reading the manifest lists, and (through :class:`Candidates`)
    sweeping. It decides nothing; :func:`remove_orphan_files` hands it every input."""

    def list_candidates(
        self, store: FileStore, directories: Sequence[tuple[str, bool]]
    ) -> Candidates:
        """The candidates of ``directories`` (:func:`list_directories`)."""
        ...

    def manifests_named_by(self, store: FileStore, list_names: Sequence[str]) -> set[str]:
        """:func:`manifests_named_by` of ``list_names``."""
        ...


class ThreadExecutor:
    """Runs a run's steps in this process, on the I/O pool where the filesystem gains
    from it."""

    def list_candidates(
        self, store: FileStore, directories: Sequence[tuple[str, bool]]
    ) -> Candidates:
        listed = list_directories(store.file_io, directories)
        empty = frozenset(d for (d, _), files in zip(directories, listed, strict=True) if not files)
        return _Listed(store, [f for files in listed for f in files], empty)

    def manifests_named_by(self, store: FileStore, list_names: Sequence[str]) -> set[str]:
        return manifests_named_by(store, list_names)


@dataclass(frozen=True, slots=True)
class _Listed:
    """Candidates listed in this process, and the directories that hold none."""

    store: FileStore
    files: list[FileStatus]
    empty: frozenset[str]

    def survey(self) -> Survey:
        return Survey(min(self.files, key=attrgetter("mtime_ms"), default=None), self.empty)

    def sweep(self, reach: Reach, sweep: Sweep) -> list[FileStatus]:
        # Only old candidates can go: the manifests are searched for their names alone
        # (file_name inlined: this runs once per candidate).
        old = {f.path.rpartition("/")[2] for f in older(self.files, sweep.threshold_ms)}
        return sweep(self.store.file_io, self.files, reach.used_among(self.store, old))

    def close(self) -> None:
        pass


# --- the whole run ---------------------------------------------------------------------------
def remove_orphan_files(
    store: FileStore,
    *,
    older_than: datetime | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    executor: OrphanExecutor | None = None,
) -> OrphanFilesResult:
    """Delete the files of the table's directories that no snapshot, tag, changelog or
    branch reaches and that are older than ``older_than`` (default: ``now`` minus one
    day), then the bucket and partition directories left empty. ``dry_run`` reports
    the files and deletes nothing. ``executor`` runs the listing, the manifest reads
    and the sweep (default: :class:`ThreadExecutor`, in this process); whichever runs
    them, every decision is made here.

    Raises InvalidArgumentError for ``older_than`` after ``now``, FileTimeError when the
    filesystem's times are not in milliseconds, and CorruptMetadataError when metadata
    that a root references cannot be read; nothing is deleted then.
    """
    threshold = threshold_millis(older_than, now)
    executor = executor or ThreadExecutor()
    with ExitStack() as cleanup:
        # The directories are listed while the roots and their manifest lists are
        # read: the listing waits on the filesystem, the reading on the CPU. Whatever
        # the order, a file the roots do not name yet is protected by the threshold,
        # fixed before either starts.
        with in_background(lambda: _list(store, executor)) as listing:
            cleanup.callback(_close, listing)
            roots = table_roots(store)
            manifests = executor.manifests_named_by(store, manifest_list_names(roots))
            index_files = index_files_named_by(store, roots)
        data, candidates = listing.result()
        survey = candidates.survey()
        check_modification_times([survey.oldest] if survey.oldest else [])
        sweep = Sweep(threshold, dry_run=dry_run)
        deleted = candidates.sweep(Reach.of(roots, manifests, index_files), sweep)
    empty_buckets = [b.path for b in data.buckets if b.path in survey.empty_directories]
    removed = (
        []
        if dry_run
        else remove_emptied_directories(
            store, data, empty_buckets, [f.path for f in deleted], threshold
        )
    )
    result = OrphanFilesResult(
        deleted_count=len(deleted),
        deleted_bytes=sum(f.size for f in deleted),
        paths=tuple(sorted(f.path for f in deleted)),
    )
    logger.info(
        "orphan cleanup of %s: %s %d files (%d bytes) in %d bucket directories, removed %d "
        "empty directories",
        store.uri,
        "would delete" if dry_run else "deleted",
        result.deleted_count,
        result.deleted_bytes,
        len(data.buckets),
        len(removed),
    )
    return result


def _list(store: FileStore, executor: OrphanExecutor) -> tuple[DataDirectories, Candidates]:
    """Step 1: find the bucket directories, then list the candidates with
    ``executor``."""
    data = find_data_directories(store.file_io, store.root, len(store.schema.partition_keys))
    return data, executor.list_candidates(store, candidate_directories(store, data))


def _close(listing: Future[tuple[DataDirectories, Candidates]]) -> None:
    """Release the candidates of a listing that succeeded (it has finished by now)."""
    if listing.exception() is None:
        listing.result()[1].close()
