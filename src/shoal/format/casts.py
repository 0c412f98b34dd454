"""Column type changes: which ones Paimon accepts, and how a value written under the
old type reads under the new one.

Paimon (0.9 and 1.0) accepts ``ALTER TABLE ... ALTER COLUMN c TYPE t`` when its explicit
casting rules allow the old type root to become the new one and one of its cast
executors converts such values (``can_cast``). A file written before the change keeps
the old type; readers convert its values as Paimon's cast executors do.

shoal reads a changed column exactly when the conversion is one whose values it
reproduces bit for bit (``reads_exactly``): integer widening, integer or float to a
wider floating type, a decimal to one that holds all its values, an integer to a
decimal that holds it, a boolean to a number or a string, an integer to a string
long enough, a string or bytes to a longer one, a timestamp to a finer one of the
same kind, a date to a timestamp. Other changes that Paimon accepts (narrowing,
parsing strings, float to decimal, time-zone conversions) are refused with
UnsupportedFeatureError naming them. ``exact_stat`` converts a statistic (min or max)
of the old type to the new one when the conversion keeps the order of values, so
files written before the change are still pruned exactly.
"""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa

from shoal.errors import UnsupportedFeatureError
from shoal.format import types as T

# Type families of Paimon's DataTypeRoot, by shoal's type roots.
_CHARACTER_STRING = frozenset({T.CHAR, T.VARCHAR})
_BINARY_STRING = frozenset({T.BINARY, T.VARBINARY})
_INTEGER_NUMERIC = frozenset({T.TINYINT, T.SMALLINT, T.INT, T.BIGINT})
_APPROXIMATE_NUMERIC = frozenset({T.FLOAT, T.DOUBLE})
_NUMERIC = _INTEGER_NUMERIC | _APPROXIMATE_NUMERIC | {T.DECIMAL}
_TIMESTAMP = frozenset({T.TIMESTAMP, T.TIMESTAMP_LTZ})
_DATETIME = _TIMESTAMP | {T.DATE, T.TIME}
_PREDEFINED = _CHARACTER_STRING | _BINARY_STRING | _NUMERIC | _DATETIME | {T.BOOLEAN}

# DataTypeCasts: the roots each root may be cast from, implicitly or explicitly
# (every root may be cast from itself). Constructed types (ARRAY, MAP, ROW) are cast
# to strings only, which no cast executor implements, so they are left out.
_CAST_FROM: dict[str, frozenset[str]] = {
    T.CHAR: _PREDEFINED,
    T.VARCHAR: _PREDEFINED,
    T.BOOLEAN: _CHARACTER_STRING | _INTEGER_NUMERIC | {T.BOOLEAN},
    T.BINARY: _CHARACTER_STRING | _BINARY_STRING,
    T.VARBINARY: _CHARACTER_STRING | _BINARY_STRING,
    T.DECIMAL: _NUMERIC | _CHARACTER_STRING | {T.BOOLEAN} | _TIMESTAMP,
    **{
        root: _NUMERIC | _CHARACTER_STRING | {T.BOOLEAN} | _TIMESTAMP
        for root in (*_INTEGER_NUMERIC, *_APPROXIMATE_NUMERIC)
    },
    T.DATE: _TIMESTAMP | _CHARACTER_STRING | {T.DATE},
    T.TIME: _TIMESTAMP | _CHARACTER_STRING | {T.TIME},
    T.TIMESTAMP: _DATETIME | _CHARACTER_STRING | _NUMERIC,
    T.TIMESTAMP_LTZ: _DATETIME | _CHARACTER_STRING | _NUMERIC,
}

