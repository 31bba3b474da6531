"""Random number generators that reproduce Java's, so that placers give Kafka's exact results.

- :class:`JavaRandom` is bit-exact with ``java.util.Random`` (the 48-bit linear congruential
  generator), for the same seed it yields the same ``nextInt``, ``nextLong``, ``nextDouble`` ...
- :class:`MockRandom` is Kafka's deterministic test generator (``org.apache.kafka.server.util.MockRandom``):
  a 64-bit LCG starting at 17 behind the same ``nextInt(bound)`` logic. Seeded like Kafka's tests,
  the placers reproduce the expectations of Kafka's own unit tests.
- :func:`shuffle` is ``java.util.Collections.shuffle(list, rnd)``.

Placers draw their randomness from ``simulator.seed`` (:func:`seed_from_configs`,
:func:`random_from_configs`), so the same seed gives the same placements.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, MutableSequence
from typing import Protocol, TypeVar

from controller.plugins.properties import SEED

__all__ = [
    "SEED_KEY",
    "JavaRandom",
    "JavaRandomLike",
    "MockRandom",
    "random_from_configs",
    "seed_from_configs",
    "shuffle",
]

log = logging.getLogger(__name__)

#: The server property every seeded placer reads.
SEED_KEY = SEED

_MULTIPLIER = 0x5DEECE66D
_ADDEND = 0xB
_MASK48 = (1 << 48) - 1
_MASK64 = (1 << 64) - 1
_INT_MIN = -(1 << 31)
_DOUBLE_UNIT = 1.0 / (1 << 53)
_FLOAT_UNIT = 1.0 / (1 << 24)

_MOCK_MULTIPLIER = 2862933555777941757
_MOCK_ADDEND = 3037000493

T = TypeVar("T")


class JavaRandomLike(Protocol):
    """What the placers need from a random source: Java's ``nextInt(bound)``."""

    def next_int(self, bound: int | None = None) -> int: ...


def _to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _to_int64(value: int) -> int:
    value &= _MASK64
    return value - (1 << 64) if value & (1 << 63) else value


class JavaRandom:
    """``java.util.Random``, bit for bit. ``JavaRandom(seed)`` is ``new Random(seed)``.

    Without a seed it is seeded from the operating system's entropy source (Java uses the clock
    and a counter; either way the sequence is not reproducible).
    """

    __slots__ = ("_seed",)

    def __init__(self, seed: int | None = None) -> None:
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "big")
        self._seed = 0
        self.set_seed(seed)

    def set_seed(self, seed: int) -> None:
        """``Random.setSeed(long)``: scrambles the seed into the 48-bit state."""
        self._seed = (seed ^ _MULTIPLIER) & _MASK48

    def next(self, bits: int) -> int:
        """``Random.next(bits)``: the top ``bits`` bits of the next state, as a Java ``int``."""
        self._seed = seed = (self._seed * _MULTIPLIER + _ADDEND) & _MASK48
        r = seed >> (48 - bits)
        return r - (1 << 32) if r & 0x80000000 else r

    def next_int(self, bound: int | None = None) -> int:
        """``nextInt()`` (any Java ``int``) or ``nextInt(bound)`` (uniform in ``[0, bound)``)."""
        if bound is None:
            return self.next(32)
        if bound <= 0:
            raise ValueError(f"bound must be positive: {bound}")
        r = self.next(31)
        m = bound - 1
        if bound & m == 0:  # a power of two: take the high bits
            return (bound * r) >> 31
        u = r
        r = u % bound
        # Java rejects the draw while u - r + m overflows a signed 32-bit int.
        while u - r + m > 0x7FFFFFFF:
            u = self.next(31)
            r = u % bound
        return r

    def next_long(self) -> int:
        """``nextLong()``: ``((long) next(32) << 32) + next(32)`` with Java's wrap-around."""
        high = self.next(32)
        return _to_int64((high << 32) + self.next(32))

    def next_boolean(self) -> bool:
        """``nextBoolean()``."""
        return self.next(1) != 0

    def next_double(self) -> float:
        """``nextDouble()``: uniform in ``[0, 1)`` with 53 random bits."""
        high = self.next(26)
        return ((high << 27) + self.next(27)) * _DOUBLE_UNIT

    def next_float(self) -> float:
        """``nextFloat()``: uniform in ``[0, 1)`` with 24 random bits."""
        return self.next(24) * _FLOAT_UNIT


class MockRandom(JavaRandom):
    """Kafka's ``MockRandom`` test generator: ``next(bits)`` from a 64-bit LCG whose state starts at 17.

    A fresh ``MockRandom()`` gives ``next_int(4)`` = 2, 2, 0, 3, as in Kafka's tests.
    """

    __slots__ = ("_state",)

    def __init__(self, state: int = 17) -> None:
        super().__init__(0)
        self._state = state & _MASK64

    def set_seed(self, seed: int) -> None:
        """Kafka's MockRandom ignores ``setSeed`` (``java.util.Random``'s constructor calls it)."""

    def next(self, bits: int) -> int:
        self._state = state = (self._state * _MOCK_MULTIPLIER + _MOCK_ADDEND) & _MASK64
        return _to_int32(state >> (64 - bits))


def shuffle(items: MutableSequence[T], rnd: JavaRandomLike) -> None:
    """``Collections.shuffle(list, rnd)``: for i from len down to 2, swap ``i - 1`` with ``nextInt(i)``."""
    if type(rnd) is JavaRandom:
        _shuffle_java_random(items, rnd)
        return
    next_int = rnd.next_int
    for i in range(len(items), 1, -1):
        j = next_int(i)
        items[i - 1], items[j] = items[j], items[i - 1]


def _shuffle_java_random(items: MutableSequence[T], rnd: JavaRandom) -> None:
    """:func:`shuffle` with ``JavaRandom.next_int(bound)`` inlined: the same draws, without the calls."""
    seed = rnd._seed
    for i in range(len(items), 1, -1):
        seed = (seed * _MULTIPLIER + _ADDEND) & _MASK48
        u = seed >> 17  # next(31)
        if i & (i - 1) == 0:
            j = (i * u) >> 31
        else:
            j = u % i
            while u - j + i - 1 > 0x7FFFFFFF:
                seed = (seed * _MULTIPLIER + _ADDEND) & _MASK48
                u = seed >> 17
                j = u % i
        items[i - 1], items[j] = items[j], items[i - 1]
    rnd._seed = seed


def seed_from_configs(configs: Mapping[str, str], key: str = SEED_KEY) -> int | None:
    """The integer seed under ``key`` (default ``simulator.seed``), or None when absent or blank.

    Raises ValueError naming the key when the value is not an integer.
    """
    raw = configs.get(key)
    if raw is None or not str(raw).strip():
        return None
    try:
        return int(str(raw).strip(), 0)
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {raw!r}") from None


def random_from_configs(configs: Mapping[str, str], key: str = SEED_KEY) -> JavaRandom:
    """``JavaRandom(seed)`` seeded from ``configs[key]``; an unseeded one when the key is absent."""
    seed = seed_from_configs(configs, key)
    if seed is None:
        log.debug("%s not set: placements are not reproducible", key)
        return JavaRandom()
    return JavaRandom(seed)
