"""``shoal compact``, ``freshness``, ``metrics``, ``expire-snapshots``,
``expire-partitions``, ``remove-orphan-files`` and ``rollback``."""

from __future__ import annotations

import dataclasses
from typing import Any

import click

from shoal.cleanup.expire import ExpireResult
from shoal.cli.common import (
    open_table,
    output,
    spark_options,
    storage_options,
    table_argument,
    table_label,
    table_options,
)
from shoal.cli.output import format_bytes, format_millis, rows_of
from shoal.cli.parsing import parse_duration_option, parse_event_time, parse_time
from shoal.cli.sparkio import spark_session
from shoal.table import Table

STRATEGIES = ("full", "universal", "event-time")


@click.command("compact", short_help="Compact a primary-key table.")
@table_argument
@click.option(
    "-s",
    "--strategy",
    type=click.Choice(STRATEGIES),
    help="full: every bucket into one sorted run; universal: Paimon's size rules; "
    "event-time: only files whose event time starts at or below the threshold. "
    "Default: the option compaction.strategy.",
)
@click.option(
    "--event-time-threshold",
    metavar="TIME",
    help="For event-time: an ISO 8601 time (naive means UTC) or epoch milliseconds. "
    "Default: now minus compaction.event-time.data-latency.",
)
@spark_options
@table_options
def compact(
    *,
    table: str,
    warehouse: str | None,
    strategy: str | None,
    event_time_threshold: str | None,
    on_spark: bool,
    master: str,
) -> None:
    """Compact primary-key TABLE in one COMPACT commit.

    The real-time view reads the same before and after; the read-optimized view
    (the top level) gains the compacted rows.

    \b
    Examples:
      shoal compact -w wh db.orders --strategy full
      shoal compact -w wh db.orders --strategy event-time \\
          --event-time-threshold 2026-11-01T12:00
    """
    threshold = (
        parse_event_time(event_time_threshold, "--event-time-threshold")
        if event_time_threshold
        else None
    )
    opened = open_table(table, warehouse)
    out = output()
    with out.status(f"compacting {table_label(opened)}"):
        if on_spark:
            import shoal.spark

            spark = spark_session(master)
            result = shoal.spark.compact(
                spark, opened.path, strategy, threshold, storage_options=storage_options()
            )
        else:
            result = opened.compact(strategy, threshold)
    snapshot_id = result.snapshot.id if result.snapshot is not None else None
    doc: dict[str, Any] = {
        "snapshot_id": snapshot_id,
        "compacted_files": result.compacted_files,
        "written_files": result.written_files,
        "freshness": freshness_of(opened),
    }

    def render() -> None:
        if snapshot_id is None:
            out.print("nothing to compact")
        else:
            out.print(
                f"snapshot {snapshot_id}: compacted {result.compacted_files} files into "
                f"{result.written_files}"
            )
        _render_freshness(doc["freshness"])

    out.result(doc, render)


def freshness_of(
    table: Table, *, snapshot_id: int | None = None, tag: str | None = None
) -> dict[str, Any]:
    """``Table.freshness()`` as a dict of its fields."""
    return dataclasses.asdict(table.freshness(snapshot_id=snapshot_id, tag=tag))


def _render_freshness(doc: dict[str, Any]) -> None:
    out = output()
    watermark = doc.get("watermark_ms")
    out.key_values(
        [
            (
                "read-optimized freshness",
                "- (no event-time field, or no data)"
                if watermark is None
                else f"{format_millis(watermark)} UTC (every row with an earlier event "
                "time is in the read-optimized view)",
            ),
            ("oldest uncompacted event", format_millis(doc.get("min_uncompacted_event_time_ms"))),
            ("buckets with uncompacted files", str(doc.get("buckets_with_uncompacted_files"))),
            (
                "uncompacted files",
                f"{doc.get('uncompacted_file_count')} "
                f"({format_bytes(int(doc.get('uncompacted_bytes') or 0))})",
            ),
        ]
    )


