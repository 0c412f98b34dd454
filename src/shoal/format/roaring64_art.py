"""RoaringBitmap's own ``Roaring64Bitmap`` serialization (the library version Paimon 0.9
and 1.0 bundle), as Paimon's ``rbm64`` aggregate stores it.

The layout: a tag byte (0 empty, 1 not); an adaptive radix tree over the 48 high bits
of the values (little-endian key count, then its nodes depth first: type, child
count, compressed prefix, then a body: Node4 and Node16 their sorted child bytes,
Node48 its 256-entry slot index, Node256 its 256-bit child mask, a leaf its 6 key
bytes and its container's index); then the containers in the order they were added
(per block: a tag, the block's capacity and each slot, null or typed container with
its cardinality and body), the container count and the last block and slot used.

The tree's shape and the container order depend on the order keys were added, so a
:class:`Bitmap64` keeps both as read and adds new keys as the library does (in
ascending key order, as its ``or`` walks the other bitmap); each container's kind
follows the library's in-place union and its ``runOptimize`` (which turns an array or
a bitset into runs when smaller, and keeps runs as runs). Damage surfaces as
:class:`shoal.format.roaring.RoaringFormatError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from shoal.format.roaring import RoaringFormatError

RUN, BITMAP, ARRAY = 0, 1, 2
NODE4, NODE16, NODE48, NODE256, LEAF = 0, 1, 2, 3, 4
_CAPACITY = (4, 16, 48, 256)
_ARRAY_MAX = 4096
_BITMAP_BYTES = 8192
_FULL = 65536

I64Array = npt.NDArray[np.int64]


def _runs(low: I64Array) -> int:
    return int(np.count_nonzero(np.diff(low) != 1)) + 1 if len(low) else 0


def _efficient(low: I64Array) -> int:
    """The kind the library's ``toEfficientContainer`` picks for runs."""
    if 2 + 4 * _runs(low) <= min(_BITMAP_BYTES, 2 * len(low) + 2):
        return RUN
    return ARRAY if len(low) <= _ARRAY_MAX else BITMAP


def _union_kind(acc: int, other: int, low: I64Array) -> int:
    """The kind of ``acc.ior(other)`` holding ``low`` (the library's in-place union)."""
    if len(low) == _FULL:
        return RUN  # every union that fills a container answers a full run
    if acc == RUN:
        if other == BITMAP:
            return BITMAP
        if other == ARRAY:
            return _efficient(low)
        return RUN if 2 + 4 * _runs(low) < _BITMAP_BYTES else BITMAP
    if acc == ARRAY and other == RUN:
        return _efficient(low)
    if acc == ARRAY and other == ARRAY:
        return ARRAY if len(low) <= _ARRAY_MAX else BITMAP
    return BITMAP


def _optimized(kind: int, low: I64Array) -> int:
    """The kind after ``runOptimize``: arrays and bitsets become runs when smaller."""
    if kind == RUN:
        return RUN
    size = 2 * len(low) if kind == ARRAY else _BITMAP_BYTES
    return RUN if size > 2 + 4 * _runs(low) else kind


@dataclass
class _Leaf:
    key: bytes
    index: int
    prefix: bytes = b""


@dataclass
class _Inner:
    kind: int
    prefix: bytes
    keys: list[int] = field(default_factory=list)  # child bytes, ascending
    children: list[_Leaf | _Inner] = field(default_factory=list)
    slots: dict[int, int] = field(default_factory=dict)  # Node48: child byte -> slot

    def add(self, byte: int, child: _Leaf | _Inner) -> None:
        if len(self.keys) == _CAPACITY[self.kind]:
            self._grow()
        at = int(np.searchsorted(self.keys, byte))
        self.keys.insert(at, byte)
        self.children.insert(at, child)
        if self.kind == NODE48:
            used = set(self.slots.values())
            slot = len(self.slots)
            if slot in used:
                slot = min(set(range(48)) - used)
            self.slots[byte] = slot

    def _grow(self) -> None:
        self.kind += 1
        if self.kind == NODE48:  # a Node16's children take slots in key order
            self.slots = {k: i for i, k in enumerate(self.keys)}
        elif self.kind == NODE256:
            self.slots = {}


