"""Each key's winning row, as the merge picks it, against a model: for deduplicate the
row of the key's highest sequence number, for first-row its lowest; a tie (only a
faulty writer repeats a sequence number within a key) goes to the earlier row. Keys
of every integer width and span (the packed integer sort and its fallbacks), strings,
composite keys; rows in sorted runs (newest or oldest first) and in any order. And the
stable order of an integer key column, by a packed sort or numpy's, against numpy's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal.core.kv import DEDUPLICATE, FIRST_ROW, KeyValueLayout, MergeSettings
from shoal.primary_key.merge import winner_positions
from shoal.primary_key.ordering import stable_order

INT64 = (-(1 << 63), (1 << 63) - 1)
KEY_TYPES: dict[str, tuple[pa.DataType, st.SearchStrategy[Any]]] = {
    "int8": (pa.int8(), st.integers(-128, 127)),
    "int32": (pa.int32(), st.integers(-(1 << 31), (1 << 31) - 1)),
    "int64-narrow": (pa.int64(), st.integers(-5, 40)),
    "int64-wide": (pa.int64(), st.sampled_from([INT64[0], INT64[1], 0, -1, 1 << 60])),
    "int64-any": (pa.int64(), st.integers(*INT64)),
    "string": (pa.string(), st.text(alphabet="abc", max_size=3)),
}


def _layout(tmp: Path, key_types: list[pa.DataType]) -> KeyValueLayout:
    fields = [pa.field(f"k{i}", t, False) for i, t in enumerate(key_types)]
    schema = pa.schema([*fields, ("v", pa.int64())])
    table = shoal.Catalog(str(tmp)).create_table(
        f"db.t{len(list(tmp.iterdir()))}", schema, primary_keys=[f.name for f in fields]
    )
    return table._store.layout


def _rows(layout: KeyValueLayout, keys: list[tuple[Any, ...]], seqs: list[int]) -> pa.Table:
    file_schema = layout.file_schema
    columns: list[pa.Array] = [
        pa.array([k[i] for k in keys], file_schema.field(name).type)
        for i, name in enumerate(layout.key_columns)
    ]
    n = len(keys)
    columns += [pa.array(seqs, pa.int64()), pa.array(np.zeros(n, np.int8))]
    columns += [
        pa.array([k[i] for k in keys], file_schema.field(name).type)
        for i, name in enumerate(layout.key_names)
    ]
    columns.append(pa.array(range(n), pa.int64()))
    return pa.Table.from_arrays(columns, schema=file_schema)


def _model(keys: list[tuple[Any, ...]], seqs: list[int], engine: str) -> list[int]:
    best: dict[tuple[Any, ...], int] = {}
    for i, (key, seq) in enumerate(zip(keys, seqs, strict=True)):
        j = best.get(key)
        if j is None or (seq > seqs[j] if engine == DEDUPLICATE else seq < seqs[j]):
            best[key] = i
    return [best[k] for k in sorted(best)]


def _runs(draw: Any, key: st.SearchStrategy[Any], width: int) -> tuple[list[Any], list[int]]:
    """Rows as the merge meets them: sorted runs of unique keys, newest (or oldest)
    run first, each run's sequence numbers above (or below) the next's; or rows in any
    order with any sequence numbers."""
    composite = st.tuples(*[key] * width)
    shape = draw(st.sampled_from(["newest-first", "oldest-first", "any"]))
    if shape == "any":
        keys = draw(st.lists(composite, max_size=40))
        seqs = draw(st.lists(st.integers(0, 30), min_size=len(keys), max_size=len(keys)))
        return keys, seqs
    runs = draw(st.lists(st.lists(composite, max_size=15, unique=True), max_size=5))
    keys, seqs = [], []
    next_seq = 0
    for run in reversed(runs) if shape == "newest-first" else runs:
        run_seqs = list(range(next_seq, next_seq + len(run)))
        next_seq += len(run) + draw(st.integers(0, 3))
        draw(st.randoms()).shuffle(run_seqs)
        keys.append(sorted(run))
        seqs.append(run_seqs)
    if shape == "newest-first":
        keys, seqs = keys[::-1], seqs[::-1]
    return [k for run in keys for k in run], [s for run in seqs for s in run]


@pytest.mark.parametrize("engine", [DEDUPLICATE, FIRST_ROW])
@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.parametrize("key_type", list(KEY_TYPES))
def test_winners_match_the_model(
    tmp_path_factory: pytest.TempPathFactory, engine: str, width: int, key_type: str
) -> None:
    arrow_type, key = KEY_TYPES[key_type]
    layout = _layout(tmp_path_factory.mktemp("w"), [arrow_type] * width)
    merge = MergeSettings(engine=engine)

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        keys, seqs = _runs(data.draw, key, width)
        rows = _rows(layout, keys, seqs)
        positions = winner_positions(rows, layout, merge)
        assert positions is not None
        assert positions.tolist() == _model(keys, seqs, engine)

    run()


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["int8", "int16", "int32", "int64", "uint64", "bool"]).flatmap(
        lambda name: st.tuples(
            st.just(name),
            st.lists(
                st.booleans()
                if name == "bool"
                else st.integers(np.iinfo(name).min, np.iinfo(name).max)
                | st.integers(-3, 3).filter(lambda v, n=name: v >= np.iinfo(n).min),
                max_size=60,
            ),
        )
    )
)
def test_stable_order_is_numpys_stable_argsort(case: tuple[str, list[Any]]) -> None:
    name, values = case
    key = np.array(values, dtype=name)
    before = key.copy()
    assert stable_order(key).tolist() == np.argsort(key, kind="stable").tolist()
    assert key.tolist() == before.tolist()
