"""Object-store emulators for the GCS and Azure tests: fake-gcs-server and Azurite, each
started once per session on a free port and stopped at the end, and a fresh bucket or
container per test. ``store`` runs a test on both."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.stores import emulators
from tests.stores.store_support import AzureEnv, GcsEnv, StoreEnv


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[emulators.Emulator]:
    with emulators.fake_gcs() as emulator:
        yield emulator


@pytest.fixture(scope="session")
def azurite_emulator() -> Iterator[emulators.Emulator]:
    with emulators.azurite() as emulator:
        yield emulator


@pytest.fixture
def gcs(gcs_emulator: emulators.Emulator, monkeypatch: pytest.MonkeyPatch) -> GcsEnv:
    """``STORAGE_EMULATOR_HOST`` pointing at the emulator, and a new empty bucket."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator.endpoint)
    env = GcsEnv(gcs_emulator.endpoint, f"shoal-{uuid.uuid4().hex[:16]}")
    emulators.create_gcs_bucket(env.endpoint, env.bucket)
    return env


@pytest.fixture
def azure(azurite_emulator: emulators.Emulator, monkeypatch: pytest.MonkeyPatch) -> AzureEnv:
    """``AZURE_STORAGE_CONNECTION_STRING`` pointing at Azurite, and a new container."""
    for name in (
        "AZURE_STORAGE_ACCOUNT_NAME",
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_SAS_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    connection = emulators.azure_connection_string(azurite_emulator.endpoint)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection)
    env = AzureEnv(azurite_emulator.endpoint, f"shoal-{uuid.uuid4().hex[:16]}")
    emulators.create_azure_container(env.endpoint, env.bucket)
    return env


@pytest.fixture(params=["gcs", "azure"])
def store(request: pytest.FixtureRequest) -> StoreEnv:
    """The test's bucket on each emulator in turn."""
    env: StoreEnv = request.getfixturevalue(request.param)
    return env
