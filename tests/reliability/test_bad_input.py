"""Bad input never ends in a traceback from deep inside, nor in a changed table.

Every case here runs against a real table that shoal wrote, then damaged on disk (or
given bad arguments), and checks two things: the call raises a :class:`ShoalError`
subclass whose message names the file or value and says what to do, and the files of
the table are exactly what they were (names and sizes). Where a maintenance call may
legitimately go on past damage (snapshot expiration cancels only the deletions that
depend on an unreadable file), it must delete no more than it would on the healthy
table.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest

import shoal
from shoal.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    InvalidOptionError,
    InvalidTagNameError,
    SchemaMismatchError,
    ShoalError,
)
from tests.conftest import EVENTS_SCHEMA, events

DAY1, DAY2 = "2026-11-01", "2026-11-02"
FUTURE = datetime.now() + timedelta(days=365)
Listing = dict[str, int]


# --- the tables ----------------------------------------------------------------------------------
def _build(root: Path, compression: str) -> Path:
    """Three snapshots of a partitioned append table; tag v1 on snapshot 1, tag v2 (with
    a retention) on snapshot 2. Every file is aged two days, so that orphan cleanup with
    its default age guard looks at all of them."""
    table = shoal.Catalog(str(root)).create_table(
        "db.events",
        EVENTS_SCHEMA,
        partition_keys=["dt"],
        options={"manifest.compression": compression},
    )
    table.append(events(range(3), DAY1))
    table.append(events(range(3, 6), DAY2))
    table.create_tag("v1", 1)
    table.create_tag("v2", 2, time_retained="30 d")
    table.append(events(range(6, 9), DAY1))
    assert table.latest_snapshot().id == 3
    _age(Path(table.path))
    return Path(table.path)


def _age(root: Path) -> None:
    old = time.time() - 2 * 86400
    for directory, _, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(directory, name), (old, old))


def listing(root: Path) -> Listing:
    """Every file under ``root`` (relative path) with its size."""
    out: Listing = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            out[os.path.relpath(path, root)] = os.path.getsize(path)
    return out


@dataclass(frozen=True)
class Source:
    """A built table, and what the healthy table answers."""

    path: Path
    files: Listing
    observed: dict[str, Any]
    expired: frozenset[str]  # the files snapshot expiration deletes from the healthy table

    def target(self, name: str) -> str:
        """The relative path of one of the table's metadata files, by role."""
        snapshot = json.loads((self.path / "snapshot" / "snapshot-3").read_text())
        if name == "snapshot-latest":
            return "snapshot/snapshot-3"
        if name == "snapshot-old":
            return "snapshot/snapshot-1"
        if name == "base-list":
            return f"manifest/{snapshot['baseManifestList']}"
        if name == "delta-list":
            return f"manifest/{snapshot['deltaManifestList']}"
        if name == "manifest":
            return f"manifest/{_manifest_of(self.path, snapshot['deltaManifestList'])}"
        if name == "schema":
            return "schema/schema-0"
        if name == "tag":
            return "tag/tag-v2"
        raise AssertionError(name)


def _manifest_of(root: Path, list_name: str) -> str:
    with open(root / "manifest" / list_name, "rb") as f:
        (record,) = list(fastavro.reader(f))
    return str(record["_FILE_NAME"])


def _source(root: Path, compression: str) -> Source:
    path = _build(root, compression)
    observed = {name: observe(name, op(path)) for name, op in READS.items()}
    scratch = root / "expire-check"
    shutil.copytree(path, scratch)
    before = listing(scratch)
    expire(scratch)
    expired = frozenset(set(before) - set(listing(scratch)))
    assert expired, "expiration of the healthy table deletes something"
    shutil.rmtree(scratch)
    return Source(path, listing(path), observed, expired)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Source]:
    """The table with zstd manifests (the default) and with uncompressed ones, where
    damage reaches the records themselves."""
    return {c: _source(tmp_path_factory.mktemp(f"source-{c}"), c) for c in ("zstd", "none")}


def copy_of(source: Source, target: Path) -> Path:
    shutil.copytree(source.path, target)  # copy2 keeps the aged times
    return target


@contextmanager
def scratch(source: Source, target: Path) -> Iterator[Path]:
    """A copy of the table, removed afterwards (thousands are made)."""
    try:
        yield copy_of(source, target)
    finally:
        shutil.rmtree(target, ignore_errors=True)


# --- operations ---------------------------------------------------------------------------------
def _open(path: Path) -> shoal.Table:
    return shoal.open_table(str(path))


READS: dict[str, Callable[[Path], Any]] = {
    "latest": lambda p: _open(p).latest_snapshot(),
    "read": lambda p: _open(p).to_arrow(),
    "travel-1": lambda p: _open(p).to_arrow(snapshot_id=1),
    "travel-3": lambda p: _open(p).to_arrow(snapshot_id=3),
    "read-tag": lambda p: _open(p).to_arrow(tag="v2"),
    "snapshots": lambda p: _open(p).snapshots(),
    "tags": lambda p: _open(p).list_tags(),
    "plan": lambda p: _open(p).scan().plan(),
    "system": lambda p: [_open(p).system_table(n) for n in SYSTEM_TABLES],
}
SYSTEM_TABLES = ("snapshots", "files", "manifests", "partitions", "tags", "schemas", "options")


