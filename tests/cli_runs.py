"""Running the ``shoal`` command in the suite's process, with no warehouse or output
format taken from the environment (the ``no_shoal_environment`` fixture)."""

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
