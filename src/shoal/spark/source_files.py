"""Source files read for an ingest, with no value turned into a null unnoticed.

CSV and JSON are parsed with the table's schema, Parquet columns are cast to it. Where
Spark cannot read a value as its column's type it makes a null: text that does not
parse (Spark's PERMISSIVE mode), a number that its cast cannot hold. :func:`read_source`
reads in one of two parse modes:

- ``failfast`` (the default): the first such value fails the Spark job that consumes
  the rows, so nothing is committed. CSV and JSON are read in Spark's FAILFAST mode; a
  Parquet value lost in its cast raises in the task (``raise_error``).
  :meth:`SourceRead.checked` turns the failure into an :class:`InvalidInputDataError`
  naming the file, the record and the column, found by a second, permissive read of
  the source: Spark's own error names the file and the record, but for CSV not the
  column.
- ``permissive``: such values become nulls, counted per column by the job that writes
  the rows (an observation): for CSV and JSON, the values of the records Spark reports
  as malformed (its corrupt-record column) that are null after parsing and not before;
  for Parquet, the values that are null after the cast and not before.

In both modes a null in a NOT NULL column fails the job; the error counts the rows.
The cast is ``try_cast``, so the result does not depend on ``spark.sql.ansi.enabled``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from pyspark import SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as S

from shoal.errors import InvalidArgumentError, InvalidInputDataError, NotNullViolationError

logger = logging.getLogger(__name__)

SourceFormat = Literal["parquet", "json", "csv"]
ParseMode = Literal["failfast", "permissive"]

# The column Spark fills with the text of a record it could not parse (permissive reads).
_CORRUPT = "_shoal_corrupt_record"
# How the messages of this module's raise_error guards begin, to tell them from others.
_GUARD = "shoal ingest:"
_SHOWN = 200  # characters of a record or value quoted in a message
_FILE = "_shoal_file"
_AT = "_shoal_position"


@dataclass(frozen=True, slots=True)
class NulledValues:
    """What a permissive read turned into nulls."""

    columns: dict[str, int]
    """Values that could not be read as their column's type, per column (only columns
    that had any)."""
    malformed_records: int
    """CSV and JSON records Spark reported as malformed (a value that does not parse,
    a CSV line with too few or too many fields, a JSON line that is not JSON)."""


@dataclass(frozen=True, slots=True, eq=False)
class _Column:
    """One table column as read from the source."""

    name: str
    type: S.DataType
    value: Column
    """The column's value in the table's type, unguarded."""
    lost: Column | None
    """True where the source holds a value that ``value`` lost (None: nothing to lose)."""
    shown: Column
    """The source's value as text, for messages."""