def expire(path: Path) -> object:
    return _open(path).expire_snapshots(retain_min=1, retain_max=1, older_than=FUTURE)


def remove_orphans(path: Path) -> object:
    return _open(path).remove_orphan_files()


def observe(name: str, result: Any) -> Any:
    """A comparable view of what a read returned."""
    if name == "latest":
        return result.id
    if name in ("read", "travel-1", "travel-3", "read-tag"):
        return sorted(result.to_pylist(), key=lambda r: r["id"])
    if name == "snapshots":
        return [s.id for s in result]
    if name == "tags":
        return [(t.name, t.snapshot_id) for t in result]
    if name == "plan":
        return sorted(os.path.basename(p) for split in result for p in split.file_paths)
    if name == "system":  # the snapshots table's damaged rows are checked apart
        return [_readable_rows(t) for t in result]
    raise AssertionError(name)


def _readable_rows(table: pa.Table) -> int:
    if "status" not in table.column_names:
        return table.num_rows
    return table.column("status").to_pylist().count("ok")


# --- checks -------------------------------------------------------------------------------------
def assert_clear(error: ShoalError, names: list[str]) -> None:
    """The message names one of ``names`` (a file or a value) and, for damaged metadata,
    says what to do."""
    message = str(error)
    assert any(n in message for n in names), f"{message!r} names none of {names}"
    if isinstance(error, CorruptMetadataError):
        assert os.path.basename(error.path) in message
        assert "restore" in message or "newer Paimon" in message, message


def attempt(call: Callable[[], object]) -> ShoalError | None:
    """The ShoalError ``call`` raises, or None; any other exception fails the test."""
    try:
        call()
    except ShoalError as exc:
        return exc
    return None


def run_read(name: str, path: Path) -> tuple[Any, ShoalError | None]:
    """(observation, None) or (None, the ShoalError); any other exception fails the test."""
    try:
        return observe(name, READS[name](path)), None
    except ShoalError as exc:
        return None, exc


# --- damaged metadata ---------------------------------------------------------------------------
TARGETS = [
    "snapshot-latest",
    "snapshot-old",
    "base-list",
    "delta-list",
    "manifest",
    "schema",
    "tag",
]
JSON_TARGETS = {"snapshot-latest", "snapshot-old", "schema", "tag"}

# Operations that cannot succeed without the damaged file, by target.
NEEDS: dict[str, set[str]] = {
    "snapshot-latest": {"latest", "read", "travel-3", "plan", "system", "orphans"},
    "snapshot-old": {"travel-1", "orphans"},
    "base-list": {"read", "travel-3", "plan", "system", "orphans"},
    "delta-list": {"read", "travel-3", "plan", "system", "orphans"},
    "manifest": {"read", "travel-3", "plan", "system", "orphans"},
    "schema": {*READS, "orphans", "expire"},
    "tag": {"tags", "read-tag", "system", "orphans"},
}
# Operations that must succeed all the same: one damaged snapshot file hides no other
# snapshot, so the listing to pick a rollback target from stays readable.
SURVIVES: dict[str, set[str]] = {
    "snapshot-latest": {"snapshots"},
    "snapshot-old": {"snapshots", "system"},
}


def _truncate(at: float | int) -> Callable[[bytes], bytes]:
    def cut(data: bytes) -> bytes:
        return data[: int(len(data) * at)] if isinstance(at, float) else data[:at]

    return cut


def _flip(position: int) -> Callable[[bytes], bytes]:
    def flip(data: bytes) -> bytes:
        i = position % len(data)
        return data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1 :]

    return flip


# Damage that leaves no readable file. Flips sit where the format has structure (magic,
# header, closing brace or sync marker), so they break the file on every run.
UNREADABLE: dict[str, Callable[[bytes], bytes]] = {
    "empty": lambda _: b"",
    "cut-3": _truncate(3),
    "cut-half": _truncate(0.5),
    "cut-last": lambda d: d[:-1],
    "flip-first": _flip(0),
    "flip-last": _flip(-1),
    "zeros": lambda d: bytes(len(d)),
    "random": lambda d: os.urandom(len(d)),
}
JSON_SHAPES: dict[str, bytes] = {
    "array": b"[1, 2]",
    "null": b"null",
    "string": b'"snapshot"',
    "empty-object": b"{ }",
    "version-only": b'{"version": 3}',
    "deep": b"[" * 100_000,
    "huge-number": b"9" * 5000,
}
# Valid JSON of the right shape with one field of the wrong type.
WRONG_TYPES: dict[str, list[dict[str, Any]]] = {
    "snapshot": [
        {"id": "3"},
        {"schemaId": 0.5},
        {"baseManifestList": 7},
        {"deltaManifestList": ""},
        {"deltaManifestList": "../../../escape"},
        {"properties": ["a"]},
        {"properties": {"a": 1}},
        {"totalRecordCount": True},
        {"timeMillis": 1e300},
        {"id": 10**30},
        {"commitKind": "MERGE"},
        {"uuid": 5},
    ],
    "schema": [
        {"id": "0"},
        {"id": float("inf")},
        {"fields": {"dt": "STRING"}},
        {"fields": []},
        {"partitionKeys": "dt"},
        {"primaryKeys": [1]},
        {"options": ["bucket"]},
        {"timeMillis": "yesterday"},
        {"comment": 5},
        {"highestFieldId": None, "fields": [{"id": -1, "name": "dt", "type": "STRING"}]},
        {"fields": [{"id": 0, "name": "dt", "type": "DECIMAL(99, 2)"}]},
        {"fields": [{"id": 0, "name": "dt", "type": "TIMESTAMP(99)"}]},
        {
            "fields": [
                {"id": 0, "name": "dt", "type": "STRING"},
                {"id": 1, "name": "dt", "type": "INT"},
            ]
        },
    ],
    "tag": [
        {"id": "2"},
        {"tagTimeRetained": "soon"},
        {"tagTimeRetained": -5},
        {"tagTimeRetained": float("nan")},
        {"tagCreateTime": [2026, 13, 1, 0, 0]},
        {"tagCreateTime": "2026-11-01"},
        {"tagCreateTime": [2026, 1, 1, 0, 0, 0, -1]},
    ],
}


