"""``shoal demo``: the whole pipeline on local Spark, narrated.

An order stream with late-arriving events is ingested in micro-batches by a Structured
Streaming query into a partitioned primary-key table (:mod:`shoal.cli.demo_stream`);
event-time compaction runs beside it on a simulated clock and the read-optimized
freshness is shown moving forward, and back when late data lands; a second streaming
query reads the table downstream; then a tag, snapshot expiration, orphan cleanup and
a summary.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

import click
from rich.progress import Progress

from shoal.catalog import Catalog
from shoal.cli.common import inherit_warehouse, master_option, output, output_option
from shoal.cli.demo_run import (
    TABLE,
    DemoConfig,
    DemoRun,
    Pipeline,
    Step,
    create_table,
    describe_config,
    status_counts,
)
from shoal.cli.demo_stream import DOWNSTREAM_CONSUMER, DOWNSTREAM_TRIGGER
from shoal.cli.output import Output, format_bytes, format_millis, to_jsonable
from shoal.cli.parsing import parse_duration_option
from shoal.cli.sparkio import spark_session


@click.command("demo", short_help="The whole pipeline on local Spark (start here).")
@click.option(
    "-w",
    "--warehouse",
    metavar="DIR",
    callback=inherit_warehouse,
    help="An empty folder for the demo's warehouse (default: a new temporary folder, "
    "printed and kept for you to explore).",
)
@click.option(
    "--events",
    type=click.IntRange(min=100),
    default=20_000,
    show_default=True,
    help="About how many order events to generate.",
)
@click.option(
    "--hours",
    type=click.IntRange(1, 48),
    default=6,
    show_default=True,
    help="Simulated hours of the stream.",
)
@click.option(
    "--batch-minutes",
    type=click.IntRange(1, 240),
    default=20,
    show_default=True,
    help="Simulated minutes per micro-batch (one streaming micro-batch each).",
)
@click.option(
    "--compact-minutes",
    type=click.IntRange(1, 1440),
    default=60,
    show_default=True,
    help="Simulated minutes between event-time compactions.",
)
@click.option(
    "--latency",
    metavar="DURATION",
    default="30 min",
    show_default=True,
    help="How late data may be: compaction takes what is older than the simulated now minus this.",
)
@click.option(
    "--retain",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Snapshots that expiration keeps.",
)
@click.option("--seed", type=int, default=7, show_default=True, help="Seed of the event stream.")
@master_option
@output_option
def demo(
    *,
    warehouse: str | None,
    events: int,
    hours: int,
    batch_minutes: int,
    compact_minutes: int,
    latency: str,
    retain: int,
    seed: int,
    master: str,
) -> None:
    """Run the whole pipeline on local Spark, narrated.

    Generates orders whose events arrive in micro-batches (a few of them hours late),
    lands each as a JSON file that a Structured Streaming query upserts into a table
    partitioned by day, with a primary key, 4 buckets and no compaction on write, while
    a second streaming query reads the table downstream; compacts by event time on a simulated
    clock and shows the read-optimized freshness move (and move back when late data
    lands); tags a snapshot, expires snapshots, cleans orphan files and sums up.
    Deterministic for a --seed (apart from paths and timings).

    \b
    Examples:
      shoal demo
      shoal demo --warehouse /tmp/wh --events 2000 --hours 3 -o json
    """
    config = DemoConfig(
        events=events,
        hours=hours,
        batch_minutes=batch_minutes,
        compact_minutes=compact_minutes,
        latency=parse_duration_option(latency, "--latency"),
        retain=retain,
        seed=seed,
    )
    started = time.perf_counter()
    folder = (
        str(Path(warehouse).expanduser().resolve())
        if warehouse
        else tempfile.mkdtemp(prefix="shoal-demo-")
    )
    if Catalog(folder).table_exists(TABLE):
        raise click.UsageError(
            f"{folder} holds a demo table already; give an empty folder, or leave out "
            "--warehouse for a new temporary one"
        )
    out = output()
    table = create_table(folder, config)
    run = DemoRun(folder, table.path, config)
    _intro(out, run)

    with _progress(out) as progress:
        task = progress.add_task("starting Spark", total=None)
        spark_started = time.perf_counter()
        spark = spark_session(master)
        run.spark_seconds = time.perf_counter() - spark_started
        master_url = run.spark_master = str(spark.sparkContext.master)
        _say(out, progress, f"Spark {spark.version} on {master_url}: {run.spark_seconds:.1f} s")
        pipeline = Pipeline(spark, table, run, on_step=lambda s: _on_step(out, progress, s, run))
        progress.update(task, total=len(pipeline.batches), completed=0, description="micro-batches")
        _timeline_header(out, progress)
        try:
            pipeline.stream()
            # The downstream query still runs: its consumer keeps what it has not read.
            progress.update(task, description="expiring snapshots", total=None)
            pipeline.expire()
            progress.update(task, description="cleaning orphan files")
            pipeline.clean_orphans()
            progress.update(task, description="summing up")
            pipeline.summarize(status_counts(spark, table))
        finally:
            pipeline.stop_streams()
        progress.remove_task(task)
    run.seconds = time.perf_counter() - started
    out.result(_document(run), lambda: _render_end(out, run))


def _progress(out: Output) -> Progress:
    """The demo narrates on stdout, so its progress bar lives there too."""
    from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn

    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=out.out,
        transient=True,
        disable=out.machine,
    )


def _say(out: Output, progress: Progress, text: str) -> None:
    """A line of the narration, above the progress bar."""
    if not out.machine:
        progress.console.print(text)


def _intro(out: Output, run: DemoRun) -> None:
    config = run.config
    stream = config.stream
    out.print("[bold]shoal demo[/bold]: a web shop's order stream, with late events, on Spark")
    out.key_values(
        [
            ("warehouse", f"{run.warehouse}  [dim](kept; delete it when done)[/dim]"),
            ("table", f"{TABLE}  [dim]{run.table_path}[/dim]"),
            (
                "layout",
                "partitioned by dt, primary key (dt, order_id), 4 buckets, write-only "
                "(compaction is explicit), sequence.field = event_time",
            ),
            (
                "stream",
                f"~{config.events:,} events from {stream.start:%Y-%m-%d %H:%M} UTC over "
                f"{config.hours} h, micro-batches of {config.batch_minutes} min, "
                f"late bursts of events 1-3 h old, seed {config.seed}",
            ),
            (
                "ingest",
                "each micro-batch lands as a JSON file; a Structured Streaming query upserts "
                "it through the shoal sink (one snapshot per batch, exactly once)",
            ),
            (
                "downstream",
                f"a second streaming query reads the table's commits (consumer id "
                f"{DOWNSTREAM_CONSUMER!r}) into a memory table, every {DOWNSTREAM_TRIGGER}",
            ),
            (
                "compaction",
                f"event-time, every {config.compact_minutes} min, of what is older than "
                f"now - {_duration(config.latency)} h",
            ),
        ]
    )


def _duration(value: timedelta) -> str:
    """``h:mm``."""
    hours, minutes = divmod(int(value.total_seconds() // 60), 60)
    return f"{hours}:{minutes:02d}"


_LINE = "{time:>5}  {step:<40} {snapshot:>8}  {fresh:>12}  {lag:>6}  {note}"


def _timeline_header(out: Output, progress: Progress) -> None:
    _say(out, progress, "")
    _say(
        out,
        progress,
        "[bold]"
        + _LINE.format(
            time="time",
            step="step",
            snapshot="snapshot",
            fresh="RO freshness",
            lag="lag",
            note="",
        ).rstrip()
        + "[/bold]",
    )


def _on_step(out: Output, progress: Progress, step: Step, run: DemoRun) -> None:
    if step.kind == "ingest":
        progress.advance(progress.task_ids[0])
    if out.machine:
        return
    earlier = [s.watermark_ms for s in run.timeline[:-1] if s.watermark_ms is not None]
    previous = earlier[-1] if earlier else None
    note = ""
    if step.kind == "ingest":
        late = f" ({step.late_rows:,} late)" if step.late_rows else ""
        text = f"ingest {step.rows:,} events{late}"
    elif step.kind == "compact":
        assert step.threshold is not None
        text = (
            f"compact <= {step.threshold:%H:%M}: {step.compacted_files} files -> "
            f"{step.written_files}"
            if step.compacted_files
            else f"compact <= {step.threshold:%H:%M}: nothing to do"
        )
    else:
        text = f"tag {step.tag}"
    if previous is not None and step.watermark_ms is not None:
        if step.watermark_ms < previous:
            note = "[yellow]<- late data: freshness moved back[/yellow]"
        elif step.watermark_ms > previous and step.kind == "compact":
            note = "[green]-> compaction moved freshness forward[/green]"
    lag = step.lag
    _say(
        out,
        progress,
        _LINE.format(
            time=f"{step.sim_time:%H:%M}",
            step=text,
            snapshot=str(step.snapshot_id or "-"),
            fresh="-" if step.watermark_ms is None else format_millis(step.watermark_ms)[11:],
            lag="-" if lag is None else _duration(lag),
            note=note,
        ).rstrip(),
    )


def _render_end(out: Output, run: DemoRun) -> None:
    summary, expire, orphans = run.summary, run.expire, run.orphans
    assert summary is not None
    assert expire is not None
    assert orphans is not None
    tag = next(iter(summary.tags), None)
    out.print()
    out.print(
        f"[bold]expire snapshots[/bold]: keep the newest {run.config.retain} of "
        f"{len(run.expire_before)}: expired {expire.expired_snapshots} snapshots, deleted "
        f"{expire.deleted_data_files} data files and {expire.deleted_manifest_files} manifest "
        "files (by count: in real time every snapshot here is seconds old)"
    )
    if expire.held_by_consumers and run.downstream_next is not None:
        out.print(
            f"  the downstream query's consumer kept snapshots from {run.downstream_next} on: "
            "Spark confirms a micro-batch's read when the next one starts"
        )
    if tag is not None:
        out.print(
            f"  tag {tag} (snapshot {summary.tags[tag]}) still reads "
            f"{summary.tag_rows[tag]:,} orders: expiration never deletes a file a tag uses"
        )
    if run.downstream is not None:
        feed = run.downstream
        out.print(
            f"[bold]downstream query[/bold]: read {feed.rows:,} rows in {feed.batches} "
            f"micro-batches; a commit reached it {feed.median_seconds:.1f} s after it was "
            f"made (median of {feed.snapshots}, max {feed.max_seconds:.1f} s)"
        )
    out.print(
        "[bold]orphan files[/bold]: planted a file a crashed writer could leave: "
        f"[dim]{orphans.stray_file}[/dim]"
    )
    out.print(
        f"  default run (older than 1 day): deleted {orphans.default_run.deleted_count}; "
        "a file this young may belong to a commit in flight"
    )
    out.print(
        f"  dry run, older than now: would delete {orphans.dry_run.deleted_count} "
        f"({format_bytes(orphans.dry_run.deleted_bytes)})"
    )
    out.print(
        f"  run, older than now: deleted {orphans.real_run.deleted_count}; safe here because "
        "no writer is running (a threshold in the future is refused)"
    )
    out.print()
    lag = "-" if summary.watermark_ms is None else format_millis(summary.watermark_ms) + " UTC"
    statuses = ", ".join(f"{k} {v:,}" for k, v in sorted(summary.status_counts.items()))
    out.key_values(
        [
            (
                "events ingested",
                f"{run.events:,} in {run.batches} micro-batches ({run.late_events:,} late)",
            ),
            ("orders", f"{summary.rows:,} ({statuses})"),
            (
                "read-optimized view",
                f"{summary.read_optimized_rows:,} orders, every event before {lag}",
            ),
            (
                "snapshots",
                f"{len(summary.snapshots)} ({summary.snapshots[0]}-{summary.snapshots[-1]})"
                if summary.snapshots
                else "0",
            ),
            ("tags", ", ".join(f"{n} -> {s}" for n, s in summary.tags.items()) or "-"),
            (
                "data files",
                f"{summary.files} ({format_bytes(summary.file_bytes)}), "
                f"{summary.top_level_files} compacted, {summary.uncompacted_files} waiting",
            ),
            ("time", f"{run.seconds:.1f} s (Spark start {run.spark_seconds:.1f} s)"),
        ],
        title="summary",
    )
    path = run.table_path
    out.print()
    out.print("[dim]explore:[/dim]")
    for command in (
        f"shoal snapshots {path}",
        f"shoal freshness {path}",
        f"shoal read {path} --tag {tag} --limit 5" if tag else f"shoal read {path} --limit 5",
        f"shoal tag list {path}",
    ):
        out.print(f"  {command}")


def _document(run: DemoRun) -> Any:
    return to_jsonable(
        {
            "warehouse": run.warehouse,
            "table": TABLE,
            "path": run.table_path,
            "config": describe_config(run.config),
            "batches": run.batches,
            "events": run.events,
            "late_events": run.late_events,
            "timeline": [
                {**asdict(step), "lag_seconds": step.lag.total_seconds() if step.lag else None}
                for step in run.timeline
            ],
            "expire": asdict(run.expire) if run.expire else None,
            "snapshots_before_expire": run.expire_before,
            "downstream_next_snapshot": run.downstream_next,
            "orphans": asdict(run.orphans) if run.orphans else None,
            "downstream": asdict(run.downstream) if run.downstream else None,
            "summary": asdict(run.summary) if run.summary else None,
            "seconds": run.seconds,
            "spark_seconds": run.spark_seconds,
            "spark_master": run.spark_master,
        }
    )