class SourceRead:
    """The rows of a source in the table's columns, for one write of :attr:`frame`.

    Run the write inside :meth:`checked`; after it, :meth:`nulled_values` says what a
    permissive read turned into nulls.
    """

    def __init__(
        self,
        spark: SparkSession,
        source: str,
        fmt: SourceFormat,
        struct: S.StructType,
        *,
        not_null: Sequence[str],
        header: bool,
        parse_mode: ParseMode,
    ) -> None:
        self._spark = spark
        self._source = source
        self._fmt: SourceFormat = fmt
        self._struct = struct
        self._not_null = [n for n in struct.fieldNames() if n in set(not_null)]
        self._header = header
        self._mode: ParseMode = parse_mode
        self._observation: Observation | None = None
        base, columns = self._read(parse_mode)
        if parse_mode == "permissive":
            observation = Observation()
            metrics = [
                F.count_if(c.lost).alias(f"c{i}")
                for i, c in enumerate(columns)
                if c.lost is not None
            ]
            if fmt != "parquet":
                metrics.append(F.count_if(F.col(_CORRUPT).isNotNull()).alias("records"))
            if metrics:
                base = base.observe(observation, *metrics)
                self._observation = observation
        self._columns = columns
        self.frame: DataFrame = base.select(*[self._guarded(c).alias(c.name) for c in columns])

    # --- reading ---------------------------------------------------------------------

    def _read(self, mode: ParseMode) -> tuple[DataFrame, list[_Column]]:
        """The source's DataFrame and the table's columns over it."""
        if self._fmt == "parquet":
            base = self._spark.read.format("parquet").load(self._source)
            missing = [f.name for f in self._struct.fields if f.name not in base.columns]
            if missing:
                raise InvalidArgumentError(
                    f"the source has no columns {missing}; the table needs "
                    f"{self._struct.fieldNames()}"
                )
            return base, [_cast(base, f) for f in self._struct.fields]
        reader = self._spark.read.format(self._fmt).schema(self._read_schema(mode))
        for key, value in self._reader_options(mode).items():
            reader = reader.option(key, value)
        base = reader.load(self._source)
        if mode == "failfast":
            columns = [
                _Column(f.name, f.dataType, base[f.name], None, base[f.name].cast("string"))
                for f in self._struct.fields
            ]
            return base, columns
        raw = self._raw_fields(base)
        corrupt = F.col(_CORRUPT)
        return base, [
            _Column(
                f.name,
                f.dataType,
                base[f.name],
                corrupt.isNotNull() & base[f.name].isNull() & raw[f.name].isNotNull(),
                raw[f.name],
            )
            for f in self._struct.fields
        ]

    def _read_schema(self, mode: ParseMode) -> S.StructType:
        if mode == "failfast":
            return self._struct
        if _CORRUPT in self._struct.fieldNames():
            raise InvalidArgumentError(f"a table column named {_CORRUPT!r} cannot be ingested")
        return S.StructType([*self._struct.fields, S.StructField(_CORRUPT, S.StringType())])

    def _reader_options(self, mode: ParseMode) -> dict[str, str]:
        options = {"mode": mode.upper()}
        if mode == "permissive":
            options["columnNameOfCorruptRecord"] = _CORRUPT
        if self._fmt == "csv":
            options["header"] = str(self._header).lower()
        return options

    def _raw_fields(self, base: DataFrame) -> Column:
        """The fields of a malformed record as text, parsed as the reader parses it (so
        that a field the file leaves empty or null is null here too)."""
        corrupt = base[_CORRUPT]
        if self._fmt == "json":
            strings = S.StructType(
                [S.StructField(n, S.StringType()) for n in self._struct.fieldNames()]
            )
            return F.from_json(corrupt, strings)
        ddl = ", ".join(f"`{n.replace('`', '``')}` STRING" for n in self._struct.fieldNames())
        return F.from_csv(corrupt, ddl)

    def _guarded(self, column: _Column) -> Column:
        """``column``'s value, failing the task where it lost a value (failfast) or is
        null in a NOT NULL column."""
        guarded: Column | None = None
        if self._mode == "failfast" and column.lost is not None:
            guarded = F.when(
                column.lost,
                F.raise_error(
                    F.lit(
                        f"{_GUARD} a value of column {column.name!r} that its cast to "
                        f"{column.type.simpleString()} cannot hold"
                    )
                ),
            )
        if column.name in self._not_null:
            message = F.lit(f"{_GUARD} a null in the NOT NULL column {column.name!r}")
            check = column.value.isNull()
            guarded = (
                F.when(check, F.raise_error(message))
                if guarded is None
                else guarded.when(check, F.raise_error(message))
            )
        return column.value if guarded is None else guarded.otherwise(column.value)

    # --- after the write -------------------------------------------------------------

    def nulled_values(self) -> NulledValues:
        """The values a permissive read turned into nulls, counted by the job that
        consumed :attr:`frame` (both write paths run exactly one); call after it."""
        if self._observation is None:
            return NulledValues({}, 0)
        metrics = self._observation.get
        counts = {
            c.name: int(metrics[f"c{i}"]) for i, c in enumerate(self._columns) if c.lost is not None
        }
        return NulledValues(
            {name: n for name, n in counts.items() if n},
            int(metrics.get("records", 0)),
        )

    @contextmanager
    def checked(self) -> Iterator[None]:
        """Around the Spark job that consumes :attr:`frame`: its failure on a value of the
        source becomes an :class:`InvalidInputDataError` (or its subclass
        :class:`NotNullViolationError`); any other failure passes unchanged.

        Spark's failure is recognized by its error condition: ``MALFORMED_RECORD_IN_PARSING``
        or ``MALFORMED_CSV_RECORD`` (a failfast CSV or JSON read), ``USER_RAISED_EXCEPTION``
        with this module's message (a guard of :attr:`frame`). The error's details come
        from a second read of the source, in one Spark job; where that finds nothing
        (the files changed since), from Spark's error.
        """
        try:
            yield
        except Exception as exc:
            error = self._translate(exc)
            if error is None:
                raise
            raise error from exc

    def _translate(self, exc: BaseException) -> InvalidInputDataError | None:
        conditions = spark_conditions(exc)
        guard = any(
            name == "USER_RAISED_EXCEPTION" and params.get("errorMessage", "").startswith(_GUARD)
            for name, params in conditions
        )
        malformed = self._fmt != "parquet" and any(
            name.startswith("MALFORMED_RECORD_IN_PARSING") or name == "MALFORMED_CSV_RECORD"
            for name, _ in conditions
        )
        if not guard and not malformed:
            return None
        try:
            found = self._diagnose()
        except Exception:  # the source changed or went away: Spark's error must do
            logger.debug("the second read of %s failed", self._source, exc_info=True)
            found = None
        if found is not None:
            return found
        return _from_spark(conditions, self._source)

    def _diagnose(self) -> InvalidInputDataError | None:
        """The error for the bad values of the source, with counts and the first of
        each, by one aggregation over a permissive read (None: it finds none)."""
        base, columns = self._read("permissive")
        rows = base.select(
            "*",
            F.col("_metadata.file_path").alias(_FILE),
            _position(self._fmt).alias(_AT),
        )
        text = self._fmt != "parquet"
        record = F.col(_CORRUPT) if text else F.lit(None).cast("string")

        def first(where: Column, **fields: Column) -> Column:
            example = F.struct(
                F.struct(F.col(_FILE), F.col(_AT)).alias("order"),
                F.col(_FILE).alias("file"),
                F.col(_AT).alias("at"),
                record.alias("record"),
                *[value.alias(name) for name, value in fields.items()],
            )
            return F.min(F.when(where, example))

        lossy = [c for c in columns if c.lost is not None]
        nulls = [c for c in columns if c.name in self._not_null]
        aggregates: list[Column] = []
        for i, c in enumerate(lossy):
            assert c.lost is not None
            aggregates.append(F.count_if(c.lost).alias(f"lost{i}"))
            aggregates.append(first(c.lost, value=c.shown).alias(f"first_lost{i}"))
        whole_row = F.to_json(
            F.struct(*[c.value.alias(c.name) for c in columns]), {"ignoreNullFields": "false"}
        )
        for i, c in enumerate(nulls):
            aggregates.append(F.count_if(c.value.isNull()).alias(f"null{i}"))
            aggregates.append(first(c.value.isNull(), row=whole_row).alias(f"first_null{i}"))
        if text:
            malformed = F.col(_CORRUPT).isNotNull()
            aggregates.append(F.count_if(malformed).alias("records"))
            aggregates.append(first(malformed).alias("first_record"))
        if not aggregates:
            return None
        found = rows.agg(*aggregates).collect()[0].asDict(recursive=True)
        lost = {c.name: int(found[f"lost{i}"]) for i, c in enumerate(lossy)}
        lost = {name: n for name, n in lost.items() if n}
        if self._mode == "failfast" and lost:
            examples = {c.name: found[f"first_lost{i}"] for i, c in enumerate(lossy)}
            return self._lost_error(columns, lost, examples)
        if self._mode == "failfast" and text and found["records"]:
            return self._malformed_error(int(found["records"]), found["first_record"])
        missing = {c.name: int(found[f"null{i}"]) for i, c in enumerate(nulls)}
        missing = {name: n for name, n in missing.items() if n}
        if missing:
            examples = {c.name: found[f"first_null{i}"] for i, c in enumerate(nulls)}
            return self._null_error(columns, missing, lost, examples)
        return None

    def _lost_error(
        self, columns: list[_Column], lost: dict[str, int], examples: dict[str, Any]
    ) -> InvalidInputDataError:
        named = [c for c in columns if c.name in lost]
        parts = [
            f"column {c.name!r} ({c.type.simpleString()}): {_count(lost[c.name], 'value')}, "
            f"the first {_quote(examples[c.name]['value'])} in {self._place(examples[c.name])}"
            for c in named
        ]
        example = examples[named[0].name]
        verb = "parsed as" if self._fmt != "parquet" else "cast to"
        return InvalidInputDataError(
            f"the source holds values that cannot be {verb} their column's type: "
            f"{'; '.join(parts)}. Nothing was committed; correct the data, or ingest in "
            "parse mode 'permissive' to load such values as nulls (and count them)",
            path=example["file"],
            column=named[0].name,
            record=self._record(example),
            counts=lost,
        )

    def _malformed_error(self, records: int, example: dict[str, Any]) -> InvalidInputDataError:
        return InvalidInputDataError(
            f"the source holds {_count(records, 'record')} that "
            f"{'is' if records == 1 else 'are'} not valid {self._fmt.upper()}, the first in "
            f"{self._place(example)}. Nothing was committed; correct the data, or ingest in "
            "parse mode 'permissive' to load what can be read of such records",
            path=example["file"],
            record=self._record(example),
        )

    def _null_error(
        self,
        columns: list[_Column],
        missing: dict[str, int],
        lost: dict[str, int],
        examples: dict[str, Any],
    ) -> NotNullViolationError:
        named = [c for c in columns if c.name in missing]
        parts = []
        for c in named:
            n = missing[c.name]
            unread = lost.get(c.name, 0)
            why = (
                f" ({unread:,} of them hold a value that cannot be read as {c.type.simpleString()})"
                if unread
                else ""
            )
            parts.append(
                f"column {c.name!r} is NOT NULL, but {_count(n, 'row')} of the source "
                f"{'has' if n == 1 else 'have'} no value there{why}, the first in "
                f"{self._place(examples[c.name])}"
            )
        example = examples[named[0].name]
        return NotNullViolationError(
            f"{'; '.join(parts)}. Nothing was committed; give every row a value there",
            path=example["file"],
            column=named[0].name,
            record=self._record(example),
            counts=missing,
        )

    def _place(self, example: dict[str, Any]) -> str:
        """Where an example is: its file, and its row (Parquet) or record (CSV, JSON)."""
        if self._fmt == "parquet":
            return f"{example['file']}, row {int(example['at']) + 1:,}"
        if example["record"] is not None:
            return f"{example['file']}, record {_quote(example['record'])}"
        return f"{example['file']}, the row {example.get('row')}"  # a record that parsed

    def _record(self, example: dict[str, Any]) -> str | None:
        """An example's record as the file holds it, or its row for Parquet."""
        if self._fmt == "parquet":
            return f"row {int(example['at']) + 1}"
        record = example["record"]
        return None if record is None else _clip(record)


