"""Bytes and paths: FileIO over ``pyarrow.fs`` and the thread pool for parallel I/O."""

from shoal.io.executor import bounded_map, cpu_parallelism, io_map, parallel_map
from shoal.io.file_io import FileIO, FileStatus, LocalFileIO, file_io_for

__all__ = [
    "FileIO",
    "FileStatus",
    "LocalFileIO",
    "bounded_map",
    "cpu_parallelism",
    "file_io_for",
    "io_map",
    "parallel_map",
]
