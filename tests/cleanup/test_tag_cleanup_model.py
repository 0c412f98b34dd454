"""Property: deleting tags of expired snapshots never removes a file that a remaining
snapshot or tag reaches (index manifests and index files included), and removes every
file of the tag that nothing else reaches."""

from __future__ import annotations

import os
import tempfile

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

import shoal
from shoal.core.plan import live_entries, read_manifest_metas
from tests.conftest import EVENTS_SCHEMA, events
from tests.index_commits import delete_rows, live_files, rehash
from tests.reachability import index_files_of

DAYS = ["2026-11-01", "2026-11-02"]
operation = st.one_of(
    st.tuples(st.just("append"), st.sampled_from(DAYS)),
    st.tuples(st.just("overwrite"), st.sampled_from(DAYS)),
    st.tuples(st.just("drop"), st.sampled_from(DAYS)),
    st.tuples(st.just("vector"), st.sampled_from(DAYS)),
    st.tuples(st.just("rehash"), st.sampled_from(DAYS)),
)


def _reachable(table: shoal.Table) -> tuple[set[str], set[str]]:
    """Data files and manifest files reachable from every snapshot and tag there is."""
    store = table._store
    snapshots = list(store.snapshots.snapshots())
    snapshots += [
        s for _, s in shoal.core.tag_manager.TagManager(store.file_io, store.paths).tags()
    ]
    data, manifests = set(), set()
    for snapshot in snapshots:
        for e in live_entries(store, snapshot):
            bucket = store.paths.bucket_dir(store.partitions.path(e.partition), e.bucket)
            data.add(f"{bucket}/{e.file.file_name}")
        for m in read_manifest_metas(store, snapshot):
            manifests.add(store.paths.manifest_path(m.file_name))
        manifests.add(store.paths.manifest_path(snapshot.base_manifest_list))
        manifests.add(store.paths.manifest_path(snapshot.delta_manifest_list))
        manifests.update(index_files_of(store, snapshot))
    return data, manifests


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(operation, min_size=3, max_size=10),
    tagged=st.sets(st.integers(1, 10), min_size=2, max_size=5),
    keep=st.integers(1, 3),
    delete_order=st.randoms(),
)
def test_tag_deletion_keeps_what_others_reach(
    ops: list[tuple[str, str]], tagged: set[int], keep: int, delete_order: object
) -> None:
    with tempfile.TemporaryDirectory() as warehouse:
        table = shoal.Catalog(warehouse).create_table(
            "db.t",
            EVENTS_SCHEMA,
            partition_keys=["dt"],
            options={"manifest.merge-min-count": "2", "manifest.target-file-size": "1 kb"},
        )
        ops = [("append", DAYS[0]), *ops]
        for i, (kind, day) in enumerate(ops):
            if kind == "append":
                table.append(events([i], dt=day))
            elif kind == "overwrite":
                table.overwrite(events([i], dt=day), partition={"dt": day})
            elif kind == "drop":
                table.drop_partitions([{"dt": day}])
            elif files := live_files(table):
                entry = files[i % len(files)]
                if kind == "vector":
                    delete_rows(table, entry, [i % entry.file.row_count])
                else:
                    rehash(table, entry.partition, i % 2)
        latest = table.latest_snapshot().id
        names = []
        for snapshot_id in sorted(s for s in tagged if s <= latest):
            names.append(f"t{snapshot_id}")
            table.create_tag(names[-1], snapshot_id=snapshot_id)
        # Expire all but the newest ``keep`` snapshots, as expiration would.
        for snapshot_id in range(1, max(1, latest - keep + 1)):
            os.unlink(os.path.join(table.path, "snapshot", f"snapshot-{snapshot_id}"))
        table = shoal.open_table(table.path)
        expected_reads = {n: table.to_arrow(tag=n).num_rows for n in names}
        delete_order.shuffle(names)  # type: ignore[attr-defined]
        for name in names[: len(names) // 2 + 1]:
            data_before, meta_before = _reachable(table)
            table.delete_tag(name)
            table = shoal.open_table(table.path)
            data_after, meta_after = _reachable(table)
            assert all(os.path.exists(p) for p in data_after | meta_after)
            # Complete: what only the deleted tag reached is gone.
            assert not any(os.path.exists(p) for p in data_before - data_after)
            assert not any(os.path.exists(p) for p in meta_before - meta_after)
            del expected_reads[name]
            for other, rows in expected_reads.items():
                assert table.to_arrow(tag=other).num_rows == rows
            table.to_arrow()
