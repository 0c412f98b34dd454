"""FileIO for Azure Blob Storage and ADLS Gen2, with an atomic create.

Locations: ``az://container/path``, ``abfs://container/path`` and ``abfss://...`` (the
account from the options or the environment), and Hadoop's forms that name the
account, as Paimon writes them: ``abfs[s]://container@account.dfs.core.windows.net/path``
and ``wasb[s]://container@account.blob.core.windows.net/path``. Paths within the
FileIO are ``container/path``.

**The library.** pyarrow's ``AzureFileSystem`` does the data path (reads, including
``pyarrow.dataset``'s Parquet reads, listings with sizes and times, streamed writes,
deletes). The create-if-absent that publishes a snapshot goes through Microsoft's own
client (``azure-storage-blob``, the ``azure`` extra): a Put Blob with
``If-None-Match: *``, which the service refuses with ``409 BlobAlreadyExists`` when the
blob exists, so of several writers racing for one snapshot id exactly one wins. Batched
deletes (Blob Batch, 256 blobs a request) and whole-file reads and writes of metadata go
through it too: one request each, where pyarrow's streams first ask for the blob's
properties.

Measured on Azurite (``bench/object_stores.py``, docs/object-stores.md): pyarrow has no
conditional put; obstore has one and is the fastest with small objects (about 3x
Microsoft's client), but its bulk delete reports one outcome for the whole call, not
which blobs went, and its GCS client cannot be tested against a GCS emulator, so shoal
keeps one design on every store: pyarrow for the data path, the store's own client for
the create, the deletes and (here) small whole-file requests.

**Options** (``storage_options``; the first that gives a setting wins): Paimon's keys,
under ``fs.azure.``, ``azure.`` or ``fs.wasb.``: ``account.key`` and
``account.key.<account>.blob.core.windows.net`` (or ``.dfs.``), ``sas.fixed.token``;
the names pyarrow and adlfs use: ``account_name``, ``account_key``, ``sas_token``,
``connection_string``, ``blob_storage_authority`` and ``blob_storage_scheme`` (an
emulator's ``host:port`` and ``http``), ``client_id``, ``client_secret``,
``tenant_id``. Then the environment: ``AZURE_STORAGE_CONNECTION_STRING``,
``AZURE_STORAGE_ACCOUNT_NAME``, ``AZURE_STORAGE_ACCOUNT_KEY``,
``AZURE_STORAGE_SAS_TOKEN``. With no key, token or client secret, both clients use
Azure's default credential chain (``azure-identity``'s ``DefaultAzureCredential``).

The first contact with a container must be answered within the store time limit
(:mod:`shoal.io.connect`); the clients' own timeouts are set from it.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from shoal.errors import (
    InvalidArgumentError,
    InvalidOptionError,
    MissingDependencyError,
    StoreUnreachableError,
)
from shoal.io.connect import reach, store_timeout
from shoal.io.file_io import FileIO, ObjectStoreFileIO, delete_in_batches
from shoal.io.store_options import HIDDEN, normalized, refuse_unknown

try:
    from azure.core import exceptions as azure_errors
    from azure.storage.blob import BlobServiceClient, LinearRetry
except ImportError as exc:  # depends on the installation
    raise MissingDependencyError("Azure tables", "azure", exc.name or "azure-storage-blob") from exc

SCHEMES = ("az", "abfs", "abfss", "wasb", "wasbs")
PAIMON_PREFIXES = ("azure.", "fs.azure.", "fs.wasb.")
ACCOUNT_KEY = "fs.azure.account.key"
SAS_TOKEN = "fs.azure.sas.fixed.token"
LIBRARY_KEYS = (
    "account_name",
    "account_key",
    "sas_token",
    "connection_string",
    "blob_storage_authority",
    "blob_storage_scheme",
    "client_id",
    "client_secret",
    "tenant_id",
)
KNOWN_KEYS = (ACCOUNT_KEY, f"{ACCOUNT_KEY}.*", SAS_TOKEN, *LIBRARY_KEYS)
DEFAULT_SUFFIX = "core.windows.net"
RETRIES = 2  # attempts after the first, for a request that failed
DELETE_BATCH = 256  # the most sub-requests one Blob Batch request takes
CHECK = (
    "the network connection and any proxy (HTTPS_PROXY), the account and its endpoint "
    "(account_name, blob_storage_authority, AZURE_STORAGE_CONNECTION_STRING) and the "
    "credentials (account key, SAS token or Azure's default credential)"
)


@dataclass(frozen=True, slots=True)
class AzureOptions:
    """Where and how to reach the account; secrets are kept out of ``repr``."""

    account: str
    account_key: str | None = None
    sas_token: str | None = None
    authority: str | None = None  # an emulator's "host:port"; None: the account's host
    scheme: str = "https"
    client_id: str | None = None
    client_secret: str | None = None
    tenant_id: str | None = None
    timeout: float = 30.0

    def __repr__(self) -> str:
        return f"AzureOptions(account={self.account!r}, endpoint={self.account_url!r})"

    @property
    def account_url(self) -> str:
        if self.authority:  # an emulator: the account is the first path segment
            return f"{self.scheme}://{self.authority}/{self.account}"
        return f"{self.scheme}://{self.account}.blob.{DEFAULT_SUFFIX}"

    def filesystem(self) -> pafs.AzureFileSystem:
        kwargs: dict[str, Any] = {"account_name": self.account}
        if self.account_key:
            kwargs["account_key"] = self.account_key
        elif self.sas_token:
            kwargs["sas_token"] = self.sas_token
        if self.client_id:
            kwargs.update(
                client_id=self.client_id,
                client_secret=self.client_secret,
                tenant_id=self.tenant_id,
            )
        if self.authority:
            kwargs.update(
                blob_storage_authority=self.authority,
                dfs_storage_authority=self.authority,
                blob_storage_scheme=self.scheme,
                dfs_storage_scheme=self.scheme,
            )
        return pafs.AzureFileSystem(**kwargs)

    def store(self, container: str) -> str:
        """The store as error messages name it."""
        return f"az://{container} at {self.account_url}"


def azure_options(
    uri: str,
    storage_options: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[AzureOptions, str]:
    """The options an Azure URI, the storage options and the environment give, and the
    path within the account (``container/path``)."""
    env = os.environ if environ is None else environ
    parts = urlsplit(uri)
    if parts.scheme not in SCHEMES or parts.query or parts.fragment:
        raise InvalidArgumentError(
            f"{uri!r}: an Azure location is az://container/path or "
            "abfss://container@account.dfs.core.windows.net/path, without parameters "
            "(give settings as storage options)"
        )
    container, at, host = parts.netloc.partition("@")
    uri_account = None
    if at:
        uri_account, _, suffix = host.partition(".")
        if suffix not in (f"blob.{DEFAULT_SUFFIX}", f"dfs.{DEFAULT_SUFFIX}"):
            raise InvalidArgumentError(
                f"{uri!r}: shoal knows the accounts of *.blob.{DEFAULT_SUFFIX} and "
                f"*.dfs.{DEFAULT_SUFFIX}; for another endpoint write az://container/path "
                "and give account_name and blob_storage_authority"
            )
    if not container:
        raise InvalidArgumentError(f"{uri!r} names no container")
    given = dict(storage_options or {})
    opts = normalized(given, PAIMON_PREFIXES, "fs.azure.")
    refuse_unknown("Azure", given, opts, KNOWN_KEYS)
    conn = _connection_string(
        opts.get("connection_string") or env.get("AZURE_STORAGE_CONNECTION_STRING", "")
    )
    account = (
        uri_account
        or opts.get("account_name")
        or conn.get("accountname")
        or env.get("AZURE_STORAGE_ACCOUNT_NAME")
    )
    if not account:
        raise InvalidArgumentError(
            f"{uri!r}: which storage account? Write abfss://{container}@ACCOUNT.dfs."
            f"{DEFAULT_SUFFIX}/..., or give account_name (or AZURE_STORAGE_ACCOUNT_NAME)"
        )
    key = (
        opts.get("account_key")
        or opts.get(f"{ACCOUNT_KEY}.{account}.blob.{DEFAULT_SUFFIX}")
        or opts.get(f"{ACCOUNT_KEY}.{account}.dfs.{DEFAULT_SUFFIX}")
        or opts.get(ACCOUNT_KEY)
        or conn.get("accountkey")
        or env.get("AZURE_STORAGE_ACCOUNT_KEY")
    )
    sas = (
        opts.get("sas_token")
        or opts.get(SAS_TOKEN)
        or conn.get("sharedaccesssignature")
        or env.get("AZURE_STORAGE_SAS_TOKEN")
    )
    authority = opts.get("blob_storage_authority")
    scheme = opts.get("blob_storage_scheme") or ""
    endpoint = conn.get("blobendpoint")
    if endpoint and not authority:
        parsed = urlsplit(endpoint)
        authority, scheme = parsed.netloc, scheme or parsed.scheme
    scheme = scheme or conn.get("defaultendpointsprotocol") or "https"
    if scheme not in ("http", "https"):
        raise InvalidOptionError("blob_storage_scheme", scheme, "give http or https")
    client = [opts.get(k) for k in ("client_id", "client_secret", "tenant_id")]
    if any(client) and not all(client):
        raise InvalidOptionError(
            "client_id", HIDDEN, "a service principal needs client_id, client_secret and tenant_id"
        )
    options = AzureOptions(
        account=account,
        account_key=key or None,
        sas_token=(sas or "").lstrip("?") or None,
        authority=authority or None,
        scheme=scheme,
        client_id=client[0],
        client_secret=client[1],
        tenant_id=client[2],
        timeout=store_timeout(env),
    )
    return options, f"{container}{parts.path}".rstrip("/")


def _connection_string(text: str) -> dict[str, str]:
    """The fields of an Azure connection string, by lower-case name."""
    fields: dict[str, str] = {}
    for part in text.split(";"):
        name, eq, value = part.partition("=")
        if eq:
            fields[name.strip().lower()] = value.strip()
    return fields


class AzureFileIO(ObjectStoreFileIO):
    """FileIO on Azure Blob Storage: pyarrow for the data path, azure-storage-blob for
    the conditional create and batched deletes. Thread-safe and picklable (the client is
    made lazily, once per process)."""

    options: AzureOptions

    def __init__(self, options: AzureOptions) -> None:
        super().__init__(options, options.filesystem())

    @staticmethod
    def connect(options: AzureOptions) -> Any:
        """An azure-storage-blob BlobServiceClient."""
        return _blob_service(options)

    def read_bytes(self, path: str) -> bytes:
        """One Get Blob (pyarrow asks for the blob's properties first)."""
        container, _, name = path.partition("/")
        try:
            return bytes(self.client.get_blob_client(container, name).download_blob().readall())
        except azure_errors.ResourceNotFoundError as exc:
            raise FileNotFoundError(errno.ENOENT, "no such blob", path) from exc
        except (azure_errors.ServiceRequestError, azure_errors.ServiceResponseError) as exc:
            raise self.unreachable(container, exc) from exc
        except azure_errors.HttpResponseError as exc:
            raise OSError(errno.EIO, f"{exc.status_code} {exc.reason}", path) from exc

    def write_bytes(self, path: str, data: bytes) -> None:
        """One Put Blob, replacing any blob of that name (readers see the old or the
        new blob, never a part)."""
        container, _, name = path.partition("/")
        try:
            self.client.get_blob_client(container, name).upload_blob(data, overwrite=True)
        except (azure_errors.ServiceRequestError, azure_errors.ServiceResponseError) as exc:
            raise self.unreachable(container, exc) from exc
        except azure_errors.HttpResponseError as exc:
            raise OSError(errno.EIO, f"{exc.status_code} {exc.reason}", path) from exc

    def overwrite(self, path: str, data: bytes) -> None:
        self.write_bytes(path, data)

    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` unless a blob has that name (``If-None-Match: *``); False if
        one did. A blob found holding exactly ``data`` counts as created: a retried put
        whose first answer was lost meets its own blob."""
        container, _, name = path.partition("/")
        blob = self.client.get_blob_client(container, name)
        try:
            blob.upload_blob(data, overwrite=False, timeout=int(self.options.timeout))
        except azure_errors.ResourceExistsError:
            try:
                return self.read_bytes(path) == data
            except FileNotFoundError:
                return False
        except (azure_errors.ServiceRequestError, azure_errors.ServiceResponseError) as exc:
            raise self.unreachable(container, exc) from exc
        except azure_errors.HttpResponseError as exc:
            raise OSError(f"could not create {path}: {exc.status_code} {exc.reason}") from exc
        return True

    def delete(self, path: str) -> bool:
        """One Delete Blob (pyarrow's leaves a directory marker behind); False if the
        blob was not there."""
        container, _, name = path.partition("/")
        try:
            self.client.get_blob_client(container, name).delete_blob()
        except azure_errors.ResourceNotFoundError:
            return False
        except (azure_errors.ServiceRequestError, azure_errors.ServiceResponseError) as exc:
            raise self.unreachable(container, exc) from exc
        except azure_errors.HttpResponseError as exc:
            raise OSError(errno.EIO, f"{exc.status_code} {exc.reason}", path) from exc
        return True

    def delete_many(self, paths: Sequence[str]) -> int:
        """Blob Batch deletes of 256 blobs a request on the I/O pool; an absent blob is
        not counted."""
        return delete_in_batches(paths, DELETE_BATCH, _split, self._delete_batch)

    def _delete_batch(self, batch: tuple[str, list[str]]) -> tuple[int, dict[str, str]]:
        container, names = batch
        client = self.client.get_container_client(container)
        try:
            responses = list(client.delete_blobs(*names, raise_on_any_failure=False))
        except (azure_errors.ServiceRequestError, azure_errors.ServiceResponseError) as exc:
            reason = str(self.unreachable(container, exc))
            return 0, {f"{container}/{n}": reason for n in names}
        except azure_errors.HttpResponseError as exc:
            reason = f"{exc.status_code} {exc.reason}"
            return 0, {f"{container}/{n}": reason for n in names}
        deleted, errors = 0, {}
        for name, response in zip(names, responses, strict=True):
            if 200 <= response.status_code < 300:
                deleted += 1
            elif response.status_code != 404:
                errors[f"{container}/{name}"] = f"{response.status_code} {response.reason}"
        return deleted, errors

    def mkdirs(self, path: str) -> None:
        """Nothing: blob containers have no directories that writes need."""
        del path

    def remove_empty_dir(self, path: str) -> bool:
        del path
        return False

    def probe(self, container: str) -> None:
        """Ask for the container's properties; StoreUnreachableError without an answer.
        Any answer counts ("not found", "forbidden"): later operations report those."""
        try:
            self.client.get_container_client(container).get_container_properties(
                timeout=max(1, int(self.options.timeout))
            )
        except (azure_errors.ServiceRequestError, azure_errors.ServiceResponseError) as exc:
            raise self.unreachable(container, exc) from exc
        except azure_errors.HttpResponseError:
            pass
        except azure_errors.ClientAuthenticationError:
            pass

    def unreachable(self, container: str, exc: Exception) -> StoreUnreachableError:
        return StoreUnreachableError(
            self.options.store(container), type(exc).__name__, self.options.timeout, CHECK
        )


def _blob_service(options: AzureOptions) -> Any:
    credential: Any
    if options.account_key:
        credential = {"account_name": options.account, "account_key": options.account_key}
    elif options.sas_token:
        credential = options.sas_token
    else:
        try:
            from azure import identity
        except ImportError as exc:
            raise MissingDependencyError("Azure tables", "azure", "azure-identity") from exc
        if options.client_id:
            credential = identity.ClientSecretCredential(
                options.tenant_id or "", options.client_id, options.client_secret or ""
            )
        else:
            credential = identity.DefaultAzureCredential()
    return BlobServiceClient(
        options.account_url,
        credential=credential,
        connection_timeout=max(1.0, options.timeout / 6),
        read_timeout=options.timeout / 4,
        # The SDK's default waits 15 s and more between attempts: a request that gets
        # no answer gives up within about the store time limit (three attempts).
        # (The SDK's type says whole seconds; it sleeps any number of them.)
        retry_policy=LinearRetry(
            backoff=options.timeout / 8,  # type: ignore[arg-type]
            random_jitter_range=0,
            retry_total=RETRIES,
        ),
    )


def azure_file_io_for(
    uri: str, storage_options: Mapping[str, str] | None = None
) -> tuple[FileIO, str]:
    """The FileIO for an Azure URI, once its container answered (see
    :func:`shoal.io.connect.reach`), and ``container/path``.

    Raises:
        StoreUnreachableError: the store gave no answer within the time limit.
        InvalidArgumentError: a URI that cannot be used.
        InvalidOptionError: a storage option that is unknown or cannot be used.
    """
    options, path = azure_options(uri, storage_options)
    container = path.split("/", 1)[0]
    store = options.store(container)

    def connect() -> FileIO:
        file_io = AzureFileIO(options)
        file_io.probe(container)
        return file_io

    file_io = reach(
        ("azure", options, container), connect, store=store, check=CHECK, timeout=options.timeout
    )
    return file_io, path


def _split(path: str) -> tuple[str, str]:
    """``container/name`` -> (container, name)."""
    container, _, name = path.partition("/")
    return container, name
