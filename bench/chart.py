"""``python -m bench.chart``: a PNG of the benchmark results for the README.

Drawn from ``bench/results/latest.json`` (what ``python -m bench`` writes), with the
panels whose workloads are in the file:

- the ratios of every workload that has a target, one horizontal bar each, shoal's
  time (or memory) over the reference's on a log scale: left of 1.0 shoal is faster,
  the black tick is the target, the bar's color says whether the target is met;
- the scale workload: each metadata operation's time against the table's live data
  files, both axes on a log scale; Java Paimon's times of the operations it runs too,
  dashed in the colour of the operation.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter
from PIL import Image

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_INPUT = RESULTS_DIR / "latest.json"
DEFAULT_OUTPUT = RESULTS_DIR.parent / "RESULTS.png"  # beside RESULTS.md, for the README

MET = "#009E73"  # bluish green
MISSED = "#D55E00"  # vermillion
NO_TARGET = "#9a9a9a"
TARGET = "#222222"
DPI = 120
MAX_LABEL = 52
MARGIN = 1.8  # room on the log axis past the extreme bars for their values
ROW_INCHES = 0.3
SCALE_INCHES = 3.6


# --- the ratios --------------------------------------------------------------------------------
def _words(text: str) -> list[str]:
    return text.split()


def _short_side(text: str) -> str:
    text = re.sub(r"\s*\([^)]*\)", "", text)  # "(decode the metadata, unlink the files)"
    text = re.sub(r"\s+of the same files\b", "", text)
    words = [w for w in _words(text) if w != "median"]
    return " ".join(words)


def short_label(label: str) -> str:
    """A ratio's label cut to fit beside its bar: "shoal commit median / pypaimon commit
    median" becomes "commit vs pypaimon"; "shoal / Spark Parquet, write (append)" becomes
    "write vs Spark Parquet"."""
    if " / " not in label:
        return _fit(_short_side(label))
    numerator, denominator = (_short_side(side) for side in label.split(" / ", 1))
    # "shoal read", "by tag: shoal read": shoal is the numerator of every ratio
    numerator = re.sub(r"(^|: )shoal( |$)", r"\1", numerator).strip()
    if not numerator and ", " in denominator:  # "shoal / Spark Parquet, <what>"
        denominator, numerator = denominator.split(", ", 1)
    # "commit" / "pypaimon commit": the words both sides end with are said once
    num, den = _words(numerator), _words(denominator)
    common = 0
    while common < min(len(num), len(den) - 1) and num[-1 - common] == den[-1 - common]:
        common += 1
    rest = den[: len(den) - common]
    if common and not all(w.replace(",", "").isdigit() for w in rest):
        denominator = " ".join(rest)
    text = f"{numerator} vs {denominator}" if numerator else f"vs {denominator}"
    return _fit(text)


def _fit(text: str, limit: int = MAX_LABEL) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut.rstrip(",;:+ ") + "…"


def _rows(results: dict[str, Any], all_ratios: bool) -> list[dict[str, Any]]:
    """The ratios to draw, workload by workload: those with a target, and with
    ``all_ratios`` (or when no ratio has a target) those with a value but no target."""
    found: list[dict[str, Any]] = []
    for workload, section in results.items():
        if workload == "machine" or not isinstance(section, dict):
            continue
        for ratio in section.get("ratios") or []:
            if not isinstance(ratio, dict) or not ratio.get("label"):
                continue
            value, target = ratio.get("value"), ratio.get("target")
            value = value if isinstance(value, int | float) and value > 0 else None
            target = target if isinstance(target, int | float) and target > 0 else None
            if value is None and target is None:
                continue
            found.append(
                {
                    "workload": workload,
                    "label": f"{workload}: {short_label(ratio['label'])}",
                    "value": value,
                    "target": target,
                }
            )
    if not all_ratios and any(r["target"] is not None for r in found):
        return [r for r in found if r["target"] is not None]
    return found


def _times(value: float) -> str:
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def _draw_ratios(ax: Any, rows: list[dict[str, Any]], hidden: int) -> list[tuple[Any, float]]:
    """The bars; returns each value's label with its target, for ``_clear_ticks``."""
    labels: list[tuple[Any, float]] = []
    # top to bottom in the file's order, a half row between workloads
    y, ys, group_edges = 0.0, [], []
    for i, row in enumerate(rows):
        if i and row["workload"] != rows[i - 1]["workload"]:
            group_edges.append(y + 0.25)
            y += 0.5
        ys.append(y)
        y += 1.0
    ys = [-v for v in ys]
    group_edges = [-v for v in group_edges]

    points = [1.0]
    points += [r["value"] for r in rows if r["value"] is not None]
    points += [r["target"] for r in rows if r["target"] is not None]
    low, high = min(points), max(points)
    ax.set_xscale("log")
    ax.set_xlim(low / MARGIN, high * MARGIN)

    for yy, row in zip(ys, rows, strict=True):
        value, target = row["value"], row["target"]
        if value is None:
            ax.text(1.0, yy, "  n/a", va="center", ha="left", fontsize=8, color="#555555")
        else:
            if target is None:
                color = NO_TARGET
            else:
                color = MET if value <= target else MISSED
            ax.barh(yy, value - 1.0, left=1.0, height=0.62, color=color, zorder=2)
            right = value >= 1.0
            label = ax.annotate(
                _times(value),
                xy=(value, yy),
                xytext=(4 if right else -4, 0),
                textcoords="offset points",
                va="center",
                ha="left" if right else "right",
                fontsize=8,
                zorder=4,
            )
            if target is not None:
                labels.append((label, target))
        if target is not None:
            ax.plot(
                [target],
                [yy],
                marker="|",
                markersize=15,
                markeredgewidth=2.2,
                color=TARGET,
                zorder=3,
            )
    for edge in group_edges:
        ax.axhline(edge, color="#dddddd", linewidth=0.8, zorder=0)

    ax.axvline(1.0, color="#444444", linewidth=1.0, zorder=1)
    ax.text(
        1.0,
        1.01,
        "shoal = reference",
        transform=ax.get_xaxis_transform(),
        ha="center",
        va="bottom",
        fontsize=8,
        color="#444444",
    )
    ax.set_yticks(ys)
    ax.set_yticklabels([r["label"] for r in rows], fontsize=8)
    ax.set_ylim(min(ys) - 0.7, max(ys) + 0.7)
    ax.tick_params(axis="y", length=0)
    ticks = [
        t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100) if low / MARGIN <= t <= high * MARGIN
    ]
    ax.set_xticks(ticks)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:g}x"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="x", labelsize=8)
    xlabel = "shoal / reference, time or peak memory (log scale; left of 1 shoal is ahead)"
    if hidden:
        xlabel += f"\n{hidden} ratios without a target are left out (see bench/RESULTS.md)"
    ax.set_xlabel(xlabel, fontsize=8)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)

    handles = [
        Patch(color=MET, label="target met"),
        Patch(color=MISSED, label="target missed"),
        Line2D([], [], color=TARGET, marker="|", linestyle="", markersize=10, markeredgewidth=2),
    ]
    names = ["target met", "target missed", "target"]
    if any(r["target"] is None for r in rows):
        handles.append(Patch(color=NO_TARGET))
        names.append("no target")
    ax.legend(
        handles,
        names,
        loc="lower left",
        bbox_to_anchor=(1.0, 0.0),
        fontsize=8,
        frameon=False,
    )
    ax.set_title("ratios against the reference of each workload", fontsize=10, loc="left", pad=16)
    return labels


