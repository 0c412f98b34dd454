"""``shoal schema``: a table's columns with their field ids, types and keys."""

from __future__ import annotations

import json
from typing import Any

import click

from shoal.cli.common import open_table, output, table_argument, table_options
from shoal.table import Table

SCHEMA_COLUMNS = ("id", "name", "type", "key", "description")


def schema_rows(table: Table) -> list[dict[str, Any]]:
    """The columns of the table's latest schema: field id, name, Paimon type, which keys
    it belongs to (partition, primary key) and its description."""
    schemas = table.system_table("schemas").to_pylist()
    fields: list[dict[str, Any]] = json.loads(schemas[-1]["fields"]) if schemas else []
    partition, primary = set(table.partition_keys), set(table.primary_keys)
    rows = []
    for f in fields:
        keys = [
            label
            for label, names in (("partition", partition), ("primary key", primary))
            if f["name"] in names
        ]
        rows.append(
            {
                "id": f["id"],
                "name": f["name"],
                "type": f["type"],
                "key": ", ".join(keys) or None,
                "description": f.get("description"),
            }
        )
    return rows


@click.command("schema", short_help="Print a table's columns: ids, types, keys.")
@table_argument
@table_options
def schema(table: str, warehouse: str | None) -> None:
    """Print the columns of TABLE's latest schema: each column's field id (what data
    files match columns by), name, Paimon type, and the keys it is part of.

    \b
    Example:
      shoal schema -w wh db.orders -o csv
    """
    opened = open_table(table, warehouse)
    rows = schema_rows(opened)
    out = output()
    out.result(rows, lambda: out.rows(rows, SCHEMA_COLUMNS, right=["id"]))
