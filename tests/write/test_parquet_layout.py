"""shoal's own files in Paimon's Parquet layout (``shoal.format.parquet``), read back
exactly, and files of the layout shoal wrote before (decimals as fixed-length arrays,
nanosecond timestamps as INT64) still read exactly."""

from __future__ import annotations

from datetime import UTC, datetime, time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import shoal

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int32(), nullable=False),
        ("ts0", pa.timestamp("s")),
        ("ts3", pa.timestamp("ms")),
        ("ts6", pa.timestamp("us")),
        ("ts9", pa.timestamp("ns")),
        ("ltz0", pa.timestamp("s", tz="UTC")),
        ("ltz9", pa.timestamp("ns", tz="UTC")),
        ("tm", pa.time32("ms")),
        ("dec9", pa.decimal128(9, 2)),
        ("dec18", pa.decimal128(18, 4)),
        ("nested", pa.list_(pa.struct([("t", pa.timestamp("s")), ("n", pa.timestamp("ns"))]))),
    ]
)


def rows() -> pa.Table:
    return pa.table(
        {
            "k": [0, 1, 2],
            "ts0": [datetime(1900, 1, 1), datetime(2026, 11, 26, 12, 30, 1), None],
            "ts3": [datetime(1969, 12, 31, 23, 59, 59, 999000), datetime(2026, 1, 1), None],
            "ts6": [datetime(1960, 5, 4, 3, 2, 1, 7), datetime(9999, 12, 31), None],
            "ts9": pa.array([-1, 1_700_000_000_123_456_789, None], pa.int64()),
            "ltz0": [datetime(1970, 1, 1, tzinfo=UTC), datetime(2000, 2, 29, tzinfo=UTC), None],
            "ltz9": pa.array([5, -5_000_000_001, None], pa.int64()),
            "tm": [time(0, 0, 0), time(23, 59, 59, 999000), None],
            "dec9": [Decimal("9999999.99"), Decimal("-0.01"), None],
            "dec18": [Decimal("99999999999999.9999"), Decimal("-1.0000"), None],
            "nested": [[{"t": datetime(1950, 1, 1, 0, 0, 1), "n": 7}], [None], None],
        },
        schema=pa.schema(
            [f.with_type(pa.int64()) if f.name in ("ts9", "ltz9") else f for f in SCHEMA]
        ),
    ).cast(SCHEMA)


def data_files(table: shoal.Table) -> list[Path]:
    return sorted(Path(table.path).glob("bucket-*/*.parquet"))


def test_a_file_with_int96_columns_reads_back_exactly(tmp_path: Path) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    for name, keys in (("append", []), ("pk", ["k"])):
        options = {"bucket": "1"} if keys else {}
        table = catalog.create_table(f"db.{name}", SCHEMA, primary_keys=keys, options=options)
        (table.upsert if keys else table.append)(rows())
        assert table.to_arrow().sort_by("k").equals(rows())
        stored = pq.read_schema(data_files(table)[0])
        # INT96 columns beside timestamps stored as INT64 in Paimon's units.
        assert stored.field("ts9").type == pa.timestamp("ns")
        assert stored.field("ts0").type == pa.int64()
        assert stored.field("dec9").type == pa.decimal128(9, 2)


def test_files_of_the_earlier_layout_still_read_exactly(tmp_path: Path) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    table = catalog.create_table("db.t", SCHEMA)
    table.append(rows())
    (path,) = data_files(table)
    size = path.stat().st_size
    # The layout shoal wrote before: fixed-length decimals, annotated INT64 nanoseconds.
    pq.write_table(rows(), path, compression="zstd")
    assert pq.ParquetFile(path).schema_arrow.field("ts9").type == pa.timestamp("ns")
    assert pq.ParquetFile(path).metadata.schema.column(8).physical_type == "FIXED_LEN_BYTE_ARRAY"
    assert path.stat().st_size != size  # the metadata's size is not used for reading
    assert table.to_arrow().sort_by("k").equals(rows())
