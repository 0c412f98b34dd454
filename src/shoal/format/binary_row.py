"""Paimon's BinaryRow: the byte form of partition values, keys and column statistics.

Layout (as Paimon writes it, so rows compare equal byte for byte with rows that
Paimon's own writers build from the same values):

* a serialized row starts with its arity as a 4-byte big-endian int;
* then the fixed part: a null bitset of ``((arity + 63 + 8) // 64) * 8`` bytes whose
  first byte is the row kind (0, insert) and whose bit ``i + 8`` marks field ``i``
  null, then one 8-byte little-endian slot per field;
* then the variable part, in 8-byte words. A string or binary value of at most 7
  bytes lives in its slot (top bit of the slot's last byte set, the next 7 bits the
  length); a longer one lives in the variable part and its slot holds
  ``offset << 32 | length``, offset counted from the row start. Decimals of
  precision above 18 always take 16 variable bytes; timestamps of precision above
  3 take 8 (their millis) and the slot holds ``offset << 32 | nano-of-milli``.

Python values: bool, int, float, ``Decimal``, str, bytes, ``date``, ``time``,
``datetime`` (naive for TIMESTAMP, UTC for TIMESTAMP WITH LOCAL TIME ZONE).
Nested types are never stored in a BinaryRow by Paimon's writers: shoal writes
them as null and reads them as None.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

from shoal.format import types as T

_EPOCH_DATE = date(1970, 1, 1)
_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=UTC)
_LONG = struct.Struct("<q")
_ARITY = struct.Struct(">i")

_FIXED_CODECS: dict[str, struct.Struct] = {
    T.BOOLEAN: struct.Struct("<?"),
    T.TINYINT: struct.Struct("<b"),
    T.SMALLINT: struct.Struct("<h"),
    T.INT: struct.Struct("<i"),
    T.BIGINT: _LONG,
    T.FLOAT: struct.Struct("<f"),
    T.DOUBLE: struct.Struct("<d"),
}


def bitset_width(arity: int) -> int:
    return ((arity + 63 + 8) // 64) * 8


def _word_round(n: int) -> int:
    return (n + 7) & ~7


def is_compact_decimal(precision: int) -> bool:
    return precision <= 18


def is_compact_timestamp(precision: int) -> bool:
    return precision <= 3


def date_to_days(value: date) -> int:
    return (value - _EPOCH_DATE).days


def datetime_to_millis_nanos(value: datetime) -> tuple[int, int]:
    """Epoch millis and nano-of-milli of a timestamp; a naive value counts as UTC."""
    delta = value - _EPOCH_UTC if value.tzinfo is not None else value - _EPOCH
    micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    millis, micro_rest = divmod(micros, 1000)
    return millis, micro_rest * 1000


def millis_to_datetime(millis: int, nanos: int = 0, *, utc: bool = False) -> datetime:
    base = _EPOCH_UTC if utc else _EPOCH
    return base + timedelta(milliseconds=millis, microseconds=nanos // 1000)


# Wide enough for DECIMAL(38, s) and its scaling; Python's default context keeps 28 digits.
_DECIMALS = Context(prec=80, rounding=ROUND_HALF_UP)


def decimal_unscaled(value: Decimal | int | float, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale``, rounding half up as Java does."""
    return int(Decimal(value).scaleb(scale, _DECIMALS).to_integral_value(context=_DECIMALS))


def _time_to_millis(value: time | int) -> int:
    if isinstance(value, int):
        return value
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def serialize(values: Sequence[Any], types: Sequence[T.DataType]) -> bytes:
    """The bytes Paimon stores for a row: the arity prefix, then the row."""
    return _ARITY.pack(len(values)) + encode_row(values, types)


def encode_row(values: Sequence[Any], types: Sequence[T.DataType]) -> bytes:
    """A row without the arity prefix (the bytes Paimon hashes for bucketing)."""
    arity = len(values)
    width = bitset_width(arity)
    fixed = bytearray(width + 8 * arity)
    var = bytearray()
    var_base = len(fixed)
    for i, (value, data_type) in enumerate(zip(values, types, strict=True)):
        slot = width + 8 * i
        if not isinstance(data_type, T.AtomicType):
            value = None  # nested values never go into a BinaryRow
        if value is None:
            fixed[(i + 8) >> 3] |= 1 << ((i + 8) & 7)
            if isinstance(data_type, T.AtomicType):
                _reserve_null_var(data_type, fixed, slot, var, var_base)
            continue
        _encode_value(value, data_type, fixed, slot, var, var_base)  # type: ignore[arg-type]
    return bytes(fixed + var)


def _reserve_null_var(
    t: T.AtomicType, fixed: bytearray, slot: int, var: bytearray, var_base: int
) -> None:
    # Paimon keeps the variable space of a non-compact decimal or timestamp even
    # when the value is null; doing the same keeps rows byte-identical.
    if t.root == T.DECIMAL and not is_compact_decimal(t.precision or 0):
        _LONG.pack_into(fixed, slot, (var_base + len(var)) << 32)
        var.extend(bytes(16))
    elif t.root in (T.TIMESTAMP, T.TIMESTAMP_LTZ) and not is_compact_timestamp(t.precision or 0):
        _LONG.pack_into(fixed, slot, (var_base + len(var)) << 32)
        var.extend(bytes(8))


