"""Tables written by Paimon's Java implementation (0.9 and 1.0) with its table
features (deletion vectors, dynamic buckets, ORC files, partial updates, the lookup
changelog producer) are read as Java reads them, and shoal's writes to them are read by
Java. (Evolved schemas: ``test_java_schema_evolution.py``; each feature in depth: the
other ``test_java_*`` modules.)
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string())])


def rows(ids: list[int], names: list[str]) -> pa.Table:
    return pa.table({"id": ids, "name": names}, schema=SCHEMA)


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def table_path(warehouse: Path, name: str) -> str:
    return str(warehouse / "db.db" / name)


def test_deletion_vectors_are_read_and_written(java: JavaPaimon, tmp_path: Path) -> None:
    """Java writes two rows, updates one and deletes the other; the stale version and the
    deleted row stay in the data files, masked by deletion vectors, which shoal applies
    (test_java_deletion_vectors); shoal's own write keeps them, and Java reads it."""
    (seen,) = java.run(
        tmp_path,
        [
            jp.create_table(
                "db.dv",
                SCHEMA,
                primary_keys=["id"],
                options={"bucket": "1", "deletion-vectors.enabled": "true"},
            ),
            jp.write("db.dv", rows([1, 2], ["a", "b"])),
            jp.write("db.dv", rows([1, 2], ["a2", "b"]), kind=["UPDATE_AFTER", "DELETE"]),
            jp.read("db.dv"),
        ],
    )[-1:]
    assert seen.to_pylist() == [{"id": 1, "name": "a2"}]
    table = shoal.open_table(table_path(tmp_path, "dv"))
    assert table.to_arrow().to_pylist() == seen.to_pylist()
    table.upsert(rows([3, 1], ["c", "a3"]))
    (after,) = java.run(tmp_path, [jp.read("db.dv")])
    assert sorted_by_id(after) == sorted_by_id(table.to_arrow())
    assert sorted_by_id(after) == [{"id": 1, "name": "a3"}, {"id": 3, "name": "c"}]


def sorted_by_id(t: pa.Table) -> list[dict[str, object]]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def test_default_primary_key_tables_use_dynamic_buckets_and_are_read(
    java: JavaPaimon, tmp_path: Path
) -> None:
    """Primary-key tables without a ``bucket`` option use Paimon's dynamic buckets; each
    bucket's files merge by key as with fixed buckets (test_java_dynamic_bucket)."""
    (seen,) = java.run(
        tmp_path,
        [
            jp.create_table("db.dyn", SCHEMA, primary_keys=["id"]),
            jp.write("db.dyn", rows([1, 2], ["a", "b"])),
            jp.write("db.dyn", rows([2], ["b2"])),
            jp.read("db.dyn"),
        ],
    )[-1:]
    table = shoal.open_table(table_path(tmp_path, "dyn"))
    assert table.options.get("bucket", "-1") == "-1"
    assert table.to_arrow().sort_by("id").to_pylist() == seen.sort_by("id").to_pylist()


def test_orc_files_and_partial_updates_are_read_as_java_reads_them(
    java: JavaPaimon, tmp_path: Path
) -> None:
    seen = java.run(
        tmp_path,
        [
            jp.create_table("db.orc", SCHEMA, options={"file.format": "orc"}),
            jp.write("db.orc", rows([1], ["a"])),
            jp.create_table(
                "db.pu",
                SCHEMA,
                primary_keys=["id"],
                options={"bucket": "1", "merge-engine": "partial-update"},
            ),
            jp.write("db.pu", rows([1], ["a"])),
            jp.write("db.pu", rows([1], [None])),
            jp.read("db.orc"),
            jp.read("db.pu"),
        ],
    )[-2:]
    for name, expected in zip(("orc", "pu"), seen, strict=True):
        read = shoal.open_table(table_path(tmp_path, name)).to_arrow()
        assert read.to_pylist() == expected.to_pylist() == [{"id": 1, "name": "a"}]


def test_a_lookup_changelog_table_is_read_and_written(java: JavaPaimon, tmp_path: Path) -> None:
    java.run(
        tmp_path,
        [
            jp.create_table(
                "db.cl",
                SCHEMA,
                primary_keys=["id"],
                options={"bucket": "1", "changelog-producer": "lookup"},
            ),
            jp.write("db.cl", rows([1, 2], ["a", "b"])),
        ],
    )
    table = shoal.open_table(table_path(tmp_path, "cl"))
    assert sorted(table.to_arrow()["id"].to_pylist()) == [1, 2]
    table.upsert(rows([3], ["c"]))
    latest = table.latest_snapshot()
    assert latest.commit_kind == "COMPACT"
    assert latest.changelog_record_count == 1  # the +I of key 3
    [theirs] = java.run(tmp_path, [jp.read("db.cl")])
    assert sorted(theirs["id"].to_pylist()) == [1, 2, 3]
