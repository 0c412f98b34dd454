"""collect, merge_map, nested_update, DECIMAL sums and products and the sketch unions
against a plain Python model of Paimon's fold: a key's rows (inserts and retractions,
through ``rowkind.field``) written in one batch read back as the model folds them, one
row after another, with Java's hash tables simulated bucket by bucket."""

from __future__ import annotations

import struct
import uuid
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import datasketches as ds
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal.format import roaring

ROW = pa.struct([pa.field("k", pa.int32()), pa.field("v", pa.string())])
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), False),
        ("c", pa.list_(pa.int64())),
        ("cd", pa.list_(pa.string())),
        ("ci", pa.list_(pa.int32())),
        ("m", pa.map_(pa.string(), pa.int64())),
        ("nk", pa.list_(ROW)),
        ("nn", pa.list_(ROW)),
        ("ds", pa.decimal128(30, 2)),
        ("dp", pa.decimal128(12, 3)),
        ("r", pa.binary()),
        ("kind", pa.string()),
    ]
)
OPTIONS = {
    "bucket": "1",
    "merge-engine": "aggregation",
    "rowkind.field": "kind",
    "fields.kind.aggregate-function": "last_value",
    "fields.c.aggregate-function": "collect",
    "fields.cd.aggregate-function": "collect",
    "fields.cd.distinct": "true",
    "fields.ci.aggregate-function": "collect",
    "fields.ci.distinct": "true",
    "fields.ci.ignore-retract": "true",
    "fields.m.aggregate-function": "merge_map",
    "fields.nk.aggregate-function": "nested_update",
    "fields.nk.nested-key": "k",
    "fields.nn.aggregate-function": "nested_update",
    "fields.ds.aggregate-function": "sum",
    "fields.dp.aggregate-function": "product",
    "fields.dp.ignore-retract": "true",
    "fields.r.aggregate-function": "rbm32",
    "fields.r.ignore-retract": "true",
}

# --- Java's hash codes and HashMap, simulated ---------------------------------------------


def _murmur(data: bytes) -> int:
    def mix(h: int, k: int) -> int:
        k = (k * 0xCC9E2D51) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * 0x1B873593) & 0xFFFFFFFF
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        return (h * 5 + 0xE6546B64) & 0xFFFFFFFF

    h, aligned = 42, len(data) - len(data) % 4
    for (word,) in struct.iter_unpack("<I", data[:aligned]):
        h = mix(h, word)
    for byte in data[aligned:]:
        h = mix(h, (byte - 256 if byte > 127 else byte) & 0xFFFFFFFF)
    h ^= len(data)
    for shift, factor in ((16, 0x85EBCA6B), (13, 0xC2B2AE35)):
        h ^= h >> shift
        h = (h * factor) & 0xFFFFFFFF
    return h ^ (h >> 16)


def java_hash(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, str):
        return _murmur(value.encode())
    if isinstance(value, tuple):  # a BinaryRow of one INT field
        (k,) = value
        row = bytearray(16)
        if k is None:
            row[1] |= 1  # the null bit of field 0 (after the 8 header bits)
        else:
            row[8:12] = struct.pack("<i", k)
        return _murmur(bytes(row))
    return value & 0xFFFFFFFF


class JavaHashMap:
    """java.util.HashMap's put and iteration (no tree bins: the model's keys are few)."""

    def __init__(self) -> None:
        self.buckets: list[list[list[Any]]] = [[] for _ in range(16)]
        self.size = 0

    def _index(self, key: Any, capacity: int) -> int:
        h = java_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    def put(self, key: Any, value: Any) -> None:
        bucket = self.buckets[self._index(key, len(self.buckets))]
        for entry in bucket:
            if entry[0] == key:
                entry[1] = value
                return
        bucket.append([key, value])
        self.size += 1
        if len(bucket) >= 9 and len(self.buckets) < 64:
            self._resize()
        if self.size > len(self.buckets) * 3 // 4:
            self._resize()

    def _resize(self) -> None:
        old, capacity = self.buckets, 2 * len(self.buckets)
        self.buckets = [[] for _ in range(capacity)]
        for bucket in old:
            for entry in bucket:
                self.buckets[self._index(entry[0], capacity)].append(entry)

    def items(self) -> list[tuple[Any, Any]]:
        return [(k, v) for bucket in self.buckets for k, v in bucket]


# --- Paimon's functions, one step at a time -----------------------------------------------


def collect(acc: Any, value: Any, *, distinct: bool, ordered: bool = False) -> Any:
    if acc is None and value is None:
        return None
    if not distinct:
        return acc if value is None else value if acc is None else [*acc, *value]
    if ordered:
        out = list(acc or [])
        for v in value or []:
            if v not in out:
                out.append(v)
        return out
    table = JavaHashMap()
    for v in [*(acc or []), *(value or [])]:
        table.put(v, None)
    return [k for k, _ in table.items()]


