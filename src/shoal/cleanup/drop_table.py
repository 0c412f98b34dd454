"""Removing a whole table directory, for ``Catalog.drop_table``."""

from __future__ import annotations

from shoal.io import FileIO


def remove_table_directory(file_io: FileIO, root: str) -> None:
    """Delete the table's directory and everything in it (metadata and data)."""
    file_io.delete_dir(root)
