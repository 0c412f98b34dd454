"""Command-line driver for pypaimon, run by the oracle venv's interpreter.

pypaimon pins an older pyarrow than shoal uses, so shoal's interop tests cannot import it.
They run this script in a separate venv instead and exchange rows as Arrow IPC files.
It imports only pypaimon, pyarrow and the standard library. Each subcommand prints exactly
one JSON object on stdout. Logs and tracebacks go to stderr, and any failure exits
non-zero.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
from pyarrow import ipc

log = logging.getLogger("pypaimon_cli")


def _catalog(warehouse: str) -> Any:
    """Open a filesystem catalog on the warehouse, imported lazily so type checkers in
    shoal's env (where pypaimon is absent) never have to resolve it."""
    factory = importlib.import_module("pypaimon.catalog.catalog_factory").CatalogFactory
    return factory.create({"warehouse": warehouse})


def _table(warehouse: str, name: str) -> Any:
    return _catalog(warehouse).get_table(name)


def _latest_id(table: Any) -> int | None:
    snapshot = table.snapshot_manager().get_latest_snapshot()
    return None if snapshot is None else int(snapshot.id)


def _read_ipc(path: str) -> pa.Table:
    with pa.OSFile(path, "rb") as source:
        return ipc.open_file(source).read_all()


def _key_values(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"expected key=value, got {item!r}")
        out[key] = value
    return out


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()] if text else []


def _read_rows(table: Any, columns: list[str]) -> pa.Table:
    builder = table.new_read_builder()
    if columns:
        builder = builder.with_projection(columns)
    splits = builder.new_scan().plan().splits()
    result = builder.new_read().to_arrow(splits)
    if result is None:  # defensive: pypaimon returns an empty table today
        pa_schema = importlib.import_module("pypaimon.schema.data_types").PyarrowFieldParser
        result = pa_schema.from_paimon_schema(builder.read_type()).empty_table()
    return result


def _write_out(path: str, result: pa.Table) -> None:
    with ipc.new_file(path, result.schema) as writer:
        writer.write_table(result)


def cmd_read(args: argparse.Namespace) -> dict[str, Any]:
    """Read a table (or a time-travel view of it) and write the rows to --out."""
    table = _table(args.warehouse, args.table)
    latest = _latest_id(table)
    travel: dict[str, str] = {}
    if args.snapshot_id is not None:
        travel["scan.snapshot-id"] = str(args.snapshot_id)
    if args.tag is not None:
        travel["scan.tag-name"] = args.tag
    if args.timestamp_ms is not None:
        travel["scan.timestamp-millis"] = str(args.timestamp_ms)
    if travel:
        table = table.copy(travel)
    result = _read_rows(table, _names(args.columns))
    _write_out(args.out, result)
    return {"rows": result.num_rows, "latest_snapshot_id": latest}


def cmd_read_each(args: argparse.Namespace) -> dict[str, Any]:
    """Read several snapshots in one process: snapshot N goes to <--out-dir>/N.arrow."""
    table = _table(args.warehouse, args.table)
    rows: dict[str, int] = {}
    for snapshot_id in args.snapshot_id:
        result = _read_rows(table.copy({"scan.snapshot-id": str(snapshot_id)}), [])
        _write_out(os.path.join(args.out_dir, f"{snapshot_id}.arrow"), result)
        rows[str(snapshot_id)] = result.num_rows
    return {"rows": rows}


def cmd_write(args: argparse.Namespace) -> dict[str, Any]:
    """Create the table if needed, then make one commit per input file."""
    schema_source = args.schema_from or (args.input[0] if args.input else None)
    if schema_source is None:
        raise ValueError("write needs --input or --schema-from")
    db_name = args.table.split(".", 1)[0]
    catalog = _catalog(args.warehouse)
    catalog.create_database(db_name, True)
    schema_cls = importlib.import_module("pypaimon.schema.schema").Schema
    schema = schema_cls.from_pyarrow_schema(
        _read_ipc(schema_source).schema,
        partition_keys=_names(args.partition_keys),
        primary_keys=_names(args.primary_keys),
        options=_key_values(args.option),
    )
    catalog.create_table(args.table, schema, True)
    table = catalog.get_table(args.table)
    static_partition = _key_values(args.static_partition)

    created: list[int] = []
    for path in args.input:
        data = _read_ipc(path)
        before = _latest_id(table) or 0
        builder = table.new_batch_write_builder()
        if args.mode == "overwrite":
            builder = builder.overwrite(static_partition)
        write = builder.new_write()
        commit = builder.new_commit()
        try:
            write.write_arrow(data)
            commit.commit(write.prepare_commit())
        finally:
            write.close()
            commit.close()
        after = _latest_id(table) or 0
        log.info("committed %s (%d rows): snapshots %d..%d", path, data.num_rows, before, after)
        created.extend(range(before + 1, after + 1))
    return {"snapshot_ids": created}


