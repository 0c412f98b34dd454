"""What a snapshot's index manifest keeps alive, for the operations that delete files.

A snapshot names one index manifest (in ``manifest/``), which names the index files
(in ``index/``) live in that snapshot: the hash indexes of dynamic-bucket tables and
the deletion vectors, one file per partition, bucket and index type (or per file on
tables without buckets). Like a data manifest, an index file lives over one unbroken
stretch of snapshots: a commit that changes a bucket's index writes a new file and
drops the old one from the next index manifest, and a commit that changes no index
carries the previous index manifest by name. So the skipping rules of data manifests
hold for index manifests and index files alike, and cleanup keeps every one that a
retained snapshot or tag names, as Paimon's expiration, tag deletion and orphan
cleanup do.

Index files that lie outside the table (an external path) are never deleted: shoal
deletes only under the table's own directories.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from shoal.core.store import FileStore
from shoal.errors import CorruptMetadataError
from shoal.format.snapshot import Snapshot

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class IndexNames:
    """A snapshot's index manifest (None when it names none) and the index files it
    names in the table's ``index/`` directory."""

    manifest: str | None = None
    files: frozenset[str] = frozenset()

    def all(self) -> set[str]:
        """Every name, the index manifest's included."""
        return set(self.files) | ({self.manifest} if self.manifest else set())


def index_names(store: FileStore, snapshot: Snapshot, *, strict: bool) -> IndexNames:
    """The index manifest of ``snapshot`` and the index files it names.

    An index manifest that cannot be read raises CorruptMetadataError when ``strict``
    (the names a retained snapshot keeps must all be known); otherwise only its own
    name is given, and the index files it names stay for orphan cleanup."""
    name = snapshot.index_manifest
    if not name:
        return IndexNames()
    try:
        entries = store.manifests.read_index_manifest(name)
    except (CorruptMetadataError, OSError) as exc:
        if strict:
            raise
        logger.warning("snapshot %d: index manifest cannot be read (%s)", snapshot.id, exc)
        return IndexNames(name)
    files = frozenset(e.index_file.file_name for e in entries if not e.index_file.external_path)
    return IndexNames(name, files)


def index_file_paths(store: FileStore, names: set[str]) -> list[str]:
    """Paths of the index files ``names``, sorted."""
    return [store.paths.index_path(n) for n in sorted(names)]
