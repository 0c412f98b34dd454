"""Table options: Paimon's duration and memory-size syntax, typed defaults, validation."""

from __future__ import annotations

from datetime import timedelta

import pytest

import shoal
from shoal import options as O
from shoal.options import Option, Options

# --- durations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 h", timedelta(hours=1)),
        ("1h", timedelta(hours=1)),
        ("2 hours", timedelta(hours=2)),
        ("1 hour", timedelta(hours=1)),
        ("30 min", timedelta(minutes=30)),
        ("30min", timedelta(minutes=30)),
        ("5 m", timedelta(minutes=5)),
        ("5 minutes", timedelta(minutes=5)),
        ("1ms", timedelta(milliseconds=1)),
        ("250 millis", timedelta(milliseconds=250)),
        ("7 d", timedelta(days=7)),
        ("1 day", timedelta(days=1)),
        ("3 days", timedelta(days=3)),
        ("10 s", timedelta(seconds=10)),
        ("10s", timedelta(seconds=10)),
        ("45 sec", timedelta(seconds=45)),
        ("2 seconds", timedelta(seconds=2)),
        ("1500 us", timedelta(microseconds=1500)),
        ("1500 µs", timedelta(microseconds=1500)),
        ("2000000 ns", timedelta(milliseconds=2)),
        ("0 s", timedelta(0)),
        ("1 H", timedelta(hours=1)),
        ("30 MIN", timedelta(minutes=30)),
        ("  12 h  ", timedelta(hours=12)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert O.parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", timedelta(0)),
        ("1", timedelta(milliseconds=1)),
        ("1500", timedelta(milliseconds=1500)),
        ("86400000", timedelta(days=1)),
    ],
)
def test_bare_number_is_milliseconds(text: str, expected: timedelta) -> None:
    assert O.parse_duration(text) == expected


@pytest.mark.parametrize(
    "text",
    ["", "h", "1 fortnight", "-1 s", "1 h 30 min", "one hour", "1e3", "1,5 s", "1 hh"],
)
def test_invalid_duration(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        O.parse_duration(text)


# --- memory sizes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("128 mb", 128 << 20),
        ("8MB", 8 << 20),
        ("8mb", 8 << 20),
        ("1 gb", 1 << 30),
        ("1g", 1 << 30),
        ("2 m", 2 << 20),
        ("64 kb", 64 << 10),
        ("64k", 64 << 10),
        ("3 tb", 3 << 40),
        ("10 b", 10),
        ("10 bytes", 10),
        ("1 mebibytes", 1 << 20),
        ("1 kibibytes", 1 << 10),
        ("1 gibibytes", 1 << 30),
        ("0", 0),
        ("4096", 4096),
        ("  16 MB ", 16 << 20),
    ],
)
def test_parse_memory_size(text: str, expected: int) -> None:
    assert O.parse_memory_size(text) == expected


@pytest.mark.parametrize("text", ["", "mb", "12 parsecs", "-1 mb", "1 mb 2 kb", "lots"])
def test_invalid_memory_size(text: str) -> None:
    with pytest.raises(ValueError, match="memory size"):
        O.parse_memory_size(text)


# --- declared options --------------------------------------------------------------------------

