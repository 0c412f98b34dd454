"""``shoal table create|show|list``, ``shoal snapshots`` and ``shoal system``
(``shoal table alter`` is in ``alter``)."""

from __future__ import annotations

import json
import shlex
from typing import Any

import click
from rich.markup import escape

from shoal.catalog import Catalog
from shoal.cli.common import (
    catalog_target,
    is_path,
    open_table,
    output,
    require_warehouse,
    table_argument,
    table_label,
    table_options,
)
from shoal.cli.exit_codes import CORRUPT
from shoal.cli.output import format_bytes, rows_of
from shoal.cli.parsing import parse_options, parse_schema, split_names
from shoal.errors import ShoalError, SnapshotNotFoundError
from shoal.read.system_tables import DAMAGED, SYSTEM_TABLES
from shoal.table import Table

SNAPSHOT_COLUMNS = (
    "snapshot_id",
    "commit_kind",
    "commit_time",
    "total_record_count",
    "delta_record_count",
    "schema_id",
)


@click.group("table", short_help="Create, describe, change, list and drop tables.")
def table_group() -> None:
    """Create, describe, change, list and drop tables."""


@table_group.command("create", short_help="Create a table.")
@table_argument
@click.option(
    "--schema",
    "ddl",
    required=True,
    metavar="DDL",
    help="Columns as 'name type, ...' in Paimon's SQL types, e.g. "
    '"id bigint, ts timestamp(3), amount decimal(10, 2), note string".',
)
@click.option(
    "-p",
    "--partition-keys",
    multiple=True,
    metavar="COLS",
    help="Partition columns, comma-separated or repeated.",
)
@click.option(
    "-k",
    "--primary-keys",
    multiple=True,
    metavar="COLS",
    help="Primary-key columns (a merge-on-read table; it must contain the partition "
    "keys and needs --option bucket=N). None: an append table.",
)
@click.option(
    "--option",
    "raw_options",
    multiple=True,
    metavar="KEY=VALUE",
    help="A table option, repeatable: --option bucket=4 --option write-only=true.",
)
@click.option("--comment", help="A description stored with the schema.")
@click.option("--if-not-exists", is_flag=True, help="Succeed without change when the table exists.")
@table_options
def create(
    *,
    table: str,
    warehouse: str | None,
    ddl: str,
    partition_keys: tuple[str, ...],
    primary_keys: tuple[str, ...],
    raw_options: tuple[str, ...],
    comment: str | None,
    if_not_exists: bool,
) -> None:
    """Create TABLE with a schema, keys and options.

    \b
    Examples:
      shoal table create -w wh db.orders --schema "dt string, id bigint, amount double" \\
          --partition-keys dt --primary-keys dt,id --option bucket=4
      shoal table create ./wh/db.db/logs --schema "ts timestamp(3), line string"
    """
    schema = parse_schema(ddl)
    options = parse_options(raw_options)
    catalog, identifier = catalog_target(table, warehouse)
    created = catalog.create_table(
        identifier,
        schema,
        partition_keys=split_names(partition_keys),
        primary_keys=split_names(primary_keys),
        options=options,
        comment=comment,
        ignore_if_exists=if_not_exists,
    )
    out = output()
    out.result(describe_table(created), lambda: render_description(created, "created "))


@table_group.command("show", short_help="Describe a table.")
@table_argument
@table_options
def show(table: str, warehouse: str | None) -> None:
    """Describe TABLE: columns, keys, options, latest snapshot, size."""
    opened = open_table(table, warehouse)
    output().result(describe_table(opened), lambda: render_description(opened, ""))


def _fields(table: Table) -> list[dict[str, Any]]:
    schemas = table.system_table("schemas").to_pylist()
    fields: list[dict[str, Any]] = json.loads(schemas[-1]["fields"]) if schemas else []
    return [
        {"id": f["id"], "name": f["name"], "type": f["type"], "description": f.get("description")}
        for f in fields
    ]


