"""Both directions against the real pypaimon 2.1.0: it reads what shoal writes, shoal reads
what it writes, row for row and snapshot for snapshot."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import shoal
from shoal.format.types import BIGINT, AtomicType
from shoal.write.bucket import assign_buckets
from tests.conftest import ALL_TYPES, EVENTS_SCHEMA, all_types_rows, events, sorted_rows
from tests.interop.pypaimon_oracle import PypaimonOracle

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def oracle() -> PypaimonOracle:
    return PypaimonOracle()


@pytest.mark.parametrize(
    ("partition_keys", "options"),
    [
        (["dt"], {}),
        ([], {}),
        (["dt"], {"bucket": "3", "bucket-key": "id"}),
    ],
    ids=["partitioned", "unpartitioned", "bucketed"],
)
def test_pypaimon_reads_what_shoal_writes(
    oracle: PypaimonOracle, tmp_path: Path, partition_keys: list[str], options: dict[str, str]
) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=partition_keys, options=options
    )
    table.append(events(range(40), dt=[f"2026-11-0{i % 3 + 1}" for i in range(40)]))
    table.append(events(range(40, 50), dt="2026-11-04"))
    table.overwrite(events(range(100, 105), dt="2026-11-05"))
    table.append(events(range(200, 230), dt=[f"2026-11-0{i % 2 + 1}" for i in range(30)]))
    for snapshot in table.snapshots():
        expected = sorted_rows(table.to_arrow(snapshot_id=snapshot.id), "id")
        got = sorted_rows(oracle.read(tmp_path, "db.t", snapshot_id=snapshot.id), "id")
        assert got == expected, f"snapshot {snapshot.id}"
    assert len(sorted_rows(oracle.read(tmp_path, "db.t"))) == 35
    pypaimon_view = oracle.snapshots(tmp_path, "db.t")
    assert [(s["id"], s["commit_kind"], s["total_record_count"]) for s in pypaimon_view] == [
        (s.id, s.commit_kind, s.total_record_count) for s in table.snapshots()
    ]


def test_pypaimon_reads_shoal_partition_drop_and_projection(
    oracle: PypaimonOracle, tmp_path: Path
) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=["dt"], options={"manifest.merge-min-count": "3"}
    )
    for day in range(1, 8):
        table.append(events(range(day * 10, day * 10 + 5), dt=f"2026-11-0{day}"))
    table.drop_partitions([{"dt": "2026-11-02"}, {"dt": "2026-11-05"}])
    got = oracle.read(tmp_path, "db.t", columns=["id", "name"])
    assert sorted_rows(got, "id") == sorted_rows(table.to_arrow(columns=["id", "name"]), "id")
    assert len(got) == 25


def test_types_both_ways(oracle: PypaimonOracle, tmp_path: Path) -> None:
    data = all_types_rows(8)
    shoal_wh, paimon_wh = tmp_path / "shoal", tmp_path / "paimon"
    shoal.Catalog(str(shoal_wh)).create_table("db.t", ALL_TYPES, partition_keys=["d"]).append(data)
    assert oracle.read(shoal_wh, "db.t").sort_by("k").equals(data)
    oracle.write(paimon_wh, "db.t", [data], partition_keys=["d"])
    assert shoal.Catalog(str(paimon_wh)).get_table("db.t").to_arrow().sort_by("k").equals(data)


@pytest.mark.parametrize(
    ("partition_keys", "options"),
    [(["dt"], {}), ([], {}), (["dt"], {"bucket": "2", "bucket-key": "id"})],
    ids=["partitioned", "unpartitioned", "bucketed"],
)
def test_shoal_reads_what_pypaimon_writes(
    oracle: PypaimonOracle, tmp_path: Path, partition_keys: list[str], options: dict[str, str]
) -> None:
    batches = [
        events(range(30), dt=[f"2026-11-0{i % 3 + 1}" for i in range(30)]),
        events(range(30, 35), dt="2026-11-09"),
        events(range(35, 60), dt=[f"2026-11-0{i % 2 + 1}" for i in range(25)]),
    ]
    ids = oracle.write(tmp_path, "db.t", batches, partition_keys=partition_keys,
                       options=options)
    assert ids == [1, 2, 3]
    table = shoal.Catalog(str(tmp_path)).get_table("db.t")
    assert [s.id for s in table.snapshots()] == ids
    for snapshot_id, upto in zip(ids, (30, 35, 60), strict=True):
        got = table.to_arrow(snapshot_id=snapshot_id)
        assert sorted(got.column("id").to_pylist()) == list(range(upto))
        assert sorted_rows(got, "id") == sorted_rows(
            oracle.read(tmp_path, "db.t", snapshot_id=snapshot_id), "id"
        )
    filtered = table.to_arrow(filter=[("dt", "=", "2026-11-09")])
    assert sorted(filtered.column("id").to_pylist()) == list(range(30, 35))


def test_one_table_written_by_both(oracle: PypaimonOracle, tmp_path: Path) -> None:
    options = {"bucket": "4", "bucket-key": "id"}
    oracle.write(tmp_path, "db.t", [events(range(50))], partition_keys=["dt"],
                 options=options)
    table = shoal.Catalog(str(tmp_path)).get_table("db.t")
    table.append(events(range(50)))  # the same keys again: they must meet in one bucket
    oracle.write(tmp_path, "db.t", [events(range(50, 60))], partition_keys=["dt"],
                 options=options)
    table.overwrite(events(range(70, 80), dt="2026-11-02"), partition={"dt": "2026-11-02"})
    expected = sorted([*range(50), *range(50), *range(50, 60), *range(70, 80)])
    assert sorted(shoal.open_table(table.path).to_arrow().column("id").to_pylist()) == expected
    assert sorted(oracle.read(tmp_path, "db.t").column("id").to_pylist()) == expected
    for split in shoal.open_table(table.path).scan().plan():
        rows = pa.concat_tables(pq.read_table(p, partitioning=None) for p in split.file_paths)
        buckets = assign_buckets(rows, ["id"], [AtomicType(BIGINT)], 4)
        assert set(buckets.tolist()) == {split.bucket}, "shoal and pypaimon disagree on buckets"
    assert [s["id"] for s in oracle.snapshots(tmp_path, "db.t")] == [1, 2, 3, 4]
