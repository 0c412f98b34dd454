"""Scans: time travel, filters (exact, and pruning by partition and statistics), splits."""

from __future__ import annotations

import pickle
import time
from datetime import date, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import shoal
from shoal.format.types import BIGINT, AtomicType
from shoal.write.bucket import assign_buckets
from tests.conftest import ALL_TYPES, EVENTS_SCHEMA, all_types_rows, events, sorted_rows


@pytest.fixture
def three_days(events_table: shoal.Table) -> shoal.Table:
    for day in (1, 2, 3):
        ids = range(day * 100, day * 100 + 50)
        events_table.append(events(ids, dt=f"2026-11-0{day}"))
    return events_table


def test_time_travel_by_snapshot_and_timestamp(events_table: shoal.Table) -> None:
    first = events_table.append(events(range(3)))
    time.sleep(0.01)
    events_table.append(events(range(3, 5)))
    assert events_table.to_arrow(snapshot_id=1).num_rows == 3
    assert events_table.to_arrow(timestamp_ms=first.time_millis).num_rows == 3
    assert events_table.to_arrow(timestamp_ms=first.time_millis + 10**6).num_rows == 5
    with pytest.raises(shoal.SnapshotNotFoundError):
        events_table.to_arrow(timestamp_ms=first.time_millis - 1)
    with pytest.raises(shoal.SnapshotNotFoundError):
        events_table.to_arrow(snapshot_id=9)
    with pytest.raises(shoal.SnapshotNotFoundError):
        events_table.snapshot(9)
    with pytest.raises(shoal.TagNotFoundError):
        events_table.to_arrow(tag="nope")
    with pytest.raises(shoal.InvalidArgumentError, match="at most one"):
        events_table.to_arrow(snapshot_id=1, timestamp_ms=first.time_millis)


def test_partition_filter_prunes_splits(three_days: shoal.Table) -> None:
    scan = three_days.scan(filter=[("dt", "=", "2026-11-02")])
    assert {s.partition["dt"] for s in scan.plan()} == {"2026-11-02"}
    assert sorted(scan.to_arrow().column("id").to_pylist()) == list(range(200, 250))


def test_stats_filter_prunes_files_and_filters_rows(three_days: shoal.Table) -> None:
    scan = three_days.scan(filter=[("id", ">=", 310), ("id", "<", 312)])
    assert len(scan.plan()) == 1
    assert scan.to_arrow().column("id").to_pylist() == [310, 311]


@pytest.mark.parametrize(
    ("filter_", "expected"),
    [
        ([("id", "in", [100, 205, 999])], [100, 205]),
        ([[("id", "=", 101)], [("dt", "=", "2026-11-03"), ("id", "<", 302)]], [101, 300, 301]),
        ([("dt", "!=", "2026-11-01"), ("id", "<=", 201)], [200, 201]),
        ([("id", "not in", list(range(101, 350)))], [100]),
        ([("name", "=", "n349")], [349]),
        ([("name", "=", None)], []),
        ([("value", ">", 174.0)], [349]),
    ],
)
def test_filters_are_exact(three_days: shoal.Table, filter_: list, expected: list[int]) -> None:
    table = three_days.to_arrow(filter=filter_)
    assert sorted(table.column("id").to_pylist()) == expected


def test_filter_on_a_column_left_out_of_the_projection(three_days: shoal.Table) -> None:
    table = three_days.to_arrow(columns=["name"], filter=[("id", "=", 205)])
    assert table.to_pylist() == [{"name": "n205"}]


@pytest.mark.parametrize(
    "bad",
    [
        ("id", "=", 1),
        [("missing", "=", 1)],
        [("id", "~", 1)],
        [("id", "in", 5)],
        [("id", "<", None)],
        [("id", "=", "not a number")],
        [[]],
        [[("id", "=", 1)], []],
    ],
)
def test_invalid_filters_are_refused(three_days: shoal.Table, bad: object) -> None:
    with pytest.raises(shoal.InvalidFilterError):
        three_days.to_arrow(filter=bad)


def test_unknown_column_in_projection(three_days: shoal.Table) -> None:
    with pytest.raises(shoal.InvalidArgumentError, match="unknown columns"):
        three_days.to_arrow(columns=["nope"])


def test_batches_stream_the_same_rows(three_days: shoal.Table) -> None:
    batches = list(three_days.scan(filter=[("id", "<", 250)]).to_batches())
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    streamed = pa.Table.from_batches(batches)
    assert sorted_rows(streamed, "id") == sorted_rows(
        three_days.to_arrow(filter=[("id", "<", 250)]), "id"
    )


