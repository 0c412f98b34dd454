"""ORC and Avro data files: every type round-trips as Parquet does, statistics do not
depend on the format, files are read by their names' extension, and formats mix
across levels."""

from __future__ import annotations

import json
from datetime import datetime, time
from decimal import Decimal
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pyarrow.parquet as pq
import pytest

import shoal
from shoal.errors import InvalidOptionError, UnsupportedFeatureError
from shoal.format import data_formats, orc
from tests.conftest import ALL_TYPES, all_types_rows, sorted_rows

FORMATS = ("parquet", "orc", "avro")

# Types beyond ALL_TYPES: TIME, CHAR/VARCHAR lengths, TIMESTAMP(0), maps with
# non-string keys, nested decimals and timestamps, NOT NULL columns.
EXTRA = pa.schema(
    [
        pa.field("k", pa.int32(), nullable=False),
        ("t", pa.time32("ms")),
        ("ts0", pa.timestamp("s")),
        ("ltz3", pa.timestamp("ms", tz="UTC")),
        ("im", pa.map_(pa.int32(), pa.decimal128(5, 1))),
        ("nested", pa.list_(pa.struct([("d", pa.decimal128(20, 3)), ("ts", pa.timestamp("us"))]))),
        pa.field("req", pa.string(), nullable=False),
        ("f", pa.float64()),
    ]
)


def _extra_rows(n: int) -> pa.Table:
    return pa.table(
        {
            "k": pa.array(range(n), pa.int32()),
            "t": pa.array(
                [time(1, 2, 3, 4000 * i) if i % 3 else None for i in range(n)], pa.time32("ms")
            ),
            "ts0": pa.array([datetime(2020, 1, 1, 0, 0, i) for i in range(n)], pa.timestamp("s")),
            "ltz3": pa.array(
                [datetime(1960, 5, 1, 0, 0, 0, 1000 * i) for i in range(n)],
                pa.timestamp("ms", tz="UTC"),
            ),
            "im": pa.array(
                [[(i, Decimal(i) / 10), (-i - 1, None)] for i in range(n)],
                pa.map_(pa.int32(), pa.decimal128(5, 1)),
            ),
            "nested": [
                [{"d": Decimal(-i) / 1000, "ts": datetime(2001, 1, 1, 0, 0, 0, i)}, None]
                for i in range(n)
            ],
            "req": [f"r{i}" for i in range(n)],
            "f": [float("-inf") if i == 1 else i * 1.5 for i in range(n)],
        },
        schema=EXTRA,
    )


def _file_names(table: shoal.Table) -> list[str]:
    return sorted(table.system_table("files")["file_path"].to_pylist())


def _stats(table: shoal.Table) -> list[list[dict[str, object]]]:
    """Each file's bounds and null counts (Parquet's footer gives -0.0 for a float
    minimum of 0, which compares equal)."""
    files = table.system_table("files").sort_by("level")
    columns = ("min_value_stats", "max_value_stats", "null_value_counts")
    return [[json.loads(files[c][i].as_py()) for c in columns] for i in range(files.num_rows)]


@pytest.mark.parametrize("fmt", ["orc", "avro"])
@pytest.mark.parametrize(
    ("schema", "rows"),
    [
        (ALL_TYPES, all_types_rows(12)),
        (EXTRA, _extra_rows(9)),
    ],
    ids=["all_types", "extra"],
)
def test_append_round_trip_and_stats_match_parquet(
    catalog: shoal.Catalog, fmt: str, schema: pa.Schema, rows: pa.Table
) -> None:
    """Rows read back equal, in the same Arrow types as from Parquet, and the files'
    statistics are those of the same rows in Parquet."""
    tables = {}
    for name in ("parquet", fmt):
        tables[name] = catalog.create_table(
            f"db.{name}", schema, options={"file.format": name, "metadata.stats-mode": "full"}
        )
        tables[name].append(rows)
    assert all(p.endswith(f".{fmt}") for p in _file_names(tables[fmt]))
    read = tables[fmt].to_arrow()
    assert read.schema == tables["parquet"].to_arrow().schema == schema
    assert sorted_rows(read, "k") == sorted_rows(rows, "k")
    assert _stats(tables[fmt]) == _stats(tables["parquet"])


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_primary_key_upsert_delete_compact(catalog: shoal.Catalog, fmt: str) -> None:
    table = catalog.create_table(
        "db.pk", ALL_TYPES, primary_keys=["k"], options={"file.format": fmt, "bucket": "2"}
    )
    rows = all_types_rows(16)
    table.upsert(rows.slice(0, 10))
    table.upsert(rows.slice(6, 10))
    table.delete(rows.select(["k"]).slice(0, 3))
    expect = sorted_rows(rows.slice(3), "k")
    assert sorted_rows(table.to_arrow(), "k") == expect
    assert sorted_rows(table.to_arrow(filter=[("k", ">=", 12)]), "k") == expect[9:]
    table.compact("full")
    assert all(p.endswith(f".{fmt}") for p in _file_names(table))
    assert sorted_rows(table.to_arrow(), "k") == expect
    assert table.to_arrow().schema == ALL_TYPES


