"""Partition expiration: a partition's time from its values or its newest file, the
OVERWRITE commit that drops the expired ones, the check after commits and its
interval, and the refusal to write into an expired partition.

The clock is ``now=``; tables whose writes are checked against the real clock use
partitions far in the past (refused) or far in the future (accepted).
"""

from __future__ import annotations

import logging
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shoal
from shoal.cleanup.partition_expire import expire_partitions, maybe_expire_partitions
from shoal.core.partition_time import PartitionTimeExtractor
from shoal.errors import InvalidArgumentError, InvalidOptionError, PartitionExpiredError
from tests.conftest import EVENTS_SCHEMA, events

HOURLY_SCHEMA = pa.schema([("dt", pa.string()), ("hour", pa.string()), ("id", pa.int64())])
DATE_SCHEMA = pa.schema([("dt", pa.date32()), ("id", pa.int64())])
PK_SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("id", pa.int64(), nullable=False),
        ("v", pa.string()),
    ]
)
LOGGER = "shoal.cleanup.partition_expire"


def _table(
    tmp_path: Path,
    schema: pa.Schema = EVENTS_SCHEMA,
    *,
    partition_keys: list[str] | None = None,
    primary_keys: list[str] | None = None,
    **options: str,
) -> shoal.Table:
    return shoal.Catalog(str(tmp_path)).create_table(
        "db.t",
        schema,
        partition_keys=["dt"] if partition_keys is None else partition_keys,
        primary_keys=primary_keys or [],
        options=options,
    )


def _days(table: shoal.Table, *days: str) -> None:
    """One append per day, two rows each."""
    for n, day in enumerate(days):
        table.append(events([2 * n, 2 * n + 1], dt=day))


def _dts(table: shoal.Table, **read: Any) -> list[Any]:
    return sorted(set(table.to_arrow(**read).column("dt").to_pylist()), key=str)


def _data_files(table: shoal.Table) -> set[Path]:
    return set(Path(table.path).rglob("*.parquet"))


def _expire(table: shoal.Table, **kwargs: Any) -> list[dict[str, Any]]:
    return table.expire_partitions(**kwargs)


# --- the partition time --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("formatter", "text", "expected"),
    [
        ("", "2026-11-01", datetime(2026, 11, 1)),
        ("", "2026-1-5", datetime(2026, 1, 5)),
        ("", "2026-11-01 7:05:09", datetime(2026, 11, 1, 7, 5, 9)),
        ("", "2026-11-01 12:00:00.25", datetime(2026, 11, 1, 12, 0, 0, 250000)),
        ("", "2026-13-01", datetime(2027, 1, 1)),  # Paimon's default parser is lenient
        ("", "20261101", None),
        ("", "2026-11-01T10:00:00", None),
        ("yyyyMMdd", "20261101", datetime(2026, 11, 1)),
        ("yyyyMMdd", "2026-11-01", None),
        ("yyyyMMdd", "20261301", None),  # a given formatter is exact
        ("yyyyMMddHH", "2026110107", datetime(2026, 11, 1, 7)),
        ("yyyy-MM-dd HH:mm:ss", "2026-11-01 23:59:58", datetime(2026, 11, 1, 23, 59, 58)),
        ("yyyy-MM-dd'T'HH:mm[:ss]", "2026-11-01T08:30", datetime(2026, 11, 1, 8, 30)),
        ("yy/M/d", "26/2/3", datetime(2026, 2, 3)),
    ],
)
def test_partition_time_from_one_value(
    formatter: str, text: str, expected: datetime | None
) -> None:
    assert PartitionTimeExtractor(["dt"], formatter=formatter).extract([text]) == expected


def test_partition_time_from_typed_values_and_nulls() -> None:
    extractor = PartitionTimeExtractor(["dt"], formatter="yyyyMMdd")
    assert extractor.extract([date(2026, 3, 4)]) == datetime(2026, 3, 4)
    assert extractor.extract([datetime(2026, 3, 4, 5)]) == datetime(2026, 3, 4, 5)
    assert extractor.extract([20260304]) == datetime(2026, 3, 4)  # an INT partition
    for no_time in (None, "", "__DEFAULT_PARTITION__", "soon"):
        assert extractor.extract([no_time]) is None


def test_partition_time_from_a_pattern() -> None:
    hourly = PartitionTimeExtractor(["dt", "hour"], pattern="$dt $hour:00:00")
    assert hourly.extract(["2026-11-01", "07"]) == datetime(2026, 11, 1, 7)
    assert hourly.extract([date(2026, 11, 1), 23]) == datetime(2026, 11, 1, 23)
    assert hourly.extract(["2026-11-01", None]) is None
    packed = PartitionTimeExtractor(["dt", "hour"], pattern="$dt$hour", formatter="yyyyMMddHH")
    assert packed.extract(["20261101", "07"]) == datetime(2026, 11, 1, 7)
    # "$dtx" is the key dtx, not the key dt followed by an x
    second = PartitionTimeExtractor(["dt", "dtx"], pattern="$dtx")
    assert second.extract(["junk", "2026-11-01"]) == datetime(2026, 11, 1)


