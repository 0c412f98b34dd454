"""``shoal demo --master spark://...``: the streaming demo as an application of the
standalone cluster, its tasks run by the workers' executors, beside the cluster
driver's own application (each worker has a core for each)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import shoal
from shoal.cli.demo_run import DemoConfig
from tests.cli_runs import demo_orders
from tests.cluster.spark_processes import Standalone, clean_environment

pytestmark = pytest.mark.cluster

EVENTS, HOURS = 1000, 2


def test_the_demo_runs_on_the_cluster(cluster: Standalone, tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    warehouse = tmp_path / "warehouse"
    shoal_command = Path(sys.executable).with_name("shoal")
    done = subprocess.run(
        [
            str(shoal_command),
            "demo",
            "--master",
            cluster.master_url,
            "--warehouse",
            str(warehouse),
            "--events",
            str(EVENTS),
            "--hours",
            str(HOURS),
            "--output",
            "json",
        ],
        env=clean_environment(conf),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    doc = json.loads(done.stdout)
    assert doc["spark_master"] == cluster.master_url
    table = shoal.open_table(doc["path"])
    rows = table.to_arrow().to_pylist()
    assert {(r["dt"], r["order_id"]): (r["status"], r["event_time"]) for r in rows} == demo_orders(
        DemoConfig(events=EVENTS, hours=HOURS)
    )
    ingests = [step for step in doc["timeline"] if step["kind"] == "ingest"]
    assert doc["downstream"]["rows"] == sum(step["rows"] for step in ingests)
    assert doc["downstream"]["snapshots"] == len(ingests)