def describe_table(table: Table) -> dict[str, Any]:
    latest = table.latest_snapshot()
    snapshots = rows_of(table.system_table("snapshots"))
    files = table.system_table("files")
    return {
        "table": table_label(table),
        "path": table.path,
        "fields": _fields(table),
        "partition_keys": table.partition_keys,
        "primary_keys": table.primary_keys,
        "options": table.options,
        "latest_snapshot": snapshots[-1] if latest is not None and snapshots else None,
        "snapshot_count": len(snapshots),
        "tag_count": len(table.list_tags()),
        "file_count": files.num_rows,
        "file_size_in_bytes": sum(files.column("file_size_in_bytes").to_pylist()),
        "record_count": latest.total_record_count if latest is not None else 0,
    }


def render_description(table: Table, verb: str) -> None:
    out = output()
    doc = describe_table(table)
    kind = "primary-key table" if doc["primary_keys"] else "append table"
    out.print(f"[bold]{verb}{kind}[/bold] {doc['table']}  [dim]{doc['path']}[/dim]")
    keys = {"partition_keys": "partition", "primary_keys": "primary key"}
    columns = [
        {
            "name": f["name"],
            "type": f["type"],
            "key": ", ".join(label for k, label in keys.items() if f["name"] in doc[k]),
        }
        for f in doc["fields"]
    ]
    out.rows(columns, ["name", "type", "key"])
    if doc["options"]:
        out.rows(
            [{"key": k, "value": v} for k, v in sorted(doc["options"].items())],
            ["key", "value"],
            title="options",
        )
    latest = doc["latest_snapshot"]
    out.key_values(
        [
            ("latest snapshot", "-" if latest is None else str(latest["snapshot_id"])),
            ("snapshots", str(doc["snapshot_count"])),
            ("tags", str(doc["tag_count"])),
            # Records in the data files: before a primary-key table's merge, so an
            # updated key counts once per version (shoal read counts merged rows).
            ("records in files", f"{doc['record_count']:,}"),
            ("data files", f"{doc['file_count']:,} ({format_bytes(doc['file_size_in_bytes'])})"),
        ]
    )


@table_group.command("drop", short_help="Delete a table with its data.")
@table_argument
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation (for scripts).")
@click.option("--if-exists", is_flag=True, help="Succeed without change when there is no table.")
@table_options
def drop(table: str, warehouse: str | None, yes: bool, if_exists: bool) -> None:
    """Delete TABLE: its directory with every data file, snapshot, tag and schema.

    Nothing can read or restore it afterwards; stop writers and readers first.

    \b
    Examples:
      shoal table drop -w wh db.orders --yes
      shoal table drop ./wh/db.db/logs --if-exists --yes
    """
    catalog, identifier = catalog_target(table, warehouse)
    exists = catalog.table_exists(identifier)
    if exists and not yes:
        click.confirm(
            f"drop {identifier} with all its data, snapshots and tags?", abort=True, err=True
        )
    catalog.drop_table(identifier, ignore_if_not_exists=if_exists)
    out = output()
    out.result(
        {"table": identifier, "dropped": exists},
        lambda: out.print(f"dropped {identifier}" if exists else f"no table {identifier}"),
    )


@table_group.command("list", short_help="List the tables of a warehouse.")
@click.option("-d", "--database", help="Only this database (default: all of them).")
@table_options
def list_tables(warehouse: str | None, database: str | None) -> None:
    """List the tables of a warehouse (needs --warehouse).

    \b
    Example:
      shoal table list --warehouse /data/wh --database shop
    """
    catalog = require_warehouse(warehouse)
    databases = [database] if database else catalog.list_databases()
    rows = [_listing(catalog, db, name) for db in databases for name in catalog.list_tables(db)]
    out = output()
    out.result(
        rows,
        lambda: out.rows(
            rows,
            ["database_name", "table_name", "kind", "latest_snapshot_id", "path"],
            headers={"latest_snapshot_id": "latest snapshot"},
            right=["latest_snapshot_id"],
        ),
    )


