"""Compaction with deletion vectors against merge-on-read: the same writes and
compactions on a table with ``deletion-vectors.enabled`` and on one without read the
same rows, every step, whatever the merge settings; and two compactions of one bucket
that race cannot both commit vectors.

The table without vectors merges every bucket's runs by key on read (checked against
Java Paimon in ``tests/interop``); the table with vectors reads its files above level 0
unmerged, less their marked rows, so each step checks the lookups and vectors that
compaction produced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal.compaction.compact import CompactTask, plan, run_task
from shoal.compaction.strategies import ForceUpLevel0, universal_for
from shoal.compaction.vectors import BucketVectors
from shoal.core import deletion_vectors as DVS
from shoal.core.plan import live_entries
from shoal.errors import CommitConflictError
from shoal.format.snapshot import CommitKind
from shoal.primary_key.runs import CompactUnit
from shoal.write.commit import CommitRequest, FileStoreCommit

SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), False),
        pa.field("id", pa.int64(), False),
        ("seq", pa.int64()),
        ("v", pa.string()),
    ]
)

Step = tuple[str, str, list[int], int]  # (action, partition, ids, sequence value)

STEPS = st.lists(
    st.tuples(
        st.sampled_from(["upsert", "upsert", "upsert", "delete", "quiet", "full", "universal"]),
        st.sampled_from(["a", "b"]),
        st.lists(st.integers(0, 15), min_size=1, max_size=6),
        st.integers(0, 5),
    ),
    min_size=1,
    max_size=12,
)
SETTINGS = {
    "deadline": None,
    "max_examples": 30,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
}


def rows(dt: str, ids: list[int], seq: int, tag: str) -> pa.Table:
    return pa.table(
        {
            "dt": [dt] * len(ids),
            "id": ids,
            "seq": [seq] * len(ids),
            "v": [f"{tag}{i}" for i in ids],
        },
        schema=SCHEMA,
    )


def ordered(table: pa.Table) -> list[dict[str, Any]]:
    return table.sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()


def run(
    tmp: Path, steps: list[Step], options: dict[str, str], reference: dict[str, str]
) -> None:
    """Apply ``steps`` to a table with deletion vectors and to a reference table with
    the same ``options`` plus ``reference``, and compare their reads."""
    catalog = shoal.Catalog(str(tmp))
    base = {"bucket": "2", "num-sorted-run.compaction-trigger": "3", **options}
    tables = [
        catalog.create_table(
            f"db.{name}",
            SCHEMA,
            partition_keys=["dt"],
            primary_keys=["dt", "id"],
            options={**base, **extra},
        )
        for name, extra in (("merge", reference), ("dv", {"deletion-vectors.enabled": "true"}))
    ]
    for n, (action, dt, ids, seq) in enumerate(steps):
        for table in tables:
            if action in ("upsert", "quiet"):
                data = rows(dt, ids, seq, f"s{n}-")
                if action == "quiet":
                    with table.update_schema() as update:
                        update.set_option("write-only", "true")
                    table.upsert(data)
                    with table.update_schema() as update:
                        update.remove_option("write-only")
                else:
                    table.upsert(data)
            elif action == "delete":
                # A delete with the lowest sequence value: a delete with a higher one,
                # once a compaction dropped it, no longer hides a later row of a lower
                # value (in Paimon too), while merge-on-read of the uncompacted
                # files still would.
                table.delete(rows(dt, ids, 0, ""))
            else:
                table.compact(action)
        merge, dv = (shoal.open_table(t.path) for t in tables)
        if action == "quiet":
            continue  # the table with vectors does not show level-0 rows yet
        if _has_level0(dv):
            continue  # a write-only write waits for its bucket's next compaction
        assert ordered(dv.to_arrow()) == ordered(merge.to_arrow()), (n, action)
    for table in tables:
        table.compact("full")
    merge, dv = (shoal.open_table(t.path) for t in tables)
    assert ordered(dv.to_arrow()) == ordered(merge.to_arrow())
    latest = dv.latest_snapshot()
    assert latest is None or not DVS.deletion_files(dv._store, latest)


def _has_level0(table: shoal.Table) -> bool:
    latest = table.latest_snapshot()
    return latest is not None and any(e.file.level == 0 for e in live_entries(table._store, latest))


@pytest.mark.parametrize(
    "options",
    [{}, {"sequence.field": "seq"}, {"ignore-delete": "true"}],
    ids=["plain", "sequence-field", "ignore-delete"],
)
@settings(**SETTINGS)
@given(steps=STEPS)
def test_vectors_read_as_merge_on_read(
    options: dict[str, str], steps: list[Step], tmp_path_factory: pytest.TempPathFactory
) -> None:
    run(tmp_path_factory.mktemp("dv"), steps, options, {})


# The engines that combine a key's rows merge a key's lone retraction into a row when
# the table looks keys up (Paimon's lookup merge) and keep it as a retraction when it
# does not, so their reference is the table that looks keys up without vectors: the
# lookup changelog producer.
ENGINES = {
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.seq.aggregate-function": "sum",
        "fields.v.aggregate-function": "max",
        "fields.v.ignore-retract": "true",
    },
    "aggregation-remove": {
        "merge-engine": "aggregation",
        "aggregation.remove-record-on-delete": "true",
        "fields.seq.aggregate-function": "max",
    },
    "partial-update": {
        "merge-engine": "partial-update",
        "partial-update.remove-record-on-delete": "true",
    },
    "partial-update-groups": {
        "merge-engine": "partial-update",
        "fields.seq.sequence-group": "v",
    },
}


@pytest.mark.parametrize("engine", list(ENGINES))
@settings(**{**SETTINGS, "max_examples": 20})
@given(steps=STEPS)
def test_vectors_with_combining_engines_read_as_lookup_tables(
    engine: str, steps: list[Step], tmp_path_factory: pytest.TempPathFactory
) -> None:
    reference = {"changelog-producer": "lookup"}
    run(tmp_path_factory.mktemp("dv"), steps, ENGINES[engine], reference)


def _racing_compactions(tmp_path: Path) -> tuple[shoal.Table, FileStoreCommit, Any, Any, Any]:
    """A table whose one bucket has a top-level file X (keys 0..9) and a level-0 file
    (key 3, written write-only), and two compactions planned on that snapshot: A lifts
    the level-0 file and marks key 3's row in X; B rewrites X alone."""
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true"},
    )
    table.upsert(rows("a", list(range(10)), 0, "old"))
    with table.update_schema() as update:
        update.set_option("write-only", "true")
    table.upsert(rows("a", [3], 0, "new"))
    store = table._store
    latest = store.snapshots.latest()
    [lift] = plan(store, latest, ForceUpLevel0(universal_for(store.options)))
    [top] = [e.file for e in live_entries(store, latest) if e.file.level > 0]
    assert lift.vectors is not None
    assert lift.vectors.upper_files == (top,)
    alone = CompactTask(
        lift.partition, 0, CompactUnit(store.max_level, (top,)), True, BucketVectors((), ())
    )
    key = (lift.partition, 0)
    return table, FileStoreCommit(store), key, run_task(store, lift), run_task(store, alone)


