"""Files written under an older schema read by field id, nested fields included.

Each test writes with shoal, puts a new schema version beside the old one (as a schema
change does), writes again, and reads both versions' files as rows of the new schema.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shoal
from shoal.errors import UnsupportedFeatureError
from shoal.format import types as T
from shoal.format.schema import TableSchema

NESTED = pa.schema(
    [
        pa.field("id", pa.int64(), False),
        ("info", pa.struct([("x", pa.int32()), ("y", pa.string()), ("z", pa.string())])),
        ("items", pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]))),
        ("tags", pa.map_(pa.string(), pa.struct([("v", pa.float32())]))),
        ("n", pa.int32()),
    ]
)


def evolve(table: shoal.Table, fields: list[T.DataField]) -> shoal.Table:
    """The table with a new schema version holding ``fields``; returned reopened."""
    store = table._store
    old = store.schema
    new = dataclasses.replace(
        old,
        id=old.id + 1,
        fields=tuple(fields),
        highest_field_id=max(old.highest_field_id, T.highest_field_id(fields)),
    )
    assert store.schemas.try_create(new)
    return shoal.open_table(table.path)


def field(schema: TableSchema, name: str) -> T.DataField:
    return schema.field(name)


def row_type(f: T.DataField) -> T.RowType:
    assert isinstance(f.type, T.RowType)
    return f.type


def test_nested_fields_are_matched_by_id(tmp_path: Path) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    table = catalog.create_table("db.t", NESTED)
    table.append(
        pa.table(
            {
                "id": [1, 2],
                "info": [{"x": 1, "y": "a", "z": "gone"}, None],
                "items": [[{"a": 1, "b": "p"}, None], None],
                "tags": [[("k", {"v": 1.5})], [("j", None)]],
                "n": pa.array([10, None], pa.int32()),
            },
            schema=NESTED,
        )
    )
    schema = table._store.schema
    info, items, tags, n = (field(schema, c) for c in ("info", "items", "tags", "n"))
    x, y, _z = row_type(info).fields
    assert isinstance(items.type, T.ArrayType)
    assert isinstance(items.type.element, T.RowType)
    a, b = items.type.element.fields
    assert isinstance(tags.type, T.MapType)
    assert isinstance(tags.type.value, T.RowType)
    (v,) = tags.type.value.fields
    next_id = schema.highest_field_id + 1
    bigint, double = T.parse_type("BIGINT"), T.parse_type("DOUBLE")
    new_fields = [
        T.DataField(next_id, "added", T.parse_type("STRING")),  # first: a reorder
        field(schema, "id"),
        T.DataField(
            info.id,
            "information",  # renamed
            T.RowType(
                (
                    T.DataField(next_id + 1, "w", T.parse_type("INT")),  # added, nested
                    dataclasses.replace(y, name="yy"),  # renamed, moved
                    dataclasses.replace(x, type=bigint),  # widened; z dropped
                )
            ),
        ),
        T.DataField(
            items.id,
            "items",
            T.ArrayType(T.RowType((dataclasses.replace(a, type=bigint), b))),
        ),
        T.DataField(
            tags.id,
            "tags",
            T.MapType(T.parse_type("STRING"), T.RowType((dataclasses.replace(v, type=double),))),
        ),
        dataclasses.replace(n, type=T.parse_type("DECIMAL(12, 2)")),
    ]
    table = evolve(table, new_fields)
    table.append(
        pa.table(
            {
                "added": ["new"],
                "id": [3],
                "information": [{"w": 7, "yy": "c", "x": 2**40}],
                "items": [[{"a": 2**40, "b": "q"}]],
                "tags": [[("m", {"v": 0.1})]],
                "n": pa.array([None], pa.decimal128(12, 2)),
            },
            schema=table.schema,
        )
    )
    got = table.to_arrow().sort_by("id")
    assert got.schema == table.schema
    assert got.to_pylist() == [
        {
            "added": None,
            "id": 1,
            "information": {"w": None, "yy": "a", "x": 1},
            "items": [{"a": 1, "b": "p"}, None],
            "tags": [("k", {"v": 1.5})],
            "n": 10,
        },
        {
            "added": None,
            "id": 2,
            "information": None,
            "items": None,
            "tags": [("j", None)],
            "n": None,
        },
        {
            "added": "new",
            "id": 3,
            "information": {"w": 7, "yy": "c", "x": 2**40},
            "items": [{"a": 2**40, "b": "q"}],
            "tags": [("m", {"v": 0.1})],
            "n": None,
        },
    ]
    assert table.to_arrow(filter=[("n", "=", 10)]).column("id").to_pylist() == [1]
    assert table.to_arrow(columns=["added"], filter=[("added", "=", None)]).num_rows == 2
    # Incremental reads return rows of the table's schema.
    assert table.incremental(0, 1).column("information").to_pylist() == [
        {"w": None, "yy": "a", "x": 1},
        None,
    ]
    assert table.incremental(1, 2).column("id").to_pylist() == [3]
    # The old schema's snapshot reads with the old schema's columns.
    first = table.to_arrow(snapshot_id=1)
    assert first.schema == NESTED
    assert first.column("id").to_pylist() == [1, 2]


def test_files_table_shows_old_statistics_under_the_new_names(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int32(), False), ("name", pa.string())])
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", schema)
    table.append(pa.table({"id": pa.array([1, 5], pa.int32()), "name": ["a", "b"]}))
    old = table._store.schema
    id_field, name_field = old.fields
    table = evolve(
        table,
        [
            dataclasses.replace(id_field, type=T.parse_type("BIGINT NOT NULL")),
            dataclasses.replace(name_field, name="title"),
            T.DataField(old.highest_field_id + 1, "extra", T.parse_type("DOUBLE")),
        ],
    )
    files = table.system_table("files").to_pylist()
    assert len(files) == 1
    (f,) = files
    assert f["schema_id"] == 0
    assert f["min_value_stats"] == '{"id": 1, "title": "a", "extra": null}'
    assert f["max_value_stats"] == '{"id": 5, "title": "b", "extra": null}'
    assert f["null_value_counts"] == '{"id": 0, "title": 0, "extra": 2}'
    assert table.to_arrow(filter=[("extra", "=", 1.0)]).num_rows == 0
    assert table.to_arrow(filter=[("id", ">", 4)]).to_pylist() == [
        {"id": 5, "title": "b", "extra": None}
    ]


@pytest.mark.parametrize(
    ("old", "new", "value"),
    [
        (pa.int64(), "INT", 1),
        (pa.float64(), "FLOAT", 1.5),
        (pa.string(), "INT", "1"),
        (pa.decimal128(10, 4), "DECIMAL(10, 2)", None),
    ],
)
def test_type_changes_read_inexactly_are_refused(
    tmp_path: Path, old: pa.DataType, new: str, value: Any
) -> None:
    schema = pa.schema([pa.field("id", pa.int32(), False), ("c", old)])
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", schema)
    table.append(pa.table({"id": pa.array([1], pa.int32()), "c": pa.array([value], old)}))
    id_field, c = table._store.schema.fields
    table = evolve(table, [id_field, dataclasses.replace(c, type=T.parse_type(new))])
    with pytest.raises(UnsupportedFeatureError, match="changed type") as caught:
        table.to_arrow()
    assert caught.value.feature == "column type change"
    # The snapshot from before the change reads with its own schema.
    assert table.to_arrow(snapshot_id=1).num_rows == 1


def test_primary_key_change_is_refused(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int32(), False), ("v", pa.string())])
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t", schema, primary_keys=["id"], options={"bucket": "1"}
    )
    table.upsert(pa.table({"id": pa.array([1], pa.int32()), "v": ["a"]}))
    id_field, v = table._store.schema.fields
    table = evolve(table, [dataclasses.replace(id_field, type=T.parse_type("STRING")), v])
    with pytest.raises(UnsupportedFeatureError):
        table.to_arrow()