@pytest.mark.parametrize(
    ("pattern", "formatter"),
    [
        ("$day", ""),
        ("", "yyyy-MMM-dd"),
        ("", "HH:mm"),
        ("", "yyyy-MM-dd'T"),
        ("", "yyyy-MM[-dd"),
        ("", "yyyy-MM-dd-dd"),
    ],
)
def test_invalid_pattern_or_formatter(pattern: str, formatter: str) -> None:
    with pytest.raises(InvalidOptionError):
        PartitionTimeExtractor(["dt"], pattern=pattern, formatter=formatter)


# --- values-time ---------------------------------------------------------------------------


def test_values_time_drops_old_partitions_in_one_overwrite(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _days(table, "2026-10-01", "2026-11-01", "2026-10-20")
    before = table.latest_snapshot()
    files = _data_files(table)

    dropped = _expire(table, expiration_time=timedelta(days=10), now=datetime(2026, 11, 5))

    assert dropped == [{"dt": "2026-10-01"}, {"dt": "2026-10-20"}]  # sorted by value
    drop = table.latest_snapshot()
    assert drop.id == before.id + 1
    assert drop.commit_kind == "OVERWRITE"
    assert drop.delta_record_count == -4
    assert _dts(table) == ["2026-11-01"]
    assert _dts(table, snapshot_id=before.id) == ["2026-10-01", "2026-10-20", "2026-11-01"]
    assert _data_files(table) == files  # only DELETE entries: the files go with expiration
    assert _expire(table, expiration_time="10 d", now=datetime(2026, 11, 5)) == []
    assert table.latest_snapshot().id == drop.id  # nothing expired: no commit


def test_a_partition_exactly_at_the_cutoff_stays(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _days(table, "2026-10-31", "2026-11-01")
    assert _expire(table, expiration_time="10 d", now=datetime(2026, 11, 11)) == [
        {"dt": "2026-10-31"}
    ]
    assert _dts(table) == ["2026-11-01"]


def test_values_time_with_a_formatter(tmp_path: Path) -> None:
    table = _table(tmp_path, **{"partition.timestamp-formatter": "yyyyMMdd"})
    _days(table, "20261001", "20261102", "2026-10-01")
    dropped = _expire(table, expiration_time="7 d", now=datetime(2026, 11, 5))
    assert dropped == [{"dt": "20261001"}]
    assert _dts(table) == ["2026-10-01", "20261102"]  # the other spelling does not parse


def test_values_time_with_a_pattern_over_two_keys(tmp_path: Path) -> None:
    table = _table(
        tmp_path,
        HOURLY_SCHEMA,
        partition_keys=["dt", "hour"],
        **{"partition.timestamp-pattern": "$dt $hour:00:00"},
    )
    for n, (dt, hour) in enumerate(
        [("2026-11-01", "05"), ("2026-11-01", "23"), ("2026-11-02", "01")]
    ):
        table.append(pa.table({"dt": [dt], "hour": [hour], "id": [n]}, schema=HOURLY_SCHEMA))

    dropped = _expire(table, expiration_time="12 h", now=datetime(2026, 11, 2, 10))

    assert dropped == [{"dt": "2026-11-01", "hour": "05"}]
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2]


def test_date_typed_partition_column(tmp_path: Path) -> None:
    table = _table(tmp_path, DATE_SCHEMA, **{"partition.timestamp-formatter": "yyyyMMdd"})
    days = [date(2026, 10, 1), date(2026, 11, 1), date(2026, 9, 15)]
    for n, day in enumerate(days):
        table.append(pa.table({"dt": [day], "id": [n]}, schema=DATE_SCHEMA))

    dropped = _expire(table, expiration_time="20 d", now=datetime(2026, 11, 5))

    assert dropped == [{"dt": date(2026, 9, 15)}, {"dt": date(2026, 10, 1)}]
    assert table.to_arrow().column("dt").to_pylist() == [date(2026, 11, 1)]


def test_max_num_drops_the_lowest_values_first(tmp_path: Path) -> None:
    table = _table(tmp_path, **{"partition.expiration-max-num": "2"})
    _days(table, "2026-10-04", "2026-10-01", "2026-10-03", "2026-10-02", "2026-11-01")
    now = datetime(2026, 11, 5)
    assert _expire(table, expiration_time="7 d", now=now) == [
        {"dt": "2026-10-01"},
        {"dt": "2026-10-02"},
    ]
    assert _expire(table, expiration_time="7 d", now=now) == [
        {"dt": "2026-10-03"},
        {"dt": "2026-10-04"},
    ]
    assert _dts(table) == ["2026-11-01"]


def test_values_without_a_time_are_kept_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    table = _table(tmp_path)
    _days(table, "2026-10-01", "not-a-date", "")
    table.append(pa.table({"dt": [None], "id": [9], "name": ["x"], "value": [1.0]}, EVENTS_SCHEMA))

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        dropped = _expire(table, expiration_time="1 d", now=datetime(2099, 1, 1))

    assert dropped == [{"dt": "2026-10-01"}]
    assert _dts(table) == ["", None, "not-a-date"]
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "not-a-date" in warnings[0].getMessage()
    assert "3 partitions" in warnings[0].getMessage()


def test_a_table_without_snapshots_has_nothing_to_expire(tmp_path: Path) -> None:
    table = _table(tmp_path)
    assert _expire(table, expiration_time="1 d") == []
    assert table.latest_snapshot() is None


# --- update-time ---------------------------------------------------------------------------


def test_update_time_follows_the_newest_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table(tmp_path, **{"partition.expiration-strategy": "update-time"})
    for dt, day in [("a", 1), ("b", 10), ("a", 20), ("c", 5)]:  # "a" is written again later
        monkeypatch.setattr("shoal.write.files.now_millis", lambda day=day: datetime(2026, 1, day))
        table.append(events([day], dt=dt))

    dropped = _expire(table, expiration_time="5 d", now=datetime(2026, 1, 16))

    assert dropped == [{"dt": "b"}, {"dt": "c"}]
    assert _dts(table) == ["a"]


# --- the check after commits ---------------------------------------------------------------


def _future_days(tmp_path: Path, **options: str) -> shoal.Table:
    """A table whose partitions are in 2999, so that no real-clock check drops them,
    opened again so that its commits have not checked yet."""
    table = _table(tmp_path, **{"partition.expiration-time": "3 d", **options})
    _days(table, "2999-01-01", "2999-01-02", "2999-01-08")
    return shoal.open_table(table.path)


def _check(table: shoal.Table, now: datetime) -> list[dict[str, Any]]:
    return maybe_expire_partitions(table._store, table._committer, now=now)


def test_the_check_runs_once_per_interval(tmp_path: Path) -> None:
    table = _future_days(tmp_path, **{"partition.expiration-check-interval": "1 h"})
    first = datetime(2999, 1, 4, 23, 45)
    assert _check(table, first) == [{"dt": "2999-01-01"}]  # the first check of the open table
    # 2999-01-02 has expired by 00:15, but the last check was only 30 minutes ago
    assert _check(table, first + timedelta(minutes=30)) == []
    assert _dts(table) == ["2999-01-02", "2999-01-08"]
    assert _check(table, first + timedelta(hours=1)) == [{"dt": "2999-01-02"}]


def test_an_interval_of_zero_checks_every_time(tmp_path: Path) -> None:
    table = _future_days(tmp_path, **{"partition.expiration-check-interval": "0 s"})
    first = datetime(2999, 1, 4, 23, 59, 59)
    assert _check(table, first) == [{"dt": "2999-01-01"}]
    assert _check(table, first + timedelta(seconds=2)) == [{"dt": "2999-01-02"}]


def test_the_check_does_nothing_without_the_option(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _days(table, "2026-10-01")
    latest = table.latest_snapshot()
    assert _check(table, datetime(2999, 1, 1)) == []
    assert table.latest_snapshot() == latest


def test_the_check_uses_the_table_options(tmp_path: Path) -> None:
    table = _future_days(tmp_path)
    # an explicit run without expiration_time reads partition.expiration-time too
    store, committer = table._store, table._committer
    assert expire_partitions(store, committer, now=datetime(2999, 1, 5, 12)) == [
        {"dt": "2999-01-01"},
        {"dt": "2999-01-02"},
    ]


def test_commits_run_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = _table(
        tmp_path,
        **{"partition.expiration-time": "1 d", "partition.expiration-strategy": "update-time"},
    )
    monkeypatch.setattr("shoal.write.files.now_millis", lambda: datetime(2000, 1, 1))
    table.append(events([1], dt="old"))  # the commit's own check drops it at once
    assert table.latest_snapshot().commit_kind == "OVERWRITE"
    assert table.to_arrow().num_rows == 0
    assert table.to_arrow(snapshot_id=1).num_rows == 1


# --- writes into expired partitions --------------------------------------------------------


def _guarded(tmp_path: Path, first: pa.Table, **kwargs: Any) -> shoal.Table:
    """A table that expires partitions a day old (by their values), holding ``first``."""
    table = _table(tmp_path, first.schema, **kwargs, **{"partition.expiration-time": "1 d"})
    table.append(first)
    return table


def _pk_rows(dts: list[str], start: int) -> pa.Table:
    ids = list(range(start, start + len(dts)))
    return pa.table({"dt": dts, "id": ids, "v": [f"v{i}" for i in ids]}, schema=PK_SCHEMA)


def test_append_into_an_expired_partition_is_refused(tmp_path: Path) -> None:
    table = _guarded(tmp_path, events([1], dt="2999-01-01"))
    latest = table.latest_snapshot()
    with pytest.raises(PartitionExpiredError) as caught:
        table.append(events([2, 3], dt=["2999-01-02", "2000-01-01"]))
    assert caught.value.partitions == [{"dt": "2000-01-01"}]
    assert table.latest_snapshot() == latest
    table.append(events([2], dt="2999-01-02"))  # a partition that has not expired
    assert _dts(table) == ["2999-01-01", "2999-01-02"]


def test_overwrite_into_an_expired_partition_is_refused(tmp_path: Path) -> None:
    table = _guarded(tmp_path, events([1], dt="2999-01-01"))
    latest = table.latest_snapshot()
    with pytest.raises(PartitionExpiredError):
        table.overwrite(events([2], dt="2000-01-01"), partition={"dt": "2000-01-01"})
    with pytest.raises(PartitionExpiredError):
        table.overwrite(events([2], dt="2000-01-01"))
    assert table.latest_snapshot() == latest
    assert _dts(table) == ["2999-01-01"]


def test_upsert_into_an_expired_partition_is_refused(tmp_path: Path) -> None:
    first = _pk_rows(["2999-01-01"], 1)
    table = _guarded(tmp_path, first, primary_keys=["dt", "id"], bucket="2")
    latest = table.latest_snapshot()
    with pytest.raises(PartitionExpiredError):
        table.upsert(_pk_rows(["2000-01-01"], 2))
    with pytest.raises(PartitionExpiredError):
        table.delete(pa.table({"dt": ["2000-01-01"], "id": [2]}))
    assert table.latest_snapshot() == latest
    table.upsert(_pk_rows(["2999-01-01"], 1))


def test_update_time_does_not_refuse_writes(tmp_path: Path) -> None:
    table = _table(
        tmp_path,
        **{"partition.expiration-time": "1 d", "partition.expiration-strategy": "update-time"},
    )
    table.append(events([1], dt="2000-01-01"))  # its files are new, so it has not expired
    assert table.latest_snapshot().commit_kind == "APPEND"


# --- primary-key tables --------------------------------------------------------------------


def test_primary_key_table(tmp_path: Path) -> None:
    table = _table(tmp_path, PK_SCHEMA, primary_keys=["dt", "id"], bucket="2")
    table.upsert(_pk_rows(["2026-10-01"] * 3, 0))
    table.upsert(_pk_rows(["2026-11-01"] * 3, 0))
    table.upsert(_pk_rows(["2026-10-01", "2026-11-01"], 10))

    assert _expire(table, expiration_time="7 d", now=datetime(2026, 11, 5)) == [
        {"dt": "2026-10-01"}
    ]
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 2, 11]
    assert _dts(table) == ["2026-11-01"]
    table.compact("full")
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 2, 11]