# Every declared option's key, as Paimon spells it: they are on-disk format.
DECLARED_KEYS = {
    "BUCKET": "bucket",
    "BUCKET_KEY": "bucket-key",
    "DYNAMIC_BUCKET_TARGET_ROW_NUM": "dynamic-bucket.target-row-num",
    "DYNAMIC_BUCKET_INITIAL_BUCKETS": "dynamic-bucket.initial-buckets",
    "DYNAMIC_BUCKET_ASSIGNER_PARALLELISM": "dynamic-bucket.assigner-parallelism",
    "DYNAMIC_BUCKET_MAX_BUCKETS": "dynamic-bucket.max-buckets",
    "FILE_FORMAT": "file.format",
    "FILE_FORMAT_PER_LEVEL": "file.format.per.level",
    "FILE_COMPRESSION": "file.compression",
    "TARGET_FILE_SIZE": "target-file-size",
    "PARTITION_DEFAULT_NAME": "partition.default-name",
    "PARTITION_LEGACY_NAME": "partition.legacy-name",
    "DATA_FILE_PREFIX": "data-file.prefix",
    "STATS_MODE": "metadata.stats-mode",
    "MANIFEST_TARGET_FILE_SIZE": "manifest.target-file-size",
    "MANIFEST_MERGE_MIN_COUNT": "manifest.merge-min-count",
    "MANIFEST_FULL_COMPACTION_SIZE": "manifest.full-compaction-threshold-size",
    "MANIFEST_COMPRESSION": "manifest.compression",
    "COMMIT_MAX_RETRIES": "commit.max-retries",
    "MERGE_ENGINE": "merge-engine",
    "FIELDS_AGGREGATE_FUNCTION": "fields.<field>.aggregate-function",
    "FIELDS_DEFAULT_AGGREGATE_FUNCTION": "fields.default-aggregate-function",
    "FIELDS_IGNORE_RETRACT": "fields.<field>.ignore-retract",
    "FIELDS_LIST_AGG_DELIMITER": "fields.<field>.list-agg-delimiter",
    "FIELDS_DISTINCT": "fields.<field>.distinct",
    "FIELDS_NESTED_KEY": "fields.<field>.nested-key",
    "AGGREGATION_REMOVE_RECORD_ON_DELETE": "aggregation.remove-record-on-delete",
    "PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE": "partial-update.remove-record-on-delete",
    "FIELDS_SEQUENCE_GROUP": "fields.<field>.sequence-group",
    "PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP": (
        "partial-update.remove-record-on-sequence-group"
    ),
    "SEQUENCE_FIELD": "sequence.field",
    "IGNORE_DELETE": "ignore-delete",
    "ROWKIND_FIELD": "rowkind.field",
    "CHANGELOG_PRODUCER": "changelog-producer",
    "CHANGELOG_PRODUCER_ROW_DEDUPLICATE": "changelog-producer.row-deduplicate",
    "CHANGELOG_PRODUCER_ROW_DEDUPLICATE_IGNORE_FIELDS": (
        "changelog-producer.row-deduplicate-ignore-fields"
    ),
    "FULL_COMPACTION_DELTA_COMMITS": "full-compaction.delta-commits",
    "LOOKUP_WAIT": "lookup-wait",
    "LOOKUP_WAIT_LEGACY": "changelog-producer.lookup-wait",
    "WRITE_ONLY": "write-only",
    "DELETION_VECTORS_ENABLED": "deletion-vectors.enabled",
    "DELETION_VECTORS_MODIFIABLE": "deletion-vectors.modifiable",
    "DELETION_VECTORS_BITMAP64": "deletion-vectors.bitmap64",
    "COMPACTION_FORCE_UP_LEVEL_0": "compaction.force-up-level-0",
    "NUM_SORTED_RUN_COMPACTION_TRIGGER": "num-sorted-run.compaction-trigger",
    "NUM_LEVELS": "num-levels",
    "COMPACTION_SIZE_RATIO": "compaction.size-ratio",
    "COMPACTION_MAX_SIZE_AMPLIFICATION": "compaction.max-size-amplification-percent",
    "COMPACTION_STRATEGY": "compaction.strategy",
    "COMPACTION_EVENT_TIME_FIELD": "compaction.event-time.field",
    "COMPACTION_EVENT_TIME_DATA_LATENCY": "compaction.event-time.data-latency",
    "COMPACTION_EVENT_TIME_EXACT_SPLIT": "compaction.event-time.exact-split",
    "TAG_DEFAULT_TIME_RETAINED": "tag.default-time-retained",
    "TAG_AUTOMATIC_CREATION": "tag.automatic-creation",
    "TAG_CREATION_PERIOD": "tag.creation-period",
    "TAG_CREATION_DELAY": "tag.creation-delay",
    "TAG_PERIOD_FORMATTER": "tag.period-formatter",
    "TAG_NUM_RETAINED_MAX": "tag.num-retained-max",
    "SPLIT_TARGET_SIZE": "source.split.target-size",
    "SPLIT_OPEN_FILE_COST": "source.split.open-file-cost",
    "SNAPSHOT_NUM_RETAINED_MIN": "snapshot.num-retained.min",
    "SNAPSHOT_NUM_RETAINED_MAX": "snapshot.num-retained.max",
    "SNAPSHOT_TIME_RETAINED": "snapshot.time-retained",
    "SNAPSHOT_EXPIRE_LIMIT": "snapshot.expire.limit",
    "CHANGELOG_NUM_RETAINED_MIN": "changelog.num-retained.min",
    "CHANGELOG_NUM_RETAINED_MAX": "changelog.num-retained.max",
    "CHANGELOG_TIME_RETAINED": "changelog.time-retained",
    "SNAPSHOT_CLEAN_EMPTY_DIRECTORIES": "snapshot.clean-empty-directories",
    "CONSUMER_EXPIRATION_TIME": "consumer.expiration-time",
    "CONSUMER_ID": "consumer-id",
    "CONSUMER_IGNORE_PROGRESS": "consumer.ignore-progress",
    "CONSUMER_MODE": "consumer.mode",
    "PARTITION_EXPIRATION_TIME": "partition.expiration-time",
    "PARTITION_EXPIRATION_CHECK_INTERVAL": "partition.expiration-check-interval",
    "PARTITION_EXPIRATION_STRATEGY": "partition.expiration-strategy",
    "PARTITION_EXPIRATION_MAX_NUM": "partition.expiration-max-num",
    "PARTITION_TIMESTAMP_FORMATTER": "partition.timestamp-formatter",
    "PARTITION_TIMESTAMP_PATTERN": "partition.timestamp-pattern",
}


