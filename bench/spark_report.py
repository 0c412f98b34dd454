"""The Spark section of the Markdown report: the ``shoal`` data source against Spark's own
Parquet source and the least a Python data source does, and the distributed jobs against
the single-process operations; the ratios, with targets for the data source."""

from __future__ import annotations

from typing import Any

from bench.report import Ratio, ratio_table
from bench.spark_workloads import (
    COMPACT,
    COMPACT_BUCKETS,
    COMPRESSION,
    FLOOR,
    NATIVE,
    ONE_COLUMN,
    ORPHANS,
    PARQUET,
    READ_ALL,
    READ_FILES,
    READ_ONE,
    READ_SORT,
    SHOAL,
    SINGLE,
    SPARK_CONF,
    SPARK_JOB,
    STRAY_AGE,
    TASKS,
    WRITE,
)
from bench.stats import Spread

TARGETS = {READ_ALL: 1.3, READ_ONE: 2.0, WRITE: 1.3}
SOURCE_MEASURES = {
    READ_ALL: "aggregate over all columns",
    READ_SORT: "aggregate over all columns, maximum of the string (sort-based)",
    READ_ONE: f"one-column aggregate (`{ONE_COLUMN}`, pruned)",
    WRITE: "write (append)",
}
JOB_MEASURES = {COMPACT: "full compaction", ORPHANS: "orphan cleanup"}
SOURCE_NAMES = {
    SHOAL: "shoal",
    NATIVE: "shoal, Spark's Parquet writer",
    FLOOR: "Python-source floor",
    PARQUET: "Spark Parquet",
}
NATIVE_WRITE = "shoal / Spark Parquet, write (append) by Spark's Parquet writer (`write_table`)"
JOB_NAMES = {SPARK_JOB: "Spark job", SINGLE: "single process"}


def spreads(raw: dict[str, Any]) -> dict[str, dict[str, Spread]]:
    """Per measure and contender, the repeated times."""
    return {
        measure: {name: Spread.of(times) for name, times in by_name.items() if times}
        for measure, by_name in raw["times"].items()
    }


def _median(found: dict[str, dict[str, Spread]], measure: str, name: str) -> float | None:
    spread = found.get(measure, {}).get(name)
    return spread.median if spread is not None else None


def spark_ratios(raw: dict[str, Any]) -> list[Ratio]:
    """The data source against Spark's Parquet source (with targets) and against the
    floor; the floor against Parquet; the Spark jobs against the single process."""
    found = spreads(raw)
    sources = {m: label for m, label in SOURCE_MEASURES.items() if m in found}
    ratios = [
        Ratio(
            f"shoal / Spark Parquet, {label}",
            _median(found, measure, SHOAL),
            _median(found, measure, PARQUET),
            TARGETS.get(measure),
        )
        for measure, label in sources.items()
    ]
    if WRITE in found:
        ratios.append(
            Ratio(
                NATIVE_WRITE,
                _median(found, WRITE, NATIVE),
                _median(found, WRITE, PARQUET),
                TARGETS[WRITE],
            )
        )
    for numerator, denominator, what in (
        (SHOAL, FLOOR, "shoal / Python-source floor (shoal's own cost)"),
        (FLOOR, PARQUET, "Python-source floor / Spark Parquet (the API's cost)"),
    ):
        ratios += [
            Ratio(
                f"{what}, {label}",
                _median(found, measure, numerator),
                _median(found, measure, denominator),
                None,
            )
            for measure, label in sources.items()
        ]
    ratios += [
        Ratio(
            f"Spark job / single process, {label}",
            _median(found, measure, SPARK_JOB),
            _median(found, measure, SINGLE),
            None,
        )
        for measure, label in JOB_MEASURES.items()
    ]
    return ratios


