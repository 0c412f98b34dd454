"""``shoal table alter``: change a table's schema, as one new schema version."""

from __future__ import annotations

import re
from typing import Any

import click

from shoal.cli.common import open_table, output, table_argument, table_options
from shoal.cli.parsing import parse_options
from shoal.cli.tables import describe_table, render_description
from shoal.core.schema_update import SchemaUpdate

_ADD = re.compile(
    r'^\s*(?:"(?P<quoted>[^"]+)"|`(?P<tick>[^`]+)`|(?P<name>[^\s"`]+))\s+(?P<type>.+?)'
    r"(?:\s+AFTER\s+(?P<after>\S+)|\s+(?P<first>FIRST))?\s*$",
    re.IGNORECASE,
)


def _add_spec(value: str) -> tuple[str, str, str | None, bool]:
    """``"NAME TYPE [AFTER COLUMN | FIRST]"`` as (name, type, after, first)."""
    match = _ADD.match(value)
    if match is None:
        raise click.BadParameter(
            f"expected 'NAME TYPE [AFTER COLUMN | FIRST]', got {value!r}", param_hint="--add"
        )
    name = match.group("quoted") or match.group("tick") or match.group("name")
    return name, match.group("type"), match.group("after"), match.group("first") is not None


def _pair(value: str, hint: str, sep: str, shape: str) -> tuple[str, str]:
    left, found, right = value.partition(sep)
    if not found or not left.strip() or not right.strip():
        raise click.BadParameter(f"expected {shape}, got {value!r}", param_hint=hint)
    return left.strip(), right.strip()


@click.command("alter", short_help="Change a table's columns, options or comment.")
@table_argument
@click.option(
    "--add",
    "adds",
    multiple=True,
    metavar='"NAME TYPE [AFTER COL|FIRST]"',
    help="Add a nullable column of a Paimon SQL type, last or where AFTER/FIRST says; "
    "'a.b' adds field b to the ROW column a. Repeatable.",
)
@click.option(
    "--rename",
    "renames",
    multiple=True,
    metavar="OLD=NEW",
    help="Rename a column ('a.b=c' renames a nested field). Repeatable.",
)
@click.option(
    "--type",
    "retypes",
    multiple=True,
    metavar='"NAME TYPE"',
    help="Change a column's type, where Paimon casts the old type to the new one "
    "(INT to BIGINT, FLOAT to DOUBLE, a wider DECIMAL...). Repeatable.",
)
@click.option("--drop", "drops", multiple=True, metavar="NAME", help="Drop a column. Repeatable.")
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a table option. Repeatable.",
)
@click.option(
    "--unset",
    "unsets",
    multiple=True,
    metavar="KEY",
    help="Remove a table option (its default applies again). Repeatable.",
)
@click.option("--comment", help="Set the table's comment ('' removes it).")
@table_options
def alter(
    *,
    table: str,
    warehouse: str | None,
    adds: tuple[str, ...],
    renames: tuple[str, ...],
    retypes: tuple[str, ...],
    drops: tuple[str, ...],
    sets: tuple[str, ...],
    unsets: tuple[str, ...],
    comment: str | None,
) -> None:
    """Change the schema of TABLE: all the changes given make one new schema version,
    written atomically, or none is made.

    The changes apply in this order: --add, --rename, --type, --drop, --set, --unset,
    --comment. Columns keep their field ids, so renamed columns keep their data; a
    dropped column's id is never used again. Partition and primary-key columns cannot
    be renamed, dropped or retyped; options that Paimon fixes at creation (merge-engine,
    bucket-key, ...) and the bucket count cannot change once the table has data.

    \b
    Examples:
      shoal table alter -w wh db.orders --add "discount decimal(10, 2) after amount"
      shoal table alter -w wh db.orders --rename note=remark --type "qty bigint"
      shoal table alter -w wh db.orders --drop legacy --set snapshot.num-retained.max=50
      shoal table alter -w wh db.orders --unset write-only --comment "orders, by day"
    """
    specs = [_add_spec(a) for a in adds]
    renamed = [_pair(r, "--rename", "=", "OLD=NEW") for r in renames]
    retyped = [_pair(t.strip(), "--type", " ", "'NAME TYPE'") for t in retypes]
    options = parse_options(sets)
    if not (adds or renames or retypes or drops or sets or unsets or comment is not None):
        raise click.UsageError("give at least one change (--add, --rename, --type, ...)")
    opened = open_table(table, warehouse)
    with opened.update_schema() as update:
        _apply(
            update,
            specs=specs,
            renamed=renamed,
            retyped=retyped,
            drops=drops,
            options=options,
            unsets=unsets,
            comment=comment,
        )
    schema_id = update.schema.id if update.schema is not None else None
    described: dict[str, Any] = {**describe_table(opened), "schema_id": schema_id}
    output().result(described, lambda: render_description(opened, "altered "))


def _apply(
    update: SchemaUpdate,
    *,
    specs: list[tuple[str, str, str | None, bool]],
    renamed: list[tuple[str, str]],
    retyped: list[tuple[str, str]],
    drops: tuple[str, ...],
    options: dict[str, str],
    unsets: tuple[str, ...],
    comment: str | None,
) -> None:
    for name, type_text, after, first in specs:
        update.add_column(name, type_text, after=after, first=first)
    for old, new in renamed:
        update.rename_column(old, new)
    for name, type_text in retyped:
        update.update_column_type(name, type_text)
    for name in drops:
        update.drop_column(name)
    for key, value in options.items():
        update.set_option(key, value)
    for key in unsets:
        update.remove_option(key)
    if comment is not None:
        update.update_comment(comment or None)