# --- arguments -----------------------------------------------------------------------------


def test_invalid_arguments(tmp_path: Path) -> None:
    table = _table(tmp_path)
    _days(table, "2026-10-01")
    with pytest.raises(InvalidArgumentError, match=r"partition\.expiration-time"):
        _expire(table)
    with pytest.raises(InvalidArgumentError, match="duration"):
        _expire(table, expiration_time="soon")
    with pytest.raises(InvalidArgumentError):
        _expire(table, expiration_time=timedelta(days=-1))
    with pytest.raises(InvalidArgumentError):
        _expire(table, expiration_time=7)  # type: ignore[arg-type]
    flat = shoal.Catalog(str(tmp_path)).create_table("db.flat", EVENTS_SCHEMA)
    with pytest.raises(InvalidArgumentError, match="not partitioned"):
        _expire(flat, expiration_time="1 d")
    assert _dts(table) == ["2026-10-01"]


def test_invalid_time_options(tmp_path: Path) -> None:
    table = _table(tmp_path, **{"partition.timestamp-formatter": "dd MMM yyyy"})
    _days(table, "2026-10-01")
    with pytest.raises(InvalidOptionError, match=r"partition\.timestamp-formatter"):
        _expire(table, expiration_time="1 d")
    other = shoal.Catalog(str(tmp_path)).create_table(
        "db.other",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        options={"partition.timestamp-pattern": "$day"},
    )
    _days(other, "2026-10-01")
    with pytest.raises(InvalidOptionError, match=r"partition\.timestamp-pattern"):
        _expire(other, expiration_time="1 d")
