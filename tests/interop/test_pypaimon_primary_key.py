"""Primary-key (merge-on-read) tables against the real pypaimon 2.1.0, both directions.

pypaimon 2.1.0 writes deletes through the ``rowkind.field`` table option: a STRING
column of the table whose value ("+I", "+U", "-U", "-D") becomes each row's
``_VALUE_KIND``. It has no read-optimized system table (``$ro``), so the
read-optimized view is only checked on shoal's side.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import shoal
from shoal.format.types import BIGINT, AtomicType
from shoal.write.bucket import assign_buckets
from tests.conftest import EVENTS_SCHEMA, sorted_rows
from tests.interop.pypaimon_oracle import PypaimonOracle

pytestmark = pytest.mark.interop

Model = dict[int, dict[str, Any]]


@pytest.fixture(scope="module")
def oracle() -> PypaimonOracle:
    return PypaimonOracle()


def rows(ids: list[int] | range, tag: str, op: str | None = None) -> pa.Table:
    """Rows of EVENTS_SCHEMA; a key's dt follows from its id, so id alone names a row.
    With ``op``, a trailing ``op`` column carries pypaimon's row kind."""
    ids = list(ids)
    data: dict[str, list[Any]] = {
        "dt": [f"2026-11-0{1 + i % 2}" for i in ids],
        "id": ids,
        "name": [f"{tag}{i}" for i in ids],
        "value": [i * 0.5 for i in ids],
    }
    schema = EVENTS_SCHEMA
    if op is not None:
        data["op"] = [op] * len(ids)
        schema = schema.append(pa.field("op", pa.string()))
    return pa.table(data, schema=schema)


def apply(model: Model, data: pa.Table, delete: bool = False) -> None:
    """What an upsert (or a delete) of ``data`` does to the expected rows."""
    for row in data.to_pylist():
        if delete or row.get("op") == "-D":
            model.pop(row["id"], None)
        else:
            model[row["id"]] = row


def ordered(table: pa.Table) -> list[dict[str, Any]]:
    return sorted_rows(table, "id")


def expected(model: Model) -> list[dict[str, Any]]:
    return [model[i] for i in sorted(model)]


def assert_every_snapshot_agrees(
    oracle: PypaimonOracle, warehouse: Path, table: shoal.Table
) -> None:
    ids = [s.id for s in table.snapshots()]
    theirs = oracle.read_each(warehouse, "db.t", ids)
    for snapshot_id in ids:
        assert ordered(theirs[snapshot_id]) == ordered(table.to_arrow(snapshot_id=snapshot_id)), (
            f"snapshot {snapshot_id}"
        )


@pytest.mark.parametrize(
    ("partition_keys", "primary_keys", "buckets"),
    [(["dt"], ["dt", "id"], "2"), ([], ["id"], "3")],
    ids=["partitioned", "unpartitioned"],
)
def test_pypaimon_reads_what_shoal_upserts_deletes_and_compacts(
    oracle: PypaimonOracle,
    tmp_path: Path,
    partition_keys: list[str],
    primary_keys: list[str],
    buckets: str,
) -> None:
    # write-only: compaction happens exactly where the test asks for it
    options = {"bucket": buckets, "write-only": "true", "num-sorted-run.compaction-trigger": "2"}
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t",
        EVENTS_SCHEMA,
        partition_keys=partition_keys,
        primary_keys=primary_keys,
        options=options,
    )
    model: Model = {}

    def upsert(data: pa.Table) -> None:
        table.upsert(data)
        apply(model, data)
        check()

    def delete(ids: list[int]) -> None:
        keys = rows(ids, "").select(primary_keys)
        table.delete(keys)
        apply(model, keys, delete=True)
        check()

    def compact(strategy: str) -> None:
        assert table.compact(strategy).snapshot is not None
        check()

    def check() -> None:
        ours = ordered(table.to_arrow())
        assert ours == expected(model)
        assert ordered(oracle.read(tmp_path, "db.t")) == ours

    upsert(rows(range(30), "a"))
    # several rows of one key in one write: the last one wins
    upsert(pa.concat_tables([rows([5, 6], "b"), rows([5, 7], "c"), rows([5, 40], "d")]))
    delete([1, 2, 3, 6, 99])
    upsert(rows(range(25, 35), "e"))
    compact("full")
    upsert(rows(range(10), "f"))
    delete([20, 21, 22, 30])
    compact("universal")
    levels = set(table.system_table("files")["level"].to_pylist())
    assert levels & {1, 2, 3, 4}, f"universal compaction left levels {levels}"
    upsert(rows([3, 33, 50], "g"))
    delete([4, 24])
    assert_every_snapshot_agrees(oracle, tmp_path, table)


