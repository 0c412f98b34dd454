"""Changelogs that outlive their snapshots (Paimon's decoupled changelog lifecycle):
snapshot expiration keeps expired snapshots as ``changelog/changelog-<id>``, changelog
expiration removes them by the ``changelog.*`` retention, and reads, tags, rollback
and orphan cleanup know them."""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from shoal.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])
LATER = timedelta(seconds=1)


def make(tmp_path: Path, **options: str) -> Table:
    catalog = shoal.Catalog(str(tmp_path))
    return catalog.create_table(
        "db.t",
        SCHEMA,
        primary_keys=["id"],
        options={"bucket": "1", "changelog-producer": "input", "write-only": "true", **options},
    )


def write(table: Table, count: int) -> None:
    for i in range(count):
        table.upsert(pa.table({"id": [i % 3, 10 + i], "v": [f"v{i}", "x"]}, schema=SCHEMA))


def changes(table: Table, start: int, end: int) -> list[dict[str, object]]:
    return table.incremental(start, end, scan_mode="changelog", row_kind=True).to_pylist()


def kept(table: Table) -> list[int]:
    return table._store.changelogs.list_ids()


def age_everything(table: Table) -> None:
    old = time.time() - 3 * 86400
    for path in Path(table.path).rglob("*"):
        os.utime(path, (old, old))


def java_kept(
    latest_snapshot: int, earliest: int, latest: int, *, retain_min: int, limit: int
) -> list[int]:
    """The long-lived changelogs Paimon 0.9/1.0's ExpireChangelogImpl keeps when every
    changelog is older than the age threshold."""
    end = min(latest_snapshot - retain_min + 1, earliest + limit, latest)
    return list(range(max(end, earliest), latest + 1))


def test_expired_snapshots_keep_their_changelog_and_reads_reach_into_it(tmp_path: Path) -> None:
    table = make(
        tmp_path, **{"changelog.num-retained.max": "100", "changelog.time-retained": "2 h"}
    )
    write(table, 8)
    latest = table.latest_snapshot()
    assert latest is not None
    before = changes(table, 0, latest.id)
    per_snapshot = {s: changes(table, s - 1, s) for s in range(1, latest.id + 1)}
    result = table.expire_snapshots(retain_max=2, older_than=datetime.now() + LATER)
    assert result.expired_snapshots == latest.id - 2
    assert result.kept_changelogs == latest.id - 2
    assert kept(table) == list(range(1, latest.id - 1))
    changelog_dir = Path(table.path) / "changelog"
    assert (changelog_dir / "LATEST").read_text() == str(latest.id - 2)
    # The JSON of the expired snapshot, as Paimon keeps it.
    assert (changelog_dir / "changelog-1").read_text().startswith('{\n  "version" : 3,')
    assert changes(table, 0, latest.id) == before
    for s, rows in per_snapshot.items():
        assert changes(table, s - 1, s) == rows, s
    # Time travel to an expired snapshot still fails clearly; a delta read as well.
    with pytest.raises(shoal.SnapshotNotFoundError):
        table.to_arrow(snapshot_id=1)
    with pytest.raises(shoal.SnapshotNotFoundError):
        table.incremental(0, latest.id, scan_mode="delta")
    # Orphan cleanup keeps every file of the long-lived changelogs; a stray file in
    # their directory (a temporary file of an atomic write) goes.
    stray = changelog_dir / ".changelog-9.tmp"
    stray.write_text("{")
    age_everything(table)
    removed = table.remove_orphan_files(older_than=datetime.now())
    assert removed.paths == (str(stray),)
    assert changes(table, 0, latest.id) == before


@pytest.mark.parametrize(
    ("retain_min", "retain_max", "limit"), [(2, 4, 50), (3, 3, 50), (2, 100, 3), (5, 6, 2)]
)
def test_changelog_expiration_follows_paimons_rules(
    tmp_path: Path, retain_min: int, retain_max: int, limit: int
) -> None:
    table = make(
        tmp_path,
        **{
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "1",
            "changelog.num-retained.min": str(retain_min),
            "changelog.num-retained.max": str(retain_max),
            "snapshot.expire.limit": str(limit),
        },
    )
    write(table, 10)
    latest = table.latest_snapshot()
    assert latest is not None
    everything = {s: changes(table, s - 1, s) for s in range(1, latest.id + 1)}
    total: list[int] = list(range(1, latest.id + 1))
    for _ in range(4):  # each run expires at most `limit` snapshots and changelogs
        # The snapshots this run expires join the changelogs first.
        earliest_changelog = (kept(table) or [s.id for s in table.snapshots()])[0]
        table.expire_snapshots(older_than=datetime.now() + LATER)
        if kept(table):
            # The snapshots expired in this run joined the changelogs, then those went.
            latest_changelog = kept(table)[-1]
            assert kept(table) == java_kept(
                latest.id, earliest_changelog, latest_changelog, retain_min=retain_min, limit=limit
            )
    for changelog_id in kept(table):
        assert changes(table, changelog_id - 1, changelog_id) == everything[changelog_id]
    gone = [i for i in total if i not in kept(table) and table._store.snapshots.find(i) is None]
    for changelog_id in gone:
        with pytest.raises(shoal.SnapshotNotFoundError):
            changes(table, changelog_id - 1, changelog_id)
    # What expired left nothing referenced missing, and orphans behind: none.
    age_everything(table)
    assert table.remove_orphan_files(older_than=datetime.now()).deleted_count == 0


