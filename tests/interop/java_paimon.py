"""Apache Paimon's Java implementation as a test oracle, run in a JVM subprocess.

pypaimon implements only part of the format; Paimon's Java code is the reference that Flink
and Spark users run. PyPI ships it inside two packages (no Maven needed): `pypaimon==0.2.0`
holds the Paimon 0.9 bridge jar (without Hadoop: pyspark's Hadoop client jars go on the
classpath), `paimon-python-ali==0.1.1` a Paimon 1.0 bundle. This module downloads them with
pip, compiles `java/PaimonOracle.java` against each with javac, records a class-data
archive of a warm-up run (so later JVMs start faster), and caches it all under
<repo>/.venvs/java-paimon (git-ignored); a file lock makes parallel pytest workers do that
once. A missing `java`/`javac` or a failed download raises, so the tests fail instead of
being skipped.

Each call starts a JVM (about 0.7 s; a small create, write and read in it about 2 s), so a
call takes a list of operations and runs them all in that one JVM:

    JavaPaimon("1.0").run(warehouse, [create_table(...), write(...), read(...)])

The methods of `JavaPaimon` named like the operation builders run a single one. Rows cross
the process boundary as JSON typed by the table's schema (decimals as strings, timestamps
as epoch millisecond plus nano of millisecond), so every value arrives exactly.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, cast

import pyarrow as pa

from tests.interop.pypaimon_oracle import _file_lock

logger = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
SOURCE = Path(__file__).with_name("java") / "PaimonOracle.java"
MAIN_CLASS = "PaimonOracle"
CACHE_ENV_VAR = "SHOAL_JAVA_PAIMON_CACHE"

Version = Literal["0.9", "1.0"]
VERSIONS: tuple[Version, ...] = ("0.9", "1.0")

# Short JVM runs spend most of their time starting: C1 alone and the serial collector cut a
# call's CPU time by about a third (the class-data archive, see `install`, by half again).
# UTC keeps Paimon's conversions of timestamps without a time zone independent of the
# machine's zone.
JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Duser.timezone=UTC")


@dataclass(frozen=True, slots=True)
class _Jar:
    """Where a Paimon version's jar comes from: a PyPI package (pinned by hash) and its path
    inside the archive."""

    requirement: str
    archive: str
    sha256: str
    member: str
    needs_hadoop: bool


JARS: dict[Version, _Jar] = {
    "0.9": _Jar(
        requirement="pypaimon==0.2.0",
        archive="pypaimon-0.2.0.tar.gz",
        sha256="43ac684779841da17528b5f241ede6149bcdab4d16f3cd80f713262f6ed04720",
        member="pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-0.9.0.jar",
        needs_hadoop=True,
    ),
    "1.0": _Jar(
        requirement="paimon-python-ali==0.1.1",
        archive="paimon_python_ali-0.1.1-py3-none-any.whl",
        sha256="2a60eab3b2df8af59f393dc7e6d61af2956572b8eadfc9e664a0ec6d2a4688f3",
        member="paimon_python_java/java_dependencies/paimon-python-java-bridge.jar",
        needs_hadoop=False,
    ),
}


class JavaPaimonSetupError(RuntimeError):
    """The oracle could not be installed: no JDK, a failed download or compile."""


class JavaPaimonError(RuntimeError):
    """Java Paimon failed an operation. The message is Java's own (class, message and causes);
    the Java stack trace is kept in `java_stack`, the results of the operations that ran
    before the failed one in `results`."""

    def __init__(
        self,
        message: str,
        *,
        java_class: str,
        java_message: str,
        causes: list[str],
        op: str,
        op_index: int,
        results: list[Any],
        java_stack: str,
    ) -> None:
        super().__init__(message)
        self.java_class = java_class
        self.java_message = java_message
        self.causes = causes
        self.op = op
        self.op_index = op_index
        self.results = results
        self.java_stack = java_stack


# --- installation ---------------------------------------------------------------------------


def cache_dir() -> Path:
    """Jars, compiled oracle and archives: $SHOAL_JAVA_PAIMON_CACHE, else
    <repo>/.venvs/java-paimon."""
    configured = os.environ.get(CACHE_ENV_VAR)
    if configured:
        return Path(configured).expanduser().resolve()
    return REPO_ROOT / ".venvs" / "java-paimon"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise JavaPaimonSetupError(
            f"`{name}` is not on PATH: the Java oracle needs a JDK 17 "
            "(.ci/run installs openjdk-17-jdk-headless)"
        )
    return found


def _run_or_raise(cmd: list[str], what: str) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise JavaPaimonSetupError(
            f"{what} failed (exit {done.returncode}): {' '.join(cmd)}\n"
            f"--- stdout ---\n{done.stdout}\n--- stderr ---\n{done.stderr}"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download_jar(jar: _Jar, target: Path) -> None:
    """Downloads the package, checks its hash and extracts the jar to `target` atomically."""
    with tempfile.TemporaryDirectory(prefix="java-paimon-", dir=target.parent) as tmp:
        _run_or_raise(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--disable-pip-version-check",
                jar.requirement,
                "-d",
                tmp,
            ],
            f"pip download {jar.requirement}",
        )
        archive = Path(tmp) / jar.archive
        if not archive.exists():
            raise JavaPaimonSetupError(f"pip download {jar.requirement} made no {jar.archive}")
        actual = _sha256(archive)
        if actual != jar.sha256:
            raise JavaPaimonSetupError(f"{jar.archive} has sha256 {actual}, expected {jar.sha256}")
        partial = Path(tmp) / "paimon.jar"
        if jar.archive.endswith(".whl"):
            with (
                zipfile.ZipFile(archive) as wheel,
                wheel.open(jar.member) as src,
                partial.open("wb") as dst,
            ):
                shutil.copyfileobj(src, dst)
        else:
            with tarfile.open(archive) as sdist:
                src_file = sdist.extractfile(jar.member)
                if src_file is None:
                    raise JavaPaimonSetupError(f"{jar.member} is not a file in {jar.archive}")
                with src_file, partial.open("wb") as dst:
                    shutil.copyfileobj(src_file, dst)
        os.replace(partial, target)


def _hadoop_jars() -> list[Path]:
    """pyspark's shaded Hadoop client, which Paimon 0.9's jar leaves out."""
    spec = find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise JavaPaimonSetupError("pyspark is not installed: Paimon 0.9 needs its Hadoop jars")
    jars = Path(spec.origin).parent / "jars"
    found = sorted(jars.glob("hadoop-client-api-*.jar")) + sorted(
        jars.glob("hadoop-client-runtime-*.jar")
    )
    if len(found) != 2:
        raise JavaPaimonSetupError(f"no hadoop-client-api/runtime jars in {jars}: {found}")
    return found


def _source_key() -> str:
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]


def _compile(javac: str, paimon: Path, target: Path) -> None:
    """Compiles the oracle against `paimon` into the jar `target`, atomically. A jar rather
    than a folder of classes: the JVM's class-data archive accepts only jars."""
    with tempfile.TemporaryDirectory(prefix="compile-", dir=target.parent) as tmp:
        classes = Path(tmp) / "classes"
        javac_args = ["-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", str(paimon)]
        _run_or_raise([javac, *javac_args, str(SOURCE)], f"javac {SOURCE.name} against {paimon}")
        partial = Path(tmp) / "oracle.jar"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            for path in sorted(classes.rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())
        os.replace(partial, target)