def test_shoal_reads_and_compacts_what_pypaimon_writes(
    oracle: PypaimonOracle, tmp_path: Path
) -> None:
    layout: dict[str, Any] = {
        "partition_keys": ["dt"],
        "primary_keys": ["dt", "id"],
        "options": {"bucket": "2", "rowkind.field": "op"},
    }
    batches = [
        rows(range(20), "a", "+I"),
        pa.concat_tables([rows([3, 4], "b", "+U"), rows([3, 25], "c", "+I")]),
        pa.concat_tables([rows([1, 2, 4], "", "-D"), rows([40], "d", "+I")]),
        pa.concat_tables([rows(range(15, 30), "e", "+U"), rows([16], "", "-D")]),
    ]
    ids = oracle.write(tmp_path, "db.t", batches, **layout)
    assert ids == [1, 2, 3, 4]
    table = shoal.Catalog(str(tmp_path)).get_table("db.t")
    model: Model = {}
    for snapshot_id, batch in zip(ids, batches, strict=True):
        apply(model, batch)
        assert ordered(table.to_arrow(snapshot_id=snapshot_id)) == expected(model)
    assert_every_snapshot_agrees(oracle, tmp_path, table)

    assert table.compact("full").snapshot is not None
    files = table.system_table("files")
    assert set(files["level"].to_pylist()) == {5}
    assert set(files["file_source"].to_pylist()) == {"COMPACT"}
    assert ordered(table.to_arrow(read_optimized=True)) == expected(model)
    assert ordered(oracle.read(tmp_path, "db.t")) == ordered(table.to_arrow()) == expected(model)

    # pypaimon writes on top of the compacted files: level 0 over level 5
    more = pa.concat_tables([rows([0, 5], "f", "+U"), rows([7], "", "-D")])
    oracle.write(tmp_path, "db.t", [more], **layout)
    apply(model, more)
    assert ordered(oracle.read(tmp_path, "db.t")) == ordered(table.to_arrow()) == expected(model)
    assert_every_snapshot_agrees(oracle, tmp_path, table)


def test_both_writers_put_a_key_in_one_bucket(oracle: PypaimonOracle, tmp_path: Path) -> None:
    layout: dict[str, Any] = {
        "partition_keys": ["dt"],
        "primary_keys": ["dt", "id"],
        "options": {"bucket": "4"},
    }
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", EVENTS_SCHEMA, **layout)
    model: Model = {}
    for writer, batch in [
        ("shoal", rows(range(40), "s")),
        ("pypaimon", rows(range(20, 60), "p")),
        ("shoal", rows(range(10, 30), "t")),
        ("pypaimon", rows(range(25, 35), "q")),
    ]:
        if writer == "shoal":
            table.upsert(batch)
        else:
            oracle.write(tmp_path, "db.t", [batch], **layout)
        apply(model, batch)

    bucket_of_key: dict[tuple[str, int], set[int]] = {}
    tags: set[str] = set()
    for split in table.scan().plan():
        for path in split.file_paths:
            data = pq.read_table(path, partitioning=None)
            keys = data.select(["_KEY_id"])
            computed = assign_buckets(keys, ["_KEY_id"], [AtomicType(BIGINT)], 4)
            assert set(computed.tolist()) == {split.bucket}, path
            dt = split.partition["dt"]
            for key in data["_KEY_id"].to_pylist():
                bucket_of_key.setdefault((dt, key), set()).add(split.bucket)
            tags.update(name[0] for name in data["name"].to_pylist())
    assert tags == {"s", "p", "t", "q"}  # both writers' files were looked at
    assert {k: b for k, b in bucket_of_key.items() if len(b) > 1} == {}
    assert ordered(oracle.read(tmp_path, "db.t")) == expected(model)
    assert ordered(table.to_arrow()) == expected(model)


