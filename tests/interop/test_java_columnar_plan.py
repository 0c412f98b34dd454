"""Tables written by Java Paimon (0.9 and 1.0) plan from manifest columns exactly as
from objects: Java's manifest schemas, its compactions' DELETE entries, deletion
vectors, a tag and every snapshot of the history, and an append table's files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import shoal
from tests.core.test_columnar_plan import SCHEMA, assert_same_plans, rows
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def _history() -> list[jp.Op[Any]]:
    dv = {"bucket": "2", "deletion-vectors.enabled": "true", "source.split.target-size": "2kb"}
    return [
        jp.create_table(
            "db.pk", SCHEMA, partition_keys=["p"], primary_keys=["p", "id"], options=dv
        ),
        jp.create_table("db.log", SCHEMA, partition_keys=["p"], options={"bucket": "-1"}),
        jp.write("db.pk", pa.concat_tables([rows("a", list(range(30)), 0), rows("b", [1, 2], 0)])),
        jp.write("db.pk", rows("a", [3, 4, 5], 100)),
        jp.compact("db.pk"),
        jp.write("db.pk", rows("a", [6, 7], 0), kind="DELETE"),
        jp.create_tag("db.pk", "t1"),
        jp.write("db.pk", rows("b", [2, 9], 200)),
        jp.write("db.log", rows("a", [1, 2], 0)),
        jp.write("db.log", rows("b", [3], 0)),
    ]


def test_java_tables_plan_from_columns_as_from_objects(
    java: JavaPaimon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    java.run(tmp_path, _history())
    pk = shoal.open_table(str(tmp_path / "db.db" / "pk"))
    for snapshot in pk.snapshots():
        assert_same_plans(pk, monkeypatch, snapshot_id=snapshot.id)
    assert_same_plans(pk, monkeypatch, tag="t1")
    assert_same_plans(pk, monkeypatch, filter=[("p", "=", "a")])
    assert_same_plans(pk, monkeypatch, read_optimized=True)
    log = shoal.open_table(str(tmp_path / "db.db" / "log"))
    assert_same_plans(log, monkeypatch)
