"""The metadata decoders on damaged bytes: a correct decode or CorruptMetadataError.

The seeds are the files of real tables written by shoal (snapshots, schemas, tags,
manifest lists and manifests, compressed and not). Hypothesis damages them (bit flips,
cut-offs, inserted, deleted and replaced bytes, wrong JSON values, bytes at random) and
feeds them to the public decode functions. Whatever comes back must be a value that
writes and reads back to itself, with names that stay inside the table; whatever is
raised must be CorruptMetadataError naming the file. KeyError, ValueError, TypeError,
IndexError, struct.error, UnicodeDecodeError, OverflowError, RecursionError,
MemoryError or a hang (pytest-timeout) fail the test.

``binary_row.deserialize`` has no file to name: its documented error is ValueError.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal.errors import CorruptMetadataError
from shoal.format import binary_row
from shoal.format import manifest as M
from shoal.format import types as T
from shoal.format.avro.strings import StringFinder
from shoal.format.data_file import is_file_name
from shoal.format.jsonfmt import LONG_MAX, LONG_MIN
from shoal.format.schema import TableSchema
from shoal.format.snapshot import COMMIT_KINDS, Snapshot
from shoal.format.tag import decode_tag, encode_tag
from tests.conftest import ALL_TYPES, EVENTS_SCHEMA, all_types_rows, events

PATH = "/warehouse/db.db/t/metadata-file"
EXAMPLES = 300
SLOW_EXAMPLES = 2000


# --- seeds: the files of real tables ----------------------------------------------------------
def _write_tables(root: Path) -> list[Path]:
    catalog = shoal.Catalog(str(root))
    keyed = catalog.create_table(
        "db.keyed",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        primary_keys=["dt", "id"],
        options={"bucket": "2", "manifest.compression": "none"},
        comment="keyed events",
    )
    keyed.upsert(events(range(6), "2026-11-01"))
    keyed.upsert(events(range(3, 9), ["2026-11-01"] * 3 + ["2026-11-02"] * 3))
    keyed.create_tag("plain")
    keyed.delete(events([4], "2026-11-01"))
    keyed.compact(strategy="full")
    keyed.create_tag("kept", time_retained=timedelta(days=3, microseconds=5))
    typed = catalog.create_table(
        "db.typed",
        ALL_TYPES,
        partition_keys=["b"],
        options={"metadata.stats-mode": "full"},
    )
    typed.append(all_types_rows(12))
    typed.create_tag("typed", time_retained="1 h")
    appended = catalog.create_table("db.appended", EVENTS_SCHEMA)
    appended.append(events(range(4)))
    appended.overwrite(events(range(2)))
    return [Path(t.path) for t in (keyed, typed, appended)]


@dataclass(frozen=True, repr=False)
class Seeds:
    snapshots: list[bytes]
    schemas: list[bytes]
    tags: list[bytes]
    manifests: list[bytes]
    lists: list[bytes]
    finder: StringFinder  # of the file names the manifests hold, and others
    list_reader: M.ListNameReader  # has read every list

    def __repr__(self) -> str:  # failing examples show the damaged bytes, not every seed
        return "Seeds(...)"


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Seeds:
    files: dict[str, list[bytes]] = {k: [] for k in ("snapshot", "schema", "tag", "list", "man")}
    for table in _write_tables(tmp_path_factory.mktemp("fuzz-seeds")):
        files["snapshot"] += [p.read_bytes() for p in (table / "snapshot").glob("snapshot-*")]
        files["schema"] += [p.read_bytes() for p in (table / "schema").glob("schema-*")]
        files["tag"] += [p.read_bytes() for p in (table / "tag").glob("tag-*")]
        for path in (table / "manifest").iterdir():
            kind = "list" if path.name.startswith("manifest-list-") else "man"
            files[kind].append(path.read_bytes())
    assert all(files.values()), {k: len(v) for k, v in files.items()}
    named = {n for data in files["man"] for n in M.manifest_file_names(data)}
    finder = StringFinder([*named, "data-0-0.parquet", "x"])
    reader = M.ListNameReader()
    for data in files["list"]:
        reader.names(data)
    return Seeds(
        files["snapshot"],
        files["schema"],
        files["tag"],
        files["man"],
        files["list"],
        finder,
        reader,
    )


# --- damage ------------------------------------------------------------------------------------
def _apply(data: bytearray, op: str, at: int, blob: bytes, bit: int) -> None:
    at = min(at, len(data))
    if op == "flip" and at < len(data):
        data[at] ^= 1 << bit
    elif op == "set" and at < len(data):
        data[at] = blob[0]
    elif op == "cut":
        del data[at:]
    elif op == "insert":
        data[at:at] = blob
    elif op == "delete":
        del data[at : at + len(blob)]
    elif op == "replace":
        data[at : at + len(blob)] = blob


_OPS = st.sampled_from(["flip", "flip", "set", "cut", "insert", "delete", "replace"])


@st.composite
def damaged(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed with one to four byte-level mutations."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        _apply(
            data,
            draw(_OPS),
            draw(st.integers(0, max(len(data) - 1, 0))),
            draw(st.binary(min_size=1, max_size=24)),
            draw(st.integers(0, 7)),
        )
    return bytes(data)


@st.composite
def flipped(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed with one to three bits flipped: same length, so the damage reaches the
    values (a size, a count, a name, a union branch) rather than the framing."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 3))):
        data[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
    return bytes(data)


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["", "..", "../x", "a/b", "APPEND", "STRING", "INT NOT NULL"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into nested JSON objects and arrays."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


@st.composite
def json_damaged(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed with members replaced by other JSON values, removed, or added."""
    document = json.loads(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(document)))
        if not path:
            continue
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "replace", "remove", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(_JSON_VALUES)
        elif action == "remove":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8))] = draw(_JSON_VALUES)
    return json.dumps(document).encode()


