"""A third-party placer for the sweep tests: not installed, shipped to the Spark executors as a file.

Partition n of the cluster (counting every partition already in the cluster view) goes to the
unfenced brokers in descending id order, rotated by n: with brokers 0..5 and 3 replicas the first
partitions are [5, 4, 3], [4, 3, 2], [3, 2, 1], ...
"""

from __future__ import annotations

from controller.placement.api import ClusterView, InvalidReplicationFactorError, PlacementSpec, ReplicaPlacer


class DescendingPlacer(ReplicaPlacer):
    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        ids = sorted((b.id for b in cluster.usable(spec) if not b.fenced), reverse=True)
        if spec.num_replicas > len(ids):
            raise InvalidReplicationFactorError(
                f"{spec.num_replicas} replicas but {len(ids)} unfenced brokers"
            )
        first = len(cluster.assignments)
        return [
            [ids[(first + offset + r) % len(ids)] for r in range(spec.num_replicas)]
            for offset in range(spec.num_partitions)
        ]
