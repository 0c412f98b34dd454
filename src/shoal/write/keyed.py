"""Writing primary-key tables: rows buffered per bucket, sequenced, sorted by key, one
row per key, written as level-0 files (sorted runs).

Sequence numbers continue from the bucket's highest one in the snapshot the write
is planned against; the committer refuses the commit if another writer added to the
bucket meanwhile (their numbers could interleave), and the write is then sequenced
again and rewritten.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shoal import options as O
from shoal.core import kv
from shoal.core.kv import KeyValueLayout, MergeSettings
from shoal.core.store import FileStore
from shoal.errors import InvalidArgumentError, SchemaMismatchError, UnsupportedFeatureError
from shoal.format.data_file import DataFileMeta
from shoal.format.snapshot import Snapshot
from shoal.primary_key import engines
from shoal.primary_key.merge import winners
from shoal.write import bucket_sequences
from shoal.write.bucket_index import BucketIndex
from shoal.write.conform import conform, to_batches
from shoal.write.files import CommitMessage, RollingFileWriter, split_rows, write_all

BucketKey = tuple[bytes, int]
Buffers = dict[BucketKey, list[tuple[pa.Table, np.ndarray]]]

# Row kinds as a ``rowkind.field`` column spells them, in _VALUE_KIND order.
_ROW_KINDS = ("+I", "-U", "+U", "-D")


def _default_values(field: pa.Field, n: int) -> pa.Array:
    """Filler for the value columns of a key-only delete (never read: the row retracts)."""
    if field.nullable:
        return pa.nulls(n, field.type)
    t = field.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.array([""] * n, t)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.array([b""] * n, t)
    if pa.types.is_boolean(t):
        return pa.array([False] * n, t)
    return pc.cast(pa.array(np.zeros(n, dtype=np.int64)), t)


class KeyValueWriter:
    """Buffers one write's rows per bucket; ``prepare_commit`` turns them into files."""

    def __init__(
        self, store: FileStore, settings: MergeSettings, *, changelog: bool = True
    ) -> None:
        """``changelog``: whether to write the input as changelog files when the table's
        ``changelog-producer`` is ``input`` (an overwrite commits no changelog)."""
        require_key_writable(store)
        self.store = store
        self.layout = KeyValueLayout(store.schema)
        self.settings = settings
        self._buffers: Buffers = {}
        self._rowkind_field = store.options.get(O.ROWKIND_FIELD) or None
        self._input_changelog = changelog and store.options.get(O.CHANGELOG_PRODUCER) == "input"

    @property
    def buckets(self) -> list[BucketKey]:
        """The (partition, bucket) pairs written; on a dynamic-bucket table the buckets
        are known only once ``assign`` placed the rows."""
        return list(self._buffers)

    @property
    def dynamic(self) -> bool:
        """Whether the table's buckets are dynamic (``bucket`` = -1): rows are buffered
        per partition and ``assign`` gives them their buckets."""
        return self.store.num_buckets < 1

    def assign(self, index: BucketIndex) -> Buffers:
        """The buffered rows of a dynamic-bucket table per (partition, bucket), each
        key in the bucket ``index`` gives it (rows in their write order)."""
        out: Buffers = {}
        for (partition, _), parts in self._buffers.items():
            values = pa.concat_tables([t for t, _ in parts])
            kinds = np.concatenate([k for _, k in parts])
            buckets = index.assign(partition, values)
            order = np.argsort(buckets, kind="stable")
            ordered = buckets[order]
            starts = np.flatnonzero(np.diff(ordered)) + 1
            bounds = [0, *starts.tolist(), len(order)]
            rows, kinds = values.take(order), kinds[order]
            for start, end in itertools.pairwise(bounds):
                key = (partition, int(ordered[start]))
                out[key] = [(rows.slice(start, end - start), kinds[start:end])]
        return out

    def write(self, data: Any, kind: int = kv.INSERT) -> None:
        schema = self.store.arrow_schema
        source = to_batches(data)
        batches: Iterable[pa.Table | pa.RecordBatch] = (
            [source] if isinstance(source, pa.Table) else source
        )
        for batch in batches:
            table = self._complete(batch) if kind == kv.DELETE else batch
            table = conform(table, schema)
            if table.num_rows:
                self._check_keys(table)
                for key, rows in split_rows(self.store, table):
                    kinds = self._kinds(rows, kind)
                    self._check_retractions(kinds)
                    self._buffers.setdefault(key, []).append((rows, kinds))

    def _check_retractions(self, kinds: np.ndarray) -> None:
        """Refuse retractions (deletes, -U rows) that the table's merge engine cannot
        merge (InvalidArgumentError, before anything is written)."""
        if (
            not self.settings.combines
            or not ((kinds == kv.UPDATE_BEFORE) | (kinds == kv.DELETE)).any()
        ):
            return
        updates_before = bool((kinds == kv.UPDATE_BEFORE).any())
        reason = engines.retractable(self.settings, updates_before=updates_before)
        if reason is not None:
            raise InvalidArgumentError(f"{self.store.uri} cannot take deletes: {reason}")

    def _kinds(self, rows: pa.Table, kind: int) -> np.ndarray:
        """Each row's kind: ``kind``, or for an insert the ``rowkind.field`` column's
        ``+I``/``-U``/``+U``/``-D`` when the table names one."""
        if kind != kv.INSERT or self._rowkind_field is None:
            return np.full(rows.num_rows, kind, dtype=np.int8)
        column = rows.column(self._rowkind_field)
        codes = pc.index_in(column, pa.array(list(_ROW_KINDS)))
        if codes.null_count:
            bad = pc.filter(column, pc.is_null(codes))[0].as_py()
            raise SchemaMismatchError(
                f"column {self._rowkind_field!r} (rowkind.field) holds {bad!r}; use one of "
                f"{', '.join(_ROW_KINDS)}"
            )
        return np.asarray(codes.to_numpy(zero_copy_only=False), dtype=np.int8)

    def _complete(self, batch: pa.Table | pa.RecordBatch) -> pa.Table:
        """Key-only delete rows filled out to whole rows."""
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        missing = [k for k in self.store.schema.primary_keys if k not in table.column_names]
        if missing:
            raise SchemaMismatchError(f"delete needs the primary-key columns; {missing} missing")
        schema = self.store.arrow_schema
        columns = [
            table.column(f.name)
            if f.name in table.column_names
            else _default_values(f, table.num_rows)
            for f in schema
        ]
        return pa.Table.from_arrays(columns, names=schema.names)

    def _check_keys(self, table: pa.Table) -> None:
        for k in self.store.schema.primary_keys:
            if table.column(k).null_count:
                raise SchemaMismatchError(f"primary-key column {k!r} holds nulls")

    def prepare_commit(
        self, next_sequence: dict[BucketKey, int], buffers: Buffers | None = None
    ) -> list[CommitMessage]:
        """Write every buffered bucket (or those of ``buffers``, from ``assign``) as
        sorted level-0 files, sequencing its rows from ``next_sequence[bucket]`` (0 for
        a bucket not in it)."""
        messages = []
        for key, parts in (self._buffers if buffers is None else buffers).items():
            files, changelog = self._write_bucket(key, parts, next_sequence.get(key, 0))
            messages.append(
                CommitMessage(
                    key[0],
                    key[1],
                    self.store.num_buckets,
                    tuple(files),
                    changelog_files=tuple(changelog),
                )
            )
        return messages

    def _write_bucket(
        self, key: BucketKey, parts: list[tuple[pa.Table, np.ndarray]], start: int
    ) -> tuple[list[DataFileMeta], list[DataFileMeta]]:
        """The bucket's level-0 files, and its changelog files when the table's
        changelog is its input."""
        values = pa.concat_tables([t for t, _ in parts])
        kinds = pa.array(np.concatenate([k for _, k in parts]), pa.int8())
        sequence = pa.array(np.arange(start, start + values.num_rows, dtype=np.int64))
        rows = self.layout.to_file_table(values, sequence, kinds)
        changelog: list[DataFileMeta] = []
        if self._input_changelog:
            log = RollingFileWriter(self.store, *key, layout=self.layout, changelog=True)
            changelog = write_all(log, [self._changelog_rows(rows)])
        rows = winners(rows, self.layout, self.settings)
        writer = RollingFileWriter(self.store, key[0], key[1], layout=self.layout)
        return write_all(writer, [rows]), changelog

    def _changelog_rows(self, rows: pa.Table) -> pa.Table:
        """Every input row with its kind, sorted by key, then by the sequence field (if
        the table has one) and write order, as Paimon's writer spills its input into the
        changelog; without the retractions when ``ignore-delete`` drops them from the
        input (Paimon drops them before they reach the writer)."""
        if self.settings.ignore_delete:
            rows = rows.filter(pc.invert(kv.is_retract(rows.column(kv.VALUE_KIND))))
        order = [(k, "ascending") for k in self.layout.key_columns]
        if self.settings.sequence_field is not None:
            order.append((self.settings.sequence_field, "ascending"))
        order.append((kv.SEQUENCE_NUMBER, "ascending"))
        return rows.take(pc.sort_indices(rows, sort_keys=order))


def require_key_writable(store: FileStore) -> None:
    """Refuse writing rows into a table shoal cannot write (``require_writable``), or
    into a dynamic-bucket table whose primary key leaves out a partition key: Paimon's
    cross-partition upsert moves such a key between partitions through a global index,
    which shoal does not implement. Raises UnsupportedFeatureError."""
    store.require_writable()
    schema = store.schema
    outside = [k for k in schema.partition_keys if k not in schema.primary_keys]
    if store.num_buckets < 1 and outside:
        raise UnsupportedFeatureError(
            f"table {store.uri!r} has dynamic buckets and a primary key "
            f"{list(schema.primary_keys)} without the partition keys {outside}: Paimon's "
            "cross-partition upserts, which shoal reads and compacts but does not write",
            feature="cross-partition upsert",
        )


def next_sequences(
    store: FileStore, snapshot: Snapshot | None, buckets: Iterable[BucketKey]
) -> dict[BucketKey, int]:
    """The first free sequence number of each bucket in ``snapshot`` that holds files
    (see :mod:`shoal.write.bucket_sequences`)."""
    return bucket_sequences.next_sequences(store, snapshot, buckets)
