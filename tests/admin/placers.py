"""A plugin that refuses some topics on purpose, for the failure paths (loaded by file path)."""

from __future__ import annotations

from controller.placement.api import ClusterView, PlacementSpec, ReplicaPlacementError, ReplicaPlacer


class PickyPlacer(ReplicaPlacer):
    """Refuses topics whose name starts with ``reject``; places the others round-robin over unfenced brokers."""

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        if spec.topic is not None and spec.topic.startswith("reject"):
            raise ReplicaPlacementError(
                f"no room for topic {spec.topic} (partitions from {spec.start_partition})"
            )
        ids = sorted(b.id for b in cluster.usable(spec) if not b.fenced)
        n = len(ids)
        return [
            [ids[(spec.start_partition + p + r) % n] for r in range(spec.num_replicas)]
            for p in range(spec.num_partitions)
        ]
