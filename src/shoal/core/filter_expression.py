"""Filters given as ``pyarrow.compute.Expression``, read into shoal's filter tree.

pyarrow shows an expression's structure only through its string form, which is not
unambiguous (``1`` is an int64 or a double literal; a field name may hold spaces).
So the string form is parsed into the calls it names, the calls are built again with
pyarrow and the result must be ``equals`` to the expression given; an expression that
cannot be confirmed so is refused, never guessed.

Accepted: comparisons of a column with a literal (``==``, ``!=``, ``<``, ``<=``,
``>``, ``>=``, either side), ``&``, ``|``, ``~``, ``is_null``, ``is_valid`` and
``isin`` over columns of strings, integers, floating point, decimals, booleans, dates
and timestamps. Each keeps pyarrow's meaning: ``isin`` is never null (a null row
matches only a null in the value set), so ``~c.isin([1])`` keeps the rows where ``c``
is null, which ``c not in (1)`` in SQL leaves out.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from shoal.core.filter_logic import And, Atom, Node, Not, Or
from shoal.errors import InvalidFilterError

# Each literal's possible Arrow types multiply; beyond this many rebuilds, refuse.
_MAX_REBUILDS = 1024
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_CONDITION_OP = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_COMPARE = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
_SET_TYPES = {
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "uint8": pa.uint8(), "uint16": pa.uint16(), "uint32": pa.uint32(),
    "uint64": pa.uint64(), "float": pa.float32(), "double": pa.float64(),
    "string": pa.string(), "large_string": pa.large_string(), "bool": pa.bool_(),
    "date32[day]": pa.date32(),
    **{f"timestamp[{unit}]": pa.timestamp(unit) for unit in ("s", "ms", "us", "ns")},
}  # fmt: skip
_TOKEN = re.compile(
    r"\s*(?:(?P<string>\"(?:[^\"\\]|\\.)*\")|(?P<op>==|!=|<=|>=|<|>)"
    r"|(?P<punct>[(),{}\[\]:=])|(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?Z?)"
    r"|(?P<word>[^\s(),{}\[\]:=\"<>!]+))"
)
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}


class _Refused(Exception):
    pass


def to_tree(expression: pc.Expression, schema: pa.Schema) -> Node:
    """``expression`` as a filter tree over ``schema``'s columns.

    Raises:
        InvalidFilterError: a form this module does not read, a column the table does
            not have, or a literal that is not of its column's kind.
    """
    text = str(expression)
    try:
        tokens = [(m.lastgroup or "", m.group(m.lastgroup or "")) for m in _TOKEN.finditer(text)]
        parser = _Parser(tokens, schema)
        call = parser.expression()
        if parser.pos != len(tokens):
            raise _Refused
    except _Refused:
        raise InvalidFilterError(
            f"cannot read the filter expression {text}: shoal reads comparisons of a "
            "column with a literal, &, |, ~, is_null, is_valid and isin; write it as "
            "text instead (e.g. \"id > 1 and dt = '2026-11-01'\")"
        ) from None
    literals = call.literals()
    choices = [lit.candidates for lit in literals]
    if any(not c for c in choices):
        raise _unconfirmed(text)
    # First every literal as Python's value makes it, then as its column's type; only
    # then, when few enough, each mix of the two.
    attempts: Iterable[tuple[pa.Scalar, ...]] = [
        tuple(c[0] for c in choices),
        tuple(c[1] if len(c) > 1 else c[0] for c in choices),
    ]
    if _product_size(choices) <= _MAX_REBUILDS:
        attempts = itertools.chain(attempts, itertools.product(*choices))
    for picked in attempts:
        for lit, scalar in zip(literals, picked, strict=True):
            lit.chosen = scalar
        if call.build().equals(expression):
            return call.node(schema)
    raise _unconfirmed(text)


def _unconfirmed(text: str) -> InvalidFilterError:
    return InvalidFilterError(
        f"cannot confirm how to read the filter expression {text} (a column name with "
        "spaces or punctuation, or a literal of a type shoal does not compare); write "
        "it as text or as (column, op, value) tuples"
    )


def _product_size(choices: list[list[pa.Scalar]]) -> int:
    size = 1
    for c in choices:
        size *= len(c)
    return size


class _Literal:
    def __init__(self, value: Any, candidates: list[pa.Scalar]) -> None:
        self.value = value
        self.candidates = candidates
        self.chosen: pa.Scalar | None = None


class _Call:
    """One parsed call: its pyarrow rebuild and its filter tree."""

    def __init__(self, kind: str, args: list[Any], extra: Any = None) -> None:
        self.kind, self.args, self.extra = kind, args, extra

    def literals(self) -> list[_Literal]:
        found: list[_Literal] = []
        for arg in self.args:
            if isinstance(arg, _Literal):
                found.append(arg)
            elif isinstance(arg, _Call):
                found.extend(arg.literals())
        return found

    def build(self) -> pc.Expression:
        a = self.args
        if self.kind in ("and", "or"):
            left, right = a[0].build(), a[1].build()
            return left & right if self.kind == "and" else left | right
        if self.kind == "invert":
            return ~a[0].build()
        if self.kind == "compare":
            sides = [pc.field(x) if isinstance(x, str) else pc.scalar(x.chosen) for x in a]
            return _COMPARE[self.extra](sides[0], sides[1])
        if self.kind == "is_null":
            if self.extra is None:
                return pc.is_null(pc.field(a[0]))
            return pc.field(a[0]).is_null(nan_is_null=self.extra)
        if self.kind == "is_valid":
            return pc.field(a[0]).is_valid()
        values, data_type, skip = self.extra
        return pc.is_in(pc.field(a[0]), value_set=pa.array(values, data_type), skip_nulls=skip)

    def node(self, schema: pa.Schema) -> Node:
        a = self.args
        if self.kind in ("and", "or"):
            children = (a[0].node(schema), a[1].node(schema))
            return And(children) if self.kind == "and" else Or(children)
        if self.kind == "invert":
            return Not(a[0].node(schema))
        if self.kind == "compare":
            op = self.extra if isinstance(a[0], str) else _FLIP[self.extra]
            column, lit = (a[0], a[1]) if isinstance(a[0], str) else (a[1], a[0])
            return Atom((column, _CONDITION_OP[op], _checked(lit.value, column, schema)))
        if self.kind == "is_null":
            if self.extra and pa.types.is_floating(schema.field(a[0]).type):
                raise InvalidFilterError(
                    f"is_null(nan_is_null=True) on {a[0]!r}: shoal's filters have no NaN "
                    "test; filter NaN with pyarrow after the read"
                )
            return Atom((a[0], "=", None))
        if self.kind == "is_valid":
            return Atom((a[0], "!=", None))
        values, _, skip = self.extra
        column = a[0]
        present = [_checked(v, column, schema) for v in values if v is not None]
        matches: Node = Atom((column, "in", present))
        if None in values and not skip:
            # pyarrow's MATCH: a null row matches the null of the value set.
            return (
                Or((matches, Atom((column, "=", None)))) if present else Atom((column, "=", None))
            )
        # A null row matches nothing: false, not unknown, so it survives a negation.
        return And((matches, Atom((column, "!=", None))))


def _checked(value: Any, column: str, schema: pa.Schema) -> Any:
    """``value`` if pyarrow compares it with the column as shoal's filter would."""
    data_type = schema.field(column).type
    ok = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "floating": isinstance(value, int | float) and not isinstance(value, bool),
        "decimal": isinstance(value, int | Decimal) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "date": isinstance(value, date) and not isinstance(value, datetime),
        "timestamp": isinstance(value, datetime),
    }.get(_kind(data_type), False)
    if not ok or (isinstance(value, float) and math.isnan(value)):
        raise InvalidFilterError(
            f"the filter expression compares column {column!r} ({data_type}) with "
            f"{value!r}; give a literal of the column's kind"
        )
    return value