def collect_retract(acc: Any, value: Any) -> Any:
    if acc is None:
        return None
    assert value is not None
    rest, out = list(value), []
    for v in acc:
        if v in rest:
            rest.remove(v)
        else:
            out.append(v)
    return out


def merge_map(acc: Any, value: Any) -> Any:
    if acc is None or value is None:
        return acc if value is None else value
    table = JavaHashMap()
    for k, v in [*acc, *value]:
        table.put(k, v)
    return table.items()


def merge_map_retract(acc: Any, value: Any) -> Any:
    if acc is None:
        return None
    gone = {k for k, _ in value}
    table = JavaHashMap()
    for k, v in acc:
        if k not in gone:
            table.put(k, v)
    return table.items()


def nested(acc: Any, value: Any, *, keyed: bool) -> Any:
    if acc is None or value is None:
        return acc if value is None else value
    rows = [r for r in [*acc, *value] if r is not None]
    if not keyed:
        return rows
    table = JavaHashMap()
    for r in rows:
        table.put((r["k"],), r)
    return [r for _, r in table.items()]


def nested_retract(acc: Any, value: Any, *, keyed: bool) -> Any:
    if acc is None or value is None:
        return acc
    gone = [r for r in value if r is not None]
    rows = [r for r in acc if r is not None]
    if not keyed:
        return [r for r in rows if r not in gone]
    table = JavaHashMap()
    for r in rows:
        table.put((r["k"],), r)
    keys = {(r["k"],) for r in gone}
    return [r for k, r in table.items() if k not in keys]


def dec_sum(acc: Any, value: Any, *, back: bool) -> Any:
    if value is None:
        return acc
    if acc is None:
        return -value if back else value
    out = acc - value if back else acc + value
    return None if abs(out) >= Decimal(10) ** 28 else out


def dec_product(acc: Any, value: Any) -> Any:
    if acc is None or value is None:
        return acc if value is None else value
    out = (acc * value).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP)
    return None if abs(out) >= Decimal(10) ** 9 else out


def rbm_union(acc: Any, value: Any) -> Any:
    if acc is None or value is None:
        return acc if value is None else value
    left, _ = roaring.decode32(acc)
    right, _ = roaring.decode32(value)
    return roaring.encode32(np.union1d(left, right))


def fold(rows: list[dict[str, Any]]) -> dict[str, Any]:
    if len(rows) == 1:
        return rows[0]
    out: dict[str, Any] = dict.fromkeys(SCHEMA.names)
    out["id"] = rows[0]["id"]
    for row in rows:
        back = row["kind"] in ("-U", "-D")
        out["kind"] = row["kind"]
        if back:
            out["c"] = collect_retract(out["c"], row["c"])
            out["cd"] = collect_retract(out["cd"], row["cd"])
            out["m"] = merge_map_retract(out["m"], row["m"])
            out["nk"] = nested_retract(out["nk"], row["nk"], keyed=True)
            out["nn"] = nested_retract(out["nn"], row["nn"], keyed=False)
        else:
            out["c"] = collect(out["c"], row["c"], distinct=False)
            out["cd"] = collect(out["cd"], row["cd"], distinct=True)
            out["ci"] = collect(out["ci"], row["ci"], distinct=True)
            out["m"] = merge_map(out["m"], row["m"])
            out["nk"] = nested(out["nk"], row["nk"], keyed=True)
            out["nn"] = nested(out["nn"], row["nn"], keyed=False)
            out["dp"] = dec_product(out["dp"], row["dp"])
            out["r"] = rbm_union(out["r"], row["r"])
        out["ds"] = dec_sum(out["ds"], row["ds"], back=back)
    out["kind"] = "+I"
    return out


# --- the test -----------------------------------------------------------------------------

_words = st.sampled_from(["a", "b", "cc", "ddd", "eeee", "fffff", "é", "zz"])
_row = st.one_of(st.none(), st.fixed_dictionaries({"k": st.integers(0, 40), "v": _words}))


def _rows_strategy() -> st.SearchStrategy[list[dict[str, Any]]]:
    bitmap = st.lists(st.integers(0, 70000), max_size=30).map(
        lambda v: roaring.encode32(np.array(sorted(set(v)), dtype=np.uint32))
    )
    row = st.fixed_dictionaries(
        {
            "id": st.integers(0, 3),
            "kind": st.sampled_from(["+I", "+I", "+U", "-D"]),
            "c": st.lists(st.integers(-3, 40), max_size=4),
            "cd": st.lists(_words, max_size=4),
            "ci": st.one_of(st.none(), st.lists(st.integers(-40, 100), max_size=6)),
            "m": st.lists(st.tuples(_words, st.integers(0, 9)), max_size=3).map(
                lambda kv: list(dict(kv).items())
            ),
            "nk": st.one_of(st.none(), st.lists(_row, max_size=3)),
            "nn": st.one_of(st.none(), st.lists(_row, max_size=3)),
            "ds": st.one_of(
                st.none(),
                st.integers(-(10**27), 10**27).map(lambda v: Decimal(v).scaleb(-2)),
            ),
            "dp": st.one_of(
                st.none(), st.sampled_from(["0.5", "-3", "1.25", "0.333", "999"]).map(Decimal)
            ),
            "r": st.one_of(st.none(), bitmap),
        }
    )
    return st.lists(row, min_size=1, max_size=12)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rows=_rows_strategy())
