"""The ``shoal`` commands that run on Spark: ``ingest`` and the ``demo``, on the
session-scoped local SparkSession (the commands pick up the active session)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import shoal
from shoal.cli.demo_run import DemoConfig
from tests.cli_runs import demo_orders, run, run_json

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("ts", pa.timestamp("ms")),
        ("v", pa.string()),
    ]
)


@pytest.fixture(autouse=True)
def _session(cli_session: None) -> None:
    """Every command here runs on the suite's session."""


def data(ids: list[int], dt: str = "2026-11-01", tag: str = "a") -> pa.Table:
    return pa.table(
        {
            "dt": [dt] * len(ids),
            "id": ids,
            "ts": [datetime(2026, 11, 1, 0, i % 60) for i in ids],
            "v": [f"{tag}{i}" for i in ids],
        },
        schema=SCHEMA,
    )


def write_json(path: Path, table: pa.Table) -> Path:
    with path.open("w") as out:
        for row in table.to_pylist():
            row["ts"] = row["ts"].isoformat(timespec="milliseconds")
            out.write(json.dumps(row) + "\n")
    return path


def content(table: shoal.Table) -> list[tuple[str, int, str]]:
    return sorted((r["dt"], r["id"], r["v"]) for r in table.to_arrow().to_pylist())


@pytest.fixture
def keyed(tmp_path: Path) -> shoal.Table:
    return shoal.Catalog(str(tmp_path / "wh")).create_table(
        "db.keyed",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2"},
    )


def test_ingest_json_upsert_then_parquet_and_csv(keyed: shoal.Table, tmp_path: Path) -> None:
    source = write_json(tmp_path / "a.json", data([1, 2, 3]))
    result = run_json("ingest", str(source), keyed.path, "--mode", "upsert")
    assert result["written_records"] == 3
    assert result["format"] == "json"
    assert result["snapshot_ids"] == [1]
    assert keyed.to_arrow().sort_by("id") == data([1, 2, 3])

    pq.write_table(data([3, 4], tag="b"), tmp_path / "b.parquet")
    run_json("ingest", str(tmp_path / "b.parquet"), keyed.path)
    pacsv.write_csv(data([5], dt="2026-11-02", tag="c"), tmp_path / "c.csv")
    human = run("ingest", str(tmp_path / "c.csv"), keyed.path)
    assert human.exit_code == 0, human.output
    assert "ingested 1 rows" in human.stdout
    assert content(keyed) == [
        ("2026-11-01", 1, "a1"),
        ("2026-11-01", 2, "a2"),
        ("2026-11-01", 3, "b3"),
        ("2026-11-01", 4, "b4"),
        ("2026-11-02", 5, "c5"),
    ]


def test_ingest_overwrite(keyed: shoal.Table, tmp_path: Path) -> None:
    keyed.upsert(data([1, 2]))
    keyed.upsert(data([7], dt="2026-11-02"))
    source = write_json(tmp_path / "new.json", data([9], tag="n"))
    run_json(
        "ingest",
        str(source),
        keyed.path,
        "-f",
        "json",
        "-m",
        "overwrite",
        "--dynamic-partition-overwrite",
    )
    assert content(keyed) == [("2026-11-01", 9, "n9"), ("2026-11-02", 7, "a7")]
    run_json("ingest", str(source), keyed.path, "-m", "overwrite")
    assert content(keyed) == [("2026-11-01", 9, "n9")]


def test_ingest_into_an_append_table_with_sparks_parquet_writer(tmp_path: Path) -> None:
    micros = SCHEMA.set(2, pa.field("ts", pa.timestamp("us")))
    plain = shoal.Catalog(str(tmp_path / "wh")).create_table(
        "db.events", micros, partition_keys=["dt"]
    )
    rows = data([1, 2]).cast(micros)
    pq.write_table(
        pa.concat_tables([rows, data([3], dt="2026-11-02").cast(micros)]), tmp_path / "in.parquet"
    )
    done = run_json("ingest", str(tmp_path / "in.parquet"), plain.path)
    assert done["snapshot_ids"] == [1]
    assert content(plain) == [
        ("2026-11-01", 1, "a1"),
        ("2026-11-01", 2, "a2"),
        ("2026-11-02", 3, "a3"),
    ]
    # Spark's files, moved into the table's bucket directories; no staging folder left.
    found = list(Path(plain.path).rglob("data-*"))
    files = sorted(p.relative_to(plain.path).parts[:2] for p in found)
    assert files == [("dt=2026-11-01", "bucket-0"), ("dt=2026-11-02", "bucket-0")]
    assert all("parquet-mr" in pq.read_metadata(p).created_by for p in found)
    assert not any(p.name.startswith(".spark-write-") for p in Path(plain.path).iterdir())


def test_ingest_errors(keyed: shoal.Table, tmp_path: Path) -> None:
    source = write_json(tmp_path / "a.json", data([1]))
    append = shoal.Catalog(str(tmp_path / "wh")).create_table("db.plain", SCHEMA)
    upsert = run("ingest", str(source), append.path, "--mode", "upsert")
    assert upsert.exit_code == 2
    assert "primary-key" in upsert.stderr
    assert run("ingest", str(tmp_path / "missing.json"), keyed.path).exit_code == 2
    assert run("ingest", str(tmp_path), keyed.path).exit_code == 2  # format unknown
    assert (
        run(
            "ingest", str(source), keyed.path, "-m", "append", "--dynamic-partition-overwrite"
        ).exit_code
        == 2
    )
    pq.write_table(pa.table({"id": [1]}), tmp_path / "narrow.parquet")
    narrow = run("ingest", str(tmp_path / "narrow.parquet"), keyed.path)
    assert narrow.exit_code == 2
    assert "dt" in narrow.stderr
    assert run("ingest", str(source), str(tmp_path / "nope")).exit_code == 3
    assert keyed.latest_snapshot() is None


