"""Catalog tables of the shoal format: each form of CREATE TABLE / saveAsTable either
makes a table that works or fails before the catalog holds it, except where Spark
calls no shoal code (those are pinned here as measured)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import shoal
from shoal.spark import register_table

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


@pytest.fixture
def table(catalog: shoal.Catalog) -> shoal.Table:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(pa.table({"id": [1], "s": ["a"]}, schema=SCHEMA))
    return t


def exists(spark: SparkSession, name: str) -> bool:
    return spark.catalog.tableExists(name)


def test_create_table_without_columns_is_refused_at_create(
    spark: SparkSession, table: shoal.Table, tmp_path: Path
) -> None:
    statements = {
        "c_options": f"CREATE TABLE c_options USING shoal OPTIONS (path '{table.path}')",
        "c_location": f"CREATE TABLE c_location USING shoal LOCATION '{table.path}'",
        "c_absent": f"CREATE TABLE c_absent USING shoal OPTIONS (path '{tmp_path}/none')",
    }
    for name, sql in statements.items():
        with pytest.raises(Exception, match="register_table") as info:
            spark.sql(sql)
        assert "UnsupportedFeatureError" in str(info.value)
        assert not exists(spark, name)
    assert table.to_arrow().num_rows == 1


def test_ctas_fails_before_the_catalog_holds_the_table(
    spark: SparkSession, table: shoal.Table
) -> None:
    with pytest.raises(Exception, match="register_table"):
        spark.sql(
            f"CREATE TABLE ctas USING shoal OPTIONS (path '{table.path}') "
            "AS SELECT 2L AS id, 'b' AS s"
        )
    assert not exists(spark, "ctas")
    df = spark.createDataFrame([(2, "b")], "id bigint, s string")
    with pytest.raises(Exception, match="register_table"):
        df.write.format("shoal").saveAsTable("sat_no_path")
    assert not exists(spark, "sat_no_path")
    assert table.to_arrow().num_rows == 1


def test_forms_spark_gives_no_callback_for_fail_at_the_first_query_naming_the_way(
    spark: SparkSession, table: shoal.Table
) -> None:
    # A column list: Spark creates the entry without calling the source.
    spark.sql(
        f"CREATE TABLE with_columns (id bigint, s string) USING shoal OPTIONS (path '{table.path}')"
    )
    # saveAsTable with a path: the write reaches the table (the writer cannot tell it
    # from save(path)), then Spark records an entry it hands no options.
    df = spark.createDataFrame([(2, "b")], "id bigint, s string")
    df.write.format("shoal").option("path", table.path).saveAsTable("sat_path")
    assert table.to_arrow().num_rows == 2
    try:
        for name in ("with_columns", "sat_path"):
            with pytest.raises(Exception, match="register_table"):
                spark.sql(f"SELECT * FROM {name}").collect()
            with pytest.raises(Exception, match="register_table"):
                spark.sql(f"INSERT INTO {name} VALUES (3, 'c')")
    finally:
        spark.sql("DROP TABLE IF EXISTS with_columns")
        spark.sql("DROP TABLE IF EXISTS sat_path")
    assert table.to_arrow().num_rows == 2


def test_register_table_and_temporary_views_still_work(
    spark: SparkSession, table: shoal.Table
) -> None:
    register_table(spark, "bound_t", table.path)
    try:
        spark.sql("INSERT INTO bound_t VALUES (2, 'b')")
        assert spark.sql("SELECT count(*) AS n FROM bound_t").first()["n"] == 2  # type: ignore[index]
    finally:
        spark.sql("DROP TABLE IF EXISTS bound_t")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW view_t USING shoal OPTIONS (path '{table.path}')")
    assert spark.sql("SELECT count(*) AS n FROM view_t").first()["n"] == 2  # type: ignore[index]
