"""Options and table features: every key a user gives is implemented or refused, and a
table that uses a feature shoal does not implement is refused before anything is read
or written (shoal.features, shoal.option_keys)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shoal
from shoal import option_keys as K
from shoal import options as O
from shoal.spark.source_options import KNOWN_KEYS, SPARK_CATALOG_PROPERTIES, SourceOptions
from tests.conftest import EVENTS_SCHEMA, events, sorted_rows

DECLARED = [o.key for o in O.declared()]
# A valid value for each declared key, on an append table with no buckets.
VALID = {
    "bucket": "-1",
    "bucket-key": "",
    "file.format": "parquet",
    "merge-engine": "deduplicate",
    "sequence.field": "",
    "rowkind.field": "",
    "compaction.event-time.field": "",
    "partition.timestamp-pattern": "",
    "partition.timestamp-formatter": "",
    "tag.automatic-creation": "none",
    "tag.default-time-retained": "1 d",
    "partition.expiration-time": "30 d",
    "consumer.expiration-time": "1 d",
    "consumer-id": "reader",
    "dynamic-bucket.initial-buckets": "1",
    "dynamic-bucket.assigner-parallelism": "1",
    "changelog.num-retained.min": "10",
    "changelog.num-retained.max": "10",
    "changelog.time-retained": "1 h",
}


def _valid(key: str) -> str:
    if key in VALID:
        return VALID[key]
    option = next(o for o in O.declared() if o.key == key)
    default = option.default
    if default is None:
        return ""
    if isinstance(default, bool):
        return str(default).lower()
    if hasattr(default, "total_seconds"):
        return f"{int(default.total_seconds() * 1000)} ms"
    return str(default)


def test_every_declared_option_has_a_valid_value_here() -> None:
    options = {k: _valid(k) for k in DECLARED}
    options["snapshot.num-retained.max"] = options["snapshot.num-retained.min"]
    O.validate(options)


# --- where options enter: create_table ------------------------------------------------------


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("buket", "bucket"),
        ("snapshot.num-retained.mx", "snapshot.num-retained.max"),
        ("compaction.event-time.data-latncy", "compaction.event-time.data-latency"),
        ("partition.expiration-tme", "partition.expiration-time"),
        ("Bucket", "bucket"),
    ],
)
def test_a_typo_is_refused_with_the_key_it_means(
    catalog: shoal.Catalog, typo: str, meant: str
) -> None:
    with pytest.raises(shoal.UnknownOptionError, match=f"did you mean '{meant}'") as info:
        catalog.create_table("db.t", EVENTS_SCHEMA, options={typo: "4"})
    assert info.value.suggestion == meant
    assert info.value.key == typo
    with pytest.raises(shoal.TableNotFoundError):
        catalog.get_table("db.t")


def test_a_hudi_key_names_its_shoal_equivalent(catalog: shoal.Catalog) -> None:
    hudi = "org.apache.hudi.table.action.compact.strategy.EventTimeBasedCompactionStrategy"
    with pytest.raises(shoal.UnknownOptionError, match=r"compaction\.strategy"):
        catalog.create_table("db.t", EVENTS_SCHEMA, options={"hoodie.compaction.strategy": hudi})
    with pytest.raises(shoal.UnknownOptionError, match="no equivalent"):
        catalog.create_table("db.t", EVENTS_SCHEMA, options={"hoodie.clean.async": "true"})


@pytest.mark.parametrize(
    "options",
    [
        {"deletion-vectors.merge-on-read": "true"},
        {"sink.parallelism": "4"},
        {"changelog-producer": "lookup"},
        {"file.format": "lance"},
    ],
)
def test_paimon_options_shoal_does_not_implement_are_refused(
    catalog: shoal.Catalog, options: dict[str, str]
) -> None:
    with pytest.raises(shoal.UnsupportedFeatureError) as info:
        catalog.create_table("db.t", EVENTS_SCHEMA, options=options)
    assert info.value.feature == next(iter(options))


def test_an_argument_given_as_an_option_says_which_argument(catalog: shoal.Catalog) -> None:
    with pytest.raises(shoal.UnknownOptionError, match="primary_keys"):
        catalog.create_table("db.t", EVENTS_SCHEMA, options={"primary-key": "id"})


def test_user_keys_are_stored_and_read_back(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA, options={"user.team": "orders"})
    assert shoal.open_table(table.path).options == {"user.team": "orders"}


_KEY_TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz.-_", min_size=1, max_size=30)


def _typo(key: str, data: st.DataObject) -> str:
    i = data.draw(st.integers(0, len(key) - 1))
    kind = data.draw(st.sampled_from(["drop", "swap", "double"]))
    if kind == "drop":
        return key[:i] + key[i + 1 :]
    if kind == "double":
        return key[:i] + key[i] + key[i:]
    j = min(i + 1, len(key) - 1)
    chars = list(key)
    chars[i], chars[j] = chars[j], chars[i]
    return "".join(chars)


@st.composite
def option_dicts(draw: st.DrawFn) -> dict[str, str]:
    data = draw(st.data())
    options: dict[str, str] = {}
    for _ in range(draw(st.integers(0, 4))):
        source = draw(st.sampled_from(["declared", "typo", "unknown", "paimon", "user", "hudi"]))
        if source == "declared":
            key = draw(st.sampled_from(DECLARED))
            options[key] = _valid(key)
        elif source == "typo":
            options[_typo(draw(st.sampled_from(DECLARED)), data)] = "1"
        elif source == "unknown":
            options[draw(_KEY_TEXT)] = "1"
        elif source == "paimon":
            options[draw(st.sampled_from(sorted(K.PAIMON_KEYS)))] = "1"
        elif source == "user":
            options["user." + draw(_KEY_TEXT)] = "x"
        else:
            options[draw(st.sampled_from(sorted(K.HUDI_EQUIVALENTS)))] = "1"
    return options


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(options=option_dicts())
def test_no_option_is_accepted_silently(tmp_path: Path, options: dict[str, str]) -> None:
    """create_table either keeps every key (each one shoal implements, or the user's
    own) exactly as given, or refuses with a ShoalError and leaves no table behind."""
    catalog = shoal.Catalog(str(tmp_path / "wh"))
    name = f"db.t{uuid.uuid4().hex}"
    try:
        table = catalog.create_table(name, EVENTS_SCHEMA, options=options)
    except shoal.ShoalError:
        with pytest.raises(shoal.TableNotFoundError):
            catalog.get_table(name)
        return
    declared = set(DECLARED)
    assert all(k in declared or K.is_user_key(k) for k in options), options
    assert table.options == options


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(options=option_dicts())
def test_no_option_change_is_accepted_silently(tmp_path: Path, options: dict[str, str]) -> None:
    """update_schema's set_option either keeps every key exactly as given, or refuses
    with a ShoalError and writes no schema version."""
    table = shoal.Catalog(str(tmp_path / "wh")).create_table(
        f"db.t{uuid.uuid4().hex}", EVENTS_SCHEMA
    )
    try:
        with table.update_schema() as update:
            for key, value in options.items():
                update.set_option(key, value)
    except shoal.ShoalError:
        assert table.options == {}
        assert [p.name for p in (Path(table.path) / "schema").iterdir()] == ["schema-0"]
        return
    declared = set(DECLARED)
    assert all(k in declared or K.is_user_key(k) for k in options), options
    assert table.options == options


@settings(max_examples=150, deadline=None)
@given(options=option_dicts())
def test_no_data_source_option_is_accepted_silently(options: dict[str, str]) -> None:
    """The Spark source's options: each key one the source reads (or a property of a
    Spark catalog entry, which describes no read or write), or refused."""
    raw = {"path": "/tmp/t", **options}
    try:
        SourceOptions.parse(raw)
    except shoal.ShoalError:
        return
    assert all(k.lower() in KNOWN_KEYS | SPARK_CATALOG_PROPERTIES for k in raw), raw


# --- opening a table that uses a feature shoal does not implement ---------------------------


def _with_options(table: shoal.Table, extra: dict[str, str]) -> str:
    """The table's schema file rewritten with ``extra`` options, as a table written by
    Paimon's engines would hold them."""
    path = Path(table.path) / "schema" / "schema-0"
    document = json.loads(path.read_text())
    document["options"].update(extra)
    path.write_text(json.dumps(document))
    return table.path


