"""``shoal tag create|delete|rename|list``: named savepoints of snapshots."""

from __future__ import annotations

from typing import Any

import click

from shoal.cli.common import open_table, output, table_argument, table_label, table_options
from shoal.cli.output import rows_of
from shoal.cli.parsing import parse_duration_option
from shoal.table import Table

TAG_COLUMNS = (
    "tag_name",
    "snapshot_id",
    "commit_time",
    "record_count",
    "create_time",
    "time_retained",
)


def _tag_row(table: Table, name: str) -> dict[str, Any]:
    rows = [r for r in rows_of(table.system_table("tags")) if r["tag_name"] == name]
    return rows[0] if rows else {"tag_name": name}


@click.group("tag", short_help="Create, delete, rename and list tags.")
def tag_group() -> None:
    """Create, delete, rename and list tags (named savepoints that time travel reads and
    that cleanup never deletes files from)."""


@tag_group.command("create", short_help="Tag a snapshot.")
@table_argument
@click.argument("name")
@click.option(
    "--snapshot", "snapshot_id", type=int, help="The snapshot to tag (default: the latest)."
)
@click.option(
    "--time-retained",
    metavar="DURATION",
    help="Expire the tag this long after its creation, e.g. '7 d' (default: the option "
    "tag.default-time-retained, else never).",
)
@click.option("--replace", is_flag=True, help="Move the tag if the name is taken.")
@table_options
def create(
    *,
    table: str,
    warehouse: str | None,
    name: str,
    snapshot_id: int | None,
    time_retained: str | None,
    replace: bool,
) -> None:
    """Tag a snapshot of TABLE as NAME.

    \b
    Examples:
      shoal tag create -w wh db.orders before-backfill
      shoal tag create -w wh db.orders nightly --snapshot 42 --time-retained "7 d"
    """
    retained = parse_duration_option(time_retained, "--time-retained") if time_retained else None
    opened = open_table(table, warehouse)
    tag = opened.create_tag(name, snapshot_id, retained, replace=replace)
    row = _tag_row(opened, tag.name)
    out = output()
    out.result(
        row,
        lambda: out.print(
            f"tagged snapshot {tag.snapshot_id} of {table_label(opened)} as [bold]{tag.name}[/bold]"
        ),
    )


@tag_group.command("delete", short_help="Delete a tag.")
@table_argument
@click.argument("name")
@table_options
def delete(table: str, warehouse: str | None, name: str) -> None:
    """Delete tag NAME of TABLE, and the data files only it kept alive."""
    opened = open_table(table, warehouse)
    opened.delete_tag(name)
    out = output()
    out.result(
        {"tag_name": name, "deleted": True},
        lambda: out.print(f"deleted tag [bold]{name}[/bold] of {table_label(opened)}"),
    )


@tag_group.command("rename", short_help="Rename a tag.")
@table_argument
@click.argument("old")
@click.argument("new")
@table_options
def rename(table: str, warehouse: str | None, old: str, new: str) -> None:
    """Rename tag OLD of TABLE to NEW."""
    opened = open_table(table, warehouse)
    opened.rename_tag(old, new)
    row = {**_tag_row(opened, new), "old_tag_name": old}
    out = output()
    out.result(row, lambda: out.print(f"renamed tag {old} to [bold]{new}[/bold]"))


@tag_group.command("list", short_help="List the tags of a table.")
@table_argument
@table_options
def list_tags(table: str, warehouse: str | None) -> None:
    """List the tags of TABLE (the 'tags' system table)."""
    opened = open_table(table, warehouse)
    rows = opened.system_table("tags").to_pylist()
    out = output()
    out.result(
        rows,
        lambda: out.rows(
            rows,
            TAG_COLUMNS,
            headers={"tag_name": "tag", "snapshot_id": "snapshot", "record_count": "records"},
            right=["snapshot_id", "record_count"],
        ),
    )
