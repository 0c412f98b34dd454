"""Where each file of a table lives, and how new files are named.

Names carry a UUID per writer plus a counter, as Paimon names them, so files of
concurrent writers never collide and cleanup can match files by name alone.
"""

from __future__ import annotations

import itertools
import threading
import uuid

from shoal.format.data_file import DataFileMeta

SNAPSHOT_PREFIX = "snapshot-"
SCHEMA_PREFIX = "schema-"
TAG_PREFIX = "tag-"
MANIFEST_PREFIX = "manifest-"
MANIFEST_LIST_PREFIX = "manifest-list-"
BUCKET_PREFIX = "bucket-"
CHANGELOG_FILE_PREFIX = "changelog-"

# Characters Hive-style partition paths escape as %XX (as Paimon and Hive do).
_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{[]^") | frozenset(chr(c) for c in range(32))


def escape_path_name(text: str) -> str:
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def id_of(name: str, prefix: str) -> int | None:
    """The id of a file named ``<prefix><id>``; None for any other name. Only ASCII
    digits without a leading zero count, so no foreign file (``snapshot-007``, a
    name with other scripts' digits, ``schema-1e3``) is read as another id's file."""
    digits = name[len(prefix) :] if name.startswith(prefix) else ""
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
        return None
    if digits[0] == "0" and len(digits) > 1:
        return None
    return int(digits)


def data_file_path(bucket_dir: str, file: DataFileMeta) -> str:
    """Where a data file lives: its external path, or its name in its bucket directory."""
    return file.external_path or f"{bucket_dir}/{file.file_name}"


class PathFactory:
    """Paths of one table's files. ``root`` is the table directory in FileIO's terms."""

    def __init__(self, root: str, *, data_file_prefix: str = "data-", file_format: str = "parquet"):
        self.root = root.rstrip("/")
        self._data_prefix = data_file_prefix
        self._format = file_format
        self._uuid = uuid.uuid4()
        self._counter = itertools.count()
        self._lock = threading.Lock()

    # --- metadata directories --------------------------------------------------------------
    @property
    def snapshot_dir(self) -> str:
        return f"{self.root}/snapshot"

    @property
    def schema_dir(self) -> str:
        return f"{self.root}/schema"

    @property
    def tag_dir(self) -> str:
        return f"{self.root}/tag"

    @property
    def manifest_dir(self) -> str:
        return f"{self.root}/manifest"

    @property
    def changelog_dir(self) -> str:
        """Where long-lived changelogs lie (Paimon's decoupled changelog lifecycle)."""
        return f"{self.root}/changelog"

    def changelog_path(self, snapshot_id: int) -> str:
        return f"{self.changelog_dir}/{CHANGELOG_FILE_PREFIX}{snapshot_id}"

    def snapshot_path(self, snapshot_id: int) -> str:
        return f"{self.snapshot_dir}/{SNAPSHOT_PREFIX}{snapshot_id}"

    def schema_path(self, schema_id: int) -> str:
        return f"{self.schema_dir}/{SCHEMA_PREFIX}{schema_id}"

    def tag_path(self, name: str) -> str:
        return f"{self.tag_dir}/{TAG_PREFIX}{name}"

    def manifest_path(self, name: str) -> str:
        return f"{self.manifest_dir}/{name}"

    @property
    def index_dir(self) -> str:
        return f"{self.root}/index"

    def index_path(self, name: str) -> str:
        return f"{self.index_dir}/{name}"

    # --- new names ---------------------------------------------------------------------------
    def _next(self) -> int:
        with self._lock:
            return next(self._counter)

    def new_manifest_name(self) -> str:
        return f"{MANIFEST_PREFIX}{self._uuid}-{self._next()}"

    def new_manifest_list_name(self) -> str:
        return f"{MANIFEST_LIST_PREFIX}{self._uuid}-{self._next()}"

    def new_data_file_name(self) -> str:
        return f"{self._data_prefix}{self._uuid}-{self._next()}.{self._format}"

    def new_changelog_file_name(self) -> str:
        """A changelog file's name (Paimon's default ``changelog-file.prefix``; the
        format is the data files')."""
        return f"{CHANGELOG_FILE_PREFIX}{self._uuid}-{self._next()}.{self._format}"

    # --- data --------------------------------------------------------------------------------
    def bucket_dir(self, partition_path: str, bucket: int) -> str:
        if partition_path:
            return f"{self.root}/{partition_path}/{BUCKET_PREFIX}{bucket}"
        return f"{self.root}/{BUCKET_PREFIX}{bucket}"
