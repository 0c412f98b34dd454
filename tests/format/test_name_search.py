"""Reading names out of manifests fast: the block codecs, the string finder, the
manifest search that orphan cleanup uses and the manifest-list reader that reuses what
it decoded. Each must give what decoding every record gives."""

from __future__ import annotations

import io
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

import shoal
from shoal.errors import CorruptMetadataError
from shoal.format import avro
from shoal.format import manifest as M
from shoal.format.avro.strings import StringFinder, encoded
from shoal.format.manifest import KIND_ADD, KIND_DELETE, ManifestEntry
from tests.conftest import EVENTS_SCHEMA, events
from tests.format.test_manifest import PARTITION, full_file, minimal_file


# --- block codecs ------------------------------------------------------------------------------
@pytest.mark.parametrize("codec", avro.compression.CODECS)
@pytest.mark.parametrize("size", [0, 1, 70_000])
def test_block_codecs_round_trip(codec: str, size: int) -> None:
    data = random.Random(size).randbytes(size // 2) + b"a" * (size - size // 2)
    assert avro.compression.decompress(codec, avro.compression.compress(codec, data)) == data


def test_zstandard_blocks_of_streaming_writers_and_of_several_frames_decompress() -> None:
    compressor = zstandard.ZstdCompressor()
    sized = [compressor.compress(part) for part in (b"one " * 50, b"two " * 70)]
    streamed = compressor.compressobj()
    unsized = streamed.compress(b"three " * 90) + streamed.flush()
    assert zstandard.frame_content_size(unsized) == -1
    assert avro.compression.decompress("zstandard", unsized) == b"three " * 90
    several = sized[0] + unsized + sized[1]
    assert (
        avro.compression.decompress("zstandard", several)
        == b"one " * 50 + b"three " * 90 + b"two " * 70
    )


@pytest.mark.parametrize("cut", [1, 5, -1, -4])
def test_cut_zstandard_blocks_raise_value_error(cut: int) -> None:
    compressor = zstandard.ZstdCompressor()
    streamed = compressor.compressobj()
    for frame in (
        compressor.compress(b"x" * 500),
        streamed.compress(b"y" * 500) + streamed.flush(),
    ):
        with pytest.raises(ValueError, match="zstandard"):
            avro.compression.decompress("zstandard", frame[:cut])


def test_zstandard_block_claiming_too_many_bytes_raises_before_allocating() -> None:
    # magic, a descriptor with an 8-byte content size, 2**40, then an empty last block
    frame = b"\x28\xb5\x2f\xfd\xe0" + (1 << 40).to_bytes(8, "little") + b"\x01\x00\x00"
    assert zstandard.frame_content_size(frame) == 1 << 40
    with pytest.raises(ValueError, match="claims"):
        avro.compression.decompress("zstandard", frame)


def test_other_codecs_raise_value_error() -> None:
    for call in (avro.compression.decompress, avro.compression.compress):
        with pytest.raises(ValueError, match="snappy"):
            call("snappy", b"x")
    with pytest.raises(ValueError, match="deflate"):
        avro.compression.decompress("deflate", b"\xff not deflate")


# --- the string finder -------------------------------------------------------------------------
_VALUE = {
    "type": "record",
    "name": "v",
    "fields": [
        {"name": "s", "type": "string"},
        {"name": "b", "type": "bytes"},
        {"name": "n", "type": "long"},
        {"name": "more", "type": {"type": "array", "items": "string"}},
    ],
}
_VALUES = fastavro.parse_schema({"type": "array", "items": _VALUE})
names = st.text(min_size=0, max_size=90)


@settings(max_examples=300, deadline=None)
@given(
    wanted=st.lists(names, max_size=12),
    others=st.lists(names, max_size=6),
    noise=st.lists(st.binary(max_size=120), max_size=6),
    numbers=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=6),
    data=st.data(),
)
def test_finder_finds_every_wanted_string_the_records_hold(
    wanted: list[str],
    others: list[str],
    noise: list[bytes],
    numbers: list[int],
    data: st.DataObject,
) -> None:
    written = data.draw(st.lists(st.sampled_from(wanted + others + ["x"]), max_size=20))
    records = [
        {
            "s": value,
            "b": noise[i % len(noise)] if noise else b"",
            "n": numbers[i % len(numbers)] if numbers else i,
            "more": written[i:],
        }
        for i, value in enumerate(written)
    ]
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, _VALUES, records)
    found = StringFinder(wanted).find(buffer.getvalue())
    assert set(written) & set(wanted) <= found <= set(wanted)