def _dump_archive(java: str, classpath: Sequence[Path], target: Path) -> None:
    """Records the classes a typical run loads into a class-data archive at `target`: later
    JVMs map it instead of loading and verifying thousands of classes from the jars, which
    halves a call's CPU time. Without an archive the oracle still works, only slower."""
    with tempfile.TemporaryDirectory(prefix="archive-", dir=target.parent) as tmp:
        partial = Path(tmp) / "oracle.jsa"
        response = _run_jvm(
            java,
            classpath,
            [f"-XX:ArchiveClassesAtExit={partial}"],
            {"warehouse": str(Path(tmp) / "warehouse"), "ops": _warm_up()},
        )
        if response.get("error") is not None:
            raise JavaPaimonSetupError(f"the oracle fails its warm-up run: {response['error']}")
        if not partial.exists():
            logger.warning("the JVM made no class-data archive; Java oracle calls run slower")
            return
        os.replace(partial, target)


@dataclass(frozen=True, slots=True)
class Installation:
    """What one Paimon version runs with: the classpath, and the class-data archive when the
    JVM could make one."""

    classpath: tuple[Path, ...]
    archive: Path | None


def install(version: Version) -> Installation:
    """Downloads the jar, compiles the oracle and records its class-data archive on first use.

    The compiled jar and the archive are keyed by the source's hash, so an edit of
    PaimonOracle.java recompiles. The first call takes 20-30 s per version (download, javac,
    the archive's warm-up run).
    """
    jar_spec = JARS[version]
    root = cache_dir() / version
    key = _source_key()
    paimon = root / "paimon.jar"
    oracle = root / f"oracle-{key}.jar"
    archive = root / f"oracle-{key}.jsa"
    classpath = (paimon, oracle, *(_hadoop_jars() if jar_spec.needs_hadoop else []))
    if not (paimon.exists() and oracle.exists() and archive.exists()):
        javac, java = _tool("javac"), _tool("java")
        with _file_lock(cache_dir() / "install.lock"):
            root.mkdir(parents=True, exist_ok=True)
            if not paimon.exists():  # another process may have finished meanwhile
                _download_jar(jar_spec, paimon)
            if not oracle.exists():
                for stale in root.glob("oracle-*"):
                    stale.unlink()
                _compile(javac, paimon, oracle)
            if not archive.exists():
                _dump_archive(java, classpath, archive)
    return Installation(classpath, archive if archive.exists() else None)