def any_damage(seeds: list[bytes], *, is_json: bool) -> st.SearchStrategy[bytes]:
    options = [damaged(seeds), flipped(seeds), st.binary(max_size=512)]
    options.append(json_damaged(seeds) if is_json else flipped(seeds))
    return st.one_of(*options)


# --- what a correct decode is ------------------------------------------------------------------
def _is_long(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and LONG_MIN <= value <= LONG_MAX


def check_snapshot(snapshot: Snapshot) -> None:
    for name in (
        "id",
        "schema_id",
        "time_millis",
        "total_record_count",
        "delta_record_count",
        "commit_identifier",
        "version",
    ):
        assert _is_long(getattr(snapshot, name)), name
    assert 1 <= snapshot.version <= 3
    assert snapshot.commit_kind in COMMIT_KINDS
    assert is_file_name(snapshot.base_manifest_list)
    assert is_file_name(snapshot.delta_manifest_list)
    assert isinstance(snapshot.commit_user, str)
    assert snapshot.properties is None or all(
        isinstance(k, str) and isinstance(v, str) for k, v in snapshot.properties.items()
    )
    again = Snapshot.from_json(snapshot.to_json(), PATH)
    assert again == snapshot
    assert again.properties == snapshot.properties


def check_schema(schema: TableSchema) -> None:
    assert TableSchema.from_json(schema.to_json(), PATH) == schema
    schema.arrow_schema()  # every type has an Arrow counterpart
    assert len(set(schema.field_names)) == len(schema.fields)
    for key in (*schema.partition_keys, *schema.primary_keys):
        assert key in schema.field_names
    schema.partition_types()


def check_tag(decoded: tuple[Any, Snapshot]) -> None:
    tag, snapshot = decoded
    check_snapshot(snapshot)
    assert tag.snapshot_id == snapshot.id
    assert tag.create_time is None or isinstance(tag.create_time, datetime)
    retained = tag.time_retained
    assert retained is None or (isinstance(retained, timedelta) and retained >= timedelta(0))
    if retained is not None and tag.create_time is not None:
        again, _ = decode_tag("t", encode_tag(snapshot, tag.create_time, retained), PATH)
        assert again.create_time == tag.create_time
        assert math.isclose(again.time_retained.total_seconds(), retained.total_seconds())


def check_entries(entries: list[M.ManifestEntry]) -> None:
    for entry in entries:
        assert entry.kind in (M.KIND_ADD, M.KIND_DELETE)
        assert is_file_name(entry.file.file_name)
        assert all(is_file_name(x) for x in entry.file.extra_files)
        for value in (entry.bucket, entry.total_buckets, entry.file.file_size, entry.file.level):
            assert _is_long(value)
    for codec in ("zstd", "none"):
        assert M.decode_manifest(M.encode_manifest(entries, codec), PATH) == entries


def check_metas(metas: list[M.ManifestFileMeta]) -> None:
    for meta in metas:
        assert is_file_name(meta.file_name)
        assert _is_long(meta.file_size)
    assert M.decode_manifest_list(M.encode_manifest_list(metas), PATH) == metas


def check_names(names: list[str]) -> None:
    assert all(is_file_name(n) for n in names)


@dataclass(frozen=True)
class Decoder:
    seeds: Callable[[Seeds], list[bytes]]
    decode: Callable[[bytes, Seeds], Any]
    check: Callable[[Any], None]
    is_json: bool = False


DECODERS: dict[str, Decoder] = {
    "snapshot": Decoder(
        lambda s: s.snapshots, lambda b, _: Snapshot.from_json(b, PATH), check_snapshot, True
    ),
    "schema": Decoder(
        lambda s: s.schemas, lambda b, _: TableSchema.from_json(b, PATH), check_schema, True
    ),
    "tag": Decoder(lambda s: s.tags, lambda b, _: decode_tag("t", b, PATH), check_tag, True),
    "manifest": Decoder(
        lambda s: s.manifests, lambda b, _: M.decode_manifest(b, PATH), check_entries
    ),
    "manifest-list": Decoder(
        lambda s: s.lists, lambda b, _: M.decode_manifest_list(b, PATH), check_metas
    ),
    "manifest-names": Decoder(
        lambda s: s.manifests, lambda b, _: M.manifest_file_names(b, PATH), check_names
    ),
    "manifest-list-names": Decoder(
        lambda s: s.lists, lambda b, _: M.manifest_list_file_names(b, PATH), check_names
    ),
    "manifest-names-among": Decoder(
        lambda s: s.manifests,
        lambda b, s: sorted(M.manifest_names_among(b, s.finder, PATH)),
        check_names,
    ),
    "manifest-list-names-reused": Decoder(
        lambda s: s.lists, lambda b, s: s.list_reader.names(b, PATH), check_names
    ),
}


def fuzz(name: str, seeds: Seeds, data: st.DataObject) -> None:
    decoder = DECODERS[name]
    sample = decoder.seeds(seeds)
    damage = data.draw(any_damage(sample, is_json=decoder.is_json), label="bytes")
    try:
        value = decoder.decode(damage, seeds)
    except CorruptMetadataError as exc:
        error = exc
    else:
        decoder.check(value)
        return
    assert error.path == PATH
    assert PATH in str(error)


def test_seeds_decode(seeds: Seeds) -> None:
    """The undamaged files decode and pass the checks, so the checks can tell."""
    for decoder in DECODERS.values():
        for seed in decoder.seeds(seeds):
            decoder.check(decoder.decode(seed, seeds))


_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", list(DECODERS))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_HEALTH)
@given(data=st.data())
def test_damaged_metadata_decodes_or_is_corrupt(
    name: str, seeds: Seeds, data: st.DataObject
) -> None:
    fuzz(name, seeds, data)


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", list(DECODERS))
@settings(max_examples=SLOW_EXAMPLES, deadline=None, suppress_health_check=_HEALTH)
@given(data=st.data())
def test_damaged_metadata_decodes_or_is_corrupt_long(
    name: str, seeds: Seeds, data: st.DataObject
) -> None:
    fuzz(name, seeds, data)


# --- binary rows -------------------------------------------------------------------------------
ROW_TYPES = [
    T.parse_type(t)
    for t in (
        "INT",
        "BIGINT",
        "STRING",
        "BYTES",
        "DATE",
        "TIME(3)",
        "TIMESTAMP(3)",
        "TIMESTAMP(6)",
        "TIMESTAMP(6) WITH LOCAL TIME ZONE",
        "DECIMAL(10, 2)",
        "DECIMAL(30, 4)",
        "DOUBLE",
        "BOOLEAN",
    )
]


def _row_seed(types: list[T.DataType]) -> bytes:
    values = {
        "INT": 7,
        "BIGINT": -(2**40),
        "VARCHAR": "a string longer than seven bytes",
        "VARBINARY": b"\x00\x01",
        "DATE": datetime(2026, 11, 1).date(),
        "TIME": datetime(2026, 11, 1, 13, 5).time(),
        "TIMESTAMP": datetime(2026, 11, 1, 13, 5, 7, 123000),
        "TIMESTAMP_LTZ": None,
        "DECIMAL": 12345,
        "DOUBLE": 0.25,
        "BOOLEAN": True,
    }
    return binary_row.serialize(
        [values[t.root] for t in types if isinstance(t, T.AtomicType)], types
    )


@pytest.mark.timeout(120)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_HEALTH)
@given(
    types=st.lists(st.sampled_from(ROW_TYPES), min_size=1, max_size=6),
    data=st.data(),
)
def test_damaged_binary_rows_decode_or_raise_value_error(
    types: list[T.DataType], data: st.DataObject
) -> None:
    seed = _row_seed(types)
    damage = data.draw(st.one_of(damaged([seed]), st.binary(max_size=96)), label="row")
    try:
        values = binary_row.deserialize(damage, types)
    except ValueError:
        return
    assert len(values) == len(types)


