"""The pypaimon interop tests, run against Apache Paimon's Java implementation (0.9 and 1.0).

Each test here checks, with Java as the other side, what one or more tests of
``test_pypaimon_*.py`` check with pypaimon; most run both directions at once, so that a
test pays for as few JVM starts as it can:

- ``test_appends_both_ways``: ``test_pypaimon_reads_what_shoal_writes``,
  ``test_pypaimon_reads_shoal_partition_drop_and_projection`` and
  ``test_shoal_reads_what_pypaimon_writes`` (compat);
- ``test_one_table_written_by_both_in_turns``: ``test_one_table_written_by_both``
  (compat), ``test_both_writers_put_a_key_in_one_bucket`` and
  ``test_writers_continue_each_others_sequence_numbers`` (primary key);
- ``test_event_time_compaction_both_ways``:
  ``test_pypaimon_reads_what_event_time_compaction_leaves`` and
  ``test_shoal_event_time_compacts_what_pypaimon_writes`` (event time), with what Java
  has that pypaimon lacks: the read-optimized view ``$ro`` and its own parse of the
  snapshots, which carry shoal's watermark in their properties;
- ``test_primary_key_tables_both_ways``:
  ``test_pypaimon_reads_what_shoal_upserts_deletes_and_compacts`` and
  ``test_shoal_reads_and_compacts_what_pypaimon_writes`` (primary key), with ``$ro``
  and Java compacting what shoal wrote;
- ``test_tags_both_ways``: every test of ``test_pypaimon_tags.py`` (where
  ``test_row_kinds_time_travel_tags_and_rollback`` in ``test_java_oracle.py`` checks
  Java's tags with Java alone).

``test_types_both_ways`` (compat) has its counterparts in ``test_java_oracle.py``
(``test_java_reads_what_shoal_wrote`` and ``test_shoal_reads_what_java_wrote``, every
type both ways).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import shoal
from shoal.event_time import backlog
from shoal.event_time.freshness import freshness
from shoal.format.types import BIGINT, AtomicType
from shoal.write.bucket import assign_buckets
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon
from tests.interop.test_pypaimon_event_time import SCHEMA as TIMED
from tests.interop.test_pypaimon_event_time import at
from tests.interop.test_pypaimon_event_time import rows as timed

pytestmark = pytest.mark.interop

Model = dict[int, dict[str, Any]]
TOP = 5  # the top level with Paimon's default num-levels (6)


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def by_id(table: pa.Table) -> list[dict[str, Any]]:
    return sorted_rows(table, "id")


def expected(model: Model) -> list[dict[str, Any]]:
    return [model[i] for i in sorted(model)]


def at_snapshot(snapshot_id: int) -> dict[str, str]:
    return {"scan.snapshot-id": str(snapshot_id)}


def at_tag(tag: str) -> dict[str, str]:
    return {"scan.tag-name": tag}


# --- append tables ---------------------------------------------------------------------------

APPEND_LAYOUTS: dict[str, tuple[list[str], dict[str, str]]] = {
    "partitioned": (["dt"], {}),
    "unpartitioned": ([], {}),
    "bucketed": (["dt"], {"bucket": "3", "bucket-key": "id"}),
}


def test_appends_both_ways(java: JavaPaimon, tmp_path: Path) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    ours: dict[str, shoal.Table] = {}
    for layout, (partition_keys, options) in APPEND_LAYOUTS.items():
        table = catalog.create_table(
            f"db.s_{layout}", EVENTS_SCHEMA, partition_keys=partition_keys, options=options
        )
        table.append(events(range(40), dt=[f"2026-11-0{i % 3 + 1}" for i in range(40)]))
        table.append(events(range(40, 50), dt="2026-11-04"))
        table.overwrite(events(range(100, 105), dt="2026-11-05"))
        table.append(events(range(200, 230), dt=[f"2026-11-0{i % 2 + 1}" for i in range(30)]))
        ours[layout] = table
    dropped = catalog.create_table(
        "db.s_dropped",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        options={"manifest.merge-min-count": "3"},
    )
    for day in range(1, 8):
        dropped.append(events(range(day * 10, day * 10 + 5), dt=f"2026-11-0{day}"))
    dropped.drop_partitions([{"dt": "2026-11-02"}, {"dt": "2026-11-05"}])

    # Java reads every snapshot of shoal's tables, and writes tables of its own.
    batches = [
        events(range(30), dt=[f"2026-11-0{i % 3 + 1}" for i in range(30)]),
        events(range(30, 35), dt="2026-11-09"),
        events(range(35, 60), dt=[f"2026-11-0{i % 2 + 1}" for i in range(25)]),
    ]
    ops: list[jp.Op[Any]] = []
    for layout, table in ours.items():
        for snapshot in table.snapshots():
            ops.append(jp.read(f"db.s_{layout}", options=at_snapshot(snapshot.id)))
        ops.append(
            jp.read(
                f"db.s_{layout}$snapshots",
                projection=["snapshot_id", "commit_kind", "total_record_count"],
            )
        )
    ops.append(jp.read("db.s_dropped", projection=["id", "name"]))
    for layout, (partition_keys, options) in APPEND_LAYOUTS.items():
        theirs_options = {**options, "bucket": "2"} if options else {}
        ops.append(
            jp.create_table(
                f"db.j_{layout}",
                EVENTS_SCHEMA,
                partition_keys=partition_keys,
                options=theirs_options,
            )
        )
        ops += [jp.write(f"db.j_{layout}", batch) for batch in batches]
        ops += [jp.read(f"db.j_{layout}", options=at_snapshot(i)) for i in (1, 2, 3)]
    results = iter(java.run(tmp_path, ops))

    for layout, table in ours.items():
        for snapshot in table.snapshots():
            got = by_id(next(results))
            assert got == by_id(table.to_arrow(snapshot_id=snapshot.id)), (layout, snapshot.id)
        assert next(results).to_pylist() == [
            {
                "snapshot_id": s.id,
                "commit_kind": s.commit_kind,
                "total_record_count": s.total_record_count,
            }
            for s in table.snapshots()
        ], layout
        assert len(by_id(table.to_arrow())) == 35
    projected = next(results)
    assert projected.column_names == ["id", "name"]
    assert by_id(projected) == by_id(dropped.to_arrow(columns=["id", "name"]))
    assert len(projected) == 25

    for layout in APPEND_LAYOUTS:
        assert [next(results) for _ in range(4)] == [None, 1, 2, 3], layout
        table = catalog.get_table(f"db.j_{layout}")
        assert [s.id for s in table.snapshots()] == [1, 2, 3]
        for snapshot_id, upto in zip((1, 2, 3), (30, 35, 60), strict=True):
            got = table.to_arrow(snapshot_id=snapshot_id)
            assert sorted(got.column("id").to_pylist()) == list(range(upto))
            assert by_id(got) == by_id(next(results)), (layout, snapshot_id)
        filtered = table.to_arrow(filter=[("dt", "=", "2026-11-09")])
        assert sorted(filtered.column("id").to_pylist()) == list(range(30, 35))
    assert next(results, None) is None


# --- one table, two writers ------------------------------------------------------------------


def rows(ids: list[int] | range, tag: str) -> pa.Table:
    """Rows of EVENTS_SCHEMA; a key's dt follows from its id, so id alone names a row."""
    ids = list(ids)
    return pa.table(
        {
            "dt": [f"2026-11-0{1 + i % 2}" for i in ids],
            "id": ids,
            "name": [f"{tag}{i}" for i in ids],
            "value": [i * 0.5 for i in ids],
        },
        schema=EVENTS_SCHEMA,
    )


