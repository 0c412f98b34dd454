"""Primary-key tables against a dict model: after any sequence of upserts, deletes and
compactions, the real-time view equals the model; after a full compaction the
read-optimized view does too, and every earlier snapshot still reads as it did."""

from __future__ import annotations

import tempfile

import hypothesis.strategies as st
import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import shoal

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
Key = tuple[str, int]
keys = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 15))


def _rows(items: list[tuple[Key, int]]) -> pa.Table:
    return pa.table(
        {"dt": [k[0] for k, _ in items], "id": [k[1] for k, _ in items],
         "v": [v for _, v in items]},
        schema=SCHEMA,
    )


def _as_dict(table: pa.Table) -> dict[Key, int]:
    rows = table.to_pylist()
    out = {(r["dt"], r["id"]): r["v"] for r in rows}
    assert len(out) == len(rows), "a key appears twice"
    return out


class PrimaryKeyModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._dir = tempfile.TemporaryDirectory()
        self.table = shoal.Catalog(self._dir.name).create_table(
            "db.pk", SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
            options={"bucket": "2", "num-sorted-run.compaction-trigger": "3",
                     "target-file-size": "2 kb"},
        )
        self.model: dict[Key, int] = {}
        self.history: dict[int, dict[Key, int]] = {}
        self.counter = 0

    def _record(self) -> None:
        for snapshot in self.table.snapshots():
            self.history.setdefault(snapshot.id, dict(self.model))

    @rule(items=st.lists(keys, min_size=1, max_size=20))
    def upsert(self, items: list[Key]) -> None:
        batch = []
        for key in items:
            self.counter += 1
            batch.append((key, self.counter))
            self.model[key] = self.counter  # the last row of a key in one write wins
        self.table.upsert(_rows(batch))
        self._record()

    @rule(items=st.lists(keys, min_size=1, max_size=8))
    def delete(self, items: list[Key]) -> None:
        self.table.delete(pa.table({"dt": [k[0] for k in items], "id": [k[1] for k in items]}))
        for key in items:
            self.model.pop(key, None)
        self._record()

    @rule()
    def compact_universal(self) -> None:
        self.table.compact("universal")
        self._record()

    @rule()
    def compact_full(self) -> None:
        self.table.compact("full")
        self._record()
        assert _as_dict(self.table.to_arrow(read_optimized=True)) == self.model

    @invariant()
    def real_time_view_matches(self) -> None:
        assert _as_dict(shoal.open_table(self.table.path).to_arrow()) == self.model

    @precondition(lambda self: bool(self.history))
    @rule(data=st.data())
    def old_snapshots_read_as_before(self, data: st.DataObject) -> None:
        snapshot_id = data.draw(st.sampled_from(sorted(self.history)))
        got = _as_dict(self.table.to_arrow(snapshot_id=snapshot_id))
        assert got == self.history[snapshot_id]

    def teardown(self) -> None:
        self._dir.cleanup()


PrimaryKeyModel.TestCase.settings = settings(
    max_examples=30, stateful_step_count=20, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_primary_key_model = PrimaryKeyModel.TestCase
