"""Spark reads of a table whose schema changed: files of the old schema read by field id."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import shoal
from shoal.format import types as T

pytestmark = pytest.mark.spark


def test_spark_reads_old_files_by_field_id(spark: SparkSession, tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int32(), False), ("name", pa.string())])
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", schema)
    table.append(pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["a", "b"]}))
    store = table._store
    old = store.schema
    id_field, name_field = old.fields
    new = dataclasses.replace(
        old,
        id=1,
        fields=(
            T.DataField(old.highest_field_id + 1, "score", T.parse_type("DOUBLE")),
            dataclasses.replace(id_field, type=T.parse_type("BIGINT NOT NULL")),
            dataclasses.replace(name_field, name="title"),
        ),
        highest_field_id=old.highest_field_id + 1,
    )
    assert store.schemas.try_create(new)
    table = shoal.open_table(table.path)
    table.append(pa.table({"score": [3.5], "id": [3], "title": ["c"]}, schema=table.schema))

    df = spark.read.format("shoal").load(table.path)
    assert df.columns == ["score", "id", "title"]
    got = sorted((tuple(r) for r in df.collect()), key=lambda r: r[1])
    assert got == [(None, 1, "a"), (None, 2, "b"), (3.5, 3, "c")]
    assert [tuple(r) for r in df.filter("title = 'b'").select("id").collect()] == [(2,)]
    assert df.filter("score is null").count() == 2
    before = spark.read.format("shoal").option("scan.snapshot-id", "1").load(table.path)
    assert before.columns == ["id", "name"]
    assert sorted(tuple(r) for r in before.collect()) == [(1, "a"), (2, "b")]