def apply(model: Model, data: pa.Table, delete: bool = False) -> None:
    """What an upsert (or a delete) of ``data`` does to the expected rows."""
    for row in data.to_pylist():
        if delete:
            model.pop(row["id"], None)
        else:
            model[row["id"]] = row


def check_buckets(table: shoal.Table, key: str, buckets: int) -> set[str]:
    """Every row of every live file is in the bucket Paimon's hash of ``key`` gives, and no
    key of a partition is in two buckets; returns the first letters of the names read."""
    bucket_of_key: dict[tuple[Any, int], set[int]] = {}
    tags: set[str] = set()
    for split in table.scan().plan():
        for path in split.file_paths:
            data = pq.read_table(path, partitioning=None)
            computed = assign_buckets(data.select([key]), [key], [AtomicType(BIGINT)], buckets)
            assert set(computed.tolist()) == {split.bucket}, path
            for value in data[key].to_pylist():
                bucket_of_key.setdefault((split.partition.get("dt"), value), set()).add(
                    split.bucket
                )
            tags.update(name[0] for name in data["name"].to_pylist())
    if key.startswith("_KEY_"):
        assert {k: b for k, b in bucket_of_key.items() if len(b) > 1} == {}
    return tags


def test_one_table_written_by_both_in_turns(java: JavaPaimon, tmp_path: Path) -> None:
    """Three tables, each written by Java and shoal in turns: an append table with a bucket
    key (the same keys again from the other writer must meet in one bucket), a partitioned
    primary-key table (each key upserted by both stays in one bucket) and one whose writers
    continue each other's sequence numbers."""
    catalog = shoal.Catalog(str(tmp_path))
    log_layout: dict[str, Any] = {
        "partition_keys": ["dt"],
        "options": {"bucket": "4", "bucket-key": "id"},
    }
    pk_layout: dict[str, Any] = {
        "partition_keys": ["dt"],
        "primary_keys": ["dt", "id"],
        "options": {"bucket": "4"},
    }
    seq_layout: dict[str, Any] = {"primary_keys": ["id"], "options": {"bucket": "2"}}
    pk_model: Model = {}
    keys = range(20)

    first = java.run(
        tmp_path,
        [
            jp.create_table("db.log", EVENTS_SCHEMA, **log_layout),
            jp.create_table("db.pk", EVENTS_SCHEMA, **pk_layout),
            jp.create_table("db.seq", EVENTS_SCHEMA, **seq_layout),
            jp.write("db.log", events(range(50))),
            jp.write("db.pk", rows(range(40), "j")),
            jp.write("db.seq", rows(keys, "j")),
            jp.read("db.seq"),
        ],
    )
    apply(pk_model, rows(range(40), "j"))
    log, pk, seq = (catalog.get_table(f"db.{name}") for name in ("log", "pk", "seq"))
    assert by_id(first[-1]) == by_id(seq.to_arrow()) == by_id(rows(keys, "j"))

    log.append(events(range(50)))  # the same keys again: they must meet in one bucket
    pk.upsert(rows(range(20, 60), "s"))
    apply(pk_model, rows(range(20, 60), "s"))
    seq.upsert(rows(keys, "s"))
    assert by_id(seq.to_arrow()) == by_id(rows(keys, "s"))

    second = java.run(
        tmp_path,
        [
            jp.read("db.seq"),
            jp.write("db.log", events(range(50, 60))),
            jp.write("db.pk", rows(range(10, 30), "k")),
            jp.write("db.seq", rows(keys, "k")),
            jp.read("db.seq"),
        ],
    )
    apply(pk_model, rows(range(10, 30), "k"))
    assert by_id(second[0]) == by_id(rows(keys, "s")), "Java, after shoal"
    assert by_id(second[-1]) == by_id(shoal.open_table(seq.path).to_arrow())
    assert by_id(second[-1]) == by_id(rows(keys, "k"))

    log = shoal.open_table(log.path)
    log.overwrite(events(range(70, 80), dt="2026-11-02"), partition={"dt": "2026-11-02"})
    pk = shoal.open_table(pk.path)
    pk.upsert(rows(range(25, 35), "t"))
    apply(pk_model, rows(range(25, 35), "t"))

    seq_files = ["bucket", "file_path", "min_sequence_number", "max_sequence_number"]
    java_log, java_snapshots, java_pk, java_seq_files = java.run(
        tmp_path,
        [
            jp.read("db.log"),
            jp.read("db.log$snapshots", projection=["snapshot_id", "commit_kind"]),
            jp.read("db.pk"),
            jp.read("db.seq$files", projection=seq_files),
        ],
    )
    log_ids = sorted([*range(50), *range(50), *range(50, 60), *range(70, 80)])
    assert sorted(log.to_arrow().column("id").to_pylist()) == log_ids
    assert sorted(java_log.column("id").to_pylist()) == log_ids
    assert java_snapshots.to_pylist() == [
        {"snapshot_id": i, "commit_kind": kind}
        for i, kind in enumerate(["APPEND", "APPEND", "APPEND", "OVERWRITE"], 1)
    ]
    check_buckets(log, "id", 4)
    assert by_id(java_pk) == by_id(pk.to_arrow()) == expected(pk_model)
    assert check_buckets(pk, "_KEY_id", 4) == {"j", "s", "k", "t"}  # both writers' files

    # In every bucket, each write's sequence numbers come after all earlier ones, and Java
    # sees the files shoal sees (its `file_path` is the file's name, shoal's the full path).
    seq = shoal.open_table(seq.path)
    files = seq.system_table("files").select(seq_files)
    named = files.set_column(
        1, "file_path", pa.array([Path(p).name for p in files["file_path"].to_pylist()])
    )
    assert sorted_rows(named, "file_path") == sorted_rows(java_seq_files, "file_path")
    for bucket in set(files["bucket"].to_pylist()):
        ranges = sorted(
            (f["min_sequence_number"], f["max_sequence_number"])
            for f in files.to_pylist()
            if f["bucket"] == bucket
        )
        assert len(ranges) == 3
        assert all(a[1] < b[0] for a, b in pairwise(ranges)), ranges


