"""``shoal delete TABLE --where ...``: delete the rows a filter matches, in one commit."""

from __future__ import annotations

import click

from shoal.cli.common import open_table, output, table_argument, table_label, table_options
from shoal.row_ops import delete_where


@click.command("delete", short_help="Delete the rows a filter matches.")
@table_argument
@click.option(
    "--where",
    "where",
    required=True,
    metavar="FILTER",
    help="The rows to delete, e.g. \"dt = '2026-11-01' and qty > 3\" (the filter text of "
    "shoal read -f).",
)
@table_options
def delete(*, table: str, warehouse: str | None, where: str) -> None:
    """Delete the rows of TABLE that FILTER matches, in one commit.

    An append table rewrites only the files holding a matching row; a primary-key
    table records deletes for the matching keys.

    \b
    Examples:
      shoal delete -w wh db.orders --where "dt = '2026-11-01' and qty > 3"
      shoal -o json delete -w wh db.orders --where "id in (1, 2)"
    """
    opened = open_table(table, warehouse)
    result = delete_where(opened._transaction(), where)
    out = output()
    out.result(
        {"snapshot_id": result.snapshot.id, "rows_deleted": result.rows},
        lambda: out.print(
            f"deleted {result.rows:,} row{'' if result.rows == 1 else 's'} of "
            f"{table_label(opened)} in snapshot "
            f"{result.snapshot.id}"
        ),
    )