@dataclass
class Bitmap64:
    """One ``Roaring64Bitmap`` as its serialization lays it out."""

    root: _Leaf | _Inner | None = None
    key_count: int = 0
    blocks: list[list[tuple[int, I64Array] | None]] = field(default_factory=list)
    size: int = 0
    first: int = -1
    second: int = 0
    where: dict[bytes, int] = field(default_factory=dict)  # high key -> container index

    # -- reading -----------------------------------------------------------------
    @classmethod
    def decode(cls, data: bytes) -> Bitmap64:
        out = cls()
        try:
            if len(data) < 1:
                raise RoaringFormatError("no bytes")
            if data[0] == 0:
                return out
            if data[0] != 1:
                raise RoaringFormatError(f"unknown tag {data[0]}")
            (out.key_count,) = struct.unpack_from("<q", data, 1)
            out.root, pos = out._read_node(data, 9, 0)
            pos = out._read_containers(data, pos)
        except RoaringFormatError:
            raise
        except (struct.error, IndexError, ValueError) as e:
            raise RoaringFormatError(f"cut short or damaged: {e}") from e
        if pos != len(data):
            raise RoaringFormatError(f"{len(data) - pos} bytes after the bitmap")
        if len(out.where) != out.key_count:
            raise RoaringFormatError("key count does not match the tree")
        return out

    def _read_node(self, data: bytes, pos: int, depth: int) -> tuple[_Leaf | _Inner, int]:
        if depth > 7:
            raise RoaringFormatError("tree too deep")
        kind, count, plen = struct.unpack_from("<BhB", data, pos)
        pos += 4
        prefix = bytes(data[pos : pos + plen])
        pos += plen
        if kind == LEAF:
            key = bytes(data[pos : pos + 6])
            (index,) = struct.unpack_from("<q", data, pos + 6)
            if len(key) < 6:
                raise RoaringFormatError("cut short in a leaf")
            self.where[key] = index
            return _Leaf(key, index, prefix), pos + 14
        if kind > NODE256 or not 0 < count <= _CAPACITY[kind]:
            raise RoaringFormatError(f"node type {kind} with {count} children")
        node = _Inner(kind, prefix)
        if kind == NODE4:
            node.keys = list(data[pos : pos + 4][::-1][:count])
            pos += 4
        elif kind == NODE16:
            raw = bytes(data[pos : pos + 8][::-1] + data[pos + 8 : pos + 16][::-1])
            node.keys = list(raw[:count])
            pos += 16
        elif kind == NODE48:
            index = b"".join(data[pos + 8 * i : pos + 8 * i + 8][::-1] for i in range(32))
            node.slots = {k: s for k, s in enumerate(index) if s != 0xFF}
            node.keys = sorted(node.slots)
            pos += 256
        else:
            bits = np.unpackbits(np.frombuffer(data, np.uint8, 32, pos), bitorder="little")
            node.keys = np.flatnonzero(bits).tolist()
            pos += 32
        if len(node.keys) != count or node.keys != sorted(set(node.keys)):
            raise RoaringFormatError("node children do not match its count")
        for _ in node.keys:
            child, pos = self._read_node(data, pos, depth + 1)
            node.children.append(child)
        return node, pos

    def _read_containers(self, data: bytes, pos: int) -> int:
        (nblocks,) = struct.unpack_from("<i", data, pos)
        pos += 4
        if not 0 <= nblocks <= len(data):
            raise RoaringFormatError(f"{nblocks} container blocks")
        for _ in range(nblocks):
            _, cap = struct.unpack_from("<bi", data, pos)
            pos += 5
            if not 0 <= cap <= len(data):
                raise RoaringFormatError(f"container block of {cap}")
            block: list[tuple[int, I64Array] | None] = []
            for _ in range(cap):
                if data[pos] == 0:
                    block.append(None)
                    pos += 1
                    continue
                kind, card = struct.unpack_from("<Bi", data, pos + 1)
                low, pos = _read_container(data, pos + 6, kind, card)
                block.append((kind, low))
            self.blocks.append(block)
        self.size, self.first, self.second = struct.unpack_from("<qii", data, pos)
        for key, index in self.where.items():
            if self._get(index) is None:
                raise RoaringFormatError(f"key {key.hex()} has no container")
        return pos + 16

    def _get(self, index: int) -> tuple[int, I64Array] | None:
        b, s = index >> 32, index & 0xFFFFFFFF
        if b >= len(self.blocks) or s >= len(self.blocks[b]):
            raise RoaringFormatError(f"container index {index} out of range")
        return self.blocks[b][s]

    def values(self) -> npt.NDArray[np.uint64]:
        """The bitmap's values, sorted, as unsigned 64-bit integers."""
        parts = []
        for key in sorted(self.where):
            entry = self._get(self.where[key])
            assert entry is not None
            high = np.uint64(int.from_bytes(key, "big") << 16)
            parts.append(high | entry[1].astype(np.uint64))
        return np.concatenate(parts) if parts else np.empty(0, np.uint64)

    # -- changing ----------------------------------------------------------------
    @classmethod
    def of(cls, values: npt.ArrayLike) -> Bitmap64:
        """The bitmap the library builds by adding ``values`` (as unsigned 64-bit
        integers) in ascending order."""
        v = np.unique(np.asarray(values).astype(np.uint64))
        out = cls()
        highs = v >> np.uint64(16)
        keys, starts = np.unique(highs, return_index=True)
        bounds = [*starts.tolist(), len(v)]
        for i, high in enumerate(keys.tolist()):
            low = (v[bounds[i] : bounds[i + 1]] & np.uint64(0xFFFF)).astype(np.int64)
            out._put(
                int(high).to_bytes(6, "big"), (ARRAY if len(low) <= _ARRAY_MAX else BITMAP, low)
            )
        return out

    def union(self, other: Bitmap64) -> None:
        """Adds ``other``'s values as the library's ``or`` does."""
        for key in sorted(other.where):
            theirs = other._get(other.where[key])
            assert theirs is not None
            index = self.where.get(key)
            if index is None:
                self._put(key, theirs)
                continue
            mine = self._get(index)
            assert mine is not None
            low = np.union1d(mine[1], theirs[1])
            self.blocks[index >> 32][index & 0xFFFFFFFF] = (
                _union_kind(mine[0], theirs[0], low),
                low,
            )

    def _put(self, key: bytes, container: tuple[int, I64Array]) -> None:
        if self.first == -1:
            self.blocks.append([None])
            self.first, self.second = self.first + 1, 0
        else:
            self.second += 1
        block = self.blocks[self.first]
        if self.second + 1 > len(block):
            grown = max(len(block) + (len(block) >> 1), self.second + 1)
            block.extend([None] * (grown - len(block)))
        block[self.second] = container
        self.size += 1
        index = (self.first << 32) | self.second
        self.where[key] = index
        self.root = _insert(self.root, key, 0, index)
        self.key_count += 1

    def run_optimize(self) -> None:
        for block in self.blocks:
            for i, entry in enumerate(block):
                if entry is not None:
                    block[i] = (_optimized(entry[0], entry[1]), entry[1])

    # -- writing -----------------------------------------------------------------
    def encode(self) -> bytes:
        if self.root is None:
            return b"\x00"
        out = bytearray(b"\x01")
        out += struct.pack("<q", self.key_count)
        _write_node(self.root, out)
        out += struct.pack("<i", len(self.blocks))
        for block in self.blocks:
            out += struct.pack("<bi", -2, len(block))
            for entry in block:
                if entry is None:
                    out += b"\x00"
                else:
                    out += struct.pack("<BBi", 1, entry[0], len(entry[1]))
                    out += _container_body(*entry)
        out += struct.pack("<qii", self.size, self.first, self.second)
        return bytes(out)


