"""The ecosystem section of the Markdown report: shoal's ``delete_where`` and ``merge``
against deltalake's on the same data, and a shoal table streamed into DuckDB against
DuckDB over a ``pyarrow.dataset`` of the same files."""

from __future__ import annotations

from typing import Any

from bench.ecosystem import (
    APPEND,
    CAPSULE,
    DATASET,
    DELTA,
    FLOOR,
    PK,
    QUERIES,
    READER,
    ROW_CONTENDERS,
    STREAM_CONTENDERS,
    VIEW,
    median_ratio,
)
from bench.report import Ratio, ratio_table
from bench.stats import Spread

STREAM_NAMES = {
    DATASET: "DuckDB over `pyarrow.dataset` of the files (the peer)",
    CAPSULE: "DuckDB over the table (Arrow C stream, `con.register(name, table)`)",
    READER: "DuckDB over `table.scan().to_reader()`",
    VIEW: "DuckDB over the view of `table.to_duckdb(con, name)`",
    FLOOR: "pyarrow: `pyarrow.dataset(...).to_table()` (the floor)",
}
ROW_TARGET = 1.0
STREAM_TARGET = 1.15


def _seconds(runs: list[dict[str, Any]]) -> list[float]:
    return [run["seconds"] for run in runs]


def _ratio(
    label: str,
    numerator: list[float],
    denominator: list[float],
    target: float | None,
) -> Ratio:
    value = median_ratio(numerator, denominator)
    return Ratio(label, value, 1.0 if value is not None else None, target)


def ecosystem_ratios(raw: dict[str, Any]) -> list[Ratio]:
    """Row-level operations over deltalake's (target 1) and over the append table's
    for the primary-key table (no Delta peer); DuckDB contenders over DuckDB on the
    dataset (target 1.15 for the Arrow C stream and the view)."""
    ratios = []
    for op, found in raw["row_ops"]["runs"].items():
        if DELTA in found:
            for name in (APPEND, PK):
                if name in found:
                    ratios.append(
                        _ratio(
                            f"{op}: {name} / deltalake",
                            _seconds(found[name]),
                            _seconds(found[DELTA]),
                            ROW_TARGET,
                        )
                    )
        if APPEND in found and PK in found:
            ratios.append(
                _ratio(
                    f"{op}: shoal primary key / shoal append",
                    _seconds(found[PK]),
                    _seconds(found[APPEND]),
                    None,
                )
            )
    if raw["row_ops"].get("merge_note"):
        ratios.append(Ratio("merge: shoal / deltalake", None, None, ROW_TARGET, note="not built"))
    for label, found in raw["stream"]["runs"].items():
        peer = found[DATASET]
        for name, target in (
            (CAPSULE, STREAM_TARGET),
            (READER, None),
            (VIEW, STREAM_TARGET),
            (FLOOR, None),
        ):
            what = "pyarrow to_table" if name == FLOOR else name
            ratios.append(_ratio(f"DuckDB, {label}: {what} / {DATASET}", found[name], peer, target))
    return ratios


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _ms(spread: Spread) -> str:
    return f"{spread.median * 1000:,.0f} [{spread.low * 1000:,.0f}, {spread.high * 1000:,.0f}]"


def _row_ops_table(raw: dict[str, Any]) -> list[str]:
    runs = raw["row_ops"]["runs"]
    ops = list(runs)
    lines = [
        _row(["contender", *(f"{op}, ms" for op in ops)]),
        _row(["---", *("---:" for _ in ops)]),
    ]
    for name in ROW_CONTENDERS:
        cells = [
            _ms(Spread.of(_seconds(runs[op][name]))) if runs[op].get(name) else "-" for op in ops
        ]
        if any(cell != "-" for cell in cells):
            lines.append(_row([name, *cells]))
    return lines


def _stream_table(raw: dict[str, Any]) -> list[str]:
    runs = raw["stream"]["runs"]
    rows = raw["config"]["stream_rows"]
    labels = list(runs)
    lines = [
        _row(
            [
                "contender",
                *(f"{label}, ms" for label in labels),
                *(f"{label}, Mrows/s" for label in labels),
            ]
        ),
        _row(["---", *("---:" for _ in range(2 * len(labels)))]),
    ]
    for name in STREAM_CONTENDERS:
        spreads = [Spread.of(runs[label][name]) for label in labels]
        lines.append(
            _row(
                [
                    STREAM_NAMES[name],
                    *(_ms(s) for s in spreads),
                    *(f"{rows / s.median / 1e6:,.1f}" for s in spreads),
                ]
            )
        )
    return lines


def _checks(raw: dict[str, Any]) -> list[str]:
    out = []
    expected = raw["row_ops"]["expected_rows"]
    for op, found in raw["row_ops"]["runs"].items():
        for name, runs in found.items():
            got = {run["rows"] for run in runs}
            verdict = "yes" if got == {expected[op]} else f"NO ({sorted(got)})"
            out.append(f"{op}: {name} leaves {expected[op]:,} rows: {verdict}")
    return out + list(raw["stream"]["checks"])


def render_ecosystem(raw: dict[str, Any]) -> list[str]:
    """The Markdown section."""
    config = raw["config"]
    versions = raw["versions"]
    predicates = "; ".join(f"{k}: `{v}`" for k, v in config["predicates"].items())
    delta = versions.get("deltalake")
    lines = [
        "## Ecosystem: row-level operations against deltalake, DuckDB over the Arrow stream",
        "",
        f"Row-level operations: {config['rows']:,} rows (id bigint, x double, k int, name "
        f"string) in {config['files']} Parquet files, as a shoal append table, a shoal "
        f"primary-key table (`id`, {config['files']} buckets) and a Delta table"
        + (f" (deltalake {delta})" if delta else " (deltalake left out)")
        + ". Each run starts on a fresh copy of the table and opens it; shoal in the "
        "benchmark's process, deltalake in a fresh process of its own virtualenv, timed "
        "from inside (imports excluded). Deletes, each about a hundredth of the rows: "
        f"{predicates}. Merge: a hundredth of the keys updated and as many inserted "
        "(`when_matched_update`/`when_not_matched_insert`, deltalake's "
        f"`_all` forms). {config['repeats']} runs each, rotating order: median [min, max]; "
        "a ratio is the median of the per-round ratios.",
        "",
        *_row_ops_table(raw),
        "",
        f"DuckDB (duckdb {versions['duckdb']}, pyarrow {versions['pyarrow']}): "
        f"{config['stream_rows']:,} rows in {raw['stream']['files']} files of a shoal "
        "append table, one connection, each contender answering the query "
        + "; ".join(f"{label}: `{sql.format(src='src')}`" for label, sql in QUERIES.items())
        + f". Every contender once untimed, then {config['stream_repeats']} rounds in a "
        "rotating order. A stream hands DuckDB every column (it cannot take DuckDB's "
        "projection); DuckDB pushes the projection into a dataset, which is what "
        "`to_duckdb` registers when the read is a plain set of Parquet files.",
        "",
        *_stream_table(raw),
        "",
        *ratio_table(ecosystem_ratios(raw)),
        "",
    ]
    if raw["row_ops"].get("merge_note"):
        lines += [f"- {raw['row_ops']['merge_note']}"]
    load = raw["load"]
    lines += [
        "How it is measured: `python -m bench --workload ecosystem` (code in "
        "`bench/ecosystem.py`, `bench/ecosystem_report.py`, `bench/delta_rowops.py`). "
        f"1-minute load average {load[0]:.2f} before, {load[1]:.2f} after. Checks:",
        "",
        *(f"- {check}" for check in _checks(raw)),
        "",
    ]
    return lines