@pytest.mark.parametrize(
    ("extra", "feature"),
    [
        (
            {"deletion-vectors.enabled": "true", "deletion-vectors.merge-on-read": "true"},
            "deletion-vectors.merge-on-read",
        ),
        (
            {
                "merge-engine": "partial-update",
                "fields.name.sequence-group": "value",
                "fields.value.aggregate-function": "first_non_null_value",
                "partial-update.remove-record-on-sequence-group": "name",
            },
            "partial-update.remove-record-on-sequence-group",
        ),
        ({"file.format": "lance"}, "file.format"),
        ({"bucket": "-2"}, "bucket"),
        ({"scan.tag-name": "v1"}, "scan.tag-name"),
        ({"record-level.expire-time": "1 d"}, "record-level.expire-time"),
    ],
)
def test_a_table_using_a_feature_shoal_does_not_read_is_refused(
    catalog: shoal.Catalog, extra: dict[str, str], feature: str
) -> None:
    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, primary_keys=["dt", "id"], options={"bucket": "2"}
    )
    table.upsert(events(range(3)))
    path = _with_options(table, extra)
    with pytest.raises(shoal.UnsupportedFeatureError) as info:
        shoal.open_table(path)
    assert info.value.feature == feature


def test_a_table_whose_deletion_vectors_were_switched_on_is_written_with_them(
    catalog: shoal.Catalog,
) -> None:
    """Level-0 files written before the switch are lifted with the next write's."""
    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, primary_keys=["dt", "id"], options={"bucket": "2"}
    )
    table.upsert(events(range(3)))
    opened = shoal.open_table(_with_options(table, {"deletion-vectors.enabled": "true"}))
    assert opened.to_arrow().num_rows == 0  # level 0 is not read with deletion vectors
    opened.upsert(events(range(2, 5)))
    assert sorted_rows(opened.to_arrow(), "id") == sorted_rows(events(range(5)), "id")
    assert {s.commit_kind for s in opened.snapshots()} == {"APPEND", "COMPACT"}