def test_the_age_of_a_changelog_keeps_it(tmp_path: Path) -> None:
    table = make(
        tmp_path, **{"changelog.num-retained.max": "100", "changelog.time-retained": "2 h"}
    )
    write(table, 5)
    table.expire_snapshots(retain_max=1, older_than=datetime.now() + LATER)
    # Every changelog is younger than two hours: all stay.
    assert kept(table) == [1, 2, 3, 4]


def test_tags_rollback_and_deleting_a_tag(tmp_path: Path) -> None:
    table = make(
        tmp_path, **{"changelog.num-retained.max": "100", "changelog.time-retained": "2 h"}
    )
    write(table, 2)
    table.create_tag("two")
    write(table, 4)
    before = {s: changes(table, s - 1, s) for s in range(1, 7)}
    table.expire_snapshots(retain_max=2, older_than=datetime.now() + LATER)
    assert kept(table) == [1, 2, 3, 4]
    # The tag of an expired snapshot goes; its changelog stays with the long-lived one.
    table.delete_tag("two")
    assert changes(table, 1, 2) == before[2]
    age_everything(table)
    table.remove_orphan_files(older_than=datetime.now())
    assert {s: changes(table, s - 1, s) for s in range(1, 7)} == before
    # A rollback to a tag below the long-lived changelogs removes the later ones.
    table.create_tag("five", snapshot_id=5)
    table.rollback_to(tag="five")
    assert kept(table) == [1, 2, 3, 4]
    write(table, 2)
    table.expire_snapshots(retain_max=1, older_than=datetime.now() + LATER)
    assert kept(table) == [1, 2, 3, 4, 5, 6]
    table.rollback_to(tag="five")
    assert kept(table) == [1, 2, 3, 4, 5]
    assert (Path(table.path) / "changelog" / "LATEST").read_text() == "5"


def test_without_a_changelog_producer_it_is_refused(tmp_path: Path) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    with pytest.raises(shoal.UnsupportedFeatureError) as info:
        catalog.create_table(
            "db.t", SCHEMA, primary_keys=["id"], options={"changelog.time-retained": "2 h"}
        )
    assert info.value.feature == "changelog.time-retained"
    with pytest.raises(shoal.InvalidOptionError):
        make(tmp_path, **{"changelog.num-retained.min": "30", "changelog.num-retained.max": "20"})
    with pytest.raises(shoal.InvalidOptionError):
        make(tmp_path, **{"changelog.num-retained.min": "0"})
    # A retention at or below the snapshot one changes nothing, and is accepted.
    options = {
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "2",
        "changelog.num-retained.max": "2",
    }
    table = catalog.create_table("db.u", SCHEMA, primary_keys=["id"], options=options)
    write(table, 3)
    table.expire_snapshots(older_than=datetime.now() + LATER)
    assert kept(table) == []


def test_a_table_written_elsewhere_without_a_producer_is_read_not_expired(tmp_path: Path) -> None:
    """Paimon keeps the data files of such a table's APPEND commits as its changelog;
    shoal reads the table but refuses to write or expire it, before anything changes."""
    catalog = shoal.Catalog(str(tmp_path))
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    write(table, 3)
    schema_file = Path(table.path) / "schema" / "schema-0"
    document = json.loads(schema_file.read_text())
    document["options"]["changelog.time-retained"] = "2 h"
    schema_file.write_text(json.dumps(document))
    opened = shoal.open_table(table.path)
    assert opened.to_arrow().num_rows == 6
    before = sorted(p.name for p in Path(table.path).rglob("*") if p.is_file())
    with pytest.raises(shoal.UnsupportedFeatureError) as info:
        opened.expire_snapshots(retain_max=1, older_than=datetime.now() + LATER)
    assert info.value.feature == "changelog.time-retained"
    with pytest.raises(shoal.UnsupportedFeatureError):
        write(opened, 1)
    assert sorted(p.name for p in Path(table.path).rglob("*") if p.is_file()) == before
