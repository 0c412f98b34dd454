"""Finding known strings in Avro binary records without decoding the records.

An Avro string is its length in UTF-8 bytes, as a zig-zag varint, then those bytes.
To learn which of a set of strings some records hold, it is enough to search their
bytes for each string's encoding; that costs a few passes of ``bytes.find`` over the
block instead of a walk through every field of every record. Orphan cleanup asks
this of every manifest a table's history names, about the names of its data files.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from shoal.format.avro.compiled import write_long


def encoded(value: str) -> bytes:
    """``value`` as Avro encodes a string: its length, then its UTF-8 bytes."""
    data = value.encode()
    return _length(len(data)) + data


def _common_prefix(values: list[bytes]) -> bytes:
    low, high = min(values), max(values)  # every value lies between them
    size = 0
    while size < len(low) and low[size] == high[size]:
        size += 1
    return low[:size]


def _length(size: int) -> bytes:
    out = bytearray()
    write_long(out, size)
    return bytes(out)


class StringFinder:
    """Which of a fixed set of strings occur as string values in Avro binary data.

    Per byte length ``n`` of the strings, one search looks for the encoding of ``n``
    followed by the longest prefix the strings of that length share; each hit gives
    the ``n`` bytes after the length, kept when it is one of the strings. So every
    string of the set that the data holds as a string value is found, provided its
    length was written as the shortest varint, as every Avro writer writes it
    (callers check that on a value they decoded: ``encoded(value) in data``). A string
    may also be found inside another value (bytes that happen to hold its encoding):
    the answer is a superset, which suits a caller that keeps what is found.
    """

    def __init__(self, strings: Iterable[str]) -> None:
        self._wanted = {value.encode(): value for value in strings}
        by_length: dict[int, list[bytes]] = defaultdict(list)
        for data in self._wanted:
            by_length[len(data)].append(data)
        # (what to search for, where the string starts in it, the string's length)
        self._searches: list[tuple[bytes, int, int]] = []
        for size, values in sorted(by_length.items()):
            length = _length(size)
            prefix = _common_prefix(values)
            self._searches.append((length + prefix, len(length), size))

    def __len__(self) -> int:
        return len(self._wanted)

    def among(self, values: Iterable[str]) -> set[str]:
        """The strings of the set that ``values`` holds."""
        return {v for v in values if v.encode() in self._wanted}

    def find(self, data: bytes) -> set[str]:
        """The strings of the set that ``data`` holds (see the class)."""
        hits: set[bytes] = set()
        for needle, start, size in self._searches:
            at = data.find(needle)
            while at >= 0:
                begin = at + start
                hits.add(data[begin : begin + size])
                at = data.find(needle, at + 1)
        wanted = self._wanted
        return {wanted[h] for h in hits if h in wanted}
