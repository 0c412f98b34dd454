"""The scale section of the Markdown report."""

from __future__ import annotations

import itertools

from bench.java_scale import JVM_FLAGS_TEXT
from bench.scale import (
    EXPIRE,
    JAVA_OPS,
    OPS,
    PLAN_FILTERED,
    OpResult,
    ScaleReport,
    SizeResult,
    same_answer,
)
from bench.scale_table import APPENDS, BUCKETS, COMPACTED_APPENDS
from bench.scale_targets import ratio, targets

_READ_KINDS = (
    ("snapshots", "snapshot"),
    ("hints", "hint"),
    ("manifest lists", "list"),
    ("manifests", "manifest"),
    ("tags", "tag"),
    ("schemas", "schema"),
)


def _row(label: str, cells: list[str]) -> str:
    return "| " + " | ".join([label, *cells]) + " |"


def _label(files: int) -> str:
    if files >= 1_000_000 and files % 1_000_000 == 0:
        return f"{files // 1_000_000}M files"
    if files >= 1_000 and files % 1_000 == 0:
        return f"{files // 1_000}k files"
    return f"{files:,} files"


def _short(files: int) -> str:
    return _label(files).removesuffix(" files")


def _growth(values: list[float]) -> list[str]:
    out = []
    for before, after in itertools.pairwise(values):
        out.append(f"x{after / before:.1f}" if before > 0 else "-")
    return out


def _growth_headers(sizes: list[SizeResult]) -> list[str]:
    return [f"growth {_short(a.files)}→{_short(b.files)}" for a, b in itertools.pairwise(sizes)]


def _ms(op: OpResult) -> str:
    s = op.seconds
    if s.count == 1:
        return f"{s.median * 1000:,.1f}"
    return f"{s.median * 1000:,.1f} [{s.low * 1000:,.1f}, {s.high * 1000:,.1f}]"


def _reads(op: OpResult) -> str:
    parts = [f"{op.reads[k]} {name}" for k, name in _READ_KINDS if op.reads.get(k)]
    listed = f"; {op.listings} listing{'s' if op.listings != 1 else ''}" if op.listings else ""
    return f"**{op.metadata_files_read:,}** ({', '.join(parts)}{listed})"


def _table(sizes: list[SizeResult], title: str, value: str) -> list[str]:
    """One row per operation, a column per size and per growth step."""
    growth = _growth_headers(sizes)
    lines = [
        _row(title, [_label(s.files) for s in sizes] + growth),
        _row("---", ["---:"] * (len(sizes) + len(growth))),
    ]
    for name in OPS:
        ops = [s.ops[name] for s in sizes]
        if value == "ms":
            cells = [_ms(op) for op in ops]
            values = [op.seconds.median for op in ops]
        elif value == "mib":
            cells = [f"{op.peak_mib:,.1f}" for op in ops]
            values = [op.peak_mib for op in ops]
        else:
            cells = [_reads(op) for op in ops]
            values = [float(op.metadata_files_read) for op in ops]
        lines.append(_row(name, cells + _growth(values)))
    return lines


def _facts(sizes: list[SizeResult]) -> list[str]:
    def build(key: str, fmt: str = "{:,}") -> list[str]:
        return [fmt.format(s.build.get(key, 0)) for s in sizes]

    filtered = [s.ops[PLAN_FILTERED].answer.get("files", 0) for s in sizes]
    expired = [s.ops[EXPIRE].answer for s in sizes]
    return [
        _row("table", [_label(s.files) for s in sizes]),
        _row("---", ["---:"] * len(sizes)),
        _row("live data files", build("live_files")),
        _row(
            "data files added / deleted over the history",
            [
                f"{s.build.get('added_files', 0):,} / {s.build.get('deleted_files', 0):,}"
                for s in sizes
            ],
        ),
        _row("manifest files (and lists) written", build("manifest_files")),
        _row(
            "manifest bytes",
            [f"{s.build.get('manifest_bytes', 0) / 2**20:,.0f} MiB" for s in sizes],
        ),
        _row("time to write the table (s, untimed)", build("seconds", "{:.0f}")),
        _row("files in the filtered partition", [f"{n:,}" for n in filtered]),
        _row(
            "expiration: snapshots / data files / manifest files deleted",
            [
                f"{e.get('expired_snapshots', 0):,} / {e.get('deleted_data_files', 0):,} / "
                f"{e.get('deleted_manifest_files', 0):,}"
                for e in expired
            ],
        ),
    ]


_VERSUS_HEADERS = (
    "shoal (ms)",
    "Java (ms)",
    "shoal peak (MiB)",
    "Java peak (MiB)",
    "shoal / Java",
    "same answer",
)


def _versus_java(sizes: list[SizeResult], op: str) -> list[str]:
    """shoal beside Java Paimon for one operation, a row per table."""
    lines = [
        f"**{op}**",
        "",
        _row("table", list(_VERSUS_HEADERS)),
        _row("---", ["---:"] * 5 + ["---"]),
    ]
    for size in sizes:
        ours, theirs = size.ops.get(op), size.java.get(op)
        if ours is None or theirs is None:
            lines.append(_row(_label(size.files), ["-"] * 5 + ["Java did not run"]))
            continue
        value = ratio(size, op)
        same = "yes" if same_answer(size, op) else f"**no**: {ours.answer} / {theirs.answer}"
        cells = [_ms(ours), _ms(theirs), f"{ours.peak_mib:,.1f}", f"{theirs.peak_mib:,.1f}"]
        lines.append(_row(_label(size.files), [*cells, f"{value:.2f}" if value else "-", same]))
    return lines


