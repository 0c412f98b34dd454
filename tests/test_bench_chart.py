"""The benchmark chart: drawn with the real matplotlib from results shaped like
``bench/results/latest.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.chart import JAVA_SUFFIX, _scale_series, draw, main, short_label

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _ratio(label: str, value: float | None, target: float | None) -> dict[str, Any]:
    return {"label": label, "value": value, "target": target, "note": None}


def _size(files: int, factor: float) -> dict[str, Any]:
    ops = {
        "plan partition-filtered": (4.0, 9),
        "plan full": (40.0 * factor, 12),
        "commit one append": (30.0, 11),
        "expire snapshots": (900.0, 2_000),
        "freshness": (3.0, 5),
    }
    return {
        "files": files,
        "snapshots": 10_000,
        "partitions": 1_000,
        "ops": {
            name: {"ms": ms, "peak_mib": 80.0 * factor, "metadata_files_read": read}
            for name, (ms, read) in ops.items()
        },
        "java": {
            "plan partition-filtered": {"ms": 800.0, "peak_mib": 200.0},
            "plan full": {"ms": 900.0 * factor**0.5, "peak_mib": 200.0 * factor},
            "expire snapshots": {"ms": 700.0, "peak_mib": 150.0},
        },
    }


def _results() -> dict[str, Any]:
    return {
        "machine": {"cpu": "2 x AMD EPYC", "python": "3.11.7", "date": "2026-11-22 14:51 UTC"},
        "appends": {
            "ratios": [
                _ratio("shoal commit median / pypaimon commit median", 0.49, 0.5),
                _ratio("shoal commit median / pyarrow write median", 1.75, 1.7),
                _ratio("shoal cold plan + full read / raw pyarrow.dataset read", 1.05, None),
            ]
        },
        "orphans": {
            "ratios": [
                _ratio("shoal orphan removal / floor (walk, stat, unlink the strays)", 1.2, 1.5),
                _ratio("shoal orphan removal / deltalake full vacuum", None, 1.0),
            ]
        },
        "event-time": {"threshold_ms": 100, "runs": []},
        "scale": {
            "sizes": [
                _size(10_000, 1.0),
                _size(100_000, 10.0),
                _size(1_000_000, 100.0),
            ]
        },
    }


def _assert_png(path: Path) -> None:
    assert path.is_file()
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert 5_000 < len(data) < 200_000


def test_draws_ratios_and_scale(tmp_path: Path) -> None:
    out = tmp_path / "charts" / "chart.png"
    assert draw(_results(), out) == out
    _assert_png(out)


def test_scale_series_hold_java_paimon_beside_shoal() -> None:
    series = _scale_series(_results()["scale"])
    assert series["plan full" + JAVA_SUFFIX] == [
        (10_000, 900.0, None),
        (100_000, 900.0 * 10**0.5, None),
        (1_000_000, 9_000.0, None),
    ]
    assert series["plan full"][-1] == (1_000_000, 4_000.0, 12)
    assert "freshness" + JAVA_SUFFIX not in series


def test_draws_what_is_there(tmp_path: Path) -> None:
    only_scale = {k: v for k, v in _results().items() if k in ("machine", "scale")}
    assert draw(only_scale, tmp_path / "scale.png") == tmp_path / "scale.png"
    _assert_png(tmp_path / "scale.png")
    without_machine = {"appends": _results()["appends"]}
    drawn = draw(without_machine, tmp_path / "ratios.png", all_ratios=True)
    assert drawn == tmp_path / "ratios.png"
    _assert_png(tmp_path / "ratios.png")


def test_nothing_to_draw(tmp_path: Path) -> None:
    results = {
        "machine": {"cpu": "2 x AMD EPYC"},
        "event-time": {"threshold_ms": 100, "runs": []},
        "expire": {"ratios": [_ratio("pypaimon expiration", None, None)]},
    }
    out = tmp_path / "chart.png"
    assert draw(results, out) is None
    assert not out.exists()


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "latest.json"
    source.write_text(json.dumps({"event-time": {"runs": []}}))
    assert main(["--input", str(source), "--output", str(tmp_path / "none.png")]) == 0
    assert "nothing to draw" in capsys.readouterr().out
    source.write_text(json.dumps(_results()))
    assert main(["--input", str(source), "--output", str(tmp_path / "chart.png")]) == 0
    _assert_png(tmp_path / "chart.png")


def test_short_labels() -> None:
    assert short_label("shoal commit median / pypaimon commit median") == "commit vs pypaimon"
    assert short_label("shoal / Spark Parquet, write (append)") == "write vs Spark Parquet"
    long = short_label("shoal full compaction / " + "a very long reference " * 5)
    assert len(long) <= 52
    assert long.endswith("…")