def read_source(
    spark: SparkSession,
    source: str,
    fmt: SourceFormat,
    struct: S.StructType,
    *,
    not_null: Sequence[str] = (),
    header: bool = True,
    parse_mode: ParseMode = "failfast",
) -> SourceRead:
    """The rows of ``source`` (a file, directory or glob) in the columns of ``struct``
    (the table's Spark schema), read in ``parse_mode`` (see the module's docstring);
    the columns named in ``not_null`` may hold no null.

    Raises:
        InvalidArgumentError: a Parquet source without a column of the table.
    """
    return SourceRead(
        spark,
        source,
        fmt,
        struct,
        not_null=not_null,
        header=header,
        parse_mode=parse_mode,
    )


def _cast(base: DataFrame, field: S.StructField) -> _Column:
    """A Parquet column cast to the table's type; a value the cast cannot hold is lost."""
    source = base[field.name]
    source_type = base.schema[field.name].dataType
    if source_type == field.dataType:
        return _Column(field.name, field.dataType, source, None, source.cast("string"))
    value = source.try_cast(field.dataType)
    return _Column(
        field.name,
        field.dataType,
        value,
        source.isNotNull() & value.isNull(),
        source.cast("string"),
    )


def _position(fmt: SourceFormat) -> Column:
    """Where a row is in its file: its index in a Parquet file; for CSV and JSON, whose
    rows Spark does not number, an order that follows the file within each split."""
    if fmt == "parquet":
        return F.col("_metadata.row_index")
    return F.struct(F.col("_metadata.file_block_start"), F.monotonically_increasing_id())


