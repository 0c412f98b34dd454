"""The layout of primary-key (key-value) data files, as Paimon writes them.

A file holds, in this order: one ``_KEY_<name>`` column per primary-key column that
is not a partition column (the "trimmed" key), ``_SEQUENCE_NUMBER`` (BIGINT),
``_VALUE_KIND`` (TINYINT, the row kind: 0 insert, 1 update-before, 2 update-after,
3 delete), then every column of the table. Rows are sorted by key, one row per key.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import pyarrow as pa

from shoal.format import types as T
from shoal.format.schema import TableSchema

KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"

INSERT = 0
UPDATE_BEFORE = 1
UPDATE_AFTER = 2
DELETE = 3


def is_retract(kinds: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Rows that remove their key (update-before and delete)."""
    import pyarrow.compute as pc

    return pc.or_(pc.equal(kinds, UPDATE_BEFORE), pc.equal(kinds, DELETE))


@dataclass(frozen=True)
class KeyValueLayout:
    """Column names and types of one primary-key table's data files."""

    schema: TableSchema

    @cached_property
    def key_names(self) -> list[str]:
        """The trimmed primary key: primary-key columns that are not partition columns."""
        partition = set(self.schema.partition_keys)
        trimmed = [k for k in self.schema.primary_keys if k not in partition]
        return trimmed or list(self.schema.primary_keys)

    @cached_property
    def key_columns(self) -> list[str]:
        return [KEY_PREFIX + k for k in self.key_names]

    @cached_property
    def key_types(self) -> list[T.DataType]:
        return [self.schema.field(k).type for k in self.key_names]

    @cached_property
    def value_schema(self) -> pa.Schema:
        return self.schema.arrow_schema()

    @cached_property
    def file_schema(self) -> pa.Schema:
        value = self.value_schema
        keys = [pa.field(KEY_PREFIX + k, value.field(k).type, False) for k in self.key_names]
        system = [
            pa.field(SEQUENCE_NUMBER, pa.int64(), False),
            pa.field(VALUE_KIND, pa.int8(), False),
        ]
        return pa.schema([*keys, *system, *value])

    def to_file_table(self, values: pa.Table, sequence: pa.Array, kinds: pa.Array) -> pa.Table:
        """Rows of the table's schema as rows of a data file (keys and system columns
        first)."""
        keys = [values.column(k) for k in self.key_names]
        columns = [*keys, sequence, kinds, *values.columns]
        return pa.Table.from_arrays(columns, schema=self.file_schema)


# How the rows of one key combine (the merge engines shoal implements).
DEDUPLICATE = "deduplicate"
FIRST_ROW = "first-row"
AGGREGATION = "aggregation"
PARTIAL_UPDATE = "partial-update"


@dataclass(frozen=True, slots=True)
class FieldFunction:
    """How one column of an ``aggregation`` table combines the rows of a key: the
    aggregate function's name, whether it skips retractions, listagg's delimiter,
    whether collect keeps distinct elements, and nested_update's nested key."""

    function: str
    ignore_retract: bool = False
    delimiter: str = ","
    distinct: bool = False
    nested_key: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SequenceGroup:
    """A ``partial-update`` sequence group (``fields.<sequence>.sequence-group``): the
    columns whose values order its updates, the other columns they update, and whether
    a -D row of the group removes the whole row
    (``partial-update.remove-record-on-sequence-group``)."""

    sequence: tuple[str, ...]
    members: tuple[str, ...]
    removes: bool = False


@dataclass(frozen=True, slots=True)
class MergeSettings:
    """A primary-key table's merge engine, its ``sequence.field`` and ``ignore-delete``;
    for ``aggregation`` each column's function (``functions``, by column name; for
    ``partial-update`` the columns that aggregate), for both ``aggregation`` and
    ``partial-update`` whether a delete row removes the key, and partial-update's
    sequence groups."""

    engine: str = DEDUPLICATE
    sequence_field: str | None = None
    ignore_delete: bool = False
    functions: tuple[tuple[str, FieldFunction], ...] = ()
    remove_record_on_delete: bool = False
    sequence_groups: tuple[SequenceGroup, ...] = ()
    # Paimon's LookupMergeFunction (changelog-producer = lookup, force-lookup): of a
    # key's rows above level 0 only the newest counts, which already holds the merge of
    # those below it (each lookup compaction merges the row it looked up).
    lookup: bool = False

    @property
    def combines(self) -> bool:
        """Whether merged rows combine the values of several rows (aggregation and
        partial-update) rather than keep one of them."""
        return self.engine in (AGGREGATION, PARTIAL_UPDATE)
