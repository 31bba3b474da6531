"""Seeded schedules: what producers write and which failures the cluster goes through, step by step.

A :class:`Configuration` is one cell of the table the benchmark prints: the election policy, whether
unclean elections are allowed, the producers' ``acks`` and idempotence. :func:`make_schedule` draws a
list of :class:`Step` from a seed, with every failure the dynamics offer: a broker crashed, hung,
isolated or shut down (controlled), started again; a follower that stops copying and copies again;
preferred and unclean elections (ElectLeaders); partition reassignments; request faults on Produce (a
connection closed after the append, an answer delayed); and time. The same seed gives the same steps.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

__all__ = ["CONFIGURATIONS", "TRANSACTIONAL_CONFIGURATIONS", "Configuration", "Step", "make_schedule"]


@dataclass(frozen=True, slots=True)
class Configuration:
    """One configuration of a run: ``policy`` (``kafka``/``fluvio``), ``unclean`` (the topic's
    ``unclean.leader.election.enable``), ``acks`` (0, 1 or -1), ``idempotent`` (only with acks=all,
    as Kafka's producers require) and ``transactional`` (transactional producers: idempotent, acks=all)."""

    policy: str
    unclean: bool
    acks: int
    idempotent: bool
    transactional: bool = False

    @property
    def label(self) -> str:
        acks = "all" if self.acks == -1 else str(self.acks)
        return (
            f"{self.policy} unclean={'on' if self.unclean else 'off'} acks={acks}"
            f"{' transactional' if self.transactional else ' idempotent' if self.idempotent else ''}"
        )


#: Every configuration: policy x unclean x (acks=0, acks=1, acks=all, acks=all idempotent).
CONFIGURATIONS: tuple[Configuration, ...] = tuple(
    Configuration(policy, unclean, acks, idempotent)
    for policy in ("kafka", "fluvio")
    for unclean in (False, True)
    for acks, idempotent in ((0, False), (1, False), (-1, False), (-1, True))
)

#: Transactional producers (each transaction committed or aborted by the seed), under both policies,
#: unclean elections off and on.
TRANSACTIONAL_CONFIGURATIONS: tuple[Configuration, ...] = tuple(
    Configuration(policy, unclean, -1, True, transactional=True)
    for policy in ("kafka", "fluvio")
    for unclean in (False, True)
)


@dataclass(frozen=True, slots=True)
class Step:
    """One step: ``kind`` and its arguments (see :func:`make_schedule`)."""

    kind: str
    args: tuple[Any, ...] = ()

    def __str__(self) -> str:
        return f"{self.kind}({', '.join(map(str, self.args))})"


#: Steps and their weights (a produce step sends one batch of one producer).
_WEIGHTS: tuple[tuple[str, int], ...] = (
    ("produce", 40),
    ("advance", 22),
    ("crash", 3),
    ("hang", 2),
    ("isolate", 2),
    ("controlled", 2),
    ("start", 7),
    ("stop copying", 3),
    ("copy again", 3),
    ("preferred election", 3),
    ("unclean election", 2),
    ("reassign", 2),
    ("disconnect after produce", 2),
    ("delay produce", 2),
)
#: Clock moves an ``advance`` step draws from (ms).
ADVANCES = (10, 50, 100, 300, 1000, 3000)


def make_schedule(seed: int, brokers: int, partitions: int, producers: int, steps: int) -> list[Step]:
    """``steps`` steps drawn from ``seed``: ``produce(producer, partition, records)``, ``advance(ms)``,
    ``crash``/``hang``/``isolate``/``controlled``/``start(broker)``, ``stop copying``/``copy again(broker)``,
    ``preferred election``/``unclean election(partition)``, ``reassign(partition, replicas)``,
    ``disconnect after produce(broker)``, ``delay produce(broker, ms)``."""
    rng = random.Random(seed)
    kinds = [k for k, _ in _WEIGHTS]
    weights = [w for _, w in _WEIGHTS]
    out: list[Step] = []
    for _ in range(steps):
        kind = rng.choices(kinds, weights)[0]
        if kind == "produce":
            out.append(Step(kind, (rng.randrange(producers), rng.randrange(partitions), rng.randint(1, 3))))
        elif kind == "advance":
            out.append(Step(kind, (rng.choice(ADVANCES),)))
        elif kind in ("preferred election", "unclean election"):
            out.append(Step(kind, (rng.randrange(partitions),)))
        elif kind == "reassign":
            out.append(Step(kind, (rng.randrange(partitions), tuple(rng.sample(range(brokers), 3)))))
        elif kind == "delay produce":
            out.append(Step(kind, (rng.randrange(brokers), rng.choice((50, 500, 5000)))))
        else:
            out.append(Step(kind, (rng.randrange(brokers),)))
    return out