def _run_jvm(
    java: str, classpath: Sequence[Path], flags: Sequence[str], request: dict[str, Any]
) -> dict[str, Any]:
    """Runs the oracle on `request` in a new JVM and returns its response; raises
    `JavaPaimonError` only when the JVM wrote none (it died, or could not start)."""
    with tempfile.TemporaryDirectory(prefix="java-paimon-call-") as tmp:
        request_path = Path(tmp) / "request.json"
        response_path = Path(tmp) / "response.json"
        request_path.write_text(json.dumps(request, allow_nan=False), encoding="utf-8")
        cmd = [java, *JVM_FLAGS, *flags, "-cp", os.pathsep.join(map(str, classpath)), MAIN_CLASS]
        done = subprocess.run(
            [*cmd, str(request_path), str(response_path)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0 or not response_path.exists():
            raise JavaPaimonError(
                f"the JVM exited with {done.returncode} and no response: {' '.join(cmd)}\n"
                f"--- stderr ---\n{done.stderr[-4000:]}",
                java_class="",
                java_message="",
                causes=[],
                op="",
                op_index=-1,
                results=[],
                java_stack="",
            )
        response: dict[str, Any] = json.loads(response_path.read_text(encoding="utf-8"))
        return response


# --- types ----------------------------------------------------------------------------------


def paimon_type(t: pa.DataType, nullable: bool = True) -> str:
    """Paimon's SQL string for an Arrow type (the inverse of `arrow_field`).

    The mapping is the one shoal uses: strings are STRING, binaries BYTES, timestamp units
    are precisions 0/3/6/9 and a time zone means WITH LOCAL TIME ZONE.
    """
    suffix = "" if nullable else " NOT NULL"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        field = t.value_field
        return f"ARRAY<{paimon_type(field.type, field.nullable)}>{suffix}"
    if pa.types.is_map(t):
        key = paimon_type(t.key_field.type, False)
        value = paimon_type(t.item_field.type, t.item_field.nullable)
        return f"MAP<{key}, {value}>{suffix}"
    if pa.types.is_struct(t):
        fields = ", ".join(
            f"`{f.name.replace('`', '``')}` {paimon_type(f.type, f.nullable)}" for f in t
        )
        return f"ROW<{fields}>{suffix}"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale}){suffix}"
    if pa.types.is_timestamp(t):
        zone = "" if t.tz is None else " WITH LOCAL TIME ZONE"
        return f"TIMESTAMP({_UNIT_PRECISION[t.unit]}){zone}{suffix}"
    if pa.types.is_fixed_size_binary(t):
        return f"BINARY({t.byte_width}){suffix}"
    for check, name in _ATOMIC_FROM_ARROW:
        if check(t):
            return name + suffix
    raise TypeError(f"the Java oracle has no Paimon type for Arrow {t}")


_UNIT_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}
_ATOMIC_FROM_ARROW: list[tuple[Callable[[pa.DataType], bool], str]] = [
    (pa.types.is_boolean, "BOOLEAN"),
    (pa.types.is_int8, "TINYINT"),
    (pa.types.is_int16, "SMALLINT"),
    (pa.types.is_int32, "INT"),
    (pa.types.is_int64, "BIGINT"),
    (pa.types.is_float32, "FLOAT"),
    (pa.types.is_float64, "DOUBLE"),
    (pa.types.is_string, "STRING"),
    (pa.types.is_large_string, "STRING"),
    (pa.types.is_binary, "BYTES"),
    (pa.types.is_large_binary, "BYTES"),
    (pa.types.is_date32, "DATE"),
]


@dataclass(frozen=True, slots=True)
class _PType:
    """A parsed Paimon type: `root` is the keyword (INT, DECIMAL, ARRAY, ROW, ...)."""

    root: str
    nullable: bool = True
    params: tuple[int, ...] = ()
    children: tuple[_PType, ...] = ()
    names: tuple[str, ...] = ()
    local_zone: bool = False


_TOKEN = re.compile(r"\s*(`(?:[^`]|``)*`|'(?:[^']|'')*'|\w+|[<>(),])")


