"""``changelog-producer = input``: writes add their rows as changelog files of their
snapshot; compactions and overwrites add none; expiration removes them with their
snapshot, orphan cleanup keeps them; a changelog kept longer than snapshots is refused."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import shoal

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("name", pa.string())])
LATER = timedelta(days=1)


def rows(ids: list[int], names: list[str]) -> pa.Table:
    return pa.table({"id": ids, "name": names}, schema=SCHEMA)


def make(tmp_path: Path, **options: str) -> shoal.Table:
    return shoal.Catalog(str(tmp_path)).create_table(
        "db.t",
        SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "changelog-producer": "input", **options},
    )


def changelog_files(table: shoal.Table) -> set[str]:
    return {p.name for p in Path(table.path).rglob("changelog-*.parquet")}


def test_writes_add_changelog_files_and_compactions_none(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.upsert(rows([2, 1, 2], ["b", "a", "b2"]))
    first = table.latest_snapshot()
    assert first is not None
    assert first.changelog_manifest_list is not None
    assert first.changelog_record_count == 3
    assert len(changelog_files(table)) == 1
    table.delete(rows([1], ["a"]))
    table.compact("full")
    compacted = table.latest_snapshot()
    assert compacted is not None
    assert compacted.commit_kind == "COMPACT"
    assert compacted.changelog_manifest_list is None
    changes = table.incremental(0, compacted.id, row_kind=True).to_pylist()
    assert changes == [
        {"rowkind": "+I", "id": 1, "name": "a"},
        {"rowkind": "+I", "id": 2, "name": "b"},
        {"rowkind": "+I", "id": 2, "name": "b2"},
        {"rowkind": "-D", "id": 1, "name": "a"},
    ]
    # Without row kinds the retractions are left out; the delta merges by key.
    assert table.incremental(0, compacted.id).num_rows == 3
    delta = table.incremental(0, compacted.id, scan_mode="delta").to_pylist()
    assert delta == [{"id": 2, "name": "b2"}]
    with pytest.raises(shoal.InvalidArgumentError):
        table.incremental(0, 1, scan_mode="delta", row_kind=True)
    with pytest.raises(shoal.InvalidArgumentError):
        table.incremental(0, 1, scan_mode="streaming")  # type: ignore[arg-type]


def test_an_overwrite_commits_no_changelog(tmp_path: Path) -> None:
    table = make(tmp_path)
    table.overwrite(rows([1], ["a"]))
    snapshot = table.latest_snapshot()
    assert snapshot is not None
    assert snapshot.changelog_manifest_list is None
    assert not changelog_files(table)


def test_ignore_delete_leaves_retractions_out(tmp_path: Path) -> None:
    table = make(tmp_path, **{"ignore-delete": "true"})
    table.upsert(rows([1], ["a"]))
    table.delete(rows([1], ["a"]))
    assert table.incremental(0, 2, row_kind=True).column("rowkind").to_pylist() == ["+I"]


def test_expiration_deletes_changelog_and_orphan_cleanup_keeps_it(tmp_path: Path) -> None:
    table = make(tmp_path)
    for i in range(3):
        table.upsert(rows([i], [f"v{i}"]))
    assert len(changelog_files(table)) == 3
    old = time.time() - 2 * 86400
    for path in Path(table.path).rglob("*"):
        os.utime(path, (old, old))
    table.remove_orphan_files(older_than=datetime.now())
    assert len(changelog_files(table)) == 3
    table.expire_snapshots(retain_max=1, older_than=datetime.now() + LATER)
    assert len(changelog_files(table)) == 1
    latest = table.latest_snapshot()
    assert latest is not None
    assert table.incremental(latest.id - 1, latest.id).to_pylist() == [{"id": 2, "name": "v2"}]


@pytest.mark.parametrize(
    "options",
    [
        {"changelog.num-retained.max": "20", "snapshot.num-retained.max": "10"},
        {"changelog.time-retained": "2 h"},
        {"changelog.num-retained.min": "11"},
    ],
)
def test_changelogs_kept_longer_than_snapshots_need_a_changelog_producer(
    tmp_path: Path, options: dict[str, str]
) -> None:
    """With ``input`` the changelog outlives its snapshots (tests/cleanup/
    test_changelog_expire.py); without a producer that lifecycle is refused."""
    make(tmp_path, **options)
    with pytest.raises(shoal.UnsupportedFeatureError) as info:
        shoal.Catalog(str(tmp_path)).create_table(
            "db.none", SCHEMA, primary_keys=["id"], options=options
        )
    assert info.value.feature.startswith("changelog.")


def test_input_is_refused_on_append_tables_and_with_first_row(tmp_path: Path) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    with pytest.raises(shoal.UnsupportedFeatureError):
        catalog.create_table("db.a", SCHEMA, options={"changelog-producer": "input"})
    with pytest.raises(shoal.InvalidOptionError):
        make(tmp_path, **{"merge-engine": "first-row"})
