"""Filters written as text: ``"dt = '2026-11-01' and (id > 10 or note is null)"``.

The grammar, SQL's where it has one:

- a condition is ``column op value`` (``=``, ``==``, ``!=``, ``<>``, ``<``, ``<=``,
  ``>``, ``>=``), ``column [not] in (v, ...)``, ``column [not] between v and v``,
  ``column is null`` or ``column is not null``;
- conditions combine with ``not``, ``and`` and ``or`` (binding in that order, as in
  SQL) and parentheses;
- a column is a name (letters, digits, ``_``) or any name in backticks;
- a value is typed by its column: quotes (``'...'`` with ``''`` for a quote, or
  ``"..."``) are optional around strings, dates and times are ISO 8601
  (``2026-11-01``, ``'2026-11-01 10:00:00'``), booleans ``true``/``false``. ``null``
  is not a value: ``c = null`` is refused (write ``c is null``).

Comparisons follow SQL: a null satisfies none of them, so ``c != 1`` and
``c not in (1)`` leave out the rows where ``c`` is null. The result is the DNF that
:func:`shoal.core.predicate.parse_filter` takes (see :mod:`shoal.core.filter_logic`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa

from shoal.core.filter_logic import And, Atom, Condition, Node, Not, conjoin, disjoin, to_dnf
from shoal.errors import InvalidFilterError

_TOKEN = re.compile(
    r"\s*(?:(?P<quoted>'(?:[^']|'')*'|\"[^\"]*\")|(?P<column>`[^`]+`)"
    r"|(?P<op><=|>=|<>|!=|==|=|<|>)|(?P<punct>[(),])|(?P<word>[^\s(),'\"`=!<>]+))",
)
_KEYWORDS = {"and", "or", "not", "in", "is", "null", "between"}
_OPS = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_NAME = re.compile(r"[A-Za-z_]\w*")
_EXAMPLES = (
    'write e.g. "id > 10", "dt = \'2026-11-01\' and (v < 3 or note is null)", '
    '"status in (paid, shipped)" or "v between 1 and 5"'
)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # quoted, column, op, punct, word
    text: str

    def keyword(self, word: str) -> bool:
        return self.kind == "word" and self.text.lower() == word


def parse(text: str, schema: pa.Schema) -> list[list[Condition]]:
    """``text`` as OR-ed groups of AND-ed conditions over ``schema``'s columns.

    Raises:
        InvalidFilterError: text that is not such a filter, an unknown column, or a
            value that is not one of the column's type.
    """
    return to_dnf(parse_tree(text, schema), lambda c: pa.types.is_floating(schema.field(c).type))


def parse_tree(text: str, schema: pa.Schema) -> Node:
    """``text`` as a boolean tree of conditions. Raises InvalidFilterError."""
    parser = _Parser(text, schema)
    if not parser.tokens:
        raise InvalidFilterError(f"the filter {text!r} holds no condition")
    node = parser.disjunction()
    if parser.pos < len(parser.tokens):
        parser.fail(f"unexpected {parser.tokens[parser.pos].text!r}")
    return node


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise InvalidFilterError(
                f"cannot read the filter {text!r} at {text[pos:].strip()!r}; {_EXAMPLES}"
            )
        kind = match.lastgroup
        assert kind is not None
        tokens.append(_Token(kind, match.group(kind)))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, text: str, schema: pa.Schema) -> None:
        self.text = text
        self.schema = schema
        self.tokens = _tokens(text)
        self.pos = 0

    def fail(self, what: str) -> None:
        raise InvalidFilterError(f"cannot read the filter {self.text!r}: {what}; {_EXAMPLES}")

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.peek()
        if token is None:
            self.fail("it ends too early")
            raise AssertionError
        self.pos += 1
        return token

    def accept(self, word: str) -> bool:
        token = self.peek()
        if token is not None and (
            token.keyword(word) or (token.kind == "punct" and token.text == word)
        ):
            self.pos += 1
            return True
        return False

    def expect(self, word: str) -> None:
        if not self.accept(word):
            token = self.peek()
            self.fail(
                f"expected {word!r}" + (f" before {token.text!r}" if token else " at the end")
            )

    def disjunction(self) -> Node:
        nodes = [self.conjunction()]
        while self.accept("or"):
            nodes.append(self.conjunction())
        return disjoin(nodes)

    def conjunction(self) -> Node:
        nodes = [self.negation()]
        while self.accept("and"):
            nodes.append(self.negation())
        return conjoin(nodes)

    def negation(self) -> Node:
        if self.accept("not"):
            return Not(self.negation())
        if self.accept("("):
            node = self.disjunction()
            self.expect(")")
            return node
        return self.condition()

    def condition(self) -> Node:
        token = self.take()
        if token.kind == "column":
            column = token.text[1:-1]
        elif (
            token.kind == "word"
            and _NAME.fullmatch(token.text)
            and token.text.lower() not in _KEYWORDS
        ):
            column = token.text
        else:
            self.fail(f"expected a column name, not {token.text!r}")
        if column not in self.schema.names:
            raise InvalidFilterError(
                f"unknown column {column!r}; the table has {self.schema.names}"
            )
        data_type = self.schema.field(column).type
        if self.accept("is"):
            negated = self.accept("not")
            self.expect("null")
            return Atom((column, "!=" if negated else "=", None))
        negated = self.accept("not")
        if self.accept("in"):
            self.expect("(")
            values = [self.value(column, data_type)]
            while self.accept(","):
                values.append(self.value(column, data_type))
            self.expect(")")
            return Atom((column, "not in" if negated else "in", values))
        if self.accept("between"):
            low = self.value(column, data_type)
            self.expect("and")
            high = self.value(column, data_type)
            node: Node = And((Atom((column, ">=", low)), Atom((column, "<=", high))))
            return Not(node) if negated else node
        if negated:
            self.fail(f"expected 'in' or 'between' after '{column} not'")
        op = self.take()
        if op.kind != "op":
            self.fail(f"expected a comparison after {column!r}, not {op.text!r}")
        return Atom((column, _OPS[op.text], self.value(column, data_type)))

    def value(self, column: str, data_type: pa.DataType) -> Any:
        token = self.peek()
        if token is not None and token.kind == "quoted":
            self.pos += 1
            quote = token.text[0]
            raw = token.text[1:-1].replace(quote * 2, quote) if quote == "'" else token.text[1:-1]
            return _literal(raw, data_type, column)
        words: list[str] = []
        while (token := self.peek()) is not None and token.kind == "word":
            if token.text.lower() in ("and", "or") or (words and token.text.lower() in _KEYWORDS):
                break
            words.append(token.text)
            self.pos += 1
        if not words:
            self.fail(f"expected a value for {column!r}")
        raw = " ".join(words)
        if raw.lower() == "null":
            raise InvalidFilterError(
                f"null is not a value to compare {column!r} with (no row would match); "
                f"write '{column} is null' or '{column} is not null'"
            )
        return _literal(raw, data_type, column)


def _literal(raw: str, data_type: pa.DataType, column: str) -> Any:
    try:
        if pa.types.is_boolean(data_type):
            lowered = raw.lower()
            if lowered not in ("true", "false"):
                raise ValueError("expected true or false")
            return lowered == "true"
        if pa.types.is_timestamp(data_type):
            return pa.scalar(datetime.fromisoformat(raw)).cast(data_type).as_py()
        return pa.array([raw], pa.string()).cast(data_type).to_pylist()[0]
    except (ValueError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InvalidFilterError(
            f"{raw!r} is not a value of column {column!r} ({data_type}): {exc}"
        ) from None


def split_top_level(text: str, separator: re.Pattern[str]) -> list[str]:
    """Split on ``separator`` outside quotes and parentheses:
    ``a decimal(10, 2), b int``; ``x = 'a and b' and y = 1``."""
    outside = _outside(text)
    parts: list[str] = []
    start = 0
    for match in separator.finditer(text):
        if match.start() >= start and outside[match.start()] and outside[match.end() - 1]:
            parts.append(text[start : match.start()])
            start = match.end()
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _outside(text: str) -> list[bool]:
    """For each character: whether it stands outside quotes and parentheses."""
    flags: list[bool] = []
    depth, quote = 0, ""
    for char in text:
        if quote:
            flags.append(False)
            if char == quote:
                quote = ""
            continue
        if char in "'\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        flags.append(depth == 0 and not quote)
    return flags