def _kind(target: str) -> str:
    return "snapshot" if target.startswith("snapshot") else target


def _edit_json(changes: dict[str, Any]) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        return json.dumps({**json.loads(data), **changes}).encode()

    return edit


DAMAGE: list[Any] = [
    pytest.param(t, d, UNREADABLE[d], id=f"{t}-{d}") for t in TARGETS for d in UNREADABLE
]
DAMAGE += [
    pytest.param(t, s, lambda _, v=v: v, id=f"{t}-{s}")
    for t in sorted(JSON_TARGETS)
    for s, v in JSON_SHAPES.items()
]
DAMAGE += [
    pytest.param(t, "wrong-type", _edit_json(change), id=f"{t}-{'-'.join(change)}-{i}")
    for t in sorted(JSON_TARGETS)
    for i, change in enumerate(WRONG_TYPES[_kind(t)])
]


def _swap(target: str) -> Callable[[Source], bytes]:
    """Valid files of another kind in the place of ``target``."""

    def other(source: Source) -> bytes:
        swaps = {
            "manifest": "delta-list",
            "base-list": "manifest",
            "delta-list": "snapshot-latest",
            "snapshot-latest": "base-list",
            "tag": "schema",
            "schema": "snapshot-old",
        }
        return (source.path / source.target(swaps[target])).read_bytes()

    return other


DAMAGE_BY_CODEC = [
    pytest.param(c, *p.values, id=f"{c}-{p.id}")
    for c in ("zstd", "none")
    for p in DAMAGE
    if c == "zstd" or p.values[0] not in JSON_TARGETS  # JSON does not depend on the codec
]


@pytest.mark.parametrize(("compression", "target", "damage", "change"), DAMAGE_BY_CODEC)
def test_damaged_metadata(
    sources: dict[str, Source],
    tmp_path: Path,
    compression: str,
    target: str,
    *,
    damage: str,
    change: Callable[[bytes], bytes],
) -> None:
    assert damage
    source = sources[compression]
    check_damage(source, tmp_path, target, source.target(target), change, strict=True)


@pytest.mark.parametrize("compression", ["zstd", "none"])
@pytest.mark.parametrize(
    "target", ["manifest", "base-list", "delta-list", "snapshot-latest", "tag", "schema"]
)
def test_valid_file_of_another_kind(
    sources: dict[str, Source], tmp_path: Path, compression: str, target: str
) -> None:
    source = sources[compression]
    other = _swap(target)(source)
    check_damage(source, tmp_path, target, source.target(target), lambda _: other, strict=True)


def check_damage(
    source: Source,
    tmp_path: Path,
    target: str,
    relative: str,
    change: Callable[[bytes], bytes],
    *,
    strict: bool,
) -> None:
    """Every operation on a copy with ``relative`` changed: a ShoalError naming the file
    and no file changed, or (maintenance) no more deleted than from the healthy table.
    With ``strict``, the operations in NEEDS must fail with CorruptMetadataError, and
    those in SURVIVES succeed."""
    failures = []
    for op in [*READS, "expire", "orphans"]:
        with scratch(source, tmp_path / op) as path:
            victim = path / relative
            victim.write_bytes(change(victim.read_bytes()))
            before = listing(path)
            call = {"expire": expire, "orphans": remove_orphans}.get(op) or READS[op]
            try:
                error = attempt(lambda call=call, path=path: call(path))
            except Exception as exc:
                failures.append(f"{op}: {type(exc).__name__}: {exc}")
                continue
            if error is not None:
                if strict and op in SURVIVES.get(target, ()):
                    failures.append(f"{op} failed on the damaged {relative}: {error!r}")
                    continue
                assert_clear(error, [os.path.basename(relative)])
                assert listing(path) == before, f"{op} failed but changed files"
                if strict and op in NEEDS[target]:
                    assert isinstance(error, CorruptMetadataError), f"{op}: {error!r}"
                    assert error.path == str(victim)
                continue
            if strict and op in NEEDS[target]:
                failures.append(f"{op} succeeded without the damaged {relative}")
            after = listing(path)
            deleted = set(before) - set(after)
            changed = {f for f in after if f in before and after[f] != before[f]}
            assert not set(after) - set(before), f"{op} created files"
            assert changed <= {"snapshot/EARLIEST", "snapshot/LATEST"}, f"{op} changed {changed}"
            if op == "orphans":
                assert not deleted, f"orphan cleanup deleted {deleted}"
            elif op == "expire":
                assert deleted <= source.expired, f"expire deleted {deleted - source.expired}"
            else:
                assert not deleted, f"{op} deleted {deleted}"
    assert not failures, "\n".join(failures)


