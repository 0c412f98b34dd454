"""The ``shoal`` command: tables, tags, cleanup, compaction and a Spark pipeline demo
from the shell, with rich tables for people and ``--output json`` for programs.

    shoal demo
    shoal snapshots --warehouse /data/wh db.orders --output json
"""

from shoal.cli.app import cli, main

__all__ = ["cli", "main"]
