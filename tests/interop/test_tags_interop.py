"""Tags across engines: pypaimon reads through shoal's tags, shoal through pypaimon's."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

import shoal
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows
from tests.interop.pypaimon_oracle import PypaimonOracle

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def oracle() -> PypaimonOracle:
    return PypaimonOracle()


def test_pypaimon_reads_through_shoal_tags(oracle: PypaimonOracle, tmp_path: Path) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", EVENTS_SCHEMA,
                                                      partition_keys=["dt"])
    table.append(events(range(3)))
    table.create_tag("plain")
    table.append(events(range(3, 5), dt="2026-11-02"))
    table.create_tag("retained", time_retained=timedelta(days=7))
    table.overwrite(events([9]))
    for name in ("plain", "retained"):
        expected = sorted_rows(table.to_arrow(tag=name), "id")
        assert sorted_rows(oracle.read(tmp_path, "db.t", tag=name), "id") == expected


def test_shoal_reads_through_pypaimon_tags(oracle: PypaimonOracle, tmp_path: Path) -> None:
    oracle.write(tmp_path, "db.t", [events(range(3)), events(range(3, 6))],
                 partition_keys=["dt"])
    oracle.create_tag(tmp_path, "db.t", "first", snapshot_id=1)
    table = shoal.Catalog(str(tmp_path)).get_table("db.t")
    assert [(t.name, t.snapshot_id) for t in table.list_tags()] == [("first", 1)]
    assert sorted_rows(table.to_arrow(tag="first"), "id") == sorted_rows(
        oracle.read(tmp_path, "db.t", tag="first"), "id"
    )
    table.rename_tag("first", "renamed")
    assert sorted(oracle.read(tmp_path, "db.t", tag="renamed").column("id").to_pylist()) == [
        0, 1, 2]
