"""Table schemas: ``schema/schema-<id>`` files.

Every version is kept forever: data files name the schema they were written with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from shoal.errors import CorruptMetadataError
from shoal.spec import jsonfmt
from shoal.spec import types as T

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
        try:
            data: Any = jsonfmt.loads(text)
            fields = T.parse_fields_json(path, data["fields"])
            schema = TableSchema(
                id=int(data["id"]),
                fields=fields,
                highest_field_id=int(data.get("highestFieldId", T.highest_field_id(fields))),
                partition_keys=tuple(data.get("partitionKeys") or ()),
                primary_keys=tuple(data.get("primaryKeys") or ()),
                options={str(k): str(v) for k, v in (data.get("options") or {}).items()},
                comment=data.get("comment"),
                time_millis=int(data.get("timeMillis") or 0),
                version=int(data.get("version", 1)),
            )
        except CorruptMetadataError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptMetadataError(path, f"not a schema file ({exc!r})") from None
        if schema.version <= 2:
            # Old schema versions imply options that were defaults when they were written.
            implied = {"file.format": "orc", **({"bucket": "1"} if schema.version == 1 else {})}
            schema = replace(schema, options={**implied, **schema.options})
        names = set(schema.field_names)
        for key in (*schema.partition_keys, *schema.primary_keys):
            if key not in names:
                raise CorruptMetadataError(path, f"key column {key!r} is not a field")
        return schema