def _ms(spread: Spread | None) -> str:
    if spread is None:
        return "-"
    return f"{spread.median * 1000:,.0f} [{spread.low * 1000:,.0f}, {spread.high * 1000:,.0f}]"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _times_table(
    found: dict[str, dict[str, Spread]], measures: dict[str, str], names: dict[str, str]
) -> list[str]:
    lines = [_row(["measure", *names.values()]), _row(["---", *("---:" for _ in names)])]
    for measure, label in measures.items():
        if measure in found:
            lines.append(_row([label, *(_ms(found[measure].get(n)) for n in names)]))
    return lines


def _fact(raw: dict[str, Any], measure: str, name: str, key: str) -> str:
    value = raw["facts"].get(measure, {}).get(name, {}).get(key)
    if value is None:
        return "-"
    return f"{int(value):,}" if str(value).lstrip("-").isdigit() else str(value)


def _facts_table(raw: dict[str, Any]) -> list[str]:
    rows = [
        ("rows aggregated (all columns)", READ_ALL, (SHOAL, FLOOR, PARQUET), "rows"),
        ("rows written", WRITE, (SHOAL, PARQUET), "rows"),
        ("data files written", WRITE, (SHOAL, PARQUET), "files"),
        ("bytes written", WRITE, (SHOAL, PARQUET), "bytes"),
        ("rows written with Spark's Parquet writer", WRITE, (NATIVE, PARQUET), "rows"),
        ("data files written with Spark's Parquet writer", WRITE, (NATIVE, PARQUET), "files"),
        ("files compacted", COMPACT, (SPARK_JOB, SINGLE), "compacted_files"),
        ("rows after compaction (read-optimized)", COMPACT, (SPARK_JOB, SINGLE), "rows_after"),
        ("orphan files deleted", ORPHANS, (SPARK_JOB, SINGLE), "deleted"),
    ]
    lines = [_row(["fact", "shoal / Spark job", "floor", "Spark Parquet / single process"])]
    lines.append(_row(["---", "---:", "---:", "---:"]))
    for label, measure, names, key in rows:
        if measure not in raw["facts"]:
            continue
        first, *rest = names
        cells = [_fact(raw, measure, first, key)]
        cells.append(_fact(raw, measure, FLOOR, key) if FLOOR in names else "-")
        cells.append(_fact(raw, measure, rest[-1], key))
        lines.append(_row([label, *cells]))
    return lines


def _missed_targets(found: dict[str, dict[str, Spread]]) -> list[str]:
    """For each target the data source misses, how much of it is shoal's and how much
    the API's: a paragraph, or nothing."""
    parts = []
    for measure, target in TARGETS.items():
        shoal = _median(found, measure, SHOAL)
        floor = _median(found, measure, FLOOR)
        parquet = _median(found, measure, PARQUET)
        if shoal is None or floor is None or not parquet or shoal / parquet <= target:
            continue
        parts.append(
            f"{SOURCE_MEASURES[measure]}: {shoal / parquet:.2f} against ≤ {target:g}, of "
            f"which the floor alone is {floor / parquet:.2f} and shoal over the floor "
            f"{shoal / floor:.2f}"
        )
    if not parts:
        return []
    return [
        "Targets missed, split into what Spark's Python Data Source API costs (the floor "
        "against Spark Parquet) and what shoal adds to it: " + "; ".join(parts) + ".",
        "",
    ]


def _verdict(ratio: Ratio, spreads: dict[str, Spread], what: str, why: dict[str, str]) -> str:
    """Which of the Spark job and the single process won, and why (``why`` has a
    reason for each winner, and under "even" for runs whose ranges overlap)."""
    job, single = spreads.get(SPARK_JOB), spreads.get(SINGLE)
    if ratio.value is None or job is None or single is None:
        return f"- {what}: not measured."
    if job.low <= single.high and single.low <= job.high:
        return (
            f"- {what}: neither wins clearly (the Spark job takes {ratio.value:.2f} of "
            "the time, and the two ranges overlap). " + why["even"]
        )
    if ratio.value > 1:
        return f"- {what}: the single process wins, {ratio.value:.2f} times as fast. " + why[SINGLE]
    return f"- {what}: the Spark job wins, {1 / ratio.value:.2f} times as fast. " + why[SPARK_JOB]


