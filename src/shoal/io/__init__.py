"""Bytes and paths: FileIO over ``pyarrow.fs`` and the thread pool for parallel I/O.

The S3 FileIO (``shoal.io.s3_file_io``, which needs boto3) is imported on demand by
:func:`file_io_for`.
"""

from shoal.io.executor import (
    bounded_map,
    cpu_parallelism,
    in_background,
    io_map,
    parallel_map,
)
from shoal.io.file_io import DeleteError, FileIO, FileStatus, LocalFileIO, file_io_for

__all__ = [
    "DeleteError",
    "FileIO",
    "FileStatus",
    "LocalFileIO",
    "bounded_map",
    "cpu_parallelism",
    "file_io_for",
    "in_background",
    "io_map",
    "parallel_map",
]
