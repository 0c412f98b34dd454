"""The shoal data source writes dynamic-bucket tables: the tasks' rows are written by
the commit as one write, so each key gets its bucket from one hash index."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import SparkSession

import shoal
from shoal.spark.datasource import prepare_for_write
from shoal.write.bucket_index import hash_entries
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows


def test_spark_writes_dynamic_bucket_tables(spark: SparkSession, catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.dyn",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"dynamic-bucket.target-row-num": "4", "write-only": "true"},
    )
    first = pa.concat_tables([events(range(10), "d1"), events(range(3), "d2")])
    spark.createDataFrame(first.to_pandas()).repartition(3).write.format("shoal").mode(
        "append"
    ).save(table.path)
    second = events(range(5, 14), "d1")
    frame = prepare_for_write(spark.createDataFrame(second.to_pandas()), table.path)
    frame.write.format("shoal").mode("append").save(table.path)
    rows = {(r["dt"], r["id"]): r for r in first.to_pylist()}
    rows.update({(r["dt"], r["id"]): r for r in second.to_pylist()})
    expected = pa.Table.from_pylist(list(rows.values()), schema=EVENTS_SCHEMA)
    assert sorted_rows(table.to_arrow(), "dt", "id") == sorted_rows(expected, "dt", "id")
    store = table._store
    counts = {
        (store.partitions.path(e.partition), e.bucket): e.index_file.row_count
        for e in hash_entries(store, table.latest_snapshot())
    }
    assert counts == {
        ("dt=d1", 0): 4,
        ("dt=d1", 1): 4,
        ("dt=d1", 2): 4,
        ("dt=d1", 3): 2,
        ("dt=d2", 0): 3,
    }
    spark.createDataFrame(events([1], "d2").to_pandas()).write.format("shoal").mode(
        "overwrite"
    ).option("partitionOverwriteMode", "dynamic").save(table.path)
    assert sorted(table.to_arrow().column("dt").to_pylist()).count("d2") == 1
    assert table.to_arrow().num_rows == 15
