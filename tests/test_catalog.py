"""The filesystem catalog and opening tables by path."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import shoal
from tests.conftest import EVENTS_SCHEMA, events


def test_create_get_list_drop(catalog: shoal.Catalog, warehouse: str) -> None:
    table = catalog.create_table("db.events", EVENTS_SCHEMA, partition_keys=["dt"])
    assert table.path == f"{warehouse}/db.db/events"
    assert os.path.isfile(os.path.join(table.path, "schema", "schema-0"))
    catalog.create_table("db.other", EVENTS_SCHEMA)
    assert catalog.list_tables("db") == ["events", "other"]
    assert catalog.list_databases() == ["db"]
    assert catalog.get_table("db.events").partition_keys == ["dt"]
    catalog.drop_table("db.other")
    assert catalog.list_tables("db") == ["events"]
    with pytest.raises(shoal.TableNotFoundError):
        catalog.get_table("db.other")


def test_errors_for_missing_and_existing(catalog: shoal.Catalog) -> None:
    catalog.create_table("db.t", EVENTS_SCHEMA)
    with pytest.raises(shoal.TableAlreadyExistsError, match="ignore_if_exists"):
        catalog.create_table("db.t", EVENTS_SCHEMA)
    assert catalog.create_table("db.t", EVENTS_SCHEMA, ignore_if_exists=True).name == "db.t"
    with pytest.raises(shoal.TableNotFoundError, match=r"db\.missing"):
        catalog.get_table("db.missing")
    with pytest.raises(shoal.TableNotFoundError):
        catalog.drop_table("db.missing")
    with pytest.raises(shoal.DatabaseNotFoundError):
        catalog.list_tables("nodb")
    with pytest.raises(shoal.InvalidArgumentError):
        catalog.get_table("../escape.t")


def test_invalid_definitions_write_nothing(catalog: shoal.Catalog, warehouse: str) -> None:
    with pytest.raises(shoal.SchemaMismatchError, match="not in the schema"):
        catalog.create_table("db.t", EVENTS_SCHEMA, partition_keys=["nope"])
    with pytest.raises(shoal.InvalidOptionError, match=r"commit\.max-retries"):
        catalog.create_table("db.t", EVENTS_SCHEMA, options={"commit.max-retries": "-1"})
    with pytest.raises(shoal.UnsupportedFeatureError, match=r"file\.format"):
        catalog.create_table("db.t", EVENTS_SCHEMA, options={"file.format": "lance"})
    with pytest.raises(shoal.InvalidOptionError, match="merge engines"):
        catalog.create_table("db.t", EVENTS_SCHEMA, options={"fields.id.ignore-retract": "true"})
    with pytest.raises(shoal.SchemaMismatchError, match="no Paimon counterpart"):
        catalog.create_table("db.t", pa.schema([("n", pa.null())]))
    assert not os.path.exists(os.path.join(warehouse, "db.db", "t"))


def test_open_table_by_path_and_file_uri(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA)
    table.append(events(range(3)))
    assert shoal.open_table(table.path).to_arrow().num_rows == 3
    assert shoal.open_table("file://" + table.path).to_arrow().num_rows == 3
    with pytest.raises(shoal.TableNotFoundError):
        shoal.open_table(table.path + "-missing")


def test_user_options_are_kept(catalog: shoal.Catalog) -> None:
    table = catalog.create_table("db.t", EVENTS_SCHEMA, options={"user.owner": "x"})
    assert table.options["user.owner"] == "x"
    options = table.system_table("options")
    assert dict(zip(options["key"].to_pylist(), options["value"].to_pylist(),
                    strict=True)) == {"user.owner": "x"}