def _listing(catalog: Catalog, database: str, name: str) -> dict[str, Any]:
    row: dict[str, Any] = {"database_name": database, "table_name": name}
    try:
        table = catalog.get_table(f"{database}.{name}")
    except ShoalError as exc:  # one unreadable table must not hide the others
        return {**row, "kind": "unreadable", "latest_snapshot_id": None, "error": str(exc)}
    latest = table.latest_snapshot()
    return {
        **row,
        "kind": "primary-key" if table.primary_keys else "append",
        "latest_snapshot_id": latest.id if latest is not None else None,
        "path": table.path,
    }


@click.command("snapshots", short_help="List the snapshots of a table.")
@table_argument
@table_options
def snapshots(table: str, warehouse: str | None) -> None:
    """List the snapshots of TABLE, oldest first (the 'snapshots' system table).

    A snapshot whose file is damaged is listed with its error (in JSON: "status"
    "damaged" and "error"), after the readable ones, with the rollback that removes
    it; the command then exits with code 5.
    """
    opened = open_table(table, warehouse)
    rows = opened.system_table("snapshots").to_pylist()
    for row in rows:
        row["properties"] = _properties(opened, row) if row["status"] != DAMAGED else None
    damaged = [r for r in rows if r["status"] == DAMAGED]
    out = output()

    def render() -> None:
        out.rows(
            [r for r in rows if r["status"] != DAMAGED],
            SNAPSHOT_COLUMNS,
            headers={
                "snapshot_id": "id",
                "total_record_count": "records",
                "delta_record_count": "delta",
            },
            right=["snapshot_id", "total_record_count", "delta_record_count", "schema_id"],
        )
        for row in damaged:
            out.print(
                f"[red]snapshot {row['snapshot_id']} is damaged:[/red] {escape(row['error'])}"
            )

    out.result(rows, render)
    if damaged:
        target = shlex.join(
            [*(["-w", warehouse] if warehouse and not is_path(table) else []), table]
        )
        hint = _damage_hint(target, rows, [r["snapshot_id"] for r in damaged])
        out.note(f"hint: {escape(hint)}")
        click.get_current_context().exit(CORRUPT)


def _properties(table: Table, row: dict[str, Any]) -> dict[str, str] | None:
    """The properties of a listed snapshot (read just now: ``snapshot`` finds it
    parsed), None if it expired since."""
    try:
        return dict(table.snapshot(row["snapshot_id"]).properties or {})
    except SnapshotNotFoundError:
        return None


def _damage_hint(target: str, rows: list[dict[str, Any]], damaged: list[int]) -> str:
    """What to do about damaged snapshots: the rollback that removes them all (to the
    newest readable snapshot below the oldest damaged one), or a restore."""
    below = [
        r["snapshot_id"] for r in rows if r["status"] != DAMAGED and r["snapshot_id"] < damaged[0]
    ]
    latest_ok = rows[-1]["status"] != DAMAGED
    restore = "restore the damaged files from a backup"
    if not below:
        return f"{restore}; no readable snapshot precedes snapshot {damaged[0]}"
    rollback = (
        f"'shoal rollback {target} --snapshot {below[-1]}' makes snapshot {below[-1]} the "
        "latest, removing every later snapshot and its tags"
    )
    if latest_ok:
        return (
            f"snapshot {rows[-1]['snapshot_id']}, the latest, is readable; only reads at the "
            f"damaged ones fail. To repair, {restore}, or {rollback}"
        )
    return f"{rollback}; or {restore}"


@click.command("system", short_help="Print a system table (files, manifests, ...).")
@table_argument
@click.argument("name", type=click.Choice(sorted(SYSTEM_TABLES)), metavar="SYSTEM_TABLE")
@click.option("--snapshot", "snapshot_id", type=int, help="For files/manifests: this snapshot.")
@click.option("--tag", help="For files/manifests: the snapshot of this tag.")
@table_options
def system(
    table: str, warehouse: str | None, name: str, snapshot_id: int | None, tag: str | None
) -> None:
    """Print a system table of TABLE: snapshots, tags, files, manifests, partitions,
    options or schemas (Paimon's columns)."""
    opened = open_table(table, warehouse)
    data = opened.system_table(name, snapshot_id=snapshot_id, tag=tag)
    rows = data.to_pylist()
    out = output()
    out.result(rows, lambda: out.rows(rows, data.column_names, title=name))