def _read_container(data: bytes, pos: int, kind: int, card: int) -> tuple[I64Array, int]:
    if kind == RUN:
        (n,) = struct.unpack_from("<H", data, pos)
        pairs = np.frombuffer(data, "<u2", 2 * n, pos + 2).astype(np.int64)
        starts, lengths = pairs[0::2], pairs[1::2] + 1
        total = int(lengths.sum())
        offsets = np.arange(total, dtype=np.int64) - np.repeat(
            np.cumsum(lengths) - lengths, lengths
        )
        low, pos = np.repeat(starts, lengths) + offsets, pos + 2 + 4 * n
    elif kind == BITMAP:
        bits = np.unpackbits(np.frombuffer(data, np.uint8, _BITMAP_BYTES, pos), bitorder="little")
        low, pos = np.flatnonzero(bits).astype(np.int64), pos + _BITMAP_BYTES
    elif kind == ARRAY:
        low = np.frombuffer(data, "<u2", card, pos).astype(np.int64)
        pos += 2 * card
    else:
        raise RoaringFormatError(f"container type {kind}")
    if len(low) != card or (len(low) > 1 and not bool(np.all(np.diff(low) > 0))):
        raise RoaringFormatError("container does not match its cardinality")
    if len(low) and int(low[-1]) >= _FULL:
        raise RoaringFormatError("runs pass the container's end")
    return low, pos