# --- unknown format versions -------------------------------------------------------------------
def _reencode(data: bytes, edit: Callable[[dict[str, Any]], None]) -> bytes:
    """An Avro file with each record changed by ``edit``, same writer schema and codec."""
    reader = fastavro.reader(io.BytesIO(data))
    records = list(reader)
    for record in records:
        edit(record)
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(reader.writer_schema), records, codec=reader.codec)
    return out.getvalue()


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(record: dict[str, Any]) -> None:
        record[key] = value

    return edit


@pytest.mark.parametrize(
    ("target", "change", "version"),
    [
        pytest.param("snapshot-latest", _edit_json({"version": 4}), 4, id="snapshot-4"),
        pytest.param("snapshot-latest", _edit_json({"version": 0}), 0, id="snapshot-0"),
        pytest.param("schema", _edit_json({"version": 4}), 4, id="schema-4"),
        pytest.param("schema", _edit_json({"version": 0}), 0, id="schema-0"),
        pytest.param("tag", _edit_json({"version": 9}), 9, id="tag-9"),
        pytest.param("manifest", lambda d: _reencode(d, _set("_VERSION", 3)), 3, id="manifest-3"),
        pytest.param("delta-list", lambda d: _reencode(d, _set("_VERSION", 1)), 1, id="list-1"),
    ],
)
def test_unknown_format_version(
    sources: dict[str, Source],
    tmp_path: Path,
    target: str,
    change: Callable[[bytes], bytes],
    version: int,
) -> None:
    source = sources["zstd"]
    relative = source.target(target)
    check_damage(source, tmp_path, target, relative, change, strict=True)
    path = copy_of(source, tmp_path / "version")
    (path / relative).write_bytes(change((path / relative).read_bytes()))
    read = READS["read-tag" if target == "tag" else "read"]
    with pytest.raises(CorruptMetadataError, match=f"format version {version} ") as info:
        read(path)
    assert info.value.path == str(path / relative)