@pytest.mark.parametrize(("attribute", "key"), list(DECLARED_KEYS.items()))
def test_option_key_is_pinned(attribute: str, key: str) -> None:
    assert getattr(O, attribute).key == key


def test_declared_is_exactly_the_pinned_keys_in_order() -> None:
    assert [o.key for o in O.declared()] == list(DECLARED_KEYS.values())
    assert all(o.doc for o in O.declared())


DEFAULTS = [
    (O.BUCKET, -1),
    (O.BUCKET_KEY, ""),
    (O.FILE_FORMAT, "parquet"),
    (O.FILE_COMPRESSION, "zstd"),
    (O.TARGET_FILE_SIZE, 128 << 20),
    (O.PARTITION_DEFAULT_NAME, "__DEFAULT_PARTITION__"),
    (O.PARTITION_LEGACY_NAME, True),
    (O.DATA_FILE_PREFIX, "data-"),
    (O.STATS_MODE, "truncate(16)"),
    (O.MANIFEST_TARGET_FILE_SIZE, 8 << 20),
    (O.MANIFEST_MERGE_MIN_COUNT, 30),
    (O.MANIFEST_FULL_COMPACTION_SIZE, 16 << 20),
    (O.MANIFEST_COMPRESSION, "zstd"),
    (O.COMMIT_MAX_RETRIES, 10),
    (O.SPLIT_TARGET_SIZE, 128 << 20),
    (O.SPLIT_OPEN_FILE_COST, 4 << 20),
    (O.SNAPSHOT_NUM_RETAINED_MIN, 10),
    (O.SNAPSHOT_NUM_RETAINED_MAX, 2**31 - 1),
    (O.SNAPSHOT_TIME_RETAINED, timedelta(hours=1)),
    (O.SNAPSHOT_EXPIRE_LIMIT, 50),
    (O.SNAPSHOT_CLEAN_EMPTY_DIRECTORIES, False),
    (O.PARTITION_EXPIRATION_CHECK_INTERVAL, timedelta(hours=1)),
    (O.PARTITION_EXPIRATION_STRATEGY, "values-time"),
    (O.PARTITION_EXPIRATION_MAX_NUM, 100),
    (O.PARTITION_TIMESTAMP_FORMATTER, ""),
    (O.PARTITION_TIMESTAMP_PATTERN, ""),
]


@pytest.mark.parametrize(("option", "default"), DEFAULTS, ids=[o.key for o, _ in DEFAULTS])
def test_typed_default(option: Option[object], default: object) -> None:
    assert option.default == default
    assert option.get({}) == default
    assert Options({}).get(option) == default
    assert type(option.get({})) is type(default)


