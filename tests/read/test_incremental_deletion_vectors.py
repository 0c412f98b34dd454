"""Incremental reads of tables with deletion vectors that Paimon 0.9 and 1.0 do not
read alike, or not as shoal reads their snapshots, are refused: an append table whose
snapshots hold vectors, and a primary-key table holding vectors its options do not
enable. Primary-key tables with ``deletion-vectors.enabled`` are read as Java reads
them (tests/interop/test_java_incremental_deletion_vectors.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from tests.conftest import EVENTS_SCHEMA, events
from tests.index_commits import delete_rows, live_files

FEATURE = "incremental reads of deletion-vector tables"


def test_an_append_table_with_vectors_is_refused(tmp_path: Path) -> None:
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
        assert info.value.feature == FEATURE
    assert table.incremental(0, 1).num_rows == 3  # before any vector: read as always


def test_a_primary_key_table_with_vectors_its_options_do_not_enable_is_refused(
    tmp_path: Path,
) -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    catalog = shoal.Catalog(str(tmp_path))
    table = catalog.create_table("db.pk", schema, primary_keys=["id"], options={"bucket": "1"})
    table.upsert(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}, schema=schema))
    table.create_tag("plain")
    (entry,) = live_files(table)
    delete_rows(table, entry, [0])  # snapshot 2
    table.create_tag("masked")
    for start, end in [(0, 2), (1, 2), ("plain", "masked")]:
        with pytest.raises(shoal.UnsupportedFeatureError, match=r"vectors\.enabled") as info:
            table.incremental(start, end)
        assert info.value.feature == FEATURE
    assert table.incremental(0, 1).num_rows == 3
