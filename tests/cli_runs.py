"""Running the ``shoal`` command in the suite's process, with no warehouse or output
format taken from the environment (the ``no_shoal_environment`` fixture), and what a
demo run's table must hold."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner, Result

from shoal.cli import cli
from shoal.cli.demo_data import generate
from shoal.cli.demo_run import DemoConfig


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_json(*args: str) -> Any:
    result = run(*args, "--output", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def demo_orders(config: DemoConfig) -> dict[tuple[str, int], tuple[str, Any]]:
    """Each order of the demo's stream: its latest event's status and time (the table
    orders events by ``event_time``, so a late event never overrides a newer one)."""
    latest: dict[tuple[str, int], Any] = {}
    for batch in generate(config.stream):
        for e in batch.events:
            key = (e.dt, e.order_id)
            if key not in latest or e.event_time > latest[key].event_time:
                latest[key] = e
    return {k: (e.status, e.event_time) for k, e in latest.items()}
