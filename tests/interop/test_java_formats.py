"""ORC and Avro data files between shoal and Java Paimon (0.9 and 1.0): every type
shoal maps, both ways, on append and primary-key tables; formats mixed by level; and
a table whose options name no format while it holds ORC files (Paimon's default up to
0.8), read by each file's name."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from tests.conftest import ALL_TYPES, all_types_rows
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon
from tests.interop.test_java_oracle import comparable

pytestmark = pytest.mark.interop

FORMATS = ("orc", "avro")


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def _suffixes(warehouse: Path, table: str) -> set[str]:
    return {p.suffix for p in warehouse.glob(f"db.db/{table}/bucket-*/data-*")}


def _live_suffixes(table: shoal.Table) -> set[str]:
    return {Path(p).suffix for p in table.system_table("files")["file_path"].to_pylist()}


def test_shoal_reads_what_java_writes(java: JavaPaimon, tmp_path: Path) -> None:
    rows = all_types_rows(12)
    ops = []
    for fmt in FORMATS:
        ops += [
            jp.create_table(f"db.a_{fmt}", ALL_TYPES, options={"file.format": fmt}),
            jp.write(f"db.a_{fmt}", rows.slice(0, 6)),
            jp.write(f"db.a_{fmt}", rows.slice(6)),
            jp.create_table(
                f"db.pk_{fmt}", ALL_TYPES, primary_keys=["k"],
                options={"file.format": fmt, "bucket": "2"},
            ),
            jp.write(f"db.pk_{fmt}", rows.slice(0, 8)),
            jp.write(f"db.pk_{fmt}", rows.slice(6), kind=["DELETE"] * 2 + ["INSERT"] * 4),
        ]
    java.run(tmp_path, ops)
    catalog = shoal.Catalog(str(tmp_path))
    keep = pa.array([k not in (6, 7) for k in range(12)])
    for fmt in FORMATS:
        assert _suffixes(tmp_path, f"a_{fmt}") == {f".{fmt}"}
        append = catalog.get_table(f"db.a_{fmt}").to_arrow()
        assert append.schema == ALL_TYPES
        assert comparable(append) == comparable(rows)
        pk = catalog.get_table(f"db.pk_{fmt}")
        assert comparable(pk.to_arrow()) == comparable(rows.filter(keep))
        pk.compact("full")  # shoal merges Java's files into files of the table's format
        assert _live_suffixes(pk) == {f".{fmt}"}
        assert comparable(pk.to_arrow()) == comparable(rows.filter(keep))


def test_java_reads_what_shoal_writes(java: JavaPaimon, tmp_path: Path) -> None:
    rows = all_types_rows(12)
    catalog = shoal.Catalog(str(tmp_path))
    for fmt in FORMATS:
        append = catalog.create_table(f"db.a_{fmt}", ALL_TYPES, options={"file.format": fmt})
        append.append(rows.slice(0, 5))
        append.append(rows.slice(5))
        pk = catalog.create_table(
            f"db.pk_{fmt}", ALL_TYPES, primary_keys=["k"],
            options={"file.format": fmt, "bucket": "2"},
        )
        pk.upsert(rows.slice(0, 9))
        pk.delete(rows.select(["k"]).slice(2, 2))
        pk.upsert(rows.slice(9))
        assert _suffixes(tmp_path, f"a_{fmt}") == {f".{fmt}"}
    ops = []
    for fmt in FORMATS:
        ops += [jp.read(f"db.a_{fmt}"), jp.read(f"db.pk_{fmt}"), jp.compact(f"db.pk_{fmt}")]
        ops += [jp.read(f"db.pk_{fmt}")]
    results = java.run(tmp_path, ops)
    keep = pa.array([k not in (2, 3) for k in range(12)])
    for i, _ in enumerate(FORMATS):
        append, pk, _, compacted = results[4 * i : 4 * i + 4]
        assert comparable(append) == comparable(rows)
        assert comparable(pk) == comparable(rows.filter(keep))
        assert comparable(compacted) == comparable(rows.filter(keep))


def test_formats_per_level_both_ways(java: JavaPaimon, tmp_path: Path) -> None:
    """Level 0 in Avro, the top level in Parquet, the rest ORC: shoal compacts Java's
    Avro files into Parquet, and Java reads and compacts what shoal wrote."""
    rows = all_types_rows(16)
    options = {"file.format": "orc", "file.format.per.level": "0:avro,5:parquet", "bucket": "1"}
    java.run(tmp_path, [
        jp.create_table("db.t", ALL_TYPES, primary_keys=["k"], options=options),
        jp.write("db.t", rows.slice(0, 10)),
    ])
    assert _suffixes(tmp_path, "t") == {".avro"}
    table = shoal.Catalog(str(tmp_path)).get_table("db.t")
    table.compact("full")
    assert _live_suffixes(table) == {".parquet"}
    table.upsert(rows.slice(8))
    assert _live_suffixes(table) == {".avro", ".parquet"}
    before, _, after = java.run(tmp_path, [jp.read("db.t"), jp.compact("db.t"), jp.read("db.t")])
    assert comparable(before) == comparable(rows) == comparable(after)
    table = shoal.Catalog(str(tmp_path)).get_table("db.t")
    assert _live_suffixes(table) == {".parquet"}  # Java's compaction wrote the top level
    assert comparable(table.to_arrow()) == comparable(rows)


def test_a_table_naming_no_format_holding_orc_files(java: JavaPaimon, tmp_path: Path) -> None:
    """Paimon up to 0.8 wrote ORC without naming the format: the table is made so by
    leaving file.format out of a Java ORC table's schema. shoal reads the ORC files by
    their names, writes Parquet (the default now), and Java reads both."""
    rows = all_types_rows(12)
    java.run(tmp_path, [
        jp.create_table("db.t", ALL_TYPES, primary_keys=["k"],
                        options={"file.format": "orc", "bucket": "1"}),
        jp.write("db.t", rows.slice(0, 6)),
    ])
    schema_file = tmp_path / "db.db" / "t" / "schema" / "schema-0"
    document = json.loads(schema_file.read_text())
    del document["options"]["file.format"]
    schema_file.write_text(json.dumps(document))
    table = shoal.Catalog(str(tmp_path)).get_table("db.t")
    assert comparable(table.to_arrow()) == comparable(rows.slice(0, 6))
    table.upsert(rows.slice(6))
    assert _suffixes(tmp_path, "t") == {".orc", ".parquet"}
    assert comparable(table.to_arrow()) == comparable(rows)
    (read,) = java.run(tmp_path, [jp.read("db.t")])
    assert comparable(read) == comparable(rows)
