"""The replica placer plugin API (KIP-660 with KIP-879's ClusterView and broker subsets).

A placer receives a :class:`PlacementSpec` and a :class:`ClusterView` and returns one replica
list per partition, leader first, or ``None`` to defer to the default placer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar

from controller.plugins.properties import Property

__all__ = [
    "ClusterView",
    "InvalidReplicationFactorError",
    "PlacementResult",
    "PlacementSpec",
    "PlacerNotApplicableError",
    "ReplicaPlacementError",
    "ReplicaPlacer",
    "UsableBroker",
]


@dataclass(frozen=True)
class UsableBroker:
    """A broker where a replica can be placed (KIP-660)."""

    id: int
    rack: str | None
    fenced: bool


@dataclass(frozen=True)
class PlacementSpec:
    """What to place: partitions ``start_partition .. start_partition + num_partitions - 1``."""

    start_partition: int
    num_partitions: int
    num_replicas: int
    topic: str | None = None
    broker_ids: tuple[int, ...] | None = None  # KIP-879 subset; None = all brokers
    force_simple: bool = False


_EMPTY: Mapping[tuple[str, int], tuple[int, ...]] = MappingProxyType({})


@dataclass(frozen=True)
class ClusterView:
    """The brokers and the current assignments a placer may look at (KIP-879)."""

    brokers: tuple[UsableBroker, ...]
    assignments: Mapping[tuple[str, int], tuple[int, ...]] = field(default_factory=lambda: _EMPTY)

    def __reduce__(self) -> tuple[object, ...]:
        # A read-only mapping proxy does not pickle: a plugin's worker process gets a plain copy of it.
        assignments = self.assignments
        if isinstance(assignments, MappingProxyType):
            assignments = dict(assignments)
        return (ClusterView, (self.brokers, assignments))

    def usable(self, spec: PlacementSpec) -> tuple[UsableBroker, ...]:
        """The brokers a placement may use: all of them, or the spec's ``broker_ids`` subset."""
        if spec.broker_ids is None:
            return self.brokers
        wanted = set(spec.broker_ids)
        return tuple(b for b in self.brokers if b.id in wanted)


PlacementResult = Sequence[Sequence[int]] | None


class ReplicaPlacer(ABC):
    """The interface a replica placement plugin implements (``replica.placer.class.name``).

    ``place`` may also be declared ``async def``. It raises :class:`InvalidReplicationFactorError`
    when the replication factor cannot be met, :class:`PlacerNotApplicableError` when the placer does
    not apply to the cluster at all, and :class:`ReplicaPlacementError` when no placement can be
    computed for another reason.
    """

    #: Placers that promise to spread each partition over min(RF, racks) racks set this to True;
    #: the conformance kit then checks it.
    rack_aware: bool = False

    #: The properties the placer reads in ``configure()`` (optional; the built-ins declare theirs, and
    #: the server's settings table lists them).
    properties: ClassVar[tuple[Property, ...]] = ()

    def configure(self, configs: Mapping[str, str]) -> None:  # noqa: B027 - optional hook
        """Receives every server property once, before the first placement."""

    @abstractmethod
    def place(
        self, spec: PlacementSpec, cluster: ClusterView
    ) -> PlacementResult | Awaitable[PlacementResult]:
        """One replica list per partition, leader first; or None to defer to the default placer."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Releases resources at shutdown."""


class InvalidReplicationFactorError(Exception):
    """The replication factor cannot be met; maps to INVALID_REPLICATION_FACTOR (38)."""


class ReplicaPlacementError(Exception):
    """The placer could not compute a placement; maps to REPLICA_PLACEMENT_FAILED (1001)."""


class PlacerNotApplicableError(ReplicaPlacementError):
    """The placer does not apply to this cluster (say, a multi-level placer on brokers whose racks are not
    paths); the message says why. The client gets REPLICA_PLACEMENT_FAILED (1001), as for any
    :class:`ReplicaPlacementError`; ``placement-sim compare`` and the sweep's summary show the placer as
    not applicable to the cluster rather than as failing."""