def _clear_ticks(labels: list[tuple[Any, float]]) -> None:
    """Move a value's label past its target's tick when the two overlap (once the
    figure is laid out, so that the sizes on screen are known)."""
    for label, target in labels:
        ax = label.axes
        box = label.get_window_extent()
        tick = ax.transData.transform((target, 0))[0]
        if box.x0 - 3 <= tick <= box.x1 + 3:
            label.xy = (target, label.xy[1])
            offset = label.get_position()[0]
            label.set_position((offset * 1.6, 0))


# --- the scale workload ------------------------------------------------------------------------
def _count(n: float) -> str:
    n = int(n)
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1_000 and n % 1_000 == 0:
        return f"{n // 1_000}k"
    return f"{n:,}"


JAVA_SUFFIX = " (Java Paimon)"  # the series of Java Paimon's runs of an operation


def _scale_series(scale: Any) -> dict[str, list[tuple[int, float, int | None]]]:
    """Per operation, (live files, ms, metadata files read) at every size, by files; Java
    Paimon's runs of an operation as a series of their own, named with ``JAVA_SUFFIX``."""
    series: dict[str, list[tuple[int, float, int | None]]] = {}
    if not isinstance(scale, dict):
        return series
    for size in scale.get("sizes") or []:
        files = size.get("files")
        if not isinstance(files, int) or files <= 0:
            continue
        for op, measured in (size.get("ops") or {}).items():
            ms = measured.get("ms")
            if isinstance(ms, int | float) and ms > 0:
                read = measured.get("metadata_files_read")
                series.setdefault(op, []).append((files, float(ms), read))
        for op, measured in (size.get("java") or {}).items():
            ms = measured.get("ms")
            if isinstance(ms, int | float) and ms > 0:
                series.setdefault(op + JAVA_SUFFIX, []).append((files, float(ms), None))
    for points in series.values():
        points.sort()
    return series


