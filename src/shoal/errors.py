"""The exception tree of shoal.

Every error a user can cause is a subclass of :class:`ShoalError`, raised by the
layer that knows what went wrong, with the offending value as an attribute and a
message that says what to do about it. Callers match on the class, never on the
message text.

    ShoalError
    ├── TableNotFoundError
    ├── TableAlreadyExistsError
    ├── DatabaseNotFoundError
    ├── SnapshotNotFoundError
    ├── TagNotFoundError
    ├── TagAlreadyExistsError
    ├── InvalidTagNameError
    ├── SchemaMismatchError
    ├── InvalidInputDataError
    │   └── NotNullViolationError
    ├── InvalidArgumentError      (also a ValueError)
    │   └── InvalidFilterError
    ├── InvalidOptionError        (also a ValueError)
    │   └── UnknownOptionError
    ├── PartitionExpiredError
    ├── CommitConflictError
    │   ├── SequenceConflictError
    │   └── SchemaConflictError
    ├── CorruptMetadataError
    ├── CorruptDataFileError
    ├── UnsupportedFeatureError
    ├── FileTimeError
    ├── StoreUnreachableError     (also an OSError)
    └── MissingDependencyError    (also an ImportError)
"""

from __future__ import annotations


class ShoalError(Exception):
    """Root of every error shoal raises on purpose."""


class TableNotFoundError(ShoalError):
    """No table at the given identifier or path."""

    def __init__(self, table: str) -> None:
        super().__init__(
            f"table {table!r} does not exist; create it with Catalog.create_table "
            "or check the warehouse path"
        )
        self.table = table


class TableAlreadyExistsError(ShoalError):
    """``create_table`` found a table already there."""

    def __init__(self, table: str) -> None:
        super().__init__(
            f"table {table!r} already exists; open it with Catalog.get_table, "
            "or pass ignore_if_exists=True"
        )
        self.table = table


class DatabaseNotFoundError(ShoalError):
    """No database of that name in the warehouse."""

    def __init__(self, database: str) -> None:
        super().__init__(f"database {database!r} does not exist; create a table in it to create it")
        self.database = database


class SnapshotNotFoundError(ShoalError):
    """Time travel or a lookup named a snapshot that does not exist (any more)."""

    def __init__(self, message: str, *, snapshot_id: int | None = None) -> None:
        super().__init__(message)
        self.snapshot_id = snapshot_id


class TagNotFoundError(ShoalError):
    """A tag name that the table does not have."""

    def __init__(self, tag: str) -> None:
        super().__init__(f"tag {tag!r} does not exist; list_tags() shows the tags there are")
        self.tag = tag


class TagAlreadyExistsError(ShoalError):
    """``create_tag`` with a name that is taken."""

    def __init__(self, tag: str) -> None:
        super().__init__(f"tag {tag!r} already exists; delete it first or pass replace=True")
        self.tag = tag


class InvalidTagNameError(ShoalError, ValueError):
    """A tag name that is blank, all digits, too long, or would escape the tag folder."""

    def __init__(self, tag: str, reason: str) -> None:
        super().__init__(f"invalid tag name {tag!r}: {reason}")
        self.tag = tag


class SchemaMismatchError(ShoalError):
    """Data whose schema cannot be cast to the table's without losing anything."""


class InvalidInputDataError(ShoalError):
    """Source files holding values the table's columns cannot take: text that does not
    parse as its column's type, a record that does not parse at all, a value its cast
    to the column's type cannot hold. Raised before anything is committed.

    Attributes:
        path: the file of the first such value, when known.
        column: its column (None for a record that does not parse at all).
        record: the record as the file holds it, or its position (``row 3``), when known.
        counts: how many such values the source holds, per column.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        column: str | None = None,
        record: str | None = None,
        counts: dict[str, int] | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.column = column
        self.record = record
        self.counts = dict(counts or {})


class NotNullViolationError(InvalidInputDataError):
    """Source rows without a value in a NOT NULL column (a primary-key column, or one
    declared NOT NULL); ``counts`` holds how many rows, per column."""


class InvalidArgumentError(ShoalError, ValueError):
    """An argument of a public call that is out of its allowed values."""


class InvalidFilterError(InvalidArgumentError):
    """A filter that is not valid DNF over the table's columns."""


