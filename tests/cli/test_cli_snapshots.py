"""``shoal snapshots`` on a table with a damaged snapshot file: the readable snapshots,
a line per damaged one with its error, the rollback that removes the damage, exit code
5; and the rollback it suggests, run as suggested."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

import shoal
from shoal.cli.exit_codes import CORRUPT
from tests.cli_runs import run
from tests.conftest import EVENTS_SCHEMA, events


@pytest.fixture
def wh(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


@pytest.fixture
def table(wh: str) -> shoal.Table:
    """Four snapshots of three rows each."""
    created = shoal.Catalog(wh).create_table("db.events", EVENTS_SCHEMA)
    for i in range(4):
        created.append(events(range(i * 10, i * 10 + 3)))
    return created



def damage(table: shoal.Table, snapshot_id: int, how: str = "truncated") -> Path:
    path = Path(table.path) / "snapshot" / f"snapshot-{snapshot_id}"
    data = path.read_bytes()
    path.write_bytes(
        {"truncated": data[: len(data) // 2], "emptied": b"", "garbage": b"\x00\xff"}[how]
    )
    return path


def suggested_rollback(stderr: str) -> list[str]:
    """The arguments of the ``shoal rollback`` command the hint gives."""
    hint = " ".join(stderr.split())  # rich wraps the hint to the terminal width
    found = re.search(r"'shoal (rollback [^']*)'", hint)
    assert found, hint
    return shlex.split(found.group(1))


def test_a_healthy_table_lists_every_snapshot(table: shoal.Table) -> None:
    result = run("snapshots", table.path)
    assert result.exit_code == 0, result.output
    assert "damaged" not in result.output
    assert "hint" not in result.stderr
    listed = json.loads(run("snapshots", table.path, "-o", "json").stdout)
    assert [(r["snapshot_id"], r["status"], r["error"]) for r in listed] == [
        (i, "ok", None) for i in range(1, 5)
    ]


@pytest.mark.parametrize("how", ["truncated", "emptied", "garbage"])
def test_a_damaged_middle_snapshot_is_marked(table: shoal.Table, how: str) -> None:
    path = damage(table, 3, how)
    result = run("snapshots", table.path)
    assert result.exit_code == CORRUPT
    lines = result.stdout.splitlines()
    rows = [line for line in lines if re.match(r"^│\s+\d+ │", line)]
    assert [int(r.split("│")[1]) for r in rows] == [1, 2, 4]
    damaged = [line for line in lines if line.startswith("snapshot 3 is damaged")]
    assert len(damaged) == 1
    assert path.name in result.stdout
    assert "Traceback" not in result.output
    # The latest snapshot still reads: the hint says so and names the rollback below the damage.
    assert "the latest, is readable" in " ".join(result.stderr.split())
    assert suggested_rollback(result.stderr) == ["rollback", table.path, "--snapshot", "2"]


def test_json_lists_the_damaged_snapshot_with_its_error(table: shoal.Table) -> None:
    path = damage(table, 4, "emptied")
    result = run("snapshots", table.path, "--output", "json")
    assert result.exit_code == CORRUPT
    assert result.stderr == ""  # one JSON document, nothing else
    listed = json.loads(result.stdout)
    assert [r["snapshot_id"] for r in listed] == [1, 2, 3, 4]
    assert [r["status"] for r in listed] == ["ok", "ok", "ok", "damaged"]
    last = listed[-1]
    assert path.name in last["error"]
    assert last["commit_kind"] is None
    assert last["properties"] is None
    assert listed[0]["properties"] == {}
    assert listed[0]["error"] is None


def test_rollback_as_the_hint_says_after_a_damaged_latest_snapshot(
    table: shoal.Table, wh: str
) -> None:
    damage(table, 4)
    assert run("read", "-w", wh, "db.events").exit_code == CORRUPT
    failed = run("read", "-w", wh, "db.events")
    assert "'shoal snapshots TABLE'" in failed.stderr  # the way to the listing

    listed = run("snapshots", "-w", wh, "db.events")
    assert listed.exit_code == CORRUPT
    assert "the latest, is readable" not in " ".join(listed.stderr.split())
    command = suggested_rollback(listed.stderr)
    assert command == ["rollback", "-w", wh, "db.events", "--snapshot", "3"]

    rolled = run(*command, "--yes")
    assert rolled.exit_code == 0, rolled.output
    after = run("snapshots", "-w", wh, "db.events", "-o", "json")
    assert after.exit_code == 0
    assert [r["snapshot_id"] for r in json.loads(after.stdout)] == [1, 2, 3]
    read = run("read", "-w", wh, "db.events", "-o", "json")
    assert read.exit_code == 0
    assert len(json.loads(read.stdout)) == 9


def test_no_readable_snapshot_below_the_damage(table: shoal.Table) -> None:
    damage(table, 1)
    result = run("snapshots", table.path)
    assert result.exit_code == CORRUPT
    hint = " ".join(result.stderr.split())
    assert "restore the damaged files from a backup" in hint
    assert "shoal rollback" not in hint
