"""Event-time compaction against a dict model.

Random upserts (event times in any order, so some data arrives late), deletes (key-only
or whole rows), event-time compactions at random thresholds, full and universal
compactions run on two tables, one with ``compaction.event-time.exact-split``. After
every step the real-time view of each equals the model; after an event-time compaction
every key whose current row is old enough is in the read-optimized view; and every
earlier snapshot still reads what it read when it was the latest.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, event, settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

import shoal

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ms")), ("v", pa.int64())])
BASE = datetime(2026, 1, 1)
Row = tuple[datetime, int]

keys = st.integers(0, 15)
minutes = st.integers(0, 120)
# thresholds reach a little beyond the event times on both sides
thresholds = st.integers(-10, 130)


def at(minute: int) -> datetime:
    return BASE + timedelta(minutes=minute)


def _view(data: pa.Table) -> dict[int, Row]:
    rows = data.to_pylist()
    out = {r["id"]: (r["ts"], r["v"]) for r in rows}
    assert len(out) == len(rows), "a key appears twice"
    return out


class Variant:
    """One table and the views each of its snapshots had when it was the latest."""

    def __init__(self, root: str, exact: bool) -> None:
        options = {
            "bucket": "2",
            "compaction.event-time.field": "ts",
            "compaction.event-time.exact-split": str(exact).lower(),
            "write-only": "true",
            "target-file-size": "2 kb",
        }
        self.exact = exact
        self.table = shoal.Catalog(root).create_table(
            "db.t", SCHEMA, primary_keys=["id"], options=options
        )
        self.history: dict[int, dict[int, Row]] = {}

    def record(self, model: dict[int, Row]) -> None:
        latest = self.table.latest_snapshot()
        if latest is not None:
            self.history.setdefault(latest.id, dict(model))

    def files(self) -> dict[str, dict[str, Any]]:
        return {Path(f["file_path"]).name: f for f in self.table.system_table("files").to_pylist()}


class EventTimeModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._dir = tempfile.TemporaryDirectory()
        self.variants = [
            Variant(str(Path(self._dir.name) / "merge"), exact=False),
            Variant(str(Path(self._dir.name) / "exact"), exact=True),
        ]
        self.model: dict[int, Row] = {}
        self.counter = 0

    def _record(self) -> None:
        for variant in self.variants:
            variant.record(self.model)

    def _check_history(self, variant: Variant, ids: list[int]) -> None:
        for snapshot_id in ids:
            got = _view(variant.table.to_arrow(snapshot_id=snapshot_id))
            assert got == variant.history[snapshot_id], f"snapshot {snapshot_id}"

    def _compacted(self, variant: Variant, latest: int | None) -> None:
        """After a compaction: the snapshot it followed reads as before (teardown
        checks all of them)."""
        self._record()
        if latest is not None:
            self._check_history(variant, [latest])

    @initialize(starts=st.lists(minutes, min_size=2, max_size=3))
    def layered(self, starts: list[int]) -> None:
        """A few writes of different times, so that thresholds split the files."""
        for start in starts:
            self.upsert(start, [(k, k % 5) for k in range(0, 16, 1 + start % 3)], [])

    @rule(
        start=minutes,
        items=st.lists(st.tuples(keys, st.integers(0, 10)), min_size=1, max_size=20),
        late=st.lists(st.tuples(keys, minutes), max_size=1),
    )
    def upsert(self, start: int, items: list[tuple[int, int]], late: list[tuple[int, int]]) -> None:
        """Rows of about one time (``start`` plus a few minutes), and maybe a few late
        rows of any time, old ones included."""
        ids, times, values = [], [], []
        for key, minute in [(k, start + m) for k, m in items] + late:
            self.counter += 1
            ids.append(key)
            times.append(at(minute))
            values.append(self.counter)
            self.model[key] = (at(minute), self.counter)  # the last row of a key wins
        data = pa.table({"id": ids, "ts": times, "v": values}, schema=SCHEMA)
        for variant in self.variants:
            variant.table.upsert(data)
        self._record()

    @rule(items=st.lists(keys, min_size=1, max_size=6), whole_row=st.booleans(), minute=minutes)
    def delete(self, items: list[int], whole_row: bool, minute: int) -> None:
        if whole_row:  # a delete carrying an event time of its own
            data = pa.table(
                {"id": items, "ts": [at(minute)] * len(items), "v": [0] * len(items)},
                schema=SCHEMA,
            )
        else:
            data = pa.table({"id": pa.array(items, pa.int64())})
        for variant in self.variants:
            variant.table.delete(data)
        for key in items:
            self.model.pop(key, None)
        self._record()

    @rule(minute=thresholds)
    def compact_event_time(self, minute: int) -> None:
        threshold = at(minute)
        for variant in self.variants:
            latest = variant.table.latest_snapshot()
            before = variant.files()
            result = variant.table.compact("event-time", event_time_threshold=threshold)
            after = variant.files()
            new = {n: f for n, f in after.items() if n not in before}
            assert set(before) - set(after) or result.snapshot is None
            if result.snapshot is None:
                assert after == before
            elif set(before) & set(after):
                event("files left below by an event-time compaction")
            # every key whose current row is old enough is on top now
            ro = _view(variant.table.to_arrow(read_optimized=True))
            for key, row in self.model.items():
                if row[0] < threshold or (row[0] == threshold and not variant.exact):
                    assert ro.get(key) == row, f"key {key} missing from the top level"
            for f in new.values():
                got = pq.read_table(f["file_path"], columns=["ts"])["ts"].to_pylist()
                if f["level"] == 0:
                    event("exact split sent rows back to level 0")
                    # only exact-split sends rows back, and only those at or after it
                    assert variant.exact
                    assert all(t is not None and t >= threshold for t in got)
                elif variant.exact:
                    assert all(t is None or t < threshold for t in got)
                if f["deleteRowCount"] and len(after) > len(new):
                    event("a delete kept on top over files left below")
            self._compacted(variant, latest.id if latest is not None else None)

    @rule()
    def compact_full(self) -> None:
        for variant in self.variants:
            latest = variant.table.latest_snapshot()
            variant.table.compact("full")
            assert _view(variant.table.to_arrow(read_optimized=True)) == self.model
            self._compacted(variant, latest.id if latest is not None else None)

    @rule()
    def compact_universal(self) -> None:
        for variant in self.variants:
            latest = variant.table.latest_snapshot()
            variant.table.compact("universal")
            self._compacted(variant, latest.id if latest is not None else None)

    @invariant()
    def real_time_view_matches(self) -> None:
        for variant in self.variants:
            assert _view(variant.table.to_arrow()) == self.model

    def teardown(self) -> None:
        try:
            # earlier snapshots spread over the history, the first and the last among
            # them (each compaction checked the snapshot it followed already)
            for variant in self.variants:
                ids = sorted(variant.history)
                spread = ids[:: max(1, len(ids) // 5)]
                self._check_history(variant, sorted({*spread, *ids[-1:]}))
        finally:
            self._dir.cleanup()


EventTimeModel.TestCase.settings = settings(
    max_examples=30,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_event_time_model = EventTimeModel.TestCase
