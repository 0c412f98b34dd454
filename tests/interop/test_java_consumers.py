"""Consumers between Paimon's Java implementation (0.9 and 1.0) and shoal: a consumer
file shoal records is read by Java's ConsumerManager and holds back Java's snapshot
expiration; one Java records (ConsumerManager.resetConsumer) holds the same bytes as
shoal's, is read by shoal and holds back shoal's expiration."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

import shoal
from shoal.core.consumers import encode_consumer
from tests.interop import java_paimon as jp
from tests.interop.java_paimon import VERSIONS, JavaPaimon

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), False), ("v", pa.string())])


@pytest.fixture(scope="module", params=VERSIONS)
def java(request: pytest.FixtureRequest) -> JavaPaimon:
    return JavaPaimon(request.param)


def rows(i: int) -> pa.Table:
    return pa.table({"id": [i], "v": [f"v{i}"]}, schema=SCHEMA)


def test_a_consumer_shoal_records_holds_back_javas_expiration(
    java: JavaPaimon, tmp_path: Path
) -> None:
    ops: list[jp.Op[object]] = [jp.create_table("db.t", SCHEMA, options={"bucket": "-1"})]
    ops += [jp.write("db.t", rows(i), overwrite={}) for i in range(6)]
    java.run(tmp_path, ops)
    table = shoal.Catalog(str(tmp_path)).get_table("db.t")
    expected = {s: table.to_arrow(snapshot_id=s).to_pylist() for s in range(3, 7)}
    table.reset_consumer("shoal-reader", 3)
    later_ms = int((time.time() + 60) * 1000)
    consumers, expired = java.run(
        tmp_path,
        [jp.consumers("db.t"), jp.expire_snapshots("db.t", retain_max=1, older_than_ms=later_ms)],
    )
    assert consumers == {"shoal-reader": 3}
    assert expired == 2  # Java's retain_max alone would expire 5
    reopened = shoal.open_table(table.path)
    assert [s.id for s in reopened.snapshots()] == [3, 4, 5, 6]
    for snapshot_id, before in expected.items():
        assert reopened.to_arrow(snapshot_id=snapshot_id).to_pylist() == before
    # Deleted by shoal, the consumer no longer holds Java back.
    reopened.delete_consumer("shoal-reader")
    consumers, expired = java.run(
        tmp_path,
        [jp.consumers("db.t"), jp.expire_snapshots("db.t", retain_max=1, older_than_ms=later_ms)],
    )
    assert (consumers, expired) == ({}, 3)


def test_a_consumer_java_records_holds_back_shoals_expiration(
    java: JavaPaimon, tmp_path: Path
) -> None:
    table = shoal.Catalog(str(tmp_path)).create_table("db.t", SCHEMA, options={"bucket": "-1"})
    for i in range(6):
        table.overwrite(rows(i))
    expected = {s: table.to_arrow(snapshot_id=s).to_pylist() for s in range(4, 7)}
    java.run(
        tmp_path,
        [jp.reset_consumer("db.t", "java-reader", 4), jp.reset_consumer("db.t", "other", 5)],
    )
    path = Path(table.path) / "consumer" / "consumer-java-reader"
    assert path.read_bytes() == encode_consumer(4)  # the same bytes as shoal writes
    assert table.consumers() == {"java-reader": 4, "other": 5}
    result = table.expire_snapshots(retain_max=1, older_than=datetime.now() + timedelta(days=1))
    assert [s.id for s in table.snapshots()] == [4, 5, 6]
    assert result.held_by_consumers == ("java-reader",)
    for snapshot_id, before in expected.items():
        assert table.to_arrow(snapshot_id=snapshot_id).to_pylist() == before
    # Java moves its consumer on; shoal's next expiration follows.
    java.run(tmp_path, [jp.reset_consumer("db.t", "java-reader", 6)])
    result = table.expire_snapshots(retain_max=1, older_than=datetime.now() + timedelta(days=1))
    assert [s.id for s in table.snapshots()] == [5, 6]
    assert result.held_by_consumers == ("other",)