def _kind(data_type: pa.DataType) -> str:
    checks = (
        ("string", pa.types.is_string(data_type) or pa.types.is_large_string(data_type)),
        ("integer", pa.types.is_integer(data_type)),
        ("floating", pa.types.is_floating(data_type)),
        ("decimal", pa.types.is_decimal(data_type)),
        ("boolean", pa.types.is_boolean(data_type)),
        ("date", pa.types.is_date(data_type)),
        ("timestamp", pa.types.is_timestamp(data_type)),
    )
    return next((name for name, hit in checks if hit), "other")


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], schema: pa.Schema) -> None:
        self.tokens, self.schema, self.pos = tokens, schema, 0

    def take(self, kind: str | None = None, text: str | None = None) -> str:
        if self.pos >= len(self.tokens):
            raise _Refused
        got_kind, got = self.tokens[self.pos]
        if (kind is not None and got_kind != kind) or (text is not None and got != text):
            raise _Refused
        self.pos += 1
        return got

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def expression(self) -> _Call:
        if self.peek() == "(":
            self.take()
            left = self.operand()
            op = self.take()
            right = self.operand()
            self.take("punct", ")")
            if op in ("and", "or") and isinstance(left, _Call) and isinstance(right, _Call):
                return _Call(op, [left, right])
            if op not in _COMPARE or isinstance(left, _Call) or isinstance(right, _Call):
                raise _Refused
            if isinstance(left, str) == isinstance(right, str):
                raise _Refused  # two columns or two literals
            column = left if isinstance(left, str) else right
            for side in (left, right):
                if isinstance(side, _Literal):
                    side.candidates = _candidates(side.value, self.schema.field(column).type)
            return _Call("compare", [left, right], op)
        name = self.take("word")
        self.take("punct", "(")
        if name == "invert":
            call = _Call("invert", [self.expression()])
        elif name in ("is_null", "is_valid"):
            column = self.column(self.take("word"))
            nan = None
            if name == "is_null" and self.peek() == ",":
                self.take()
                nan = self.option("nan_is_null", ("true", "false")) == "true"
                self.take("punct", "}")
            call = _Call(name, [column], nan)
        elif name == "is_in":
            column = self.column(self.take("word"))
            self.take("punct", ",")
            data_type = _SET_TYPES.get(self.option("value_set", None))
            if data_type is None:
                raise _Refused
            self.take("punct", ":")
            self.take("punct", "[")
            values = []
            while self.peek() != "]":
                item = self.take()
                values.append(None if item == "null" else self.value(item))
                if self.peek() == ",":
                    self.take()
            self.take("punct", "]")
            self.take("punct", ",")
            skip = self.option("null_matching_behavior", ("MATCH", "SKIP")) == "SKIP"
            self.take("punct", "}")
            call = _Call("is_in", [column], (values, data_type, skip))
        else:
            raise _Refused
        self.take("punct", ")")
        return call

    def option(self, key: str, allowed: tuple[str, ...] | None) -> str:
        if self.peek() == "{":
            self.take()
        self.take("word", key)
        self.take("punct", "=")
        if allowed is None:  # a type name such as date32[day]
            text = self.take("word")
            if self.peek() == "[":
                self.take()
                text += "[" + self.take("word") + "]"
                self.take("punct", "]")
            return text
        value = self.take("word")
        if value not in allowed:
            raise _Refused
        return value

    def operand(self) -> _Call | _Literal | str:
        kind, text = self.tokens[self.pos] if self.pos < len(self.tokens) else ("", "")
        if text == "(" or (
            kind == "word"
            and self.pos + 1 < len(self.tokens)
            and self.tokens[self.pos + 1][1] == "("
        ):
            return self.expression()
        self.pos += 1
        if kind == "word" and text in self.schema.names:
            return text
        return _Literal(self.value(text), [])

    def column(self, name: str) -> str:
        if name not in self.schema.names:
            raise InvalidFilterError(
                f"the filter expression names column {name!r}, which the table does not "
                f"have (columns: {', '.join(self.schema.names)})"
            )
        return name

    def value(self, text: str) -> Any:
        if text.startswith('"'):
            return _unescape(text[1:-1])
        if text in ("true", "false"):
            return text == "true"
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        if re.fullmatch(r"\d{4}-\d\d-\d\d", text):
            return date.fromisoformat(text)
        if re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?Z?", text):
            stamp = datetime.fromisoformat(text.rstrip("Z")[:26])
            return stamp.replace(tzinfo=UTC) if text.endswith("Z") else stamp
        try:
            return float(text) if "e" in text.lower() or "." in text else _raise()
        except ValueError:
            raise _Refused from None


def _raise() -> float:
    raise _Refused


def _unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        if body[i] == "\\":
            if i + 1 >= len(body) or body[i + 1] not in _ESCAPES:
                raise _Refused
            out.append(_ESCAPES[body[i + 1]])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def _candidates(value: Any, column_type: pa.DataType) -> list[pa.Scalar]:
    """The Arrow scalars whose string form ``value`` was read from."""
    found: list[pa.Scalar] = []
    options: list[Any] = [value]
    if isinstance(value, int) and not isinstance(value, bool):
        options += [float(value), Decimal(value)]
    if isinstance(value, float) and math.isfinite(value):
        options.append(Decimal(repr(value)))
    for option in options:
        for target in (None, column_type):
            try:
                scalar = pa.scalar(option, target)
            except (
                pa.ArrowInvalid,
                pa.ArrowTypeError,
                pa.ArrowNotImplementedError,
                TypeError,
                ValueError,
            ):
                continue
            if not any(scalar.equals(s) and scalar.type == s.type for s in found):
                found.append(scalar)
    return found