def test_a_table_with_a_changelog_feature_shoal_does_not_write_reads_but_refuses_writes(
    catalog: shoal.Catalog,
) -> None:
    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, primary_keys=["dt", "id"], options={"bucket": "2"}
    )
    table.upsert(events(range(3)))
    # Paimon's Flink writer compacts such a table fully every 3 commits; shoal does not.
    opened = shoal.open_table(_with_options(table, {"full-compaction.delta-commits": "3"}))
    assert opened.to_arrow().num_rows == 3
    before = sorted(p.name for p in Path(table.path).rglob("*") if p.is_file())
    for write in (opened.upsert, opened.append):
        with pytest.raises(shoal.UnsupportedFeatureError, match="delta-commits"):
            write(events(range(5)))
    with pytest.raises(shoal.UnsupportedFeatureError):
        opened.compact("full")
    assert sorted(p.name for p in Path(table.path).rglob("*") if p.is_file()) == before
    opened.create_tag("kept")  # tags and cleanup do not write data
    assert opened.expire_snapshots(retain_max=1).expired_snapshots == 0


def test_full_compaction_changelog_with_deletion_vectors_is_refused(
    catalog: shoal.Catalog,
) -> None:
    options = {"bucket": "1", "changelog-producer": "full-compaction"}
    with pytest.raises(shoal.UnsupportedFeatureError) as info:
        catalog.create_table(
            "db.t",
            EVENTS_SCHEMA,
            primary_keys=["dt", "id"],
            options={**options, "deletion-vectors.enabled": "true"},
        )
    assert info.value.feature == "changelog-producer"
    assert not catalog.table_exists("db.t")


def test_tuning_options_of_other_engines_do_not_stop_a_table(catalog: shoal.Catalog) -> None:
    table = catalog.create_table(
        "db.t", EVENTS_SCHEMA, primary_keys=["dt", "id"], options={"bucket": "2"}
    )
    table.upsert(events(range(3)))
    opened = shoal.open_table(
        _with_options(table, {"sink.parallelism": "4", "write-buffer-size": "256 mb"})
    )
    opened.upsert(events(range(2, 6)))
    assert opened.to_arrow().num_rows == 6
