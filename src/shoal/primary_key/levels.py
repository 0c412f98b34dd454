"""Sorted runs: how one bucket's files of a primary-key table form an LSM tree.

Every level-0 file is a sorted run of its own (newest first); each higher level is
one sorted run of files with disjoint key ranges. Reads merge the runs; compaction
strategies pick runs to rewrite.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shoal.core.paths import data_file_path
from shoal.format.data_file import DataFileMeta


@dataclass(frozen=True, slots=True)
class SortedRun:
    level: int
    files: tuple[DataFileMeta, ...]

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)


def sorted_runs(
    files: Sequence[DataFileMeta], decode_key: Callable[[bytes], tuple[Any, ...]]
) -> list[SortedRun]:
    """The runs of one bucket's live files, newest first; files of a level in key order
    (``decode_key`` turns a file's min-key BinaryRow into a comparable tuple)."""
    level0 = sorted(
        (f for f in files if f.level == 0),
        key=lambda f: (f.max_sequence_number, f.file_name),
        reverse=True,
    )
    runs = [SortedRun(0, (f,)) for f in level0]
    by_level: dict[int, list[DataFileMeta]] = {}
    for f in files:
        if f.level > 0:
            by_level.setdefault(f.level, []).append(f)
    for level in sorted(by_level):
        ordered = sorted(by_level[level], key=lambda f: decode_key(f.min_key))
        runs.append(SortedRun(level, tuple(ordered)))
    return runs


@dataclass(frozen=True, slots=True)
class RunFile:
    """A file of a sorted run as the merge reads it: its path, the id of the schema it
    was written with, the sorted positions of its rows that a deletion vector marks
    (None: no vector), and its level."""

    path: str
    schema_id: int
    deleted: np.ndarray | None = None
    level: int = 0


def run_files(
    runs: Sequence[SortedRun],
    bucket_dir: str,
    vectors: Mapping[str, np.ndarray] | None = None,
) -> list[list[RunFile]]:
    """Each run's files, in key order, with their deletion ``vectors``: what the merge
    reads."""
    vectors = vectors or {}
    return [
        [
            RunFile(data_file_path(bucket_dir, f), f.schema_id, vectors.get(f.file_name), f.level)
            for f in run.files
        ]
        for run in runs
    ]
