"""The bucket (GCS) or container (Azure) of one test, with the store's own client to
look at it from outside shoal."""

from __future__ import annotations

import abc
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.stores import emulators


@dataclass(frozen=True)
class StoreEnv(abc.ABC):
    endpoint: str
    bucket: str
    scheme = ""

    def uri(self, path: str = "") -> str:
        return f"{self.scheme}://{self.bucket}/{path}".rstrip("/")

    @abc.abstractmethod
    def list_keys(self, prefix: str = "") -> list[str]:
        """The keys under ``prefix``, as the store's own client lists them."""

    @abc.abstractmethod
    def put(self, key: str, data: bytes) -> None:
        """Write an object with the store's own client."""

    @abc.abstractmethod
    def get(self, key: str) -> bytes:
        """Read an object with the store's own client."""

    def download(self, prefix: str, target: Path) -> Path:
        """A local copy of every object under ``prefix/`` (the tree below it)."""
        for key in self.list_keys(f"{prefix}/"):
            local = target / key[len(prefix) + 1 :]
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_bytes(self.get(key))
        return target


@dataclass(frozen=True)
class GcsEnv(StoreEnv):
    scheme = "gs"

    @functools.cached_property
    def client(self) -> Any:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        return storage.Client(
            project="shoal",
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": self.endpoint},
        ).bucket(self.bucket)

    def list_keys(self, prefix: str = "") -> list[str]:
        return sorted(b.name for b in self.client.list_blobs(prefix=prefix))

    def put(self, key: str, data: bytes) -> None:
        self.client.blob(key).upload_from_string(data)

    def get(self, key: str) -> bytes:
        return bytes(self.client.blob(key).download_as_bytes())


@dataclass(frozen=True)
class AzureEnv(StoreEnv):
    scheme = "az"

    @functools.cached_property
    def client(self) -> Any:
        from azure.storage.blob import ContainerClient

        return ContainerClient.from_connection_string(
            emulators.azure_connection_string(self.endpoint), self.bucket
        )

    def list_keys(self, prefix: str = "") -> list[str]:
        return sorted(b.name for b in self.client.list_blobs(name_starts_with=prefix))

    def put(self, key: str, data: bytes) -> None:
        self.client.upload_blob(key, data, overwrite=True)

    def get(self, key: str) -> bytes:
        return bytes(self.client.download_blob(key).readall())