# --- event-time compaction -------------------------------------------------------------------


def epoch_ms(moment: datetime) -> int:
    return int(moment.replace(tzinfo=UTC).timestamp() * 1000)


EVENT_TIME_LAYOUTS: dict[str, tuple[bool, list[str], list[str]]] = {
    "merge": (False, ["dt"], ["dt", "id"]),
    "exact": (True, [], ["id"]),
}


def event_time_history(table: shoal.Table, primary_keys: list[str]) -> tuple[Model, dict[int, Any]]:
    """Writes late data, deletes and two event-time compactions (the script of
    test_pypaimon_reads_what_event_time_compaction_leaves); returns the rows expected now
    and shoal's real-time view of each snapshot."""
    model: Model = {}
    history: dict[int, list[dict[str, Any]]] = {}

    def check() -> None:
        ours = by_id(table.to_arrow())
        assert ours == expected(model)
        latest = table.latest_snapshot()
        assert latest is not None
        history.setdefault(latest.id, ours)

    def upsert(data: pa.Table) -> None:
        table.upsert(data)
        apply(model, data)
        check()

    def delete(ids: list[int], ts: datetime | None = None) -> None:
        data = timed(ids, ts or at(0), "")
        table.delete(data if ts is not None else data.select(primary_keys))
        apply(model, data, delete=True)
        check()

    def compact(threshold: datetime) -> None:
        assert table.compact("event-time", event_time_threshold=threshold).snapshot is not None
        check()

    upsert(timed(range(30), [at(1), at(5)] * 15, "a"))
    upsert(timed(range(20, 40), [at(0), at(7)] * 10, "b"))  # late data, and newer
    delete([1, 2, 3, 25])
    upsert(timed([50, 51, 52, 53], at(9), "late"))  # left below by both compactions
    delete([50, 51])  # key-only: picked, while the older rows stay below
    compact(at(3))
    upsert(timed(range(10), at(2), "c"))
    delete([4, 30], ts=at(1))  # whole rows, with an event time of their own
    compact(at(6))
    return model, history


