"""Which of the table features that Paimon's options switch on shoal implements.

A table written by Paimon's engines may use features shoal does not implement: other
data file formats, merge engines, deletion vectors, postponed buckets, changelog
producers, branches, default scan positions. Reading such a table as if the feature
were off returns wrong rows (a deletion vector's rows come back, a partial update
looks like a whole row), and writing it breaks what its other readers expect (a
Flink job that follows the changelog sees nothing). So each feature is declared here
with the values shoal implements and what it touches, and shoal refuses, before it
reads or changes anything, the operations the feature would make wrong:

- ``read`` features make the table unreadable by shoal (and so also unwritable);
- ``write`` features make shoal refuse to write data or compact, while reads,
  tags and cleanup still work.

Options that only tune other engines (Flink's sink parallelism, lookup caches, writer
buffers) change nothing that shoal reads or writes, and are let be.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from shoal import option_keys as K
from shoal import options as O
from shoal.errors import InvalidOptionError, UnknownOptionError, UnsupportedFeatureError

Scope = Literal["read", "write"]


@dataclass(frozen=True, slots=True)
class Feature:
    """A table option whose other values switch on something shoal does not implement.

    ``implemented`` says whether shoal implements the option's value on a table with
    (True) or without (False) a primary key; ``what`` names the feature a value
    switches on, for the message; ``default`` is Paimon's value when the option is
    absent."""

    key: str
    what: Callable[[str], str]
    implemented: Callable[[str, bool], bool]
    scope: Scope
    default: str = ""


def _is(*values: str) -> Callable[[str, bool], bool]:
    allowed = {v.lower() for v in values}
    return lambda value, _: value.strip().lower() in allowed


def _empty(value: str, _: bool) -> bool:
    return value.strip() == ""


def _false(value: str, _: bool) -> bool:
    return value.strip().lower() == "false"


def _bucket(value: str, _: bool) -> bool:
    """Fixed buckets, dynamic buckets on a primary-key table, no buckets on an append
    table; other values that are no bucket mode at all are left to the option's own
    validation."""
    return value.strip() != "-2"


_FORMATS = ("parquet", "orc", "avro")


def _per_level_formats(value: str, _: bool) -> bool:
    """``file.format.per.level`` (``0:avro,3:parquet``) naming formats shoal reads and
    writes only."""
    pairs = [p.split(":", 1) for p in value.split(",") if p.strip()]
    return all(len(p) == 2 and p[1].strip().lower() in _FORMATS for p in pairs)


def _changelog_producer(value: str, primary_key: bool) -> bool:
    """No changelog, or a changelog producer on a primary-key table (Paimon refuses one
    on an append table): the input, or the changelog that lookup and full compactions
    write (``compaction/changelog``)."""
    value = value.strip().lower()
    return value == "none" or (value in ("input", "lookup", "full-compaction") and primary_key)


def _named(text: str) -> Callable[[str], str]:
    return lambda value: text.format(value=value)


FEATURES: tuple[Feature, ...] = (
    Feature("file.format", _named("{value} data files"), _is(*_FORMATS), "read", "parquet"),
    Feature(
        "file.format.per.level",
        _named("data file formats per LSM level ({value})"),
        _per_level_formats,
        "read",
    ),
    Feature(
        "merge-engine",
        _named("the {value} merge engine"),
        _is("deduplicate", "first-row", "aggregation", "partial-update"),
        "read",
        "deduplicate",
    ),
    Feature(
        "deletion-vectors.merge-on-read",
        _named("level-0 files merged into reads of a deletion-vector table"),
        _false,
        "read",
        "false",
    ),
    Feature(
        "bucket",
        lambda v: {"-1": "dynamic buckets", "-2": "postponed buckets"}.get(
            v.strip(), f"bucket = {v}"
        ),
        _bucket,
        "read",
        "-1",
    ),
    Feature(
        "sequence.field.sort-order",
        _named("a {value} sequence.field order"),
        _is("ascending"),
        "read",
        "ascending",
    ),
    Feature(
        "record-level.expire-time", _named("record-level expiration ({value})"), _empty, "read"
    ),
    Feature("data-evolution.enabled", _named("data evolution"), _false, "read", "false"),
    Feature("row-tracking.enabled", _named("row tracking"), _false, "read", "false"),
    Feature("data-file.external-paths", _named("data files in external paths"), _empty, "read"),
    Feature(
        "data-file.path-directory",
        _named("data files under the directory {value}"),
        _empty,
        "read",
    ),
    Feature("type", _named("a table of type {value}"), _is("table"), "read", "table"),
    Feature("branch", _named("branch {value}"), _is("main"), "read", "main"),
    Feature("scan.fallback-branch", _named("a fallback branch ({value})"), _empty, "read"),
    Feature("scan.primary-branch", _named("a primary branch ({value})"), _empty, "read"),
    Feature("chain-table.enabled", _named("a chain table"), _false, "read", "false"),
    Feature("blob-field", _named("blob fields ({value})"), _empty, "read"),
    Feature("blob-descriptor-field", _named("blob descriptor fields ({value})"), _empty, "read"),
    Feature("blob-view-field", _named("blob view fields ({value})"), _empty, "read"),
    Feature("vector-field", _named("vector fields ({value})"), _empty, "read"),
    # A default scan position stored with the table changes what a batch read returns.
    *(
        Feature(key, _named(f"a default scan position ({key} = {{value}})"), _empty, "read")
        for key in (
            "scan.snapshot-id",
            "scan.tag-name",
            "scan.timestamp-millis",
            "scan.timestamp",
            "scan.version",
            "scan.watermark",
            "scan.file-creation-time-millis",
            "scan.creation-time-millis",
            "incremental-between",
            "incremental-between-timestamp",
        )
    ),
    Feature(
        "scan.mode",
        _named("scan.mode {value}"),
        _is("default", "latest", "latest-full", "full"),
        "read",
        "default",
    ),
    Feature(
        "changelog-producer",
        _named("the {value} changelog producer"),
        _changelog_producer,
        "write",
        "none",
    ),
    Feature(
        "changelog-file.prefix",
        _named("changelog files named {value}*"),
        _is("changelog-"),
        "write",
        "changelog-",
    ),
    Feature(
        "changelog-file.format",
        _named("{value} changelog files"),
        lambda value, _: value.strip().lower() in ("", "parquet"),
        "write",
    ),
    Feature(
        "bucket-function.type",
        _named("the {value} bucket function"),
        _is("default"),
        "write",
        "default",
    ),
    Feature("ignore-update-before", _named("ignore-update-before"), _false, "write", "false"),
)
# Keys that are arguments of create_table, not options.
_ARGUMENTS = {
    "primary-key": "primary_keys",
    "partition": "partition_keys",
    "path": "the table's location",
}


_CHANGELOG_RETENTION = (
    (O.CHANGELOG_NUM_RETAINED_MIN, O.SNAPSHOT_NUM_RETAINED_MIN),
    (O.CHANGELOG_NUM_RETAINED_MAX, O.SNAPSHOT_NUM_RETAINED_MAX),
    (O.CHANGELOG_TIME_RETAINED, O.SNAPSHOT_TIME_RETAINED),
)


def changelog_retention_above(options: Mapping[str, str]) -> tuple[str, str] | None:
    """The first ``changelog.*`` retention option above its ``snapshot.*`` counterpart,
    with its value: what makes changelogs outlive their snapshots (Paimon's decoupled
    changelog lifecycle); None when they expire together.

    Raises InvalidOptionError for a value that does not parse."""
    for option, snapshot_option in _CHANGELOG_RETENTION:
        value: Any = option.get(options)
        if value is not None and value > snapshot_option.get(options):
            return option.key, options[option.key]
    return None


def decoupled_changelog(options: Mapping[str, str]) -> tuple[Feature, str] | None:
    """The decoupled changelog lifecycle where shoal does not implement it, with the
    option that asks for it: a table without a changelog producer, whose changelog is
    the data files of its APPEND commits (Paimon's expiration then keeps those files and
    the snapshots' data manifest lists for the changelog). None otherwise.

    Raises InvalidOptionError for a value that does not parse."""
    above = changelog_retention_above(options)
    if above is None or options.get("changelog-producer", "none") != "none":
        return None
    key, text = above
    what = _named(
        "changelogs kept longer than their snapshots ({value}) on a table without a "
        "changelog producer (set 'changelog-producer' = 'input' to keep a changelog)"
    )
    return Feature(key, what, lambda _v, _pk: False, "write"), text


def unimplemented(
    options: Mapping[str, str], *, primary_key: bool, scope: Scope = "write"
) -> list[tuple[Feature, str]]:
    """The features ``options`` switch on that shoal does not implement, with their
    values: those that block reading, or with ``scope="write"`` also those that block
    writing (and expiration, for a changelog that outlives its snapshots)."""
    found = []
    for feature in FEATURES:
        if scope == "read" and feature.scope == "write":
            continue
        value = str(options.get(feature.key, feature.default))
        if not feature.implemented(value, primary_key):
            found.append((feature, value))
    if scope == "write":
        if (
            str(options.get("changelog-producer", "none")).strip().lower() == "full-compaction"
            and str(options.get("deletion-vectors.enabled", "false")).strip().lower() == "true"
        ):
            what = _named("the full-compaction changelog producer with deletion vectors")
            feature = Feature("changelog-producer", what, lambda _v, _pk: False, "write")
            found.append((feature, "full-compaction"))
        delta = options.get("full-compaction.delta-commits")
        producer = str(options.get("changelog-producer", "none")).strip().lower()
        if delta is not None and producer != "full-compaction":
            what = _named(
                "full compactions every {value} commits without the full-compaction "
                "changelog producer (Paimon's Flink writer)"
            )
            feature = Feature("full-compaction.delta-commits", what, lambda _v, _pk: False, "write")
            found.append((feature, str(delta)))
        decoupled = decoupled_changelog(options)
        if decoupled is not None:
            found.append(decoupled)
    return found


def require(options: Mapping[str, str], *, primary_key: bool, table: str, scope: Scope) -> None:
    """Refuse an operation of ``scope`` on ``table`` whose options switch on a feature
    shoal does not implement.

    Raises:
        UnsupportedFeatureError: naming the feature and the option.
    """
    found = unimplemented(options, primary_key=primary_key, scope=scope)
    if not found:
        return
    feature, value = found[0]
    action = "read" if feature.scope == "read" else "write to"
    raise UnsupportedFeatureError(
        f"table {table!r} uses {feature.what(value)} ({feature.key} = {value!r}), which shoal "
        f"does not implement, so it cannot {action} the table without giving wrong results; "
        "read and write it with Paimon's own engines (Flink, Spark with the Paimon jar)",
        feature=feature.key,
    )


def check_new_options(options: Mapping[str, str], *, primary_key: bool) -> None:
    """Options a user sets on a table through shoal (``create_table``, option
    changes): every key one that shoal implements, at a value it implements.

    Raises:
        UnknownOptionError: a key nothing reads (a typo, an argument given as an
            option, Hudi's key for something shoal spells otherwise).
        UnsupportedFeatureError: one of Paimon's keys that shoal does not implement,
            or a value of a feature it implements only in part.
        InvalidOptionError: a value that does not parse or contradicts another.
    """
    check_option_keys(options)
    for feature, value in unimplemented(options, primary_key=primary_key):
        raise UnsupportedFeatureError(
            f"{feature.key} = {value!r} asks for {feature.what(value)}, which shoal does not "
            f"implement; leave the option out or give a value shoal implements",
            feature=feature.key,
        )
    O.validate(options)
    require_consumer_mode(options)
    producer = O.CHANGELOG_PRODUCER.get(options)
    if producer not in ("none", "lookup") and O.MERGE_ENGINE.get(options) == "first-row":
        raise InvalidOptionError(
            O.CHANGELOG_PRODUCER.key,
            producer,
            "the first-row merge engine takes only the none and lookup changelog producers "
            "(Paimon refuses the others too)",
        )


def require_consumer_mode(options: Mapping[str, str]) -> None:
    """Refuse ``consumer.mode`` other than ``exactly-once``.

    Paimon's ``at-least-once`` lets each of Flink's reader subtasks record its own
    progress as it reads, unaligned with checkpoints, the consumer keeping the slowest;
    shoal's streaming source has one reader, its driver, and records the consumer
    once per committed micro-batch, which is ``exactly-once``. Storing the other value
    would promise a behaviour nothing provides.

    Raises:
        UnsupportedFeatureError: naming the option.
        InvalidOptionError: a value that is no consumer mode at all.
    """
    mode = O.CONSUMER_MODE.get(options)
    if mode != "exactly-once":
        raise UnsupportedFeatureError(
            f"{O.CONSUMER_MODE.key} = {mode!r} asks for per-reader progress recorded "
            "unaligned with checkpoints (Flink's reader subtasks), which shoal does not "
            "implement: its streaming source records a consumer once per committed "
            f"micro-batch; leave the option out or set it to 'exactly-once'",
            feature=O.CONSUMER_MODE.key,
        )


def check_option_keys(options: Mapping[str, str]) -> None:
    """Every key of ``options`` one of shoal's table options, or the user's own.
    Raises UnknownOptionError or UnsupportedFeatureError (see check_new_options)."""
    declared = {o.key for o in O.declared()}
    for key, value in options.items():
        if key not in declared and O.field_option(key) is None and not K.is_user_key(key):
            raise unknown_option(key, value, declared, what="table option", user_keys=True)


def unknown_option(
    key: str, value: object, known: set[str], *, what: str, user_keys: bool = False
) -> InvalidOptionError | UnsupportedFeatureError:
    """The error for ``key``, which is none of the ``known`` keys of this entry point
    (where ``user_keys`` says whether keys under ``user.`` are the user's own)."""
    aside = " (keys under 'user.' are stored and never read)" if user_keys else ""
    if key in _ARGUMENTS:
        return UnknownOptionError(
            key, value, f"give it as {_ARGUMENTS[key]}, not as a {what}", None
        )
    if key.startswith("hoodie."):
        equivalent = K.hudi_equivalent(key)
        hint = (
            f"shoal's equivalent is {equivalent}"
            if equivalent
            else "shoal has no equivalent; see docs/options.md for the options it has"
        )
        return UnknownOptionError(key, value, f"it is an Apache Hudi option; {hint}", None)
    if K.is_paimon_key(key):
        return UnsupportedFeatureError(
            f"{key!r} is one of Paimon's options, which shoal does not implement; leave it "
            f"out{aside}",
            feature=key,
        )
    suggestion = K.nearest(key, known)
    hint = f"did you mean {suggestion!r}?" if suggestion else "no known key is close"
    return UnknownOptionError(
        key,
        value,
        f"it is not a {what} shoal knows; {hint}{aside}",
        suggestion,
    )