# CastExecutors: the (source roots, target roots) pairs some cast executor converts.
_EXECUTORS: tuple[tuple[frozenset[str], frozenset[str]], ...] = (
    (frozenset({T.DECIMAL}), frozenset({T.DECIMAL})),
    (_INTEGER_NUMERIC | _APPROXIMATE_NUMERIC, frozenset({T.DECIMAL})),
    (frozenset({T.DECIMAL}), _INTEGER_NUMERIC | _APPROXIMATE_NUMERIC),
    (_INTEGER_NUMERIC | _APPROXIMATE_NUMERIC, _INTEGER_NUMERIC | _APPROXIMATE_NUMERIC),
    (_NUMERIC, _TIMESTAMP),
    (frozenset({T.BOOLEAN}), _NUMERIC),
    (_INTEGER_NUMERIC, frozenset({T.BOOLEAN})),
    (_NUMERIC, _CHARACTER_STRING),
    (frozenset({T.BOOLEAN}), _CHARACTER_STRING),
    (_TIMESTAMP, _CHARACTER_STRING),
    (frozenset({T.TIME}), _CHARACTER_STRING),
    (frozenset({T.DATE}), _CHARACTER_STRING),
    (_CHARACTER_STRING, _CHARACTER_STRING),
    (_CHARACTER_STRING, frozenset({T.BOOLEAN, T.DECIMAL, T.DATE, T.TIME})),
    (_CHARACTER_STRING, _INTEGER_NUMERIC | _APPROXIMATE_NUMERIC | _TIMESTAMP | _BINARY_STRING),
    (_TIMESTAMP, _TIMESTAMP | {T.DATE, T.TIME}),
    (frozenset({T.DATE, T.TIME}), _TIMESTAMP),
    (_TIMESTAMP, frozenset({T.INT, T.BIGINT})),
    (_BINARY_STRING, _BINARY_STRING | _CHARACTER_STRING),
)

# Integer roots by width, and the most characters and decimal digits their values take.
_INTEGER_RANK = {T.TINYINT: 0, T.SMALLINT: 1, T.INT: 2, T.BIGINT: 3}
_INTEGER_DIGITS = {T.TINYINT: 3, T.SMALLINT: 5, T.INT: 10, T.BIGINT: 19}
_INTEGER_TEXT = {T.TINYINT: 4, T.SMALLINT: 6, T.INT: 11, T.BIGINT: 20}
# Integers that a DOUBLE (FLOAT) holds exactly, so their statistics convert exactly.
_EXACT_IN_FLOAT = {T.FLOAT: (T.TINYINT, T.SMALLINT), T.DOUBLE: (T.TINYINT, T.SMALLINT, T.INT)}


def can_cast(old: T.DataType, new: T.DataType) -> bool:
    """Whether Paimon accepts changing a column of type ``old`` to ``new`` (nullability
    aside: that is a change of its own). Nested types (ARRAY, MAP, ROW) are never
    retyped as a whole; their atomic fields are, one by one."""
    if not isinstance(old, T.AtomicType) or not isinstance(new, T.AtomicType):
        return False
    if old.root not in _CAST_FROM[new.root]:
        return False
    return any(old.root in sources and new.root in targets for sources, targets in _EXECUTORS)


def same_type(old: T.DataType, new: T.DataType) -> bool:
    """Whether values of ``old`` are values of ``new`` as they are (nullability aside;
    nested fields must agree in id, name and type)."""
    return _nullable(old) == _nullable(new)


def _nullable(t: T.DataType) -> T.DataType:
    if isinstance(t, T.AtomicType):
        return t if t.nullable else T.AtomicType(t.root, True, t.precision, t.scale)
    if isinstance(t, T.ArrayType):
        return T.ArrayType(_nullable(t.element))
    if isinstance(t, T.MapType):
        return T.MapType(_nullable(t.key), _nullable(t.value))
    fields = tuple(T.DataField(f.id, f.name, _nullable(f.type)) for f in t.fields)
    return T.RowType(fields)


def reads_exactly(old: T.AtomicType, new: T.AtomicType) -> bool:
    """Whether shoal converts values of ``old`` to ``new`` exactly as Paimon's readers do."""
    if same_type(old, new):
        return True
    a, b = old.root, new.root
    if a in _INTEGER_RANK and b in _INTEGER_RANK:
        return _INTEGER_RANK[a] <= _INTEGER_RANK[b]
    if b in _APPROXIMATE_NUMERIC:
        return a in _INTEGER_NUMERIC or a == T.BOOLEAN or (a == T.FLOAT and b == T.DOUBLE)
    if b == T.DECIMAL:
        return _decimal_holds(old, new)
    if b == T.VARCHAR:
        return _text_fits(old, new)
    if a in _BINARY_STRING and b == T.VARBINARY:
        return _length(old) <= _length(new)
    if a == T.BOOLEAN and b in _INTEGER_NUMERIC:
        return True
    if a == b and a in _TIMESTAMP:
        return _length(old) <= _length(new)
    return a == T.DATE and b == T.TIMESTAMP