def test_event_time_compaction_both_ways(java: JavaPaimon, tmp_path: Path) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    ours: dict[str, tuple[shoal.Table, Model, dict[int, Any]]] = {}
    for layout, (exact, partition_keys, primary_keys) in EVENT_TIME_LAYOUTS.items():
        options = {
            "bucket": "2",
            "write-only": "true",
            "compaction.event-time.field": "ts",
            "compaction.event-time.exact-split": str(exact).lower(),
        }
        table = catalog.create_table(
            f"db.s_{layout}",
            TIMED,
            partition_keys=partition_keys,
            primary_keys=primary_keys,
            options=options,
        )
        ours[layout] = (table, *event_time_history(table, primary_keys))

    # Java reads every snapshot, the read-optimized view and the snapshots of shoal's
    # tables, then writes on top of them; and it writes a table of its own with row kinds.
    on_top = timed([0, 1, 50, 52, 60], [at(0), at(8), at(1), at(2), at(9)], "d")
    theirs_layout: dict[str, Any] = {
        "partition_keys": ["dt"],
        "primary_keys": ["dt", "id"],
        "options": {"bucket": "2", "write-only": "true", "compaction.event-time.field": "ts"},
    }
    batches: list[tuple[pa.Table, jp.RowKindName]] = [
        (timed(range(12), at(1), "i"), "INSERT"),
        (timed([3, 4, 20], at(9), "u"), "UPDATE_AFTER"),
        (timed([5, 20], at(9), ""), "DELETE"),
    ]
    ops: list[jp.Op[Any]] = []
    for layout, (_, _, history) in ours.items():
        name = f"db.s_{layout}"
        ops += [jp.read(name, options=at_snapshot(i)) for i in sorted(history)]
        ops += [
            jp.read(f"{name}$ro"),
            jp.read(f"{name}$snapshots", projection=["snapshot_id", "watermark"]),
            jp.snapshot(name),
            jp.write(name, on_top, kind="UPDATE_AFTER"),
            jp.read(name),
        ]
    ops.append(jp.create_table("db.j", TIMED, **theirs_layout))
    ops += [jp.write("db.j", batch, kind=kind) for batch, kind in batches]
    ops.append(jp.read("db.j$files", projection=["level"]))
    results = iter(java.run(tmp_path, ops))

    for layout, (table, model, history) in ours.items():
        exact = EVENT_TIME_LAYOUTS[layout][0]
        for snapshot_id, rows_then in sorted(history.items()):
            assert by_id(next(results)) == rows_then, (layout, snapshot_id)
            assert by_id(table.to_arrow(snapshot_id=snapshot_id)) == rows_then
        latest = max(history)  # shoal's last snapshot, below Java's write on top
        files = table.system_table("files", snapshot_id=latest).to_pylist()
        assert {0, TOP} <= {f["level"] for f in files}
        assert any(f["level"] == TOP and f["deleteRowCount"] for f in files), "no kept delete"
        read_optimized = by_id(next(results))
        assert read_optimized
        assert read_optimized == by_id(table.to_arrow(snapshot_id=latest, read_optimized=True))
        if exact:
            assert all(r["ts"] < at(6) for r in read_optimized)

        # Paimon 0.9 and 1.0 know no snapshot properties (nor the manifest list sizes of
        # later versions): they see shoal's snapshots without the watermark shoal keeps
        # there, and every other field as written.
        snapshots = [s for s in table.snapshots() if s.id <= latest]
        assert next(results).to_pylist() == [
            {"snapshot_id": s.id, "watermark": s.watermark} for s in snapshots
        ]
        ours_latest = snapshots[-1]
        assert ours_latest.properties is not None
        watermark = table.freshness(snapshot_id=latest).watermark_ms
        assert watermark is not None
        assert ours_latest.properties["shoal.read-optimized-watermark"] == str(watermark)
        parsed = next(results)
        written = ours_latest.to_json_dict()
        unknown = {"properties", "baseManifestListSize", "deltaManifestListSize"}
        assert set(written) - set(parsed) == unknown
        assert {k: parsed[k] for k in written if k not in unknown} == {
            k: v for k, v in written.items() if k not in unknown
        }

        # Java's commit carries no properties: shoal finds the watermark from the files.
        assert next(results) == latest + 1
        apply(model, on_top)
        assert by_id(next(results)) == expected(model), layout
        assert by_id(table.to_arrow()) == expected(model)
        on_java = table.latest_snapshot()
        assert on_java is not None
        assert on_java.properties is None
        assert table.freshness().watermark_ms == min(epoch_ms(at(0)), watermark)
        # Nor the backlog counters: Java read and committed on top of a snapshot holding
        # them; freshness scans Java's snapshot, and shoal's next commit records them again.
        store = table._store
        assert backlog.recorded_totals(store, ours_latest) is not None
        assert backlog.recorded_totals(store, on_java) is None
        table.upsert(timed([70], at(5), "n"))
        restored = table.latest_snapshot()
        assert restored is not None
        assert backlog.recorded_totals(store, restored) is not None
        scanned = freshness(store, dataclasses.replace(restored, properties=None))
        assert table.freshness() == scanned
        assert scanned.uncompacted_file_count > 0

    # shoal event-time compacts what Java wrote: Java keeps value statistics, so only the
    # files whose event time starts at or below the threshold are merged.
    assert [next(results) for _ in range(4)] == [None, 1, 2, 3]
    java_files = next(results)
    assert next(results, None) is None
    assert set(java_files["level"].to_pylist()) == {0}
    theirs_model: Model = {}
    for batch, kind in batches:
        apply(theirs_model, batch, delete=kind == "DELETE")
    theirs = catalog.get_table("db.j")
    before = by_id(theirs.to_arrow())
    assert before == expected(theirs_model)
    first_files = len(theirs.system_table("files", snapshot_id=1))
    result = theirs.compact("event-time", event_time_threshold=at(3))
    assert result.compacted_files == first_files
    levels = [f["level"] for f in theirs.system_table("files").to_pylist()]
    assert set(levels) == {0, TOP}
    assert by_id(theirs.to_arrow()) == before
    read_optimized = by_id(theirs.to_arrow(read_optimized=True))
    assert all(r["ts"] == at(1) for r in read_optimized)

    java_latest, java_ro, java_levels = java.run(
        tmp_path,
        [jp.read("db.j"), jp.read("db.j$ro"), jp.read("db.j$files", projection=["level"])],
    )
    assert by_id(java_latest) == before
    assert by_id(java_ro) == read_optimized
    assert sorted(java_levels["level"].to_pylist()) == sorted(levels)


