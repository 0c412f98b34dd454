"""The ecosystem workload: shoal's row-level operations against deltalake's on the same
data, and a shoal table streamed into DuckDB against DuckDB over a ``pyarrow.dataset``
of the same files, in one run.

*Row-level operations*: ``rows`` rows (id bigint, x double, k int, name string) in
``files`` appends, so ``files`` Parquet files, written three times: a shoal append
table, a shoal primary-key table (key ``id``, ``files`` buckets, one write) and a Delta
table (``files`` appends through deltalake). Each timed run starts on a fresh copy of
the table (copied untimed) and opens it, as a new process would:

- ``delete``: ``table.delete_where(predicate)`` against
  ``DeltaTable(path).delete(predicate)``, for two predicates deleting a hundredth of the
  rows: ``k < 10`` (rows in every file) and ``id < rows / 100`` (rows in one file);
- ``merge``: ``table.merge(source, on=["id"]).when_matched_update()
  .when_not_matched_insert().execute()`` against deltalake's
  ``merge(...).when_matched_update_all().when_not_matched_insert_all().execute()``, the
  source a hundredth of the keys (new values) and as many new keys.

shoal runs in this process, deltalake in its virtualenv (``bench/delta_rowops.py``), a
fresh process per run timed from inside; rounds rotate the order.

*DuckDB*: ``stream_rows`` rows in ``files`` files of a shoal append table; each
contender answers the same query on one DuckDB connection, round after round in a
rotating order: DuckDB over ``pyarrow.dataset`` of the table's files (the peer), over
the table itself (the Arrow C stream, ``con.register(name, table)``), over
``table.scan().to_reader()``, over the view ``table.to_duckdb(con, name)`` makes;
and pyarrow reading the dataset to a table (the floor). Two queries: one reading every
column and one reading one column (where DuckDB pushes the projection into a dataset,
which a stream cannot take). A ratio is the median of the per-round ratios.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from bench import delta_env
from bench.procs import log, rotate, run_json

DELTA_RUNNER = Path(__file__).resolve().parent / "delta_rowops.py"
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("x", pa.float64()),
        pa.field("k", pa.int32()),
        pa.field("name", pa.string()),
    ]
)
KEY = "id"
_NAMES = 100_000
APPEND, PK, DELTA = "shoal append", "shoal primary key", "deltalake"
ROW_CONTENDERS = (APPEND, PK, DELTA)
DATASET, CAPSULE, READER, VIEW, FLOOR = (
    "duckdb-dataset",
    "duckdb-table",
    "duckdb-reader",
    "duckdb-to_duckdb",
    "pyarrow-to_table",
)
STREAM_CONTENDERS = (DATASET, CAPSULE, READER, VIEW, FLOOR)
QUERIES = {
    "every column": "select count(*), sum(id), sum(x), sum(k), max(name) from {src}",
    "one column": "select count(*), sum(x) from {src}",
}


@dataclass(frozen=True, slots=True)
class EcoConfig:
    rows: int  # the row-level operations' tables
    stream_rows: int  # the table streamed into DuckDB
    files: int
    repeats: int  # row-level operation runs per contender
    stream_repeats: int
    seed: int
    workdir: Path
    deltalake_python: Path | None  # None: leave deltalake out

    @staticmethod
    def sized(quick: bool, seed: int, workdir: Path, deltalake_python: Path | None) -> EcoConfig:
        return EcoConfig(
            rows=100_000 if quick else 1_000_000,
            stream_rows=1_000_000 if quick else 10_000_000,
            files=10,
            repeats=2 if quick else 3,
            stream_repeats=3 if quick else 7,
            seed=seed,
            workdir=workdir,
            deltalake_python=deltalake_python,
        )

    def predicates(self) -> dict[str, str]:
        """Each deletes about a hundredth of the rows: spread over every file, or in one."""
        return {"spread": "k < 10", "one file": f"id < {self.rows // 100}"}


def rows_of(start: int, count: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(start, start + count, dtype=np.int64)
    names = pa.array([f"name-{n:06d}" for n in range(_NAMES)])
    return pa.table(
        {
            "id": ids,
            "x": rng.random(count),
            "k": rng.integers(0, 1000, count, dtype=np.int32),
            "name": names.take(pa.array(ids % _NAMES)),
        },
        schema=SCHEMA,
    )


def _chunks(rows: pa.Table, files: int) -> list[pa.Table]:
    step = -(-rows.num_rows // files)
    return [rows.slice(start, step) for start in range(0, rows.num_rows, step)]


def merge_source(rows: int, seed: int) -> pa.Table:
    """A hundredth of the keys with new values, and as many keys that are new."""
    rng = np.random.default_rng(seed + 1)
    count = max(1, rows // 100)
    matched = np.sort(rng.choice(rows, count, replace=False)).astype(np.int64)
    new = np.arange(rows, rows + count, dtype=np.int64)
    ids = np.concatenate([matched, new])
    source = rows_of(0, len(ids), rng)
    return source.set_column(0, pa.field("id", pa.int64(), nullable=False), pa.array(ids))


def _write_ipc(table: pa.Table, path: Path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


# --- building the tables -------------------------------------------------------------------------
def _shoal_tables(work: Path, rows: pa.Table, files: int) -> dict[str, str]:
    import shoal

    catalog = shoal.Catalog(str(work / "shoal"))
    append = catalog.create_table("eco.append", SCHEMA)
    for chunk in _chunks(rows, files):
        append.append(chunk)
    pk = catalog.create_table("eco.pk", SCHEMA, primary_keys=[KEY], options={"bucket": str(files)})
    pk.append(rows)
    return {APPEND: append.path, PK: pk.path}


def _delta_cmd(python: Path, *args: str) -> list[str]:
    return [str(python), "-P", str(DELTA_RUNNER), *args]


def _fresh(source: str, scratch: Path, name: str) -> str:
    target = scratch / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    return str(target)


# --- row-level operations ---------------------------------------------------------------------
def _shoal_delete(path: str, predicate: str) -> dict[str, Any]:
    import shoal

    start = time.perf_counter()
    shoal.open_table(path).delete_where(predicate)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "rows": shoal.open_table(path).scan().to_arrow().num_rows}


def shoal_merges() -> bool:
    import shoal

    return hasattr(shoal.Table, "merge")


def _shoal_merge(path: str, source: pa.Table) -> dict[str, Any]:
    import shoal

    start = time.perf_counter()
    (
        shoal.open_table(path)
        .merge(source, on=[KEY])
        .when_matched_update()
        .when_not_matched_insert()
        .execute()
    )
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "rows": shoal.open_table(path).scan().to_arrow().num_rows}


def run_row_ops(config: EcoConfig, work: Path) -> dict[str, Any]:
    rng = np.random.default_rng(config.seed)
    rows = rows_of(0, config.rows, rng)
    tables = _shoal_tables(work, rows, config.files)
    delta = config.deltalake_python
    if delta is not None:
        data = work / "rows.arrow"
        _write_ipc(rows, data)
        built = run_json(
            _delta_cmd(
                delta,
                "build",
                "--data",
                str(data),
                "--files",
                str(config.files),
                "--path",
                str(work / "delta"),
            )
        )
        tables[DELTA] = built["table_path"]
    scratch = work / "scratch"
    scratch.mkdir(exist_ok=True)
    order = [name for name in ROW_CONTENDERS if name in tables]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    expected: dict[str, int] = {}
    for label, predicate in config.predicates().items():
        expr = ds.field("k") < 10 if label == "spread" else ds.field("id") < config.rows // 100
        expected[f"delete {label}"] = rows.num_rows - rows.filter(expr).num_rows
        found = runs[f"delete {label}"] = {name: [] for name in order}
        for r in range(config.repeats):
            log(f"ecosystem: delete where {predicate}, round {r + 1}/{config.repeats} ...")
            for name in rotate(order, r):
                path = _fresh(tables[name], scratch, f"{name.replace(' ', '-')}-{r}")
                if name == DELTA:
                    assert delta is not None
                    cmd = _delta_cmd(
                        delta, "delete", "--table-path", path, "--predicate", predicate
                    )
                    found[name].append(run_json(cmd))
                else:
                    found[name].append(_shoal_delete(path, predicate))
                shutil.rmtree(path, ignore_errors=True)
    source = merge_source(config.rows, config.seed)
    expected["merge"] = config.rows + source.num_rows // 2
    merge_note = None
    if shoal_merges():
        source_file = work / "source.arrow"
        _write_ipc(source, source_file)
        found = runs["merge"] = {name: [] for name in order}
        for r in range(config.repeats):
            log(f"ecosystem: merge of {source.num_rows:,} rows, round {r + 1}/{config.repeats} ...")
            for name in rotate(order, r):
                path = _fresh(tables[name], scratch, f"{name.replace(' ', '-')}-m{r}")
                if name == DELTA:
                    assert delta is not None
                    cmd = _delta_cmd(
                        delta,
                        "merge",
                        "--table-path",
                        path,
                        "--source",
                        str(source_file),
                        "--key",
                        KEY,
                    )
                    found[name].append(run_json(cmd))
                else:
                    found[name].append(_shoal_merge(path, source))
                shutil.rmtree(path, ignore_errors=True)
    else:
        merge_note = "shoal has no Table.merge in this build: merge not measured"
    return {"runs": runs, "expected_rows": expected, "merge_note": merge_note}


# --- DuckDB ------------------------------------------------------------------------------------
def _timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    answer = work()
    return time.perf_counter() - start, answer


def run_stream(config: EcoConfig, work: Path) -> dict[str, Any]:
    import duckdb

    import shoal

    rng = np.random.default_rng(config.seed + 2)
    table = shoal.Catalog(str(work / "stream")).create_table("eco.stream", SCHEMA)
    step = -(-config.stream_rows // config.files)
    for start in range(0, config.stream_rows, step):
        table.append(rows_of(start, min(step, config.stream_rows - start), rng))
    paths = [p for split in table.scan().plan() for p in split.file_paths]
    con = duckdb.connect()

    def query(sql: str, make: Callable[[], Any]) -> Callable[[], Any]:
        def go() -> Any:
            con.register("src", make())
            try:
                return con.sql(sql.format(src="src")).fetchall()
            finally:
                con.unregister("src")

        return go

    def view(sql: str) -> Callable[[], Any]:
        def go() -> Any:
            table.to_duckdb(con, "shoal_view")
            return con.sql(sql.format(src="shoal_view")).fetchall()

        return go

    runs: dict[str, dict[str, list[float]]] = {}
    answers: dict[str, dict[str, Any]] = {}
    for label, sql in QUERIES.items():
        work_of: dict[str, Callable[[], Any]] = {
            DATASET: query(sql, lambda: ds.dataset(paths, format="parquet")),
            CAPSULE: query(sql, lambda: table),
            READER: query(sql, lambda: table.scan().to_reader()),
            VIEW: view(sql),
            FLOOR: lambda: ds.dataset(paths, format="parquet").to_table().num_rows,
        }
        found = runs[label] = {name: [] for name in STREAM_CONTENDERS}
        seen = answers[label] = {}
        for name in STREAM_CONTENDERS:  # once untimed: imports, caches
            work_of[name]()
        for r in range(config.stream_repeats):
            log(f"ecosystem: DuckDB, {label}, round {r + 1}/{config.stream_repeats} ...")
            for name in rotate(list(STREAM_CONTENDERS), r):
                seconds, answer = _timed(work_of[name])
                found[name].append(seconds)
                seen[name] = answer
    con.close()
    return {"runs": runs, "checks": _stream_checks(answers), "files": len(paths)}


def _stream_checks(answers: dict[str, dict[str, Any]]) -> list[str]:
    """Every DuckDB contender's answer to a query the same (sums of doubles compared to
    a relative 1e-9: the order of addition differs)."""
    out = []
    for label, seen in answers.items():
        peer = seen[DATASET]
        for name in (CAPSULE, READER, VIEW):
            same = all(
                a == b or (isinstance(a, float) and abs(a - b) <= 1e-9 * abs(b))
                for a, b in zip(peer[0], seen[name][0], strict=True)
            )
            out.append(f"{label}: {name} answers as {DATASET}: {'yes' if same else 'NO'}")
    return out


def run(config: EcoConfig) -> dict[str, Any]:
    work = config.workdir / "ecosystem"
    work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    log(f"ecosystem: row-level operations on {config.rows:,} rows in {config.files} files")
    row_ops = run_row_ops(config, work)
    log(f"ecosystem: DuckDB over {config.stream_rows:,} rows in {config.files} files")
    stream = run_stream(config, work)
    shutil.rmtree(work, ignore_errors=True)
    versions = {"duckdb": _version("duckdb"), "pyarrow": pa.__version__}
    if config.deltalake_python is not None:
        versions["deltalake"] = delta_env.installed_version() or "?"
    return {
        "config": {
            "rows": config.rows,
            "stream_rows": config.stream_rows,
            "files": config.files,
            "repeats": config.repeats,
            "stream_repeats": config.stream_repeats,
            "predicates": config.predicates(),
        },
        "row_ops": row_ops,
        "stream": stream,
        "versions": versions,
        "load": [load, os.getloadavg()[0]],
    }


def _version(name: str) -> str:
    import importlib.metadata

    return importlib.metadata.version(name)


def median_ratio(numerator: list[float], denominator: list[float]) -> float | None:
    """The median of the ratios of runs side by side (a busy machine disturbs it less
    than a ratio of medians)."""
    pairs = [a / b for a, b in zip(numerator, denominator, strict=False) if b]
    return statistics.median(pairs) if pairs else None


__all__ = ["EcoConfig", "median_ratio", "merge_source", "rows_of", "run"]