class _TypeParser:
    """Reads the strings Paimon's DataType.asSQLString writes (what the oracle returns)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _TOKEN.findall(text)
        self.pos = 0

    def parse(self) -> _PType:
        result = self.type()
        if self.pos != len(self.tokens):
            raise ValueError(f"unexpected {self.tokens[self.pos :]} in {self.text!r}")
        return result

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token.upper() != expected):
            raise ValueError(f"expected {expected or 'a token'} at {token!r} in {self.text!r}")
        self.pos += 1
        return token

    def numbers(self) -> tuple[int, ...]:
        if self.peek() != "(":
            return ()
        self.take("(")
        values = [int(self.take())]
        while self.peek() == ",":
            self.take(",")
            values.append(int(self.take()))
        self.take(")")
        return tuple(values)

    def type(self) -> _PType:
        root = self.take().upper()
        params: tuple[int, ...] = ()
        children: tuple[_PType, ...] = ()
        names: tuple[str, ...] = ()
        local_zone = False
        if root in ("ARRAY", "MULTISET"):
            self.take("<")
            children = (self.type(),)
            self.take(">")
        elif root == "MAP":
            self.take("<")
            key = self.type()
            self.take(",")
            children = (key, self.type())
            self.take(">")
        elif root == "ROW":
            self.take("<")
            fields: list[tuple[str, _PType]] = []
            while True:
                name = self.take()
                if name.startswith("`"):
                    name = name[1:-1].replace("``", "`")
                fields.append((name, self.type()))
                if (self.peek() or "").startswith("'"):
                    self.take()  # a comment
                if self.peek() != ",":
                    break
                self.take(",")
            self.take(">")
            names = tuple(n for n, _ in fields)
            children = tuple(t for _, t in fields)
        else:
            params = self.numbers()
            if root == "TIMESTAMP" and (self.peek() or "").upper() == "WITH":
                for word in ("WITH", "LOCAL", "TIME", "ZONE"):
                    self.take(word)
                local_zone = True
            elif root == "TIMESTAMP_LTZ":
                root, local_zone = "TIMESTAMP", True
        nullable = True
        if (self.peek() or "").upper() == "NOT":
            self.take("NOT")
            self.take("NULL")
            nullable = False
        return _PType(root, nullable, params, children, names, local_zone)


def _precision_unit(precision: int) -> str:
    if precision == 0:
        return "s"
    return "ms" if precision <= 3 else "us" if precision <= 6 else "ns"


def _arrow(t: _PType) -> pa.DataType:
    if t.root == "ARRAY":
        element = t.children[0]
        return pa.list_(pa.field("element", _arrow(element), element.nullable))
    if t.root == "MAP":
        key, value = t.children
        return pa.map_(
            pa.field("key", _arrow(key), False), pa.field("value", _arrow(value), value.nullable)
        )
    if t.root == "ROW":
        return pa.struct(
            [pa.field(n, _arrow(c), c.nullable) for n, c in zip(t.names, t.children, strict=True)]
        )
    if t.root == "DECIMAL":
        precision, scale = t.params or (10, 0)
        return pa.decimal128(precision, scale)
    if t.root == "TIMESTAMP":
        unit = _precision_unit(t.params[0] if t.params else 6)
        return pa.timestamp(unit, tz="UTC" if t.local_zone else None)
    if t.root == "BINARY" and t.params:
        return pa.binary(t.params[0])
    simple = _ATOMIC_TO_ARROW.get(t.root)
    if simple is None:
        raise TypeError(f"the Java oracle has no Arrow type for Paimon {t.root}")
    return simple


_ATOMIC_TO_ARROW: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "STRING": pa.string(),
    "VARCHAR": pa.string(),
    "CHAR": pa.string(),
    "BYTES": pa.binary(),
    "VARBINARY": pa.binary(),
    "DATE": pa.date32(),
}


def arrow_field(name: str, paimon: str) -> pa.Field:
    """The Arrow field for a column of Paimon type `paimon` (a SQL string, as Java writes)."""
    parsed = _TypeParser(paimon).parse()
    return pa.field(name, _arrow(parsed), parsed.nullable)


# --- values ---------------------------------------------------------------------------------

_NANOS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def _wire(t: pa.DataType) -> pa.DataType:
    """`t` with timestamps and dates as plain integers, so to_pylist keeps nanoseconds."""
    if pa.types.is_timestamp(t):
        return pa.int64()
    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        field = t.value_field
        return pa.list_(field.with_type(_wire(field.type)))
    if pa.types.is_map(t):
        key, item = t.key_field, t.item_field
        return pa.map_(key.with_type(_wire(key.type)), item.with_type(_wire(item.type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_wire(f.type)) for f in t])
    return t


def _to_json(value: Any, t: pa.DataType) -> Any:
    """One value of Arrow type `t` (as `_wire` left it) in the oracle's JSON encoding."""
    if value is None:
        return None
    if pa.types.is_timestamp(t):
        nanos = value * _NANOS_PER_UNIT[t.unit]
        return [nanos // 10**6, nanos % 10**6]
    if pa.types.is_decimal(t):
        return str(value)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return base64.b64encode(value).decode("ascii")
    if pa.types.is_floating(t) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_to_json(v, t.value_type) for v in value]
    if pa.types.is_map(t):
        return [[_to_json(k, t.key_type), _to_json(v, t.item_type)] for k, v in value]
    if pa.types.is_struct(t):
        return [_to_json(value[f.name], f.type) for f in t]
    return value


