"""Reads of files with deletion vectors: every row a vector deletes is left out, and
every other row kept, in whole reads, streamed reads, filtered and projected reads,
for columns with and without nulls, and for the batch filter alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import shoal
from shoal.read.files import _filter_batch
from tests.index_commits import delete_rows, live_files

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("score", pa.float64()),  # nullable, never null: a validity bitmap of all ones
        ("flag", pa.bool_()),
        ("at", pa.timestamp("us")),
        ("maybe", pa.int32()),  # some nulls
    ]
)


def _rows(ids: np.ndarray) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"n{i}" for i in ids]),
            "score": pa.array(ids * 0.5, pa.float64()),
            "flag": pa.array(ids % 3 == 0),
            "at": pa.array(ids * 1_000_000, pa.timestamp("us")),
            "maybe": pa.array([None if i % 7 == 0 else int(i) for i in ids], pa.int32()),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def masked(tmp_path: Path) -> tuple[shoal.Table, set[int]]:
    """An append table of three files of 3,000 rows; vectors delete rows of two of
    them (the first and last rows among them); returns the table and the deleted ids."""
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", SCHEMA)
    for i in range(3):
        table.append(_rows(np.arange(i * 3000, (i + 1) * 3000)))
    files = live_files(table)
    rng = np.random.default_rng(7)
    deleted: set[int] = set()
    for entry in files[:2]:
        positions = sorted({0, 2999, *rng.choice(3000, 400, replace=False).tolist()})
        gone = delete_rows(table, entry, positions)
        deleted |= set(gone.column("id").to_pylist())
    assert len(deleted) > 800
    return table, deleted


def _expected(deleted: set[int]) -> pa.Table:
    ids = np.array([i for i in range(9000) if i not in deleted])
    return _rows(ids)


def _by_id(rows: pa.Table) -> pa.Table:
    return rows.sort_by("id")


def test_a_whole_read_leaves_out_exactly_the_deleted_rows(
    masked: tuple[shoal.Table, set[int]],
) -> None:
    table, deleted = masked
    assert _by_id(table.to_arrow()).equals(_expected(deleted))


def test_a_streamed_read_leaves_out_exactly_the_deleted_rows(
    masked: tuple[shoal.Table, set[int]],
) -> None:
    table, deleted = masked
    batches = list(table.scan().to_batches())
    assert _by_id(pa.Table.from_batches(batches, SCHEMA)).equals(_expected(deleted))


def test_a_filtered_projected_read_leaves_out_exactly_the_deleted_rows(
    masked: tuple[shoal.Table, set[int]],
) -> None:
    table, deleted = masked
    rows = table.to_arrow(columns=["name", "maybe"], filter=[("id", ">=", 2500)])
    expected = _expected(deleted)
    expected = expected.filter(pc.field("id") >= 2500).select(["name", "maybe"])
    assert rows.sort_by("name").equals(expected.sort_by("name"))


def _sliced(array: pa.Array) -> pa.Array:
    return array.slice(3, len(array) - 5)


@pytest.mark.parametrize("offset", [False, True])
def test_the_batch_filter_is_arrows_filter(offset: bool) -> None:
    rows = _rows(np.arange(200))
    columns = [c.combine_chunks() for c in rows.columns]
    if offset:
        columns = [_sliced(c) for c in columns]
    batch = pa.RecordBatch.from_arrays(columns, schema=SCHEMA)
    keep = np.random.default_rng(3).random(batch.num_rows) < 0.7
    filtered = _filter_batch(batch, keep)
    assert filtered.equals(batch.filter(pa.array(keep)))
    assert filtered.column(5).null_count == batch.filter(pa.array(keep)).column(5).null_count
    assert filtered.column(2).null_count == 0
