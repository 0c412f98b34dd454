"""The ``shoal`` command without Spark: every command through click's runner, its JSON
output, its exit codes and its help. (Ingest and the demo run on Spark:
tests/spark/test_cli_spark.py.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import click
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import shoal
from shoal import errors as E
from shoal.cli import cli
from shoal.cli.demo_data import StreamConfig, generate
from shoal.cli.exit_codes import exit_code_for
from shoal.cli.parsing import parse_filter, parse_schema, parse_time
from tests.cli_runs import run, run_json

SCHEMA = pa.schema([
    pa.field("dt", pa.string(), nullable=False),
    pa.field("id", pa.int64(), nullable=False),
    ("ts", pa.timestamp("ms")),
    ("amount", pa.decimal128(10, 2)),
    ("note", pa.string()),
])
DDL = "dt string, id bigint, ts timestamp(3), amount decimal(10, 2), note string"
PK_OPTIONS = {"bucket": "2", "compaction.event-time.field": "ts", "write-only": "true"}


def rows(ids: list[int], dt: str = "2026-11-01", hour: int = 1) -> pa.Table:
    return pa.table(
        {
            "dt": [dt] * len(ids),
            "id": ids,
            "ts": [datetime(2026, 11, 1, hour, i % 60) for i in ids],
            "amount": [Decimal(i) / 4 for i in ids],
            "note": [None if i % 3 == 0 else f"n{i}" for i in ids],
        },
        schema=SCHEMA,
    )



@pytest.fixture
def wh(tmp_path: Path) -> str:
    return str(tmp_path / "wh")


@pytest.fixture
def orders(wh: str) -> shoal.Table:
    """A primary-key table with two snapshots over two partitions."""
    table = shoal.Catalog(wh).create_table(
        "db.orders", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"], options=PK_OPTIONS
    )
    table.upsert(rows([1, 2, 3]))
    table.upsert(rows([4], dt="2026-11-02", hour=5))
    return table


def ms(when: datetime) -> int:
    """A naive UTC time as epoch milliseconds."""
    return int(when.replace(tzinfo=UTC).timestamp() * 1000)




# --- help -------------------------------------------------------------------------------------


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for name, command in group.commands.items():
        out.append((*prefix, name))
        if isinstance(command, click.Group):
            out += _commands(command, (*prefix, name))
    return out


def test_group_help_lists_commands_examples_and_exit_codes() -> None:
    result = run("--help")
    assert result.exit_code == 0
    text = result.stdout
    for word in ("demo", "ingest", "snapshots", "tag", "read", "compact", "freshness",
                 "expire-snapshots", "expire-partitions", "remove-orphan-files", "Examples:"):
        assert word in text
    assert "Exit codes:" in text
    for code in range(6):
        assert f"  {code}  " in text


@pytest.mark.parametrize("path", _commands(cli), ids=" ".join)
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    result = run(*path, "--help")
    assert result.exit_code == 0
    assert result.stdout.startswith("Usage: ")
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    assert command.help, f"{path} has no help text"
    for param in command.params:
        if isinstance(param, click.Option) and param.name != "help":
            assert param.help, f"{path} option {param.name} has no help"


def test_version() -> None:
    assert shoal.__version__ in run("--version").stdout


# --- tables -----------------------------------------------------------------------------------


def test_table_create_show_and_list(wh: str) -> None:
    created = run_json(
        "table", "create", "db.orders", "-w", wh, "--schema", DDL,
        "-p", "dt", "-k", "dt,id", "--option", "bucket=2", "--comment", "orders",
    )
    assert created["table"] == "db.orders"
    assert created["primary_keys"] == ["dt", "id"]
    assert created["partition_keys"] == ["dt"]
    assert created["options"] == {"bucket": "2"}
    assert [(f["name"], f["type"]) for f in created["fields"]] == [
        ("dt", "STRING NOT NULL"),
        ("id", "BIGINT NOT NULL"),
        ("ts", "TIMESTAMP(3)"),
        ("amount", "DECIMAL(10, 2)"),
        ("note", "STRING"),
    ]
    assert created["latest_snapshot"] is None
    table = shoal.Catalog(wh).get_table("db.orders")
    assert table.schema == SCHEMA
    table.upsert(rows([1, 2]))

    shown = run_json("table", "show", "db.orders", "-w", wh)
    assert shown["latest_snapshot"]["snapshot_id"] == 1
    assert shown["record_count"] == 2
    assert shown["file_count"] >= 1
    human = run("table", "show", "db.orders", "-w", wh)
    assert human.exit_code == 0
    assert "primary-key table" in human.stdout
    assert "DECIMAL(10, 2)" in human.stdout

    run_json("table", "create", f"{wh}/logs.db/lines", "--schema", "line string")
    listed = run_json("table", "list", "-w", wh)
    assert [(r["database_name"], r["table_name"], r["kind"]) for r in listed] == [
        ("db", "orders", "primary-key"),
        ("logs", "lines", "append"),
    ]
    assert run_json("table", "list", "-w", wh, "--database", "logs")[0]["table_name"] == "lines"


def test_table_create_errors(wh: str) -> None:
    base = ("table", "create", "db.t", "-w", wh)
    assert run(*base, "--schema", "a foo").exit_code == 2  # unknown type
    assert run(*base, "--schema", "justaname").exit_code == 2
    assert run(*base, "--schema", "a int", "--option", "novalue").exit_code == 2
    bad_option = run(*base, "--schema", "a int", "--option", "bucket=many")
    assert bad_option.exit_code == 2
    assert "bucket" in bad_option.stderr
    assert run(*base, "--schema", "a int", "-k", "b").exit_code == 2  # key not a column
    assert run(*base, "--schema", "a int").exit_code == 0
    exists = run(*base, "--schema", "a int")
    assert exists.exit_code == 4
    assert "already exists" in exists.stderr
    assert run(*base, "--schema", "a int", "--if-not-exists").exit_code == 0
    # A path outside the catalog layout, and a name without a warehouse.
    assert run("table", "create", f"{wh}/plain", "--schema", "a int").exit_code == 2
    assert run("table", "create", "db.t", "--schema", "a int").exit_code == 2
    assert run("table", "list").exit_code == 2
    assert run("table", "list", "-w", wh, "-d", "nope").exit_code == 3


def test_snapshots(orders: shoal.Table) -> None:
    listed = run_json("snapshots", orders.path)
    assert [r["snapshot_id"] for r in listed] == [1, 2]
    first = listed[0]
    for column in ("commit_kind", "commit_time", "total_record_count", "delta_record_count",
                   "schema_id", "properties"):
        assert column in first
    assert first["commit_kind"] == "APPEND"
    assert listed[1]["total_record_count"] == 4
    datetime.fromisoformat(first["commit_time"])
    human = run("snapshots", orders.path)
    assert human.exit_code == 0
    assert "APPEND" in human.stdout


def test_table_names_resolve_by_path_or_warehouse(
    orders: shoal.Table, wh: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(run_json("snapshots", "db.orders", "--warehouse", wh)) == 2
    assert len(run_json("snapshots", orders.path)) == 2
    monkeypatch.setenv("SHOAL_WAREHOUSE", wh)
    assert len(run_json("snapshots", "db.orders")) == 2


def test_unknown_tables_exit_3(wh: str, tmp_path: Path) -> None:
    result = run("snapshots", "db.nope", "-w", wh)
    assert result.exit_code == 3
    assert "db.nope" in result.stderr
    assert "Traceback" not in result.output
    assert run("read", str(tmp_path / "nowhere"), "-w", wh).exit_code == 3
    assert run("snapshots", "db.nope").exit_code == 2  # a name, but no warehouse


def test_errors_in_json_mode_are_json_on_stderr(wh: str) -> None:
    result = run("snapshots", "db.nope", "-w", wh, "--output", "json")
    assert result.exit_code == 3
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["type"] == "TableNotFoundError"
    assert error["exit_code"] == 3


def test_unexpected_errors_exit_1_without_traceback(
    orders: shoal.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(shoal.Table, "system_table", boom)
    result = run("snapshots", orders.path)
    assert result.exit_code == 1
    assert "disk on fire" in result.stderr
    assert "Traceback" not in result.output
    with pytest.raises(RuntimeError):
        run("--debug", "snapshots", orders.path)


def test_system_tables(orders: shoal.Table) -> None:
    files = run_json("system", orders.path, "files")
    assert {"partition", "bucket", "file_path", "level", "record_count"} <= set(files[0])
    assert sum(f["record_count"] for f in files) == 4
    assert len(run_json("system", orders.path, "files", "--snapshot", "1")) < len(files)
    options = run_json("system", orders.path, "options")
    assert {"key": "bucket", "value": "2"} in options
    assert run("system", orders.path, "nope").exit_code == 2


# --- read -------------------------------------------------------------------------------------


def test_read_rows_as_json(orders: shoal.Table) -> None:
    got = run_json("read", orders.path)
    assert [r["id"] for r in got] == [1, 2, 3, 4]
    assert got[0] == {
        "dt": "2026-11-01",
        "id": 1,
        "ts": "2026-11-01T01:01:00",
        "amount": "0.25",
        "note": "n1",
    }
    assert got[2]["note"] is None


def test_read_time_travel_projection_filter_limit(orders: shoal.Table) -> None:
    path = orders.path
    assert len(run_json("read", path, "--snapshot", "1")) == 3
    orders.create_tag("first", snapshot_id=1)
    assert len(run_json("read", path, "--tag", "first")) == 3
    assert run_json("read", path, "--columns", "id,note", "--limit", "2") == [
        {"id": 1, "note": "n1"},
        {"id": 2, "note": "n2"},
    ]
    assert [r["id"] for r in run_json("read", path, "-f", "amount > 0.5")] == [3, 4]
    both = run_json("read", path, "-f", "dt = '2026-11-01' and note is null")
    assert [r["id"] for r in both] == [3]
    assert [r["id"] for r in run_json("read", path, "-f", "id in (1, 4)", "-f", "id != 4")] == [1]
    assert [r["id"] for r in run_json("read", path, "-f", "ts >= 2026-11-01T05:00")] == [4]
    assert run_json("read", path, "--read-optimized") == []  # write-only: nothing compacted
    later = datetime.now() + timedelta(minutes=1)
    assert len(run_json("read", path, "--as-of", later.isoformat())) == 4


def test_read_for_people(orders: shoal.Table) -> None:
    result = run("read", orders.path, "--limit", "2")
    assert result.exit_code == 0
    assert "n1" in result.stdout
    assert "n3" not in result.stdout
    assert "first 2 rows" in result.stderr


def test_read_errors(orders: shoal.Table) -> None:
    path = orders.path
    assert run("read", path, "--snapshot", "99").exit_code == 3
    assert run("read", path, "--tag", "nope").exit_code == 3
    assert run("read", path, "--tag", "a", "--snapshot", "1").exit_code == 2
    assert run("read", path, "--bogus").exit_code == 2
    assert run("read", path, "--limit", "-1").exit_code == 2
    assert run("read", path, "--columns", "nope").exit_code == 2
    assert run("read", path, "-f", "nope = 1").exit_code == 2
    assert run("read", path, "-f", "id > abc").exit_code == 2
    assert run("read", path, "-f", "id between 1").exit_code == 2
    assert run("read", path, "-f", "id in 1").exit_code == 2


# --- tags -------------------------------------------------------------------------------------


def test_tags(orders: shoal.Table) -> None:
    path = orders.path
    created = run_json("tag", "create", path, "v1", "--snapshot", "1", "--time-retained", "7 d")
    assert created["tag_name"] == "v1"
    assert created["snapshot_id"] == 1
    assert created["time_retained"] == "PT168H"
    assert run_json("tag", "create", path, "v2")["snapshot_id"] == 2
    listed = run_json("tag", "list", path)
    assert [(t["tag_name"], t["snapshot_id"]) for t in listed] == [("v1", 1), ("v2", 2)]
    assert run("tag", "create", path, "v2").exit_code == 4
    assert run_json("tag", "create", path, "v2", "--snapshot", "1", "--replace")["snapshot_id"] == 1
    renamed = run_json("tag", "rename", path, "v2", "v3")
    assert renamed["tag_name"] == "v3"
    assert renamed["old_tag_name"] == "v2"
    assert run_json("tag", "delete", path, "v3") == {"tag_name": "v3", "deleted": True}
    assert [t.name for t in orders.list_tags()] == ["v1"]
    human = run("tag", "list", path)
    assert "v1" in human.stdout


def test_tag_errors(orders: shoal.Table) -> None:
    path = orders.path
    assert run("tag", "create", path, "123").exit_code == 2
    assert run("tag", "create", path, "a/b").exit_code == 2
    assert run("tag", "create", path, "x", "--snapshot", "9").exit_code == 3
    assert run("tag", "create", path, "x", "--time-retained", "soon").exit_code == 2
    missing = run("tag", "delete", path, "nope")
    assert missing.exit_code == 3
    assert "shoal tag list" in missing.stderr
    assert run("tag", "rename", path, "nope", "other").exit_code == 3


# --- compaction and freshness -----------------------------------------------------------------


def test_event_time_compaction_and_freshness(orders: shoal.Table) -> None:
    path = orders.path
    before = run_json("freshness", path)
    assert before["watermark_ms"] == ms(datetime(2026, 11, 1, 1, 1))
    assert before["min_uncompacted_event_time_ms"] == ms(datetime(2026, 11, 1, 1, 1))
    assert before["uncompacted_file_count"] >= 2
    assert sum(b["uncompacted_file_count"] for b in before["buckets"]) == before[
        "uncompacted_file_count"
    ]
    result = run_json(
        "compact", path, "--strategy", "event-time", "--event-time-threshold", "2026-11-01T03:00"
    )
    assert result["snapshot_id"] == 3
    assert result["compacted_files"] >= 1
    after = result["freshness"]
    assert after["watermark_ms"] == ms(datetime(2026, 11, 1, 5, 4))  # only id 4 is left
    assert after == {k: v for k, v in run_json("freshness", path).items() if k != "buckets"}
    millis = run_json(
        "compact", path, "--strategy", "event-time", "--event-time-threshold", "0"
    )
    assert millis["snapshot_id"] is None  # nothing that old
    human = run("freshness", path)
    assert "read-optimized freshness" in human.stdout
    full = run_json("compact", path, "-s", "full")
    assert full["freshness"]["uncompacted_file_count"] == 0
    assert len(run_json("read", path, "--read-optimized")) == 4
    assert run_json("freshness", path, "--snapshot", "1")["uncompacted_file_count"] >= 1


def test_compact_errors(orders: shoal.Table, wh: str) -> None:
    assert run("compact", orders.path, "-s", "bogus").exit_code == 2
    assert run("compact", orders.path, "--event-time-threshold", "yesterday-ish").exit_code == 2
    append = shoal.Catalog(wh).create_table("db.logs", pa.schema([("line", pa.string())]))
    assert run("compact", append.path).exit_code == 2
    no_field = shoal.Catalog(wh).create_table(
        "db.kv", pa.schema([pa.field("k", pa.int64(), False)]), primary_keys=["k"],
        options={"bucket": "1"},
    )
    assert run("compact", no_field.path, "-s", "event-time").exit_code == 2


# --- cleanup ----------------------------------------------------------------------------------


def test_expire_snapshots(orders: shoal.Table) -> None:
    for i in range(5, 9):
        orders.upsert(rows([i]))
    result = run_json("expire-snapshots", orders.path, "--retain-max", "2", "--older-than", "now")
    assert result == {
        "expired_snapshots": 4,
        "deleted_data_files": 0,
        "deleted_manifest_files": result["deleted_manifest_files"],
        "deleted_index_files": 0,
        "kept_changelogs": 0,
        "expired_changelogs": 0,
        "held_by_consumers": [],
        "expired_consumers": [],
    }
    assert [s.id for s in orders.snapshots()] == [5, 6]
    again = run("expire-snapshots", orders.path, "--retain-max", "2", "--older-than", "1 h")
    assert again.exit_code == 0
    assert "expired 0 snapshots" in again.stdout
    orders.reset_consumer("reader", 5)
    orders.upsert(rows([9]))
    held = run("expire-snapshots", orders.path, "--retain-max", "1", "--older-than", "now")
    assert "snapshots kept for consumers reader" in held.stdout
    assert orders.snapshots()[0].id == 5
    assert run("expire-snapshots", orders.path, "--retain-max", "0").exit_code == 2
    assert run("expire-snapshots", orders.path, "--older-than", "someday").exit_code == 2


def test_expire_partitions(orders: shoal.Table) -> None:
    args = ("expire-partitions", orders.path, "--expiration-time", "12 h")
    result = run_json(*args, "--now", "2026-11-02T08:00")
    assert result == {"expired_partitions": [{"dt": "2026-11-01"}], "count": 1}
    assert run_json(*args, "--now", "2026-11-02T08:00")["count"] == 0
    assert run("expire-partitions", orders.path, "--expiration-time", "x").exit_code == 2


def test_remove_orphan_files(orders: shoal.Table) -> None:
    bucket = next(Path(orders.path).glob("dt=*/bucket-*"))
    stray = bucket / "data-00000000-0000-4000-8000-000000000000-0.parquet"
    pq.write_table(pa.table({"x": [1]}), stray)
    assert run_json("remove-orphan-files", orders.path)["deleted_count"] == 0  # too young
    dry = run_json("remove-orphan-files", orders.path, "--older-than", "now", "--dry-run")
    assert dry["dry_run"] is True
    assert dry["deleted_count"] == 1
    assert [Path(p).name for p in dry["paths"]] == [stray.name]
    assert stray.exists()
    human = run("remove-orphan-files", orders.path, "--older-than", "now", "--dry-run")
    assert "would delete 1" in human.stdout
    real = run_json("remove-orphan-files", orders.path, "--older-than", "now")
    assert real["deleted_count"] == 1
    assert not stray.exists()
    future = run("remove-orphan-files", orders.path, "--older-than", "2999-01-01")
    assert future.exit_code == 2
    assert "future" in future.stderr


def test_rollback(orders: shoal.Table) -> None:
    assert run("rollback", orders.path, "--snapshot", "1", "--tag", "x").exit_code == 2
    aborted = CliRunner().invoke(cli, ["rollback", orders.path, "--snapshot", "1"], input="n\n")
    assert aborted.exit_code == 1
    assert orders.latest_snapshot().id == 2  # type: ignore[union-attr]
    assert run_json("rollback", orders.path, "--snapshot", "1", "--yes") == {"snapshot_id": 1}
    assert run("rollback", orders.path, "--snapshot", "7", "--yes").exit_code == 3


# --- pieces -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (E.InvalidArgumentError("x"), 2),
        (E.InvalidFilterError("x"), 2),
        (E.InvalidOptionError("k", "v", "r"), 2),
        (E.InvalidTagNameError("1", "r"), 2),
        (E.SchemaMismatchError("x"), 2),
        (E.TableNotFoundError("t"), 3),
        (E.DatabaseNotFoundError("d"), 3),
        (E.SnapshotNotFoundError("x"), 3),
        (E.TagNotFoundError("t"), 3),
        (E.TableAlreadyExistsError("t"), 4),
        (E.TagAlreadyExistsError("t"), 4),
        (E.CommitConflictError("x"), 4),
        (E.SequenceConflictError("x"), 4),
        (E.PartitionExpiredError([]), 4),
        (E.CorruptMetadataError("p", "r"), 5),
        (E.CorruptDataFileError("d"), 5),
        (E.UnknownOptionError("k", "v", "r", None), 2),
        (E.UnsupportedFeatureError("x"), 6),
        (E.StoreUnreachableError("s3://b", "r", 30.0, "c"), 7),
        (E.FileTimeError("p", 1), 1),
        (RuntimeError("x"), 1),
    ],
)
def test_exit_codes(error: Exception, code: int) -> None:
    assert exit_code_for(error) == code


def test_parse_schema() -> None:
    schema = parse_schema(
        'id bigint not null, "my col" STRING, ts timestamp(3), ltz timestamp_ltz(6), '
        "d date, m decimal(12, 4), f float, b boolean, raw bytes"
    )
    assert schema == pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        ("my col", pa.string()),
        ("ts", pa.timestamp("ms")),
        ("ltz", pa.timestamp("us", tz="UTC")),
        ("d", pa.date32()),
        ("m", pa.decimal128(12, 4)),
        ("f", pa.float32()),
        ("b", pa.bool_()),
        ("raw", pa.binary()),
    ])
    for bad in ("", "a", "a nosuchtype", "a int(3"):
        with pytest.raises(click.BadParameter):
            parse_schema(bad)


def test_parse_filter_types_values_by_column() -> None:
    assert parse_filter(["amount >= 1.5 and note = 'a and b'"], SCHEMA) is not None
    assert parse_filter(
        ["id in (1, 2)", "dt != '2026-11-01'", "note is not null", "ts < 2026-11-01T02:00"],
        SCHEMA,
    ) == [
        [
            ("id", "in", [1, 2]),
            ("dt", "!=", "2026-11-01"),
            ("note", "!=", None),
            ("ts", "<", datetime(2026, 11, 1, 2, 0)),
        ]
    ]
    assert parse_filter(["amount = 0.25"], SCHEMA) == [[("amount", "=", Decimal("0.25"))]]
    assert parse_filter(["id = 1 or id = 2", "note is null"], SCHEMA) == [
        [("id", "=", 1), ("note", "=", None)],
        [("id", "=", 2), ("note", "=", None)],
    ]
    assert parse_filter([], SCHEMA) is None


def test_parse_time() -> None:
    now = datetime(2026, 11, 1, 12, 0)
    assert parse_time("now", "--t", now=now) == now
    assert parse_time("2 h", "--t", now=now) == datetime(2026, 11, 1, 10, 0)
    assert parse_time("2026-10-01T08:30", "--t", now=now) == datetime(2026, 10, 1, 8, 30)
    with pytest.raises(click.BadParameter):
        parse_time("tomorrow", "--t", now=now)


def test_demo_stream_is_deterministic_and_late() -> None:
    config = StreamConfig(3000, datetime(2026, 11, 1, 22), 3, 20, seed=3)
    first, second = generate(config), generate(config)
    assert first == second
    assert generate(StreamConfig(3000, datetime(2026, 11, 1, 22), 3, 20, seed=4)) != first
    assert len(first) == 9
    events = [e for batch in first for e in batch.events]
    assert 2000 < len(events) <= 3000
    late = [e for e in events if e.late]
    assert late
    assert all(e.arrival - e.event_time >= timedelta(hours=1) for e in late)
    for batch in first:
        assert all(batch.start <= e.arrival < batch.end for e in batch.events)
        table = batch.to_arrow()
        assert table.num_rows == len(batch.events)