def test_finder_does_not_take_a_name_that_is_not_a_string_value() -> None:
    finder = StringFinder(["data-1.parquet", "data-2.parquet"])
    block = b"\x01" + encoded("data-1.parquet") + b"\x07data-2.parquet" + b"\x00"
    assert finder.find(block) == {"data-1.parquet"}
    assert finder.among(["data-2.parquet", "other"]) == {"data-2.parquet"}
    assert len(finder) == 2


# --- searching manifests -------------------------------------------------------------------------
def _entries(count: int, seed: int) -> list[ManifestEntry]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        file = full_file(f"data-{rng.getrandbits(64):016x}-{i}.parquet")
        if rng.random() < 0.5:
            file = replace(file, extra_files=(f"{file.file_name}.index",))
        else:
            file = replace(minimal_file(file.file_name), extra_files=())
        out.append(ManifestEntry(rng.choice([KIND_ADD, KIND_DELETE]), PARTITION, i % 3, 4, file))
    return out


def _names(entries: list[ManifestEntry]) -> set[str]:
    return {n for e in entries for n in (e.file.file_name, *e.file.extra_files)}


@pytest.mark.parametrize("compression", ["zstd", "none", "deflate"])
@pytest.mark.parametrize("count", [0, 1, 40, 900])
def test_searching_a_manifest_finds_what_decoding_finds(compression: str, count: int) -> None:
    entries = _entries(count, count)
    named = sorted(_names(entries))
    data = M.encode_manifest(entries, compression)
    rng = random.Random(7)
    wanted = set(rng.sample(named, len(named) // 2)) | {"data-unnamed-0.parquet", "x"}
    found = M.manifest_names_among(data, StringFinder(wanted), "m")
    assert found == wanted & set(named) == StringFinder(wanted).among(M.manifest_file_names(data))


def test_manifests_of_other_codecs_are_decoded_whole() -> None:
    entries = _entries(5, 1)
    records = [e.to_avro() for e in entries]
    buffer = io.BytesIO()
    fastavro.writer(buffer, fastavro.parse_schema(M.MANIFEST_ENTRY_AVRO), records, codec="bzip2")
    wanted = _names(entries)
    assert M.manifest_names_among(buffer.getvalue(), StringFinder(wanted)) == wanted


def _with_block(data: bytes, change: Any) -> bytes:
    """``data`` (one block, codec null) with its block replaced by ``change(block)``."""
    meta, pos = avro.container._header(data)
    assert meta["avro.codec"] == b"null"
    sync = data[pos : pos + avro.container.SYNC_SIZE]
    container = avro.container.read_blocks(data)
    assert container is not None
    [(count, block)] = container[1]
    block = change(block)
    out = bytearray(data[: pos + avro.container.SYNC_SIZE])
    avro.compiled.write_long(out, count)
    avro.compiled.write_long(out, len(block))
    return bytes(out + block + sync)


def test_a_manifest_with_lengths_written_long_is_decoded_whole() -> None:
    # A varint may spend more bytes than it needs; no known writer does, and a search
    # for the short form would miss the name: the first record shows it, so the
    # manifest is decoded instead.
    entries = _entries(3, 2)
    first = entries[0].file.file_name
    data = M.encode_manifest(entries, "none")
    short_form = encoded(first)
    size = short_form[0]
    long_form = bytes([size | 0x80, 0x00]) + first.encode()
    damaged = _with_block(data, lambda block: block.replace(short_form, long_form, 1))
    wanted = _names(entries)
    assert StringFinder(wanted).find(avro.container.read_blocks(damaged)[1][0][1]) == (  # type: ignore[index]
        wanted - {first}
    )
    assert M.manifest_file_names(damaged)[0] == first
    assert M.manifest_names_among(damaged, StringFinder(wanted)) == wanted


@pytest.mark.parametrize("cut", [3, 40, -30, -1])
def test_searching_a_damaged_manifest_raises_corrupt_metadata(cut: int) -> None:
    data = M.encode_manifest(_entries(20, 3))
    with pytest.raises(CorruptMetadataError) as info:
        M.manifest_names_among(data[:cut], StringFinder(["x"]), "/t/manifest/m")
    assert info.value.path == "/t/manifest/m"


def test_searching_a_manifest_of_another_format_version_raises() -> None:
    records = [dict(e.to_avro(), _VERSION=3) for e in _entries(2, 4)]
    data = avro.container.write_records(M.MANIFEST_ENTRY_AVRO, records, "zstandard")
    with pytest.raises(CorruptMetadataError, match="format version 3"):
        M.manifest_names_among(data, StringFinder(["x"]), "m")


# --- reading manifest lists ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A table of 40 commits (manifests merged now and then) and its manifest lists in
    snapshot order."""
    table = shoal.Catalog(str(tmp_path_factory.mktemp("lists"))).create_table(
        "db.t", EVENTS_SCHEMA, partition_keys=["dt"], options={"manifest.merge-min-count": "8"}
    )
    for i in range(40):
        day = f"2026-11-0{1 + i % 3}"
        if i % 13 == 12:
            table.overwrite(events([i], day))
        else:
            table.append(events([i], day))
    store = table._store
    lists = []
    for snapshot_id in store.snapshots.list_ids():
        snapshot = store.snapshots.snapshot(snapshot_id)
        lists += [snapshot.base_manifest_list, snapshot.delta_manifest_list]
    return Path(store.paths.manifest_dir), lists


def _count_decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    counts: list[int] = []
    decode_block = avro.container.decode_block

    def counting(decode: Any, block: bytes, count: int, start: int = 0) -> list[Any]:
        counts.append(count)
        return decode_block(decode, block, count, start)

    monkeypatch.setattr(avro.container, "decode_block", counting)
    return counts


@pytest.mark.parametrize("order", ["snapshots", "reversed", "shuffled"])
def test_list_reader_reads_what_decoding_reads(
    history: tuple[Path, list[str]], order: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory, lists = history
    if order == "reversed":
        lists = lists[::-1]
    elif order == "shuffled":
        lists = random.Random(3).sample(lists, len(lists))
    files = [(directory / name).read_bytes() for name in lists]
    expected = [M.manifest_list_file_names(f) for f in files]
    counts = _count_decoded(monkeypatch)
    reader = M.ListNameReader()
    assert [reader.names(f) for f in files] == expected
    if order == "snapshots":  # the base lists extend one another: most records are reused
        assert sum(counts) < sum(map(len, expected)) / 2


def test_list_reader_reports_a_damaged_tail_after_known_records(
    history: tuple[Path, list[str]],
) -> None:
    directory, lists = history
    reader = M.ListNameReader()
    files = [(directory / name).read_bytes() for name in lists]
    for f in files:
        reader.names(f)
    longest = max(files, key=len)
    with pytest.raises(CorruptMetadataError) as info:
        M.ListNameReader().names(longest[:-30], "/t/manifest/list")
    assert info.value.path == "/t/manifest/list"
    with pytest.raises(CorruptMetadataError):
        reader.names(longest[:-30], "/t/manifest/list")