def spark_conditions(exc: BaseException) -> list[tuple[str, dict[str, str]]]:
    """Spark's error conditions and their parameters along the cause chain of ``exc``,
    outermost first.

    A failed job reaches Python as a ``pyspark.errors`` exception when PySpark has a
    class for the JVM's exception, or else as py4j's ``Py4JJavaError`` (a task failure
    wrapped in ``SparkException``). Both hold the JVM exception, whose causes carry the
    condition of the failure itself (``FAILED_READ_FILE`` wraps
    ``MALFORMED_RECORD_IN_PARSING``).
    """
    found: list[tuple[str, dict[str, str]]] = []
    throwable = _java_throwable(exc)
    jvm = SparkContext._jvm
    if throwable is None or jvm is None:
        if isinstance(exc, PySparkException) and exc.getCondition():
            found.append((str(exc.getCondition()), dict(exc.getMessageParameters() or {})))
        return found
    spark_throwable = jvm.java.lang.Class.forName("org.apache.spark.SparkThrowable")
    utils = jvm.PythonErrorUtils
    seen = 0
    while throwable is not None and seen < 20:  # a cause chain is short; never loop
        if spark_throwable.isInstance(throwable):
            condition = utils.getCondition(throwable)
            if condition:
                params = utils.getMessageParameters(throwable)
                found.append((str(condition), {str(k): str(v) for k, v in dict(params).items()}))
        throwable = throwable.getCause()
        seen += 1
    return found