def _from_json(value: Any, t: _PType) -> Any:
    """One value in the oracle's JSON encoding as a Python value pa.array takes for
    `_arrow(t)` (timestamps as integers of their unit)."""
    if value is None:
        return None
    root = t.root
    if root == "TIMESTAMP":
        millis, nanos = value
        unit = _precision_unit(t.params[0] if t.params else 6)
        return (millis * 10**6 + nanos) // _NANOS_PER_UNIT[unit]
    if root == "DECIMAL":
        return Decimal(value)
    if root in ("BYTES", "VARBINARY", "BINARY"):
        return base64.b64decode(value)
    if root in ("FLOAT", "DOUBLE"):
        return float(value)
    if root == "ARRAY":
        return [_from_json(v, t.children[0]) for v in value]
    if root == "MAP":
        key, item = t.children
        return [(_from_json(k, key), _from_json(v, item)) for k, v in value]
    if root == "ROW":
        return {n: _from_json(v, c) for n, v, c in zip(t.names, value, t.children, strict=True)}
    return value


def _rows_to_json(rows: pa.Table) -> list[list[Any]]:
    columns = []
    for field, column in zip(rows.schema, rows.columns, strict=True):
        values = column.cast(_wire(field.type)).to_pylist()
        columns.append([_to_json(v, field.type) for v in values])
    return [list(row) for row in zip(*columns, strict=True)] if columns else []


def _table_from_json(result: dict[str, Any], row_kind: bool) -> pa.Table:
    fields = [arrow_field(f["name"], f["type"]) for f in result["fields"]]
    parsed = [_TypeParser(f["type"]).parse() for f in result["fields"]]
    rows = result["rows"]
    arrays = [
        pa.array([_from_json(row[i], p) for row in rows], field.type)
        for i, (field, p) in enumerate(zip(fields, parsed, strict=True))
    ]
    if row_kind:
        fields.append(pa.field("_row_kind", pa.string(), False))
        arrays.append(pa.array(result["kinds"], pa.string()))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


# --- operations -----------------------------------------------------------------------------

T = TypeVar("T")

RowKindName = Literal["INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE"]
_ROW_KINDS: dict[str, str] = {
    "INSERT": "+I",
    "UPDATE_BEFORE": "-U",
    "UPDATE_AFTER": "+U",
    "DELETE": "-D",
}

SchemaChange = tuple[Any, ...]
"""One change for `alter`: ("add_column", name, type[, {"after": column} or {"first": True}]),
("drop_column", name),
("rename_column", name, new_name), ("update_column_type", name, type), ("set_option", key,
value) or ("remove_option", key). A type is an Arrow type or a Paimon SQL string
("INT NOT NULL")."""


@dataclass(frozen=True, slots=True)
class Op(Generic[T]):
    """One operation for `JavaPaimon.run`: its JSON request and how to read its result."""

    request: dict[str, Any]
    decode: Callable[[Any], T]


def _none(_: Any) -> None:
    return None


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def create_table(
    identifier: str,
    schema: pa.Schema,
    *,
    partition_keys: Sequence[str] = (),
    primary_keys: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
) -> Op[None]:
    """Create `identifier` ("db.name"; the database is created when missing). A field
    whose metadata holds `PAIMON_TYPE` gets that Paimon type, any other the one
    `paimon_type` gives its Arrow type."""
    fields = [{"name": f.name, "type": _field_type(f)} for f in schema]
    request = {
        "op": "create_table",
        "table": identifier,
        "fields": fields,
        "partition_keys": list(partition_keys),
        "primary_keys": list(primary_keys),
        "options": dict(options or {}),
    }
    return Op(request, _none)


PAIMON_TYPE = b"paimon.type"
"""Field metadata key naming a column's Paimon type for `create_table`, for the types
Arrow cannot spell (CHAR(n), VARCHAR(n), TIME(p), ...)."""


def _field_type(f: pa.Field) -> str:
    if f.metadata and PAIMON_TYPE in f.metadata:
        return f.metadata[PAIMON_TYPE].decode()
    return paimon_type(f.type, f.nullable)


