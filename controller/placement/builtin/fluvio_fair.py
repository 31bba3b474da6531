"""Fluvio's current load-weighted scheduler (the SC's partition scheduler since late 2023).

The leader of each partition goes to the online SPU that leads the fewest partitions; each follower
goes to the online SPU that follows the fewest partitions, among those not already chosen for the
partition. Ties go to the lowest id. Counts start from every existing assignment in the cluster view
(all topics; replica 0 is the leader) and are updated as this placement goes.

The placer keeps no state between calls: the cluster view is the record of what was placed, as the
SC's store is for Fluvio. Partitions of ``spec.topic`` in the range being placed are left out of the
counts, because this placement replaces them.
"""

from __future__ import annotations

import heapq
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from controller.placement.api import ClusterView, PlacementSpec, ReplicaPlacer
from controller.placement.builtin.fluvio import PARTITIONS_NOT_POSITIVE, check_fluvio_request

log = logging.getLogger(__name__)


class _LoadHeap:
    """SPUs ordered by (count, id): the least loaded, lowest id first, in O(log n) per pick."""

    def __init__(self, spus: Iterable[int], counts: Mapping[int, int]) -> None:
        self._heap = [(counts.get(spu, 0), spu) for spu in spus]
        heapq.heapify(self._heap)

    def take(self, exclude: Sequence[int] = ()) -> int:
        """Picks the least loaded SPU not in ``exclude`` and counts one more replica on it."""
        skipped = []
        while True:
            count, spu = heapq.heappop(self._heap)  # callers ensure a candidate remains
            if spu not in exclude:
                break
            skipped.append((count, spu))
        heapq.heappush(self._heap, (count + 1, spu))
        for item in skipped:
            heapq.heappush(self._heap, item)
        return spu


def existing_load(
    assignments: Mapping[tuple[str, int], Sequence[int]],
    skip: set[tuple[str, int]] | None = None,
) -> tuple[Counter[int], Counter[int]]:
    """Leaders and followers per broker in ``assignments`` (replica 0 leads), minus the ``skip`` keys."""
    leaders: Counter[int] = Counter()
    followers: Counter[int] = Counter()
    for key, replicas in assignments.items():
        if not replicas or (skip and key in skip):
            continue
        leaders[replicas[0]] += 1
        followers.update(replicas[1:])
    return leaders, followers


class FluvioFairReplicaPlacer(ReplicaPlacer):
    """Fewest leaders for the leader, fewest followers for each follower; lowest id breaks ties."""

    rack_aware = False

    def unmet_precondition(self, spec: PlacementSpec, cluster: ClusterView) -> str | None:
        """Why this call is refused with ReplicaPlacementError, or None (see the conformance kit)."""
        return PARTITIONS_NOT_POSITIVE if spec.num_partitions <= 0 else None

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        rf = spec.num_replicas
        online = sorted({b.id for b in cluster.usable(spec) if not b.fenced})
        check_fluvio_request(spec, len(online))
        skip: set[tuple[str, int]] | None = None
        if spec.topic is not None:
            skip = {
                (spec.topic, p)
                for p in range(spec.start_partition, spec.start_partition + spec.num_partitions)
            }
        leaders, followers = existing_load(cluster.assignments, skip)
        leader_heap = _LoadHeap(online, leaders)
        follower_heap = _LoadHeap(online, followers)
        result: list[list[int]] = []
        for _ in range(spec.num_partitions):
            replicas = [leader_heap.take()]
            for _ in range(rf - 1):
                replicas.append(follower_heap.take(replicas))
            result.append(replicas)
        log.debug("fluvio-fair placed %d partitions x %d on %d SPUs", spec.num_partitions, rf, len(online))
        return result