def _length(t: T.AtomicType) -> int:
    assert t.precision is not None
    return t.precision


def _decimal_holds(old: T.AtomicType, new: T.AtomicType) -> bool:
    """A DECIMAL ``new`` that holds every value of ``old`` without rounding."""
    assert new.precision is not None
    assert new.scale is not None
    integer_digits = new.precision - new.scale
    if old.root == T.DECIMAL:
        assert old.precision is not None
        assert old.scale is not None
        return new.scale >= old.scale and integer_digits >= old.precision - old.scale
    return old.root in _INTEGER_DIGITS and integer_digits >= _INTEGER_DIGITS[old.root]


def _text_fits(old: T.AtomicType, new: T.AtomicType) -> bool:
    """A VARCHAR ``new`` long enough for every value of ``old`` as text (no truncation)."""
    length = _length(new)
    if old.root in _CHARACTER_STRING:
        return _length(old) <= length
    if old.root in _INTEGER_TEXT:
        return _INTEGER_TEXT[old.root] <= length
    return old.root == T.BOOLEAN and length >= len("false")


def describe(old: T.DataType, new: T.DataType) -> str:
    return f"{_text(old)} to {_text(new)}"


def _text(t: T.DataType) -> str:
    return T.type_string(t) if isinstance(t, T.AtomicType) else str(T.type_to_json(t))


def require_readable(old: T.AtomicType, new: T.AtomicType, column: str) -> None:
    """Raises UnsupportedFeatureError unless ``reads_exactly(old, new)``."""
    if not reads_exactly(old, new):
        raise UnsupportedFeatureError(
            f"column {column!r} changed type from {describe(old, new)}; shoal does not "
            "read files written before that change yet; read the table with Paimon's own "
            "engines (Flink, Spark with the Paimon jar)",
            feature="column type change",
        )


def cast_array(array: pa.Array | pa.ChunkedArray, old: T.AtomicType, new: T.AtomicType) -> Any:
    """Values of ``old`` (an Arrow array of ``to_arrow(old)``) as values of ``new``.

    The caller has checked ``reads_exactly``. Integers convert to floating types by
    rounding to nearest, as Java's primitive conversions do; every other conversion
    here is exact."""
    target = T.to_arrow(new)
    if array.type == target:
        return array
    return array.cast(target, safe=new.root not in _APPROXIMATE_NUMERIC)


def keeps_order(old: T.AtomicType, new: T.AtomicType) -> bool:
    """Whether converting values of ``old`` to ``new`` is exact and keeps their order
    (keys stay sorted; a minimum stays the minimum)."""
    if same_type(old, new):
        return True
    if not reads_exactly(old, new):
        return False
    a, b = old.root, new.root
    if b in _APPROXIMATE_NUMERIC:
        return a == T.FLOAT or a in _EXACT_IN_FLOAT[b]
    if b == T.DECIMAL:
        return a != T.BOOLEAN
    if b == T.VARCHAR:
        return a in _CHARACTER_STRING
    return a in _INTEGER_RANK or a in _BINARY_STRING or a in _TIMESTAMP or a == T.DATE


def exact_stat(value: Any, old: T.AtomicType, new: T.AtomicType) -> tuple[bool, Any]:
    """A min or max statistic of ``old`` as a value of ``new``: ``(True, value)`` when
    the conversion keeps the order of values and converts this one exactly,
    ``(False, None)`` when the statistic says nothing under ``new``."""
    if value is None or same_type(old, new):
        return True, value
    if not keeps_order(old, new):
        return False, None
    b = new.root
    if b in _APPROXIMATE_NUMERIC:
        return True, float(value)
    if b == T.DECIMAL:
        return True, Decimal(value)
    if old.root == T.DATE:
        return True, datetime.datetime.combine(value, datetime.time())
    return True, value