def write(
    identifier: str,
    rows: pa.Table,
    *,
    kind: RowKindName | Sequence[RowKindName] = "INSERT",
    options: Mapping[str, str] | None = None,
    overwrite: Mapping[str, str] | None = None,
) -> Op[int | None]:
    """One batch commit of `rows` (columns by name; columns left out are null). `kind` is
    one row kind for all rows or one per row. `overwrite` makes it an overwrite of the
    static partition it names (`{}`: the whole table). Dynamic-bucket tables get their
    buckets from Paimon's hash index; cross-partition upsert tables are refused. Result: the
    latest snapshot id afterwards."""
    if isinstance(kind, str):
        kinds: str | list[str] = _ROW_KINDS[kind]
    else:
        kinds = [_ROW_KINDS[k] for k in kind]
        if len(kinds) != rows.num_rows:
            raise ValueError(f"{len(kinds)} row kinds for {rows.num_rows} rows")
    request = {
        "op": "write",
        "table": identifier,
        "columns": rows.column_names,
        "rows": _rows_to_json(rows),
        "kinds": kinds,
        "options": dict(options or {}),
        "overwrite": None if overwrite is None else dict(overwrite),
    }
    return Op(request, _int_or_none)


def read(
    identifier: str,
    *,
    options: Mapping[str, str] | None = None,
    projection: Sequence[str] | None = None,
    row_kind: bool = False,
) -> Op[pa.Table]:
    """All rows of `identifier`, a table or a system table ("db.t$ro", "db.t$snapshots").
    `options` are Paimon's dynamic options (`scan.snapshot-id`, `scan.tag-name`, ...);
    `row_kind` adds a `_row_kind` column ("+I", "-U", "+U", "-D")."""
    request = {
        "op": "read",
        "table": identifier,
        "options": dict(options or {}),
        "projection": None if projection is None else list(projection),
    }
    return Op(request, lambda result: _table_from_json(result, row_kind))


def stream_read(
    identifier: str, start: int, end: int, *, options: Mapping[str, str] | None = None
) -> Op[pa.Table]:
    """The changes of snapshots `start` to `end` (both included) as Paimon's streaming
    reader reads them from snapshot `start` (`scan.mode` = `from-snapshot`), with a
    `_row_kind` column: it reads long-lived changelogs where the snapshots are gone."""
    request = {
        "op": "stream_read",
        "table": identifier,
        "start": start,
        "end": end,
        "options": dict(options or {}),
    }
    return Op(request, lambda result: _table_from_json(result, True))


def compact(
    identifier: str, *, full: bool = True, options: Mapping[str, str] | None = None
) -> Op[int | None]:
    """Compact every bucket holding files (`full`: into one sorted run at the top level).
    On unaware-bucket append tables `full` rewrites all files of each partition, otherwise
    Paimon's coordinator picks the small files it wants (often none in one batch run).
    Result: the latest snapshot id afterwards."""
    request = {"op": "compact", "table": identifier, "full": full, "options": dict(options or {})}
    return Op(request, _int_or_none)


def create_tag(
    identifier: str,
    tag: str,
    *,
    snapshot_id: int | None = None,
    time_retained: str | None = None,
) -> Op[None]:
    """Tag `snapshot_id` (the latest when None); `time_retained` in Paimon's duration syntax."""
    request = {
        "op": "create_tag",
        "table": identifier,
        "tag": tag,
        "snapshot_id": snapshot_id,
        "time_retained": time_retained,
    }
    return Op(request, _none)


def delete_tag(identifier: str, tag: str) -> Op[None]:
    return Op({"op": "delete_tag", "table": identifier, "tag": tag}, _none)


def rollback_to(
    identifier: str, *, snapshot_id: int | None = None, tag: str | None = None
) -> Op[None]:
    """Roll back to a snapshot or a tag (exactly one of them)."""
    if (snapshot_id is None) == (tag is None):
        raise ValueError("rollback_to takes exactly one of snapshot_id and tag")
    request = {"op": "rollback_to", "table": identifier, "snapshot_id": snapshot_id, "tag": tag}
    return Op(request, _none)


def expire_snapshots(
    identifier: str,
    *,
    retain_max: int | None = None,
    retain_min: int | None = None,
    older_than_ms: int | None = None,
    max_deletes: int | None = None,
) -> Op[int]:
    """Expire snapshots; arguments left as None fall back to the table's options (and a
    retain_max below `snapshot.num-retained.min` lowers retain_min to it). Result: the
    number of snapshots expired."""
    request = {
        "op": "expire_snapshots",
        "table": identifier,
        "retain_max": retain_max,
        "retain_min": retain_min,
        "older_than_ms": older_than_ms,
        "max_deletes": max_deletes,
    }
    return Op(request, int)


