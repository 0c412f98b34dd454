"""Removing the directories that cleanup leaves empty.

Removal is non-recursive and fails on a directory that is not empty, so a file
written meanwhile is never lost with its directory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Set

from shoal.io import FileIO, io_map


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0]


def ancestors(path: str, root: str) -> Iterator[str]:
    """``path`` and the directories above it, up to ``root`` (left out)."""
    while path != root and path.startswith(root + "/"):
        yield path
        path = parent(path)


def remove_empty_directories(
    file_io: FileIO,
    directories: Iterable[str],
    removable: Set[str],
    *,
    missing_counts: bool = False,
) -> list[str]:
    """Remove those of ``directories`` that are empty, deepest first, and then each
    parent left empty, as long as it is in ``removable``; returns what was removed.
    With ``missing_counts``, a directory already gone counts as removed (a run stopped
    between a directory and its parent reaches the parent when it runs again)."""
    pending = {d for d in directories if d in removable}
    removed: list[str] = []
    while pending:
        depth = max(d.count("/") for d in pending)
        level = sorted(d for d in pending if d.count("/") == depth)
        pending.difference_update(level)
        removed_now = io_map(file_io.remove_empty_dir, level, concurrent=file_io.concurrent_deletes)
        for directory, ok in zip(level, removed_now, strict=True):
            if ok or (missing_counts and not file_io.exists(directory)):
                removed.append(directory)
                if parent(directory) in removable:
                    pending.add(parent(directory))
    return removed