def _reads_caption(series: dict[str, list[tuple[int, float, int | None]]]) -> str | None:
    """A line on the metadata files each operation reads as the table grows, when that
    is worth saying: the operations whose count stays flat (within 10%, or one file)."""
    counted = {
        op: [r for _, _, r in points if isinstance(r, int)]
        for op, points in series.items()
        if len(points) > 1
    }
    counted = {op: reads for op, reads in counted.items() if len(reads) > 1}
    if not counted:
        return None
    flat = [op for op, r in counted.items() if max(r) - min(r) <= max(1, 0.1 * min(r))]
    if not flat:
        return None
    files = sorted({f for points in series.values() for f, _, _ in points})
    span = f"{_count(files[0])} to {_count(files[-1])} live files"
    reads = [r for op in flat for r in counted[op]]
    if len(flat) == len(counted):
        return (
            f"metadata files read stay flat from {span} for every operation "
            f"({min(reads)}-{max(reads)} per operation)"
        )
    grow = [op for op in counted if op not in flat]
    return f"metadata files read stay flat from {span} except for: {', '.join(grow)}"


def _scale_title(scale: dict[str, Any]) -> str:
    sizes = scale.get("sizes") or []
    parts = []
    for key, noun in (("snapshots", "snapshots"), ("partitions", "partitions")):
        values = {s.get(key) for s in sizes if isinstance(s.get(key), int)}
        if len(values) == 1:
            parts.append(f"{values.pop():,} {noun}")
    return "scale: " + ", ".join(parts) if parts else "scale"


def _draw_scale(ax: Any, scale: dict[str, Any], series: dict[str, list[Any]]) -> None:
    markers = "osD^vP*Xh"
    # the legend from top to bottom as the lines end on the right
    # the same look from run to run; Java Paimon's curve of an operation dashed, in its colour
    shoal_ops = [op for op in series if not op.endswith(JAVA_SUFFIX)]
    style = {op: i for i, op in enumerate(shoal_ops)}
    for op in series:
        style.setdefault(op, style.get(op.removesuffix(JAVA_SUFFIX), len(style)))
    ordered = sorted(series.items(), key=lambda item: -item[1][-1][1])
    for op, points in ordered:
        i = style[op]
        ax.plot(
            [f for f, _, _ in points],
            [ms for _, ms, _ in points],
            marker=markers[i % len(markers)],
            markersize=5,
            linewidth=1.4,
            linestyle="--" if op.endswith(JAVA_SUFFIX) else "-",
            markerfacecolor="white" if op.endswith(JAVA_SUFFIX) else None,
            color=f"C{i % 10}",
            label=op,
        )
    files = sorted({f for points in series.values() for f, _, _ in points})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(files)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: _count(x)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    if len(files) > 1:
        ax.set_xlim(files[0] / 1.6, files[-1] * 1.6)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:g}"))
    ax.tick_params(labelsize=8)
    ax.grid(True, which="major", color="#e6e6e6", linewidth=0.8)
    ax.set_xlabel("live data files", fontsize=8)
    ax.set_ylabel("time, ms (log scale)", fontsize=8)
    ax.set_title(_scale_title(scale), fontsize=10, loc="left")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    caption = _reads_caption(series)
    if caption:
        ax.figure.supxlabel(caption, x=0.02, ha="left", fontsize=8, style="italic", color="#444444")