def test_formats_per_level_mix_in_one_bucket(catalog: shoal.Catalog) -> None:
    """Level 0 is written in Avro, the top level in Parquet; reads merge both, and a
    compaction of Avro inputs writes Parquet."""
    table = catalog.create_table(
        "db.pk",
        ALL_TYPES,
        primary_keys=["k"],
        options={"file.format": "orc", "file.format.per.level": "0:avro,5:parquet", "bucket": "1"},
    )
    rows = all_types_rows(20)
    table.upsert(rows.slice(0, 12))
    assert {Path(p).suffix for p in _file_names(table)} == {".avro"}
    table.compact("full")
    assert {Path(p).suffix for p in _file_names(table)} == {".parquet"}
    table.upsert(rows.slice(8))
    assert {Path(p).suffix for p in _file_names(table)} == {".avro", ".parquet"}
    assert sorted_rows(table.to_arrow(), "k") == sorted_rows(rows, "k")
    table.compact("full")
    assert {Path(p).suffix for p in _file_names(table)} == {".parquet"}
    assert sorted_rows(table.to_arrow(), "k") == sorted_rows(rows, "k")


def test_a_file_is_read_by_its_extension_not_the_options(catalog: shoal.Catalog) -> None:
    """A table whose format changed holds files of both; each reads by its own name."""
    table = catalog.create_table("db.t", ALL_TYPES, options={"file.format": "orc"})
    rows = all_types_rows(20)
    table.append(rows.slice(0, 10))
    with table.update_schema() as update:
        update.set_option("file.format", "avro")
        update.add_column("extra", pa.int64())
    table = catalog.get_table("db.t")
    table.append(rows.slice(10).append_column("extra", pa.array(range(10), pa.int64())))
    assert {Path(p).suffix for p in _file_names(table)} == {".orc", ".avro"}
    read = table.to_arrow()
    assert sorted_rows(read.drop_columns(["extra"]), "k") == sorted_rows(rows, "k")
    assert read.filter(pc.field("k") < 10)["extra"].null_count == 10


def test_written_files_are_paimons_layout(catalog: shoal.Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.o", EXTRA, options={"file.format": "orc"})
    table.append(_extra_rows(3))
    table = catalog.create_table("db.a", EXTRA, options={"file.format": "avro"})
    table.append(_extra_rows(3))
    orc_file = next(Path(warehouse).glob("db.db/o/bucket-0/*.orc"))
    schema = po.ORCFile(str(orc_file)).schema
    assert schema.field("t").type == pa.int32()  # TIME as milliseconds of the day
    assert schema.field("ltz3").type == pa.timestamp("ns", tz="UTC")
    avro_file = next(Path(warehouse).glob("db.db/a/bucket-0/*.avro"))
    with avro_file.open("rb") as f:
        reader = fastavro.reader(f)
        written = reader.writer_schema
        assert reader.codec == "zstandard"
    assert written[0] == "null"
    assert written[1]["name"] == "org.apache.paimon.avro.generated.record"
    fields = {f["name"]: f["type"] for f in written[1]["fields"]}
    assert fields["req"] == "string"
    assert fields["ts0"] == ["null", {"type": "long", "logicalType": "timestamp-millis"}]
    assert fields["ltz3"] == ["null", {"type": "long", "logicalType": "local-timestamp-millis"}]
    assert fields["im"][1]["logicalType"] == "map"
    assert fields["t"] == ["null", {"type": "int", "logicalType": "time-millis"}]


@pytest.mark.parametrize(
    ("fmt", "column"),
    [
        ("avro", pa.timestamp("ns")),
        ("avro", pa.timestamp("ns", tz="UTC")),
        ("orc", pa.binary(4)),
    ],
)
def test_types_a_format_cannot_hold_are_refused(
    catalog: shoal.Catalog, fmt: str, column: pa.DataType
) -> None:
    schema = pa.schema([("k", pa.int32()), ("v", column)])
    table = catalog.create_table("db.t", schema, options={"file.format": fmt})
    with pytest.raises(UnsupportedFeatureError) as info:
        table.append(pa.table({"k": [1], "v": pa.array([None], column)}, schema=schema))
    assert info.value.feature == "file.format"
    assert table.latest_snapshot() is None


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"file.format": "lance"}, UnsupportedFeatureError),
        ({"file.format": "csv"}, UnsupportedFeatureError),
        ({"file.format.per.level": "0:json"}, UnsupportedFeatureError),
        ({"file.format.per.level": "x:orc"}, InvalidOptionError),
        ({"file.format": "orc", "file.compression": "brotli"}, None),
    ],
)
def test_other_formats_are_refused(
    catalog: shoal.Catalog, options: dict[str, str], error: type[Exception] | None
) -> None:
    if error is not None:
        with pytest.raises(error):
            catalog.create_table("db.t", ALL_TYPES, options=options)
        return
    table = catalog.create_table("db.t", ALL_TYPES, options=options)
    with pytest.raises(InvalidOptionError) as info:
        table.append(all_types_rows(2))
    assert info.value.key == "file.compression"