_JOB_COST = (
    "the job's own cost: planning on the driver, the pickled plan broadcast to Python "
    "tasks that each open the table, the commit messages pickled back"
)
_COMPACT_WHY = {
    SINGLE: (
        "The job's four tasks run the merges in two Python processes, where the single "
        "process rewrites one bucket at a time (as many at once as half the cores), but "
        f"on two cores that gains less than {_JOB_COST}. Larger buckets favour the job."
    ),
    SPARK_JOB: (
        "The single process rewrites one bucket at a time (as many at once as half the "
        "cores), so the merge's Python work runs on one core at a time; the job's four "
        "tasks run in two Python processes, so it uses both cores, which outweighs "
        f"{_JOB_COST}. The margin grows with the rows per bucket and shrinks to a loss "
        "for small tables."
    ),
    "even": (
        "The job's four tasks run the merge's Python work on both cores, where the single "
        "process rewrites one bucket at a time (as many at once as half the cores), and "
        f"that about pays for {_JOB_COST}. Smaller tables favour the single process, "
        "larger buckets the job."
    ),
}
_ORPHANS_WHY = {
    SINGLE: (
        "Its work is a few hundred small metadata reads, a listing of a few directories "
        "and the unlinks: tens of milliseconds. The Spark job runs it as four Spark jobs "
        "in a row (the listing, the manifest lists, the manifests, then the anti join on "
        "file names with the deletes), each with Python tasks of tens of milliseconds "
        "apiece and the JVM's planning: a fixed cost of a second or more, which pays off "
        "only where the "
        "listings and manifests are too many for one machine (millions of files on an "
        "object store)."
    ),
    SPARK_JOB: "Its tasks list, read and delete on both cores at once.",
    "even": "The job's tasks on both cores about pay for its fixed cost of a second or so.",
}


def render_spark(raw: dict[str, Any]) -> list[str]:
    """The Markdown section."""
    config = raw["config"]
    found = spreads(raw)
    ratios = spark_ratios(raw)
    jobs = {r.label: r for r in ratios if r.label.startswith("Spark job")}
    versions = raw["versions"]
    lines = [
        "## Spark: the data source and the distributed jobs",
        "",
        f"Workload, on local Spark (`local[2]`; pyspark {versions['pyspark']}, Java "
        f"{versions['java']}): an append table of {config['rows']:,} rows (columns id "
        "bigint, name string, value double, ts timestamp, qty int) written by shoal in "
        f"{READ_FILES} appends, so {raw['read_files']} data files "
        f"({raw['read_bytes'] / 2**20:,.0f} MiB of {COMPRESSION} Parquet), aggregated "
        "through the `shoal` source and by Spark's Parquet source from the very same "
        f"files; the same rows, cached in {TASKS} partitions, written into a new table "
        "through the source and by `shoal.spark.write_table` (Spark's own Parquet writer, "
        "then shoal's commit), and by `df.write.parquet`; a full compaction of a "
        f"primary-key table ({config['compact_rows']:,} rows upserted in "
        f"{config['compact_commits']} commits into {COMPACT_BUCKETS} buckets) and an orphan "
        f"cleanup ({config['orphan_commits']} appends into 4 partitions, "
        f"{config['strays']:,} stray files {STRAY_AGE.days} days old) as Spark jobs and "
        f"in one process. Each measurement: every contender once untimed, then "
        f"{config['repeats']} rounds, interleaved across contenders: median [min, max]. "
        "Times in milliseconds.",
        "",
        *_times_table(found, SOURCE_MEASURES, SOURCE_NAMES),
        "",
        *_times_table(found, JOB_MEASURES, JOB_NAMES),
        "",
        *_facts_table(raw),
        "",
        *ratio_table(ratios),
        "",
        *_missed_targets(found),
        "Which wins on two cores, the Spark jobs or the single process:",
        "",
        _verdict(
            jobs["Spark job / single process, full compaction"],
            found.get(COMPACT, {}),
            "Compaction",
            _COMPACT_WHY,
        ),
        _verdict(
            jobs["Spark job / single process, orphan cleanup"],
            found.get(ORPHANS, {}),
            "Orphan cleanup",
            _ORPHANS_WHY,
        ),
        "",
        *_method(raw),
    ]
    notes = _notes(raw)
    if notes:
        lines.extend(["", *notes])
    return lines