def _java_throwable(exc: BaseException) -> Any:
    """The JVM exception behind ``exc``, or None. py4j's ``Py4JJavaError`` holds it as
    ``java_exception``; PySpark's captured exceptions keep it as ``_origin`` and offer
    no public way to its causes. (py4j is not imported: it is PySpark's dependency.)"""
    for attribute in ("java_exception", "_origin"):
        found = getattr(exc, attribute, None)
        if found is not None:
            return found
    return None


def _from_spark(conditions: list[tuple[str, dict[str, str]]], source: str) -> InvalidInputDataError:
    """The error from what Spark's failure says, where a second read found nothing."""
    params: dict[str, str] = {}
    for _, found in reversed(conditions):  # the innermost first: the raw CSV record
        for key, value in found.items():
            params.setdefault(key, value)
    path = params.get("path")
    record = params.get("badRecord")
    column = params.get("fieldName", "").strip("`") or None
    guard = (
        params.get("errorMessage", "") if params.get("errorMessage", "").startswith(_GUARD) else ""
    )
    what = guard.removeprefix(_GUARD).strip() or "a value that cannot be read as its column's type"
    place = f" in {path}" if path else f" in {source}"
    shown = f", record {_quote(record)}" if record else ""
    named = f", column {column!r}" if column else ""
    return InvalidInputDataError(
        f"the source holds {what}{place}{shown}{named}. Nothing was committed; correct the "
        "data, or ingest in parse mode 'permissive' to load such values as nulls",
        path=path,
        column=column,
        record=_clip(record) if record else None,
    )


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _quote(text: str | None) -> str:
    return "null" if text is None else repr(_clip(text))


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
