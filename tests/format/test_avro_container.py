"""The container reader decodes exactly what fastavro's own reader decodes."""

from __future__ import annotations

import io

import fastavro
import pytest

from shoal.format.avro.container import _header, read_records

SCHEMA = fastavro.parse_schema(
    {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "n", "type": "long"},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
            {"name": "maybe", "type": ["null", "bytes"], "default": None},
        ],
    }
)


def _file(codec: str, count: int, block: int = 100) -> bytes:
    records = [
        {"name": f"f{i}", "n": i - 50, "tags": [str(i)] * (i % 3), "maybe": b"x" if i % 2 else None}
        for i in range(count)
    ]
    buffer = io.BytesIO()
    fastavro.writer(buffer, SCHEMA, records, codec=codec, sync_interval=block)
    return buffer.getvalue()


@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard"])
@pytest.mark.parametrize("count", [0, 1, 500])
def test_same_records_as_fastavro(codec: str, count: int) -> None:
    data = _file(codec, count)
    assert read_records(data) == list(fastavro.reader(io.BytesIO(data)))


def test_other_codecs_go_through_fastavro() -> None:
    data = _file("bzip2", 10)
    assert read_records(data) == list(fastavro.reader(io.BytesIO(data)))


@pytest.mark.parametrize("cut", [3, 20, -20, -1])
def test_damaged_files_raise(cut: int) -> None:
    data = _file("zstandard", 200)
    with pytest.raises(Exception):  # noqa: B017, PT011 - ValueError or a decoder's own error
        read_records(data[:cut])


def test_files_sharing_a_header_read_alike_and_others_are_not_mistaken_for_them() -> None:
    first, second = _file("zstandard", 30), _file("zstandard", 31)
    other = io.BytesIO()
    fastavro.writer(other, fastavro.parse_schema({"type": "long"}), [1, 2, 3], codec="null")
    for data in (first, other.getvalue(), second, first, other.getvalue()):
        assert read_records(data) == list(fastavro.reader(io.BytesIO(data)))
    _, position = _header(first)
    with pytest.raises(ValueError, match="block"):
        read_records(first[:position] + b"\x00" * 16 + b"\x02\x7f")
