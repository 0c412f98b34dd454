"""timestamp-precision-truncate: Spark's microseconds into TIMESTAMP(3) columns, floored
on request and refused otherwise, in batch and streaming writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import shoal
from shoal.errors import SchemaMismatchError
from shoal.spark.source_options import SourceOptions
from shoal.spark.table_write import write_table
from shoal.spark.timestamp_precision import TRUNCATE_OPTION, fit_timestamps, floor_divide
from shoal.spark.write import plan_task_write

TABLE = pa.schema(
    [
        ("id", pa.int64()),
        ("ntz", pa.timestamp("ms")),  # TIMESTAMP(3)
        ("ltz", pa.timestamp("ms", tz="UTC")),  # TIMESTAMP_LTZ(3)
    ]
)
SPARK_SCHEMA = "id bigint, ntz timestamp_ntz, ltz timestamp"
EPOCH = datetime(1970, 1, 1)
# Microseconds since the epoch, before and after it, with and without sub-millisecond
# digits: 1969-12-31 23:59:59.999999, -0.001, -0.0015, 0.0005, 2026-11-01 08:00:00.123456
MICROS = [-1, -1000, -1500, 500, 1_793_520_000_123_456]


def floored_ms(micros: int) -> datetime:
    """The model: Python's integer division floors."""
    return EPOCH + timedelta(milliseconds=micros // 1000)


def spark_rows() -> pa.Table:
    ticks = pa.array(MICROS, pa.int64())
    return pa.table(
        {
            "id": pa.array(range(len(MICROS)), pa.int64()),
            "ntz": ticks.cast(pa.timestamp("us")),
            "ltz": ticks.cast(pa.timestamp("us", tz="UTC")),
        }
    )


@given(st.lists(st.one_of(st.none(), st.integers(-(2**62), 2**62)), max_size=50))
def test_floor_division_is_pythons(values: list[int | None]) -> None:
    for factor in (1000, 1_000_000):
        got = floor_divide(pa.array(values, pa.int64()), factor).to_pylist()
        assert got == [None if v is None else v // factor for v in values]


def test_without_the_option_lost_digits_are_refused_and_exact_values_pass() -> None:
    rows = spark_rows().to_batches()[0]
    with pytest.raises(SchemaMismatchError, match=TRUNCATE_OPTION):
        fit_timestamps(rows, TABLE, truncate=False)
    exact = rows.filter(pa.array([False, True, False, False, False]))
    assert fit_timestamps(exact, TABLE, truncate=False) is exact
    floored = fit_timestamps(rows, TABLE, truncate=True)
    assert floored.schema.field("ltz").type == pa.timestamp("ms", tz="UTC")
    expected = [floored_ms(m) for m in MICROS]
    assert floored.column("ntz").to_pylist() == expected
    assert floored.column("ltz").to_pylist() == [e.replace(tzinfo=UTC) for e in expected]


def test_batch_write(spark: SparkSession, catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.times", TABLE)
    df = spark.createDataFrame(spark_rows(), SPARK_SCHEMA)
    assert df.schema.simpleString() == "struct<id:bigint,ntz:timestamp_ntz,ltz:timestamp>"
    with pytest.raises(Exception, match=TRUNCATE_OPTION):
        df.write.format("shoal").mode("append").save(table.path)
    assert table.latest_snapshot() is None  # nothing committed
    df.write.format("shoal").mode("append").option(TRUNCATE_OPTION, "true").save(table.path)
    rows = table.to_arrow().sort_by("id")
    expected = [floored_ms(m) for m in MICROS]
    assert rows.column("ntz").to_pylist() == expected
    assert rows.column("ltz").to_pylist() == [e.replace(tzinfo=UTC) for e in expected]
    with pytest.raises(Exception, match=TRUNCATE_OPTION):
        df.write.format("shoal").mode("append").option(TRUNCATE_OPTION, "yes").save(table.path)
    with pytest.raises(Exception, match=TRUNCATE_OPTION):
        write_table(df, table.path, "overwrite")
    assert write_table(df, table.path, "overwrite", timestamp_precision_truncate=True) is None
    assert table.to_arrow().sort_by("id").column("ntz").to_pylist() == expected
    assert [s.commit_kind for s in table.snapshots()] == ["APPEND", "OVERWRITE"]


def test_streaming_write(spark: SparkSession, catalog: shoal.Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("db.stream_times", TABLE)
    options = SourceOptions.parse({"path": table.path, TRUNCATE_OPTION: "true"})
    _, task = plan_task_write(options, spark.createDataFrame([], SPARK_SCHEMA).schema)
    assert task.truncate_timestamps  # the streaming sink plans its tasks the same way
    source = tmp_path / "in"
    source.mkdir()
    pq.write_table(spark_rows(), source / "part-0.parquet")
    stream = spark.readStream.schema(SPARK_SCHEMA).parquet(str(source))
    query = (
        stream.writeStream.format("shoal")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .option(TRUNCATE_OPTION, "true")
        .trigger(availableNow=True)
        .start(table.path)
    )
    query.awaitTermination()
    rows = table.to_arrow().sort_by("id")
    assert rows.column("ntz").to_pylist() == [floored_ms(m) for m in MICROS]