def test_writers_continue_each_others_sequence_numbers(
    oracle: PypaimonOracle, tmp_path: Path
) -> None:
    layout: dict[str, Any] = {"primary_keys": ["id"], "options": {"bucket": "2"}}
    keys = range(20)
    catalog = shoal.Catalog(str(tmp_path))
    for writer, tag in (("pypaimon", "p"), ("shoal", "s"), ("pypaimon", "q")):
        if writer == "shoal":
            catalog.get_table("db.t").upsert(rows(keys, tag))
        else:
            oracle.write(tmp_path, "db.t", [rows(keys, tag)], **layout)
        want = ordered(rows(keys, tag))
        assert ordered(oracle.read(tmp_path, "db.t")) == want, f"pypaimon, after {writer}"
        assert ordered(catalog.get_table("db.t").to_arrow()) == want, f"shoal, after {writer}"

    # in every bucket, each write's sequence numbers come after all earlier ones
    files = catalog.get_table("db.t").system_table("files").to_pylist()
    for bucket in {f["bucket"] for f in files}:
        ranges = sorted(
            (f["min_sequence_number"], f["max_sequence_number"])
            for f in files
            if f["bucket"] == bucket
        )
        assert len(ranges) == 3
        assert all(a[1] < b[0] for a, b in pairwise(ranges)), ranges


@pytest.mark.parametrize("buckets", ["2", "-1"], ids=["fixed", "dynamic"])
def test_pypaimon_reads_deletion_vectors_shoal_writes(
    oracle: PypaimonOracle, tmp_path: Path, buckets: str
) -> None:
    """Every snapshot of a table with deletion vectors that shoal writes (each write
    followed by the compaction that marks the rows it replaces) reads the same in
    pypaimon, level-0 rows of a write-only write invisible until compacted."""
    options = {
        "bucket": buckets,
        "deletion-vectors.enabled": "true",
        "dynamic-bucket.target-row-num": "8",
    }
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=options
    )
    model: Model = {}
    vectors = 0
    for data, delete in [
        (rows(range(30), "a"), False),
        (rows([5, 6, 7, 31], "b"), False),
        (rows([1, 2, 3, 6, 99], ""), True),
        (rows(range(25, 35), "c"), False),
    ]:
        if delete:
            table.delete(data.select(["dt", "id"]))
        else:
            table.upsert(data)
        apply(model, data, delete=delete)
        assert ordered(table.to_arrow()) == expected(model)
        types = table.system_table("table_indexes")["index_type"].to_pylist()
        vectors += types.count("DELETION_VECTORS")
    assert vectors  # some snapshot masks rows
    with table.update_schema() as update:
        update.set_option("write-only", "true")
    table.upsert(rows([8, 9], "d"))  # stays in level 0: not read yet
    assert ordered(table.to_arrow()) == expected(model)
    assert_every_snapshot_agrees(oracle, tmp_path, table)


@pytest.mark.parametrize("file_format", ["orc", "avro"])
@pytest.mark.parametrize("primary_key", [True, False], ids=["primary-key", "append"])
def test_pypaimon_reads_orc_and_avro_files_shoal_writes(
    oracle: PypaimonOracle, tmp_path: Path, file_format: str, primary_key: bool
) -> None:
    options = {"bucket": "2", "file.format": file_format}
    if not primary_key:
        options["bucket-key"] = "id"
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"] if primary_key else None,
        options=options,
    )
    data = rows(range(12), "a")
    if primary_key:
        table.upsert(data)
        table.upsert(rows([1, 4], "b"))
    else:
        table.append(data)
    suffixes = {p.rsplit(".", 1)[-1] for p in table.system_table("files")["file_path"].to_pylist()}
    assert suffixes == {file_format}
    assert_every_snapshot_agrees(oracle, tmp_path, table)
