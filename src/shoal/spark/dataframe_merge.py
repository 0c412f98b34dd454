"""A merge into a shoal table from a Spark DataFrame, as one atomic commit.

    shoal.spark.merge(changes, "/data/wh/db.db/orders", on=["dt", "id"]) \\
        .when_matched_update() \\
        .when_not_matched_insert() \\
        .execute()

The builder has the clauses of ``Table.merge`` under the same names and arguments,
and ``execute`` returns what ``Table.merge(...).execute()`` returns. It collects the
source on the driver with ``DataFrame.toArrow()`` (under Spark Connect: on the client,
which receives the rows as Arrow) and runs the table's own merge there, so the result
is that of the Python API on the same rows. The source must therefore fit in the
driver's memory (Spark's ``spark.driver.maxResultSize`` bounds a classic driver, the
client's memory a Connect client) and the driver must reach the table's storage.
Nothing is collected before the arguments are checked: the source is a DataFrame, the
table opens, every ``on`` column is in both and there is a clause.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import DataFrame

from shoal.errors import InvalidArgumentError
from shoal.format.snapshot import Snapshot
from shoal.row_merge import MergeResult
from shoal.table import Table

__all__ = ["SparkMerge", "merge"]


def merge(
    source: DataFrame,
    table: str | Table,
    *,
    on: Sequence[str],
    storage_options: Mapping[str, str] | None = None,
) -> SparkMerge:
    """Start a merge of the rows of ``source`` into ``table`` (a path or URI, opened with
    ``storage_options``, or an open :class:`shoal.Table`), matching rows whose ``on``
    columns are equal.

    Raises:
        InvalidArgumentError: when ``source`` is not a Spark DataFrame or an ``on``
            column is missing from the source or the table.
        TableNotFoundError: when no table is at the path.
    """
    if not isinstance(source, DataFrame):
        raise InvalidArgumentError(
            f"shoal.spark.merge takes a Spark DataFrame as its source, not "
            f"{type(source).__name__}; for Arrow data, pandas or polars use Table.merge"
        )
    if isinstance(table, str):
        table = Table.open(table, storage_options=storage_options)
    elif isinstance(table, Table) and storage_options:
        raise InvalidArgumentError(
            "shoal.spark.merge takes storage_options with a table's path only: an open "
            "shoal.Table has its store configured already"
        )
    elif not isinstance(table, Table):
        raise InvalidArgumentError(
            f"shoal.spark.merge takes the table's path or a shoal.Table, not {table!r}"
        )
    if isinstance(on, str) or not on or not all(isinstance(c, str) for c in on):
        raise InvalidArgumentError(
            f"shoal.spark.merge needs on=[column, ...], a list of column names, not {on!r}"
        )
    columns = list(source.columns)
    names = table.schema.names
    for column in on:
        if column not in columns:
            raise InvalidArgumentError(f"merge: the source has no column {column!r}: {columns}")
        if column not in names:
            raise InvalidArgumentError(f"merge: the table has no column {column!r}: {names}")
    return SparkMerge(source, table, tuple(on))


@dataclass(frozen=True, slots=True)
class SparkMerge:
    """The clauses of a merge from a DataFrame, applied in the order given; each clause
    returns a new builder."""

    source: DataFrame
    table: Table
    on: tuple[str, ...]
    clauses: tuple[tuple[str, dict[str, Any]], ...] = ()

    def _with(self, name: str, **arguments: Any) -> SparkMerge:
        return replace(self, clauses=(*self.clauses, (name, arguments)))

    def when_matched_update(
        self,
        set: Mapping[str, Any] | None = None,
        condition: Any = None,
        *,
        source_condition: Any = None,
    ) -> SparkMerge:
        """Update the matched rows of the table, as ``Table.merge``'s clause: ``set``
        maps columns to source column names, expressions or literals (None: every
        column from the source row)."""
        return self._with(
            "when_matched_update", set=set, condition=condition, source_condition=source_condition
        )

    def when_matched_delete(
        self, condition: Any = None, *, source_condition: Any = None
    ) -> SparkMerge:
        """Delete the matched rows of the table, as ``Table.merge``'s clause."""
        return self._with(
            "when_matched_delete", condition=condition, source_condition=source_condition
        )

    def when_not_matched_insert(
        self, values: Mapping[str, Any] | None = None, condition: Any = None
    ) -> SparkMerge:
        """Insert the source rows that match none of the table's, as ``Table.merge``'s
        clause (``condition`` over the source's columns)."""
        return self._with("when_not_matched_insert", values=values, condition=condition)

    def execute(self) -> Snapshot:
        """Collect the source on the driver and commit the merge in one snapshot;
        returns the new snapshot. Each call collects and merges again."""
        return self.execute_with_counts().snapshot

    def execute_with_counts(self) -> MergeResult:
        """As :meth:`execute`, returning ``Table.merge(...).execute_with_counts()``'s
        result: the snapshot and the rows updated, deleted and inserted."""
        if not self.clauses:
            raise InvalidArgumentError(
                "merge without a clause would change nothing; add when_matched_update, "
                "when_matched_delete or when_not_matched_insert"
            )
        builder = self.table.merge(self.source.toArrow(), on=list(self.on))
        for name, arguments in self.clauses:
            builder = getattr(builder, name)(**arguments)
        return builder.execute_with_counts()