def reset_consumer(identifier: str, consumer_id: str, next_snapshot: int) -> Op[None]:
    """Create or move a consumer (ConsumerManager.resetConsumer)."""
    request = {
        "op": "reset_consumer",
        "table": identifier,
        "consumer_id": consumer_id,
        "next_snapshot": next_snapshot,
    }
    return Op(request, _none)


def consumers(identifier: str) -> Op[dict[str, int]]:
    """Every consumer's next snapshot, as Java reads them (ConsumerManager.consumers)."""
    return Op({"op": "consumers", "table": identifier}, lambda d: {k: int(v) for k, v in d.items()})


def _type_string(t: pa.DataType | str) -> str:
    return t if isinstance(t, str) else paimon_type(t)


def alter(identifier: str, changes: Sequence[SchemaChange]) -> Op[None]:
    """Apply `changes` (see `SchemaChange`) as one new schema."""
    encoded: list[dict[str, Any]] = []
    for change in changes:
        action, *args = change
        if action == "add_column":
            position = args[2] if len(args) > 2 else {}
            encoded.append(
                {"action": action, "name": args[0], "type": _type_string(args[1]), **position}
            )
        elif action == "drop_column":
            encoded.append({"action": action, "name": args[0]})
        elif action == "rename_column":
            encoded.append({"action": action, "name": args[0], "new_name": args[1]})
        elif action == "update_column_type":
            encoded.append({"action": action, "name": args[0], "type": _type_string(args[1])})
        elif action == "set_option":
            encoded.append({"action": action, "key": args[0], "value": args[1]})
        elif action == "remove_option":
            encoded.append({"action": action, "key": args[0]})
        else:
            raise ValueError(f"unknown schema change {action!r}")
    return Op({"op": "alter", "table": identifier, "changes": encoded}, _none)


def drop_table(identifier: str) -> Op[None]:
    return Op({"op": "drop_table", "table": identifier}, _none)


def snapshot(identifier: str, *, snapshot_id: int | None = None) -> Op[dict[str, Any] | None]:
    """A snapshot (the latest when `snapshot_id` is None; None when the table has none) as
    Java's Snapshot parses it and writes it back: a JSON object of the fields this Paimon
    version knows (0.9 and 1.0 know no `properties`)."""
    request = {"op": "snapshot", "table": identifier, "snapshot_id": snapshot_id}
    return Op(request, _json_object_or_none)


def _json_object_or_none(value: Any) -> dict[str, Any] | None:
    return None if value is None else dict(value)


def _warm_up() -> list[dict[str, Any]]:
    """Operations that load the classes the tests need, for the class-data archive: both
    table kinds, dynamic buckets, every operation, nested and time values."""
    schema = pa.schema(
        [
            pa.field("p", pa.string(), False),
            pa.field("k", pa.int32(), False),
            ("d", pa.decimal128(20, 2)),
            ("t", pa.timestamp("ns")),
            ("a", pa.list_(pa.int64())),
            ("m", pa.map_(pa.string(), pa.binary())),
            ("r", pa.struct([("x", pa.float64()), ("z", pa.timestamp("us", tz="UTC"))])),
        ]
    )
    rows = pa.table(
        {
            "p": ["a", "b"],
            "k": pa.array([1, 2], pa.int32()),
            "d": [Decimal("1.25"), None],
            "t": pa.array([1, None], pa.timestamp("ns")),
            "a": [[1], []],
            "m": [[("x", b"y")], None],
            "r": [{"x": 0.5, "z": 3}, None],
        },
        schema=schema,
    )
    keys = ["p", "k"]
    ops: list[Op[Any]] = [
        create_table(
            "db.pk", schema, partition_keys=["p"], primary_keys=keys, options={"bucket": "2"}
        ),
        write("db.pk", rows),
        write("db.pk", rows.slice(0, 1), kind="DELETE"),
        read("db.pk", row_kind=True),
        compact("db.pk"),
        read("db.pk$ro", projection=["k", "m"]),
        read("db.pk$files"),
        read("db.pk$snapshots"),
        create_tag("db.pk", "t1", snapshot_id=1),
        read("db.pk", options={"scan.tag-name": "t1"}),
        rollback_to("db.pk", tag="t1"),
        delete_tag("db.pk", "t1"),
        read("db.pk$tags"),
        snapshot("db.pk"),
        alter("db.pk", [("add_column", "n", pa.int64()), ("set_option", "a", "b")]),
        expire_snapshots("db.pk", retain_max=1),
        create_table("db.dynamic", schema, partition_keys=["p"], primary_keys=keys),
        write("db.dynamic", rows),
        create_table("db.append", schema),
        write("db.append", rows),
        write("db.append", rows),
        compact("db.append"),
        read("db.append"),
        drop_table("db.append"),
    ]
    return [op.request for op in ops]


