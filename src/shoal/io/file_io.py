"""FileIO: read, write, atomic create, list, delete. It knows bytes and paths only.

Paths are the filesystem's own (absolute OS paths for the local disk,
``bucket/key`` for S3). :func:`file_io_for` turns a user's URI or path into a
FileIO and such a path: :class:`LocalFileIO` for the local disk,
:class:`~shoal.io.s3_file_io.S3FileIO` for ``s3://`` URIs, the generic
:class:`FileIO` over ``pyarrow.fs`` for any other filesystem pyarrow knows.
"""

from __future__ import annotations

import abc
import contextlib
import copy
import logging
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.fs as pafs

from shoal.errors import InvalidOptionError, UnknownOptionError, UnsafeCommitError
from shoal.io.commit_lock import LOCK_FILE, CommitLock
from shoal.io.executor import io_map, parallel_map

logger = logging.getLogger(__name__)


class FileStatus(NamedTuple):
    """One entry of a listing (a named tuple: listings build one per file, and a
    tuple costs half what a frozen dataclass does to build)."""

    path: str
    size: int
    mtime_ms: int
    is_dir: bool


class DeleteError(OSError):
    """Some files of a :meth:`FileIO.delete_many` could not be deleted; every other
    path was tried, and ``deleted`` of them were deleted."""

    def __init__(self, failed: Mapping[str, str], deleted: int) -> None:
        first = next(iter(failed.items()), ("", ""))
        super().__init__(f"could not delete {len(failed)} file(s), such as {first[0]}: {first[1]}")
        self.failed = dict(failed)  # path -> why it could not be deleted
        self.deleted = deleted

    def __reduce__(self) -> tuple[type[DeleteError], tuple[dict[str, str], int]]:
        return DeleteError, (self.failed, self.deleted)  # picklable for remote tasks