def _file_field(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(record: dict[str, Any]) -> None:
        record["_FILE"][key] = value

    return edit


def _stats(value: bytes) -> Callable[[dict[str, Any]], None]:
    def edit(record: dict[str, Any]) -> None:
        record["_FILE"]["_VALUE_STATS"]["_MIN_VALUES"] = value

    return edit


def _partition(change: Callable[[bytes], bytes]) -> Callable[[dict[str, Any]], None]:
    def edit(record: dict[str, Any]) -> None:
        record["_PARTITION"] = change(record["_PARTITION"])

    return edit


# Records of the latest manifest that decode as Avro but cannot be used.
BAD_RECORDS: dict[str, Callable[[dict[str, Any]], None]] = {
    "kind": _set("_KIND", 7),
    "name-parent": _file_field("_FILE_NAME", "../../../outside.parquet"),
    "name-absolute": _file_field("_FILE_NAME", "/etc/passwd"),
    "name-empty": _file_field("_FILE_NAME", ""),
    "extra-file-parent": _file_field("_EXTRA_FILES", ["../index"]),
    "partition-empty": _partition(lambda _: b""),
    "partition-short": _partition(lambda _: b"\x00\x00\x00\x05"),
    "partition-arity": _partition(lambda _: b"\x00\x00\x00\x00" + bytes(8)),
    "partition-not-utf8": _partition(lambda p: p[:-10] + b"\xff" * 10),
    "partition-pointer": _partition(
        lambda p: p[:12] + (10**6 << 32 | 5).to_bytes(8, "little") + p[20:]
    ),
}


@pytest.mark.parametrize("case", BAD_RECORDS, ids=list(BAD_RECORDS))
def test_manifest_records_that_cannot_be_used(
    sources: dict[str, Source], tmp_path: Path, case: str
) -> None:
    """Records that could make a read misplace files, or maintenance delete the wrong
    file, are refused naming the manifest."""
    source = sources["zstd"]
    relative = source.target("manifest")
    change = lambda d: _reencode(d, BAD_RECORDS[case])  # noqa: E731
    strict = not case.startswith("partition")  # orphan cleanup needs only the names
    check_damage(source, tmp_path, "manifest", relative, change, strict=strict)
    path = copy_of(source, tmp_path / "reads")
    (path / relative).write_bytes(change((path / relative).read_bytes()))
    for read in ("read", "plan", "system"):
        with pytest.raises(CorruptMetadataError) as info:
            READS[read](path)
        assert info.value.path == str(path / relative)


def test_column_statistics_that_cannot_be_read_are_unknown(
    sources: dict[str, Source], tmp_path: Path
) -> None:
    """Statistics only prune: when they cannot be read, the file is read, not skipped."""
    source = sources["zstd"]
    relative = source.target("manifest")
    path = copy_of(source, tmp_path / "t")
    (path / relative).write_bytes(_reencode((path / relative).read_bytes(), _stats(b"\x01")))
    table = _open(path)
    rows = table.to_arrow(filter=[("id", ">=", 7)]).to_pylist()
    assert sorted(r["id"] for r in rows) == [7, 8]
    files = table.system_table("files")
    assert files.num_rows == 3


def test_names_in_metadata_never_reach_outside_the_table(
    sources: dict[str, Source], tmp_path: Path
) -> None:
    """A snapshot, manifest list or manifest naming a file outside the table: reads and
    maintenance refuse it, and the file outside stays."""
    source = sources["zstd"]
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep me")
    escape = os.path.relpath(outside, tmp_path / "t" / "manifest")
    snapshot_edit = _edit_json({"deltaManifestList": escape})
    list_edit = _set("_FILE_NAME", escape)
    for relative, change, read in [
        ("snapshot/snapshot-1", snapshot_edit, "travel-1"),
        ("snapshot/snapshot-3", snapshot_edit, "read"),
        (source.target("base-list"), lambda d: _reencode(d, list_edit), "read"),
    ]:
        for op in ("expire", "orphans", "read"):
            path = copy_of(source, tmp_path / "t")
            (path / relative).write_bytes(change((path / relative).read_bytes()))
            before = listing(path)
            call = {"expire": expire, "orphans": remove_orphans, "read": READS[read]}[op]
            error = attempt(lambda call=call, path=path: call(path))
            if error is None:
                assert op == "expire", f"{op} read {relative} naming {escape}"
            else:
                assert isinstance(error, CorruptMetadataError), error
                assert listing(path) == before
            assert outside.read_bytes() == b"keep me"
            shutil.rmtree(path)


# --- foreign files -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Foreign:
    """A file (or folder) that is no part of the table, and whether the table must
    read as if it were not there (False: it may also fail naming it)."""

    path: str
    content: bytes | None  # None: a directory
    ignored: bool = True


FOREIGN = [
    Foreign("snapshot/snapshot-abc", b"x"),
    Foreign("snapshot/snapshot-007", b"x"),
    Foreign("snapshot/snapshot-\u0663", b"x"),  # an Arabic-Indic digit three
    Foreign("snapshot/snapshot-\u00b2", b"x"),  # superscript two, a digit to str.isdigit
    Foreign("snapshot/snapshot--1", b"x"),
    Foreign("snapshot/snapshot-3.tmp", b"x"),
    Foreign("snapshot/.snapshot-4.0f0f.tmp", b"{"),
    Foreign("snapshot/README", b"notes"),
    Foreign("snapshot/snapshot-99", None),
    Foreign("snapshot/snapshot-4", b"not json", ignored=False),
    Foreign("snapshot/snapshot-0", b"not json", ignored=False),
    Foreign("snapshot/snapshot-99999999999999999999999", b"x"),
    Foreign("schema/schema-abc", b"x"),
    Foreign("schema/schema-\u00b2", b"x"),
    Foreign("schema/schema-01", b"x"),
    Foreign("schema/notes.txt", b"x"),
    Foreign("schema/schema-5", None),
    Foreign("manifest/README", b"x"),
    Foreign("manifest/manifest-foreign-0", b"not avro"),
    Foreign("manifest/manifest-list-foreign-0", b"not avro"),
    Foreign("manifest/manifest-dir", None),
    Foreign("tag/README", b"x"),
    Foreign("tag/tag-", b"x"),
    Foreign("tag/tag- ", b"x"),
    Foreign("tag/.tag-v1.crc", b"x"),
    Foreign("tag/tag-dir", None),
    Foreign("tag/tag-zzz", b"not json", ignored=False),
    Foreign("dt=2026-11-01/bucket-0/README", b"x"),
    Foreign("dt=2026-11-01/bucket-0/data-foreign.parquet", b"not parquet"),
    Foreign("dt=2026-11-01/bucket-0/subdir", None),
    Foreign("dt=2026-11-01/bucket-x/data-foreign.parquet", b"x"),
    Foreign("dt=2026-11-01/README", b"x"),
    Foreign("dt=zzz/bucket-0/data-foreign.parquet", b"x"),
    Foreign("README", b"x"),
    Foreign("stuff/README", b"x"),
    Foreign("snapshot/LATEST", b"9" * 5000),
    Foreign("snapshot/EARLIEST", b"\xff\xfe"),
]


def _add(path: Path, foreign: Foreign) -> None:
    target = path / foreign.path
    target.parent.mkdir(parents=True, exist_ok=True)
    if foreign.content is None:
        target.mkdir()
    else:
        target.write_bytes(foreign.content)
    _age(path)


@pytest.mark.parametrize("foreign", FOREIGN, ids=[f.path for f in FOREIGN])
def test_foreign_files(sources: dict[str, Source], tmp_path: Path, foreign: Foreign) -> None:
    """Reads see the table as it is (or, for a file named like a snapshot or a tag, fail
    naming it); maintenance deletes no file of the table."""
    source = sources["zstd"]
    name = os.path.basename(foreign.path)
    with scratch(source, tmp_path / "reads") as path:
        _add(path, foreign)
        before = listing(path)
        for op in READS:
            result, error = run_read(op, path)
            assert listing(path) == before
            if error is None:
                assert result == source.observed[op], f"{op} misread the table beside {name!r}"
            else:
                assert not foreign.ignored, f"{op}: {error!r}"
                assert_clear(error, [name])
        # A file named like a snapshot that does not read is listed as damaged, naming it.
        damaged = _open(path).damaged_snapshots()
        assert not foreign.ignored or not damaged, damaged
        for snapshot_error in damaged.values():
            assert_clear(snapshot_error, [name])
    for op, call in (("expire", expire), ("orphans", remove_orphans)):
        with scratch(source, tmp_path / op) as path:
            _add(path, foreign)
            before = listing(path)
            error = attempt(lambda call=call, path=path: call(path))
            if error is not None:
                assert not foreign.ignored, f"{op}: {error!r}"
                assert_clear(error, [name])
                assert listing(path) == before
                continue
            deleted = set(before) - set(listing(path))
            ours = {f for f in deleted if f in source.files}
            if op == "expire":
                assert ours == source.expired, f"expire deleted {ours ^ source.expired}"
            else:
                assert not ours, f"orphan cleanup deleted files of the table: {ours}"
            assert run_read("read", path)[0] == source.observed["read"]


# --- bad writes --------------------------------------------------------------------------------
@pytest.fixture
def tables(catalog: shoal.Catalog) -> dict[str, shoal.Table]:
    append = catalog.create_table("db.events", EVENTS_SCHEMA, partition_keys=["dt"])
    append.append(events(range(3), DAY1))
    not_null = catalog.create_table(
        "db.strict", pa.schema([pa.field("a", pa.int64(), nullable=False), ("b", pa.string())])
    )
    not_null.append(pa.table({"a": [1], "b": ["x"]}))
    keyed = catalog.create_table(
        "db.keyed",
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]),
        primary_keys=["id"],
        options={"bucket": "2"},
    )
    keyed.upsert(pa.table({"id": [1, 2], "v": ["a", "b"]}))
    return {"append": append, "strict": not_null, "keyed": keyed}


