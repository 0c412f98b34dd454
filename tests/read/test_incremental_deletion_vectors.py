"""Incremental reads of a table whose snapshots hold deletion vectors are refused:
the delta of the APPEND commits would return rows a vector deletes."""

from __future__ import annotations

from pathlib import Path

import pytest

import shoal
from tests.conftest import EVENTS_SCHEMA, events
from tests.index_commits import delete_rows, live_files


def test_a_range_ending_at_a_snapshot_with_vectors_is_refused(tmp_path: Path) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", EVENTS_SCHEMA)
    table.append(events([1, 2, 3]))
    table.create_tag("plain")
    assert table.incremental(0, 1).num_rows == 3
    (entry,) = live_files(table)
    delete_rows(table, entry, [1])  # snapshot 2
    table.append(events([4]))
    table.create_tag("masked")
    assert table.to_arrow().num_rows == 3
    for start, end in [(0, 3), (1, 2), ("plain", "masked")]:
        with pytest.raises(shoal.UnsupportedFeatureError) as info:
            table.incremental(start, end)
        assert info.value.feature == "incremental reads of deletion-vector tables"
    assert table.incremental(0, 1).num_rows == 3  # before any vector: read as always
