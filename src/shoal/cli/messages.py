"""Errors in the command line's terms: the library's messages name Python calls
("create it with Catalog.create_table", "pass replace=True"); through ``shoal`` they
name the command or flag that does the same, and a hint says what helps next."""

from __future__ import annotations

from shoal.errors import (
    CorruptMetadataError,
    ShoalError,
    SnapshotNotFoundError,
    TableNotFoundError,
)

# Each Python phrase of a library message, and what a command-line user types instead.
PYTHON_TO_CLI: tuple[tuple[str, str], ...] = (
    ("create it with Catalog.create_table", "create it with 'shoal table create'"),
    (
        "open it with Catalog.get_table, or pass ignore_if_exists=True",
        "'shoal table create --if-not-exists' succeeds when it exists",
    ),
    ("list_tags() shows the tags there are", "'shoal tag list TABLE' shows the tags there are"),
    (
        "delete it first or pass replace=True",
        "delete it first ('shoal tag delete') or move it with 'shoal tag create --replace'",
    ),
    ("Table.update_schema().update_column_type", "shoal table alter --type"),
    ("the primary_keys argument of create_table", "--primary-keys of 'shoal table create'"),
    ("the partition_keys argument of create_table", "--partition-keys of 'shoal table create'"),
)


def cli_message(exc: BaseException) -> str:
    """The message of ``exc`` with every Python call it names replaced by its command."""
    message = str(exc) or type(exc).__name__
    for python, command in PYTHON_TO_CLI:
        message = message.replace(python, command)
    return message


def hint(exc: ShoalError) -> str | None:
    """The command that helps next, where the message does not say it already."""
    if isinstance(exc, SnapshotNotFoundError):
        return "'shoal snapshots TABLE' lists the snapshots"
    if isinstance(exc, CorruptMetadataError):
        return (
            "'shoal snapshots TABLE' lists the snapshots, marking damaged ones; "
            "'shoal rollback TABLE --snapshot N' returns to an earlier one"
        )
    if isinstance(exc, TableNotFoundError):
        return "'shoal table list --warehouse DIR' lists the tables"
    return None
