"""The choices a generator makes, read from a tape of numbers: the same small vocabulary as hypothesis's
strategies (``sampled_from``, ``integers``, ``booleans``, ``lists``, ``permutations``, ``just``), so that
generators read as hypothesis code.

Why not hypothesis's own strategies in the generators: what a generator may choose from depends on the
cluster's answers (the topics that exist, the offsets written), and a real cluster does not answer
byte for byte alike every time; hypothesis refuses a test whose draws change shape between runs of the
same choices. Each step therefore draws one fixed-size tape from hypothesis (whose numbers it shrinks
towards 0, the first option of every choice), and the generator reads its choices from it; past its end
a generator reads from a generator of numbers seeded by the tape. The benchmark reads from a seeded
``random.Random`` directly.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Chooser", "booleans", "integers", "just", "lists", "permutations", "sampled_from"]

#: How many numbers a step's tape holds (most steps read fewer).
TAPE = 48
#: Each number of a tape is below this.
TAPE_LIMIT = 1 << 16


@dataclass(frozen=True)
class _Choice:
    kind: str
    args: tuple[Any, ...] = ()


def sampled_from(options: Sequence[Any]) -> _Choice:
    return _Choice("sampled_from", (tuple(options),))


def integers(low: int, high: int) -> _Choice:
    return _Choice("integers", (low, high))


def booleans() -> _Choice:
    return _Choice("booleans")


def just(value: Any) -> _Choice:
    return _Choice("just", (value,))


def lists(elements: _Choice, *, min_size: int = 0, max_size: int = 4, unique: bool = False) -> _Choice:
    return _Choice("lists", (elements, min_size, max_size, unique))


def permutations(values: Sequence[Any]) -> _Choice:
    return _Choice("permutations", (tuple(values),))


class Chooser:
    """``chooser(choice)`` -> a value, read from a tape (a hypothesis test's) or a seeded generator."""

    def __init__(self, tape: Sequence[int] | None = None, rng: random.Random | None = None) -> None:
        self._tape = list(tape or ())
        self._at = 0
        self._rng = rng if rng is not None else random.Random(hash(tuple(self._tape)))

    def number(self) -> int:
        if self._at < len(self._tape):
            self._at += 1
            return self._tape[self._at - 1]
        return self._rng.randrange(TAPE_LIMIT)

    def __call__(self, choice: _Choice) -> Any:
        kind, args = choice.kind, choice.args
        if kind == "just":
            return args[0]
        if kind == "sampled_from":
            (options,) = args
            if not options:
                raise ValueError("nothing to choose from")
            return options[self.number() % len(options)]
        if kind == "integers":
            low, high = args
            return low + self.number() % (high - low + 1)
        if kind == "booleans":
            return self.number() % 2 == 1
        if kind == "permutations":
            values = list(args[0])
            for i in range(len(values) - 1, 0, -1):
                j = self.number() % (i + 1)
                values[i], values[j] = values[j], values[i]
            return values
        if kind == "lists":
            elements, min_size, max_size, unique = args
            size = min_size + self.number() % (max_size - min_size + 1)
            if unique and elements.kind == "sampled_from":
                pool = list(dict.fromkeys(elements.args[0]))
                size = min(size, len(pool))
                out = []
                for _ in range(size):
                    out.append(pool.pop(self.number() % len(pool)))
                return out
            return [self(elements) for _ in range(size)]
        raise ValueError(f"unknown choice {kind!r}")
