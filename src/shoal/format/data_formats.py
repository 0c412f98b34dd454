"""The data file formats shoal reads and writes (Parquet, ORC, Avro), by name.

A data file's format is the extension of its name (Paimon names data files
``data-<uuid>-<n>.<format>``), never the table's options: a table created before
Paimon 0.9 without ``file.format`` holds ORC files (then Paimon's default) while its
options name no format, and ``file.format.per.level`` mixes formats in one bucket.
Which format a new file is written in is the table's choice for the file's level
(:func:`format_for_level`).

Each format is a codec on streams the caller opens: it reads a file's columns into
shoal's Arrow types of the schema the file was written with, and writes Arrow rows
in Paimon's layout of the format (``format/parquet``, ``format/orc``,
``format/avro_rows``). Parquet files keep their bounds in the footer, from which the
statistics of a written file are taken; the other formats' bounds are computed from
the rows as they are written (``write/stats_collector``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pyarrow.parquet as pq

from shoal.errors import CorruptDataFileError, InvalidOptionError, SchemaMismatchError
from shoal.format import avro_rows, orc, parquet
from shoal.format import types as T
from shoal.format.avro import compiled, container

NAMES = ("parquet", "orc", "avro")


class FileWriter(Protocol):
    """Rows into one data file: ``close`` returns the Parquet footer when the format
    has one (the source of the file's bounds), else None."""

    def write(self, table: pa.Table) -> None: ...

    def close(self) -> pq.FileMetaData | None: ...


class DataFormat(Protocol):
    name: str

    def unstorable(self, fields: Sequence[T.DataField]) -> str | None:
        """Why files of this format cannot hold columns of ``fields`` (None: they can)."""
        ...

    def read(
        self, source: Any, schema: pa.Schema, columns: Sequence[str] | None, batch_rows: int
    ) -> Iterator[pa.RecordBatch]:
        """The rows of the file ``source`` holds, in batches of at most ``batch_rows``
        rows, with ``columns`` (all: None) in the types of ``schema``, the Arrow schema
        the file was written with (a primary-key table's: its file layout)."""
        ...

    def writer(self, sink: Any, schema: pa.Schema, compression: str) -> FileWriter:
        """A writer of rows of ``schema`` into ``sink``, compressed with
        ``file.compression``."""
        ...


def _unstorable(fields: Sequence[T.DataField], check: Any) -> str | None:
    for f in fields:
        reason = check(f.type)
        if reason is not None:
            return f"column {f.name!r}: {reason}"
    return None


def _columns(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    if columns is None:
        return schema
    return pa.schema([schema.field(c) for c in columns])


def _slices(table: pa.Table, batch_rows: int) -> Iterator[pa.RecordBatch]:
    for batch in table.to_batches(max_chunksize=batch_rows):
        if batch.num_rows:
            yield batch


# --- Parquet ---------------------------------------------------------------------------------


# Dictionary encoding pays when a column repeats its values: a column whose first rows
# are at least half distinct is written plain, as parquet-mr (Paimon's Java writer)
# falls back to plain when the dictionary does not make the column smaller. pyarrow
# keeps a dictionary up to 1 MiB whatever it saves, which for unique ids and measures
# doubles the time to encode and makes the file larger.
_DICTIONARY_SAMPLE = 8192


def dictionary_columns(table: pa.Table) -> bool | list[str]:
    """Which columns of ``table`` to write with dictionary encoding (True: all), judged
    from its first rows. Nested columns keep pyarrow's choice (every leaf)."""
    if table.num_rows == 0 or any(pa.types.is_nested(f.type) for f in table.schema):
        return True
    sample = table.slice(0, _DICTIONARY_SAMPLE)
    return [
        name
        for name, column in zip(sample.column_names, sample.columns, strict=True)
        if pc.count_distinct(column, mode="all").as_py() * 2 <= sample.num_rows
    ]


class _ParquetWriter:
    """The file is opened at the first rows, whose repetition decides the columns'
    encoding (:func:`dictionary_columns`)."""

    def __init__(self, sink: Any, schema: pa.Schema, compression: str) -> None:
        self._sink = sink
        self._compression = compression
        self._stored = parquet.stored_schema(schema)
        self._writer: pq.ParquetWriter | None = None

    def _open(self, dictionary: bool | list[str]) -> pq.ParquetWriter:
        return pq.ParquetWriter(
            self._sink,
            self._stored,
            compression=self._compression,
            use_dictionary=dictionary,
            **parquet.writer_options(self._stored),
        )

    def write(self, table: pa.Table) -> None:
        stored = parquet.to_stored(table, self._stored)
        if self._writer is None:
            self._writer = self._open(dictionary_columns(stored))
        self._writer.write_table(stored)

    def close(self) -> pq.FileMetaData | None:
        if self._writer is None:
            self._writer = self._open(True)
        self._writer.close()
        return self._writer.writer.metadata


class _Parquet:
    name = "parquet"

    def unstorable(self, fields: Sequence[T.DataField]) -> str | None:
        return None

    def read(
        self, source: Any, schema: pa.Schema, columns: Sequence[str] | None, batch_rows: int
    ) -> Iterator[pa.RecordBatch]:
        target = _columns(schema, columns)
        names = list(target.names)
        for batch in pq.ParquetFile(source).iter_batches(batch_size=batch_rows, columns=names):
            yield parquet.as_table_types(batch, target)

    def writer(self, sink: Any, schema: pa.Schema, compression: str) -> FileWriter:
        return _ParquetWriter(sink, schema, compression)


# --- ORC -------------------------------------------------------------------------------------

# Paimon's file.compression names ORC's codecs as its CompressionKind does.
_ORC_CODECS = {
    "none": "uncompressed",
    "uncompressed": "uncompressed",
    "zlib": "zlib",
    "snappy": "snappy",
    "lz4": "lz4",
    "zstd": "zstd",
}


class _OrcWriter:
    def __init__(self, sink: Any, schema: pa.Schema, compression: str) -> None:
        self._stored = orc.stored_schema(schema)
        self._writer = po.ORCWriter(sink, compression=_codec(_ORC_CODECS, compression, "ORC"))

    def write(self, table: pa.Table) -> None:
        self._writer.write(orc.to_stored(table, self._stored))

    def close(self) -> pq.FileMetaData | None:
        self._writer.close()
        return None


class _Orc:
    name = "orc"

    def unstorable(self, fields: Sequence[T.DataField]) -> str | None:
        return _unstorable(fields, orc.unstorable)

    def read(
        self, source: Any, schema: pa.Schema, columns: Sequence[str] | None, batch_rows: int
    ) -> Iterator[pa.RecordBatch]:
        target = _columns(schema, columns)
        names = list(target.names)
        file = po.ORCFile(source)
        present = set(file.schema.names)
        missing = [n for n in names if n not in present]
        if missing:
            raise CorruptDataFileError(f"an ORC data file lacks the columns {missing}")
        for stripe in range(file.nstripes):
            rows = pa.Table.from_batches([file.read_stripe(stripe, columns=names)])
            yield from _slices(orc.as_table_types(rows.select(names), target), batch_rows)

    def writer(self, sink: Any, schema: pa.Schema, compression: str) -> FileWriter:
        return _OrcWriter(sink, schema, compression)


# --- Avro ------------------------------------------------------------------------------------

# Paimon's file.compression names Avro's codecs (zstd is Avro's zstandard).
_AVRO_CODECS = {
    "none": "null",
    "uncompressed": "null",
    "null": "null",
    "deflate": "deflate",
    "snappy": "snappy",
    "zstd": "zstandard",
    "zstandard": "zstandard",
    "bzip2": "bzip2",
    "xz": "xz",
}
_AVRO_BLOCK_ROWS = 4096


class _AvroWriter:
    """Rows into an Avro container file, block by block as they come."""

    def __init__(self, sink: Any, schema: pa.Schema, compression: str) -> None:
        self._sink = sink
        self._stored = avro_rows.integer_schema(parquet.read_schema(schema))
        self._converts = [avro_rows.writer(f.type) for f in schema]
        self._names = schema.names
        parsed = fastavro.parse_schema(avro_rows.file_schema(schema))
        self._writer = fastavro.write.Writer(
            sink, parsed, codec=_codec(_AVRO_CODECS, compression, "Avro")
        )

    def write(self, table: pa.Table) -> None:
        try:
            stored = table.cast(parquet.read_schema(table.schema)).cast(self._stored)
        except pa.ArrowInvalid as exc:
            raise SchemaMismatchError(
                f"a value does not fit Paimon's stored form ({exc}); TIME values are kept "
                "to the millisecond"
            ) from None
        columns = []
        for column, convert in zip(stored.columns, self._converts, strict=True):
            values = column.to_pylist()
            columns.append(values if convert is None else [convert(v) for v in values])
        names = self._names
        for start in range(0, stored.num_rows, _AVRO_BLOCK_ROWS):
            end = min(start + _AVRO_BLOCK_ROWS, stored.num_rows)
            for i in range(start, end):
                self._writer.write({n: c[i] for n, c in zip(names, columns, strict=True)})
            self._writer.flush()

    def close(self) -> pq.FileMetaData | None:
        self._writer.flush()
        return None


class _Avro:
    name = "avro"

    def unstorable(self, fields: Sequence[T.DataField]) -> str | None:
        return _unstorable(fields, avro_rows.unstorable)

    def read(
        self, source: Any, schema: pa.Schema, columns: Sequence[str] | None, batch_rows: int
    ) -> Iterator[pa.RecordBatch]:
        target = _columns(schema, columns)
        stored = parquet.read_schema(target)
        converts = [avro_rows.reader(f.type) for f in target]
        records: list[dict[str, Any]] = []
        try:
            blocks = fastavro.block_reader(io.BytesIO(source.read()))
            decode = _avro_decoder(blocks.metadata.get("avro.schema", ""), target.names)
            for block in blocks:
                data = block.bytes_.getvalue()  # type: ignore[attr-defined]
                decoded = container.decode_block(decode, data, block.num_records)
                if any(r is None for r in decoded):
                    raise ValueError("a null row")
                records.extend(decoded)
                while len(records) >= batch_rows:
                    yield _avro_batch(records[:batch_rows], target, stored, converts)
                    records = records[batch_rows:]
        except (ValueError, EOFError, KeyError, TypeError) as exc:
            raise CorruptDataFileError(f"an Avro data file does not decode: {exc}") from None
        if records:
            yield _avro_batch(records, target, stored, converts)

    def writer(self, sink: Any, schema: pa.Schema, compression: str) -> FileWriter:
        return _AvroWriter(sink, schema, compression)


def _avro_decoder(text: str | bytes, names: list[str]) -> compiled.Decoder:
    """The decoder of a data file's records (its writer's ``schema``, logical types left
    out: values as stored) building the columns ``names``.

    Raises:
        CorruptDataFileError: the schema is no record holding those columns.
    """
    try:
        written = json.loads(text)
    except ValueError:
        written = None
    # Paimon writes the row type as it is nullable: the union of null and the record.
    record = written
    if isinstance(written, list):
        record = next((b for b in written if isinstance(b, dict)), None)
    if not isinstance(record, dict) or record.get("type") != "record":
        raise CorruptDataFileError("an Avro data file whose schema is no record")
    present = {f.get("name") for f in record.get("fields", ())}
    missing = [n for n in names if n not in present]
    if missing:
        raise CorruptDataFileError(f"an Avro data file lacks the columns {missing}")
    stripped = json.dumps(avro_rows.without_logical_types(written)).encode()
    decode = container.decoder(stripped, dict.fromkeys(names))
    if decode is None:
        raise CorruptDataFileError("an Avro data file with a schema shoal does not decode")
    return decode


def _avro_batch(
    records: list[dict[str, Any]], target: pa.Schema, stored: pa.Schema, converts: list[Any]
) -> pa.RecordBatch:
    arrays = []
    for field, stored_field, convert in zip(target, stored, converts, strict=True):
        values = [r[field.name] for r in records]
        if convert is not None:
            values = [convert(v) for v in values]
        arrays.append(pa.array(values, stored_field.type).cast(field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def _codec(codecs: dict[str, str], compression: str, what: str) -> str:
    codec = codecs.get(compression.strip().lower())
    if codec is None:
        raise InvalidOptionError(
            "file.compression",
            compression,
            f"{what} data files take one of {', '.join(sorted(codecs))}",
        )
    return codec


_FORMATS: dict[str, DataFormat] = {"parquet": _Parquet(), "orc": _Orc(), "avro": _Avro()}


def by_name(name: str) -> DataFormat:
    """The format ``name`` (``file.format``'s values shoal implements).

    Raises:
        KeyError: a name that is none of :data:`NAMES` (the options refuse them first).
    """
    return _FORMATS[name.strip().lower()]


def extensions() -> tuple[str, ...]:
    """The file name extensions of the formats shoal reads (lower case)."""
    return tuple(_FORMATS)


def format_of(file_name: str) -> DataFormat | None:
    """The format of a data file by its name's extension (None for one shoal does not
    read)."""
    _, dot, extension = file_name.rpartition(".")
    return _FORMATS.get(extension.lower()) if dot else None


def parse_per_level(value: str) -> dict[int, str]:
    """``file.format.per.level`` (``0:avro,5:parquet``) as format names by level.

    Raises:
        ValueError: a pair that is not ``<level>:<format>`` with a level >= 0.
    """
    out: dict[int, str] = {}
    for pair in value.split(","):
        if not pair.strip():
            continue
        level, colon, name = pair.partition(":")
        if not colon or not level.strip().isdigit() or not name.strip():
            raise ValueError(f"{pair.strip()!r} is not <level>:<format>")
        out[int(level)] = name.strip().lower()
    return out


def format_for_level(default: str, per_level: str, level: int) -> DataFormat:
    """The format a file written at ``level`` takes: ``file.format.per.level``'s for
    that level, else ``file.format``'s."""
    return by_name(parse_per_level(per_level).get(level, default))