def _method(raw: dict[str, Any]) -> list[str]:
    conf = ", ".join(f"`{k}={v}`" for k, v in SPARK_CONF.items() if "ui" not in k)
    return [
        "How it is measured (`python -m bench --workload spark`; code in "
        "`bench/spark_workloads.py`, `bench/spark_report.py`):",
        "",
        "- One process runs everything in one SparkSession (`local[2]`, "
        f"{conf}, Spark's other settings at their defaults). The data is deterministic "
        "(numpy seed) and generated before the clocks start: the read table by shoal's "
        "`table.append` in Python; the maintenance tables likewise, on a tmpfs when "
        "there is one.",
        "- Warm-up: each measurement first runs every contender once, untimed (the "
        "JVM's JIT, Python workers with shoal imported, the files in the page cache), then "
        "its timed rounds, each with the contenders in a rotating order, one right after "
        "the other; before each run, Python's and the JVM's garbage is collected.",
        "- Each read builds a new DataFrame (`load()` included in the time) and collects "
        "one row: `count(1)`, `sum(id)`, `max(length(name))`, `sum(value)`, `max(ts)`, "
        "`sum(qty)` for all columns; the same with `max(name)` in the sort-based row (a "
        "maximum of strings makes Spark aggregate by sorting, a `SortAggregate`, which "
        f"costs every contender about the same); `count(1)`, `sum({ONE_COLUMN})` for one "
        "column. shoal: "
        "`spark.read.format('shoal').load(path)`, and `.option('columns', "
        f"'{ONE_COLUMN}')` for one column (a Python source cannot prune by itself). "
        "Spark Parquet: `spark.read.parquet(*files)` of the table's own data files "
        f"(`.select('{ONE_COLUMN}')` for one column; Spark prunes it).",
        "- The write: the rows read back by Spark from those files, `repartition("
        f"{TASKS})`, persisted in memory and counted before any clock starts. "
        "shoal: `df.write.format('shoal').mode('append').save(path)` into a table "
        "created (untimed) just before, commit included; Spark Parquet: "
        f"`df.write.option('compression', '{COMPRESSION}').parquet(dir)` ({COMPRESSION} "
        "is shoal's default `file.compression`). The output is deleted after each "
        "measurement, untimed.",
        "- The Python-source floor is the least a Python data source does, read with a "
        "user schema: `pyarrow.dataset` over the same files in two partitions of "
        "consecutive files, each batch handed to Spark as it comes, in Spark's Arrow "
        "form; for the write, an Arrow writer that only takes the batches in and writes "
        "nothing. Its time is what Spark's Python Data Source API costs before any table "
        "logic: each row crosses between the JVM and Python as Arrow, and Spark turns "
        "every row of a read into a row object, where its Parquet source hands "
        "columnar batches to the aggregate.",
        "- Compaction and orphan cleanup: each measurement copies the prepared table "
        "(untimed) and times `shoal.spark.compact(spark, path, strategy='full')` against "
        "`shoal.open_table(path).compact('full')`, and `shoal.spark.remove_orphan_files("
        "spark, path)` against `shoal.open_table(path).remove_orphan_files()` (default "
        "threshold: now minus a day), both in the same process (the driver); the rows "
        "and deletions are checked afterwards, untimed.",
    ]


def _notes(raw: dict[str, Any]) -> list[str]:
    setup = raw["setup"]
    load = raw["load"]
    notes = [
        f"- Setup, untimed: generating the tables {setup['generate_s']:.1f} s, starting "
        f"Spark {setup['session_s']:.1f} s, the warm-up runs {setup['warmup_s']:.1f} s. "
        f"1-minute load average {load[0]:.2f} before, {load[1]:.2f} after.",
    ]
    notes += [f"- {check}" for check in raw["checks"]]
    return notes