@click.command("freshness", short_help="Show read-optimized freshness and backlog.")
@table_argument
@click.option("--snapshot", "snapshot_id", type=int, help="Of this snapshot (default: latest).")
@click.option("--tag", help="Of the snapshot of this tag.")
@table_options
def freshness(table: str, warehouse: str | None, snapshot_id: int | None, tag: str | None) -> None:
    """Show the read-optimized freshness of TABLE and its compaction backlog.

    Every row whose event time is below the watermark is in the read-optimized view
    (the compacted files, read without merging). The backlog is what event-time
    compaction still owes, per partition and bucket.
    """
    opened = open_table(table, warehouse)
    doc = freshness_of(opened, snapshot_id=snapshot_id, tag=tag)
    backlog = opened.system_table("freshness", snapshot_id=snapshot_id, tag=tag)
    doc["buckets"] = rows_of(backlog)
    out = output()

    def render() -> None:
        _render_freshness(doc)
        rows = [r for r in backlog.to_pylist() if r["uncompacted_file_count"]]
        if rows:
            for row in rows:
                row["min_uncompacted_event_time"] = format_millis(row["min_uncompacted_event_time"])
                row["uncompacted_bytes"] = format_bytes(row["uncompacted_bytes"])
            out.rows(
                rows,
                backlog.column_names,
                title="backlog by bucket",
                headers={
                    "min_uncompacted_event_time": "oldest event (UTC)",
                    "uncompacted_file_count": "files",
                    "uncompacted_bytes": "size",
                },
                right=["bucket", "uncompacted_file_count", "uncompacted_bytes"],
            )

    out.result(doc, render)


@click.command("metrics", short_help="Print freshness as Prometheus metrics.")
@table_argument
@click.option("--snapshot", "snapshot_id", type=int, help="Of this snapshot (default: latest).")
@click.option("--tag", help="Of the snapshot of this tag.")
@table_options
def metrics(table: str, warehouse: str | None, snapshot_id: int | None, tag: str | None) -> None:
    """Print the freshness of TABLE in Prometheus' text exposition format.

    One gauge per field of ``shoal freshness`` and the snapshot id, labelled with the
    table; for a node exporter's textfile collector or any scraper. Reads one snapshot
    file when shoal committed it (``Table.metrics()``).
    """
    opened = open_table(table, warehouse)
    click.echo(opened.metrics(snapshot_id=snapshot_id, tag=tag), nl=False)


@click.command("expire-snapshots", short_help="Expire old snapshots and their files.")
@table_argument
@click.option("--retain-min", type=click.IntRange(min=1), help="Keep at least this many.")
@click.option("--retain-max", type=click.IntRange(min=1), help="Keep at most this many.")
@click.option(
    "--older-than",
    metavar="TIME",
    help="Expire only snapshots whose successor is older: ISO 8601 (naive means local "
    "time), 'now', or a duration ago such as '2 h'.",
)
@click.option("--max-deletes", type=click.IntRange(min=1), help="Expire at most this many.")
@spark_options
@table_options
def expire_snapshots(
    *,
    table: str,
    warehouse: str | None,
    retain_min: int | None,
    retain_max: int | None,
    older_than: str | None,
    max_deletes: int | None,
    on_spark: bool,
    master: str,
) -> None:
    """Expire old snapshots of TABLE and delete the files only they used.

    Values left out come from the options snapshot.num-retained.min/max,
    snapshot.time-retained and snapshot.expire.limit. A file that a retained
    snapshot or a tag uses is never deleted.

    \b
    Example:
      shoal expire-snapshots -w wh db.orders --retain-max 10 --older-than "1 d"
    """
    threshold = parse_time(older_than, "--older-than") if older_than else None
    opened = open_table(table, warehouse)
    out = output()
    with out.status("expiring snapshots"):
        if on_spark:
            import shoal.spark

            spark = spark_session(master)
            result = shoal.spark.expire_snapshots(
                spark,
                opened.path,
                retain_min,
                retain_max,
                threshold,
                max_deletes,
                storage_options=storage_options(),
            )
        else:
            result = opened.expire_snapshots(retain_min, retain_max, threshold, max_deletes)
    doc = dataclasses.asdict(result)
    out.result(
        doc,
        lambda: out.print(
            f"expired {result.expired_snapshots} snapshots, deleted {_deleted_files(result)}"
            + _consumers_note(result)
        ),
    )


def _consumers_note(result: ExpireResult) -> str:
    """Why fewer snapshots went than the retention allows, and the consumers deleted."""
    note = ""
    if result.expired_consumers:
        note += f"; expired consumers {', '.join(result.expired_consumers)}"
    if result.held_by_consumers:
        note += f"; snapshots kept for consumers {', '.join(result.held_by_consumers)}"
    return note


