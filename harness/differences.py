"""Comparing the simulator with Kafka's own code case by case, and shrinking a difference to its smallest case.

A *case* is a plain JSON-able dict; a *checker* knows how to make random cases, ask Kafka (through
:class:`harness.kafka_rules.KafkaRules`) and the simulator about a batch of them, and how to make a case
smaller (:meth:`Checker.smaller`: candidate cases, each one step smaller). :func:`compare` runs batches
and stops at the first difference, which :func:`shrink` makes as small as it stays different.
"""

from __future__ import annotations

import json
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.kafka_rules import KafkaRules, KafkaRulesError

__all__ = ["Checker", "Difference", "Outcome", "compare", "shrink"]

Case = dict[str, Any]


@dataclass
class Difference:
    """A case where the simulator answers otherwise than Kafka's code, with both answers."""

    case: Case
    kafka: Any
    ours: Any
    #: The case as it was first found, before shrinking.
    original: Case | None = None
    shrink_steps: int = 0

    def __str__(self) -> str:
        lines = [
            f"smallest case ({self.shrink_steps} shrinking steps):",
            f"  {json.dumps(self.case, ensure_ascii=False)}",
            f"  Kafka:     {json.dumps(self.kafka, ensure_ascii=False)}",
            f"  simulator: {json.dumps(self.ours, ensure_ascii=False)}",
        ]
        if self.original is not None and self.original != self.case:
            lines.append(f"  found as: {json.dumps(self.original, ensure_ascii=False)}")
        return "\n".join(lines)


@dataclass
class Outcome:
    """What a run of :func:`compare` saw: how many cases agreed, and the first difference (shrunk)."""

    cases: int = 0
    difference: Difference | None = None
    #: How often each kind of case came up (the checker's :meth:`Checker.kind`).
    kinds: dict[str, int] = field(default_factory=dict)
    #: Per batch: (cases, seconds Kafka's side took, seconds the simulator's took).
    timings: list[tuple[int, float, float]] = field(default_factory=list)


class Checker(ABC):
    """One area compared with Kafka: placement, or elections."""

    name: str

    @abstractmethod
    def random_case(self, rnd: random.Random) -> Case:
        """A random case drawn from ``rnd`` only (the same seed, the same cases)."""

    @abstractmethod
    def question(self, case: Case) -> dict[str, Any]:
        """What Kafka's side is asked for ``case``."""

    @abstractmethod
    def kafka_answer(self, answer: dict[str, Any]) -> Any:
        """Kafka's answer, in the form :meth:`ours` gives (what is compared)."""

    @abstractmethod
    def ours(self, cases: Sequence[Case]) -> list[Any]:
        """The simulator's answers to ``cases``, in order."""

    @abstractmethod
    def smaller(self, case: Case) -> Iterator[Case]:
        """Cases one step smaller than ``case`` (the shrinker keeps the first that still differs)."""

    def valid(self, case: Case) -> bool:
        """Whether ``case`` is one Kafka's controller could ask (the shrinker keeps to those)."""
        return True

    def kind(self, case: Case) -> str:
        """A label for the kind of case, counted by :func:`compare` to show what the cases covered."""
        return self.name

    def answers(
        self, rules: KafkaRules, cases: Sequence[Case], timings: list[tuple[int, float, float]] | None = None
    ) -> list[tuple[Any, Any]]:
        """(Kafka's answer, ours) per case; with ``timings``, the seconds each side took are added to it."""
        started = time.perf_counter()
        kafka = [self.kafka_answer(a) for a in rules.ask([self.question(c) for c in cases])]
        asked = time.perf_counter()
        ours = self.ours(cases)
        if timings is not None:
            timings.append((len(cases), asked - started, time.perf_counter() - asked))
        return list(zip(kafka, ours, strict=True))


def shrink(checker: Checker, rules: KafkaRules, found: Difference, max_steps: int = 2_000) -> Difference:
    """``found`` made as small as it stays a difference: greedily, the first smaller case that still differs
    is kept, until none does (or ``max_steps`` cases were tried)."""
    case, kafka, ours = found.case, found.kafka, found.ours
    steps = tried = 0
    progress = True
    while progress and tried < max_steps:
        progress = False
        for candidate in checker.smaller(case):
            if not checker.valid(candidate):
                continue
            tried += 1
            try:
                [(k, o)] = checker.answers(rules, [candidate])
            except KafkaRulesError:
                continue  # not a case Kafka's code takes (a shrinking step too far)
            if k != o:
                case, kafka, ours = candidate, k, o
                steps += 1
                progress = True
                break
            if tried >= max_steps:
                break
    return Difference(case, kafka, ours, original=found.case, shrink_steps=steps)


def compare(
    checker: Checker, rules: KafkaRules, cases: int, seed: int, batch: int = 1_000, extra: Sequence[Case] = ()
) -> Outcome:
    """``cases`` random cases from ``seed`` (after the ``extra`` ones), in batches; stops at the first
    difference, shrunk."""
    rnd = random.Random(seed)
    outcome = Outcome()
    pending = list(extra)
    remaining = cases
    while remaining > 0 or pending:
        take = min(batch, remaining)
        remaining -= take
        chunk = pending + [checker.random_case(rnd) for _ in range(take)]
        pending = []
        invalid = [case for case in chunk if not checker.valid(case)]
        if invalid:
            raise ValueError(f"{checker.name}: not a case Kafka's controller could ask: {invalid[0]}")
        for case, (kafka, ours) in zip(chunk, checker.answers(rules, chunk, outcome.timings), strict=True):
            outcome.cases += 1
            label = checker.kind(case)
            outcome.kinds[label] = outcome.kinds.get(label, 0) + 1
            if kafka != ours:
                outcome.difference = shrink(checker, rules, Difference(case, kafka, ours))
                return outcome
    return outcome
