"""Exit codes of the ``shoal`` command, one per class of error.

Scripts branch on the code, never on the message: the codes are part of the
command's contract, and the group help prints this table.
"""

from __future__ import annotations

from shoal.errors import (
    CommitConflictError,
    CorruptDataFileError,
    CorruptMetadataError,
    DatabaseNotFoundError,
    InvalidArgumentError,
    InvalidInputDataError,
    InvalidOptionError,
    InvalidTagNameError,
    PartitionExpiredError,
    SchemaMismatchError,
    SnapshotNotFoundError,
    StoreUnreachableError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
    UnsupportedFeatureError,
)

OK = 0
FAILURE = 1
USAGE = 2
NOT_FOUND = 3
CONFLICT = 4
CORRUPT = 5
UNSUPPORTED = 6
UNREACHABLE = 7

# Checked in order, so a subclass listed under one code never falls to another.
_CODES: tuple[tuple[int, tuple[type[Exception], ...]], ...] = (
    (
        USAGE,
        (
            InvalidArgumentError,
            InvalidOptionError,
            InvalidTagNameError,
            SchemaMismatchError,
            InvalidInputDataError,
        ),
    ),
    (
        NOT_FOUND,
        (TableNotFoundError, DatabaseNotFoundError, SnapshotNotFoundError, TagNotFoundError),
    ),
    (
        CONFLICT,
        (
            TableAlreadyExistsError,
            TagAlreadyExistsError,
            CommitConflictError,
            PartitionExpiredError,
        ),
    ),
    (CORRUPT, (CorruptMetadataError, CorruptDataFileError)),
    (UNSUPPORTED, (UnsupportedFeatureError,)),
    (UNREACHABLE, (StoreUnreachableError,)),
)

MEANINGS: tuple[tuple[int, str], ...] = (
    (OK, "success"),
    (FAILURE, "any other error (a Spark job failed, a file system error, ...)"),
    (
        USAGE,
        "bad usage or input: an unknown option; an invalid argument, option value or tag"
        " name; data that does not fit the schema (a value that does not parse or cast to"
        " its column's type, a null in a NOT NULL column)",
    ),
    (NOT_FOUND, "not found: table, database, snapshot or tag"),
    (
        CONFLICT,
        "conflict: the table or tag exists already; a concurrent commit won; "
        "a write into an expired partition",
    ),
    (CORRUPT, "corrupt: a metadata or data file is missing or unreadable"),
    (
        UNSUPPORTED,
        "unsupported: the table, an option or a data file uses a feature of Paimon's that"
        " shoal does not implement (nothing was read or changed)",
    ),
    (UNREACHABLE, "unreachable: the object store did not answer within SHOAL_STORE_TIMEOUT"),
)


def exit_code_for(error: BaseException) -> int:
    """The exit code for an error raised by a command."""
    for code, classes in _CODES:
        if isinstance(error, classes):
            return code
    return FAILURE
