"""Which partition a producer writes a record to, as Kafka's Java producer chooses it (its built-in
partitioner), so that a record sent by any tool lands where a Java or librdkafka (``murmur2_random``)
producer would put it.

- A record with a key goes to ``toPositive(murmur2(key)) % partitions``: :func:`partition_for_key`.
- A record without a key goes to the *sticky* partition (KIP-480): one partition, chosen at random among
  those with a leader, takes records until ``batch.size`` bytes were produced to it, then another is
  chosen (:class:`StickyPartitioner`). Kafka draws the choice from ``ThreadLocalRandom``; here it comes
  from a seeded generator, so that the same seed and the same records make the same choices.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["DEFAULT_BATCH_SIZE", "StickyPartitioner", "murmur2", "partition_for_key", "to_positive"]

#: Kafka's producer default ``batch.size``: the bytes a sticky partition takes before the next is chosen.
DEFAULT_BATCH_SIZE = 16384

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def _signed(value: int) -> int:
    value &= _MASK
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2(data: bytes) -> int:
    """MurmurHash2 (32 bits, seed ``0x9747b28c``) of ``data`` as Kafka's ``Utils.murmur2`` computes it: a
    signed 32-bit result, as Java's ``int``."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = length & 3
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return _signed(h)


def to_positive(value: int) -> int:
    """Kafka's ``Utils.toPositive``: the 31 low bits (``value & 0x7fffffff``), not ``abs``."""
    return value & 0x7FFFFFFF


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition of a keyed record among ``partitions`` (Kafka's ``BuiltInPartitioner.partitionForKey``)."""
    if partitions <= 0:
        raise ValueError(f"a topic has at least one partition, not {partitions}")
    return to_positive(murmur2(key)) % partitions


class StickyPartitioner:
    """Kafka's built-in partitioner for one topic: keyed records by :func:`partition_for_key`, records
    without a key on a sticky partition that changes after ``batch_size`` bytes (Kafka's
    ``BuiltInPartitioner`` without adaptive partitioning, which needs the producer's queue statistics)."""

    def __init__(self, batch_size: int = DEFAULT_BATCH_SIZE, seed: int | None = None) -> None:
        self.batch_size = batch_size
        self._random = random.Random(seed)
        self._sticky: int | None = None
        self._produced = 0

    def partition(self, key: bytes | None, partitions: int, available: Sequence[int] = ()) -> int:
        """The partition of a record (``available``: the partitions that have a leader now; none known: all)."""
        if key is not None:
            return partition_for_key(key, partitions)
        if self._sticky is None or self._sticky >= partitions:
            self._sticky = self._next(partitions, available)
            self._produced = 0
        return self._sticky

    def produced(self, size: int, partitions: int, available: Sequence[int] = ()) -> None:
        """``size`` bytes went to the sticky partition: past ``batch_size`` the next record goes elsewhere
        (``updatePartitionInfo``)."""
        self._produced += size
        if self._produced >= self.batch_size:
            self._sticky = self._next(partitions, available)
            self._produced = 0

    def _next(self, partitions: int, available: Sequence[int]) -> int:
        """A partition chosen at random among those with a leader (among all when none has one)."""
        draw = to_positive(self._random.getrandbits(32))
        usable = sorted(p for p in available if 0 <= p < partitions)
        return usable[draw % len(usable)] if usable else draw % partitions
