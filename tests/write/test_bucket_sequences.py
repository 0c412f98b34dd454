"""Each bucket's highest sequence number, carried in the snapshots of a primary-key
table (``write.bucket_sequences``), equals a scan of the live files for every
partition the record knows, through any sequence of upserts, deletes, compactions,
overwrites, partition drops, expirations, rollbacks and commits of another writer
(which leave no record, or copy a stale one forward); and the table keeps every
row a model of the writes holds (no row lost or shadowed by a wrong sequence)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal.core.manifests import ManifestStore
from shoal.core.plan import live_entries
from shoal.format.snapshot import Snapshot
from shoal.write import bucket_sequences as BS

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.string())])
Model = dict[tuple[str, int], str]


def make(root: str | Path, options: dict[str, str]) -> shoal.Table:
    return shoal.Catalog(str(root)).create_table(
        "db.t",
        SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "write-only": "true", **options},
    )


def scanned(table: shoal.Table, snapshot: Snapshot) -> BS.Known:
    """Every partition's record, from the live files."""
    known: BS.Known = {}
    for e in live_entries(table._store, snapshot):
        buckets = known.setdefault(e.partition, {})
        buckets[e.bucket] = max(buckets.get(e.bucket, -1), e.file.max_sequence_number)
    return known


def rows(table: shoal.Table) -> Model:
    got = table.to_arrow().to_pylist()
    return {(r["dt"], r["id"]): r["v"] for r in got}


def foreign_rewrite(table: shoal.Table, stale: bool) -> shoal.Table:
    """What another Paimon writer leaves: a snapshot without shoal's properties, or
    (stale) with its predecessor's record copied forward."""
    latest = table.latest_snapshot()
    assert latest is not None
    path = Path(table.path) / "snapshot" / f"snapshot-{latest.id}"
    data = json.loads(path.read_text())
    properties = {k: v for k, v in data.get("properties", {}).items() if not k.startswith("shoal.")}
    if stale and latest.id > 1:
        previous = table.snapshot(latest.id - 1).properties or {}
        properties |= {k: v for k, v in previous.items() if k.startswith("shoal.sequences.")}
    data["properties"] = properties
    path.write_text(json.dumps(data))
    return shoal.open_table(table.path)  # snapshots are cached: read the rewritten one


def apply(table: shoal.Table, model: Model, op: tuple[Any, ...], step: int) -> shoal.Table:
    """Run one operation on the table and the model; the table to go on with."""
    kind = op[0]
    if kind == "upsert":
        _, dt, ids = op
        values = [f"u{step}-{i}" for i in ids]
        table.upsert(pa.table({"dt": [dt] * len(ids), "id": ids, "v": values}, schema=SCHEMA))
        model.update({(dt, i): v for i, v in zip(ids, values, strict=True)})
    elif kind == "delete":
        _, dt, ids = op
        table.delete(pa.table({"dt": [dt] * len(ids), "id": pa.array(ids, pa.int64())}))
        for i in ids:
            model.pop((dt, i), None)
    elif kind == "full":
        table.compact("full")
    elif kind == "overwrite":
        _, dt, ids = op
        values = [f"o{step}-{i}" for i in ids]
        table.overwrite(
            pa.table({"dt": [dt] * len(ids), "id": ids, "v": values}, schema=SCHEMA),
            partition={"dt": dt},
        )
        for key in [k for k in model if k[0] == dt]:
            del model[key]
        model.update({(dt, i): v for i, v in zip(ids, values, strict=True)})
    elif kind == "drop":
        table.drop_partitions([{"dt": op[1]}])
        for key in [k for k in model if k[0] == op[1]]:
            del model[key]
    elif kind == "expire":
        table.expire_snapshots(retain_min=1, retain_max=op[1])
    elif kind == "rollback":
        ids = [s.id for s in table.snapshots()]
        if len(ids) > 1:
            target = ids[op[1] % len(ids)]
            table.rollback_to(snapshot_id=target)
            model.clear()
            model.update(rows(table))  # the model of the snapshot rolled back to
    elif kind == "foreign":
        _, i, stale = op
        table.upsert(pa.table({"dt": ["b"], "id": [i], "v": [f"f{step}"]}, schema=SCHEMA))
        model[("b", i)] = f"f{step}"
        table = foreign_rewrite(table, stale)
    return table


_ids = st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True)
_partition = st.sampled_from(["a", "b", "c"])
_operation = st.one_of(
    st.tuples(st.just("upsert"), _partition, _ids),
    st.tuples(st.just("upsert"), _partition, _ids),
    st.tuples(st.just("delete"), _partition, _ids),
    st.tuples(st.just("full")),
    st.tuples(st.just("overwrite"), _partition, _ids),
    st.tuples(st.just("drop"), _partition),
    st.tuples(st.just("expire"), st.integers(1, 3)),
    st.tuples(st.just("rollback"), st.integers(0, 5)),
    st.tuples(st.just("foreign"), st.integers(0, 9), st.booleans()),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(operations=st.lists(_operation, min_size=1, max_size=10), automatic=st.booleans())
def test_the_record_equals_a_scan_and_no_row_is_lost(
    operations: list[tuple[Any, ...]], automatic: bool
) -> None:
    options = {}
    if automatic:  # universal compaction after writes, into the middle levels too
        options = {"write-only": "false", "num-sorted-run.compaction-trigger": "3"}
    model: Model = {}
    with tempfile.TemporaryDirectory() as root:
        table = make(root, options)
        for step, op in enumerate(operations):
            table = apply(table, model, op, step)
            latest = table.latest_snapshot()
            if latest is None:
                continue
            record = BS.recorded(latest)
            truth = scanned(table, latest)
            for partition, buckets in record.items():
                assert buckets == truth.get(partition, {}), (op, partition)
            assert rows(table) == model


def test_a_write_reads_no_manifest_of_a_partition_the_record_knows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no manifest merging in the commits measured: only the sequencing could read one
    table = make(tmp_path, {"manifest.merge-min-count": "1000"})
    batch = pa.table({"dt": ["a"] * 3, "id": [1, 2, 3], "v": ["x"] * 3}, schema=SCHEMA)
    table.upsert(batch)
    table.upsert(batch)  # the first commit on the partition learns it
    table = shoal.open_table(table.path)  # nothing cached

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the write read a manifest")

    monkeypatch.setattr(ManifestStore, "read_manifest", refuse)
    for i in range(3):
        table.upsert(pa.table({"dt": ["a"], "id": [2], "v": [f"y{i}"]}, schema=SCHEMA))
    monkeypatch.undo()
    assert rows(table) == {("a", 1): "x", ("a", 2): "y2", ("a", 3): "x"}
    latest = table.latest_snapshot()
    assert latest is not None
    assert BS.recorded(latest) == scanned(table, latest)


def test_a_concurrent_write_is_sequenced_again(tmp_path: Path) -> None:
    """Two writers opened on the same snapshot: the second commit finds the first's
    sequence numbers in the record and numbers its rows again, above them."""
    table = make(tmp_path, {})
    table.upsert(pa.table({"dt": ["a"], "id": [1], "v": ["first"]}, schema=SCHEMA))
    other = shoal.open_table(table.path)
    table.upsert(pa.table({"dt": ["a"], "id": [1], "v": ["second"]}, schema=SCHEMA))
    other.upsert(pa.table({"dt": ["a"], "id": [1], "v": ["third"]}, schema=SCHEMA))
    assert rows(shoal.open_table(table.path)) == {("a", 1): "third"}