# --- primary-key tables ----------------------------------------------------------------------

PK_LAYOUTS: dict[str, tuple[list[str], list[str], str]] = {
    "partitioned": (["dt"], ["dt", "id"], "2"),
    "unpartitioned": ([], ["id"], "3"),
}


def upserts_deletes_and_compactions(table: shoal.Table, primary_keys: list[str]) -> Model:
    """The script of test_pypaimon_reads_what_shoal_upserts_deletes_and_compacts: upserts
    (several rows of a key in one write), deletes of present and absent keys, a full and a
    universal compaction between them. Returns the rows expected now."""
    model: Model = {}

    def upsert(data: pa.Table) -> None:
        table.upsert(data)
        apply(model, data)
        assert by_id(table.to_arrow()) == expected(model)

    def delete(ids: list[int]) -> None:
        keys = rows(ids, "").select(primary_keys)
        table.delete(keys)
        apply(model, keys, delete=True)
        assert by_id(table.to_arrow()) == expected(model)

    upsert(rows(range(30), "a"))
    # several rows of one key in one write: the last one wins
    upsert(pa.concat_tables([rows([5, 6], "b"), rows([5, 7], "c"), rows([5, 40], "d")]))
    delete([1, 2, 3, 6, 99])
    upsert(rows(range(25, 35), "e"))
    assert table.compact("full").snapshot is not None
    upsert(rows(range(10), "f"))
    delete([20, 21, 22, 30])
    assert table.compact("universal").snapshot is not None
    levels = set(table.system_table("files")["level"].to_pylist())
    assert levels & {1, 2, 3, 4}, f"universal compaction left levels {levels}"
    upsert(rows([3, 33, 50], "g"))
    delete([4, 24])
    return model