@pytest.mark.parametrize(
    ("option", "raw", "value"),
    [
        (O.BUCKET, "4", 4),
        (O.BUCKET, " 16 ", 16),
        (O.BUCKET, "-1", -1),
        (O.BUCKET_KEY, "a,b", "a,b"),
        (O.TARGET_FILE_SIZE, "256 mb", 256 << 20),
        (O.MANIFEST_TARGET_FILE_SIZE, "2MB", 2 << 20),
        (O.MANIFEST_MERGE_MIN_COUNT, "2", 2),
        (O.MANIFEST_COMPRESSION, "none", "none"),
        (O.MANIFEST_COMPRESSION, "snappy", "snappy"),
        (O.COMMIT_MAX_RETRIES, "0", 0),
        (O.SPLIT_OPEN_FILE_COST, "1024", 1024),
        (O.SNAPSHOT_TIME_RETAINED, "30 min", timedelta(minutes=30)),
        (O.SNAPSHOT_TIME_RETAINED, "7 d", timedelta(days=7)),
        (O.SNAPSHOT_TIME_RETAINED, "60000", timedelta(minutes=1)),
        (O.SNAPSHOT_NUM_RETAINED_MIN, "1", 1),
        (O.SNAPSHOT_EXPIRE_LIMIT, "5", 5),
        (O.PARTITION_DEFAULT_NAME, "NULL_PART", "NULL_PART"),
        (O.PARTITION_LEGACY_NAME, "false", False),
        (O.PARTITION_LEGACY_NAME, "FALSE", False),
        (O.PARTITION_LEGACY_NAME, " True ", True),
    ],
)
def test_typed_value(option: Option[object], raw: str, value: object) -> None:
    assert option.get({option.key: raw}) == value
    assert Options({option.key: raw, "unrelated": "x"}).get(option) == value


@pytest.mark.parametrize(
    ("option", "raw"),
    [
        (O.BUCKET, "abc"),
        (O.BUCKET, "0"),
        (O.BUCKET, "-2"),
        (O.BUCKET, "1.5"),
        (O.BUCKET, ""),
        (O.PARTITION_LEGACY_NAME, "yes"),
        (O.PARTITION_LEGACY_NAME, "1"),
        (O.TARGET_FILE_SIZE, "12 parsecs"),
        (O.MANIFEST_MERGE_MIN_COUNT, "1"),
        (O.MANIFEST_COMPRESSION, "lz4"),
        (O.COMMIT_MAX_RETRIES, "-1"),
        (O.SNAPSHOT_NUM_RETAINED_MIN, "0"),
        (O.SNAPSHOT_NUM_RETAINED_MAX, "0"),
        (O.SNAPSHOT_TIME_RETAINED, "1 fortnight"),
        (O.SNAPSHOT_EXPIRE_LIMIT, "many"),
    ],
)
def test_invalid_value_raises_with_key(option: Option[object], raw: str) -> None:
    with pytest.raises(shoal.InvalidOptionError) as info:
        option.get({option.key: raw})
    assert info.value.key == option.key
    assert info.value.value == raw
    assert repr(option.key) in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(shoal.InvalidOptionError):
        Options({option.key: raw}).get(option)
    with pytest.raises(shoal.InvalidOptionError) as info:
        O.validate({"fine": "x", option.key: raw})
    assert info.value.key == option.key


def test_validate_accepts_valid_and_unknown_options() -> None:
    O.validate({})
    O.validate({"bucket": "4", "snapshot.time-retained": "2 h", "some.engine.option": "?"})


def test_options_keeps_the_raw_map() -> None:
    raw = {"bucket": "3", "custom": "kept"}
    opts = Options(raw)
    raw["bucket"] = "5"  # Options copied the map
    assert opts.get(O.BUCKET) == 3
    assert opts.raw() == {"bucket": "3", "custom": "kept"}
    opts.raw()["bucket"] = "9"  # and hands out copies
    assert opts.get(O.BUCKET) == 3
    assert "custom" in opts
    assert "bucket" in opts
    assert "missing" not in opts
