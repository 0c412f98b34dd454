"""Dynamic buckets: the bucket of each key of one partition, as Paimon assigns it.

A primary-key table with ``bucket`` = -1 keeps, per partition and bucket, the hashes
of the keys written to that bucket (``format/hash_index``). A key whose hash the
partition holds goes to that bucket, so a key never leaves its bucket. A new key goes
to the lowest bucket holding fewer than ``dynamic-bucket.target-row-num`` hashes, else
to a new bucket, the lowest free id; once ``dynamic-bucket.max-buckets`` buckets are
open, to one of the open buckets (Paimon picks one at random; shoal picks by the
hash, one of the choices Paimon could make).

Paimon's writers assign in parallel: with ``C`` channels
(``dynamic-bucket.assigner-parallelism``) and ``A`` assigners
(``dynamic-bucket.initial-buckets``, at most ``C``) a key goes to channel
``(|partition hash % C| + |key hash % A|) % C``, and a channel sees the fill of, and
opens, only the buckets ``b`` with ``b % A == channel % A``. shoal runs every channel
in turn with that rule, so a partition's buckets come out as Paimon's writers make
them with the same options. Without either option there is one channel, as in a
Paimon writer of parallelism one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from shoal import options as O
from shoal.errors import InvalidOptionError
from shoal.write.bucket import hash_row

# Paimon keeps bucket ids of dynamic-bucket tables in a Java short.
_BUCKET_ID_LIMIT = 32767


@dataclass(frozen=True, slots=True)
class AssignSettings:
    """``target``: keys per bucket; ``max_buckets``: -1 or the bound on bucket ids;
    ``channels`` and ``assigners``: Paimon's parallel assigners (see the module)."""

    target: int
    max_buckets: int = -1
    channels: int = 1
    assigners: int = 1

    @staticmethod
    def of(options: Mapping[str, str]) -> AssignSettings:
        initial = O.DYNAMIC_BUCKET_INITIAL_BUCKETS.get(options)
        parallelism = O.DYNAMIC_BUCKET_ASSIGNER_PARALLELISM.get(options)
        channels = parallelism or initial or 1
        assigners = min(initial, channels) if initial is not None else channels
        return AssignSettings(
            target=O.DYNAMIC_BUCKET_TARGET_ROW_NUM.get(options),
            max_buckets=O.DYNAMIC_BUCKET_MAX_BUCKETS.get(options),
            channels=channels,
            assigners=assigners,
        )


def _java_abs_rem(values: np.ndarray | int, divisor: int) -> np.ndarray:
    """``Math.abs(v % divisor)`` with Java's truncated remainder."""
    return np.abs(np.fmod(np.asarray(values, dtype=np.int64), divisor))


class _Channel:
    """One assigner's buckets of a partition and how many keys each holds."""

    def __init__(self, channel: int, settings: AssignSettings, counts: Mapping[int, int]):
        self.settings = settings
        self.residue = channel % settings.assigners
        self.counts = {b: n for b, n in counts.items() if b % settings.assigners == self.residue}

    def take(self, hashes: np.ndarray, partition: str) -> np.ndarray:
        """Buckets for ``hashes``, new distinct keys in the order they arrived."""
        s = self.settings
        out = np.empty(len(hashes), dtype=np.int32)
        pos, n = 0, len(hashes)
        for bucket in sorted(b for b, c in self.counts.items() if c < s.target):
            k = min(s.target - self.counts[bucket], n - pos)
            out[pos : pos + k] = bucket
            self.counts[bucket] += k
            pos += k
            if pos == n:
                return out
        limit = (s.max_buckets if s.max_buckets != -1 else _BUCKET_ID_LIMIT) - 1
        candidate = self.residue
        while pos < n and candidate <= limit:
            if candidate not in self.counts:
                k = min(s.target, n - pos)
                out[pos : pos + k] = candidate
                self.counts[candidate] = k
                pos += k
            candidate += s.assigners
        if pos < n:
            if s.max_buckets == -1:
                raise InvalidOptionError(
                    O.DYNAMIC_BUCKET_TARGET_ROW_NUM.key,
                    str(s.target),
                    f"partition {partition} would need more than {_BUCKET_ID_LIMIT} buckets "
                    "of this many keys; raise it",
                )
            own = np.array(sorted(self.counts), dtype=np.int32)
            out[pos:] = own[_java_abs_rem(hashes[pos:], len(own))]
        return out


def _stable_order(hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``hashes`` sorted and the order that sorts them, equal hashes in their order:
    one unstable sort of the hashes paired with their positions (numpy's stable sort
    of int32 is several times slower)."""
    keys = (hashes.astype(np.int64) << 32) | np.arange(len(hashes), dtype=np.int64)
    order = np.argsort(keys)
    return hashes[order], order


class PartitionIndex:
    """The key hashes of one partition with their buckets; assigns new keys and
    remembers, per bucket, the hashes it added."""

    def __init__(
        self,
        partition: bytes,
        settings: AssignSettings,
        hashes: np.ndarray,
        buckets: np.ndarray,
        label: str = "",
    ) -> None:
        self.settings = settings
        self.label = label
        # BinaryRow.hashCode of the partition: its bytes after the arity prefix.
        self._partition_hash = hash_row(partition[4:])
        native = np.asarray(hashes, dtype=np.int32)
        self._hashes, order = _stable_order(native)
        self._buckets = np.asarray(buckets, dtype=np.int32)[order]
        values, counts = np.unique(self._buckets, return_counts=True)
        self._counts = dict(zip(values.tolist(), counts.tolist(), strict=True))
        self._channels: dict[int, _Channel] = {}
        self.added: dict[int, list[np.ndarray]] = {}

    def _lookup(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at = np.searchsorted(self._hashes, hashes)
        found = at < len(self._hashes)
        found[found] = self._hashes[at[found]] == hashes[found]
        return at, found

    def assign(self, hashes: np.ndarray) -> np.ndarray:
        """The bucket of every hash of ``hashes`` (one per row, in arrival order)."""
        hashes = np.asarray(hashes, dtype=np.int32)
        out = np.empty(len(hashes), dtype=np.int32)
        at, found = self._lookup(hashes)
        out[found] = self._buckets[at[found]]
        if found.all():
            return out
        fresh, first = np.unique(hashes[~found], return_index=True)
        fresh = fresh[np.argsort(first, kind="stable")]  # in arrival order
        s = self.settings
        channel_of = (
            _java_abs_rem(self._partition_hash, s.channels) + _java_abs_rem(fresh, s.assigners)
        ) % s.channels
        assigned = np.empty(len(fresh), dtype=np.int32)
        for channel in np.unique(channel_of).tolist():
            mask = channel_of == channel
            state = self._channels.get(channel)
            if state is None:
                state = self._channels[channel] = _Channel(channel, s, self._counts)
            assigned[mask] = state.take(fresh[mask], self.label)
        for bucket in np.unique(assigned).tolist():
            self.added.setdefault(bucket, []).append(fresh[assigned == bucket])
        # the new hashes (distinct, none in the index) go in at their sorted places
        order = np.argsort(fresh)
        at_new = np.searchsorted(self._hashes, fresh[order])
        self._hashes = np.insert(self._hashes, at_new, fresh[order])
        self._buckets = np.insert(self._buckets, at_new, assigned[order])
        at, _ = self._lookup(hashes[~found])
        out[~found] = self._buckets[at]
        return out
