"""Partition values: typed tuples, their BinaryRow bytes, directory names and specs."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, time
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from shoal.core.paths import escape_path_name
from shoal.errors import InvalidArgumentError
from shoal.format import binary_row
from shoal.format import types as T
from shoal.format.schema import TableSchema

PartitionValues = tuple[Any, ...]


class PartitionCodec:
    """Turns a table's partition values into bytes, paths and dicts, and back."""

    def __init__(self, schema: TableSchema, default_name: str, *, legacy_name: bool = True) -> None:
        self.keys = tuple(schema.partition_keys)
        self.types: tuple[T.DataType, ...] = tuple(schema.partition_types())
        self.default_name = default_name
        self.legacy_name = legacy_name
        self._decode = lru_cache(maxsize=65536)(self._decode_uncached)
        self._path = lru_cache(maxsize=65536)(self._path_uncached)

    def to_bytes(self, values: PartitionValues) -> bytes:
        return binary_row.serialize(values, self.types)

    def decode(self, data: bytes) -> PartitionValues:
        return self._decode(data)

    def _decode_uncached(self, data: bytes) -> PartitionValues:
        return binary_row.deserialize(data, self.types)

    def path(self, data: bytes) -> str:
        """``k1=v1/k2=v2`` for a partition's bytes ("" for an unpartitioned table)."""
        return self._path(data)

    def _path_uncached(self, data: bytes) -> str:
        values = self.decode(data)
        return "/".join(
            f"{escape_path_name(k)}={escape_path_name(self.value_string(v))}"
            for k, v in zip(self.keys, values, strict=True)
        )

    def value_string(self, value: Any) -> str:
        """A partition value as its directory name spells it.

        Paimon's default (``partition.legacy-name`` = true) prints the value's internal
        form: a DATE as its day number, a TIMESTAMP as Java's ``LocalDateTime``
        string. Other Paimon writers agree on these names, so shoal does the same.
        """
        if value is None or (isinstance(value, str) and value.strip() == ""):
            return self.default_name
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, datetime):
            naive = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
            return _java_local_date_time(naive) if self.legacy_name else str(naive)
        if isinstance(value, date):
            return str(binary_row.date_to_days(value)) if self.legacy_name else value.isoformat()
        if isinstance(value, time) and self.legacy_name:
            return str(
                (value.hour * 3600 + value.minute * 60 + value.second) * 1000
                + value.microsecond // 1000
            )
        return str(value)

    def to_dict(self, data: bytes) -> dict[str, Any]:
        return dict(zip(self.keys, self.decode(data), strict=True))

    def spec_values(self, spec: Mapping[str, Any], *, complete: bool) -> dict[str, Any]:
        """A user's partition spec with each value converted to its column's type.

        Raises:
            InvalidArgumentError: unknown keys, a missing key when ``complete``, or a
                value that does not convert.
        """
        unknown = set(spec) - set(self.keys)
        if unknown:
            raise InvalidArgumentError(
                f"partition spec names {sorted(unknown)}, which are not partition keys "
                f"(the partition keys are {list(self.keys)})"
            )
        if complete and set(spec) != set(self.keys):
            raise InvalidArgumentError(
                f"partition spec {dict(spec)} must give every partition key {list(self.keys)}"
            )
        out = {}
        for key, data_type in zip(self.keys, self.types, strict=True):
            if key in spec:
                value = spec[key]
                out[key] = (
                    None if value == self.default_name else coerce_value(value, data_type, key)
                )
        return out


def coerce_value(value: Any, data_type: T.DataType, column: str) -> Any:
    """A user-given literal as the Python value BinaryRow holds for ``data_type``.

    Strings are parsed for non-string columns, so ``{"dt": "2026-11-01"}`` names a
    DATE partition; the default partition name stands for null.
    """
    if value is None or not isinstance(data_type, T.AtomicType):
        return value
    root = data_type.root
    try:
        if root in (T.VARCHAR, T.CHAR):
            return value if isinstance(value, str) else str(value)
        if root == T.BOOLEAN:
            if isinstance(value, str):
                if value.lower() not in ("true", "false"):
                    raise ValueError(value)
                return value.lower() == "true"
            return bool(value)
        if root in (T.TINYINT, T.SMALLINT, T.INT, T.BIGINT):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if root in (T.FLOAT, T.DOUBLE):
            return float(value)
        if root == T.DECIMAL:
            return Decimal(str(value))
        if root == T.DATE:
            if isinstance(value, datetime):
                return value.date()
            return value if isinstance(value, date) else date.fromisoformat(str(value))
        if root in (T.TIMESTAMP, T.TIMESTAMP_LTZ):
            if hasattr(value, "to_pydatetime"):
                value = value.to_pydatetime()
            if isinstance(value, datetime):
                return value
            if isinstance(value, date):
                return datetime(value.year, value.month, value.day)
            return datetime.fromisoformat(str(value))
        if root in (T.BINARY, T.VARBINARY):
            return value.encode() if isinstance(value, str) else bytes(value)
    except (ValueError, TypeError, InvalidOperation):
        raise InvalidArgumentError(
            f"value {value!r} for column {column!r} is not a {T.type_string(data_type)}"
        ) from None
    return value


def _java_local_date_time(value: datetime) -> str:
    """``java.time.LocalDateTime#toString``: seconds and fractions only when non-zero."""
    text = value.strftime("%Y-%m-%dT%H:%M")
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
    if value.microsecond:
        micros = f"{value.microsecond:06d}"
        text += "." + (micros[:3] if micros.endswith("000") else micros)
    return text