def ms(when: datetime) -> int:
    return int(when.replace(tzinfo=UTC).timestamp() * 1000)


def test_demo_end_to_end(tmp_path: Path) -> None:
    """The demo as people see it; then its table checked against the generator."""
    warehouse = tmp_path / "demo"
    result = run("demo", "--warehouse", str(warehouse), "--events", "2000", "--hours", "3")
    assert result.exit_code == 0, result.output
    text = result.stdout
    for phrase in (
        str(warehouse),
        "ingest",
        "compact <=",
        "late data: freshness moved back",
        "compaction moved freshness forward",
        "tag day-2026-11-01",
        "expire snapshots",
        "downstream query",
        "would delete 1",
        "summary",
    ):
        assert phrase in text, phrase

    table = shoal.Catalog(str(warehouse)).get_table("demo.orders")
    rows = table.to_arrow().to_pylist()
    assert {
        (r["dt"], r["order_id"]): (r["status"], r["event_time"]) for r in rows
    } == demo_orders(DemoConfig(events=2000, hours=3))
    # Freshness: every row older than the watermark is in the read-optimized view.
    watermark = table.freshness().watermark_ms
    assert watermark is not None
    optimized = {tuple(r.values()) for r in table.to_arrow(read_optimized=True).to_pylist()}
    old = [r for r in rows if ms(r["event_time"]) < watermark]
    assert old
    assert all(tuple(r.values()) in optimized for r in old)
    assert [t.name for t in table.list_tags()] == ["day-2026-11-01"]
    # The newest 5 snapshots stay, and those the downstream consumer has not confirmed.
    snapshots = [s.id for s in table.snapshots()]
    consumer = table.consumers()["demo-downstream"]
    assert snapshots[0] == min(snapshots[-1] - 4, consumer)
    assert not list(warehouse.glob("demo.db/orders/*/bucket-0/data-6513270e*"))


def test_demo_json(tmp_path: Path) -> None:
    doc = run_json(
        "demo",
        "-w",
        str(tmp_path / "small"),
        "--events",
        "400",
        "--hours",
        "2",
        "--batch-minutes",
        "30",
        "--seed",
        "3",
        "--retain",
        "2",
    )
    kinds = [step["kind"] for step in doc["timeline"]]
    assert kinds.count("ingest") == 4
    assert kinds.count("compact") == 2
    assert kinds.count("tag") == 1
    # Expiration keeps the newest 2, and what the downstream consumer has not confirmed.
    before = doc["snapshots_before_expire"]
    kept_from = min(before[-1] - 1, doc["downstream_next_snapshot"])
    assert doc["expire"]["expired_snapshots"] == len([s for s in before if s < kept_from])
    assert doc["orphans"]["default_run"]["deleted_count"] == 0
    assert doc["orphans"]["dry_run"]["deleted_count"] == 1
    assert doc["orphans"]["real_run"]["deleted_count"] == 1
    summary = doc["summary"]
    assert summary["snapshots"][0] == kept_from
    assert sum(summary["status_counts"].values()) == summary["rows"]
    assert summary["read_optimized_rows"] <= summary["rows"]
    assert doc["config"]["seed"] == 3
    # The downstream query read every row each ingest commit wrote, and timed them all.
    ingests = [step for step in doc["timeline"] if step["kind"] == "ingest"]
    downstream = doc["downstream"]
    assert downstream["rows"] == sum(step["rows"] for step in ingests)
    assert downstream["snapshots"] == len(ingests)
    assert 0 <= downstream["median_seconds"] <= downstream["max_seconds"]
    # One snapshot per micro-batch, its batch id the commit identifier.
    table = shoal.open_table(doc["path"])
    committed = [table.snapshot(s) for s in summary["snapshots"]]
    identifiers = {s.id: s.commit_identifier for s in committed if s.commit_kind == "APPEND"}
    by_step = {step["snapshot_id"]: i for i, step in enumerate(ingests)}
    assert identifiers
    assert all(identifiers[i] == by_step[i] for i in identifiers)


def test_maintenance_as_spark_jobs(keyed: shoal.Table) -> None:
    for i in range(4):
        keyed.upsert(data([i, i + 10], tag=f"w{i}"))
    expected = content(keyed)
    compacted = run_json("compact", keyed.path, "-s", "full", "--spark")
    assert compacted["snapshot_id"] == 5
    assert compacted["freshness"]["uncompacted_file_count"] == 0
    assert content(keyed) == expected
    expired = run_json(
        "expire-snapshots", keyed.path, "--retain-max", "1", "--older-than", "now", "--spark"
    )
    assert expired["expired_snapshots"] == 4
    assert expired["deleted_data_files"] > 0
    assert [s.id for s in keyed.snapshots()] == [5]
    orphans = run_json(
        "remove-orphan-files", keyed.path, "--older-than", "now", "--dry-run", "--spark"
    )
    assert orphans == {"deleted_count": 0, "deleted_bytes": 0, "paths": [], "dry_run": True}
    assert content(keyed) == expected
