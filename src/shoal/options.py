"""Every table option shoal implements, declared once with its type and default.

The keys are on-disk format: they live in the schema file's ``options`` map and
are shared with Apache Paimon, so they are spelled exactly as Paimon spells them
(a test pins them). What shoal does with the keys it does not implement (a table
written by Paimon's engines keeps them; a user setting one is refused) is
:mod:`shoal.features` and :mod:`shoal.option_keys`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import TypeVar, cast

from shoal.errors import InvalidOptionError
from shoal.option_values import (
    Option,
    at_least,
    bucket_check,
    one_of,
    parse_bool,
    parse_duration,
    parse_int,
    parse_long,
    parse_memory_size,
    parse_str,
)

__all__ = ["Option", "Options", "parse_duration", "parse_memory_size"]

V = TypeVar("V")

_REGISTRY: dict[str, Option[object]] = {}


def _declare(option: Option[V]) -> Option[V]:
    _REGISTRY[option.key] = option  # type: ignore[assignment]
    return option


# --- layout and files -------------------------------------------------------------------------
BUCKET = _declare(
    Option(
        "bucket",
        parse_int,
        -1,
        "Number of buckets; -1 for an unbucketed (bucket-unaware) append table, or dynamic "
        "buckets on a primary-key table.",
        bucket_check,
    )
)
BUCKET_KEY = _declare(
    Option(
        "bucket-key",
        parse_str,
        "",
        "Comma-separated columns hashed to pick a bucket; default: the primary key, or for an "
        "append table all columns.",
    )
)


def _optional_int(text: str) -> int | None:
    return parse_int(text)


def _optional_positive(value: int | None) -> str | None:
    return None if value is None or value >= 1 else "must be a positive count"


DYNAMIC_BUCKET_TARGET_ROW_NUM = _declare(
    Option(
        "dynamic-bucket.target-row-num",
        parse_long,
        2_000_000,
        "Dynamic buckets: the number of keys a bucket takes before new keys go to another.",
        at_least(1),
    )
)
DYNAMIC_BUCKET_INITIAL_BUCKETS = _declare(
    Option(
        "dynamic-bucket.initial-buckets",
        _optional_int,
        None,
        "Dynamic buckets: how many buckets a partition fills at once (Paimon's number of "
        "bucket assigners); none: one.",
        _optional_positive,
    )
)
DYNAMIC_BUCKET_ASSIGNER_PARALLELISM = _declare(
    Option(
        "dynamic-bucket.assigner-parallelism",
        _optional_int,
        None,
        "Dynamic buckets: the number of assigner channels keys are spread over (with "
        "initial-buckets, as Paimon's assigners); none: the initial bucket count.",
        _optional_positive,
    )
)
DYNAMIC_BUCKET_MAX_BUCKETS = _declare(
    Option(
        "dynamic-bucket.max-buckets",
        parse_int,
        -1,
        "Dynamic buckets: the most buckets a partition opens (-1: no limit); beyond it new "
        "keys join existing buckets.",
        lambda v: None if v == -1 or v >= 1 else "must be -1 (no limit) or a positive count",
    )
)
# Paimon's data file formats; those shoal does not implement are refused as features.
_PAIMON_FORMATS = ("parquet", "orc", "avro", "csv", "json", "lance")
FILE_FORMAT = _declare(
    Option(
        "file.format",
        parse_str,
        "parquet",
        "Format of new data files: parquet, orc or avro (files are read by the format "
        "their names end in, whatever the option says).",
        one_of(*_PAIMON_FORMATS),
    )
)


def _check_per_level(value: str) -> str | None:
    for pair in value.split(","):
        level, colon, name = pair.strip().partition(":")
        known = name.strip() in _PAIMON_FORMATS
        if pair.strip() and not (colon and level.strip().isdigit() and known):
            return f"{pair.strip()!r} is not <level>:<{', '.join(_PAIMON_FORMATS)}>"
    return None


FILE_FORMAT_PER_LEVEL = _declare(
    Option(
        "file.format.per.level",
        parse_str,
        "",
        "Format of new data files by LSM level, as <level>:<format> pairs "
        "(0:avro,5:parquet); levels not named take file.format.",
        _check_per_level,
    )
)
FILE_COMPRESSION = _declare(
    Option("file.compression", parse_str, "zstd", "Compression codec of data files.")
)
TARGET_FILE_SIZE = _declare(
    Option(
        "target-file-size",
        parse_memory_size,
        128 << 20,
        "Size at which a writer rolls to a new data file.",
        at_least(1),
    )
)
PARTITION_DEFAULT_NAME = _declare(
    Option(
        "partition.default-name",
        parse_str,
        "__DEFAULT_PARTITION__",
        "Directory name used for a null or empty partition value.",
    )
)
PARTITION_LEGACY_NAME = _declare(
    Option(
        "partition.legacy-name",
        parse_bool,
        True,
        "Name partition directories by the values' internal form (a DATE as its day number), "
        "as Paimon does by default; false spells dates and timestamps as text.",
    )
)
DATA_FILE_PREFIX = _declare(
    Option("data-file.prefix", parse_str, "data-", "Prefix of data file names.")
)
STATS_MODE = _declare(
    Option(
        "metadata.stats-mode",
        parse_str,
        "truncate(16)",
        "Column statistics kept per data file: none, counts, truncate(N) or full.",
        lambda v: (
            None
            if re.fullmatch(r"none|counts|full|truncate\(\d+\)", v.strip().lower())
            else "use none, counts, full or truncate(N)"
        ),
    )
)

# --- manifests --------------------------------------------------------------------------------
MANIFEST_TARGET_FILE_SIZE = _declare(
    Option(
        "manifest.target-file-size",
        parse_memory_size,
        8 << 20,
        "Size at which manifest files roll, and below which they count as small.",
        at_least(1),
    )
)
MANIFEST_MERGE_MIN_COUNT = _declare(
    Option(
        "manifest.merge-min-count",
        parse_int,
        30,
        "Number of small manifests that triggers merging them into one.",
        at_least(2),
    )
)
MANIFEST_FULL_COMPACTION_SIZE = _declare(
    Option(
        "manifest.full-compaction-threshold-size",
        parse_memory_size,
        16 << 20,
        (
            "Total size of the manifests that must change (holding DELETE entries, or "
            "below the target size) that triggers a full manifest compaction."
        ),
    )
)
MANIFEST_COMPRESSION = _declare(
    Option(
        "manifest.compression",
        parse_str,
        "zstd",
        "Avro codec of manifest files.",
        one_of("zstd", "snappy", "deflate", "null", "none"),
    )
)

# --- commit -----------------------------------------------------------------------------------
COMMIT_MAX_RETRIES = _declare(
    Option(
        "commit.max-retries",
        parse_int,
        10,
        "How often a commit that lost a race re-plans against the new latest snapshot.",
        at_least(0),
    )
)

# --- primary-key tables ------------------------------------------------------------------
MERGE_ENGINE = _declare(
    Option(
        "merge-engine",
        parse_str,
        "deduplicate",
        "How rows of one key combine: deduplicate (the last row wins), first-row, "
        "partial-update (non-null fields update the row) or aggregation (per column).",
        one_of("deduplicate", "first-row", "partial-update", "aggregation"),
    )
)
# Per-column options: "<field>" in the key stands for a column's name.
FIELD = "<field>"
_AGG = "aggregation: "
FIELDS_AGGREGATE_FUNCTION = _declare(
    Option("fields.<field>.aggregate-function", parse_str, "", _AGG + "the column's function.")
)
FIELDS_DEFAULT_AGGREGATE_FUNCTION = _declare(
    Option("fields.default-aggregate-function", parse_str, "", _AGG + "the default function.")
)
FIELDS_IGNORE_RETRACT = _declare(
    Option("fields.<field>.ignore-retract", parse_bool, False, _AGG + "skip retractions.")
)
FIELDS_LIST_AGG_DELIMITER = _declare(
    Option("fields.<field>.list-agg-delimiter", parse_str, ",", _AGG + "listagg's separator.")
)
FIELDS_DISTINCT = _declare(
    Option("fields.<field>.distinct", parse_bool, False, _AGG + "collect keeps distinct values.")
)
FIELDS_NESTED_KEY = _declare(
    Option("fields.<field>.nested-key", parse_str, "", _AGG + "nested_update's row key.")
)
AGGREGATION_REMOVE_RECORD_ON_DELETE = _declare(
    Option("aggregation.remove-record-on-delete", parse_bool, False, _AGG + "-D removes.")
)
PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE = _declare(
    Option("partial-update.remove-record-on-delete", parse_bool, False, "-D removes the key.")
)
FIELDS_SEQUENCE_GROUP = _declare(
    Option(
        "fields.<field>.sequence-group",
        parse_str,
        "",
        "partial-update: comma-separated columns that only rows whose <field> (one or "
        "several comma-separated sequence columns) is not older update.",
    )
)
PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP = _declare(
    Option(
        "partial-update.remove-record-on-sequence-group",
        parse_str,
        "",
        "partial-update: sequence columns whose group's -D rows remove the whole row.",
    )
)
SEQUENCE_FIELD = _declare(
    Option(
        "sequence.field",
        parse_str,
        "",
        "A column that orders the rows of a key before the write order does.",
    )
)
IGNORE_DELETE = _declare(
    Option("ignore-delete", parse_bool, False, "Drop delete rows instead of applying them.")
)
ROWKIND_FIELD = _declare(
    Option(
        "rowkind.field",
        parse_str,
        "",
        "A string column whose +I, -U, +U or -D gives each written row's kind.",
    )
)
CHANGELOG_PRODUCER = _declare(
    Option(
        "changelog-producer",
        parse_str,
        "none",
        "none; input: writes add their rows as changelog; lookup: the compaction after "
        "each write adds each key's change; full-compaction: full compactions add the "
        "changes since the last one.",
        one_of("none", "input", "lookup", "full-compaction"),
    )
)
CHANGELOG_PRODUCER_ROW_DEDUPLICATE = _declare(
    Option(
        "changelog-producer.row-deduplicate",
        parse_bool,
        False,
        "With the lookup and full-compaction producers, no -U/+U pair for a key whose "
        "value did not change.",
    )
)
CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS = _declare(
    Option(
        "changelog-producer.row-deduplicate-ignore-fields",
        parse_str,
        "",
        "Comma-separated columns that row-deduplicate leaves out of the comparison.",
    )
)
FULL_COMPACTION_DELTA_COMMITS = _declare(
    Option(
        "full-compaction.delta-commits",
        parse_int,
        -1,
        "A write is followed by a full compaction every this many writes (-1: not set, "
        "then every write with the full-compaction changelog producer, else never).",
    )
)
LOOKUP_WAIT = _declare(
    Option(
        "lookup-wait",
        parse_bool,
        True,
        "Whether a write waits for the lookup compaction after it (shoal always compacts "
        "right after the write; both values are accepted).",
    )
)
LOOKUP_WAIT_LEGACY = _declare(
    Option(
        "changelog-producer.lookup-wait",
        parse_bool,
        True,
        "The older key of lookup-wait.",
    )
)
WRITE_ONLY = _declare(
    Option(
        "write-only",
        parse_bool,
        False,
        "Writes never compact (a separate job compacts the table).",
    )
)
DELETION_VECTORS_ENABLED = _declare(
    Option(
        "deletion-vectors.enabled",
        parse_bool,
        False,
        "Primary-key tables: compactions mark the rows that newer rows replace in "
        "deletion vectors, so reads need no merge; a write's rows become visible once "
        "the compaction after it lifts them out of level 0.",
    )
)
DELETION_VECTORS_MODIFIABLE = _declare(
    Option(
        "deletion-vectors.modifiable",
        parse_bool,
        False,
        "Allow deletion-vectors.enabled to change on a table with data (rows may show "
        "twice unless the table was fully compacted first).",
    )
)
DELETION_VECTORS_BITMAP64 = _declare(
    Option(
        "deletion-vectors.bitmap64",
        parse_bool,
        False,
        "Write deletion vectors as 64-bit bitmaps (read by Paimon 1.1 and later only).",
    )
)
COMPACTION_FORCE_UP_LEVEL_0 = _declare(
    Option(
        "compaction.force-up-level-0",
        parse_bool,
        False,
        "Every compaction after a write lifts all level-0 files, even when universal "
        "compaction would wait (always so with deletion vectors).",
    )
)
NUM_SORTED_RUN_COMPACTION_TRIGGER = _declare(
    Option(
        "num-sorted-run.compaction-trigger",
        parse_int,
        5,
        "Sorted runs in a bucket that make a write compact it.",
        at_least(1),
    )
)
NUM_LEVELS = _declare(
    Option(
        "num-levels",
        parse_int,
        0,
        "Levels of the LSM tree; 0 means num-sorted-run.compaction-trigger + 1.",
        lambda v: None if v == 0 or v >= 2 else "must be at least 2",
    )
)
COMPACTION_SIZE_RATIO = _declare(
    Option(
        "compaction.size-ratio",
        parse_int,
        1,
        "Percentage of flexibility when comparing sorted-run sizes in universal compaction.",
        at_least(0),
    )
)
COMPACTION_MAX_SIZE_AMPLIFICATION = _declare(
    Option(
        "compaction.max-size-amplification-percent",
        parse_int,
        200,
        "Size of all newer runs relative to the oldest run that makes universal compaction "
        "compact everything.",
        at_least(0),
    )
)
COMPACTION_STRATEGY = _declare(
    Option(
        "compaction.strategy",
        parse_str,
        "universal",
        "The strategy compact() uses when none is given: universal, full or event-time.",
        one_of("universal", "full", "event-time"),
    )
)
COMPACTION_EVENT_TIME_FIELD = _declare(
    Option(
        "compaction.event-time.field",
        parse_str,
        "",
        "The event-time column of event-time compaction and freshness: a TIMESTAMP, "
        "TIMESTAMP_LTZ, DATE or BIGINT (epoch milliseconds) column; empty: none.",
    )
)
COMPACTION_EVENT_TIME_DATA_LATENCY = _declare(
    Option(
        "compaction.event-time.data-latency",
        parse_duration,
        timedelta(hours=1),
        "How late data may arrive: event-time compaction compacts what is older than "
        "now minus this.",
    )
)
COMPACTION_EVENT_TIME_EXACT_SPLIT = _declare(
    Option(
        "compaction.event-time.exact-split",
        parse_bool,
        False,
        "Whether event-time compaction writes the rows at or above the threshold back "
        "to level 0, so the read-optimized view holds exactly the rows below it.",
    )
)


# --- tags -------------------------------------------------------------------------------
def _optional_duration(text: str) -> timedelta | None:
    return parse_duration(text)


TAG_DEFAULT_TIME_RETAINED = _declare(
    Option(
        "tag.default-time-retained",
        _optional_duration,
        None,
        "Retention given to tags created without one; none: tags are kept until deleted.",
    )
)
TAG_AUTOMATIC_CREATION = _declare(
    Option(
        "tag.automatic-creation",
        parse_str,
        "none",
        "Create a tag per period after commits: none, process-time (by commit time) or "
        "watermark (by the snapshot's watermark).",
        one_of("none", "process-time", "watermark"),
    )
)
TAG_CREATION_PERIOD = _declare(
    Option(
        "tag.creation-period",
        parse_str,
        "daily",
        "The period of automatic tags: daily, hourly or two-hours.",
        one_of("daily", "hourly", "two-hours"),
    )
)
TAG_CREATION_DELAY = _declare(
    Option(
        "tag.creation-delay",
        parse_duration,
        timedelta(0),
        "How long after a period ends its automatic tag is created.",
    )
)
TAG_PERIOD_FORMATTER = _declare(
    Option(
        "tag.period-formatter",
        parse_str,
        "with_dashes",
        "Names of automatic tags: with_dashes (2026-11-01, 2026-11-01 13), without_dashes "
        "(20261101, 20261101 13) or without_dashes_and_spaces (2026110113).",
        one_of("with_dashes", "without_dashes", "without_dashes_and_spaces"),
    )
)
TAG_NUM_RETAINED_MAX = _declare(
    Option(
        "tag.num-retained-max",
        parse_int,
        0,
        "Automatic tags kept at most (the oldest go first); 0: no limit. Counts only "
        "automatic tags.",
        at_least(0),
    )
)

# --- reading ----------------------------------------------------------------------------------
SPLIT_TARGET_SIZE = _declare(
    Option(
        "source.split.target-size",
        parse_memory_size,
        128 << 20,
        "Bytes of data files packed into one split of a scan plan.",
        at_least(1),
    )
)
SPLIT_OPEN_FILE_COST = _declare(
    Option(
        "source.split.open-file-cost",
        parse_memory_size,
        4 << 20,
        "Bytes a file counts for when packing splits, at least; keeps tiny files from "
        "crowding one split.",
    )
)

# --- snapshot expiration (used by maintenance) ------------------------------------------------
SNAPSHOT_NUM_RETAINED_MIN = _declare(
    Option(
        "snapshot.num-retained.min",
        parse_int,
        10,
        "Snapshots always kept by expiration.",
        at_least(1),
    )
)
SNAPSHOT_NUM_RETAINED_MAX = _declare(
    Option(
        "snapshot.num-retained.max",
        parse_int,
        2**31 - 1,
        "Snapshots kept at most by expiration.",
        at_least(1),
    )
)
SNAPSHOT_TIME_RETAINED = _declare(
    Option(
        "snapshot.time-retained",
        parse_duration,
        timedelta(hours=1),
        "Age below which snapshots are kept by expiration.",
    )
)
SNAPSHOT_EXPIRE_LIMIT = _declare(
    Option(
        "snapshot.expire.limit",
        parse_int,
        50,
        "Snapshots expired at most in one run.",
        at_least(1),
    )
)

CHANGELOG_NUM_RETAINED_MIN = _declare(
    Option(
        "changelog.num-retained.min",
        _optional_int,
        None,
        "Changelogs always kept by expiration; none: snapshot.num-retained.min. Above it, "
        "expired snapshots keep their changelog (changelog/changelog-<id>).",
        _optional_positive,
    )
)
CHANGELOG_NUM_RETAINED_MAX = _declare(
    Option(
        "changelog.num-retained.max",
        _optional_int,
        None,
        "Changelogs kept at most by expiration; none: snapshot.num-retained.max. Above it, "
        "expired snapshots keep their changelog.",
        _optional_positive,
    )
)
CHANGELOG_TIME_RETAINED = _declare(
    Option(
        "changelog.time-retained",
        _optional_duration,
        None,
        "Age below which changelogs are kept by expiration; none: snapshot.time-retained. "
        "Above it, expired snapshots keep their changelog.",
    )
)

SNAPSHOT_CLEAN_EMPTY_DIRECTORIES = _declare(
    Option(
        "snapshot.clean-empty-directories",
        parse_bool,
        False,
        "Whether expiration removes the bucket and partition directories it empties "
        "(costly on object stores).",
    )
)

# --- consumers (streaming reads record them; expiration keeps their snapshots) ---------------
CONSUMER_EXPIRATION_TIME = _declare(
    Option(
        "consumer.expiration-time",
        _optional_duration,
        None,
        "Age after which a consumer not advanced is deleted, before each snapshot expiration; "
        "none: consumers stay until deleted (and hold expiration back).",
    )
)
CONSUMER_ID = _declare(
    Option("consumer-id", parse_str, "", "Streaming reads: the consumer recording progress.")
)
CONSUMER_IGNORE_PROGRESS = _declare(
    Option(
        "consumer.ignore-progress",
        parse_bool,
        False,
        "Streaming reads: whether a new query ignores its consumer's recorded progress.",
    )
)
CONSUMER_MODE = _declare(
    Option(
        "consumer.mode",
        parse_str,
        "exactly-once",
        "Streaming reads: how a consumer records progress; exactly-once only.",
        one_of("exactly-once", "at-least-once"),
    )
)

# --- partition expiration (used by maintenance) -----------------------------------------------
PARTITION_EXPIRATION_TIME = _declare(
    Option(
        "partition.expiration-time",
        _optional_duration,
        None,
        "Age after which a partition is dropped by partition expiration; none: never.",
    )
)
PARTITION_EXPIRATION_CHECK_INTERVAL = _declare(
    Option(
        "partition.expiration-check-interval",
        parse_duration,
        timedelta(hours=1),
        "How often commits look for expired partitions.",
    )
)
PARTITION_EXPIRATION_STRATEGY = _declare(
    Option(
        "partition.expiration-strategy",
        parse_str,
        "values-time",
        "How a partition's age is found: values-time (from its values, see "
        "partition.timestamp-pattern and -formatter) or update-time (its newest file).",
        one_of("values-time", "update-time"),
    )
)
PARTITION_EXPIRATION_MAX_NUM = _declare(
    Option(
        "partition.expiration-max-num",
        parse_int,
        100,
        "Partitions dropped at most by one expiration run.",
        at_least(1),
    )
)
PARTITION_TIMESTAMP_FORMATTER = _declare(
    Option(
        "partition.timestamp-formatter",
        parse_str,
        "",
        "Java DateTimeFormatter pattern of the partition time, e.g. yyyyMMdd; empty: "
        "the lenient yyyy-M-d[ H:m:s[.fraction]].",
    )
)
PARTITION_TIMESTAMP_PATTERN = _declare(
    Option(
        "partition.timestamp-pattern",
        parse_str,
        "",
        "How partition values form the partition time, e.g. '$dt $hour:00:00'; empty: "
        "the first partition field.",
    )
)


def field_option(key: str) -> tuple[Option[object], str] | None:
    """The declared per-column option ``key`` spells, with the column it names."""
    for option in _REGISTRY.values():
        head, _, tail = option.key.partition(FIELD)
        if _ and key.startswith(head) and key.endswith(tail) and len(key) > len(option.key) - 7:
            return option, key[len(head) : len(key) - len(tail)]
    return None


def declared() -> Iterator[Option[object]]:
    """Every declared option, in declaration order (the docs are made from this)."""
    return iter(_REGISTRY.values())


def validate(raw: Mapping[str, str]) -> None:
    """Raise :class:`InvalidOptionError` for the first declared option with a bad value,
    or for values that contradict each other."""
    for key in raw:
        option = _REGISTRY.get(key)
        if option is not None:
            option.get(raw)
    if DELETION_VECTORS_ENABLED.get(raw) and MERGE_ENGINE.get(raw) == "first-row":
        raise InvalidOptionError(
            DELETION_VECTORS_ENABLED.key,
            "true",
            "the first-row merge engine never replaces a stored row, so it has no rows "
            "for deletion vectors to mark (Paimon refuses it too)",
        )
    retain_min, retain_max = SNAPSHOT_NUM_RETAINED_MIN.get(raw), SNAPSHOT_NUM_RETAINED_MAX.get(raw)
    if retain_max < retain_min:
        raise InvalidOptionError(
            SNAPSHOT_NUM_RETAINED_MAX.key,
            retain_max,
            f"must not be less than {SNAPSHOT_NUM_RETAINED_MIN.key} ({retain_min})",
        )
    changelog_min = CHANGELOG_NUM_RETAINED_MIN.get(raw)
    changelog_max = CHANGELOG_NUM_RETAINED_MAX.get(raw)
    if (changelog_max or retain_max) < (changelog_min or retain_min):
        raise InvalidOptionError(
            CHANGELOG_NUM_RETAINED_MAX.key,
            changelog_max if changelog_max is not None else f"unset ({retain_max})",
            f"must not be less than {CHANGELOG_NUM_RETAINED_MIN.key} "
            f"({changelog_min if changelog_min is not None else retain_min})",
        )


class Options:
    """A table's options: the raw string map, read through typed declarations."""

    __slots__ = ("_parsed", "_raw")

    def __init__(self, raw: Mapping[str, str]) -> None:
        self._raw = dict(raw)
        self._parsed: dict[str, object] = {}  # each option parsed once

    def get(self, option: Option[V]) -> V:
        if option.key in self._parsed:
            return cast(V, self._parsed[option.key])
        value = option.get(self._raw)
        self._parsed[option.key] = value
        return value

    def raw(self) -> dict[str, str]:
        return dict(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw
