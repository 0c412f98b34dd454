"""What every command shares: the output mode, ``--warehouse``, the TABLE argument and
how it names a table."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from shoal.catalog import Catalog
from shoal.cli.output import FILE_MODES, MODES, Mode, Output
from shoal.table import Table

F = TypeVar("F", bound=Callable[..., Any])

OUTPUT_KEY = "shoal.output"
_OUTPUT_GIVEN = "shoal.output.given"
_WAREHOUSE_GIVEN = "shoal.warehouse.given"
STORAGE_OPTIONS_KEY = "shoal.storage_options"
# The commands that write their result to a file (``--output parquet FILE``).
FILE_COMMANDS = frozenset({"read"})
WAREHOUSE_ENV = "SHOAL_WAREHOUSE"
OUTPUT_ENV = "SHOAL_OUTPUT"
DEFAULT_MASTER = "local[2]"


def output() -> Output:
    """The current command's output (table mode unless ``--output json``)."""
    root = click.get_current_context().find_root()
    found = root.meta.get(OUTPUT_KEY)
    if isinstance(found, Output):
        return found
    fresh = Output()
    root.meta[OUTPUT_KEY] = fresh
    return fresh


def output_of(ctx: click.Context) -> Output | None:
    found = ctx.find_root().meta.get(OUTPUT_KEY)
    return found if isinstance(found, Output) else None


def _given(ctx: click.Context, param: click.Parameter) -> bool:
    return ctx.get_parameter_source(param.name or "") is ParameterSource.COMMANDLINE


def _set_output(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """``--output`` before the command (the group's) or after it (the command's): the one
    given on the command line wins, the command's over the group's."""
    root = ctx.find_root()
    given = _given(ctx, param)
    if ctx is root or given or not root.meta.get(_OUTPUT_GIVEN):
        mode: Mode = value if value in MODES else "table"
        root.meta[OUTPUT_KEY] = Output(mode)
        root.meta[_OUTPUT_GIVEN] = given or bool(root.meta.get(_OUTPUT_GIVEN))
    chosen = output_of(ctx)
    writes_file = chosen is not None and chosen.mode in FILE_MODES
    if ctx is not root and writes_file and ctx.command.name not in FILE_COMMANDS:
        raise click.BadParameter(
            "'parquet' writes a file, which only 'shoal read' does; use table, json or csv",
            ctx=ctx,
            param=param,
        )


_OUTPUT_HELP = (
    "'table' for people; 'json' prints one JSON document, 'csv' one CSV table on stdout"
    " ('shoal read' also takes 'parquet FILE')."
)


def output_option(f: F) -> F:
    """``-o/--output table|json|csv`` (also the environment variable SHOAL_OUTPUT), and
    ``-v``: both also before the command."""
    option = _output_flag(_OUTPUT_HELP, show_default=True)
    return option(verbose_option(f))


def _output_flag(help_text: str, *, show_default: bool = False) -> Callable[[F], F]:
    """``-o/--output``, which sets the output mode as soon as click reads it."""
    return click.option(
        "-o",
        "--output",
        type=click.Choice(MODES),
        default="table",
        show_default=show_default,
        envvar=OUTPUT_ENV,
        expose_value=False,
        is_eager=True,
        callback=_set_output,
        help=help_text,
    )


def configure_logging(verbose: int) -> None:
    if verbose:
        logging.basicConfig(
            level=logging.DEBUG if verbose > 1 else logging.INFO,
            format="%(levelname)s %(name)s: %(message)s",
        )


def _set_verbose(ctx: click.Context, _param: click.Parameter, value: int) -> None:
    configure_logging(value)


def verbose_option(f: F) -> F:
    """``-v/--verbose`` (repeatable) and ``--storage-option KEY=VALUE`` (repeatable),
    before or after the command."""
    option = click.option(
        "-v",
        "--verbose",
        count=True,
        expose_value=False,
        callback=_set_verbose,
        help="Log shoal's progress (-vv: debug).",
    )
    return option(storage_option(f))


def _set_storage_options(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> None:
    """Each ``KEY=VALUE`` into the run's storage options; after the command, a key
    given before it too takes the later value."""
    found = ctx.find_root().meta.setdefault(STORAGE_OPTIONS_KEY, {})
    for text in values:
        key, equals, value = text.partition("=")
        if not equals or not key.strip():
            raise click.BadParameter(
                f"{key.strip() or text!r}: give KEY=VALUE, such as s3.endpoint=http://host:9000",
                ctx=ctx,
                param=param,
            )
        found[key.strip()] = value


def storage_option(f: F) -> F:
    """``--storage-option KEY=VALUE``, repeatable: the store's configuration."""
    option = click.option(
        "--storage-option",
        "storage_option",
        metavar="KEY=VALUE",
        multiple=True,
        expose_value=False,
        callback=_set_storage_options,
        help="Configure the store (repeatable), such as s3.endpoint=URL or "
        "lock.file=PATH; docs/tables.md lists the keys of each store.",
    )
    return option(f)


def storage_options() -> dict[str, str]:
    """The ``--storage-option`` pairs of this run (empty when none was given)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return {}
    return dict(ctx.find_root().meta.get(STORAGE_OPTIONS_KEY, {}))


def inherit_warehouse(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--warehouse`` after the command wins; else the one before it, else the
    environment's."""
    root = ctx.find_root()
    if ctx is root:
        root.meta[_WAREHOUSE_GIVEN] = value if _given(ctx, param) else None
        return value
    if not _given(ctx, param) and root.meta.get(_WAREHOUSE_GIVEN):
        return str(root.meta[_WAREHOUSE_GIVEN])
    return value


_WAREHOUSE_HELP = (
    "Warehouse directory or URI; with it TABLE may be 'db.table'. Default: $SHOAL_WAREHOUSE."
)


def warehouse_option(f: F) -> F:
    """``-w/--warehouse DIR`` (also SHOAL_WAREHOUSE): the catalog TABLE names refer to."""
    option = click.option(
        "-w",
        "--warehouse",
        metavar="DIR",
        envvar=WAREHOUSE_ENV,
        callback=inherit_warehouse,
        help=_WAREHOUSE_HELP,
    )
    return option(f)


def global_options(f: F) -> F:
    """The group's ``--output``, ``--warehouse`` and ``-v``, which every command also
    takes after its name."""
    output_flag = _output_flag(_OUTPUT_HELP + " Also after the command.")
    warehouse_flag = click.option(
        "-w",
        "--warehouse",
        metavar="DIR",
        envvar=WAREHOUSE_ENV,
        expose_value=False,
        callback=inherit_warehouse,
        help="Warehouse of the tables that commands name as 'db.table' (also after the "
        "command). Default: $SHOAL_WAREHOUSE.",
    )
    return output_flag(warehouse_flag(verbose_option(f)))


def table_argument(f: F) -> F:
    """The TABLE argument (a path, or db.table with ``--warehouse``)."""
    return click.argument("table", metavar="TABLE")(f)


def table_options(f: F) -> F:
    """``--warehouse`` and ``--output``; the decorator just above ``def`` puts them last
    in the help."""
    return warehouse_option(output_option(f))


def master_option(f: F) -> F:
    option = click.option(
        "--master",
        metavar="URL",
        default=DEFAULT_MASTER,
        show_default=True,
        help="Spark master URL of the session (an active session is reused).",
    )
    return option(f)


def spark_options(f: F) -> F:
    """``--spark`` (run the work as Spark tasks) and ``--master``."""
    flag = click.option(
        "--spark",
        "on_spark",
        is_flag=True,
        help="Run as a Spark job: the file work goes to Spark tasks, the commit stays here.",
    )
    return flag(master_option(f))


def is_path(ref: str) -> bool:
    """Whether TABLE is a path or URI rather than a ``db.table`` name."""
    return "/" in ref or os.sep in ref or "://" in ref or ref.startswith("~") or ref in (".", "..")


def _local(path: str) -> str:
    return path if "://" in path else os.path.abspath(os.path.expanduser(path))


def open_table(ref: str, warehouse: str | None) -> Table:
    """The table TABLE names: a path or URI, or ``db.table`` in ``--warehouse``.

    Raises:
        TableNotFoundError: nothing is there (exit code 3).
        click.UsageError: a ``db.table`` name without a warehouse.
    """
    if warehouse and not is_path(ref):
        return Catalog(_local(warehouse), storage_options=storage_options()).get_table(ref)
    if not is_path(ref) and not os.path.isdir(ref):
        raise click.UsageError(
            f"TABLE {ref!r} is not a path; to name a table as db.table give --warehouse DIR "
            f"(or set {WAREHOUSE_ENV})"
        )
    return Table.open(_local(ref), storage_options=storage_options())


def catalog_target(ref: str, warehouse: str | None) -> tuple[Catalog, str]:
    """The catalog and identifier under which to create TABLE.

    A path must have the catalog layout ``WAREHOUSE/DB.db/TABLE``.
    """
    if warehouse and not is_path(ref):
        return Catalog(_local(warehouse), storage_options=storage_options()), ref
    if not is_path(ref):
        raise click.UsageError(
            f"TABLE {ref!r} is not a path; to name a table as db.table give --warehouse DIR "
            f"(or set {WAREHOUSE_ENV})"
        )
    path = _local(ref).rstrip("/")
    parent, name = path.rsplit("/", 1)
    root, database = parent.rsplit("/", 1) if "/" in parent else ("", parent)
    if not database.endswith(".db") or not root:
        raise click.UsageError(
            f"cannot create {ref!r}: a table path must look like WAREHOUSE/DATABASE.db/TABLE "
            "(or name the table as db.table with --warehouse)"
        )
    return Catalog(root, storage_options=storage_options()), f"{database[: -len('.db')]}.{name}"


def require_warehouse(warehouse: str | None) -> Catalog:
    if not warehouse:
        raise click.UsageError(f"give --warehouse DIR (or set {WAREHOUSE_ENV})")
    return Catalog(_local(warehouse), storage_options=storage_options())


def table_label(table: Table) -> str:
    return table.name or table.path