def _encode_value(  # noqa: PLR0917 - the row under construction, passed flat for speed
    value: Any, t: T.AtomicType, fixed: bytearray, slot: int, var: bytearray, var_base: int
) -> None:
    root = t.root
    codec = _FIXED_CODECS.get(root)
    if codec is not None:
        codec.pack_into(fixed, slot, value)
    elif root == T.DATE:
        days = value if isinstance(value, int) else date_to_days(value)
        _FIXED_CODECS[T.INT].pack_into(fixed, slot, days)
    elif root == T.TIME:
        _FIXED_CODECS[T.INT].pack_into(fixed, slot, _time_to_millis(value))
    elif root in (T.VARCHAR, T.CHAR, T.BINARY, T.VARBINARY):
        data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        _put_var_bytes(data, fixed, slot, var, var_base)
    elif root == T.DECIMAL:
        assert t.precision is not None
        assert t.scale is not None
        unscaled = decimal_unscaled(value, t.scale)
        if is_compact_decimal(t.precision):
            _LONG.pack_into(fixed, slot, unscaled)
        else:
            data = _big_endian_twos_complement(unscaled)
            _LONG.pack_into(fixed, slot, ((var_base + len(var)) << 32) | len(data))
            var.extend(data.ljust(16, b"\0"))
    elif root in (T.TIMESTAMP, T.TIMESTAMP_LTZ):
        millis, nanos = datetime_to_millis_nanos(value)
        if is_compact_timestamp(t.precision or 0):
            _LONG.pack_into(fixed, slot, millis)
        else:
            _LONG.pack_into(fixed, slot, ((var_base + len(var)) << 32) | nanos)
            var.extend(_LONG.pack(millis))
    else:
        raise AssertionError(root)


def _put_var_bytes(data: bytes, fixed: bytearray, slot: int, var: bytearray, var_base: int) -> None:
    length = len(data)
    if length <= 7:
        fixed[slot : slot + length] = data
        fixed[slot + 7] = 0x80 | length
    else:
        _LONG.pack_into(fixed, slot, ((var_base + len(var)) << 32) | length)
        var.extend(data)
        var.extend(bytes(_word_round(length) - length))


def _big_endian_twos_complement(value: int) -> bytes:
    # Same bytes as java.math.BigInteger#toByteArray: minimal, with a sign bit.
    length = (value + (value < 0)).bit_length() // 8 + 1
    return value.to_bytes(length, "big", signed=True)


def arity_of(data: bytes) -> int:
    return int(_ARITY.unpack_from(data, 0)[0])


def deserialize(data: bytes, types: Sequence[T.DataType]) -> tuple[Any, ...]:
    """Values of a serialized row (arity prefix included).

    A row may hold fewer fields than ``types`` (statistics written before a column
    was added): the missing ones read as None. Raises ``ValueError`` on bytes that
    do not hold a row.
    """
    if len(data) < 4:
        raise ValueError("binary row shorter than its arity prefix")
    arity = arity_of(data)
    width = bitset_width(arity)
    if arity < 0 or len(data) < 4 + width + 8 * arity:
        raise ValueError(f"binary row of {len(data)} bytes cannot hold {arity} fields")
    row = memoryview(data)[4:]
    out: list[Any] = []
    try:
        for i, t in enumerate(types):
            is_null = i >= arity or row[(i + 8) >> 3] & (1 << ((i + 8) & 7))
            if is_null or not isinstance(t, T.AtomicType):
                out.append(None)
            else:
                out.append(_decode_value(row, width + 8 * i, t))
    except (OverflowError, IndexError, struct.error) as exc:  # a date or time out of range
        raise ValueError(f"binary row holds a value out of range: {exc}") from None
    return tuple(out)


def _decode_value(row: memoryview, slot: int, t: T.AtomicType) -> Any:
    root = t.root
    codec = _FIXED_CODECS.get(root)
    if codec is not None:
        return codec.unpack_from(row, slot)[0]
    if root == T.DATE:
        return _EPOCH_DATE + timedelta(days=_FIXED_CODECS[T.INT].unpack_from(row, slot)[0])
    if root == T.TIME:
        millis = _FIXED_CODECS[T.INT].unpack_from(row, slot)[0]
        return (datetime.min + timedelta(milliseconds=millis)).time()
    if root in (T.VARCHAR, T.CHAR, T.BINARY, T.VARBINARY):
        data = _var_bytes(row, slot)
        return data.decode("utf-8") if root in (T.VARCHAR, T.CHAR) else data
    word = _LONG.unpack_from(row, slot)[0]
    if root == T.DECIMAL:
        assert t.precision is not None
        assert t.scale is not None
        if is_compact_decimal(t.precision):
            unscaled = word
        else:
            offset, length = word >> 32, word & 0xFFFFFFFF
            if length > 16 or offset < 0 or offset + length > len(row):
                raise ValueError("decimal field points past the end of the row")
            unscaled = int.from_bytes(row[offset : offset + length], "big", signed=True)
        return Decimal(unscaled).scaleb(-t.scale, _DECIMALS)
    if root in (T.TIMESTAMP, T.TIMESTAMP_LTZ):
        utc = root == T.TIMESTAMP_LTZ
        if is_compact_timestamp(t.precision or 0):
            return millis_to_datetime(word, utc=utc)
        offset, nanos = word >> 32, word & 0xFFFFFFFF
        if offset < 0 or offset + 8 > len(row):
            raise ValueError("timestamp field points past the end of the row")
        return millis_to_datetime(_LONG.unpack_from(row, offset)[0], nanos, utc=utc)
    raise AssertionError(root)


def _var_bytes(row: memoryview, slot: int) -> bytes:
    mark = row[slot + 7]
    if mark & 0x80:
        return bytes(row[slot : slot + (mark & 0x7F)])
    word = _LONG.unpack_from(row, slot)[0]
    offset, length = word >> 32, word & 0xFFFFFFFF
    if offset < 0 or offset + length > len(row):
        raise ValueError("variable-length field points past the end of the row")
    return bytes(row[offset : offset + length])


EMPTY_ROW = serialize((), ())
