"""Deletion-vector tables between Paimon's Java implementation (0.9 and 1.0) and shoal:
random upserts, deletes and full compactions by either side, on fixed and dynamic
buckets, partitioned and not. Both compact level-0 files up after every write and mark
the rows they replace in deletion vectors, so after every step both read the model's
rows, at every snapshot (``tests/interop/turns``); at the end every vector names a live
file of its bucket, and no key has two unmarked rows above level 0."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings

import shoal
from shoal.core import deletion_vectors as DVS
from shoal.core.deletion_vectors import VectorLoader
from shoal.core.paths import data_file_path
from shoal.core.plan import live_entries
from tests.interop.java_paimon import VERSIONS
from tests.interop.turns import SETTINGS, STEPS, Step, run_turns

pytestmark = pytest.mark.interop

MODES = {
    "fixed": {"deletion-vectors.enabled": "true", "bucket": "2"},
    "dynamic": {"deletion-vectors.enabled": "true", "dynamic-bucket.target-row-num": "3"},
}


def vectors_agree(table: shoal.Table) -> None:
    """Every vector names a live data file of its own bucket, within its rows; the
    files above level 0, less their marked rows, hold each key once."""
    store = table._store
    snapshot = table.latest_snapshot()
    if snapshot is None:  # only compactions of an empty table
        return
    live = {e.file.file_name: e for e in live_entries(store, snapshot)}
    loader = VectorLoader(store.file_io)
    deletions = DVS.deletion_files(store, snapshot)
    for (partition, bucket), files in DVS.bucket_index_files(store, snapshot).items():
        for f in files:
            for r in f.dv_ranges or ():
                entry = live[r.data_file_name]
                assert (entry.partition, entry.bucket) == (partition, bucket)
    keys: Counter[tuple[bytes, object]] = Counter()
    for name, e in live.items():
        if e.file.level == 0:
            continue
        bucket_dir = store.paths.bucket_dir(store.partitions.path(e.partition), e.bucket)
        path = data_file_path(bucket_dir, e.file)
        ids = np.asarray(pq.read_table(path, columns=["_KEY_id"]).column(0))
        deletion = deletions.get(name)
        if deletion is not None:
            ids = np.delete(ids, loader.deleted_positions(deletion, len(ids), path))
        keys.update((e.partition, int(i)) for i in ids)
    twice = [k for k, n in keys.items() if n > 1]
    assert not twice, twice


def run_example(version: str, mode: str, steps: list[Step], tmp: Path, partitioned: bool) -> None:
    table = run_turns(
        version, steps, tmp, partitioned=partitioned, options=MODES[mode], check=vectors_agree
    )
    # level-0 files are compacted up by every writer: a batch read sees every write
    latest = table.latest_snapshot()
    if latest is not None:
        assert all(e.file.level > 0 for e in live_entries(table._store, latest))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
@settings(max_examples=2, **SETTINGS)
@given(steps=STEPS)
def test_java_and_shoal_take_turns_with_deletion_vectors(
    version: str,
    mode: str,
    partitioned: bool,
    steps: list[Step],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    run_example(version, mode, steps, tmp_path_factory.mktemp("dv"), partitioned)


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("partitioned", [True, False], ids=["partitioned", "unpartitioned"])
@settings(max_examples=10, **SETTINGS)
@given(steps=STEPS)
def test_java_and_shoal_take_turns_with_deletion_vectors_longer(
    version: str,
    mode: str,
    partitioned: bool,
    steps: list[Step],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    run_example(version, mode, steps, tmp_path_factory.mktemp("dv"), partitioned)
