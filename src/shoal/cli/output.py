"""Terminal output: rich tables for people, one JSON document for programs.

Results go to stdout; progress, notes and errors go to stderr, so that
``shoal ... --output json | jq`` always reads exactly one JSON document.
"""

from __future__ import annotations

import base64
import csv
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Literal

import pyarrow as pa
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table as RichTable

Mode = Literal["table", "json", "csv", "parquet"]
MODES: tuple[Mode, ...] = ("table", "json", "csv", "parquet")
_UNBOUNDED = 1 << 20  # the width a table is measured in: wider than any value

# Only ``shoal read`` writes Parquet (to a file); every other command refuses it.
FILE_MODES: frozenset[Mode] = frozenset({"parquet"})


def to_jsonable(value: Any) -> Any:
    """A value as JSON can hold it: times as ISO 8601, decimals as strings (no precision
    is lost), bytes as base64, durations as seconds, NaN and infinities as null."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            # pyarrow spells a map value as a list of (key, value) pairs.
            return {str(k): to_jsonable(v) for k, v in value}
        return [to_jsonable(v) for v in value]
    return str(value)


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of an Arrow table as JSON-ready dicts, column names as keys."""
    return [to_jsonable(row) for row in table.to_pylist()]


def format_millis(millis: int | None) -> str:
    """Epoch milliseconds as a UTC time, to the second: ``2026-11-01 21:30:00``."""
    if millis is None:
        return "-"
    return datetime.fromtimestamp(millis / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def format_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _cell(value: Any) -> str:
    if value is None:
        return "[dim]-[/dim]"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="milliseconds" if value.microsecond else "seconds")
    if isinstance(value, float):
        return f"{value:,.6g}" if abs(value) >= 1e6 else f"{value:.6g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    text = json.dumps(to_jsonable(value)) if isinstance(value, list | dict) else str(value)
    return text.replace("[", "\\[")


@dataclass
class Output:
    """Where a command's results, notes and progress go, by output mode."""

    mode: Mode = "table"
    out: Console = field(default_factory=lambda: Console(highlight=False, soft_wrap=True))
    err: Console = field(default_factory=lambda: Console(stderr=True, highlight=False))

    @property
    def json(self) -> bool:
        return self.mode == "json"

    @property
    def machine(self) -> bool:
        """Whether stdout is for a program (JSON, CSV or a file): no notes, no progress."""
        return self.mode != "table"

    def result(self, document: Any, render: Callable[[], None]) -> None:
        """Emit a command's result: ``document`` as JSON or CSV, or ``render()`` for people."""
        if self.json:
            self.out.file.write(json.dumps(to_jsonable(document), indent=2) + "\n")
            self.out.file.flush()
        elif self.mode == "csv":
            write_csv(self.out.file, document)
            self.out.file.flush()
        elif not self.machine:
            render()

    def note(self, message: str) -> None:
        """A remark for people (stderr, never for programs)."""
        if not self.machine:
            self.err.print(message)

    def print(self, *renderables: Any) -> None:
        """Human output on stdout (never for programs)."""
        if not self.machine:
            self.out.print(*renderables)

    def rows(
        self,
        rows: Iterable[Mapping[str, Any]],
        columns: Sequence[str],
        *,
        title: str | None = None,
        headers: Mapping[str, str] | None = None,
        right: Iterable[str] = (),
    ) -> None:
        """A rich table of ``columns`` of ``rows`` (stdout; nothing for programs)."""
        if self.machine:
            return
        self._unfolded(table_of(rows, columns, title=title, headers=headers, right=right))

    def key_values(self, pairs: Iterable[tuple[str, Any]], *, title: str | None = None) -> None:
        """A two-column table of labelled values (stdout; nothing for programs)."""
        if self.machine:
            return
        grid = RichTable(title=title, show_header=False, box=None, padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(no_wrap=True)
        for label, value in pairs:
            grid.add_row(label, value if isinstance(value, str) else _cell(value))
        self._unfolded(grid)

    def _unfolded(self, table: RichTable) -> None:
        """Print ``table`` as wide as its widest values need, wider than the terminal or
        the 80 columns of a pipe if it must: a path or a name is never folded or cut."""
        unbounded = self.out.options.update_width(_UNBOUNDED)
        needed = self.out.measure(table, options=unbounded).maximum
        if needed <= self.out.width:
            self.out.print(table)
            return
        wide = Console(
            file=self.out.file,
            width=needed,
            highlight=False,
            soft_wrap=True,
            force_terminal=self.out.is_terminal,
            color_system=self.out.color_system,  # type: ignore[arg-type]
        )
        wide.print(table, crop=False)

    @contextmanager
    def progress(self, *, transient: bool = True) -> Iterator[Progress]:
        """A progress display on stderr; silent in JSON mode and off a terminal."""
        progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=transient,
            disable=self.machine,
        )
        with progress:
            yield progress

    @contextmanager
    def status(self, message: str) -> Iterator[None]:
        """A spinner on stderr while a single long step runs."""
        if self.machine or not self.err.is_terminal:
            yield
            return
        with self.err.status(message):
            yield


def table_of(
    rows: Iterable[Mapping[str, Any]],
    columns: Sequence[str],
    *,
    title: str | None = None,
    headers: Mapping[str, str] | None = None,
    right: Iterable[str] = (),
) -> RichTable:
    aligned = set(right)
    table = RichTable(title=title, title_justify="left", header_style="bold")
    for column in columns:
        table.add_column(
            (headers or {}).get(column, column),
            justify="right" if column in aligned else "left",
            no_wrap=True,
            overflow="fold",  # never reached: tables print as wide as they need
        )
    for row in rows:
        table.add_row(*(_cell(row.get(c)) for c in columns))
    return table


def _csv_cell(value: Any) -> Any:
    plain = to_jsonable(value)
    if plain is None:
        return ""
    if isinstance(plain, list | dict):
        return json.dumps(plain)
    return plain


def write_csv(file: Any, document: Any) -> None:
    """A command's result as CSV: a list of records one line each, a single record as
    one line; the header is every key in first-seen order, nested values are JSON."""
    records: list[Any] = document if isinstance(document, list) else [document]
    columns: dict[str, None] = {}
    for record in records:
        if isinstance(record, Mapping):
            columns.update(dict.fromkeys(str(k) for k in record))
    if not columns:
        columns = {"value": None}
        records = [{"value": r} for r in records]
    writer = csv.writer(file, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow([_csv_cell(record.get(c)) for c in columns])