def test_primary_key_tables_both_ways(java: JavaPaimon, tmp_path: Path) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    ours: dict[str, tuple[shoal.Table, Model]] = {}
    for layout, (partition_keys, primary_keys, buckets) in PK_LAYOUTS.items():
        # write-only: compaction happens exactly where the script asks for it
        options = {
            "bucket": buckets,
            "write-only": "true",
            "num-sorted-run.compaction-trigger": "2",
        }
        table = catalog.create_table(
            f"db.s_{layout}",
            EVENTS_SCHEMA,
            partition_keys=partition_keys,
            primary_keys=primary_keys,
            options=options,
        )
        ours[layout] = (table, upserts_deletes_and_compactions(table, primary_keys))

    # Java reads every snapshot of shoal's tables, real-time and read-optimized, then
    # compacts them; and it writes a table of its own with row kinds.
    theirs_layout: dict[str, Any] = {
        "partition_keys": ["dt"],
        "primary_keys": ["dt", "id"],
        "options": {"bucket": "2", "write-only": "true"},
    }
    updates: list[jp.RowKindName] = ["UPDATE_AFTER"] * 15
    batches: list[tuple[pa.Table, list[jp.RowKindName]]] = [
        (rows(range(20), "a"), ["INSERT"] * 20),
        (rows([3, 4, 3, 25], "b"), ["UPDATE_AFTER", "UPDATE_AFTER", "INSERT", "INSERT"]),
        (rows([1, 2, 4, 40], "d"), ["DELETE", "DELETE", "DELETE", "INSERT"]),
        (rows([*range(15, 30), 16], "e"), [*updates, "DELETE"]),
    ]
    ops: list[jp.Op[Any]] = []
    snapshot_ids: dict[str, list[int]] = {}
    compacted: dict[str, list[int]] = {}
    for layout, (table, _) in ours.items():
        name = f"db.s_{layout}"
        snapshot_ids[layout] = [s.id for s in table.snapshots()]
        # the read-optimized view changes only with a compaction
        compacted[layout] = [s.id for s in table.snapshots() if s.commit_kind == "COMPACT"]
        ops += [jp.read(name, options=at_snapshot(i)) for i in snapshot_ids[layout]]
        ops += [jp.read(f"{name}$ro", options=at_snapshot(i)) for i in compacted[layout]]
        ops += [jp.compact(name), jp.read(name), jp.read(f"{name}$ro")]
    ops.append(jp.create_table("db.j", EVENTS_SCHEMA, **theirs_layout))
    ops += [jp.write("db.j", batch, kind=kinds) for batch, kinds in batches]
    ops += [jp.read("db.j", options=at_snapshot(i)) for i in range(1, len(batches) + 1)]
    results = iter(java.run(tmp_path, ops))

    for layout, (table, model) in ours.items():
        for snapshot_id in snapshot_ids[layout]:
            real_time = by_id(table.to_arrow(snapshot_id=snapshot_id))
            assert by_id(next(results)) == real_time, snapshot_id
        assert len(compacted[layout]) == 2
        for snapshot_id in compacted[layout]:
            read_optimized = by_id(table.to_arrow(snapshot_id=snapshot_id, read_optimized=True))
            assert read_optimized
            assert by_id(next(results)) == read_optimized, snapshot_id
        # Java compacts what shoal wrote: one run at the top level (2: without num-levels,
        # Paimon has num-sorted-run.compaction-trigger + 1 levels), the same rows.
        assert next(results) == snapshot_ids[layout][-1] + 1
        assert by_id(next(results)) == by_id(next(results)) == expected(model)
        assert by_id(table.to_arrow()) == expected(model)
        assert by_id(table.to_arrow(read_optimized=True)) == expected(model)
        assert [s.commit_kind for s in table.snapshots()][-1] == "COMPACT"
        assert set(table.system_table("files")["level"].to_pylist()) == {2}

    # shoal reads and compacts what Java wrote.
    assert [next(results) for _ in range(len(batches) + 1)] == [None, 1, 2, 3, 4]
    theirs = catalog.get_table("db.j")
    theirs_model: Model = {}
    for snapshot_id, (batch, kinds) in enumerate(batches, 1):
        for row, kind in zip(batch.to_pylist(), kinds, strict=True):
            if kind == "DELETE":
                theirs_model.pop(row["id"], None)
            else:
                theirs_model[row["id"]] = row
        java_rows = by_id(next(results))
        assert java_rows == expected(theirs_model), snapshot_id
        assert by_id(theirs.to_arrow(snapshot_id=snapshot_id)) == java_rows, snapshot_id
    assert next(results, None) is None

    assert theirs.compact("full").snapshot is not None
    files = theirs.system_table("files")
    assert set(files["level"].to_pylist()) == {TOP}
    assert set(files["file_source"].to_pylist()) == {"COMPACT"}
    assert by_id(theirs.to_arrow(read_optimized=True)) == expected(theirs_model)

    # Java reads shoal's compaction and writes on top: level 0 over the top level.
    more = rows([0, 5, 7], "f")
    more_kinds: list[jp.RowKindName] = ["UPDATE_AFTER", "UPDATE_AFTER", "DELETE"]
    results = iter(
        java.run(
            tmp_path,
            [
                jp.read("db.j"),
                jp.read("db.j$ro"),
                jp.write("db.j", more, kind=more_kinds),
                *[jp.read("db.j", options=at_snapshot(i)) for i in range(1, 7)],
            ],
        )
    )
    assert by_id(next(results)) == by_id(next(results)) == expected(theirs_model)
    assert next(results) == 6
    apply(theirs_model, more.slice(0, 2))
    apply(theirs_model, more.slice(2), delete=True)
    for snapshot_id in range(1, 7):
        assert by_id(next(results)) == by_id(theirs.to_arrow(snapshot_id=snapshot_id)), snapshot_id
    assert by_id(theirs.to_arrow()) == expected(theirs_model)


# --- tags ------------------------------------------------------------------------------------

PK_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
# The `$tags` columns compared across the two; commit_time is left out because the JVM
# shows it in UTC and shoal in the local time zone.
COMPARED = ["tag_name", "snapshot_id", "schema_id", "record_count", "create_time", "time_retained"]


def pk_rows(values: dict[int, str]) -> pa.Table:
    return pa.table({"id": list(values), "v": list(values.values())}, schema=PK_SCHEMA)


