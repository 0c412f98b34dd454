"""The cleanup sections of the Markdown report: snapshot expiration, orphan files."""

from __future__ import annotations

from collections.abc import Callable

from bench.cleanup import DELTA_ORPHAN_HOURS, STRAY_AGE, CleanupReport, CleanupResult
from bench.report import ratio_table
from bench.stats import Spread


def _spread_ms(s: Spread | None) -> str:
    if s is None:
        return "-"
    return f"{s.median * 1000:.1f} [{s.low * 1000:.1f}, {s.high * 1000:.1f}]"


def _count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _row(label: str, cells: list[str]) -> str:
    return "| " + " | ".join([label, *cells]) + " |"


def _time(c: CleanupResult) -> str:
    return c.note if c.seconds is None and c.note else _spread_ms(c.seconds)


def _cells(cs: list[CleanupResult], cell: Callable[[CleanupResult], str]) -> list[str]:
    return [cell(c) for c in cs]


def _header(cs: list[CleanupResult]) -> list[str]:
    return [_row("metric", [c.name for c in cs]), _row("---", ["---:" for _ in cs])]


def _fs(report: CleanupReport) -> str:
    return "a tmpfs (`/dev/shm`)" if report.filesystem == "tmpfs" else report.filesystem


def _table(report: CleanupReport) -> str:
    return (
        f"{report.commits} commits into an append table partitioned by `dt` (4 values): "
        f"appends of {report.rows_per_commit:,} rows (a quarter in each partition), and "
        f"{report.overwrites} of them (every 20th, from the 11th) overwrite one partition "
        "with that commit's rows of it, so that files get deleted"
    )


def render_expire(report: CleanupReport) -> list[str]:
    cs = report.contenders
    lines = [
        "## Cleanup: snapshot expiration",
        "",
        f"Workload: {_table(report)}. Then every snapshot but the newest {report.retain} "
        "expires, with the files only the expired ones use. Repeated "
        f"{report.repeats} times, interleaved across contenders, a fresh process and a "
        f"fresh copy of the table each, on {_fs(report)}: median [min, max]. Times in "
        "milliseconds.",
        "",
        *_header(cs),
        _row("expiration", _cells(cs, _time)),
        _row(
            f"floor: read and decode the metadata ({report.metadata_read} files)",
            _cells(cs, lambda c: _spread_ms(c.parts.get("read_s"))),
        ),
        _row("floor: unlink the files", _cells(cs, lambda c: _spread_ms(c.parts.get("unlink_s")))),
        _row("data files deleted", _cells(cs, lambda c: _count(c.deleted_data))),
        _row(
            "metadata files deleted (snapshots, manifests; Delta log)",
            _cells(cs, lambda c: _count(c.deleted_metadata)),
        ),
        _row("files written", _cells(cs, lambda c: _count(c.created))),
        _row("versions left", _cells(cs, lambda c: _count(c.versions_left))),
        _row("rows at the oldest version kept", _cells(cs, lambda c: _count(c.rows_check))),
        "",
        *ratio_table(report.ratios),
        "",
        *_EXPIRE_METHOD,
    ]
    if report.notes:
        lines.extend(["", *(f"- {note}" for note in report.notes)])
    return lines


def render_orphans(report: CleanupReport) -> list[str]:
    cs = report.contenders
    layout = "; ".join(f"{name}: {where}" for name, where in report.stray_layout.items())
    lines = [
        "## Cleanup: orphan files",
        "",
        f"Workload: {_table(report)}; then {report.strays:,} stray files of 1 KiB that no "
        f"snapshot uses, {STRAY_AGE.days} days old ({layout}). Then every orphan file older "
        "than a day is removed. Repeated "
        f"{report.repeats} times, interleaved across contenders, a fresh process and a "
        f"fresh copy of the table each, on {_fs(report)}: median [min, max]. Times in "
        "milliseconds.",
        "",
        *_header(cs),
        _row("orphan removal", _cells(cs, _time)),
        _row(
            "files deleted",
            _cells(
                cs,
                lambda c: (
                    "-"
                    if c.seconds is None
                    else _count((c.deleted_data or 0) + (c.deleted_metadata or 0))
                ),
            ),
        ),
        _row("files written", _cells(cs, lambda c: _count(c.created))),
        _row("rows readable afterwards", _cells(cs, lambda c: _count(c.rows_check))),
        "",
        *ratio_table(report.ratios),
        "",
        *_ORPHANS_METHOD,
    ]
    if report.notes:
        lines.extend(["", *(f"- {note}" for note in report.notes)])
    return lines


