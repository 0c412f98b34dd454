"""Table schemas: ``schema/schema-<id>`` files.

Every version is kept forever: data files name the schema they were written with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from shoal.errors import CorruptMetadataError
from shoal.format import jsonfmt
from shoal.format import types as T
from shoal.format.jsonfmt import is_long, load_json_object

SCHEMA_VERSION = 3


@dataclass(frozen=True, slots=True)
class TableSchema:
    id: int
    fields: tuple[T.DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0
    version: int = SCHEMA_VERSION

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> T.DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def arrow_schema(self) -> pa.Schema:
        return T.fields_to_arrow_schema(self.fields)

    def partition_fields(self) -> list[T.DataField]:
        return [self.field(k) for k in self.partition_keys]

    def partition_types(self) -> list[T.DataType]:
        return [f.type for f in self.partition_fields()]

    def to_json(self) -> str:
        data: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [T.field_to_json(f) for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        if self.comment is not None:  # Paimon omits a null comment
            data["comment"] = self.comment
        data["timeMillis"] = self.time_millis
        return jsonfmt.dumps(data)

    @staticmethod
    def from_json(text: str | bytes, path: str) -> TableSchema:
        """Parse a schema file. Raises CorruptMetadataError naming ``path`` for anything
        that is not a schema this version of the format describes."""
        data = load_json_object(text, path)
        try:
            fields = T.parse_fields_json(path, data["fields"])
            schema = TableSchema(
                id=_long(data, "id", None),
                fields=fields,
                highest_field_id=_long(data, "highestFieldId", T.highest_field_id(fields)),
                partition_keys=_names(data, "partitionKeys"),
                primary_keys=_names(data, "primaryKeys"),
                options=_options(data.get("options")),
                comment=_optional_str(data.get("comment"), "comment"),
                time_millis=_long(data, "timeMillis", 0),
                version=_long(data, "version", 1),
            )
        except CorruptMetadataError:
            raise
        except KeyError as exc:
            raise CorruptMetadataError(path, f"required field {exc} is missing") from None
        except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as exc:
            raise CorruptMetadataError(path, f"not a schema file ({exc})") from None
        if not 1 <= schema.version <= SCHEMA_VERSION:
            raise CorruptMetadataError(
                path,
                f"schema format version {schema.version} is not one shoal reads "
                f"(1..{SCHEMA_VERSION}); a newer version comes from a newer Paimon, which "
                "must read this table",
            )
        if schema.version <= 2:
            # Old schema versions imply options that were defaults when they were written.
            implied = {"file.format": "orc", **({"bucket": "1"} if schema.version == 1 else {})}
            schema = replace(schema, options={**implied, **schema.options})
        names = schema.field_names
        if len(set(names)) != len(names):
            raise CorruptMetadataError(path, f"field names repeat: {names}")
        for key in (*schema.partition_keys, *schema.primary_keys):
            if key not in names:
                raise CorruptMetadataError(path, f"key column {key!r} is not a field")
        return schema


def _long(data: dict[str, Any], key: str, default: int | None) -> int:
    """An integer member (``default`` when absent or null; required when None)."""
    value = data.get(key)
    if value is None:
        if default is None:
            raise KeyError(key)
        return default
    if not is_long(value):
        raise ValueError(f"field {key!r} is not a 64-bit integer: {value!r}")
    return int(value)


def _names(data: dict[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"field {key!r} is not a list of column names")
    return tuple(value)


def _options(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or any(isinstance(v, dict | list) for v in value.values()):
        raise ValueError("field 'options' is not a map of strings")
    # Values are strings in Paimon's files; a number or flag written bare reads as its text.
    return {str(k): str(v) for k, v in value.items()}


def _optional_str(value: Any, key: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"field {key!r} is not a string")
    return value