def test_aggregate_functions_read_as_the_model(tmp_path: Path, rows: list[dict[str, Any]]) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table(
        f"db.t{uuid.uuid4().hex}", SCHEMA, primary_keys=["id"], options=OPTIONS
    )
    table.upsert(pa.Table.from_pylist(rows, schema=SCHEMA))
    by_key: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_key.setdefault(row["id"], []).append(row)
    expected = {k: fold(v) for k, v in by_key.items()}
    expected = {k: v for k, v in expected.items() if v["kind"] in ("+I", "+U")}
    got = {r["id"]: r for r in table.to_arrow().to_pylist()}
    assert set(got) == set(expected)
    for key, row in expected.items():
        for name in SCHEMA.names:
            if name != "kind":
                assert got[key][name] == row[name], (key, name)


def test_sketch_unions_estimate_the_union(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), False), ("h", pa.binary()), ("t", pa.binary())])
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.s",
        schema,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.h.aggregate-function": "hll_sketch",
            "fields.t.aggregate-function": "theta_sketch",
        },
    )
    rng = np.random.default_rng(7)
    parts = [rng.choice(3000, size=400, replace=False) for _ in range(5)]
    rows = []
    for values in parts:
        hll, theta = ds.hll_sketch(12), ds.update_theta_sketch()
        for v in values.tolist():
            hll.update(v)
            theta.update(v)
        rows.append({"id": 1, "h": hll.serialize_compact(), "t": theta.compact().serialize()})
    rows.append({"id": 1, "h": None, "t": None})
    table.upsert(pa.Table.from_pylist(rows, schema=schema))
    (merged,) = table.to_arrow().to_pylist()
    distinct = len(set(np.concatenate(parts).tolist()))
    assert ds.compact_theta_sketch.deserialize(merged["t"]).get_estimate() == distinct
    estimate = ds.hll_sketch.deserialize(merged["h"]).get_estimate()
    assert abs(estimate - distinct) < 0.05 * distinct
    assert ds.hll_sketch.deserialize(merged["h"]).tgt_type == ds.tgt_hll_type.HLL_4


def test_hll_sketches_of_two_precisions_in_one_key_are_refused(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), False), ("h", pa.binary())])
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.h",
        schema,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.h.aggregate-function": "hll_sketch",
        },
    )
    sketches = []
    for lg_k in (10, 12):
        sketch = ds.hll_sketch(lg_k)
        for v in range(100):
            sketch.update(v * lg_k)
        sketches.append({"id": 1, "h": sketch.serialize_compact()})
    table.upsert(pa.Table.from_pylist(sketches[:1], schema=schema))
    table.upsert(pa.Table.from_pylist(sketches[1:], schema=schema))
    with pytest.raises(shoal.InvalidInputDataError, match="lgConfigK 10 and 12"):
        table.to_arrow()


def test_decimal_retraction_without_exact_quotient_is_refused(tmp_path: Path) -> None:
    schema = pa.schema(
        [pa.field("id", pa.int64(), False), ("p", pa.decimal128(10, 2)), ("kind", pa.string())]
    )
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.p",
        schema,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "rowkind.field": "kind",
            "fields.p.aggregate-function": "product",
        },
    )
    rows = [
        {"id": 1, "p": Decimal("2.00"), "kind": "+I"},
        {"id": 1, "p": Decimal("3.00"), "kind": "-U"},
    ]
    with pytest.raises(shoal.InvalidInputDataError, match="exact decimal quotient"):
        table.upsert(pa.Table.from_pylist(rows, schema=schema))
    assert table.latest_snapshot() is None


def test_compact_decimal_sum_beyond_the_precision_is_refused(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), False), ("s", pa.decimal128(4, 1))])
    table = shoal.Catalog(str(tmp_path)).create_table(
        "db.s",
        schema,
        primary_keys=["id"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.s.aggregate-function": "sum",
        },
    )
    rows = [{"id": 1, "s": Decimal("999.9")}, {"id": 1, "s": Decimal("0.1")}]
    with pytest.raises(shoal.InvalidInputDataError, match="precision"):
        table.upsert(pa.Table.from_pylist(rows, schema=schema))