def _container_body(kind: int, low: I64Array) -> bytes:
    if kind == ARRAY:
        return low.astype("<u2").tobytes()
    if kind == BITMAP:
        bits = np.zeros(_FULL, np.uint8)
        bits[low] = 1
        return np.packbits(bits, bitorder="little").tobytes()
    breaks = np.flatnonzero(np.diff(low) != 1) + 1
    starts = low[np.concatenate(([0], breaks))]
    ends = low[np.concatenate((breaks - 1, [len(low) - 1]))]
    pairs = np.empty(2 * len(starts), "<u2")
    pairs[0::2], pairs[1::2] = starts, ends - starts
    return struct.pack("<H", len(starts)) + pairs.tobytes()


def _common(a: bytes, b: bytes) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _insert(node: _Leaf | _Inner | None, key: bytes, depth: int, index: int) -> _Leaf | _Inner:
    """The library's ART insertion of a key it does not hold."""
    if node is None:
        return _Leaf(key, index)
    if isinstance(node, _Leaf):
        common = _common(node.key[depth:], key[depth:])
        node.prefix = b""
        split = _Inner(NODE4, key[depth : depth + common])
        split.add(node.key[depth + common], node)
        split.add(key[depth + common], _Leaf(key, index))
        return split
    if node.prefix:
        miss = _common(node.prefix, key[depth:])
        if miss != len(node.prefix):
            split = _Inner(NODE4, node.prefix[:miss])
            split.add(node.prefix[miss], node)
            node.prefix = node.prefix[miss + 1 :]
            split.add(key[depth + miss], _Leaf(key, index))
            return split
        depth += len(node.prefix)
    byte = key[depth]
    if byte in node.keys:
        at = node.keys.index(byte)
        node.children[at] = _insert(node.children[at], key, depth + 1, index)
        return node
    node.add(byte, _Leaf(key, index))
    return node


def _write_node(node: _Leaf | _Inner, out: bytearray) -> None:
    if isinstance(node, _Leaf):
        out += struct.pack("<BhB", LEAF, 0, len(node.prefix)) + node.prefix
        out += node.key + struct.pack("<q", node.index)
        return
    out += struct.pack("<BhB", node.kind, len(node.keys), len(node.prefix)) + node.prefix
    if node.kind == NODE4:
        out += bytes(node.keys + [0] * (4 - len(node.keys)))[::-1]
    elif node.kind == NODE16:
        raw = bytes(node.keys + [0] * (16 - len(node.keys)))
        out += raw[:8][::-1] + raw[8:][::-1]
    elif node.kind == NODE48:
        index = bytearray(b"\xff" * 256)
        for k, s in node.slots.items():
            index[k] = s
        out += b"".join(bytes(index[8 * i : 8 * i + 8])[::-1] for i in range(32))
    else:
        bits = np.zeros(256, np.uint8)
        bits[node.keys] = 1
        out += np.packbits(bits, bitorder="little").tobytes()
    for child in node.children:
        _write_node(child, out)


def encode(values: npt.ArrayLike) -> bytes:
    """The bytes of a bitmap of ``values`` built in ascending order and run-optimized."""
    bitmap = Bitmap64.of(values)
    bitmap.run_optimize()
    return bitmap.encode()


def decode(data: bytes) -> npt.NDArray[np.uint64]:
    """The values of serialized bitmap ``data``, sorted, as unsigned 64-bit integers."""
    return Bitmap64.decode(data).values()


def union(acc: bytes, value: bytes) -> bytes:
    """Paimon's ``rbm64`` of two serialized bitmaps: ``acc`` or ``value``,
    run-optimized."""
    left = Bitmap64.decode(acc)
    left.union(Bitmap64.decode(value))
    left.run_optimize()
    return left.encode()
