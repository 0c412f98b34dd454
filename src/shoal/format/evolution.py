"""Reading a data file written under an older schema as rows of the schema read.

Columns are matched by field id, at every level of nesting: a renamed column keeps
its data, a column added after the file was written reads as null, a dropped one is
not read, a reordered one lands in its place, a retyped one is converted as Paimon
converts it (``casts``). ``FieldMapping`` holds the match of one file schema to one
target schema; it is checked before anything is read (``check``), names the file's
columns a read needs (``source_names``), builds the target's columns from them
(``apply``) and the columns whose filters a Parquet scan of the file can apply
(``name_as_is``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from shoal.errors import UnsupportedFeatureError
from shoal.format import casts
from shoal.format import types as T

Fields = Sequence[T.DataField]


def same_fields(a: Fields, b: Fields) -> bool:
    """Whether two field lists are the same columns (ids, names, types): files of one
    are read as the other's without any mapping."""
    return len(a) == len(b) and all(
        x.id == y.id and x.name == y.name and x.type == y.type for x, y in zip(a, b, strict=True)
    )


@dataclass(frozen=True, slots=True)
class FieldMapping:
    """How the fields of a file's schema become the fields of the target schema."""

    file_fields: tuple[T.DataField, ...]
    target_fields: tuple[T.DataField, ...]

    @property
    def _by_id(self) -> dict[int, T.DataField]:
        return {f.id: f for f in self.file_fields}

    def source(self, target: T.DataField) -> T.DataField | None:
        """The file's field holding ``target`` (None: added after the file was written)."""
        return self._by_id.get(target.id)

    def check(self, what: str) -> None:
        """Raises UnsupportedFeatureError (naming ``what``, the file) unless every target
        field is read exactly from this file."""
        by_id = self._by_id
        for target in self.target_fields:
            source = by_id.get(target.id)
            if source is not None:
                _check_type(source.type, target.type, target.name, what)

    def source_names(self, target_names: Sequence[str]) -> list[str]:
        """The file's column names that hold the given target columns."""
        by_name = {f.name: f for f in self.target_fields}
        by_id = self._by_id
        out = []
        for name in target_names:
            source = by_id.get(by_name[name].id)
            if source is not None:
                out.append(source.name)
        return out

    def apply(self, table: pa.Table, target_names: Sequence[str]) -> pa.Table:
        """The target columns ``target_names`` built from ``table`` (which holds the
        file's columns under the file's names)."""
        by_name = {f.name: f for f in self.target_fields}
        by_id = self._by_id
        arrays, fields = [], []
        for name in target_names:
            target = by_name[name]
            source = by_id.get(target.id)
            arrow_type = T.to_arrow(target.type)
            if source is None:
                column: Any = pa.nulls(table.num_rows, arrow_type)
            else:
                column = convert(table.column(source.name), source.type, target.type)
            arrays.append(column)
            fields.append(pa.field(name, arrow_type, target.type.nullable))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))

    def name_as_is(self, target_name: str) -> str | None:
        """The file's name for a target column it holds with the same type (its values
        read as they are, so a filter on it can be applied to the file), else None."""
        target = next((f for f in self.target_fields if f.name == target_name), None)
        source = self._by_id.get(target.id) if target is not None else None
        if target is None or source is None or source.type != target.type:
            return None
        return source.name


def _check_type(old: T.DataType, new: T.DataType, column: str, what: str) -> None:
    if casts.same_type(old, new):
        return
    if isinstance(old, T.AtomicType) and isinstance(new, T.AtomicType):
        try:
            casts.require_readable(old, new, column)
        except UnsupportedFeatureError as exc:
            raise UnsupportedFeatureError(f"{exc} ({what})", feature=exc.feature) from None
        return
    if isinstance(old, T.RowType) and isinstance(new, T.RowType):
        nested = {f.id: f for f in old.fields}
        for f in new.fields:
            source = nested.get(f.id)
            if source is not None:
                _check_type(source.type, f.type, f"{column}.{f.name}", what)
        return
    if isinstance(old, T.ArrayType) and isinstance(new, T.ArrayType):
        _check_type(old.element, new.element, f"{column}.element", what)
        return
    if isinstance(old, T.MapType) and isinstance(new, T.MapType):
        _check_type(old.key, new.key, f"{column}.key", what)
        _check_type(old.value, new.value, f"{column}.value", what)
        return
    raise UnsupportedFeatureError(
        f"column {column!r} changed type from {casts.describe(old, new)}, which Paimon "
        f"does not read either ({what})",
        feature="column type change",
    )


def convert(column: pa.Array | pa.ChunkedArray, old: T.DataType, new: T.DataType) -> Any:
    """Values of ``old`` as values of ``new``, nested fields matched by id (the types
    passed ``FieldMapping.check``)."""
    if isinstance(column, pa.ChunkedArray):
        target = T.to_arrow(new)
        chunks = [_convert_array(c, old, new) for c in column.chunks]
        return pa.chunked_array(chunks, target)
    return _convert_array(column, old, new)


def _convert_array(array: pa.Array, old: T.DataType, new: T.DataType) -> pa.Array:
    target = T.to_arrow(new)
    if isinstance(old, T.AtomicType) and isinstance(new, T.AtomicType):
        if casts.same_type(old, new):
            return array if array.type == target else array.cast(target)
        return casts.cast_array(array, old, new)
    if casts.same_type(old, new) and array.type == target:
        return array
    mask = array.is_null() if array.null_count else None
    if isinstance(old, T.RowType) and isinstance(new, T.RowType):
        return _convert_struct(array, old, new, mask)
    offsets, start, length = _rebased_offsets(array)
    if isinstance(old, T.ArrayType) and isinstance(new, T.ArrayType):
        values = _convert_array(array.values.slice(start, length), old.element, new.element)
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    assert isinstance(old, T.MapType)
    assert isinstance(new, T.MapType)
    keys = _convert_array(array.keys.slice(start, length), old.key, new.key)
    items = _convert_array(array.items.slice(start, length), old.value, new.value)
    return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)


def _rebased_offsets(array: pa.Array) -> tuple[pa.Array, int, int]:
    """A list or map array's offsets counted from its first value, and the range of its
    child values it uses (a sliced array's offsets point into its parent's values)."""
    offsets = array.offsets
    start = offsets[0].as_py()
    length = offsets[-1].as_py() - start
    return pc.subtract(offsets, pa.scalar(start, offsets.type)), start, length


def _convert_struct(
    array: pa.StructArray, old: T.RowType, new: T.RowType, mask: pa.Array | None
) -> pa.Array:
    children = {f.id: (f, child) for f, child in zip(old.fields, array.flatten(), strict=True)}
    arrays = []
    for f in new.fields:
        found = children.get(f.id)
        if found is None:
            arrays.append(pa.nulls(len(array), T.to_arrow(f.type)))
        else:
            arrays.append(_convert_array(found[1], found[0].type, f.type))
    fields = [T.field_to_arrow(f) for f in new.fields]
    if not fields:
        return pa.array([{}] * len(array), pa.struct([]), mask=mask)
    return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask)
