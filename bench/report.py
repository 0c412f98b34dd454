"""The machine description, the Markdown report and the small-appends section of it."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from bench.stats import CommitStats, Spread


@dataclass(slots=True)
class ContenderResult:
    """What one contender measured; None where it does not take part."""

    name: str
    commit: CommitStats | None = None
    plan: Spread | None = None
    read: Spread | None = None
    plan_and_read: Spread | None = None
    rows: int | None = None
    files: int | None = None
    metadata_files: int | None = None
    metadata_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Ratio:
    label: str
    numerator: float | None
    denominator: float | None
    target: float | None
    note: str | None = None  # shown instead of a value that cannot exist

    @property
    def value(self) -> float | None:
        if self.numerator is None or not self.denominator:
            return None
        return self.numerator / self.denominator

    @property
    def verdict(self) -> str:
        if self.value is None:
            return "n/a"
        if self.target is None:
            return "-"
        return "yes" if self.value <= self.target else "**no**"


@dataclass(slots=True)
class Report:
    """The small-appends workload's results."""

    appends: int
    rows_per_append: int
    repeats: int
    contenders: list[ContenderResult]
    ratios: list[Ratio]
    notes: list[str] = field(default_factory=list)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_revision() -> str:
    root = Path(__file__).resolve().parents[1]
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{rev}{' + uncommitted changes in src/' if dirty else ''}"


def machine_info(pypaimon_versions: dict[str, str] | None) -> dict[str, str]:
    info = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{os.cpu_count()} x {_cpu_model()}",
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "pyarrow (shoal, floor)": pa.__version__,
        "shoal revision": _git_revision(),
    }
    if pypaimon_versions:
        info["pypaimon"] = pypaimon_versions.get("pypaimon", "?")
        info["pyarrow (pypaimon venv)"] = pypaimon_versions.get("pyarrow", "?")
    return info


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def _spread(s: Spread | None) -> str:
    if s is None:
        return "-"
    return f"{s.median * 1000:.1f} [{s.low * 1000:.1f}, {s.high * 1000:.1f}]"


def _row(label: str, cells: list[str]) -> str:
    return "| " + " | ".join([label, *cells]) + " |"


def ratio_table(ratios: list[Ratio]) -> list[str]:
    lines = ["| ratio | value | target | met |", "| --- | ---: | ---: | :---: |"]
    for r in ratios:
        value = f"{r.value:.2f}" if r.value is not None else (r.note or "-")
        target = "-" if r.target is None else f"≤ {r.target:g}"
        lines.append(f"| {r.label} | {value} | {target} | {r.verdict} |")
    return lines


def render(machine: dict[str, str], sections: list[list[str]], notes: list[str]) -> str:
    """The whole report: a title, the machine, each workload's section, the run's notes."""
    lines = [
        "# shoal benchmark",
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in machine.items()) + ".",
    ]
    for section in sections:
        lines.extend(["", *section])
    if notes:
        lines.extend(["", "## Notes on this run", ""])
        lines.extend(f"- {note}" for note in notes)
    return "\n".join(lines) + "\n"


def render_appends(report: Report) -> list[str]:
    """The small-appends section."""
    cs = report.contenders
    window = next((c.commit.window for c in cs if c.commit), 20)
    lines = [
        "## Small appends, cold planning, full read",
        "",
        f"Workload: {report.appends} sequential appends of {report.rows_per_append:,} rows "
        "into an append table partitioned by `dt` (4 values, a quarter of each append "
        "each; columns dt string, id int64, name string, value float64, ts timestamp[us]), "
        "then cold planning of the latest snapshot in a fresh process, then reading the "
        f"whole table. Plan and read repeated {report.repeats} times, interleaved "
        "across contenders: median [min, max]. Times in milliseconds.",
        "",
        _row("metric", [c.name for c in cs]),
        _row("---", ["---:" for _ in cs]),
        _row("commit median", [_ms(c.commit.median if c.commit else None) for c in cs]),
        _row("commit p95", [_ms(c.commit.p95 if c.commit else None) for c in cs]),
        _row(
            f"commit median, first {window}",
            [_ms(c.commit.first_median if c.commit else None) for c in cs],
        ),
        _row(
            f"commit median, last {window}",
            [_ms(c.commit.last_median if c.commit else None) for c in cs],
        ),
        _row("all appends, total", [_ms(c.commit.total if c.commit else None) for c in cs]),
        _row("cold plan", [_spread(c.plan) for c in cs]),
        _row("full read (after plan)", [_spread(c.read) for c in cs]),
        _row("cold plan + full read", [_spread(c.plan_and_read) for c in cs]),
        _row("rows read", [f"{c.rows:,}" if c.rows is not None else "-" for c in cs]),
        _row("data files", [str(c.files) if c.files is not None else "-" for c in cs]),
        _row(
            "metadata files (snapshot/, manifest/)",
            [str(c.metadata_files) if c.metadata_files is not None else "-" for c in cs],
        ),
        _row(
            "metadata bytes",
            [f"{c.metadata_bytes:,}" if c.metadata_bytes is not None else "-" for c in cs],
        ),
        "",
        *ratio_table(report.ratios),
        "",
        *_METHOD,
    ]
    if report.notes:
        lines.extend(["", *(f"- {note}" for note in report.notes)])
    return lines


_METHOD = [
    "How it is measured (`python -m bench`; code in `bench/`):",
    "",
    "- Data: deterministic (numpy seed), written once to an Arrow IPC file that every "
    "contender reads into memory before its clock starts.",
    "- Appends: each contender runs in its own long-lived process; the driver asks for "
    "one append at a time, rotating the order across contenders, so background load "
    "hits all of them alike. A commit is timed inside its process: shoal "
    "`table.append(t)`; pypaimon a batch write builder's write, prepare_commit, commit "
    "and close; the floor `pyarrow.parquet.write_table` of each partition's rows (one "
    "sort by `dt`, zero-copy slices; zstd), with no metadata at all.",
    "- Cold plan: a fresh process per measurement, libraries imported before the clock "
    "starts; it times opening the table by path and planning the latest snapshot "
    "(`shoal.open_table(path).scan().plan()`, pypaimon "
    "`FileStoreTable.from_path(path).new_read_builder().new_scan().plan()`).",
    "- Full read: in the same process, right after the plan, reading every split to "
    "one Arrow table (`scan.to_arrow()`, pypaimon `new_read().to_arrow(splits)`). "
    "The floor is `pyarrow.dataset.dataset(paths, format='parquet').to_table()` over "
    "shoal's own data files, given the list (no planning) in a fresh process.",
]
