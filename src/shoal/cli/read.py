"""``shoal read``: rows of a table, with time travel, projection and filters."""

from __future__ import annotations

import os
from collections.abc import Iterable

import click
import pyarrow as pa
import pyarrow.parquet as pq

from shoal.cli.common import open_table, output, table_argument, table_options
from shoal.cli.output import rows_of
from shoal.cli.parsing import parse_filter, parse_time, split_names

DEFAULT_SHOWN = 20


@click.command("read", short_help="Print rows, with time travel and filters.")
@table_argument
@click.argument("file", required=False, metavar="[FILE]")
@click.option("--tag", help="Read the snapshot of this tag.")
@click.option("--snapshot", "snapshot_id", type=int, help="Read this snapshot.")
@click.option(
    "--as-of",
    metavar="TIME",
    help="Read the latest snapshot committed at or before TIME (ISO 8601, local time).",
)
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(min=0),
    help=f"At most this many rows; 0 for all. Default: {DEFAULT_SHOWN} in a table, all in JSON.",
)
@click.option(
    "-c", "--columns", multiple=True, metavar="COLS", help="Columns to read, comma-separated."
)
@click.option(
    "-f",
    "--filter",
    "filters",
    multiple=True,
    metavar="COND",
    help='A row condition, repeatable (all must hold): "id > 10", "dt = \'2026-11-01\'", '
    '"status in (paid, shipped)", "note is not null", joined with \'and\'.',
)
@click.option(
    "--read-optimized",
    is_flag=True,
    help="Primary-key tables: read only compacted files (no merge).",
)
@click.option("--force", is_flag=True, help="With --output parquet: replace FILE if it exists.")
@table_options
def read(
    *,
    table: str,
    file: str | None,
    force: bool,
    warehouse: str | None,
    tag: str | None,
    snapshot_id: int | None,
    as_of: str | None,
    limit: int | None,
    columns: tuple[str, ...],
    filters: tuple[str, ...],
    read_optimized: bool,
) -> None:
    """Print rows of TABLE (the latest snapshot, or one chosen by time travel), or with
    --output parquet write them all (or --limit N of them) to the Parquet file FILE.

    \b
    Examples:
      shoal read -w wh db.orders --filter "status = paid and amount > 100" --limit 5
      shoal read -w wh db.orders --tag nightly --columns order_id,status -o json
      shoal read -w wh db.orders --filter "dt = '2026-11-01'" --output parquet day.parquet
    """
    if sum(x is not None for x in (tag, snapshot_id, as_of)) > 1:
        raise click.UsageError("give at most one of --tag, --snapshot and --as-of")
    to_file = output().mode == "parquet"
    if to_file != (file is not None):
        raise click.UsageError(
            "--output parquet writes to FILE: give both"
            if to_file
            else f"FILE {file!r} is written only with --output parquet"
        )
    if file is not None and os.path.exists(file) and not force:
        raise click.UsageError(f"{file!r} exists; --force replaces it")
    opened = open_table(table, warehouse)
    timestamp_ms = (
        int(parse_time(as_of, "--as-of").astimezone().timestamp() * 1000) if as_of else None
    )
    out = output()
    wanted = limit if limit is not None else (None if out.machine else DEFAULT_SHOWN)
    if wanted == 0:
        wanted = None
    scan = opened.scan(
        snapshot_id=snapshot_id,
        tag=tag,
        timestamp_ms=timestamp_ms,
        columns=split_names(columns) or None,
        filter=parse_filter(filters, opened.schema),
        read_optimized=read_optimized,
    )
    if file is not None:
        written = write_parquet(file, scan.to_batches(), scan.schema, scan.columns, wanted)
        out.err.print(f"wrote {written:,} rows to {file}", markup=False, highlight=False)
        return
    batches: list[pa.RecordBatch] = []
    count, more = 0, False
    for batch in scan.to_batches():
        if wanted is not None and count + batch.num_rows > wanted:
            batch = batch.slice(0, wanted - count)
            more = True
        if batch.num_rows:
            batches.append(batch)
            count += batch.num_rows
        if more:
            break  # the rest of the scan is never read
    schema = (
        scan.schema
        if scan.columns is None
        else pa.schema([scan.schema.field(c) for c in scan.columns])
    )
    result = pa.Table.from_batches(batches, schema=batches[0].schema if batches else schema)

    def render() -> None:
        numeric = [
            f.name
            for f in result.schema
            if pa.types.is_integer(f.type)
            or pa.types.is_floating(f.type)
            or pa.types.is_decimal(f.type)
        ]
        out.rows(result.to_pylist(), result.column_names, right=numeric)
        if more:
            out.note(f"[dim]first {count} rows; --limit N or --limit 0 for more[/dim]")
        else:
            out.note(f"[dim]{count} rows[/dim]")

    out.result(rows_of(result), render)


def write_parquet(
    file: str,
    batches: Iterable[pa.RecordBatch],
    schema: pa.Schema,
    columns: list[str] | None,
    limit: int | None,
) -> int:
    """Stream ``batches`` (at most ``limit`` rows) into the Parquet file ``file``, one row
    group at a time; the file appears whole (written beside it, then renamed) or not at
    all. Returns the number of rows written."""
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in columns])
    partial = f"{file}.partial"
    count = 0
    writer: pq.ParquetWriter | None = None
    try:
        for batch in batches:
            if limit is not None and count + batch.num_rows >= limit:
                batch = batch.slice(0, limit - count)
            if batch.num_rows:
                if writer is None:  # the batches' own schema, as the table view shows it
                    writer = pq.ParquetWriter(partial, batch.schema)
                writer.write_batch(batch)
                count += batch.num_rows
            if limit is not None and count >= limit:
                break
        if writer is None:
            writer = pq.ParquetWriter(partial, schema)
        writer.close()
        writer = None
        os.replace(partial, file)
    finally:
        if writer is not None:
            writer.close()
        if os.path.exists(partial):
            os.remove(partial)
    return count
