"""timestamp-precision-truncate floors as Java Paimon (0.9, 1.0) stores a microsecond
timestamp in a TIMESTAMP(3) column: Java writes Paimon Timestamps built from
microseconds (as its Spark writer builds them) into Parquet and Avro files, shoal reads
the table, and the values equal shoal's floor of the same microseconds; the other way
round, Java reads what shoal wrote with the option, in every format.

Not ORC as written by Java: its ORC writer keeps the digits below the millisecond of a
TIMESTAMP(3) value in the file, and reads times before 1970 back shifted (as measured,
1969-12-31 23:59:59.999999 returns as 1970-01-01 00:00:00.999), so it is no oracle of
the stored value there; shoal refuses to read such a file at the column's precision
rather than drop the digits."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from shoal.spark.timestamp_precision import fit_timestamps
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon
from tests.interop.test_java_oracle import comparable

pytestmark = pytest.mark.interop

TABLE = pa.schema(
    [("k", pa.int64()), ("ntz", pa.timestamp("ms")), ("ltz", pa.timestamp("ms", tz="UTC"))]
)
# before and after 1970, with and without digits below the millisecond, and a null
MICROS = [-1, -1000, -1500, -86_400_000_001, 0, 500, 1_793_520_000_123_456, None]
FORMATS = ("parquet", "orc", "avro")
JAVA_FLOORS = ("parquet", "avro")  # the formats whose Java writer floors (above)


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def spark_rows() -> pa.Table:
    """Rows as Spark hands them over: microsecond timestamps."""
    ticks = pa.array(MICROS, pa.int64())
    return pa.table(
        {
            "k": pa.array(range(len(MICROS)), pa.int64()),
            "ntz": ticks.cast(pa.timestamp("us")),
            "ltz": ticks.cast(pa.timestamp("us", tz="UTC")),
        }
    )


def floored() -> pa.Table:
    (batch,) = spark_rows().to_batches()
    return pa.Table.from_batches([fit_timestamps(batch, TABLE, truncate=True)]).cast(TABLE)


def test_shoal_floors_as_java_stores(java: JavaPaimon, tmp_path: Path) -> None:
    ops = []
    for fmt in JAVA_FLOORS:
        ops += [
            jp.create_table(f"db.t_{fmt}", TABLE, options={"file.format": fmt}),
            jp.write(f"db.t_{fmt}", spark_rows()),
        ]
    java.run(tmp_path, ops)
    catalog = shoal.Catalog(str(tmp_path))
    for fmt in JAVA_FLOORS:
        assert comparable(catalog.get_table(f"db.t_{fmt}").to_arrow()) == comparable(floored())


def test_java_reads_what_shoal_floored(java: JavaPaimon, tmp_path: Path) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    for fmt in FORMATS:
        catalog.create_table(f"db.s_{fmt}", TABLE, options={"file.format": fmt}).append(floored())
    (*read,) = java.run(tmp_path, [jp.read(f"db.s_{fmt}") for fmt in FORMATS])
    for rows in read:
        assert comparable(rows) == comparable(floored())


def test_java_orc_digits_below_the_column_are_refused_not_dropped(
    java: JavaPaimon, tmp_path: Path
) -> None:
    java.run(
        tmp_path,
        [
            jp.create_table("db.t_orc", TABLE, options={"file.format": "orc"}),
            jp.write("db.t_orc", spark_rows()),
        ],
    )
    table = shoal.Catalog(str(tmp_path)).get_table("db.t_orc")
    with pytest.raises(shoal.UnsupportedFeatureError, match="finer than its column"):
        table.to_arrow()
