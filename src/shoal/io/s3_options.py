"""Where and how to reach an S3 store: the environment, and ``storage_options`` over it.

``storage_options`` keys (a mapping of strings) take precedence over the environment,
setting by setting. Three spellings are accepted for each setting:

- **Paimon's** (its S3 filesystem's): ``s3.``, ``s3a.`` and ``fs.s3a.`` are one prefix
  (Paimon maps them all to Hadoop's ``fs.s3a.``), and ``access-key`` is ``access.key``,
  as Paimon mirrors them: ``s3.endpoint``, ``s3.access-key``, ``s3.secret-key``,
  ``s3.session-token``, ``s3.region`` (Hadoop's ``fs.s3a.endpoint.region`` too),
  ``s3.path.style.access``;
- **pyiceberg's**: ``s3.access-key-id``, ``s3.secret-access-key``,
  ``s3.force-virtual-addressing``;
- **the AWS SDKs' and deltalake's**, in either case: ``AWS_ENDPOINT_URL``,
  ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
  ``AWS_REGION``, ``AWS_ALLOW_HTTP``, ``AWS_VIRTUAL_HOSTED_STYLE_REQUEST``.

Any other key is refused with :class:`~shoal.errors.UnknownOptionError` naming the
nearest known key. Values of credentials never appear in an error, a repr or a log line.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from shoal.errors import InvalidOptionError, UnknownOptionError
from shoal.io.connect import store_timeout

HIDDEN = "<hidden>"  # what an error shows in place of a value that may be a secret
PAIMON_PREFIXES = ("fs.s3a.", "s3a.", "s3.")  # one prefix to Paimon: fs.s3a.

# The setting each accepted key gives (keys after the Paimon prefix is made ``fs.s3a.``).
_PAIMON = {
    "endpoint": "endpoint_url",
    "access.key": "access_key",
    "access-key": "access_key",
    "secret.key": "secret_key",
    "secret-key": "secret_key",
    "session.token": "session_token",
    "session-token": "session_token",
    "endpoint.region": "region",
    "region": "region",
    "path.style.access": "path_style",
    "path-style-access": "path_style",
    "connection.ssl.enabled": "ssl",
    # pyiceberg's names under the same prefix
    "access-key-id": "access_key",
    "secret-access-key": "secret_key",
    "force-virtual-addressing": "virtual_hosted",
}
_SDK = {
    "aws_endpoint_url": "endpoint_url",
    "aws_endpoint_url_s3": "endpoint_url",
    "aws_endpoint": "endpoint_url",
    "aws_access_key_id": "access_key",
    "aws_secret_access_key": "secret_key",
    "aws_session_token": "session_token",
    "aws_region": "region",
    "aws_default_region": "region",
    "aws_allow_http": "allow_http",
    "aws_virtual_hosted_style_request": "virtual_hosted",
}
SECRET_SETTINGS = frozenset({"access_key", "secret_key", "session_token"})
_BOOLEAN_SETTINGS = frozenset({"path_style", "ssl", "allow_http", "virtual_hosted"})
KNOWN_KEYS = tuple(
    sorted({f"s3.{k}" for k in _PAIMON} | {f"fs.s3a.{k}" for k in _PAIMON} | set(_SDK))
)


@dataclass(frozen=True, slots=True)
class S3Options:
    """Where and how to reach the store; None leaves a setting to the SDKs' defaults.

    Hashable: FileIOs are shared per configuration. The credentials stay out of the
    repr."""

    endpoint_url: str | None = None  # e.g. "http://localhost:9000"; None: AWS
    region: str | None = None
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    timeout: float = 30.0  # the store time limit, seconds (shoal.io.connect)
    # True: path-style requests (bucket in the path); False: virtual-hosted style;
    # None: path style for a custom endpoint, virtual-hosted for AWS.
    path_style: bool | None = None

    @staticmethod
    def from_env(environ: Mapping[str, str] | None = None) -> S3Options:
        """Endpoint and region from the AWS environment variables (credentials are
        left to the SDKs' default chains, which read them from there too), the time
        limit from ``SHOAL_STORE_TIMEOUT``."""
        env = os.environ if environ is None else environ
        endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None
        return S3Options(endpoint_url=endpoint, region=region, timeout=store_timeout(env))

    def store(self, bucket: str) -> str:
        """The store as error messages name it."""
        where = f" at {self.endpoint_url}" if self.endpoint_url else ""
        return f"s3://{bucket}{where}"

    def with_storage_options(self, storage_options: Mapping[str, str]) -> S3Options:
        """These options with the settings ``storage_options`` give in their place.

        Raises:
            UnknownOptionError: a key no S3 setting has (the nearest known one named).
            InvalidOptionError: a value that cannot be used (a secret's never shown).
        """
        settings = parse(storage_options)
        if not settings:
            return self
        endpoint = settings.get("endpoint_url", self.endpoint_url)
        plain_http = settings.get("allow_http") is True or settings.get("ssl") is False
        if isinstance(endpoint, str) and endpoint and "://" not in endpoint:
            endpoint = f"{'http' if plain_http else 'https'}://{endpoint}"
        path_style = settings.get("path_style")
        virtual = settings.get("virtual_hosted")
        if virtual is not None:
            if path_style is not None and path_style == virtual:
                raise InvalidOptionError(
                    "s3.path.style.access",
                    path_style,
                    "the storage options ask for path-style and virtual-hosted requests "
                    "at once; give one of them",
                )
            path_style = not virtual
        changes: dict[str, Any] = {
            k: v for k, v in settings.items() if k in ("region", *SECRET_SETTINGS)
        }
        changes["endpoint_url"] = endpoint
        if path_style is not None:
            changes["path_style"] = path_style
        return replace(self, **changes)


def setting_of(key: str) -> str | None:
    """The S3 setting a storage option key gives, or None for a key S3 does not know."""
    for prefix in PAIMON_PREFIXES:
        if key.startswith(prefix):
            return _PAIMON.get(key[len(prefix) :])
    return _SDK.get(key.lower())


def parse(storage_options: Mapping[str, str]) -> dict[str, str | bool]:
    """The settings the keys give (booleans read), each key checked."""
    settings: dict[str, str | bool] = {}
    given: Mapping[Any, object] = storage_options  # callers may pass anything
    for key, raw in given.items():
        name = setting_of(str(key))
        if name is None:
            suggestion = nearest(str(key))
            hint = f"; did you mean {suggestion!r}?" if suggestion else ""
            raise UnknownOptionError(
                str(key),
                HIDDEN,
                f"not an S3 storage option (docs/tables.md lists them){hint}",
                suggestion,
            )
        if not isinstance(raw, str):
            shown = HIDDEN if name in SECRET_SETTINGS else raw
            raise InvalidOptionError(str(key), shown, "storage option values are strings")
        if name in settings:
            raise InvalidOptionError(
                str(key), HIDDEN, "another key of the storage options gives the same setting"
            )
        settings[name] = _boolean(str(key), raw) if name in _BOOLEAN_SETTINGS else raw.strip()
    return settings


def nearest(key: str) -> str | None:
    """The known key closest to ``key`` (None when none is close)."""
    lowered = {k.lower(): k for k in KNOWN_KEYS}
    found = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[found[0]] if found else None


def _boolean(key: str, text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise InvalidOptionError(key, text, "give true or false")
