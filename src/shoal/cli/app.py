"""The ``shoal`` command group: its help, the error handling and exit codes."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import click

from shoal import __version__
from shoal.cli import alter, demo, ingest, maintenance, read, rows, schema, tables, tags
from shoal.cli.common import global_options, output_of
from shoal.cli.exit_codes import MEANINGS, exit_code_for
from shoal.cli.messages import cli_message, hint
from shoal.errors import ShoalError

_EXAMPLES = """\
Tables in the Apache Paimon format: tags, safe cleanup, event-time compaction.

TABLE is a table's path (WAREHOUSE/DB.db/NAME, or a URI), or DB.NAME with
--warehouse DIR (or the environment variable SHOAL_WAREHOUSE). Every command
takes --output json and then prints exactly one JSON document on stdout, or
--output csv and prints one CSV table; notes, progress and errors go to stderr.
Tables print every value whole, however narrow the terminal. --output, --warehouse
and -v go before or after the command.

\b
Examples:
  shoal demo                                   # the whole pipeline on local Spark
  shoal table create -w wh db.orders --schema "dt string, id bigint, amount double" \\
      -p dt -k dt,id --option bucket=4
  shoal ingest landing/*.json -w wh db.orders --mode upsert
  shoal table alter -w wh db.orders --add "discount double after amount"
  shoal schema -w wh db.orders
  shoal snapshots -w wh db.orders -o csv
  shoal read -w wh db.orders --filter "amount > 100" --limit 10 -o json
  shoal read -w wh db.orders --output parquet orders.parquet
  shoal tag create -w wh db.orders nightly
  shoal compact -w wh db.orders --strategy event-time
  shoal expire-snapshots -w wh db.orders --retain-max 20
  shoal remove-orphan-files -w wh db.orders --dry-run
  shoal table drop -w wh db.orders --yes
"""


def _exit_code_help() -> str:
    lines = ["\b", "Exit codes:"]
    for code, meaning in MEANINGS:
        wrapped = textwrap.wrap(meaning, 72)
        lines.append(f"  {code}  {wrapped[0]}")
        lines += [f"     {rest}" for rest in wrapped[1:]]
    return "\n".join(lines)


class ShoalGroup(click.Group):
    """Runs a command and turns a failure into a message on stderr and an exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # the order they were added in: the main job first

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:
            if ctx.meta.get("shoal.debug") and not isinstance(exc, ShoalError):
                raise
            code = exit_code_for(exc)
            _report(ctx, exc, code)
            ctx.exit(code)


def _report(ctx: click.Context, exc: Exception, code: int) -> None:
    kind = type(exc).__name__
    message = cli_message(exc)
    out = output_of(ctx)
    if out is not None and out.json:
        document = {"error": {"type": kind, "message": message, "exit_code": code}}
        click.echo(json.dumps(document), err=True)
        return
    if isinstance(exc, ShoalError):
        click.secho(f"error: {message}", fg="red", err=True)
        helps = hint(exc)
        if helps:
            click.echo(f"hint: {helps}", err=True)
    else:
        click.secho(f"error ({kind}): {message}", fg="red", err=True)
        click.echo("run with --debug for the traceback", err=True)


@click.group(
    cls=ShoalGroup,
    help=_EXAMPLES + "\n" + _exit_code_help(),
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="shoal")
@click.option("--debug", is_flag=True, help="Show the traceback of unexpected errors.")
@global_options
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    ctx.meta["shoal.debug"] = debug


cli.add_command(demo.demo)
cli.add_command(ingest.ingest)
tables.table_group.add_command(alter.alter)
cli.add_command(tables.table_group)
cli.add_command(schema.schema)
cli.add_command(tables.snapshots)
cli.add_command(tables.system)
cli.add_command(tags.tag_group)
cli.add_command(read.read)
cli.add_command(rows.delete)
cli.add_command(maintenance.compact)
cli.add_command(maintenance.freshness)
cli.add_command(maintenance.metrics)
cli.add_command(maintenance.expire_snapshots)
cli.add_command(maintenance.expire_partitions)
cli.add_command(maintenance.remove_orphan_files)
cli.add_command(maintenance.rollback)


def main() -> None:
    """Entry point of the ``shoal`` console script."""
    cli(prog_name="shoal")