def cmd_snapshots(args: argparse.Namespace) -> dict[str, Any]:
    """List every snapshot that still exists, oldest first."""
    table = _table(args.warehouse, args.table)
    return {
        "snapshots": [
            {
                "id": s.id,
                "commit_kind": s.commit_kind,
                "total_record_count": s.total_record_count,
                "delta_record_count": s.delta_record_count,
                "time_millis": s.time_millis,
                "schema_id": s.schema_id,
            }
            for s in table.snapshot_manager().list_snapshots()
        ]
    }


def cmd_create_tag(args: argparse.Namespace) -> dict[str, Any]:
    """Tag a snapshot (latest when --snapshot-id is absent), optionally with a retention
    in pypaimon's duration syntax (--time-retained 1d)."""
    table = _table(args.warehouse, args.table)
    if args.time_retained is None:
        table.create_tag(args.tag, snapshot_id=args.snapshot_id)
    else:
        table.create_tag(args.tag, snapshot_id=args.snapshot_id, time_retained=args.time_retained)
    return {}


def _json_value(value: Any) -> Any:
    return value.isoformat() if hasattr(value, "isoformat") else value


def cmd_tags(args: argparse.Namespace) -> dict[str, Any]:
    """Every tag pypaimon lists, sorted by name: the fields of its tag file as pypaimon
    decodes them, and its row of the `$tags` system table (times as ISO strings)."""
    table = _table(args.warehouse, args.table)
    manager = table.tag_manager()
    system_rows = _read_rows(_table(args.warehouse, f"{args.table}$tags"), []).to_pylist()
    by_name = {row["tag_name"]: row for row in system_rows}
    tags = []
    for name in sorted(table.list_tags()):
        tag = manager.get(name)
        created, retained = tag.tag_create_time, tag.tag_time_retained
        tags.append(
            {
                "name": name,
                "snapshot_id": int(tag.id),
                "create_time": None if created is None else created.isoformat(),
                "time_retained_seconds": None if retained is None else retained.total_seconds(),
                "system_row": {k: _json_value(v) for k, v in by_name.get(name, {}).items()},
            }
        )
    return {"tags": tags}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, func: Any) -> argparse.ArgumentParser:
        p = sub.add_parser(name)
        p.add_argument("--warehouse", required=True)
        p.add_argument("--table", required=True, help="db.table")
        p.set_defaults(func=func)
        return p

    read = command("read", cmd_read)
    travel = read.add_mutually_exclusive_group()
    travel.add_argument("--snapshot-id", type=int)
    travel.add_argument("--tag")
    travel.add_argument("--timestamp-ms", type=int)
    read.add_argument("--columns", help="comma-separated projection")
    read.add_argument("--out", required=True, help="Arrow IPC file to write")

    read_each = command("read-each", cmd_read_each)
    read_each.add_argument("--snapshot-id", type=int, action="append", required=True)
    read_each.add_argument("--out-dir", required=True, help="folder for <id>.arrow files")

    write = command("write", cmd_write)
    write.add_argument("--input", action="append", default=[], help="Arrow IPC file; repeatable")
    write.add_argument("--schema-from", help="Arrow IPC file whose schema creates the table")
    write.add_argument("--partition-keys")
    write.add_argument("--primary-keys")
    write.add_argument("--option", action="append", help="table option key=value; repeatable")
    write.add_argument("--mode", choices=["append", "overwrite"], default="append")
    write.add_argument(
        "--static-partition", action="append", help="overwrite only this partition: key=value"
    )

    command("snapshots", cmd_snapshots)

    tag = command("create-tag", cmd_create_tag)
    tag.add_argument("--tag", required=True)
    tag.add_argument("--snapshot-id", type=int)
    tag.add_argument("--time-retained", help="retention, e.g. 1d or 12h")

    command("tags", cmd_tags)
    return parser


@contextmanager
def _stdout_to_stderr() -> Iterator[int]:
    """Send everything written to fd 1 to stderr, so only our JSON line reaches stdout.
    Yields a duplicate of the real stdout."""
    sys.stdout.flush()
    real = os.dup(1)
    os.dup2(2, 1)
    try:
        yield real
    finally:
        sys.stdout.flush()
        os.dup2(real, 1)
        os.close(real)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("PYPAIMON_CLI_LOG", "WARNING"),
        format="%(levelname)s %(name)s: %(message)s",
    )
    args = _parser().parse_args(argv)
    with _stdout_to_stderr() as real_stdout:
        try:
            result = args.func(args)
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            print(f"pypaimon_cli {args.command} failed: {exc!r}", file=sys.stderr)
            return 1
        os.write(real_stdout, (json.dumps(result) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
