"""Tags against the real pypaimon 2.1.0, both directions: pypaimon lists and time-travels
to the tags shoal creates, and shoal lists and reads the tags pypaimon creates."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shoal
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows
from tests.interop.pypaimon_oracle import PypaimonOracle

pytestmark = pytest.mark.interop

PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
# The `$tags` columns compared across the two; commit_time is left out because pypaimon
# shows it in UTC and shoal, like Java Paimon, in the local time zone.
COMPARED = ["tag_name", "snapshot_id", "schema_id", "record_count", "create_time", "time_retained"]


@pytest.fixture(scope="module")
def oracle() -> PypaimonOracle:
    return PypaimonOracle()


def pk_rows(values: dict[int, str]) -> pa.Table:
    return pa.table({"id": list(values), "v": list(values.values())}, schema=PK_SCHEMA)


def pk_expected(values: dict[int, str]) -> list[dict[str, Any]]:
    return [{"id": i, "v": values[i]} for i in sorted(values)]


def shoal_tags_rows(table: shoal.Table) -> dict[str, dict[str, Any]]:
    """shoal's `tags` system table by name, times as ISO strings like the oracle's."""
    out = {}
    for row in table.system_table("tags").to_pylist():
        created = row["create_time"]
        row["create_time"] = None if created is None else created.isoformat()
        out[row["tag_name"]] = {k: row[k] for k in COMPARED}
    return out


def pypaimon_tags_rows(tags: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t["name"]: {k: t["system_row"][k] for k in COMPARED} for t in tags}


def test_pypaimon_reads_shoal_tags_of_an_append_table(
    oracle: PypaimonOracle, tmp_path: Path
) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", EVENTS_SCHEMA, partition_keys=["dt"])
    table.append(events(range(10), dt=["2026-11-01", "2026-11-02"] * 5))
    table.create_tag("plain")
    table.append(events(range(10, 15), dt="2026-11-03"))
    table.create_tag("kept", time_retained=timedelta(days=3, milliseconds=5))
    expected = {name: sorted_rows(table.to_arrow(tag=name), "id") for name in ("plain", "kept")}
    table.overwrite(events([100], dt="2026-11-01"), partition={"dt": "2026-11-01"})
    table.drop_partitions([{"dt": "2026-11-03"}])
    # pypaimon commits on top of shoal's snapshots; the tags still read the same.
    oracle.write(tmp_path, "db.t", [events([200, 201], dt="2026-11-04")], partition_keys=["dt"])
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 3, 5, 7, 9, 100, 200, 201]

    assert expected["plain"] == sorted_rows(
        events(range(10), ["2026-11-01", "2026-11-02"] * 5), "id"
    )
    for name, rows in expected.items():
        assert sorted_rows(oracle.read(tmp_path, "db.t", tag=name), "id") == rows, name
        assert sorted_rows(table.to_arrow(tag=name), "id") == rows, name
    got = oracle.read(tmp_path, "db.t", tag="kept", columns=["id", "name"])
    assert sorted_rows(got, "id") == sorted_rows(table.to_arrow(tag="kept", columns=["id", "name"]))


def test_pypaimon_reads_shoal_tags_of_a_primary_key_table(
    oracle: PypaimonOracle, tmp_path: Path
) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.pk", PK_SCHEMA, primary_keys=["id"], options={"bucket": "2"}
    )
    table.upsert(pk_rows({i: f"a{i}" for i in range(12)}))
    table.upsert(pk_rows({i: f"b{i}" for i in range(0, 12, 3)}))
    table.create_tag("upserted")
    table.delete(pa.table({"id": pa.array([1, 2], pa.int64())}))
    table.compact("full")
    table.create_tag("compacted", time_retained=timedelta(hours=12))
    table.overwrite(pk_rows({7: "o7"}))
    table.upsert(pk_rows({7: "x7", 8: "x8"}))
    upserted = {i: f"b{i}" if i % 3 == 0 else f"a{i}" for i in range(12)}
    compacted = {i: v for i, v in upserted.items() if i not in (1, 2)}
    expected = {"upserted": pk_expected(upserted), "compacted": pk_expected(compacted)}
    for name, rows in expected.items():
        assert sorted_rows(table.to_arrow(tag=name), "id") == rows, name
        assert sorted_rows(oracle.read(tmp_path, "db.pk", tag=name), "id") == rows, name


def test_pypaimon_lists_shoal_tags(oracle: PypaimonOracle, tmp_path: Path) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", EVENTS_SCHEMA)
    for i in range(4):
        table.append(events(range(i * 3, i * 3 + 3)))
    table.create_tag("first", 1)
    table.create_tag("v1.0", 2, timedelta(hours=25, minutes=1))
    table.create_tag("2026-11-01", 3)
    to_rename = table.create_tag("to-rename", 4, timedelta(seconds=90))
    table.create_tag("to-delete", 4)
    table.rename_tag("to-rename", "renamed")
    table.delete_tag("to-delete")

    theirs = oracle.tags(tmp_path, "db.t")
    ours = {t.name: t for t in table.list_tags()}
    assert [t["name"] for t in theirs] == sorted(ours) == ["2026-11-01", "first", "renamed", "v1.0"]
    for tag in theirs:
        mine = ours[tag["name"]]
        assert tag["snapshot_id"] == mine.snapshot_id
        created = None if mine.create_time is None else mine.create_time.isoformat()
        assert tag["create_time"] == created
        retained = None if mine.time_retained is None else mine.time_retained.total_seconds()
        assert tag["time_retained_seconds"] == retained
    assert ours["renamed"].create_time == to_rename.create_time
    assert pypaimon_tags_rows(theirs) == shoal_tags_rows(table)


def test_shoal_reads_and_lists_pypaimon_tags(oracle: PypaimonOracle, tmp_path: Path) -> None:
    batches = [
        events(range(5), dt="2026-11-01"),
        events(range(5, 8), dt="2026-11-02"),
        events(range(8, 12), dt="2026-11-01"),
    ]
    snapshot_ids = oracle.write(tmp_path, "db.t", batches, partition_keys=["dt"])
    assert snapshot_ids == [1, 2, 3]
    before = datetime.now()
    oracle.create_tag(tmp_path, "db.t", "p1", snapshot_id=1)
    oracle.create_tag(tmp_path, "db.t", "p-ttl", snapshot_id=2, time_retained="2h")
    oracle.create_tag(tmp_path, "db.t", "p-latest")
    after = datetime.now()
    table = shoal.Catalog(str(tmp_path)).get_table("db.t")

    tags = {t.name: t for t in table.list_tags()}
    assert tags["p1"] == shoal.Tag("p1", 1, None, None)
    assert tags["p-latest"] == shoal.Tag("p-latest", 3, None, None)
    ttl = tags["p-ttl"]
    assert (ttl.snapshot_id, ttl.time_retained) == (2, timedelta(hours=2))
    assert ttl.create_time is not None
    assert before <= ttl.create_time <= after
    assert [t.name for t in table.list_tags()] == ["p1", "p-ttl", "p-latest"]

    theirs = oracle.tags(tmp_path, "db.t")
    assert {t["name"]: t["create_time"] for t in theirs} == {
        name: None if t.create_time is None else t.create_time.isoformat()
        for name, t in tags.items()
    }
    assert pypaimon_tags_rows(theirs) == shoal_tags_rows(table)
    assert shoal_tags_rows(table)["p-ttl"]["time_retained"] == "PT2H"

    for name, tag in tags.items():
        ours = sorted_rows(table.to_arrow(tag=name), "id")
        assert ours == sorted_rows(oracle.read(tmp_path, "db.t", tag=name), "id"), name
        assert ours == sorted_rows(table.to_arrow(snapshot_id=tag.snapshot_id), "id"), name
    assert sorted(table.to_arrow(tag="p-ttl").column("id").to_pylist()) == list(range(8))

    # pypaimon's tags are shoal's: the names are taken, and they rename and delete.
    with pytest.raises(shoal.TagAlreadyExistsError):
        table.create_tag("p1", 3)
    table.rename_tag("p-ttl", "s-ttl")
    table.delete_tag("p1")
    theirs = oracle.tags(tmp_path, "db.t")
    assert [(t["name"], t["snapshot_id"]) for t in theirs] == [("p-latest", 3), ("s-ttl", 2)]
    assert theirs[1]["time_retained_seconds"] == 7200.0
    renamed = sorted_rows(oracle.read(tmp_path, "db.t", tag="s-ttl"), "id")
    assert renamed == sorted_rows(table.to_arrow(snapshot_id=2), "id")


def test_shoal_reads_pypaimon_tags_of_a_primary_key_table(
    oracle: PypaimonOracle, tmp_path: Path
) -> None:
    batches = [
        pk_rows({i: f"a{i}" for i in range(10)}),
        pk_rows({i: f"b{i}" for i in range(0, 10, 2)}),
        pk_rows({3: "c3", 20: "c20"}),
    ]
    oracle.write(tmp_path, "db.pk", batches, primary_keys=["id"], options={"bucket": "2"})
    oracle.create_tag(tmp_path, "db.pk", "second", snapshot_id=2, time_retained="1d")
    oracle.create_tag(tmp_path, "db.pk", "third")
    table = shoal.Catalog(str(tmp_path)).get_table("db.pk")
    assert [(t.name, t.snapshot_id, t.time_retained) for t in table.list_tags()] == [
        ("second", 2, timedelta(days=1)),
        ("third", 3, None),
    ]
    table.upsert(pk_rows({0: "shoal"}))
    second = {i: f"b{i}" if i % 2 == 0 else f"a{i}" for i in range(10)}
    third = {**second, 3: "c3", 20: "c20"}
    expected = {"second": pk_expected(second), "third": pk_expected(third)}
    for name, rows in expected.items():
        assert sorted_rows(table.to_arrow(tag=name), "id") == rows, name
        assert sorted_rows(oracle.read(tmp_path, "db.pk", tag=name), "id") == rows, name
