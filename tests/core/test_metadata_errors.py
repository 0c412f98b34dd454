"""Damaged metadata is reported as CorruptMetadataError naming the file, never a traceback
from deep inside."""

from __future__ import annotations

import os

import pytest

import shoal
from tests.conftest import events


@pytest.fixture
def two_snapshots(events_table: shoal.Table) -> shoal.Table:
    events_table.append(events(range(3)))
    events_table.append(events(range(3, 6)))
    return events_table


def _reopen(table: shoal.Table) -> shoal.Table:
    return shoal.open_table(table.path)


@pytest.mark.parametrize(
    "content",
    [b"", b"{not json", b"[1, 2]", b'{"version": 3, "id": 2}', b'{"version": 99, "id": 2}'],
)
def test_corrupt_snapshot_file(two_snapshots: shoal.Table, content: bytes) -> None:
    path = os.path.join(two_snapshots.path, "snapshot", "snapshot-2")
    with open(path, "wb") as f:
        f.write(content)
    with pytest.raises(shoal.CorruptMetadataError) as info:
        _reopen(two_snapshots).to_arrow()
    assert info.value.path == path
    assert _reopen(two_snapshots).to_arrow(snapshot_id=1).num_rows == 3


def test_missing_or_truncated_manifest(two_snapshots: shoal.Table) -> None:
    manifest_dir = os.path.join(two_snapshots.path, "manifest")
    lists = [n for n in os.listdir(manifest_dir) if n.startswith("manifest-list-")]
    victim = os.path.join(manifest_dir, sorted(lists)[-1])
    with open(victim, "rb") as f:
        data = f.read()
    with open(victim, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(shoal.CorruptMetadataError, match="manifest-list-"):
        _reopen(two_snapshots).to_arrow()
    os.unlink(victim)
    with pytest.raises(shoal.CorruptMetadataError, match="missing"):
        _reopen(two_snapshots).to_arrow()


def test_corrupt_schema_file(two_snapshots: shoal.Table) -> None:
    path = os.path.join(two_snapshots.path, "schema", "schema-0")
    with open(path, "w") as f:
        f.write('{"id": 0, "fields": [{"id": 0, "name": "x", "type": "NOPE"}]}')
    with pytest.raises(shoal.CorruptMetadataError, match="schema-0"):
        _reopen(two_snapshots)


def test_wrong_latest_hint_is_only_a_hint(two_snapshots: shoal.Table) -> None:
    hint = os.path.join(two_snapshots.path, "snapshot", "LATEST")
    for content in ("1", "garbage", ""):
        with open(hint, "w") as f:
            f.write(content)
        assert _reopen(two_snapshots).latest_snapshot().id == 2
    os.unlink(hint)
    assert _reopen(two_snapshots).latest_snapshot().id == 2
    assert _reopen(two_snapshots).append(events([9])).id == 3


def test_missing_or_damaged_data_file(two_snapshots: shoal.Table) -> None:
    victim = two_snapshots.scan().plan()[0].file_paths[0]
    with open(victim, "wb") as f:
        f.write(b"not parquet at all")
    with pytest.raises(shoal.CorruptDataFileError):
        _reopen(two_snapshots).to_arrow()
    os.unlink(victim)
    with pytest.raises(shoal.CorruptDataFileError, match=os.path.basename(victim)):
        _reopen(two_snapshots).to_arrow()
    with pytest.raises(shoal.CorruptDataFileError):
        list(_reopen(two_snapshots).scan().to_batches())
