"""Every command-line test runs with no settings from the environment."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_environment(no_shoal_environment: None) -> None:
    pass
