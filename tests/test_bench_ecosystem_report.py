"""The ecosystem benchmark's section: rendered from results shaped like what
``bench.ecosystem`` measures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from bench.ecosystem import (
    APPEND,
    CAPSULE,
    DATASET,
    DELTA,
    FLOOR,
    PK,
    QUERIES,
    READER,
    STREAM_CONTENDERS,
    VIEW,
    EcoConfig,
    median_ratio,
    merge_source,
    rows_of,
)
from bench.ecosystem_report import ecosystem_ratios, render_ecosystem

CONFIG = EcoConfig(1000, 10_000, 10, 3, 3, 7, Path("/nowhere"), None)
EXPECTED = {"delete spread": 990, "delete one file": 990, "merge": 1010}


def _raw(*, merge: bool = True, wrong_rows: bool = False) -> dict[str, Any]:
    seconds = {APPEND: [0.08, 0.1, 0.09], PK: [0.05, 0.05, 0.06], DELTA: [0.1, 0.1, 0.1]}
    runs: dict[str, Any] = {}
    for op in EXPECTED if merge else ("delete spread", "delete one file"):
        runs[op] = {
            name: [{"seconds": s, "rows": EXPECTED[op] + (wrong_rows and name == PK)} for s in ss]
            for name, ss in seconds.items()
        }
    stream = {
        DATASET: [1.0, 2.0, 1.0],
        CAPSULE: [1.1, 2.4, 1.0],
        READER: [1.2, 2.2, 1.3],
        VIEW: [1.0, 2.0, 1.0],
        FLOOR: [0.7, 0.8, 0.7],
    }
    return {
        "config": {
            "rows": CONFIG.rows,
            "stream_rows": CONFIG.stream_rows,
            "files": CONFIG.files,
            "repeats": 3,
            "stream_repeats": 3,
            "predicates": CONFIG.predicates(),
        },
        "row_ops": {
            "runs": runs,
            "expected_rows": EXPECTED,
            "merge_note": None if merge else "shoal has no Table.merge in this build",
        },
        "stream": {
            "runs": dict.fromkeys(QUERIES, stream),
            "checks": ["every column: duckdb-table answers as duckdb-dataset: yes"],
            "files": 10,
        },
        "versions": {"duckdb": "2.0.1", "pyarrow": "26.0.1", "deltalake": "1.6.6"},
        "load": [0.5, 1.5],
    }


def test_ratios_are_medians_of_per_round_ratios_with_the_targets() -> None:
    by_label = {r.label: r for r in ecosystem_ratios(_raw())}
    spread = by_label["delete spread: shoal append / deltalake"]
    assert spread.value == pytest.approx(0.9)
    assert spread.target == 1.0
    assert spread.verdict == "yes"
    assert by_label["merge: shoal primary key / deltalake"].value == pytest.approx(0.5)
    assert by_label["delete spread: shoal primary key / shoal append"].target is None
    capsule = by_label[f"DuckDB, every column: {CAPSULE} / {DATASET}"]
    assert capsule.value == pytest.approx(1.1)
    assert capsule.target == 1.15
    assert capsule.verdict == "yes"
    reader = by_label[f"DuckDB, one column: {READER} / {DATASET}"]
    assert reader.value == pytest.approx(1.2)
    assert reader.target is None
    assert median_ratio([1.0], [0.0]) is None


def test_the_section_shows_every_contender_and_the_checks() -> None:
    text = "\n".join(render_ecosystem(_raw()))
    assert text.startswith("## Ecosystem")
    for name in (APPEND, PK, DELTA):
        assert f"| {name} |" in text
    assert text.count("| DuckDB over") == len(STREAM_CONTENDERS) - 1
    assert "| merge, ms |" in text
    assert "deltalake 1.6.6" in text
    assert "merge: shoal primary key leaves 1,010 rows: yes" in text
    assert "load average 0.50 before, 1.50 after" in text
    assert "**no**" not in text


def test_a_wrong_row_count_and_a_missing_merge_are_said() -> None:
    text = "\n".join(render_ecosystem(_raw(merge=False, wrong_rows=True)))
    assert "delete spread: shoal primary key leaves 990 rows: NO ([991])" in text
    assert "| merge: shoal / deltalake | not built | ≤ 1 | n/a |" in text
    assert "shoal has no Table.merge" in text


def test_the_data_and_the_merge_source() -> None:
    rows = rows_of(0, 1000, np.random.default_rng(1))
    assert rows.column("id").to_pylist() == list(range(1000))
    source = merge_source(1000, 7)
    ids = source.column("id").to_pylist()
    assert len(ids) == len(set(ids)) == 20
    assert sum(i < 1000 for i in ids) == 10  # a hundredth matched, as many new
    assert source.schema.field("id").type == pa.int64()
    assert CONFIG.predicates() == {"spread": "k < 10", "one file": "id < 10"}
