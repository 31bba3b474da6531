"""The election policy plugin API: what a policy sees of a partition, and what it answers.

The controller decides *when* a partition needs a leader and *which* replicas may lead (the eligible
set, by the rules of :mod:`controller.election.rules`); a policy orders those candidates, best first.
The controller then applies the first one (Kafka's controller: at once) or proposes them in turn
(Fluvio's SC: the candidate must confirm its promotion before a timer runs out), keeps the epochs and
the in-sync set, and records every change as an event.

A policy's ``style`` picks which controller runs it, and with it how brokers are noticed to fail:
``kafka`` (KRaft: fencing after ``broker.session.timeout.ms``, controlled shutdown moves leaders first)
or ``fluvio`` (Fluvio's SC: an SPU is offline as soon as its connection drops, or after its health
timeout; elections go through ``Election`` and ``CandidateFound`` to ``Online`` or ``Offline``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import ClassVar

__all__ = [
    "Candidates",
    "ElectionError",
    "ElectionPolicy",
    "ElectionStyle",
    "PartitionView",
    "Trigger",
]


class ElectionStyle(StrEnum):
    """The controllers a policy can ask for (its ``style``; the strings ``"kafka"`` and ``"fluvio"`` are
    accepted as they are)."""

    KAFKA = "kafka"
    FLUVIO = "fluvio"


class Trigger(Enum):
    """Why the controller asks for a leader."""

    #: The leader's broker was fenced, went offline, shut down or was removed.
    LEADER_OFFLINE = "leader offline"
    #: A broker came back: partitions without a leader may get one.
    BROKER_ONLINE = "broker online"
    #: A preferred-leader election (ElectLeaders PREFERRED, or the automatic rebalance).
    PREFERRED = "preferred"
    #: An unclean election (ElectLeaders UNCLEAN): any live replica if no in-sync one can lead.
    UNCLEAN = "unclean"
    #: Fluvio: the proposed candidate did not confirm its promotion in time; the next one is asked.
    CANDIDATE_TIMEOUT = "candidate timeout"


@dataclass(frozen=True, slots=True)
class PartitionView:
    """One partition as a policy sees it when the controller asks for its leader.

    ``replicas``, ``log_end_offsets`` and ``high_watermarks`` are aligned (assignment order; the first
    replica is the preferred leader). Offsets are the last ones the controller knows.
    """

    topic: str
    partition: int
    replicas: tuple[int, ...]
    #: The in-sync set after the change that asked for the election (Kafka's ISR, Fluvio's LRS).
    isr: tuple[int, ...]
    #: The current leader, -1 when there is none.
    leader: int
    #: The leader before the current one (or the one that just went away), -1 when unknown.
    last_leader: int
    log_end_offsets: tuple[int, ...]
    high_watermarks: tuple[int, ...]
    #: The brokers that may lead now (registered, unfenced, not shutting down; SPUs online).
    alive: frozenset[int]
    #: The replicas the controller allows to lead in this election, in assignment order.
    eligible: tuple[int, ...]
    #: True when ``eligible`` lies outside the in-sync set: choosing any of them is an unclean election.
    unclean: bool
    trigger: Trigger

    def log_end_offset(self, broker: int) -> int:
        return self.log_end_offsets[self.replicas.index(broker)]


#: A policy's answer for one partition: candidates from ``eligible``, best first; empty means no leader.
Candidates = Sequence[int]


class ElectionPolicy(ABC):
    """The interface an election policy implements (``simulator.election.policy``).

    ``elect`` gets a batch of partitions (the controller slices big elections) and returns one
    :data:`Candidates` per partition, in the same order. It may be ``async def``. Every candidate must be
    in that partition's ``eligible`` set: the controller checks it (a policy that answers otherwise fails
    the election with its problem named, and the partition keeps its current state).
    """

    #: Which controller runs this policy: ``kafka`` or ``fluvio`` (see the module docstring).
    style: ClassVar[ElectionStyle | str] = ElectionStyle.KAFKA

    def configure(self, configs: Mapping[str, str]) -> None:  # noqa: B027 - optional hook
        """Receives every server property once, before the first election."""

    @abstractmethod
    def elect(
        self, partitions: Sequence[PartitionView]
    ) -> Sequence[Candidates] | Awaitable[Sequence[Candidates]]:
        """One candidate list per partition, best first."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Releases resources at shutdown."""


class ElectionError(Exception):
    """The policy cannot decide; the partitions of the call keep their state, and the error is logged."""
