"""``shoal read``: rows of a table, with time travel, projection and filters."""

from __future__ import annotations

import click
import pyarrow as pa

from shoal.cli.common import open_table, output, table_argument, table_options
from shoal.cli.output import rows_of
from shoal.cli.parsing import parse_filter, parse_time, split_names

DEFAULT_SHOWN = 20


@click.command("read", short_help="Print rows, with time travel and filters.")
@table_argument
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
@table_options
def read(
    *,
    table: str,
    warehouse: str | None,
    tag: str | None,
    snapshot_id: int | None,
    as_of: str | None,
    limit: int | None,
    columns: tuple[str, ...],
    filters: tuple[str, ...],
    read_optimized: bool,
) -> None:
    """Print rows of TABLE (the latest snapshot, or one chosen by time travel).

    \b
    Examples:
      shoal read -w wh db.orders --filter "status = paid and amount > 100" --limit 5
      shoal read -w wh db.orders --tag nightly --columns order_id,status -o json
    """
    if sum(x is not None for x in (tag, snapshot_id, as_of)) > 1:
        raise click.UsageError("give at most one of --tag, --snapshot and --as-of")
    opened = open_table(table, warehouse)
    timestamp_ms = (
        int(parse_time(as_of, "--as-of").astimezone().timestamp() * 1000) if as_of else None
    )
    out = output()
    wanted = limit if limit is not None else (None if out.json else DEFAULT_SHOWN)
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
