"""The filesystem catalog: ``<warehouse>/<database>.db/<table>/``, as Paimon lays it out."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from shoal import features
from shoal import options as O
from shoal.cleanup.drop_table import remove_table_directory
from shoal.core import merge_engine
from shoal.core.paths import PathFactory
from shoal.core.schema_change import check_definition
from shoal.core.schema_manager import SchemaManager
from shoal.errors import (
    DatabaseNotFoundError,
    InvalidArgumentError,
    SchemaMismatchError,
    ShoalError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from shoal.event_time.bounds import check_event_time_field
from shoal.format import types as T
from shoal.format.schema import TableSchema
from shoal.io import file_io_for
from shoal.table import Table

DB_SUFFIX = ".db"
DEFAULT_DATABASE = "default"


# A database is the folder ``<name>.db`` and a table the folder ``<name>`` in it; names
# of up to this many UTF-8 bytes fit the 255 bytes a file name may have.
MAX_NAME_BYTES = 200


def _split_identifier(identifier: str) -> tuple[str, str]:
    if not isinstance(identifier, str):
        raise InvalidArgumentError(
            f"a table identifier is a string 'database.table', not {type(identifier).__name__}"
        )
    database, dot, table = identifier.partition(".")
    if not dot:
        database, table = DEFAULT_DATABASE, identifier
    for part in (database, table):
        problem = _name_problem(part)
        if problem is not None:
            raise InvalidArgumentError(
                f"invalid table identifier {identifier!r}: {problem}; use 'database.table' "
                "with names free of '/', '\\' and '.'"
            )
    return database, table


def _check_database(database: str) -> None:
    problem = _name_problem(database)
    if problem is not None:
        raise InvalidArgumentError(f"invalid database name {database!r}: {problem}")


def _name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a database or table name (a folder of the warehouse), if so."""
    if not isinstance(name, str) or not name.strip():
        return "a name must not be blank"
    if any(c in name for c in "/\\.") or "\0" in name:
        return "a name must not contain '/', '\\' or '.'"
    if name != name.strip():
        return "a name must not begin or end with whitespace"
    if any(unicodedata.category(c) == "Cc" for c in name):
        return "a name must not contain control characters"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "a name must be valid Unicode text"
    if size > MAX_NAME_BYTES:
        return f"a name must not be longer than {MAX_NAME_BYTES} bytes in UTF-8"
    return None