def test_binary_row_seed_reads_back() -> None:
    assert len(binary_row.deserialize(_row_seed(ROW_TYPES), ROW_TYPES)) == len(ROW_TYPES)


# --- bounded work on hostile lengths -----------------------------------------------------------
def _varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "length", [2**62, 2**31, -1, -(2**40)], ids=["huge", "2GiB", "minus-one", "negative"]
)
def test_lengths_beyond_the_file_allocate_nothing(seeds: Seeds, length: int) -> None:
    """Lengths and counts in the header and the blocks of a manifest, set far beyond
    the file: refused at once, without allocating or looping over them."""
    good = seeds.manifests[0]
    header_count = good.index(b"avro.") - 1  # the length of the first metadata key
    cases = [
        good[:4] + _varint(length) + good[5:],  # the metadata map's entry count
        good[:header_count] + _varint(length) + good[header_count + 1 :],  # a key's length
        good + _varint(length) + _varint(16),  # a block claiming that many records
        good + _varint(1) + _varint(length),  # a block claiming that many bytes
        good[:4] + b"\xff" * 100_000,  # a number that never ends
    ]
    for case in cases:
        with pytest.raises(CorruptMetadataError):
            M.decode_manifest(case, PATH)


def test_a_block_cannot_point_back_into_the_file(seeds: Seeds) -> None:
    """A negative block size that would send the reader back to the previous sync
    marker (and round again, for ever) is refused."""
    good = seeds.manifests[0]
    sync = good[-16:]
    looping = good + _varint(0) + _varint(-(2 + 16)) + sync
    with pytest.raises(CorruptMetadataError):
        M.decode_manifest(looping, PATH)


def test_nesting_too_deep_for_json_is_corrupt() -> None:
    for decode in (
        lambda b: Snapshot.from_json(b, PATH),
        lambda b: TableSchema.from_json(b, PATH),
        lambda b: decode_tag("t", b, PATH),
    ):
        with pytest.raises(CorruptMetadataError):
            decode(b"[" * 100_000)
        with pytest.raises(CorruptMetadataError):
            decode(b'{"fields": ' + b"[" * 100_000)


def test_a_schema_typed_too_deep_is_corrupt() -> None:
    """Types nested deeper than Python's stack (valid JSON, absurd schema)."""
    nested: Any = "INT"
    for _ in range(400):
        nested = {"type": "ARRAY", "element": nested}
    text = json.dumps({"version": 3, "id": 0, "fields": [{"id": 0, "name": "a", "type": nested}]})
    try:
        schema = TableSchema.from_json(text, PATH)
    except CorruptMetadataError:
        return
    check_schema(schema)
