"""A commit lock for stores without an atomic create: an ``flock`` on a shared file.

Committing publishes a file only if it does not exist yet (``FileIO.try_create``). A
store that cannot do that in one step (pyarrow's generic filesystems, HDFS among them)
checks, then writes; two writers doing so at once could both publish one snapshot id.
With the storage option ``lock.file`` set to a path, every create of a commit holds an
exclusive ``flock`` on that file from the check to the end of the write, so writers
that share the file take turns.

The lock serialises the writers that use the same file on the same file system: every
writer must name it, and the file system must make ``flock`` mean one thing for all of
them (a local disk for writers on one machine; NFS with locking, which Linux maps to
NFS byte-range locks, across machines). The operating system releases the lock of a
process that dies, so a crashed writer never leaves it held. Reads never take it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

from shoal.errors import CommitConflictError, InvalidOptionError

LOCK_FILE = "lock.file"  # the storage option naming the lock's file
WAIT_SECONDS = 60.0  # the longest a commit waits for the lock
_POLL = (0.001, 0.05)  # first and longest pause between attempts, seconds


@dataclass(frozen=True, slots=True)
class CommitLock:
    """The lock on the file at ``path`` (created when missing). Picklable: it is a path."""

    path: str
    wait_seconds: float = WAIT_SECONDS

    @staticmethod
    def at(path: str) -> CommitLock:
        """The lock at ``path`` (``~`` expanded, made absolute) once it can be opened.

        Raises InvalidOptionError naming ``lock.file`` when its directory is missing or
        the file cannot be opened for writing."""
        if not isinstance(path, str) or not path.strip():
            raise InvalidOptionError(LOCK_FILE, path, "give the path of a file")
        if "://" in path:
            raise InvalidOptionError(
                LOCK_FILE, path, "the lock is a file on a POSIX file system: give its path"
            )
        lock = CommitLock(os.path.abspath(os.path.expanduser(path)))
        try:
            os.close(lock._open())
        except OSError as exc:
            raise InvalidOptionError(
                LOCK_FILE, path, f"cannot open it for locking ({exc.strerror})"
            ) from None
        return lock

    def _open(self) -> int:
        return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the ``with`` block. A descriptor of its own per holder, so
        threads of one process take turns as processes do.

        Raises CommitConflictError when another writer holds it for longer than
        ``wait_seconds`` (nothing was committed)."""
        fd = self._open()
        try:
            deadline = time.monotonic() + self.wait_seconds
            pause = _POLL[0]
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                if time.monotonic() >= deadline:
                    raise CommitConflictError(
                        f"the commit lock {self.path} (storage option {LOCK_FILE}) was held "
                        f"by another writer for more than {self.wait_seconds:g} s; nothing "
                        "was committed: commit again"
                    )
                time.sleep(pause)
                pause = min(pause * 2, _POLL[1])
            yield
        finally:
            os.close(fd)  # releases the lock
