"""``shoal ingest``: a Spark job from Parquet, JSON or CSV files into a table."""

from __future__ import annotations

import os
from dataclasses import dataclass
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
    WRITE_MODES,
    Format,
    WriteMode,
    read_source,
    spark_session,
    write_dataframe,
)
from shoal.table.table import Table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What one ingest committed."""

    snapshot_ids: tuple[int, ...]
    written_records: int


def ingest_files(
    spark: SparkSession,
    source: str,
    table: Table,
    fmt: Format,
    mode: WriteMode,
    *,
    header: bool = True,
    dynamic_partition_overwrite: bool = False,
) -> IngestResult:
    """Read ``source`` with Spark and write it into ``table`` in one commit."""
    before = table.latest_snapshot()
    frame = read_source(spark, source, fmt, table, header=header)
    write_dataframe(frame, table, mode, dynamic_partition_overwrite=dynamic_partition_overwrite)
    first = before.id + 1 if before is not None else 1
    new = [s for s in table.snapshots() if s.id >= first]
    written = sum(s.delta_record_count or 0 for s in new if s.commit_kind != "COMPACT")
    return IngestResult(tuple(s.id for s in new), written)


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
    header: bool,
    master: str,
) -> None:
    """Load SOURCE (Parquet, JSON lines or CSV files: a file, directory or glob) into
    TABLE through Spark, in one commit.

    JSON and CSV are parsed with the table's schema; Parquet columns are cast to it.
    An unbucketed append table is written by Spark's own Parquet writer, any other
    through the shoal data source. Rows are shuffled so that one task writes each
    bucket (or partition); when SOURCE holds a key
    more than once, the table's sequence.field decides which row wins (without one,
    any of them may).

    \b
    Examples:
      shoal ingest landing/2026-11-01/ -w wh db.orders --format json --mode upsert
      shoal ingest orders.csv ./wh/db.db/orders --master "local[4]"
    """
    chosen = fmt or _format_of(source)
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
        )
        progress.update(task, advance=1)
    doc: dict[str, Any] = {
        "table": table_label(opened),
        "source": source,
        "format": chosen,
        "mode": mode,
        "snapshot_ids": list(result.snapshot_ids),
        "written_records": result.written_records,
    }
    ids = ", ".join(str(i) for i in result.snapshot_ids) or "none"
    out.result(
        doc,
        lambda: out.print(
            f"ingested {result.written_records:,} rows from {source} into "
            f"{table_label(opened)} (snapshot {ids})"
        ),
    )


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
