"""The shoal data source writes primary-key tables with deletion vectors, and the
distributed jobs compact and clean them: the rows equal those of the same writes to a
table without vectors (merge-on-read), read by shoal and by the data source."""

from __future__ import annotations

from datetime import datetime, timedelta

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import shoal
from shoal.core import deletion_vectors as DVS
from shoal.spark import jobs
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows

pytestmark = pytest.mark.spark


def _write(spark: SparkSession, data: pa.Table, path: str) -> None:
    frame = spark.createDataFrame(data.to_pandas()).repartition(3)
    frame.write.format("shoal").mode("append").save(path)


def _spark_rows(spark: SparkSession, path: str) -> list[dict[str, object]]:
    read = pa.Table.from_pandas(spark.read.format("shoal").load(path).toPandas())
    return sorted_rows(read.select(EVENTS_SCHEMA.names), "dt", "id")


@pytest.mark.parametrize(
    "buckets",
    [{"bucket": "2"}, {"dynamic-bucket.target-row-num": "6"}],
    ids=["fixed", "dynamic"],
)
def test_spark_writes_and_compacts_tables_with_deletion_vectors(
    spark: SparkSession, catalog: shoal.Catalog, buckets: dict[str, str]
) -> None:
    def create(name: str, options: dict[str, str]) -> shoal.Table:
        return catalog.create_table(
            f"db.{name}",
            EVENTS_SCHEMA,
            partition_keys=["dt"],
            primary_keys=["dt", "id"],
            options={**buckets, **options},
        )

    dv = create("dv", {"deletion-vectors.enabled": "true"})
    merge = create("merge", {})
    writes = [
        pa.concat_tables([events(range(20), "d1"), events(range(6), "d2")]),
        events(range(5, 15), "d1").set_column(2, "name", pa.array(["second"] * 10)),
        events([1, 3, 21], "d2").set_column(2, "name", pa.array(["third"] * 3)),
    ]
    for data in writes:
        for table in (dv, merge):
            _write(spark, data, table.path)
    dv.delete(events([0, 7], "d1"))
    merge.delete(events([0, 7], "d1"))
    expected = sorted_rows(merge.to_arrow(), "dt", "id")
    assert len(expected) == 20 - 2 + 7
    assert sorted_rows(shoal.open_table(dv.path).to_arrow(), "dt", "id") == expected
    assert _spark_rows(spark, dv.path) == expected
    dv = shoal.open_table(dv.path)
    assert DVS.deletion_files(dv._store, dv.latest_snapshot())  # rows really masked

    # write-only writes wait in level 0 until the distributed compaction lifts them
    with dv.update_schema() as update:
        update.set_option("write-only", "true")
    late = events([2, 30], "d1").set_column(2, "name", pa.array(["late"] * 2))
    _write(spark, late, dv.path)
    merge.upsert(late)
    assert _spark_rows(spark, dv.path) == expected  # not visible yet
    result = jobs.compact(spark, dv.path, "universal")
    assert result.snapshot is not None
    expected = sorted_rows(merge.to_arrow(), "dt", "id")
    assert _spark_rows(spark, dv.path) == expected

    result = jobs.compact(spark, dv.path, "full")
    assert result.snapshot is not None
    dv = shoal.open_table(dv.path)
    assert not DVS.deletion_files(dv._store, dv.latest_snapshot())
    assert sorted_rows(dv.to_arrow(), "dt", "id") == expected

    later = datetime.now() + timedelta(seconds=1)
    jobs.expire_snapshots(spark, dv.path, retain_max=1, older_than=later)
    jobs.remove_orphan_files(spark, dv.path, older_than=datetime.now())
    assert _spark_rows(spark, dv.path) == expected
