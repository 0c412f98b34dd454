"""The Spark source and jobs on S3 (moto) configured only by storage options given as
source options / arguments: no AWS variable in the driver or the Python workers, so the
tasks reach the store only through the options that travel with them."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import shoal
import shoal.spark
from shoal.errors import UnknownOptionError
from shoal.spark import jobs
from shoal.spark.source_options import SourceOptions
from shoal.spark.udtfs import register_functions
from tests.io.test_storage_options import SECRET, bucket, no_aws_env, paimon_keys  # noqa: F401
from tests.s3.conftest import s3_endpoint  # noqa: F401

# The variables that would tell the SDKs where the store is and who asks.
CONFIGURING = frozenset(
    {
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
    }
)
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def test_read_write_and_compact_on_s3_through_source_options(
    spark: SparkSession,
    no_aws_env: None,  # noqa: F811
    s3_endpoint: str,  # noqa: F811
    bucket: str,  # noqa: F811
) -> None:
    options = paimon_keys(s3_endpoint)

    # The Python workers see no AWS configuration either (a local function: pickled
    # by value, as the workers cannot import a test module).
    def _worker_aws_variables(_: Iterator[object]) -> Iterator[list[str]]:
        yield sorted(n for n in os.environ if n in CONFIGURING)

    seen = spark.sparkContext.parallelize([0], 1).mapPartitions(_worker_aws_variables).collect()
    assert seen == [[]]
    catalog = shoal.Catalog(f"s3://{bucket}/wh", storage_options=options)
    table = catalog.create_table(
        "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2", "write-only": "true"}
    )
    path = table.path
    frame = spark.createDataFrame([(i, f"v{i}") for i in range(20)], "id long, v string")
    frame.write.format("shoal").mode("append").options(**options).save(path)
    frame.where("id < 5").selectExpr("id", "'new' as v").write.format("shoal").mode(
        "append"
    ).options(**options).save(path)
    read = spark.read.format("shoal").options(**options).load(path)
    rows = {r["id"]: r["v"] for r in read.collect()}
    assert len(rows) == 20
    assert [rows[i] for i in range(6)] == ["new"] * 5 + ["v5"]
    # Jobs: the bucket rewrites and the deletes run in tasks with the driver's FileIO.
    result = jobs.compact(spark, path, storage_options=options)
    assert result is not None
    expired = jobs.expire_snapshots(spark, path, 1, 1, storage_options=options)
    assert expired.expired_snapshots >= 1
    reopened = shoal.open_table(path, storage_options=options)
    assert len(reopened.snapshots()) == 1
    assert reopened.to_arrow().num_rows == 20


def test_storage_keys_in_source_options_are_checked_and_hidden(
    spark: SparkSession,
    bucket: str,  # noqa: F811
) -> None:
    parsed = SourceOptions.parse(
        {"path": f"s3://{bucket}/t", "S3.Secret-Key": SECRET, "lock.file": "/tmp/x"}
    )
    assert parsed.storage_options == {"s3.secret-key": SECRET, "lock.file": "/tmp/x"}
    assert SECRET not in repr(parsed)
    assert parsed.given == (("path", f"s3://{bucket}/t"),)
    with pytest.raises(Exception, match=r"s3\.secret-key") as raised:
        spark.read.format("shoal").option("s3.secret-kee", SECRET).load(f"s3://{bucket}/t").count()
    assert SECRET not in str(raised.value)
    with pytest.raises(UnknownOptionError):
        shoal.open_table(f"s3://{bucket}/t", storage_options={"s3.secret-kee": SECRET})


def test_table_functions_registered_with_storage_options(
    spark: SparkSession,
    no_aws_env: None,  # noqa: F811
    s3_endpoint: str,  # noqa: F811
    bucket: str,  # noqa: F811
) -> None:
    options = paimon_keys(s3_endpoint)
    table = shoal.Catalog(f"s3://{bucket}/wh", storage_options=options).create_table(
        "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"}
    )
    table.upsert(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA))
    table.upsert(pa.table({"id": [4], "v": ["d"]}, schema=SCHEMA))
    path = table.path
    register_functions(spark, storage_options=options)
    try:
        kinds = spark.sql(f"SELECT commit_kind FROM shoal_snapshots('{path}')").collect()
        assert [r.commit_kind for r in kinds] == ["APPEND", "APPEND"]
        (deleted,) = spark.sql(f"SELECT * FROM shoal_delete_where('{path}', 'id = 2')").collect()
        (compacted,) = spark.sql(f"SELECT * FROM shoal_compact('{path}', 'full')").collect()
        assert compacted.compacted_files == 3
    finally:
        register_functions(spark)  # the session's other tests register them plainly
    reopened = shoal.open_table(path, storage_options=options)
    assert sorted(reopened.to_arrow().column("id").to_pylist()) == [1, 3, 4]
    assert reopened.latest_snapshot().commit_kind == "COMPACT"  # type: ignore[union-attr]
    assert deleted[2] == 1


def test_a_merge_from_a_dataframe_into_a_path_with_storage_options(
    spark: SparkSession,
    no_aws_env: None,  # noqa: F811
    s3_endpoint: str,  # noqa: F811
    bucket: str,  # noqa: F811
) -> None:
    options = paimon_keys(s3_endpoint)
    table = shoal.Catalog(f"s3://{bucket}/wh", storage_options=options).create_table("db.m", SCHEMA)
    table.append(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    source = spark.createDataFrame([(2, "B"), (3, "c")], "id long, v string")
    merged = shoal.spark.merge(source, table.path, on=["id"], storage_options=options)
    merged.when_matched_update().when_not_matched_insert().execute()
    rows = shoal.open_table(table.path, storage_options=options).to_arrow().sort_by("id")
    assert rows.to_pydict() == {"id": [1, 2, 3], "v": ["a", "B", "c"]}
    with pytest.raises(shoal.InvalidArgumentError, match="path only"):
        shoal.spark.merge(source, table, on=["id"], storage_options=options)
