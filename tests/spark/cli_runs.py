"""Running the ``shoal`` command in the suite's process (on the suite's SparkSession,
with the ``cli_session`` fixture of ``conftest.py``)."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner, Result

from shoal.cli import cli


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_json(*args: str) -> Any:
    result = run(*args, "--output", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)