_EV = events(range(10, 12), DAY1)
KEYED_SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])

BAD_WRITES: dict[str, tuple[str, Callable[[shoal.Table], object], list[str]]] = {
    "missing-column": ("append", lambda t: t.append(_EV.drop_columns(["name"])), ["name"]),
    "extra-column": (
        "append",
        lambda t: t.append(_EV.append_column("extra", pa.array([1, 2]))),
        ["extra"],
    ),
    "wrong-type": (
        "append",
        lambda t: t.append(_EV.set_column(1, "id", pa.array(["a", "b"]))),
        ["id", "string"],
    ),
    "wrong-type-lossy": (
        "append",
        lambda t: t.append(_EV.set_column(3, "value", pa.array([True, False]))),
        ["value"],
    ),
    "not-a-table": ("append", lambda t: t.append("rows"), ["str"]),
    "none": ("append", lambda t: t.append(None), ["NoneType"]),
    "dict-of-scalars": ("append", lambda t: t.append({"id": 1}), ["dict"]),
    "nulls-in-not-null": (
        "strict",
        lambda t: t.append(pa.table({"a": pa.array([1, None]), "b": ["x", "y"]})),
        ["'a'", "NOT NULL"],
    ),
    "null-primary-key": (
        "keyed",
        lambda t: t.upsert(pa.table({"id": pa.array([3, None]), "v": ["c", "d"]})),
        ["'id'", "NOT NULL"],
    ),
    "null-key-delete": (
        "keyed",
        lambda t: t.delete(pa.table({"id": pa.array([None], pa.int64())})),
        ["'id'", "NOT NULL"],
    ),
    "null-key-second-batch": (
        "keyed",
        lambda t: t.upsert(
            pa.RecordBatchReader.from_batches(
                KEYED_SCHEMA,
                [
                    pa.record_batch([pa.array([5]), pa.array(["e"])], schema=KEYED_SCHEMA),
                    pa.record_batch(
                        [pa.array([None], pa.int64()), pa.array(["f"])], schema=KEYED_SCHEMA
                    ),
                ],
            )
        ),
        ["'id'", "NOT NULL"],
    ),
    "missing-key": ("keyed", lambda t: t.upsert(pa.table({"v": ["x"]})), ["id"]),
    "upsert-on-append-table": (
        "append",
        lambda t: t.upsert(_EV),
        ["primary-key"],
    ),
    "overwrite-unknown-partition-key": (
        "append",
        lambda t: t.overwrite(_EV, partition={"nope": "1"}),
        ["nope"],
    ),
    "drop-no-partitions": ("append", lambda t: t.drop_partitions([]), ["partition"]),
    "unknown-column-filter": (
        "append",
        lambda t: t.to_arrow(filter=[("nope", "=", 1)]),
        ["nope"],
    ),
    "unknown-columns": ("append", lambda t: t.to_arrow(columns=["nope"]), ["nope"]),
    "snapshot-id-string": ("append", lambda t: t.to_arrow(snapshot_id="1"), ["'1'"]),
    "snapshot-id-bool": ("append", lambda t: t.to_arrow(snapshot_id=True), ["True"]),
    "timestamp-string": ("append", lambda t: t.to_arrow(timestamp_ms="now"), ["'now'"]),
    "snapshot-missing": ("append", lambda t: t.to_arrow(snapshot_id=99), ["99"]),
    "tag-and-snapshot": (
        "append",
        lambda t: t.to_arrow(snapshot_id=1, tag="x"),
        ["snapshot_id", "tag"],
    ),
    "retention-negative": (
        "append",
        lambda t: t.create_tag("r", time_retained="-1 d"),
        ["-1 d"],
    ),
    "retention-huge": (
        "append",
        lambda t: t.create_tag("r", time_retained="99999999999 d"),
        ["99999999999 d"],
    ),
    "expire-retain-zero": ("append", lambda t: t.expire_snapshots(retain_min=0), ["retain_min"]),
    "orphans-older-than-string": (
        "append",
        lambda t: t.remove_orphan_files(older_than="yesterday"),
        ["older_than"],
    ),
}