# --- the oracle -----------------------------------------------------------------------------


class JavaPaimon:
    """Apache Paimon's Java implementation (`version` "0.9" or "1.0"), one JVM per call."""

    def __init__(self, version: Version) -> None:
        if version not in JARS:
            raise ValueError(f"unknown Paimon version {version!r}; known: {VERSIONS}")
        self.version = version
        self.java = _tool("java")
        self.installation = install(version)
        archive = self.installation.archive
        self._flags = [] if archive is None else [f"-XX:SharedArchiveFile={archive}"]
        self.last_elapsed_s = 0.0

    def run(self, warehouse: str | os.PathLike[str], ops: Sequence[Op[Any]]) -> list[Any]:
        """Run `ops` in order in one JVM against the filesystem catalog at `warehouse`; returns
        their results. The first failure stops the run and raises `JavaPaimonError`."""
        request = {"warehouse": str(warehouse), "ops": [op.request for op in ops]}
        start = time.perf_counter()
        response = _run_jvm(self.java, self.installation.classpath, self._flags, request)
        self.last_elapsed_s = time.perf_counter() - start
        raw = response["results"]
        results = [op.decode(value) for op, value in zip(ops, raw, strict=False)]
        error = response.get("error")
        if error is not None:
            index = int(error["op_index"])
            name = ops[index].request["op"] if index < len(ops) else "closing the catalog"
            causes = [str(c) for c in error["causes"]]
            java_message = error["message"] or ""
            # An exception without a message (a failed precondition) is named by its place.
            detail = java_message or f"(no message; thrown at {error['thrown_at']})"
            message = f"{error['class']}: {detail}"
            message += "".join(f"\n  caused by {c}" for c in causes)
            raise JavaPaimonError(
                f"Java Paimon {self.version} {name} (operation {index + 1} of {len(ops)}) "
                f"failed: {message}",
                java_class=str(error["class"]),
                java_message=java_message,
                causes=causes,
                op=name,
                op_index=index,
                results=results,
                java_stack=str(error["stack"]),
            )
        return results

    def _one(self, warehouse: str | os.PathLike[str], op: Op[T]) -> T:
        return cast(T, self.run(warehouse, [op])[0])

    def create_table(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        schema: pa.Schema,
        *,
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
    ) -> None:
        op = create_table(
            identifier,
            schema,
            partition_keys=partition_keys,
            primary_keys=primary_keys,
            options=options,
        )
        self._one(warehouse, op)

    def write(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        rows: pa.Table,
        *,
        kind: RowKindName | Sequence[RowKindName] = "INSERT",
        options: Mapping[str, str] | None = None,
        overwrite: Mapping[str, str] | None = None,
    ) -> int | None:
        op = write(identifier, rows, kind=kind, options=options, overwrite=overwrite)
        return self._one(warehouse, op)

    def read(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        *,
        options: Mapping[str, str] | None = None,
        projection: Sequence[str] | None = None,
        row_kind: bool = False,
    ) -> pa.Table:
        op = read(identifier, options=options, projection=projection, row_kind=row_kind)
        return self._one(warehouse, op)

    def compact(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        *,
        full: bool = True,
        options: Mapping[str, str] | None = None,
    ) -> int | None:
        return self._one(warehouse, compact(identifier, full=full, options=options))

    def create_tag(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        tag: str,
        *,
        snapshot_id: int | None = None,
        time_retained: str | None = None,
    ) -> None:
        op = create_tag(identifier, tag, snapshot_id=snapshot_id, time_retained=time_retained)
        self._one(warehouse, op)

    def delete_tag(self, warehouse: str | os.PathLike[str], identifier: str, tag: str) -> None:
        self._one(warehouse, delete_tag(identifier, tag))

    def rollback_to(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
    ) -> None:
        self._one(warehouse, rollback_to(identifier, snapshot_id=snapshot_id, tag=tag))

    def expire_snapshots(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        *,
        retain_max: int | None = None,
        retain_min: int | None = None,
        older_than_ms: int | None = None,
        max_deletes: int | None = None,
    ) -> int:
        op = expire_snapshots(
            identifier,
            retain_max=retain_max,
            retain_min=retain_min,
            older_than_ms=older_than_ms,
            max_deletes=max_deletes,
        )
        return self._one(warehouse, op)

    def alter(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        changes: Sequence[SchemaChange],
    ) -> None:
        self._one(warehouse, alter(identifier, changes))

    def drop_table(self, warehouse: str | os.PathLike[str], identifier: str) -> None:
        self._one(warehouse, drop_table(identifier))

    def snapshot(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        *,
        snapshot_id: int | None = None,
    ) -> dict[str, Any] | None:
        return self._one(warehouse, snapshot(identifier, snapshot_id=snapshot_id))
