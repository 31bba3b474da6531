"""An example replica placer plugin: least-loaded brokers first, one replica per rack while racks last.

Load it with ``replica.placer.class.name=least_loaded.LeastLoadedPlacer`` when this directory is on
the Python path (as an installed package would be), or by file:
``replica.placer.class.name=examples/least_loaded_placer/least_loaded.py:LeastLoadedPlacer``.

It counts the replicas and leaders every broker already holds (``ClusterView.assignments``) and
gives each new partition:

- a leader: the unfenced broker with the fewest leaders, then the fewest replicas;
- followers: brokers in racks the partition does not use yet, unfenced before fenced, fewest
  replicas first.

Ties are broken by a shuffled broker order drawn from ``simulator.seed``, so a seed gives the same
placements every time.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Mapping

from controller.placement import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    ReplicaPlacer,
)

log = logging.getLogger(__name__)


class LeastLoadedPlacer(ReplicaPlacer):
    """Fewest leaders for the leader, fewest replicas for the followers, racks spread first."""

    rack_aware = True  # every partition spans min(replicas, racks) racks: the kit checks it

    def __init__(self) -> None:
        self._random = random.Random()

    def configure(self, configs: Mapping[str, str]) -> None:
        seed = configs.get("simulator.seed")
        self._random = random.Random(int(seed) if seed is not None else None)

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        brokers = cluster.usable(spec)
        rf = spec.num_replicas
        if rf <= 0 or rf > len(brokers):
            raise InvalidReplicationFactorError(
                f"replication factor {rf} must be between 1 and the {len(brokers)} usable broker(s)"
            )
        if all(b.fenced for b in brokers):
            raise InvalidReplicationFactorError("all usable brokers are fenced")
        replicas = Counter(r for placed in cluster.assignments.values() for r in placed)
        leaders = Counter(placed[0] for placed in cluster.assignments.values() if placed)
        tiebreak = {b.id: rank for rank, b in enumerate(self._random.sample(brokers, len(brokers)))}
        placements = []
        for _ in range(spec.num_partitions):
            leader = min(
                (b for b in brokers if not b.fenced),
                key=lambda b: (leaders[b.id], replicas[b.id], tiebreak[b.id]),
            )
            chosen = [leader]
            racks = {leader.rack}
            while len(chosen) < rf:
                follower = min(
                    (b for b in brokers if b not in chosen),
                    key=lambda b: (b.rack in racks, b.fenced, replicas[b.id], tiebreak[b.id]),
                )
                chosen.append(follower)
                racks.add(follower.rack)
            leaders[leader.id] += 1
            replicas.update(b.id for b in chosen)
            placements.append([b.id for b in chosen])
        log.debug("placed %d partition(s) on %d broker(s)", spec.num_partitions, len(brokers))
        return placements