@pytest.mark.parametrize("case", BAD_WRITES, ids=list(BAD_WRITES))
def test_bad_calls_change_nothing(
    tables: dict[str, shoal.Table], warehouse: str, case: str
) -> None:
    which, call, names = BAD_WRITES[case]
    table = tables[which]
    before = listing(Path(warehouse))
    with pytest.raises(ShoalError) as info:
        call(table)
    assert_clear(info.value, names)
    assert listing(Path(warehouse)) == before
    assert table.latest_snapshot() is not None


def test_a_bad_batch_of_a_stream_commits_nothing(tables: dict[str, shoal.Table]) -> None:
    """A stream is written as it arrives: when a later batch is refused, the files
    written for the earlier ones are not committed, so no snapshot or metadata file
    changes, and orphan cleanup finds exactly those files."""
    table = tables["strict"]
    root = Path(table.path)
    latest = table.latest_snapshot()
    before = listing(root)
    schema = pa.schema([("a", pa.int64()), ("b", pa.string())])
    reader = pa.RecordBatchReader.from_batches(
        schema,
        [
            pa.record_batch([pa.array(range(1000)), pa.array(["x"] * 1000)], schema=schema),
            pa.record_batch([pa.array([None], pa.int64()), pa.array(["y"])], schema=schema),
        ],
    )
    with pytest.raises(SchemaMismatchError, match="NOT NULL"):
        table.append(reader)
    after = listing(root)
    assert {f: s for f, s in after.items() if f in before} == before
    written = set(after) - set(before)
    assert all(f.startswith("bucket-0/data-") for f in written), written
    assert _open(root).latest_snapshot() == latest
    _age(root)
    result = _open(root).remove_orphan_files()
    assert {os.path.relpath(p, root) for p in result.paths} == written
    assert listing(root) == before


# --- options -----------------------------------------------------------------------------------
BAD_OPTIONS = [
    ("bucket", "x"),  # int
    ("bucket", "1.5"),
    ("bucket", "0"),  # positive or -1
    ("bucket", "-5"),
    ("bucket", "99999999999"),  # beyond a Java int
    ("bucket", "\uff11"),  # a full-width digit one
    ("bucket", "1_0"),
    ("commit.max-retries", "-1"),
    ("snapshot.num-retained.min", "0"),
    ("snapshot.num-retained.min", "-3"),
    ("snapshot.num-retained.max", "1"),  # below the minimum of 10
    ("snapshot.expire.limit", "0"),
    ("num-levels", "1"),
    ("manifest.merge-min-count", "1"),
    ("tag.num-retained-max", "-1"),
    ("snapshot.time-retained", "soon"),  # duration
    ("snapshot.time-retained", "-1 h"),
    ("snapshot.time-retained", "1 fortnight"),
    ("snapshot.time-retained", "99999999999999999999 d"),
    ("snapshot.time-retained", "inf d"),
    ("partition.expiration-check-interval", "1e3 s"),
    ("tag.default-time-retained", "forever"),  # optional duration
    ("partition.expiration-time", ""),
    ("write-only", "yes"),  # bool
    ("ignore-delete", "1"),
    ("snapshot.clean-empty-directories", ""),
    ("merge-engine", "aggregate"),  # enum
    ("file.format", "xls"),
    ("manifest.compression", "lz4"),
    ("tag.automatic-creation", "daily"),
    ("metadata.stats-mode", "truncate(x)"),
    ("target-file-size", "big"),  # memory size
    ("target-file-size", "-1 mb"),
    ("target-file-size", "0"),
    ("manifest.target-file-size", "0 kb"),
    ("source.split.target-size", "0"),
    ("target-file-size", "99999999999999 tb"),
    ("bucket-key", "nope"),  # a column that is not there
]


@pytest.mark.parametrize(("key", "value"), BAD_OPTIONS, ids=[f"{k}={v}" for k, v in BAD_OPTIONS])
def test_bad_option_values(catalog: shoal.Catalog, warehouse: str, key: str, value: str) -> None:
    before = listing(Path(warehouse)) if os.path.exists(warehouse) else {}
    options = {key: value}
    if key == "bucket-key":
        options["bucket"] = "2"
    with pytest.raises(InvalidOptionError) as info:
        catalog.create_table("db.t", EVENTS_SCHEMA, options=options)
    assert info.value.key in (key, "snapshot.num-retained.max")
    assert_clear(info.value, [key])
    assert not os.path.exists(os.path.join(warehouse, "db.db", "t"))
    after = listing(Path(warehouse)) if os.path.exists(warehouse) else {}
    assert after == before