class InvalidOptionError(ShoalError, ValueError):
    """A table or read option whose value cannot be used."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        super().__init__(f"invalid value {value!r} for option {key!r}: {reason}")
        self.key = key
        self.value = value


class UnknownOptionError(InvalidOptionError):
    """An option key that nothing reads: a typo, or a key of another system.
    ``suggestion`` is the known key it most likely means (None when none is close)."""

    def __init__(self, key: str, value: object, reason: str, suggestion: str | None) -> None:
        ShoalError.__init__(self, f"unknown option {key!r}: {reason}")
        self.key = key
        self.value = value
        self.suggestion = suggestion


class PartitionExpiredError(ShoalError):
    """A write into partitions that partition expiration has already dropped."""

    def __init__(self, partitions: list[dict[str, object]]) -> None:
        super().__init__(
            f"the data holds rows of expired partitions {partitions}: partition expiration "
            "(partition.expiration-time) would drop them again. Filter those rows out, or "
            "raise partition.expiration-time"
        )
        self.partitions = partitions


class CommitConflictError(ShoalError):
    """A commit lost to a concurrent one and could not be re-planned safely; nothing
    was committed. ``attempts``: how many times an operation that plans again (a
    compaction) planned and tried to commit; None for a single commit."""

    def __init__(self, message: str, *, attempts: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts


class SequenceConflictError(CommitConflictError):
    """Another writer added rows to the same bucket of a primary-key table while this
    write was prepared; its sequence numbers must be assigned again."""


class SchemaConflictError(CommitConflictError):
    """A schema change that a concurrent one overtook: the changes no longer apply to
    the table's latest schema (``schema_id``), or every attempt to write the next
    schema version lost its race. Nothing was written; re-open the table, look at its
    schema and apply the changes again."""

    def __init__(self, message: str, *, schema_id: int | None = None) -> None:
        super().__init__(message)
        self.schema_id = schema_id


class CorruptMetadataError(ShoalError):
    """A metadata file that is missing, truncated or not in the expected format."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"metadata file {path!r} cannot be read: {reason}. The table may have been "
            "damaged outside shoal; restore the file from a backup or roll back to an "
            "earlier snapshot"
        )
        self.path = path
        self.reason = reason


class CorruptDataFileError(ShoalError):
    """A data file that a snapshot references is missing or cannot be read."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"a data file of the snapshot cannot be read: {detail}. Files are removed only by "
            "shoal's maintenance when no retained snapshot uses them, so the table was changed "
            "outside shoal; restore the file or read an earlier snapshot"
        )
        self.detail = detail


class UnsupportedFeatureError(ShoalError):
    """A table, option or argument asks for a part of the Paimon format (or of Spark)
    that shoal does not implement. ``feature`` names it where it is one."""

    def __init__(self, message: str, *, feature: str | None = None) -> None:
        super().__init__(message)
        self.feature = feature


class FileTimeError(ShoalError):
    """The filesystem reports a modification time that an age threshold cannot rely on.

    Orphan cleanup keeps the files of a commit in flight only by their age, so a time
    in seconds instead of milliseconds (or none at all) would make every file look
    decades old.
    """

    def __init__(self, path: str, mtime_ms: int) -> None:
        super().__init__(
            f"file {path!r} reports modification time {mtime_ms}, which is not in epoch "
            "milliseconds (it looks like seconds, or the filesystem reports none). Removing "
            "files by age is not safe there, so nothing was deleted; run the cleanup through "
            "a filesystem client that reports times in milliseconds"
        )
        self.path = path
        self.mtime_ms = mtime_ms


class StoreUnreachableError(ShoalError, OSError):
    """An object store (S3, GCS) that did not answer within shoal's time limit for it.

    Raised when a catalog or table on the store is opened and the store gives no
    answer in time (any answer counts, "access denied" included), and when a request to
    it fails because it cannot be connected to. Also an OSError, so that code handling
    I/O failures handles this one.

    Attributes:
        store: the store, as ``s3://bucket`` or ``gs://bucket`` with its endpoint.
        reason: what the client reported, or that no answer came in time.
        timeout: the time limit in seconds (``SHOAL_STORE_TIMEOUT``).
    """

    def __init__(self, store: str, reason: str, timeout: float, check: str) -> None:
        super().__init__(
            f"cannot reach the object store {store}: {reason}. Check {check}. A store has "
            f"{timeout:g} s to answer (the environment variable SHOAL_STORE_TIMEOUT, in "
            "seconds)"
        )
        self.store = store
        self.reason = reason
        self.timeout = timeout
        self.check = check

    def __reduce__(self) -> tuple[type[StoreUnreachableError], tuple[str, str, float, str]]:
        return StoreUnreachableError, (self.store, self.reason, self.timeout, self.check)


class UnsafeCommitError(ShoalError):
    """A commit refused before anything was published: the store has no atomic
    create-if-absent, and no commit lock is configured.

    Publishing a snapshot (or a schema or tag) creates a file only if it does not exist
    yet; on such a store that is a check, then a write, so two writers committing at
    once could both publish the same snapshot id, and one of the commits would be lost.

    Attributes:
        store: the filesystem and path of the file the commit would have created.
    """

    def __init__(self, store: str) -> None:
        super().__init__(
            f"refusing to commit to {store}: this store cannot create a file only if it "
            "does not exist, so two writers committing at once could both publish the same "
            "snapshot and one commit would be lost. Configure a commit lock that every "
            "writer shares, the storage option lock.file=<path of a file on a file system "
            "all writers see> (docs/tables.md), or keep the table on a store with an atomic "
            "create (a local or shared POSIX file system, S3)"
        )
        self.store = store

    def __reduce__(self) -> tuple[type[UnsafeCommitError], tuple[str]]:
        return UnsafeCommitError, (self.store,)


class MissingDependencyError(ShoalError, ImportError):
    """A part of shoal that needs a package of one of its extras, used where that extra
    is not installed (Spark without ``shoal[spark]``, S3 without ``shoal[s3]``)."""

    def __init__(self, feature: str, extra: str, missing: str) -> None:
        super().__init__(
            f"{feature} needs the package {missing!r}, which is not installed: "
            f"pip install 'shoal[{extra}]'"
        )
        self.feature = feature
        self.extra = extra
        self.missing = missing