class FileIO:
    """File operations over any ``pyarrow.fs`` filesystem.

    ``try_create`` here checks, then writes: ``pyarrow.fs`` offers no conditional
    put, so two writers racing for the same snapshot id could both succeed. So it
    refuses (:class:`~shoal.errors.UnsafeCommitError`) unless a commit lock is
    configured (``commit_lock``, the storage option ``lock.file``), and then holds the
    lock from the check to the end of the write. The local disk (:class:`LocalFileIO`)
    and S3 (:class:`~shoal.io.s3_file_io.S3FileIO`, a conditional put) have a truly
    atomic create: ``atomic_create`` says which.
    """

    atomic_create = False
    # Whether many small reads gain from running on the I/O pool: yes where each read
    # waits on the network; on a local disk decoding (which holds the GIL) dominates.
    concurrent_reads = True
    # Whether many deletes gain from it: yes on a network store; a local unlink takes
    # microseconds, less than handing it to a pool thread.
    concurrent_deletes = True

    commit_lock: CommitLock | None = None  # held around a create where it is not atomic

    def __init__(self, fs: pafs.FileSystem) -> None:
        self.fs = fs

    def with_commit_lock(self, lock: CommitLock) -> FileIO:
        """A copy of this FileIO whose creates hold ``lock`` (this one is unchanged:
        FileIOs are shared)."""
        locked = copy.copy(self)
        locked.commit_lock = lock
        return locked

    def read_bytes(self, path: str) -> bytes:
        with self.fs.open_input_stream(path) as f:
            return bytes(f.read())

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write (or replace) a whole file, creating its parent directories."""
        self.mkdirs(_parent(path))
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    def overwrite(self, path: str, data: bytes) -> None:
        """Replace a whole file so that readers see the old or the new content, never
        a part (an object store's put is atomic already)."""
        self.write_bytes(path, data)

    def require_safe_commit(self, path: str) -> None:
        """Raise UnsafeCommitError unless a commit can be published at ``path`` safely
        (writers call it before they write a data file)."""
        if not self.atomic_create and self.commit_lock is None:
            raise UnsafeCommitError(f"{self.fs.type_name}://{path}")

    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` holding ``data`` unless it exists; False if it did.

        Every commit publishes through here; without an atomic create, only under the
        commit lock. Raises UnsafeCommitError when none is configured."""
        self.require_safe_commit(path)
        lock = self.commit_lock
        assert lock is not None
        with lock.held():
            if self.exists(path):
                return False
            self.write_bytes(path, data)
            return True

    def exists(self, path: str) -> bool:
        return bool(self.fs.get_file_info(path).type != pafs.FileType.NotFound)

    def is_dir(self, path: str) -> bool:
        return bool(self.fs.get_file_info(path).type == pafs.FileType.Directory)

    def delete(self, path: str) -> bool:
        """Delete a file; False if it was not there."""
        try:
            self.fs.delete_file(path)
        except FileNotFoundError:
            return False
        return True

    def delete_many(self, paths: Sequence[str]) -> int:
        """Delete the files at ``paths``; returns how many were deleted (an absent file
        is skipped, as by :meth:`delete`; a store whose batch delete cannot tell an
        absent file from a deleted one counts it).

        No order among the paths is promised: a caller that needs one deletes in
        steps, one call per step. Every path is tried (on the I/O pool where deletes
        gain from it); if some could not be deleted, :class:`DeleteError` names them
        once the others are done. This implementation calls :meth:`delete` once per
        path; object stores override it with their batch delete."""

        def attempt(path: str) -> bool | OSError:
            try:
                return self.delete(path)
            except OSError as exc:
                return exc

        outcomes = io_map(attempt, paths, concurrent=self.concurrent_deletes)
        failed = {p: str(o) for p, o in zip(paths, outcomes, strict=True) if isinstance(o, OSError)}
        deleted = sum(o is True for o in outcomes)
        if failed:
            raise DeleteError(failed, deleted)
        return deleted

    def delete_dir(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_dir(path)

    def remove_empty_dir(self, path: str) -> bool:
        """Remove a directory if it is empty; True if it was removed.

        Object stores have no directories to remove, and a listing followed by a
        prefix delete could remove a file written in between: this removes nothing
        there. :class:`LocalFileIO` removes the directory atomically."""
        del path
        return False

    def mkdirs(self, path: str) -> None:
        if path:
            self.fs.create_dir(path, recursive=True)

    def rename(self, src: str, dst: str) -> None:
        self.fs.move(src, dst)

    def list_status(self, path: str, *, recursive: bool = False) -> list[FileStatus]:
        """Entries under a directory; an absent directory lists as empty."""
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=recursive)
        return [_status(info) for info in self.fs.get_file_info(selector)]

    def open_input_file(self, path: str) -> Any:
        return self.fs.open_input_file(path)

    def open_output_stream(self, path: str) -> Any:
        self.mkdirs(_parent(path))
        return self.fs.open_output_stream(path)


class ObjectStoreFileIO(FileIO, abc.ABC):
    """A FileIO on an object store: pyarrow's filesystem for the data path, the store's
    own client (:meth:`connect`, made lazily, once per process) for what pyarrow lacks,
    such as the conditional create. Thread-safe and picklable: the options and the
    filesystem travel, the client is made again where it lands."""

    atomic_create = True
    concurrent_reads = True
    concurrent_deletes = True

    def __init__(self, options: Any, fs: pafs.FileSystem) -> None:
        super().__init__(fs)
        self.options = options
        self._lock = threading.Lock()
        self._client: Any = None
        self._client_pid = 0

    @staticmethod
    @abc.abstractmethod
    def connect(options: Any) -> Any:
        """A new client of the store for ``options``."""

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "fs": self.fs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        ObjectStoreFileIO.__init__(self, state["options"], state["fs"])

    @property
    def client(self) -> Any:
        """The store's client (one per process)."""
        with self._lock:
            if self._client is None or self._client_pid != os.getpid():
                self._client = self.connect(self.options)
                self._client_pid = os.getpid()
            return self._client


def delete_in_batches(
    paths: Sequence[str],
    size: int,
    split: Callable[[str], tuple[str, str]],
    delete_batch: Callable[[tuple[str, list[str]]], tuple[int, dict[str, str]]],
) -> int:
    """:meth:`FileIO.delete_many` on a store with a batch delete: the paths grouped by
    bucket (``split`` gives a path's bucket and key) into batches of at most ``size``
    keys, ``delete_batch`` run for each on the I/O pool (it returns how many went and,
    by path, why the others did not); DeleteError names every failed path at the end."""
    by_bucket: dict[str, list[str]] = {}
    for path in paths:
        bucket, key = split(path)
        by_bucket.setdefault(bucket, []).append(key)
    batches = [
        (bucket, keys[i : i + size])
        for bucket, keys in by_bucket.items()
        for i in range(0, len(keys), size)
    ]
    deleted = 0
    failed: dict[str, str] = {}
    for count, errors in parallel_map(delete_batch, batches):
        deleted += count
        failed.update(errors)
    if failed:
        raise DeleteError(failed, deleted)
    return deleted


def _status(info: pafs.FileInfo) -> FileStatus:
    mtime = info.mtime_ns
    size = info.size
    # Only a file has a size; the type (an enum built on every access) is asked of the rest.
    is_dir = size is None and info.type == pafs.FileType.Directory
    return FileStatus(info.path, size or 0, mtime // 1_000_000 if mtime is not None else 0, is_dir)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


class LocalFileIO(FileIO):
    """The local disk, with ``os`` calls on the hot paths and an atomic create.

    ``try_create`` writes a hidden temporary file beside the target and hard-links
    it into place: ``link`` fails if the target exists, so exactly one of several
    racing writers (threads or processes) wins, and a reader never sees a
    partially written file.

    Listings stay with pyarrow: it lists a whole directory without holding the GIL,
    so a listing on one thread does not stall (nor is stalled by) decoding on
    another, where ``os.scandir`` takes the GIL back after every entry.
    """

    atomic_create = True
    concurrent_reads = False
    concurrent_deletes = False

    def __init__(self) -> None:
        super().__init__(pafs.LocalFileSystem())

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def write_bytes(self, path: str, data: bytes) -> None:
        try:
            f = open(path, "wb")  # noqa: SIM115
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            f = open(path, "wb")  # noqa: SIM115
        with f:
            f.write(data)

    def overwrite(self, path: str, data: bytes) -> None:
        directory, name = os.path.split(path)
        tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        self.write_bytes(tmp, data)
        os.replace(tmp, path)

    def try_create(self, path: str, data: bytes) -> bool:
        directory, name = os.path.split(path)
        tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        self.write_bytes(tmp, data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)
        return True

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def open_output_stream(self, path: str) -> Any:
        try:
            return pa.OSFile(path, "wb")
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return pa.OSFile(path, "wb")

    def delete(self, path: str) -> bool:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        return True

    def delete_many(self, paths: Sequence[str]) -> int:
        # FileIO.delete_many's contract, in one loop: the unlinks are what it costs.
        failed: dict[str, str] = {}
        deleted = 0
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                failed[path] = str(exc)
                continue
            deleted += 1
        if failed:
            raise DeleteError(failed, deleted)
        return deleted

    def remove_empty_dir(self, path: str) -> bool:
        try:
            os.rmdir(path)  # fails unless the directory is empty
        except OSError:
            return False
        return True


def file_io_for(uri: str, storage_options: Mapping[str, str] | None = None) -> tuple[FileIO, str]:
    """The FileIO for a URI or plain path, and the path within its filesystem.

    ``s3://bucket/path`` gives an :class:`~shoal.io.s3_file_io.S3FileIO` configured by
    ``storage_options`` over the usual AWS environment variables (it needs boto3:
    ``shoal[s3]``); ``gs://bucket/path`` a FileIO over pyarrow's GcsFileSystem
    (:mod:`shoal.io.gcs_file_io`); Azure URIs (``az://``, ``abfs[s]://``, ``wasb[s]://``)
    :mod:`shoal.io.azure_file_io`'s. For these, the store must answer a first request
    within the store time limit (:mod:`shoal.io.connect`), or StoreUnreachableError.

    ``storage_options`` configure the store (docs/tables.md lists the keys of each);
    ``lock.file`` names a commit lock (:mod:`shoal.io.commit_lock`) for a store without
    an atomic create, where commits are refused without one. A key the store does not
    take is refused (UnknownOptionError), never ignored."""
    options = _checked(storage_options)
    lock_path = options.pop(LOCK_FILE, None)
    file_io, path = _store_for(uri, options)
    if lock_path is not None and not file_io.atomic_create:
        file_io = file_io.with_commit_lock(CommitLock.at(lock_path))
    return file_io, path


def _checked(storage_options: Mapping[str, str] | None) -> dict[str, str]:
    if storage_options is None:
        return {}
    if not isinstance(storage_options, Mapping):
        raise InvalidOptionError(
            "storage_options", type(storage_options).__name__, "give a mapping of strings"
        )
    for key in storage_options:
        if not isinstance(key, str):
            raise InvalidOptionError(str(key), "<hidden>", "storage option keys are strings")
    return dict(storage_options)


def _store_for(uri: str, options: dict[str, str]) -> tuple[FileIO, str]:
    # The object-store modules load on demand: S3's needs boto3, an extra, and a
    # pyarrow built without GCS support has no GcsFileSystem.
    if uri.startswith("s3://"):
        from shoal.io.s3_file_io import s3_file_io_for

        return s3_file_io_for(uri, options)
    if uri.startswith(("gs://", "gcs://")):
        from shoal.io.gcs_file_io import gcs_file_io_for

        return gcs_file_io_for(uri, options)
    if uri.startswith(("az://", "abfs://", "abfss://", "wasb://", "wasbs://")):
        from shoal.io.azure_file_io import azure_file_io_for

        return azure_file_io_for(uri, options)
    if "://" not in uri or uri.startswith("file://"):
        _refuse_any(options, "a local path")
        local = uri[len("file://") :] if uri.startswith("file://") else uri
        return LocalFileIO(), os.path.abspath(os.path.expanduser(local))
    _refuse_any(options, uri.split("://", 1)[0] + ":// (configured by its URI)")
    fs, path = pafs.FileSystem.from_uri(uri)
    if isinstance(fs, pafs.LocalFileSystem):
        return LocalFileIO(), path
    logger.debug("using %s for %s", type(fs).__name__, uri)
    return FileIO(fs), path.rstrip("/")


def _refuse_any(options: Mapping[str, str], store: str) -> None:
    """Refuse storage options (but the commit lock's) where the store takes none."""
    for key in options:
        suggestion = LOCK_FILE if key.lower().startswith("lock") else None
        raise UnknownOptionError(
            key, "<hidden>", f"{store} takes no storage options but {LOCK_FILE}", suggestion
        )
