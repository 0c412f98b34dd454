"""Tables on GCS and Azure (the emulators): every operation gives the answer it gives on
the local disk, concurrent committers lose no commit, and cleanup deletes exactly what
it deletes locally."""

from __future__ import annotations

import os
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

import shoal
from shoal.table import Table
from tests.conftest import EVENTS_SCHEMA, events
from tests.stores.store_support import StoreEnv

DAY1, DAY2 = "2026-11-01", "2026-11-02"


def _story(catalog: shoal.Catalog) -> dict[str, Any]:
    """Appends, an overwrite, tags and time travel on an append table; upserts, a
    delete and a compaction on a primary-key table; what each read returned."""
    t = catalog.create_table("db.events", EVENTS_SCHEMA, partition_keys=["dt"])
    t.append(events(range(5)))
    t.append(events(range(5, 9), dt=DAY2))
    t.create_tag("before")
    t.overwrite(events([100, 101]), partition={"dt": DAY1})
    t.append(events([7], dt=DAY2))
    pk = catalog.create_table(
        "db.pk", EVENTS_SCHEMA, partition_keys=["dt"], primary_keys=["dt", "id"],
        options={"bucket": "2"},
    )  # fmt: skip
    pk.upsert(events(range(10)))
    pk.upsert(events(range(5, 15)).set_column(2, "name", pa.array(["new"] * 10)))
    pk.delete(events([1, 2]))
    pk.compact(strategy="full")

    def rows(table: pa.Table) -> list[tuple[Any, ...]]:
        return sorted(tuple(r.values()) for r in table.select(["id", "name", "dt"]).to_pylist())

    return {
        "latest": rows(t.to_arrow()),
        "first": rows(t.to_arrow(snapshot_id=1)),
        "tag": rows(t.to_arrow(tag="before")),
        "day2": rows(t.to_arrow(filter=[("dt", "=", DAY2)])),
        "kinds": [s.commit_kind for s in t.snapshots()],
        "tags": [tag.name for tag in t.list_tags()],
        "pk": rows(pk.to_arrow()),
        "pk-first": rows(pk.to_arrow(snapshot_id=1)),
        "pk-kinds": [s.commit_kind for s in pk.snapshots()],
        "tables": catalog.list_tables("db"),
    }


def test_tables_answer_as_on_the_local_disk(store: StoreEnv, tmp_path: Path) -> None:
    remote = _story(shoal.Catalog(store.uri("wh")))
    assert remote == _story(shoal.Catalog(str(tmp_path / "wh")))
    assert remote["pk"][0] == (0, "n0", DAY1)
    reopened = shoal.open_table(store.uri("wh/db.db/events"))
    assert reopened.latest_snapshot().id == 4
    keys = store.list_keys("wh/")
    assert "wh/db.db/events/snapshot/snapshot-4" in keys
    assert "wh/db.db/events/tag/tag-before" in keys
    assert not [k for k in keys if k.endswith("/")]  # no directory markers
    assert store.get("wh/db.db/events/snapshot/LATEST") == b"4"


def test_two_threads_committing_lose_no_commit(store: StoreEnv) -> None:
    table = shoal.Catalog(store.uri("wh")).create_table(
        "db.t", EVENTS_SCHEMA, options={"commit.max-retries": "100"}
    )
    workers, commits = 2, 6
    start = threading.Barrier(workers)
    won: dict[int, list[int]] = {}

    def commit(worker: int) -> None:
        mine = shoal.open_table(table.path)
        start.wait()
        won[worker] = [mine.append(events([worker * 100 + i])).id for i in range(commits)]

    threads = [threading.Thread(target=commit, args=(w,)) for w in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = sorted(i for w in won.values() for i in w)
    assert ids == list(range(1, workers * commits + 1))  # every id won exactly once
    expected = sorted(w * 100 + i for w in range(workers) for i in range(commits))
    assert sorted(shoal.open_table(table.path).to_arrow()["id"].to_pylist()) == expected


def _files(root: Path) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def _remote_files(store: StoreEnv, prefix: str) -> set[str]:
    return {k[len(prefix) + 1 :] for k in store.list_keys(f"{prefix}/")}


def _build(store: StoreEnv) -> Table:
    t = shoal.Catalog(store.uri("wh")).create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=["dt"],
        options={"manifest.merge-min-count": "2", "bucket": "2", "bucket-key": "id"},
    )  # fmt: skip
    t.append(pa.concat_tables([events([1, 2, 3]), events([5, 6], DAY2)]))
    t.create_tag("first")
    t.overwrite(events([8]), partition={"dt": DAY1})
    t.append(events([9], DAY2))
    t.drop_partitions([{"dt": DAY2}])
    t.append(events([12, 13]))
    t.overwrite(events([15]), partition={"dt": DAY1})
    return t


def test_expiration_and_orphan_cleanup_delete_what_they_delete_locally(
    store: StoreEnv, tmp_path: Path
) -> None:
    prefix = "wh/db.db/t"
    table = _build(store)
    local_root = store.download(prefix, tmp_path / "t")
    local = shoal.open_table(str(local_root))
    later = datetime.now() + timedelta(seconds=1)
    assert table.expire_snapshots(retain_max=2, older_than=later) == local.expire_snapshots(
        retain_max=2, older_than=later
    )
    assert _remote_files(store, prefix) == _files(local_root)

    for key in (f"dt={DAY1}/bucket-0/data-stray.parquet", "manifest/manifest-stray-0"):
        store.put(f"{prefix}/{key}", b"stray")
        (local_root / key).parent.mkdir(parents=True, exist_ok=True)
        (local_root / key).write_bytes(b"stray")
    past = time.time() - 3600
    for directory, _, files in os.walk(local_root):
        for name in files:
            os.utime(os.path.join(directory, name), (past, past))
    time.sleep(1.1)  # object times have a resolution of one second
    now = datetime.now()
    result = table.remove_orphan_files(older_than=now)
    expected = local.remove_orphan_files(older_than=now)
    root = f"{store.bucket}/{prefix}/"
    assert sorted(p.removeprefix(root) for p in result.paths) == sorted(
        os.path.relpath(p, local_root) for p in expected.paths
    )
    assert result.deleted_count == expected.deleted_count >= 2
    assert _remote_files(store, prefix) == _files(local_root)
    reopened = shoal.open_table(store.uri(prefix))
    assert sorted(reopened.to_arrow()["id"].to_pylist()) == sorted(
        local.to_arrow()["id"].to_pylist()
    )
    assert sorted(reopened.to_arrow(tag="first")["id"].to_pylist()) == [1, 2, 3, 5, 6]


def test_the_catalog_lists_and_drops_tables(store: StoreEnv) -> None:
    catalog = shoal.Catalog(store.uri("wh"))
    catalog.create_table("db.a", EVENTS_SCHEMA).append(events(range(3)))
    catalog.create_table("db.b", EVENTS_SCHEMA)
    catalog.create_table("other.c", EVENTS_SCHEMA)
    assert catalog.list_databases() == ["db", "other"]
    assert catalog.list_tables("db") == ["a", "b"]
    catalog.drop_table("db.a")
    assert catalog.list_tables("db") == ["b"]
    assert not [k for k in store.list_keys("wh/") if k.startswith("wh/db.db/a/")]
    assert not catalog.table_exists("db.a")
