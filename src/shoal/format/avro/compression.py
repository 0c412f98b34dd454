"""The compression codecs of Avro blocks: ``null``, ``deflate`` and ``zstandard``.

Manifests are read by the hundred and each holds one small block, so what a block
costs beyond its bytes matters: a zstandard decompression context is made once per
thread and reused (making one costs more than decompressing a manifest's block).
Blocks whose frame does not record its size (streaming writers) and blocks of several
frames are read with the streaming decoder.
"""

from __future__ import annotations

import threading
import zlib

import zstandard

CODECS = ("null", "deflate", "zstandard")
# A block's frame may claim any size; no manifest block comes near this.
MAX_BLOCK_BYTES = 1 << 30
ZSTD_LEVEL = 3


class _Contexts(threading.local):
    def __init__(self) -> None:
        self.decompressor = zstandard.ZstdDecompressor()
        self.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)


_CONTEXTS = _Contexts()


def decompress(codec: str, block: bytes) -> bytes:
    """The bytes of ``block``, compressed with ``codec`` (one of :data:`CODECS`).
    Raises ValueError on bytes the codec cannot read, or that stop short."""
    if codec == "zstandard":
        return _zstd_decompress(block)
    if codec == "deflate":
        try:
            return zlib.decompress(block, -15)
        except zlib.error as exc:
            raise ValueError(f"deflate block does not decompress: {exc}") from None
    if codec == "null":
        return block
    raise ValueError(f"Avro codec {codec!r} is not one of {', '.join(CODECS)}")


def compress(codec: str, data: bytes) -> bytes:
    """``data`` compressed with ``codec`` (one of :data:`CODECS`)."""
    if codec == "zstandard":
        return _CONTEXTS.compressor.compress(data)
    if codec == "deflate":
        compressor = zlib.compressobj(wbits=-15)
        return compressor.compress(data) + compressor.flush()
    if codec == "null":
        return data
    raise ValueError(f"Avro codec {codec!r} is not one of {', '.join(CODECS)}")


def _zstd_decompress(block: bytes) -> bytes:
    try:
        size = zstandard.frame_content_size(block)
    except zstandard.ZstdError as exc:
        raise ValueError(f"zstandard block does not decompress: {exc}") from None
    if size > MAX_BLOCK_BYTES:
        raise ValueError(f"zstandard block claims {size} bytes")
    decompressor = _CONTEXTS.decompressor
    try:
        if size >= 0:  # one frame of known size (the usual case)
            return decompressor.decompress(block, allow_extra_data=False)
    except zstandard.ZstdError:
        pass  # several frames: read one at a time below
    out = bytearray()
    rest = block
    while rest:  # frame after frame, each streamed
        stream = decompressor.decompressobj()
        try:
            out += stream.decompress(rest)
        except zstandard.ZstdError as exc:
            raise ValueError(f"zstandard block does not decompress: {exc}") from None
        if not stream.eof:
            raise ValueError("zstandard block stops inside a frame")
        if len(out) > MAX_BLOCK_BYTES:
            raise ValueError(f"zstandard block holds more than {MAX_BLOCK_BYTES} bytes")
        rest = stream.unused_data
    return bytes(out)
