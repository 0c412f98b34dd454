"""Avro records decoded into columns by compiled code: the few fields a caller names,
as integers, for millions of records at a time.

A writer's schema is turned into a small program (:func:`program`) that a
numba-compiled loop (:func:`decode`) runs once per record: every byte of every record
is walked as the schema says, and the named fields land in an ``int64`` table, one
row per column (a column holds a value per record):

- columns 0 and 1: where the record starts and ends in the block buffer;
- an ``int``/``long`` field: its value;
- a ``bytes``/``string`` field: two columns, the start of its bytes and their length;
- an ``array``: its number of items;
- a union: the number of the branch written (``present``: 0 for its ``null`` branch,
  1 for the other).

Nothing is built per record, so the loop runs without the interpreter (and without
its lock: two threads decode two manifests at once). A record that does not decode as
its schema says (a length past the block, a branch that does not exist, bytes left
over) makes :func:`decode` return None; the caller then reads the file the ordinary
way, which says what is wrong with it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numba
import numpy as np

from shoal.format.avro.compiled import UnsupportedSchemaError

# What a wanted field's columns hold (see the module's docstring).
Want = Literal["value", "span", "count", "present"]

# The program: rows of (operation, a, b).
_LONG = 0  # a varint: a = column or -1
_BYTES = 1  # a length and as many bytes: a = column of the start (and a + 1 the length) or -1
_FIXED = 2  # a bytes: a = how many
_UNION = 3  # a = column or -1, b = branches; the next b rows are _BRANCH rows
_BRANCH = 4  # a = where the branch's code starts, b = the value stored for it
_JUMP = 5  # a = where to go on
_ARRAY = 6  # a = column or -1, b = the row after its _END
_END = 7  # a = column or -1, b = where the items' code starts
_MAX_DEPTH = 16  # arrays within arrays

RECORD_START = 0
RECORD_END = 1


class _Compiler:
    def __init__(self, wanted: Mapping[tuple[str, ...], Want]) -> None:
        self.rows: list[list[int]] = []
        self.wanted = wanted
        self.columns: dict[tuple[str, ...], int] = {}
        self.next_column = 2
        self.names: dict[str, Any] = {}
        self.active: set[str] = set()  # the records being compiled, outermost first

    def column(self, path: tuple[str, ...], want: Want) -> int:
        index = self.next_column
        self.columns[path] = index
        self.next_column += 2 if want == "span" else 1
        return index

    def emit(self, op: int, a: int = 0, b: int = 0) -> int:
        self.rows.append([op, a, b])
        return len(self.rows) - 1

    def value(self, schema: Any, path: tuple[str, ...]) -> None:
        want = self.wanted.get(path)
        if isinstance(schema, str) and schema in self.names:
            schema = self.names[schema]
        if isinstance(schema, list):
            self.union(schema, path, want)
            return
        kind = schema["type"] if isinstance(schema, dict) else schema
        if isinstance(kind, (dict, list)):
            self.value(kind, path)
            return
        if kind == "record":
            self.record(schema, path, want)
        elif kind in ("int", "long"):
            self.check(want, "value", path)
            self.emit(_LONG, -1 if want is None else self.column(path, "value"))
        elif kind in ("bytes", "string"):
            self.check(want, "span", path)
            self.emit(_BYTES, -1 if want is None else self.column(path, "span"))
        elif kind in ("boolean", "float", "double", "fixed", "null"):
            self.check(want, None, path)
            size = {"boolean": 1, "float": 4, "double": 8, "null": 0}.get(kind)
            self.emit(_FIXED, int(schema["size"]) if size is None else size)
        elif kind in ("array", "map"):
            self.check(want, "count", path)
            items = schema["values"] if kind == "map" else schema["items"]
            if kind == "array" and self.min_size(items) == 0:
                raise UnsupportedSchemaError(f"field {'.'.join(path)} holds items of no bytes")
            start = self.emit(_ARRAY, -1 if want is None else self.column(path, "count"))
            if kind == "map":
                self.emit(_BYTES, -1)
                self.value(schema["values"], (*path, "[]"))
            else:
                self.value(schema["items"], (*path, "[]"))
            self.emit(_END, self.rows[start][1], start + 1)
            self.rows[start][2] = len(self.rows)
        elif kind == "enum":
            self.check(want, None, path)
            self.emit(_LONG, -1)
        else:
            raise UnsupportedSchemaError(f"Avro type {kind!r}")

    def min_size(self, schema: Any) -> int:
        """The fewest bytes a value of ``schema`` takes."""
        if isinstance(schema, str) and schema in self.names:
            schema = self.names[schema]
        if isinstance(schema, list):
            return 1
        kind = schema["type"] if isinstance(schema, dict) else schema
        if isinstance(kind, (dict, list)):
            return self.min_size(kind)
        if kind == "record":
            return sum(self.min_size(f["type"]) for f in schema["fields"])
        if kind == "fixed":
            return int(schema["size"])
        return 0 if kind == "null" else 1

    def record(self, schema: dict[str, Any], path: tuple[str, ...], want: Want | None) -> None:
        self.check(want, None, path)
        name = schema.get("name")
        if name in self.active:
            raise UnsupportedSchemaError(f"record {name!r} holds itself")
        if name:
            self.names.setdefault(name, schema)
            self.active.add(name)
        for field in schema["fields"]:
            self.value(field["type"], (*path, field["name"]))
        self.active.discard(name)

    def union(self, branches: list[Any], path: tuple[str, ...], want: Want | None) -> None:
        if want not in (None, "present"):
            raise UnsupportedSchemaError(f"field {'.'.join(path)} is a union")
        if want == "present" and (len(branches) != 2 or "null" not in branches):
            raise UnsupportedSchemaError(f"field {'.'.join(path)} is not a nullable value")
        column = -1 if want is None else self.column(path, "present")
        self.emit(_UNION, column, len(branches))
        table = [self.emit(_BRANCH, 0, int(b != "null")) for b in branches]
        jumps = []
        for row, branch in zip(table, branches, strict=True):
            self.rows[row][1] = len(self.rows)
            self.value(branch, (*path, "|"))
            jumps.append(self.emit(_JUMP))
        for row in jumps:
            self.rows[row][1] = len(self.rows)

    @staticmethod
    def check(want: Want | None, expected: Want | None, path: tuple[str, ...]) -> None:
        if want is not None and want != expected:
            raise UnsupportedSchemaError(f"field {'.'.join(path)} is not of the kind {want}")


class Program:
    """A writer's schema compiled for :func:`decode`: ``columns`` maps each wanted field
    that the schema holds to its column."""

    __slots__ = ("code", "columns", "width")

    def __init__(self, code: np.ndarray, columns: dict[tuple[str, ...], int], width: int) -> None:
        self.code = code
        self.columns = columns
        self.width = width


_PROGRAMS: dict[tuple[bytes, int], Program | None] = {}
_LOCK = threading.Lock()


def program(
    schema: Mapping[str, Any], text: bytes, wanted: Mapping[tuple[str, ...], Want]
) -> Program | None:
    """The program decoding records of ``schema`` (its JSON ``text`` keys the cache) into
    the columns of ``wanted`` (a module constant: it is cached by identity); None when
    the schema holds a wanted field as another kind, or a type this decoder does not
    walk (the caller then reads the file the ordinary way)."""
    key = (text, id(wanted))
    with _LOCK:
        if key in _PROGRAMS:
            return _PROGRAMS[key]
    compiler = _Compiler(wanted)
    found: Program | None
    try:
        compiler.value(dict(schema), ())
        found = Program(
            np.array(compiler.rows, dtype=np.int64).reshape(-1, 3),
            compiler.columns,
            compiler.next_column,
        )
    except (UnsupportedSchemaError, KeyError, TypeError, ValueError):
        found = None
    with _LOCK:
        if len(_PROGRAMS) >= 256:
            _PROGRAMS.clear()
        _PROGRAMS[key] = found
    return found


def decode(
    buffer: np.ndarray, blocks: Sequence[tuple[int, int, int]], prog: Program
) -> np.ndarray | None:
    """The wanted columns of every record of ``blocks`` (start, end, record count) of
    ``buffer`` (uint8): one row per column, one value in it per record. None when a
    block does not decode as the schema says, to its last byte."""
    total = sum(count for _, _, count in blocks)
    out = np.zeros((prog.width, total), dtype=np.int64)
    spans = np.array(blocks, dtype=np.int64).reshape(-1, 3)
    ok = _decode(buffer, spans, prog.code, out)
    return out if ok else None


@numba.njit(nogil=True, cache=True, inline="always")
def _varint(buffer: np.ndarray, pos: int, end: int) -> tuple[int, int]:
    """A zig-zag varint at ``pos``: (value, position after it); position -1 when it runs
    past ``end`` or over 10 bytes."""
    result = np.uint64(0)
    shift = np.uint64(0)
    while True:
        if pos >= end or shift > np.uint64(63):
            return 0, -1
        byte = np.uint64(buffer[pos])
        pos += 1
        result |= (byte & np.uint64(0x7F)) << shift
        if byte < np.uint64(0x80):
            break
        shift += np.uint64(7)
    # zig-zag, on the unsigned bits: the value's magnitude, then its sign
    magnitude = np.int64(result >> np.uint64(1))
    return int(magnitude ^ -np.int64(result & np.uint64(1))), pos


@numba.njit(nogil=True, cache=True)
def _decode(buffer: np.ndarray, blocks: np.ndarray, code: np.ndarray, out: np.ndarray) -> bool:
    stack = np.zeros((_MAX_DEPTH, 2), dtype=np.int64)  # items left in the block, items seen
    size = code.shape[0]
    row = 0
    for block in range(blocks.shape[0]):
        pos = blocks[block, 0]
        end = blocks[block, 1]
        for _ in range(blocks[block, 2]):
            out[0, row] = pos
            pc = 0
            depth = 0
            while pc < size:
                op = code[pc, 0]
                a = code[pc, 1]
                if op == _LONG:
                    value, pos = _varint(buffer, pos, end)
                    if pos < 0:
                        return False
                    if a >= 0:
                        out[a, row] = value
                    pc += 1
                elif op == _BYTES:
                    length, pos = _varint(buffer, pos, end)
                    if pos < 0 or length < 0 or length > end - pos:
                        return False
                    if a >= 0:
                        out[a, row] = pos
                        out[a + 1, row] = length
                    pos += length
                    pc += 1
                elif op == _FIXED:
                    if a > end - pos:
                        return False
                    pos += a
                    pc += 1
                elif op == _UNION:
                    branch, pos = _varint(buffer, pos, end)
                    if pos < 0 or branch < 0 or branch >= code[pc, 2]:
                        return False
                    chosen = pc + 1 + branch
                    if a >= 0:
                        out[a, row] = code[chosen, 2]
                    pc = code[chosen, 1]
                elif op == _JUMP:
                    pc = a
                elif op in (_ARRAY, _END):
                    if op == _END:
                        stack[depth - 1, 0] -= 1
                        if stack[depth - 1, 0] > 0:
                            pc = code[pc, 2]
                            continue
                    count, pos = _varint(buffer, pos, end)
                    if pos < 0:
                        return False
                    if count < 0:  # a block of -count items, its size in bytes follows
                        count = -count
                        _, pos = _varint(buffer, pos, end)
                        if pos < 0:
                            return False
                    if count > end - pos:  # every item takes a byte at least
                        return False
                    if op == _ARRAY:
                        if count == 0:
                            if a >= 0:
                                out[a, row] = 0
                            pc = code[pc, 2]
                            continue
                        if depth == _MAX_DEPTH:
                            return False
                        stack[depth, 0] = count
                        stack[depth, 1] = count
                        depth += 1
                        pc += 1
                    elif count == 0:
                        depth -= 1
                        if a >= 0:
                            out[a, row] = stack[depth, 1]
                        pc += 1
                    else:
                        stack[depth - 1, 0] = count
                        stack[depth - 1, 1] += count
                        pc = code[pc, 2]
                else:
                    return False
            out[1, row] = pos
            row += 1
        if pos != end:
            return False
    return True


def _warm() -> None:
    """Load the loop for the types :func:`decode` calls it with (from numba's cache once
    it has compiled it), so that no plan waits for it."""
    prog = program({"type": "long"}, b"<warm-up>", {(): "value"})
    assert prog is not None
    decode(np.frombuffer(b"\x02", dtype=np.uint8), [(0, 1, 1)], prog)


_warm()
