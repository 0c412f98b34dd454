"""Freshness as Prometheus metrics (``Table.metrics``, ``shoal metrics``) and the
``on_commit`` hook compaction calls with the freshness of each snapshot it commits."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

import shoal
from shoal.cli.app import cli

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ms")), ("v", pa.string())])
BASE = datetime(2026, 1, 1)


def make(root: Path, event_time: str = "ts") -> shoal.Table:
    options = {"bucket": "2", "write-only": "true", "compaction.event-time.field": event_time}
    table = shoal.Catalog(str(root)).create_table(
        "db.t", SCHEMA, primary_keys=["id"], options=options
    )
    for hour in (1, 3, 5):
        ids = list(range(hour * 10, hour * 10 + 4))
        data = {"id": ids, "ts": [BASE + timedelta(hours=hour)] * 4, "v": ["x"] * 4}
        table.upsert(pa.table(data, schema=SCHEMA))
    return table


def samples(text: str) -> dict[str, float]:
    """Metric name to value, of the samples labelled ``table="db.t"``."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            assert sample.labels == {"table": "db.t"}
            out[sample.name] = sample.value
    return out


def ms(when: datetime) -> int:
    return int((when - datetime(1970, 1, 1)).total_seconds() * 1000)


def test_metrics_are_the_freshness_fields(tmp_path: Path) -> None:
    table = make(tmp_path)
    f = table.freshness()
    got = samples(table.metrics())
    assert got == {
        "shoal_snapshot_id": 3,
        "shoal_read_optimized_watermark_ms": f.watermark_ms,
        "shoal_min_uncompacted_event_time_ms": ms(BASE + timedelta(hours=1)),
        "shoal_buckets_with_uncompacted_files": f.buckets_with_uncompacted_files,
        "shoal_uncompacted_files": f.uncompacted_file_count,
        "shoal_uncompacted_bytes": f.uncompacted_bytes,
    }
    assert f.uncompacted_file_count == 6
    assert samples(table.metrics(snapshot_id=1))["shoal_uncompacted_files"] == 2
    text = table.metrics()
    assert "# TYPE shoal_uncompacted_bytes gauge" in text


def test_values_that_do_not_exist_are_left_out(tmp_path: Path) -> None:
    table = make(tmp_path, event_time="")
    table.compact("full")
    got = samples(table.metrics())
    assert "shoal_read_optimized_watermark_ms" not in got
    assert "shoal_min_uncompacted_event_time_ms" not in got
    assert got["shoal_uncompacted_files"] == 0
    empty = shoal.Catalog(str(tmp_path)).create_table("db.e", SCHEMA, primary_keys=["id"])
    assert "shoal_snapshot_id" not in empty.metrics()


def test_cli_prints_the_same_text(tmp_path: Path) -> None:
    table = make(tmp_path)
    result = CliRunner().invoke(cli, ["metrics", "-w", str(tmp_path), "db.t"])
    assert result.exit_code == 0, result.output
    assert result.output == table.metrics()
    result = CliRunner().invoke(cli, ["metrics", "-w", str(tmp_path), "db.t", "--snapshot", "2"])
    assert samples(result.output)["shoal_snapshot_id"] == 2


def test_on_commit_gets_the_freshness_of_each_compaction(tmp_path: Path) -> None:
    table = make(tmp_path)
    seen: list[shoal.Freshness] = []
    table.compact(
        "event-time", event_time_threshold=BASE + timedelta(hours=2), on_commit=seen.append
    )
    assert seen == [table.freshness()]
    assert seen[0].min_uncompacted_event_time_ms == ms(BASE + timedelta(hours=3))
    table.compact("full", on_commit=seen.append)
    assert seen[1] == table.freshness()
    assert seen[1].uncompacted_file_count == 0
    table.compact("full", on_commit=seen.append)  # nothing to compact: no commit, no call
    assert len(seen) == 2


def test_an_on_commit_that_is_not_a_function_is_refused_before_compacting(
    tmp_path: Path,
) -> None:
    table = make(tmp_path)
    before = table.latest_snapshot()
    with pytest.raises(shoal.InvalidArgumentError, match="on_commit"):
        table.compact("full", on_commit="print")
    assert table.latest_snapshot() == before


def test_an_exception_of_on_commit_propagates_after_the_commit(tmp_path: Path) -> None:
    table = make(tmp_path)

    def fail(_: shoal.Freshness) -> None:
        raise RuntimeError("scraper down")

    with pytest.raises(RuntimeError, match="scraper down"):
        table.compact("full", on_commit=fail)
    latest = table.latest_snapshot()
    assert latest is not None
    assert latest.commit_kind == "COMPACT"
