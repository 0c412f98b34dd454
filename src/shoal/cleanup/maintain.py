"""The maintenance a table does after each commit, as its options ask (Paimon's order).

1. Automatic tags (``tag.automatic-creation``).
2. Expiry of tags whose retention has passed (when the table gives tags a retention,
   ``tag.default-time-retained``).
3. Partition expiration (``partition.expiration-time``), at most once per
   ``partition.expiration-check-interval``.
4. Snapshot expiration by the ``snapshot.*`` retention options.

``write-only`` tables skip the expiration steps (3 and 4). With nothing to expire,
the check reads the hints and one snapshot.
"""

from __future__ import annotations

from shoal import options as O
from shoal.cleanup.auto_tags import create_automatic_tags, expire_tags
from shoal.cleanup.expire import ExpireConfig, run_expiration
from shoal.cleanup.partition_expire import maybe_expire_partitions
from shoal.core.store import FileStore
from shoal.write.commit import FileStoreCommit


def maintain(store: FileStore, committer: FileStoreCommit) -> None:
    if store.options.get(O.TAG_AUTOMATIC_CREATION) != "none":
        create_automatic_tags(store)
    if store.options.get(O.TAG_DEFAULT_TIME_RETAINED) is not None:
        expire_tags(store)
    if store.options.get(O.WRITE_ONLY):
        return
    maybe_expire_partitions(store, committer)
    run_expiration(store, ExpireConfig.of(store))