# --- the figure --------------------------------------------------------------------------------
def _suptitle(machine: Any) -> str:
    title = "shoal benchmarks"
    if not isinstance(machine, dict):
        return title
    details = []
    cpu = machine.get("cpu")
    if isinstance(cpu, str) and cpu:
        cores, sep, model = cpu.partition(" x ")
        if sep and cores.isdigit():
            details.append(f"{model}, {cores} cores")
        else:
            details.append(cpu)
    if machine.get("python"):
        details.append(f"Python {machine['python']}")
    if isinstance(machine.get("date"), str):
        details.append(machine["date"].split(" ")[0])
    return f"{title}: {', '.join(details)}" if details else title


def draw(results: dict[str, Any], out: Path, *, all_ratios: bool = False) -> Path | None:
    """Draw the chart of ``results`` (the contents of ``latest.json``) into ``out``, a
    PNG; None, and no file, when the results hold neither ratios nor the scale workload."""
    rows = _rows(results, all_ratios)
    every = _rows(results, True)
    hidden = len(every) - len(rows)
    scale = results.get("scale")
    series = _scale_series(scale)
    if not rows and not series:
        return None

    heights = []
    if rows:
        heights.append(1.0 + ROW_INCHES * (len(rows) + 0.5 * _groups(rows)) + 0.3 * bool(hidden))
    if series:
        heights.append(SCALE_INCHES)
    fig = Figure(figsize=(10, sum(heights) + 0.4), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    # a sub-figure per panel, so that each is laid out on its own (the ratio labels
    # take room on the left that the scale panel does not need)
    panels = iter(fig.subfigures(len(heights), 1, height_ratios=heights, squeeze=False)[:, 0])
    labels = []
    if rows:
        labels = _draw_ratios(next(panels).subplots(), rows, hidden)
    if series:
        assert isinstance(scale, dict)
        _draw_scale(next(panels).subplots(), scale, series)
    fig.suptitle(_suptitle(results.get("machine")), fontsize=11, x=0.01, ha="left")
    fig.draw_without_rendering()
    _clear_ticks(labels)
    out.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    # a palette of 128 colors keeps the file small (flat colors and anti-aliased text)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=128).save(out, format="PNG", optimize=True)
    return out


def _groups(rows: list[dict[str, Any]]) -> int:
    return len({r["workload"] for r in rows}) - 1


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.chart",
        description="Draw the benchmark results (the ratios against their targets, and "
        "the scale workload's times) as a PNG for the README.",
    )
    p.add_argument(
        "--input",
        type=Path,
        default=DEFAULT_INPUT,
        help="results written by `python -m bench` (default bench/results/latest.json)",
    )
    p.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help="the PNG to write (default bench/RESULTS.png)",
    )
    p.add_argument(
        "--all-ratios",
        action="store_true",
        help="draw the ratios without a target too, in grey (by default only those with a target)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        results = json.loads(args.input.read_text())
    except FileNotFoundError:
        print(f"no results at {args.input}: run `python -m bench` first", file=sys.stderr)
        return 1
    except json.JSONDecodeError as e:
        print(f"{args.input} is not JSON: {e}", file=sys.stderr)
        return 1
    if not isinstance(results, dict):
        print(f"{args.input} holds no results object", file=sys.stderr)
        return 1
    drawn = draw(results, args.output, all_ratios=args.all_ratios)
    if drawn is None:
        print(f"nothing to draw in {args.input}: no ratios and no scale workload")
        return 0
    print(f"wrote {drawn} ({drawn.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
