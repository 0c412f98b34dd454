"""The primary-key section of the Markdown report."""

from __future__ import annotations

from bench.primary_key import PkReport, PkResult
from bench.report import ratio_table
from bench.stats import Spread


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def _spread_ms(s: Spread | None) -> str:
    if s is None:
        return "-"
    return f"{s.median * 1000:.1f} [{s.low * 1000:.1f}, {s.high * 1000:.1f}]"


def _spread_mb(s: Spread | None) -> str:
    if s is None:
        return "-"
    return f"{s.median:.0f} [{s.low:.0f}, {s.high:.0f}]"


def _count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _row(label: str, cells: list[str]) -> str:
    return "| " + " | ".join([label, *cells]) + " |"


def _compaction(c: PkResult) -> str:
    return c.compact_note if c.compact is None and c.compact_note else _spread_ms(c.compact)


def _files(c: PkResult) -> str:
    if c.compacted_files is None:
        return "-"
    return f"{c.compacted_files} → {c.written_files}"


def render_primary_key(report: PkReport) -> list[str]:
    cs = report.contenders
    lines = [
        "## Primary key: upserts, real-time read, full compaction",
        "",
        f"Workload: {report.batches} upserts of {report.rows_per_batch:,} rows (columns id "
        "int64, name string, value float64, ts timestamp[us]; ids drawn at random from "
        f"[0, {report.key_range:,}), so later upserts overwrite earlier keys: "
        f"{report.distinct_keys:,} distinct keys in the end; an upsert keeps the last row "
        f"of a key it repeats, so the data files hold {report.file_rows:,} rows) into a "
        "primary-key table on "
        "`id` with `write-only` (no compaction during the upserts). Then the real-time "
        "(merged) read and a full compaction. Reads and compactions repeated "
        f"{report.repeats} times, interleaved across contenders, a fresh process each: "
        "median [min, max]. Times in milliseconds, memory in MiB.",
        "",
        _row("metric", [c.name for c in cs]),
        _row("---", ["---:" for _ in cs]),
        _row("buckets", [str(c.buckets) if c.buckets else "-" for c in cs]),
        _row("upsert commit median", [_ms(c.upsert.median if c.upsert else None) for c in cs]),
        _row("upsert commit p95", [_ms(c.upsert.p95 if c.upsert else None) for c in cs]),
        _row("all upserts, total", [_ms(c.upsert.total if c.upsert else None) for c in cs]),
        _row("real-time read: cold plan", [_spread_ms(c.plan) for c in cs]),
        _row("real-time read: plan + merged read", [_spread_ms(c.read) for c in cs]),
        _row("rows read", [_count(c.rows) for c in cs]),
        _row("data files read", [_count(c.files) for c in cs]),
        _row(
            "real-time read: peak RSS",
            [_spread_mb(c.read_rss) for c in cs],
        ),
        _row(
            "real-time read: RSS before reading",
            ["-" if c.read_rss_before is None else f"{c.read_rss_before:.0f}" for c in cs],
        ),
        _row("full compaction", [_compaction(c) for c in cs]),
        _row("files compacted → written", [_files(c) for c in cs]),
        _row("full compaction: peak RSS", [_spread_mb(c.compact_rss) for c in cs]),
        "",
        *ratio_table(report.ratios),
        "",
        *_METHOD,
    ]
    if report.notes:
        lines.extend(["", *(f"- {note}" for note in report.notes)])
    return lines


_METHOD = [
    "How it is measured (`python -m bench --workload primary-key`; code in "
    "`bench/primary_key.py`, `bench/pk_workloads.py`):",
    "",
    "- Data: deterministic (numpy seed), written once to an Arrow IPC file that every "
    "contender reads into memory before its clock starts.",
    "- Upserts: each table is written by its own long-lived process, one commit at a "
    "time in a rotating order; a commit is timed inside its process: shoal "
    "`table.upsert(t)`, pypaimon a batch write builder's write, prepare_commit, commit "
    "and close on a primary-key table with the same buckets. The shoal table with more "
    "buckets holds the same data.",
    "- Real-time read: a fresh process per measurement, libraries imported before the "
    "clock starts; it times opening the table by path, planning the latest snapshot "
    "and reading the merged rows (`shoal.open_table(path).scan()`, `.plan()`, "
    "`.to_arrow()`; pypaimon `FileStoreTable.from_path(path).new_read_builder()`, "
    "`new_scan().plan()`, `new_read().to_arrow(splits)`). The floor is "
    "`pyarrow.parquet.read_table(p, partitioning=None)` of every data file of shoal's "
    "4-bucket table, given the list, nothing merged (so it returns every row of every "
    "file).",
    "- Full compaction: shoal `shoal.open_table(copy).compact('full')` in a fresh "
    "process on a fresh copy of the uncompacted table (the copy is not timed; the "
    "read-optimized view is counted afterwards, untimed, as a check). The floor reads "
    "each of those data files and writes it back with "
    "`pyarrow.parquet.write_table(t, compression='zstd')`. pypaimon 2.1.0 cannot "
    "compact: it has no compaction API, and its commit refuses compaction increments.",
    "- Peak RSS is the reading or compacting process's high-water mark (`VmHWM` in "
    "`/proc/self/status`, the peak of this process image; not `ru_maxrss`, which on "
    "Linux carries the parent's peak across fork and exec, so every probe would show "
    "at least the driver's own footprint). It includes the interpreter and libraries "
    "(the 'before reading' row) and, for a read, the result held in memory. The "
    "merge's memory must not grow with the bucket count: the same rows in more "
    "buckets are more, smaller files and fewer rows per bucket.",
]
