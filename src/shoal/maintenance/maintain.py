"""The maintenance a table does after each commit, as its options ask.

Automatic tags (``tag.automatic-creation``) and the expiry of tags whose retention
has passed (when the table gives tags a retention, ``tag.default-time-retained``).
It costs nothing on a table that sets neither.
"""

from __future__ import annotations

from shoal import options as O
from shoal.maintenance.auto_tags import create_automatic_tags, expire_tags
from shoal.table.store import FileStore


def maintain(store: FileStore) -> None:
    if store.options.get(O.TAG_AUTOMATIC_CREATION) != "none":
        create_automatic_tags(store)
    if store.options.get(O.TAG_DEFAULT_TIME_RETAINED) is not None:
        expire_tags(store)