def pk_expected(values: dict[int, str]) -> list[dict[str, Any]]:
    return [{"id": i, "v": values[i]} for i in sorted(values)]


def tags_rows(tags: pa.Table) -> dict[str, dict[str, Any]]:
    """A `$tags` table (shoal's or Java's) by tag name, in the compared columns."""
    return {row["tag_name"]: row for row in tags.select(COMPARED).to_pylist()}


def test_tags_both_ways(java: JavaPaimon, tmp_path: Path) -> None:
    catalog = shoal.Catalog(str(tmp_path))
    # An append table: tags, then an overwrite, a partition drop and Java's commit on top.
    log = catalog.create_table("db.s_append", EVENTS_SCHEMA, partition_keys=["dt"])
    log.append(events(range(10), dt=["2026-11-01", "2026-11-02"] * 5))
    log.create_tag("plain")
    log.append(events(range(10, 15), dt="2026-11-03"))
    log.create_tag("kept", time_retained=timedelta(days=3, milliseconds=5))
    log_tagged = {name: by_id(log.to_arrow(tag=name)) for name in ("plain", "kept")}
    assert log_tagged["plain"] == by_id(events(range(10), ["2026-11-01", "2026-11-02"] * 5))
    log.overwrite(events([100], dt="2026-11-01"), partition={"dt": "2026-11-01"})
    log.drop_partitions([{"dt": "2026-11-03"}])
    # A primary-key table: tags of upserts and of a compaction with deletes.
    pk = catalog.create_table("db.s_pk", PK_SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    pk.upsert(pk_rows({i: f"a{i}" for i in range(12)}))
    pk.upsert(pk_rows({i: f"b{i}" for i in range(0, 12, 3)}))
    pk.create_tag("upserted")
    pk.delete(pa.table({"id": pa.array([1, 2], pa.int64())}))
    pk.compact("full")
    pk.create_tag("compacted", time_retained=timedelta(hours=12))
    pk.overwrite(pk_rows({7: "o7"}))
    pk.upsert(pk_rows({7: "x7", 8: "x8"}))
    upserted = {i: f"b{i}" if i % 3 == 0 else f"a{i}" for i in range(12)}
    compacted = {i: v for i, v in upserted.items() if i not in (1, 2)}
    pk_tagged = {"upserted": pk_expected(upserted), "compacted": pk_expected(compacted)}
    # Tags of every kind to list: retentions, a renamed tag and a deleted one.
    listed = catalog.create_table("db.s_listed", EVENTS_SCHEMA)
    for i in range(4):
        listed.append(events(range(i * 3, i * 3 + 3)))
    listed.create_tag("first", 1)
    listed.create_tag("v1.0", 2, timedelta(hours=25, minutes=1))
    listed.create_tag("2026-11-01", 3)
    to_rename = listed.create_tag("to-rename", 4, timedelta(seconds=90))
    listed.create_tag("to-delete", 4)
    listed.rename_tag("to-rename", "renamed")
    listed.delete_tag("to-delete")
    assert [t.name for t in listed.list_tags()] == ["first", "v1.0", "2026-11-01", "renamed"]
    assert {t.name: t for t in listed.list_tags()}["renamed"].create_time == to_rename.create_time

    # Java reads and lists shoal's tags, and tags tables of its own.
    j_batches = [
        events(range(5), dt="2026-11-01"),
        events(range(5, 8), dt="2026-11-02"),
        events(range(8, 12), dt="2026-11-01"),
    ]
    j_pk_batches = [
        pk_rows({i: f"a{i}" for i in range(10)}),
        pk_rows({i: f"b{i}" for i in range(0, 10, 2)}),
        pk_rows({3: "c3", 20: "c20"}),
    ]
    j_log_tags = ["p1", "p-ttl", "p-latest"]
    before = datetime.now(UTC).replace(tzinfo=None)  # the JVM's local time is UTC
    results = iter(
        java.run(
            tmp_path,
            [
                jp.write("db.s_append", events([200, 201], dt="2026-11-04")),
                jp.read("db.s_append"),
                *[jp.read("db.s_append", options=at_tag(name)) for name in log_tagged],
                jp.read("db.s_append", options=at_tag("kept"), projection=["id", "name"]),
                *[jp.read("db.s_pk", options=at_tag(name)) for name in pk_tagged],
                *[jp.read(f"db.s_{name}$tags") for name in ("append", "pk", "listed")],
                jp.create_table("db.j_append", EVENTS_SCHEMA, partition_keys=["dt"]),
                *[jp.write("db.j_append", batch) for batch in j_batches],
                jp.create_tag("db.j_append", "p1", snapshot_id=1),
                jp.create_tag("db.j_append", "p-ttl", snapshot_id=2, time_retained="2h"),
                jp.create_tag("db.j_append", "p-latest"),
                jp.create_table("db.j_pk", PK_SCHEMA, primary_keys=["id"], options={"bucket": "2"}),
                *[jp.write("db.j_pk", batch) for batch in j_pk_batches],
                jp.create_tag("db.j_pk", "second", snapshot_id=2, time_retained="1d"),
                jp.create_tag("db.j_pk", "third"),
                *[jp.read("db.j_append", options=at_tag(name)) for name in j_log_tags],
                jp.read("db.j_append$tags"),
            ],
        )
    )
    after = datetime.now(UTC).replace(tzinfo=None)

    assert next(results) == 5  # Java's commit on top of shoal's four snapshots
    assert sorted(next(results).column("id").to_pylist()) == [1, 3, 5, 7, 9, 100, 200, 201]
    for name, tagged in log_tagged.items():
        assert by_id(next(results)) == tagged, name
        assert by_id(log.to_arrow(tag=name)) == tagged, name
    assert by_id(next(results)) == by_id(log.to_arrow(tag="kept", columns=["id", "name"]))
    for name, tagged in pk_tagged.items():
        assert by_id(next(results)) == tagged, name
        assert by_id(pk.to_arrow(tag=name)) == tagged, name
    for table in (log, pk, listed):
        theirs = tags_rows(next(results))
        assert theirs == tags_rows(table.system_table("tags")), table.name
    listed_tags = tags_rows(listed.system_table("tags"))
    assert sorted(listed_tags) == ["2026-11-01", "first", "renamed", "v1.0"]
    assert [listed_tags[n]["time_retained"] for n in ("first", "v1.0", "renamed")] == [
        None,
        "PT25H1M",
        "PT1M30S",
    ]
    assert tags_rows(log.system_table("tags"))["kept"]["time_retained"] == "PT72H0.005S"

    # shoal reads and lists Java's tags.
    steps = 1 + len(j_batches) + len(j_log_tags) + 1 + len(j_pk_batches) + 2
    assert [next(results) for _ in range(steps)] == [
        None,
        1,
        2,
        3,
        None,
        None,
        None,
        None,
        1,
        2,
        3,
        None,
        None,
    ]
    j_log = catalog.get_table("db.j_append")
    tags = {t.name: t for t in j_log.list_tags()}
    assert [t.name for t in j_log.list_tags()] == ["p1", "p-ttl", "p-latest"]
    assert tags["p1"] == shoal.Tag("p1", 1, None, None)
    assert tags["p-latest"] == shoal.Tag("p-latest", 3, None, None)
    ttl = tags["p-ttl"]
    assert (ttl.snapshot_id, ttl.time_retained) == (2, timedelta(hours=2))
    assert ttl.create_time is not None
    assert before <= ttl.create_time <= after
    for name in j_log_tags:
        java_rows = by_id(next(results))
        assert by_id(j_log.to_arrow(tag=name)) == java_rows, name
        assert by_id(j_log.to_arrow(snapshot_id=tags[name].snapshot_id)) == java_rows, name
    assert sorted(j_log.to_arrow(tag="p-ttl").column("id").to_pylist()) == list(range(8))
    java_tags = tags_rows(next(results))
    assert java_tags == tags_rows(j_log.system_table("tags"))
    assert java_tags["p-ttl"]["time_retained"] == "PT2H"
    assert next(results, None) is None

    j_pk = catalog.get_table("db.j_pk")
    assert [(t.name, t.snapshot_id, t.time_retained) for t in j_pk.list_tags()] == [
        ("second", 2, timedelta(days=1)),
        ("third", 3, None),
    ]
    second = {i: f"b{i}" if i % 2 == 0 else f"a{i}" for i in range(10)}
    j_pk_tagged = {
        "second": pk_expected(second),
        "third": pk_expected({**second, 3: "c3", 20: "c20"}),
    }

    # Java's tags are shoal's: the names are taken, and they rename and delete; shoal
    # writes on top of Java's tagged snapshots, and Java reads it all.
    with pytest.raises(shoal.TagAlreadyExistsError):
        j_log.create_tag("p1", 3)
    j_log.rename_tag("p-ttl", "s-ttl")
    j_log.delete_tag("p1")
    j_pk.upsert(pk_rows({0: "shoal"}))
    results = iter(
        java.run(
            tmp_path,
            [
                jp.read(
                    "db.j_append$tags", projection=["tag_name", "snapshot_id", "time_retained"]
                ),
                jp.read("db.j_append", options=at_tag("s-ttl")),
                *[jp.read("db.j_pk", options=at_tag(name)) for name in j_pk_tagged],
                jp.read("db.j_pk"),
            ],
        )
    )
    assert sorted_rows(next(results), "tag_name") == [
        {"tag_name": "p-latest", "snapshot_id": 3, "time_retained": None},
        {"tag_name": "s-ttl", "snapshot_id": 2, "time_retained": "PT2H"},
    ]
    assert by_id(next(results)) == by_id(j_log.to_arrow(snapshot_id=2))
    for name, tagged in j_pk_tagged.items():
        assert by_id(next(results)) == tagged, name
        assert by_id(j_pk.to_arrow(tag=name)) == tagged, name
    assert by_id(next(results)) == by_id(j_pk.to_arrow())
    assert by_id(j_pk.to_arrow()) == pk_expected({**second, 0: "shoal", 3: "c3", 20: "c20"})