def _commit(committer: FileStoreCommit, key: Any, message: Any, base: frozenset[str]) -> None:
    committer.commit(CommitRequest([message], kind=CommitKind.COMPACT, vector_base={key: base}))


def test_a_compaction_cannot_mark_rows_of_a_file_another_rewrote(tmp_path: Path) -> None:
    table, committer, key, lift, alone = _racing_compactions(tmp_path)
    assert lift.new_index_files
    assert not alone.new_index_files
    _commit(committer, key, alone, frozenset())
    with pytest.raises(CommitConflictError, match="marked deleted"):
        _commit(committer, key, lift, frozenset())
    table.compact("universal")  # planned again: the level-0 file is lifted now
    assert ordered(shoal.open_table(table.path).to_arrow()) == ordered(
        pa.concat_tables([rows("a", [i], 0, "old" if i != 3 else "new") for i in range(10)])
    )


def test_a_compaction_cannot_replace_vectors_another_changed(tmp_path: Path) -> None:
    table, committer, key, lift, alone = _racing_compactions(tmp_path)
    _commit(committer, key, lift, frozenset())
    with pytest.raises(CommitConflictError, match="deletion vectors"):
        _commit(committer, key, alone, frozenset())
    expected = [
        {"dt": "a", "id": i, "seq": 0, "v": f"{'new' if i == 3 else 'old'}{i}"} for i in range(10)
    ]
    assert ordered(shoal.open_table(table.path).to_arrow()) == expected


def test_vectors_switched_off_refuse_compaction(tmp_path: Path) -> None:
    """Merging files without the vectors that mark their rows would bring deleted rows
    back: with deletion vectors switched off (deletion-vectors.modifiable), a table that
    still holds some is not compacted."""
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.t",
        SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "1", "deletion-vectors.enabled": "true"},
    )
    table.upsert(rows("a", list(range(10)), 0, "old"))
    table.delete(rows("a", [3], 0, ""))
    assert DVS.deletion_files(table._store, table.latest_snapshot())
    with table.update_schema() as update:
        update.set_option("deletion-vectors.modifiable", "true")
        update.set_option("deletion-vectors.enabled", "false")
    before = table.latest_snapshot()
    with pytest.raises(shoal.UnsupportedFeatureError, match="deletion vectors"):
        table.compact("full")
    assert table.latest_snapshot() == before
