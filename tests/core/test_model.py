"""A state machine against an in-memory model: after any sequence of appends, overwrites
and partition drops, every snapshot reads back exactly the rows the model holds for it."""

from __future__ import annotations

import tempfile

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import shoal
from tests.conftest import EVENTS_SCHEMA, events

DAYS = ["2026-11-01", "2026-11-02", "2026-11-03"]
rows_strategy = st.lists(st.sampled_from(DAYS), min_size=1, max_size=12)


class TableModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._dir = tempfile.TemporaryDirectory()
        options = {"manifest.merge-min-count": "3", "manifest.target-file-size": "2 kb",
                   "manifest.full-compaction-threshold-size": "3 kb"}
        self.table = shoal.Catalog(self._dir.name).create_table(
            "db.t", EVENTS_SCHEMA, partition_keys=["dt"], options=options
        )
        self.rows: list[tuple[str, int]] = []  # (dt, id) of the latest snapshot
        self.history: dict[int, list[tuple[str, int]]] = {}
        self.next_id = 0

    def _new_rows(self, days: list[str]) -> list[tuple[str, int]]:
        start = self.next_id
        self.next_id += len(days)
        return [(day, start + i) for i, day in enumerate(days)]

    def _commit(self, snapshot: shoal.Snapshot) -> None:
        self.history[snapshot.id] = sorted(self.rows)
        assert snapshot.total_record_count == len(self.rows)

    @rule(days=rows_strategy)
    def append(self, days: list[str]) -> None:
        new = self._new_rows(days)
        snapshot = self.table.append(events([i for _, i in new], dt=[d for d, _ in new]))
        self.rows += new
        self._commit(snapshot)

    @rule(day=st.sampled_from(DAYS), size=st.integers(0, 5))
    def overwrite_partition(self, day: str, size: int) -> None:
        new = self._new_rows([day] * size)
        snapshot = self.table.overwrite(
            events([i for _, i in new], dt=day), partition={"dt": day}
        )
        self.rows = [r for r in self.rows if r[0] != day] + new
        self._commit(snapshot)

    @rule(days=rows_strategy)
    def overwrite_all(self, days: list[str]) -> None:
        new = self._new_rows(days)
        snapshot = self.table.overwrite(events([i for _, i in new], dt=[d for d, _ in new]))
        self.rows = new
        self._commit(snapshot)

    @rule(days=st.sets(st.sampled_from(DAYS), min_size=1))
    def drop(self, days: set[str]) -> None:
        snapshot = self.table.drop_partitions([{"dt": d} for d in sorted(days)])
        self.rows = [r for r in self.rows if r[0] not in days]
        self._commit(snapshot)

    @invariant()
    def latest_matches(self) -> None:
        table = shoal.open_table(self.table.path)
        got = table.to_arrow(columns=["dt", "id"])
        assert sorted(zip(got["dt"].to_pylist(), got["id"].to_pylist(), strict=True)) == sorted(
            self.rows
        )

    @precondition(lambda self: bool(self.history))
    @rule(data=st.data())
    def time_travel_matches(self, data: st.DataObject) -> None:
        snapshot_id = data.draw(st.sampled_from(sorted(self.history)))
        got = shoal.open_table(self.table.path).to_arrow(
            snapshot_id=snapshot_id, columns=["dt", "id"]
        )
        pairs = sorted(zip(got["dt"].to_pylist(), got["id"].to_pylist(), strict=True))
        assert pairs == self.history[snapshot_id]

    def teardown(self) -> None:
        self._dir.cleanup()


TableModel.TestCase.settings = settings(
    max_examples=25, stateful_step_count=15, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_table_model = TableModel.TestCase