@pytest.mark.parametrize(
    ("key", "value"),
    [("bucket", "x"), ("snapshot.time-retained", "soon"), ("write-only", "maybe")],
)
def test_bad_option_in_a_schema_file(tables: dict[str, shoal.Table], key: str, value: str) -> None:
    """An option damaged in the schema file: writes refuse it, naming the option, and
    change nothing."""
    root = Path(tables["append"].path)
    schema_file = root / "schema" / "schema-0"
    data = json.loads(schema_file.read_text())
    data["options"][key] = value
    schema_file.write_text(json.dumps(data))
    before = listing(root)
    with pytest.raises(InvalidOptionError) as info:
        _open(root).append(_EV)
    assert info.value.key == key
    assert_clear(info.value, [key, value])
    assert listing(root) == before


# --- names -------------------------------------------------------------------------------------
BAD_TAG_NAMES = [
    "a/b",
    "../x",
    "..",
    ".",
    "",
    " ",
    "\t\n",
    " v1",
    "v1 ",
    "a\nb",
    "a\x00b",
    "a\\b",
    "123",
    "x" * 201,
    "\u00e9" * 101,  # 202 bytes in UTF-8
    "x" * 5000,
    "\ud800",  # a lone surrogate
]


@pytest.mark.parametrize("name", BAD_TAG_NAMES, ids=[repr(n)[:24] for n in BAD_TAG_NAMES])
def test_bad_tag_names(tables: dict[str, shoal.Table], warehouse: str, name: str) -> None:
    table = tables["append"]
    table.create_tag("good")
    before = listing(Path(warehouse).parent)
    for call in (
        lambda: table.create_tag(name),
        lambda: table.create_tag(name, replace=True),
        lambda: table.rename_tag("good", name),
    ):
        with pytest.raises(InvalidTagNameError) as info:
            call()
        assert info.value.tag == name
        assert "tag name" in str(info.value)
    for call in (
        lambda: table.to_arrow(tag=name),
        lambda: table.delete_tag(name),
        lambda: table.rename_tag(name, "other"),
    ):
        with pytest.raises((InvalidTagNameError, shoal.TagNotFoundError)):
            call()
    assert listing(Path(warehouse).parent) == before
    assert [t.name for t in table.list_tags()] == ["good"]


def test_longest_tag_name_works(tables: dict[str, shoal.Table]) -> None:
    table = tables["append"]
    name = "\u00e9" * 100  # 200 bytes in UTF-8
    table.create_tag(name)
    table.rename_tag(name, "x" * 200)
    assert table.to_arrow(tag="x" * 200).num_rows == 3
    table.delete_tag("x" * 200)


BAD_IDENTIFIERS: list[Any] = [
    "a/b.t",
    "db.a/b",
    "..",
    "../t",
    "db/..",
    "db..t",
    "db.",
    ".t",
    "",
    " ",
    "db. ",
    " db.t",
    "db.t\n",
    "db.a\x00b",
    "db.a\\b",
    "db." + "x" * 201,
    "x" * 300 + ".t",
    "db.\ud800",
    None,
    5,
    ["db", "t"],
]


@pytest.mark.parametrize("identifier", BAD_IDENTIFIERS, ids=[repr(i)[:24] for i in BAD_IDENTIFIERS])
def test_bad_table_identifiers(
    catalog: shoal.Catalog, tmp_path: Path, warehouse: str, identifier: Any
) -> None:
    catalog.create_table("db.keep", EVENTS_SCHEMA)
    before = listing(tmp_path)
    for call in (
        lambda: catalog.create_table(identifier, EVENTS_SCHEMA),
        lambda: catalog.get_table(identifier),
        lambda: catalog.table_exists(identifier),
        lambda: catalog.drop_table(identifier),
        lambda: catalog.drop_table(identifier, ignore_if_not_exists=True),
    ):
        with pytest.raises(InvalidArgumentError) as info:
            call()
        assert "identifier" in str(info.value)
    assert listing(tmp_path) == before
    assert catalog.list_tables("db") == ["keep"]


@pytest.mark.parametrize("database", ["..", "../..", "a/b", "", " ", "x\x00", "x" * 300, None])
def test_bad_database_names(catalog: shoal.Catalog, tmp_path: Path, database: Any) -> None:
    catalog.create_table("db.keep", EVENTS_SCHEMA)
    before = listing(tmp_path)
    with pytest.raises(InvalidArgumentError, match="database name"):
        catalog.list_tables(database)
    assert listing(tmp_path) == before


@pytest.mark.parametrize("warehouse", ["", "/", " ", "nope://bucket/warehouse"])
def test_bad_warehouse(warehouse: str) -> None:
    with pytest.raises(InvalidArgumentError, match="warehouse"):
        shoal.Catalog(warehouse).list_databases()


def test_warehouse_that_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"x")
    with pytest.raises(InvalidArgumentError, match="warehouse"):
        shoal.Catalog(str(path)).list_databases()
    assert path.read_bytes() == b"x"


@pytest.mark.parametrize("location", ["", " ", "nope://bucket/t", None])
def test_bad_table_location(location: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        shoal.open_table(location)


def test_a_location_that_is_no_table(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"x")
    for location in (path, tmp_path / "missing", tmp_path):
        with pytest.raises(shoal.TableNotFoundError, match=str(location)):
            shoal.open_table(str(location))
    assert listing(tmp_path) == {"file": 1}