def render_java(sizes: list[SizeResult]) -> list[str]:
    """The comparison with Java Paimon and the scale targets."""
    lines = [
        "### shoal beside Java Paimon 1.0",
        "",
        "The same tables, each run a fresh process (Java: a fresh JVM, "
        f"{JVM_FLAGS_TEXT}), shoal's and Java's runs alternating; time inside the process "
        "(opening the table by path and the operation), peak resident memory above the "
        "process's before the clock started. Expiration: each run on its own copy of the "
        "table. Same answer: the same splits and data files planned, or the same snapshots "
        "and data files expired.",
        "",
    ]
    for op in JAVA_OPS:
        lines.extend([*_versus_java(sizes, op), ""])
    lines.extend([_row("scale target", ["measured", "met"]), _row("---", ["---:", "---"])])
    for target in targets(sizes):
        met = "-" if target.met is None else ("yes" if target.met else "**no**")
        lines.append(_row(target.name, [target.measured, met]))
    return lines


def render_scale(report: ScaleReport) -> list[str]:
    sizes = report.sizes
    first = sizes[0]
    per_snapshot = ", ".join(f"{s.files // s.snapshots:,}" for s in sizes)
    lines = [
        f"## Scale: {first.snapshots:,} snapshots, "
        f"{' to '.join(_short(s.files) for s in (sizes[0], sizes[-1]))} live files",
        "",
        f"Workload: synthetic primary-key tables of {first.snapshots:,} snapshots over "
        f"{first.partitions:,} daily partitions (`dt`), {BUCKETS} buckets, "
        "`compaction.event-time.field` set, holding "
        f"{', '.join(f'{s.files:,}' for s in sizes)} live data files (metadata only). "
        f"Each partition gets {APPENDS} appends of {per_snapshot} files per bucket, then a "
        f"compaction that merges the first {COMPACTED_APPENDS} appends' files into as many "
        "as one append adds, so compactions delete files. On each table, in this order: "
        "planning a scan of one partition, planning the full scan, the freshness "
        "computation, creating and deleting a tag, committing one append of 1,000 rows into "
        f"the newest partition, expiring the oldest {first.snapshots // 10:,} snapshots. "
        "Each run is a fresh "
        f"process; repeated up to {report.repeats} times (fewer once an operation's runs "
        "took long; expiration once): median [min, max]. Times in milliseconds.",
        "",
        *_table(sizes, "time (ms)", "ms"),
        "",
        *_table(sizes, "peak memory (MiB)", "mib"),
        "",
        *_table(sizes, "metadata files read", "reads"),
        "",
        *_facts(sizes),
        "",
        *render_java(sizes),
        "",
        *_METHOD,
    ]
    if report.notes:
        lines.extend(["", *(f"- {note}" for note in report.notes)])
    return lines


_METHOD = [
    "How it is measured (`python -m bench --workload scale`; code in `bench/scale.py`, "
    "`bench/scale_table.py`, `bench/scale_worker.py`):",
    "",
    "- The tables: every snapshot is what shoal's committer publishes (the delta "
    "manifest, the previous manifests merged into the base list by shoal's "
    "`merge_manifests` with the default options, rolled by shoal's `ManifestStore`, both "
    "manifest lists, the freshness watermark in the properties), with commit times one "
    "partition a day in the past. Only the manifest entries are encoded by the benchmark, "
    "from bytes built once per file (checked against shoal's encoder before each build); "
    "every file has its own random key and value statistics inside its partition's day, "
    "so manifests compress as real ones do. Data files are not written, except the ones "
    "expiration deletes (created empty). Written on a tmpfs, untimed, two tables at a "
    "time.",
    "- Each run: a fresh `python -m bench.scale_worker` that imports shoal (and the "
    "modules the operation loads) before the clock starts; the clock covers "
    "`shoal.Table.open(path)` and the operation: `scan(filter=[('dt', '=', <the middle "
    "day>)]).plan()`, `scan().plan()`, `freshness()`, `create_tag(name)`, "
    "`delete_tag(name)`, `append(<1,000 rows of the newest day>)` (an upsert: the next "
    "sequence numbers of its buckets, the commit with its sequence check), "
    "`expire_snapshots(older_than=now, max_deletes=<a tenth of the snapshots>)`.",
    "- Java Paimon 1.0 (the bundle jar of `paimon-python-ali==0.1.1`, as the interop "
    "tests use it): `bench/java/ScaleProbe.java` in a fresh JVM per run "
    "(`bench/java_scale.py`) opens the table with `FileStoreTableFactory.create(path)` and "
    "plans `newReadBuilder().newScan().plan().splits()`, the same with "
    "`withPartitionFilter({dt: <the middle day>})`, or expires with `newExpireSnapshots()` "
    "and an `ExpireConfig` of `snapshotRetainMax = Integer.MAX_VALUE`, "
    "`snapshotRetainMin = 1`, `snapshotTimeRetain = 0` and `snapshotMaxDeletes = <a tenth "
    "of the snapshots>`: the same oldest snapshots shoal's expiration removes. The data "
    "files it deletes are counted on disk around the run.",
    "- Peak memory: the process's `VmHWM` after the operation, reset through "
    "`/proc/self/clear_refs` just before the clock starts, minus its resident memory "
    "then.",
    "- Metadata files read: `LocalFileIO.read_bytes` calls by directory (snapshot files, "
    "the `LATEST`/`EARLIEST` hints, manifest lists, manifests, tags, schemas), counted in "
    "the process; listings are directory listings. For a repeated operation, the run that "
    "read the most.",
    "- Growth: the ratio of the medians from one table to the next (x10 files each "
    "step). An operation whose cost follows the work grows with the files it touches; "
    "one that follows the history would read thousands of snapshots on every table.",
]
