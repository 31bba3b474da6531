"""Placers for the runner tests, loaded by file path (``sweep_placers.py:Class``)."""

from __future__ import annotations

from typing import ClassVar

from controller.placement.api import ClusterView, PlacementSpec, ReplicaPlacer


class RecordingPlacer(ReplicaPlacer):
    """Places every partition on brokers 0..rf-1 and records what each call saw."""

    calls: ClassVar[list[tuple[int, str | None, int, int, int]]] = []

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        RecordingPlacer.calls.append(
            (id(self), spec.topic, spec.start_partition, spec.num_partitions, len(cluster.assignments))
        )
        return [list(range(spec.num_replicas)) for _ in range(spec.num_partitions)]


class DeferringPlacer(ReplicaPlacer):
    """Always defers to the default placer."""

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> None:
        return None


class AsyncPlacer(ReplicaPlacer):
    """An ``async def place`` placing partition i on the rf brokers from broker i."""

    async def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        ids = sorted(b.id for b in cluster.brokers)
        return [
            [ids[(spec.start_partition + i + r) % len(ids)] for r in range(spec.num_replicas)]
            for i in range(spec.num_partitions)
        ]


class BrokenPlacer(ReplicaPlacer):
    """Names a broker that does not exist."""

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        return [[999] * 1 + list(range(spec.num_replicas - 1)) for _ in range(spec.num_partitions)]