_COMMON = [
    "- Data: deterministic (numpy seed), written once to an Arrow IPC file; shoal and "
    "deltalake each write the same commits (appends, and partition overwrites: shoal "
    "`table.overwrite(rows, partition={'dt': v})`, deltalake `write_deltalake(..., "
    "mode='overwrite', predicate=\"dt = 'v'\")`), untimed. The shoal table serves both "
    "shoal and the floor.",
    "- Each measurement: `shutil.copytree` of the prepared table (not timed), then a fresh "
    "process that imports its libraries, starts the clock and runs the operation (shoal "
    "and deltalake open the table by path inside the clock; the floor opens nothing). The "
    "files deleted and written are found by listing the copy "
    "before and after, outside the clock; the check row is read afterwards, untimed.",
    "- The tables live on a tmpfs (`/dev/shm`) unless `--cleanup-dir` says otherwise: "
    "each measurement needs a fresh copy of thousands of small files, which on a disk "
    "that creates files slowly (here, up to about 1 ms a file) takes longer than "
    "everything measured, and disk journaling after the copy makes unlink times noisy.",
]

_EXPIRE_METHOD = [
    "How it is measured (`python -m bench --workload expire`; code in `bench/cleanup.py`, "
    "`bench/cleanup_workloads.py`, `bench/delta_runner.py`):",
    "",
    *_COMMON,
    "- shoal: `shoal.open_table(path).expire_snapshots(retain_min=10, retain_max=10, "
    "older_than=datetime.now(), max_deletes=1_000_000)`.",
    "- The floor does what an expiration cannot avoid, told everything in advance: it "
    "reads and decodes (`json.loads`; `fastavro.reader` to plain records) the snapshot "
    "files from the earliest to the oldest kept, their base and delta manifest lists, and "
    "the manifests the delta lists after the earliest name, then `os.unlink`s exactly the "
    "files shoal deletes (found by one untimed shoal run on another copy), one after "
    "another in one thread.",
    "- deltalake, the closest equivalent: `dt = DeltaTable(path)`; "
    "`dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False, "
    "keep_versions=<the newest 10 versions>)` deletes every removed data file that none of "
    "the kept versions uses; then `dt.load_as_version(<oldest kept>)`, "
    "`dt.create_checkpoint()` and `dt.cleanup_metadata()` drop the log files before it "
    "(the table is written with `delta.logRetentionDuration = 'interval 0 seconds'`, as "
    "`older_than=now` for shoal, and `delta.enableExpiredLogCleanup = false`, so that no "
    "log file goes before this run). Its vacuum commits twice (start and end), so two "
    "more versions are left. The plain-vacuum column is the same without `keep_versions` "
    "(every removed file goes, which here is the same set, since no commit among the last "
    "10 removes a file).",
    "- pypaimon 2.1.0 has no snapshot expiration; pyiceberg 0.12.0's "
    "`table.maintenance.expire_snapshots()` only removes snapshots from the table "
    "metadata and deletes no file.",
]

_ORPHANS_METHOD = [
    "How it is measured (`python -m bench --workload orphans`; code in "
    "`bench/cleanup.py`, `bench/cleanup_workloads.py`, `bench/delta_runner.py`):",
    "",
    *_COMMON,
    "- The strays are written once into each prepared table and aged with `os.utime`; "
    "`copytree` keeps their times. The table's own files are minutes old.",
    "- shoal: `shoal.open_table(path).remove_orphan_files()` (default threshold: now "
    "minus one day).",
    "- The floor knows nothing of the metadata but is told the strays' names: `os.walk` "
    "of the whole table, `os.stat` of every file, `os.unlink` of each stray older than a "
    "day, in one thread.",
    "- deltalake: `DeltaTable(path).vacuum(retention_hours="
    f"{DELTA_ORPHAN_HOURS}, enforce_retention_duration=False, dry_run=False, full=True)`: "
    "a full vacuum deletes every file the log does not name that is older than the "
    "threshold. Delta has no manifest directory (it ignores `_delta_log/` when it "
    "vacuums), so its strays all go into the partition directories; the vacuum commits "
    "twice (start and end).",
    "- pypaimon 2.1.0 and pyiceberg 0.12.0 have no orphan file removal.",
]
