"""An executor killed in the middle of a write, on the standalone cluster: its task's
first attempt has written files to S3 when its JVM dies; Spark runs the task again on
the other executor. The table then holds every row once, no snapshot names a file of
the killed attempt, and orphan cleanup removes exactly the files no snapshot names."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

import shoal
from shoal.table import Table
from tests.cluster.cluster_cases import orphan_cutoff, relative
from tests.cluster.spark_processes import Runner
from tests.conftest import EVENTS_SCHEMA
from tests.s3.s3_support import S3Env

pytestmark = pytest.mark.cluster

ROWS = 600  # from one task; its first attempt stops after BLOCK_AFTER of them
BLOCK_AFTER = 300


def _poll(what: str, found: object, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} within {timeout:.0f} s")


def test_an_executor_killed_mid_write(s3: S3Env, cluster_driver: Runner, tmp_path: Path) -> None:
    table = shoal.Catalog(s3.uri("wh")).create_table(
        "db.killed", EVENTS_SCHEMA, options={"target-file-size": "4 kb"}
    )
    data = table.path.split(f"s3://{s3.bucket}/", 1)[1] + "/bucket-0/"
    markers = tmp_path / "markers"
    markers.mkdir()

    cluster_driver.send(
        "write_with_lost_executor",
        path=table.path,
        markers=str(markers),
        count=ROWS,
        block_after=BLOCK_AFTER,
    )
    _poll("the first attempt did not stop", lambda: any(markers.glob("blocked-*")))
    (blocked,) = markers.glob("blocked-*")
    executor = int(blocked.name.split("-")[1])
    # The rows before the stop reach the writer in batches of 50; it rolls a file at
    # 4 kb each time, so the attempt's files appear on S3 while it waits.
    _poll("the first attempt wrote no files", lambda: len(s3.list_keys(data)) >= 3)
    time.sleep(2)  # the attempt is waiting: nothing more comes
    written_by_killed = set(s3.list_keys(data))
    os.kill(executor, signal.SIGKILL)

    attempts = cluster_driver.receive()

    assert f"attempt-0-{executor}" in attempts
    (retried,) = [a for a in attempts if a.startswith("attempt-1-")]
    assert retried != f"attempt-1-{executor}"  # on another executor
    table = Table.open(table.path)
    assert [s.id for s in table.snapshots()] == [1]
    rows = table.to_arrow()
    assert sorted(rows.column("id").to_pylist()) == list(range(ROWS))  # each row once
    named = {
        p.split(f"{s3.bucket}/", 1)[1] for p in table.system_table("files")["file_path"].to_pylist()
    }
    assert not named & written_by_killed
    unnamed = set(s3.list_keys(data)) - named
    assert written_by_killed <= unnamed  # (a file in flight at the kill may be there too)

    removed = table.remove_orphan_files(older_than=orphan_cutoff())

    assert relative(table, removed.paths) == sorted(
        relative(table, [f"s3://{s3.bucket}/{k}" for k in unnamed])
    )
    assert set(s3.list_keys(data)) == named
    assert table.to_arrow().num_rows == ROWS