class Catalog:
    """Tables under one warehouse directory (a local path or a URI such as ``s3://b/wh``).

    Database and table names are folder names: not blank, free of ``/``, ``\\``, ``.``
    and control characters, without leading or trailing whitespace, and at most 200
    bytes in UTF-8. Any other name raises InvalidArgumentError before anything is
    written, so no identifier reaches outside the warehouse.

    ``storage_options`` configure the warehouse's store (keys such as ``s3.endpoint``;
    docs/tables.md lists those of each store), over what the environment configures.
    """

    def __init__(self, warehouse: str, *, storage_options: Mapping[str, str] | None = None) -> None:
        if not isinstance(warehouse, str) or not warehouse.strip("/ "):
            raise InvalidArgumentError(
                f"the warehouse must be a directory path or URI, not {warehouse!r}"
            )
        self.warehouse = warehouse.rstrip("/")
        try:
            self._file_io, self._root = file_io_for(self.warehouse, storage_options)
        except ShoalError:
            raise
        except ValueError as exc:  # pyarrow.ArrowInvalid: a URI no filesystem knows
            raise InvalidArgumentError(f"warehouse {warehouse!r}: {exc}") from None

    def _uri(self, database: str, table: str | None = None) -> str:
        tail = f"/{table}" if table is not None else ""
        return f"{self.warehouse}/{database}{DB_SUFFIX}{tail}"

    def _root_of(self, database: str, table: str) -> str:
        return f"{self._root}/{database}{DB_SUFFIX}/{table}"

    def create_table(
        self,
        identifier: str,
        schema: pa.Schema,
        *,
        partition_keys: Sequence[str] | None = (),
        primary_keys: Sequence[str] | None = (),
        options: Mapping[str, Any] | None = None,
        comment: str | None = None,
        ignore_if_exists: bool = False,
    ) -> Table:
        """Create a table (and its database folder when missing).

        Raises:
            TableAlreadyExistsError: unless ``ignore_if_exists``.
            SchemaMismatchError / InvalidOptionError: nothing is written then.
        """
        database, name = _split_identifier(identifier)
        raw_options = {str(k): str(v) for k, v in (options or {}).items()}
        table_schema = build_schema(
            schema, partition_keys or (), primary_keys or (), raw_options, comment
        )
        root = self._root_of(database, name)
        paths = PathFactory(root)
        if not SchemaManager(self._file_io, paths).try_create(table_schema):
            if ignore_if_exists:
                return self.get_table(identifier)
            raise TableAlreadyExistsError(identifier)
        return Table._open(self._file_io, self._uri(database, name), root, identifier)

    def get_table(self, identifier: str) -> Table:
        database, name = _split_identifier(identifier)
        try:
            return Table._open(
                self._file_io,
                self._uri(database, name),
                self._root_of(database, name),
                identifier,
            )
        except TableNotFoundError:
            raise TableNotFoundError(identifier) from None

    def table_exists(self, identifier: str) -> bool:
        database, name = _split_identifier(identifier)
        return self._file_io.exists(f"{self._root_of(database, name)}/schema/schema-0") or bool(
            SchemaManager(self._file_io, PathFactory(self._root_of(database, name))).list_ids()
        )

    def list_databases(self) -> list[str]:
        try:
            statuses = self._file_io.list_status(self._root)
        except NotADirectoryError:
            raise InvalidArgumentError(
                f"warehouse {self.warehouse!r} is a file; give the directory of the tables"
            ) from None
        return sorted(
            s.path.rsplit("/", 1)[-1][: -len(DB_SUFFIX)]
            for s in statuses
            if s.is_dir and s.path.endswith(DB_SUFFIX)
        )

    def list_tables(self, database: str = DEFAULT_DATABASE) -> list[str]:
        """Names of the tables in ``database``. Raises DatabaseNotFoundError."""
        _check_database(database)
        db_root = f"{self._root}/{database}{DB_SUFFIX}"
        if not self._file_io.is_dir(db_root):
            raise DatabaseNotFoundError(database)
        return sorted(
            s.path.rsplit("/", 1)[-1]
            for s in self._file_io.list_status(db_root)
            if s.is_dir and self._file_io.is_dir(f"{s.path}/schema")
        )

    def drop_table(self, identifier: str, *, ignore_if_not_exists: bool = False) -> None:
        """Delete a table with all its data and metadata."""
        database, name = _split_identifier(identifier)
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(identifier)
        remove_table_directory(self._file_io, self._root_of(database, name))


def build_schema(
    schema: pa.Schema,
    partition_keys: Sequence[str],
    primary_keys: Sequence[str],
    options: dict[str, str],
    comment: str | None,
) -> TableSchema:
    """Schema 0 of a new table, validated before anything is written."""
    if not isinstance(schema, pa.Schema):
        raise SchemaMismatchError(f"schema must be a pyarrow.Schema, not {type(schema).__name__}")
    names = schema.names
    if len(set(names)) != len(names):
        raise SchemaMismatchError(f"duplicate column names in {names}")
    for key in (*partition_keys, *primary_keys):
        if key not in names:
            raise SchemaMismatchError(f"key column {key!r} is not in the schema {names}")
    features.check_option_keys(options)
    O.validate(options)
    check_definition(names, partition_keys, primary_keys, options)
    if primary_keys:
        # Primary-key columns are NOT NULL, as Paimon declares them.
        schema = pa.schema(
            [f.with_nullable(False) if f.name in primary_keys else f for f in schema]
        )
    features.check_new_options(options, primary_key=bool(primary_keys))
    fields = T.fields_from_arrow_schema(schema)
    check_event_time_field(fields, list(primary_keys), options)
    partition_types = [f.type for f in fields if f.name in partition_keys]
    if any(not isinstance(t, T.AtomicType) for t in partition_types):
        raise SchemaMismatchError("partition columns must be of scalar types")
    table_schema = TableSchema(
        id=0,
        fields=fields,
        highest_field_id=T.highest_field_id(fields),
        partition_keys=tuple(partition_keys),
        primary_keys=tuple(primary_keys),
        options=options,
        comment=comment,
        time_millis=int(time.time() * 1000),
    )
    merge_engine.check_new_field_options(table_schema, options)
    if primary_keys:
        # The merge engine's per-column functions are checked against the columns.
        merge_engine.merge_settings(table_schema, options, "the new table")
    return table_schema