def _deleted_files(result: ExpireResult) -> str:
    """'3 data files and 8 manifest files', with the index files when there were any."""
    counts = [f"{result.deleted_data_files} data files"]
    if result.deleted_index_files:
        counts.append(f"{result.deleted_index_files} index files")
    return ", ".join(counts) + f" and {result.deleted_manifest_files} manifest files"


@click.command("expire-partitions", short_help="Drop partitions older than an age.")
@table_argument
@click.option(
    "--expiration-time",
    metavar="DURATION",
    help="Drop partitions older than this, e.g. '30 d' (default: the option "
    "partition.expiration-time).",
)
@click.option(
    "--now", "now_text", metavar="TIME", help="The clock to measure age against (ISO 8601)."
)
@table_options
def expire_partitions(
    table: str, warehouse: str | None, expiration_time: str | None, now_text: str | None
) -> None:
    """Drop the partitions of TABLE whose time is older than the expiration time.

    One OVERWRITE commit; the files go later, with the snapshots that hold them.
    """
    expiration = (
        parse_duration_option(expiration_time, "--expiration-time") if expiration_time else None
    )
    now = parse_time(now_text, "--now") if now_text else None
    opened = open_table(table, warehouse)
    dropped = opened.expire_partitions(expiration, now=now)
    out = output()

    def render() -> None:
        if not dropped:
            out.print("no partition expired")
            return
        out.rows(dropped, list(dropped[0]), title=f"dropped {len(dropped)} partitions")

    out.result({"expired_partitions": dropped, "count": len(dropped)}, render)


@click.command("remove-orphan-files", short_help="Delete files that nothing references.")
@table_argument
@click.option(
    "--older-than",
    metavar="TIME",
    help="Delete only orphans older than this: ISO 8601 (naive means local time), 'now', "
    "or a duration ago such as '2 d'. Default: one day ago, which keeps the files of "
    "commits in flight. Times in the future are refused.",
)
@click.option("--dry-run", is_flag=True, help="List what would be deleted; delete nothing.")
@spark_options
@table_options
def remove_orphan_files(
    *,
    table: str,
    warehouse: str | None,
    older_than: str | None,
    dry_run: bool,
    on_spark: bool,
    master: str,
) -> None:
    """Delete files in TABLE's directories that no snapshot, tag or commit uses.

    \b
    Example:
      shoal remove-orphan-files -w wh db.orders --older-than "3 d" --dry-run
    """
    threshold = parse_time(older_than, "--older-than") if older_than else None
    opened = open_table(table, warehouse)
    out = output()
    with out.status("looking for orphan files"):
        if on_spark:
            import shoal.spark

            spark = spark_session(master)
            result = shoal.spark.remove_orphan_files(
                spark, opened.path, threshold, dry_run, storage_options=storage_options()
            )
        else:
            result = opened.remove_orphan_files(threshold, dry_run)
    doc = {**dataclasses.asdict(result), "dry_run": dry_run}

    def render() -> None:
        verb = "would delete" if dry_run else "deleted"
        out.print(
            f"{verb} {result.deleted_count} orphan files ({format_bytes(result.deleted_bytes)})"
        )
        if dry_run and result.paths:
            out.rows([{"path": p} for p in result.paths], ["path"])

    out.result(doc, render)


@click.command("rollback", short_help="Return to an earlier snapshot or tag.")
@table_argument
@click.option("--snapshot", "snapshot_id", type=int, help="The snapshot to return to.")
@click.option("--tag", help="The tag whose snapshot to return to.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@table_options
def rollback(
    table: str, warehouse: str | None, snapshot_id: int | None, tag: str | None, yes: bool
) -> None:
    """Make an earlier snapshot (or a tag's) the latest of TABLE.

    Later snapshots and tags are removed; their data files stay for orphan cleanup.
    Stop writers while it runs.
    """
    if (snapshot_id is None) == (tag is None):
        raise click.UsageError("give exactly one of --snapshot and --tag")
    opened = open_table(table, warehouse)
    target = f"snapshot {snapshot_id}" if tag is None else f"tag {tag}"
    if not yes:
        click.confirm(
            f"roll {table_label(opened)} back to {target}, removing later snapshots and tags?",
            abort=True,
            err=True,
        )
    snapshot = opened.rollback_to(snapshot_id=snapshot_id, tag=tag)
    out = output()
    out.result(
        {"snapshot_id": snapshot.id},
        lambda: out.print(f"rolled back to snapshot {snapshot.id}"),
    )
