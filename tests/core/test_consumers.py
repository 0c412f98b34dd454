"""The consumer files of a table: recording, reading, listing, deleting and expiring
them, in Paimon's layout, and the ids and values refused."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from shoal.core.consumers import ConsumerManager, decode_consumer, encode_consumer
from shoal.errors import CorruptMetadataError, InvalidArgumentError
from shoal.io import LocalFileIO


@pytest.fixture
def manager(tmp_path: Path) -> ConsumerManager:
    return ConsumerManager(LocalFileIO(), str(tmp_path))


def test_a_recorded_consumer_is_read_back_from_paimons_file(
    manager: ConsumerManager, tmp_path: Path
) -> None:
    assert manager.next_snapshot("reader") is None
    manager.record("reader", 7)
    assert manager.next_snapshot("reader") == 7
    # Paimon's path and Jackson's layout of Consumer.toJson().
    assert (tmp_path / "consumer" / "consumer-reader").read_text() == '{\n  "nextSnapshot" : 7\n}'
    manager.record("reader", 9)
    assert manager.next_snapshot("reader") == 9
    assert os.listdir(tmp_path / "consumer") == ["consumer-reader"]  # no temporary left


def test_consumers_lists_every_id_and_the_minimum(manager: ConsumerManager) -> None:
    assert manager.consumers() == {}
    assert manager.min_next_snapshot() is None
    manager.record("b", 12)
    manager.record("a", 5)
    manager.record("c.d-e_f", 30)
    assert manager.consumers() == {"a": 5, "b": 12, "c.d-e_f": 30}
    assert manager.min_next_snapshot() == 5
    manager.delete("a")
    manager.delete("a")  # absent: nothing to do
    assert manager.consumers() == {"b": 12, "c.d-e_f": 30}
    assert manager.min_next_snapshot() == 12


def test_files_that_are_not_consumers_are_ignored(manager: ConsumerManager, tmp_path: Path) -> None:
    manager.record("x", 3)
    directory = tmp_path / "consumer"
    (directory / ".consumer-x.abc.tmp").write_text("{")  # a writer's temporary file
    (directory / "other").write_text("{}")
    (directory / "consumer-sub").mkdir()
    assert manager.consumers() == {"x": 3}


def test_unknown_fields_are_ignored_and_damage_is_named(
    manager: ConsumerManager, tmp_path: Path
) -> None:
    assert decode_consumer(b'{"nextSnapshot": 4, "extra": [1]}', "p") == 4
    assert decode_consumer(encode_consumer(2**63 - 1), "p") == 2**63 - 1
    path = tmp_path / "consumer" / "consumer-bad"
    path.parent.mkdir()
    for content in ("{", "[]", '{"nextSnapshot": "4"}', '{"nextSnapshot": 1.5}', "{}"):
        path.write_text(content)
        with pytest.raises(CorruptMetadataError) as info:
            manager.next_snapshot("bad")
        assert info.value.path == str(path)
        with pytest.raises(CorruptMetadataError):
            manager.min_next_snapshot()


@pytest.mark.parametrize("bad", ["", "a/b", "../x", "a\\b", "a\x00b", "line\nbreak", 3, None])
def test_ids_that_name_no_file_of_the_directory_are_refused(
    manager: ConsumerManager, tmp_path: Path, bad: object
) -> None:
    for call in (
        lambda: manager.record(bad, 1),  # type: ignore[arg-type]
        lambda: manager.next_snapshot(bad),  # type: ignore[arg-type]
        lambda: manager.delete(bad),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidArgumentError):
            call()
    assert not (tmp_path / "consumer").exists()
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("bad", [0, -1, 2**63, True, 1.0, "5"])
def test_next_snapshots_that_are_no_snapshot_id_are_refused(
    manager: ConsumerManager, tmp_path: Path, bad: object
) -> None:
    with pytest.raises(InvalidArgumentError):
        manager.record("r", bad)  # type: ignore[arg-type]
    assert not (tmp_path / "consumer").exists()


def test_expire_deletes_only_consumers_not_modified_since(
    manager: ConsumerManager, tmp_path: Path
) -> None:
    manager.record("old", 1)
    manager.record("fresh", 2)
    old = tmp_path / "consumer" / "consumer-old"
    fresh_mtime_ms = (tmp_path / "consumer" / "consumer-fresh").stat().st_mtime_ns // 10**6
    os.utime(old, ns=(10**18, 10**18))  # 2001
    assert manager.expire(10**12) == []  # modified at the threshold: kept
    assert manager.expire(10**12 + 1) == ["old"]  # before it: expired
    assert manager.consumers() == {"fresh": 2}
    assert manager.expire(10**12 + 1) == []
    # Recording touches the file: an advancing consumer never expires.
    assert manager.expire(fresh_mtime_ms) == []
    assert manager.expire(fresh_mtime_ms + 1) == ["fresh"]
    assert manager.consumers() == {}


def test_readers_never_see_a_partial_record(manager: ConsumerManager) -> None:
    manager.record("r", 1)
    seen: list[int | None] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            seen.append(manager.next_snapshot("r"))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for n in range(2, 300):
            manager.record("r", n)
    finally:
        done.set()
        reader.join()
    assert seen
    assert all(isinstance(v, int) and 1 <= v < 300 for v in seen)
