"""The Spark data source's ``mergeSchema`` write option: columns of the data that the
table lacks are added (one schema version) before any task writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import shoal
from tests.conftest import EVENTS_SCHEMA

pytestmark = pytest.mark.spark


def schema_files(table: shoal.Table) -> list[str]:
    return sorted(p.name for p in (Path(table.path) / "schema").iterdir())


def test_merge_schema_adds_the_new_columns_then_writes(
    spark: SparkSession, catalog: shoal.Catalog
) -> None:
    table = catalog.create_table("db.events", EVENTS_SCHEMA, partition_keys=["dt"])
    df = spark.createDataFrame(
        [("2026-11-01", 1, "a", 0.5, "x", 7)],
        "dt string, ID bigint, name string, value double, note string, score int",
    )
    df.write.format("shoal").mode("append").option("mergeSchema", "true").save(table.path)
    reopened = shoal.open_table(table.path)
    assert reopened.schema.names == [*EVENTS_SCHEMA.names, "note", "score"]
    assert schema_files(reopened) == ["schema-0", "schema-1"]
    assert reopened.latest_snapshot().schema_id == 1  # type: ignore[union-attr]
    assert reopened.to_arrow().to_pylist() == [
        {"dt": "2026-11-01", "id": 1, "name": "a", "value": 0.5, "note": "x", "score": 7}
    ]


def test_without_merge_schema_or_with_other_differences_nothing_is_written(
    spark: SparkSession, catalog: shoal.Catalog
) -> None:
    table = catalog.create_table("db.events", EVENTS_SCHEMA, partition_keys=["dt"])
    extra = spark.createDataFrame(
        [("2026-11-01", 1, "a", 0.5, "x")],
        "dt string, id bigint, name string, value double, note string",
    )
    with pytest.raises(Exception, match="SchemaMismatchError"):
        extra.write.format("shoal").mode("append").save(table.path)
    missing = spark.createDataFrame([("2026-11-01", 1, "x")], "dt string, id bigint, note string")
    with pytest.raises(Exception, match="SchemaMismatchError"):
        missing.write.format("shoal").mode("append").option("mergeSchema", "true").save(table.path)
    assert schema_files(table) == ["schema-0"]
    assert table.latest_snapshot() is None
