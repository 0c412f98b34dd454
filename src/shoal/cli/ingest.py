"""``shoal ingest``: a Spark job from Parquet, JSON or CSV files into a table."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from shoal.cli.common import (
    master_option,
    open_table,
    output,
    table_argument,
    table_label,
    table_options,
)
from shoal.cli.sparkio import (
    FORMATS,
    PARSE_MODES,
    WRITE_MODES,
    Format,
    ParseMode,
    WriteMode,
    read_source,
    spark_session,
    write_dataframe,
)
from shoal.format.snapshot import CommitKind
from shoal.table import Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What one ingest committed."""

    snapshot_ids: tuple[int, ...]
    written_records: int
    nulled_values: dict[str, int] = field(default_factory=dict)
    """Values that could not be read as their column's type and were ingested as nulls
    (parse mode ``permissive``), per column that had any."""
    malformed_records: int = 0
    """CSV and JSON records Spark reported as malformed (parse mode ``permissive``)."""


def ingest_files(
    spark: SparkSession,
    source: str,
    table: Table,
    fmt: Format,
    mode: WriteMode,
    *,
    header: bool = True,
    dynamic_partition_overwrite: bool = False,
    parse_mode: ParseMode = "failfast",
) -> IngestResult:
    """Read ``source`` with Spark and write it into ``table`` in one commit.

    Raises:
        InvalidInputDataError: (parse mode ``failfast``) a value of the source cannot be
            read as its column's type; nothing is committed.
        NotNullViolationError: a row has no value in a NOT NULL column; nothing is
            committed.
    """
    before = table.latest_snapshot()
    read = read_source(spark, source, fmt, table, header=header, parse_mode=parse_mode)
    with read.checked():
        write_dataframe(
            read.frame, table, mode, dynamic_partition_overwrite=dynamic_partition_overwrite
        )
    nulled = read.nulled_values()
    first = before.id + 1 if before is not None else 1
    new = [s for s in table.snapshots() if s.id >= first]
    written = sum(s.delta_record_count or 0 for s in new if s.commit_kind != CommitKind.COMPACT)
    return IngestResult(
        tuple(s.id for s in new), written, dict(nulled.columns), nulled.malformed_records
    )


@click.command("ingest", short_help="Load Parquet, JSON or CSV files into a table (Spark).")
@click.argument("source", metavar="SOURCE")
@table_argument
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    help="Format of SOURCE. Default: from its file extension.",
)
@click.option(
    "-m",
    "--mode",
    type=click.Choice(WRITE_MODES),
    default="append",
    show_default=True,
    help="append adds rows (on a primary-key table: replaces rows by key); upsert "
    "insists on a primary-key table; overwrite replaces the table.",
)
@click.option(
    "--dynamic-partition-overwrite",
    is_flag=True,
    help="With --mode overwrite: replace only the partitions the source has rows for.",
)
@click.option(
    "--parse-mode",
    type=click.Choice(PARSE_MODES, case_sensitive=False),
    default="failfast",
    show_default=True,
    help="What a value that cannot be read as its column's type does (CSV or JSON text "
    "that does not parse, a Parquet value its cast cannot hold): failfast stops the "
    "ingest before anything is committed; permissive ingests it as null and reports how "
    "many per column.",
)
@click.option("--header/--no-header", default=True, show_default=True, help="CSV: a header line.")
@master_option
@table_options
def ingest(
    *,
    source: str,
    table: str,
    warehouse: str | None,
    fmt: Format | None,
    mode: WriteMode,
    dynamic_partition_overwrite: bool,
    parse_mode: str,
    header: bool,
    master: str,
) -> None:
    """Load SOURCE (Parquet, JSON lines or CSV files: a file, directory or glob) into
    TABLE through Spark, in one commit.

    JSON and CSV are parsed with the table's schema; Parquet columns are cast to it.
    A value that cannot be read as its column's type, or a row without a value in a NOT
    NULL column, stops the ingest before anything is committed (exit code 2); with
    --parse-mode permissive unreadable values are ingested as nulls and counted.
    An unbucketed append table is written by Spark's own Parquet writer, any other
    through the shoal data source. Rows are shuffled so that one task writes each
    bucket (or partition); when SOURCE holds a key
    more than once, the table's sequence.field decides which row wins (without one,
    any of them may).

    \b
    Examples:
      shoal ingest landing/2026-11-01/ -w wh db.orders --format json --mode upsert
      shoal ingest orders.csv ./wh/db.db/orders --master "local[4]"
      shoal ingest orders.csv -w wh db.orders --parse-mode permissive
    """
    chosen = fmt or _format_of(source)
    parsing: ParseMode = "permissive" if parse_mode.lower() == "permissive" else "failfast"
    if "://" not in source and not any(c in source for c in "*?[") and not os.path.exists(source):
        raise click.BadParameter(f"{source!r} does not exist", param_hint="SOURCE")
    opened = open_table(table, warehouse)
    out = output()
    with out.progress() as progress:
        task = progress.add_task("starting Spark", total=2)
        spark = spark_session(master)
        progress.update(task, advance=1, description=f"writing {source} into {table}")
        result = ingest_files(
            spark,
            source,
            opened,
            chosen,
            mode,
            header=header,
            dynamic_partition_overwrite=dynamic_partition_overwrite,
            parse_mode=parsing,
        )
        progress.update(task, advance=1)
    doc: dict[str, Any] = {
        "table": table_label(opened),
        "source": source,
        "format": chosen,
        "mode": mode,
        "parse_mode": parsing,
        "snapshot_ids": list(result.snapshot_ids),
        "written_records": result.written_records,
        "nulled_values": result.nulled_values,
        "malformed_records": result.malformed_records,
    }
    ids = ", ".join(str(i) for i in result.snapshot_ids) or "none"

    def render() -> None:
        out.print(
            f"ingested {result.written_records:,} rows from {source} into "
            f"{table_label(opened)} (snapshot {ids})"
        )
        nulled = _nulled_line(result)
        if nulled:
            out.print(nulled)

    out.result(doc, render)


def _nulled_line(result: IngestResult) -> str | None:
    """What a permissive ingest turned into nulls, for people."""
    total = sum(result.nulled_values.values())
    records = result.malformed_records
    in_records = f"{records:,} malformed record{'' if records == 1 else 's'}"
    if total:
        per_column = ", ".join(f"{name} {n:,}" for name, n in result.nulled_values.items())
        were = (
            "value that could not be read was"
            if total == 1
            else "values that could not be read were"
        )
        where = f", in {in_records}" if records else ""
        return f"{total:,} {were} ingested as null ({per_column}){where}"
    if records:
        return f"{in_records} ingested as far as {'it' if records == 1 else 'they'} could be read"
    return None


_SUFFIXES: dict[Format, tuple[str, ...]] = {
    "parquet": (".parquet", ".pq"),
    "json": (".json", ".jsonl", ".ndjson"),
    "csv": (".csv",),
}


def _format_of(source: str) -> Format:
    name = source.rstrip("/").lower()
    for fmt, suffixes in _SUFFIXES.items():
        if name.endswith(suffixes):
            return fmt
    raise click.BadParameter(
        f"cannot tell the format of {source!r} from its name; give --format", param_hint="--format"
    )