def test_format_by_name_and_extension() -> None:
    assert data_formats.format_of("data-x-0.orc").name == "orc"  # type: ignore[union-attr]
    assert data_formats.format_of("data-x-0.zstd.avro").name == "avro"  # type: ignore[union-attr]
    assert data_formats.format_of("data-x-0.lance") is None
    assert data_formats.format_for_level("orc", "0:avro, 5:parquet", 5).name == "parquet"
    assert data_formats.format_for_level("orc", "0:avro,5:parquet", 3).name == "orc"


def test_an_orc_timestamp_finer_than_its_column_is_refused_not_dropped() -> None:
    """Java Paimon's ORC writer keeps Spark's microseconds in a TIMESTAMP(3) column."""
    stored = pa.table({"ts": pa.array([1_000_123_000, 2_000_000_000], pa.timestamp("ns"))})
    with pytest.raises(UnsupportedFeatureError, match="TIMESTAMP\\(6\\)"):
        orc.as_table_types(stored, pa.schema([("ts", pa.timestamp("ms"))]))
    widened = orc.as_table_types(stored, pa.schema([("ts", pa.timestamp("us"))]))
    assert widened["ts"].cast(pa.int64()).to_pylist() == [1_000_123, 2_000_000]


def test_parquet_columns_repeating_their_values_are_dictionary_encoded(
    catalog: shoal.Catalog,
) -> None:
    """A column whose values repeat is dictionary encoded, one of unique values plain
    (as Java's writer falls back when a dictionary saves nothing); the rows are the same."""
    table = catalog.create_table(
        "db.enc",
        pa.schema([("id", pa.int64()), ("day", pa.string()), ("tags", pa.list_(pa.int8()))]),
    )
    rows = pa.table(
        {
            "id": range(20_000),
            "day": [f"2026-11-{d % 3 + 1:02d}" for d in range(20_000)],
            "tags": [[1]] * 20_000,
        }
    )
    plain = pa.table({"id": rows["id"], "day": [f"d{i}" for i in range(20_000)]})
    assert data_formats.dictionary_columns(rows) is True  # nested: every leaf, as pyarrow does
    assert data_formats.dictionary_columns(plain) == []
    assert data_formats.dictionary_columns(rows.drop_columns(["tags"])) == ["day"]

    flat = catalog.create_table("db.flat", pa.schema([("id", pa.int64()), ("day", pa.string())]))
    flat.append(rows.drop_columns(["tags"]))
    (path,) = Path(flat.path).rglob("*.parquet")
    chunk = pq.ParquetFile(path).metadata.row_group(0)
    encodings = {chunk.column(i).path_in_schema: chunk.column(i).encodings for i in range(2)}
    assert "RLE_DICTIONARY" in encodings["day"]
    assert "RLE_DICTIONARY" not in encodings["id"]
    assert flat.to_arrow().sort_by("id").equals(rows.drop_columns(["tags"]))
    table.append(rows)
    assert table.to_arrow().sort_by("id").to_pylist() == rows.to_pylist()