def test_splits_are_picklable_units_of_work(three_days: shoal.Table) -> None:
    splits = three_days.scan().plan()
    assert sum(s.row_count for s in splits) == 150
    again = pickle.loads(pickle.dumps(splits))
    assert again == splits
    assert all(path.endswith(".parquet") for s in again for path in s.file_paths)


def test_target_file_size_rolls_files(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA, options={"target-file-size": "4 kb"})
    table.append(events(range(2000)))
    files = table.system_table("files")
    assert files.num_rows > 3
    assert sum(files.column("record_count").to_pylist()) == 2000
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(2000))


def test_null_and_special_partition_values(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA, partition_keys=["dt"])
    table.append(events([1, 2, 3], dt=[None, "a/b=c", "x y"]))  # type: ignore[list-item]
    partitions = sorted(table.system_table("partitions").column("partition").to_pylist())
    assert partitions == ["dt=__DEFAULT_PARTITION__", "dt=a%2Fb%3Dc", "dt=x y"]
    assert sorted_rows(table.to_arrow(filter=[("dt", "=", None)]), "id")[0]["id"] == 1
    assert table.to_arrow(filter=[("dt", "=", "a/b=c")]).column("id").to_pylist() == [2]


def test_every_type_round_trips(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.types", ALL_TYPES, partition_keys=["d"])
    data = all_types_rows(6)
    table.append(data)
    back = table.to_arrow().sort_by("k")
    assert back.schema == ALL_TYPES
    assert back.equals(data)
    date_filter = table.to_arrow(filter=[("d", ">=", date(2026, 1, 5))])
    assert sorted(date_filter.column("k").to_pylist()) == [4, 5]
    ts_filter = table.to_arrow(filter=[("ltz", ">", datetime(2026, 1, 1, 3))])
    assert sorted(ts_filter.column("k").to_pylist()) == [4, 5]


def test_schema_mismatches_are_refused(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.types", ALL_TYPES)
    with pytest.raises(shoal.SchemaMismatchError, match="unknown columns"):
        table.append(all_types_rows(2).append_column("extra", pa.array([1, 2])))
    too_big = all_types_rows(2).set_column(0, "k", pa.array([1, 2**40], pa.int64()))
    with pytest.raises(shoal.SchemaMismatchError, match="'k'"):
        table.append(too_big)
    wrong_family = all_types_rows(2).set_column(4, "i64", pa.array(["1", "2"]))
    with pytest.raises(shoal.SchemaMismatchError, match="cast it"):
        table.append(wrong_family)
    with_null = all_types_rows(2).set_column(0, "k", pa.array([1, None], pa.int32()))
    with pytest.raises(shoal.SchemaMismatchError, match="NOT NULL"):
        table.append(with_null)
    assert table.latest_snapshot() is None


def test_lossless_casts_are_applied(events_table: shoal.Table) -> None:
    data = pa.table({
        "dt": pa.array(["2026-11-01"], pa.large_string()),
        "id": pa.array([7], pa.int16()),
        "name": pa.array(["x"]).dictionary_encode(),
        "value": pa.array([1.5], pa.float32()),
    })
    events_table.append(data)
    assert events_table.to_arrow().to_pylist() == [
        {"dt": "2026-11-01", "id": 7, "name": "x", "value": 1.5}
    ]


def test_fixed_bucket_append_table(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.b", EVENTS_SCHEMA, partition_keys=["dt"], options={"bucket": "4", "bucket-key": "id"}
    )
    table.append(events(range(200)))
    table.append(events(range(200)))
    assert sorted(table.to_arrow().column("id").to_pylist()) == sorted(list(range(200)) * 2)
    splits = table.scan().plan()
    assert {s.bucket for s in splits} == {0, 1, 2, 3}
    key_type = [AtomicType(BIGINT)]
    for split in splits:
        rows = pa.concat_tables(pq.read_table(p, partitioning=None) for p in split.file_paths)
        assert rows.num_rows > 0
        # Every row sits in the bucket its key hashes to, in both commits.
        assert set(assign_buckets(rows, ["id"], key_type, 4).tolist()) == {split.bucket}


def test_bucketed_table_needs_a_bucket_key(catalog: shoal.Catalog) -> None:
    with pytest.raises(shoal.InvalidOptionError, match="bucket-key"):
        catalog.create_table("db.b", EVENTS_SCHEMA, options={"bucket": "4"})
    with pytest.raises(shoal.InvalidOptionError, match="bucket"):
        catalog.create_table("db.b", EVENTS_SCHEMA, options={"bucket": "zero"})
