"""Kafka's classic replica assignment (``AdminUtils.assignReplicasToBrokers``), short name ``legacy``.

Rack-unaware: the leader of partition ``p`` is broker ``(p + startIndex) % n`` of the id-sorted
broker list and follower ``j`` sits ``1 + (shift + j) % (n - 1)`` places after it; ``shift`` grows
by one every ``n`` partitions. ``startIndex`` and ``shift`` are random (two draws) unless a fixed
start index is configured, which then serves as both.

Rack-aware (when any broker has a rack): the same walk over the rack-alternated broker list
(one broker from each rack in turn), with followers skipped while they would repeat a rack or a
broker that the partition already uses and an unused one remains.

Only unfenced brokers are used, as Kafka used only live brokers. ``ForceSimplePlacement``
(``spec.force_simple``) selects the rack-unaware mode; :func:`place_rack_unaware` offers that mode to
the server whatever placer is configured.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    PlacerNotApplicableError,
    ReplicaPlacementError,
    ReplicaPlacer,
    UsableBroker,
)
from controller.placement.builtin.java_collections import java_string_sort_key
from controller.placement.builtin.java_random import JavaRandom, JavaRandomLike, random_from_configs
from controller.plugins.properties import Property

__all__ = [
    "FIXED_START_INDEX",
    "FIXED_START_INDEX_KEY",
    "LegacyReplicaPlacer",
    "assign_rack_aware",
    "assign_rack_unaware",
    "fixed_start_index_from_configs",
    "place_rack_unaware",
    "rack_alternated_broker_list",
    "replica_index",
]

log = logging.getLogger(__name__)


def _start_index(key: str, raw: str) -> int:
    """A fixed start index as an int; -1 (random) when blank."""
    if not raw.strip():
        return -1
    try:
        return int(raw.strip())
    except ValueError:
        raise ValueError(f"{key} must be an integer, got {raw!r}") from None


#: A fixed start index (>= 0) instead of random ones; -1 (the default) = random.
FIXED_START_INDEX = Property(
    "simulator.placer.legacy.fixed.start.index",
    "-1",
    _start_index,
    "`legacy` placer: a fixed start index instead of random ones (-1: random)",
)
FIXED_START_INDEX_KEY = FIXED_START_INDEX.key

NOT_ALL_BROKERS_HAVE_RACKS = "Not all brokers have rack information for replica rack aware assignment."


def replica_index(first_replica_index: int, second_replica_shift: int, replica: int, num_brokers: int) -> int:
    """Kafka's ``AdminUtils.replicaIndex``: where follower ``replica`` sits relative to the leader."""
    shift = 1 + (second_replica_shift + replica) % (num_brokers - 1)
    return (first_replica_index + shift) % num_brokers


def _start(num_brokers: int, fixed_start_index: int, random: JavaRandomLike) -> int:
    return fixed_start_index if fixed_start_index >= 0 else random.next_int(num_brokers)


def _check(num_partitions: int, replication_factor: int, num_brokers: int) -> None:
    if num_partitions <= 0:
        raise ReplicaPlacementError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > num_brokers:
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: {num_brokers}."
        )


def assign_rack_unaware(
    num_partitions: int,
    replication_factor: int,
    broker_ids: Sequence[int],
    random: JavaRandomLike,
    fixed_start_index: int = -1,
    start_partition: int = -1,
) -> list[list[int]]:
    """Kafka's ``assignReplicasToBrokersRackUnaware`` over ``broker_ids`` in the given order.

    Returns the replicas of partitions ``max(0, start_partition)`` onwards, in partition order.
    """
    _check(num_partitions, replication_factor, len(broker_ids))
    n = len(broker_ids)
    start_index = _start(n, fixed_start_index, random)
    shift = _start(n, fixed_start_index, random)
    partition = max(0, start_partition)
    placements: list[list[int]] = []
    for _ in range(num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start_index) % n
        replicas = [broker_ids[first]]
        for j in range(replication_factor - 1):
            replicas.append(broker_ids[replica_index(first, shift, j, n)])
        placements.append(replicas)
        partition += 1
    return placements


def rack_alternated_broker_list(broker_racks: Mapping[int, str]) -> list[int]:
    """Kafka's ``getRackAlternatedBrokerList``: racks in name order, one broker (lowest id first) from each in turn.

    ``{0: rack1, 1: rack3, 2: rack3, 3: rack2, 4: rack2, 5: rack1}`` gives ``[0, 3, 1, 5, 4, 2]``.
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker)
    columns = [sorted(by_rack[rack]) for rack in sorted(by_rack, key=java_string_sort_key)]
    result: list[int] = []
    for row in range(max((len(c) for c in columns), default=0)):
        result.extend(column[row] for column in columns if row < len(column))
    return result


def assign_rack_aware(
    num_partitions: int,
    replication_factor: int,
    broker_racks: Mapping[int, str],
    random: JavaRandomLike,
    fixed_start_index: int = -1,
    start_partition: int = -1,
) -> list[list[int]]:
    """Kafka's ``assignReplicasToBrokersRackAware`` for brokers that all have a rack."""
    _check(num_partitions, replication_factor, len(broker_racks))
    num_racks = len(set(broker_racks.values()))
    arranged = rack_alternated_broker_list(broker_racks)
    n = len(arranged)
    start_index = _start(n, fixed_start_index, random)
    shift = _start(n, fixed_start_index, random)
    partition = max(0, start_partition)
    placements: list[list[int]] = []
    for _ in range(num_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start_index) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {broker_racks[leader]}
        brokers_used = {leader}
        k = 0
        for _j in range(replication_factor - 1):
            while True:
                broker = arranged[replica_index(first, shift * num_racks, k, n)]
                rack = broker_racks[broker]
                k += 1
                if (rack not in racks_used or len(racks_used) == num_racks) and (
                    broker not in brokers_used or len(brokers_used) == n
                ):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        placements.append(replicas)
        partition += 1
    return placements


def _live_brokers(spec: PlacementSpec, cluster: ClusterView) -> list[UsableBroker]:
    return sorted((b for b in cluster.usable(spec) if not b.fenced), key=lambda b: b.id)


def _rack_mode(brokers: Iterable[UsableBroker]) -> bool:
    return any(b.rack is not None for b in brokers)


def place_rack_unaware(
    spec: PlacementSpec, cluster: ClusterView, random: JavaRandomLike, fixed_start_index: int = -1
) -> list[list[int]]:
    """Kafka's rack-unaware assignment over the spec's unfenced brokers, ids ascending.

    This is what ``ForceSimplePlacement`` asks for, whatever placer is configured; the caller keeps
    one ``random`` (e.g. ``random_from_configs(configs)``) across calls.
    """
    brokers = _live_brokers(spec, cluster)
    return assign_rack_unaware(
        spec.num_partitions,
        spec.num_replicas,
        [b.id for b in brokers],
        random,
        fixed_start_index,
        spec.start_partition,
    )


def fixed_start_index_from_configs(configs: Mapping[str, str]) -> int:
    """``simulator.placer.legacy.fixed.start.index`` as an int; -1 (random) when absent or blank."""
    raw = configs.get(FIXED_START_INDEX_KEY)
    return -1 if raw is None else int(FIXED_START_INDEX.parse(FIXED_START_INDEX_KEY, str(raw)))


class LegacyReplicaPlacer(ReplicaPlacer):
    """Kafka's classic ``AdminUtils`` assignment (short name ``legacy``).

    ``random`` is any generator with Java's ``next_int(bound)``; without one the placer uses
    ``JavaRandom(simulator.seed)`` from ``configure()``, or an unseeded ``JavaRandom``.
    ``fixed_start_index`` (or the ``simulator.placer.legacy.fixed.start.index`` property) >= 0 replaces
    both random draws, as Kafka's ``fixedStartIndex`` does.

    In rack mode (some broker has a rack) every broker must have one; otherwise it does not apply and
    raises :class:`PlacerNotApplicableError` with Kafka's message.
    """

    rack_aware = True
    properties = (FIXED_START_INDEX,)

    def __init__(self, random: JavaRandomLike | None = None, fixed_start_index: int = -1) -> None:
        self._random_given = random is not None
        self._random: JavaRandomLike = random if random is not None else JavaRandom()
        self.fixed_start_index = fixed_start_index

    def configure(self, configs: Mapping[str, str]) -> None:
        if not self._random_given:
            self._random = random_from_configs(configs)
        if FIXED_START_INDEX_KEY in configs:
            self.fixed_start_index = fixed_start_index_from_configs(configs)

    def unmet_precondition(self, spec: PlacementSpec, cluster: ClusterView) -> str | None:
        """Why this placer may refuse the spec (see ``controller.placement.testing``), or None."""
        brokers = _live_brokers(spec, cluster)
        if not spec.force_simple and _rack_mode(brokers) and any(b.rack is None for b in brokers):
            return NOT_ALL_BROKERS_HAVE_RACKS
        return None

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        brokers = _live_brokers(spec, cluster)
        if spec.force_simple or not _rack_mode(brokers):
            return place_rack_unaware(spec, cluster, self._random, self.fixed_start_index)
        _check(spec.num_partitions, spec.num_replicas, len(brokers))
        if any(b.rack is None for b in brokers):
            raise PlacerNotApplicableError(NOT_ALL_BROKERS_HAVE_RACKS)
        racks = {b.id: b.rack for b in brokers if b.rack is not None}
        return assign_rack_aware(
            spec.num_partitions,
            spec.num_replicas,
            racks,
            self._random,
            self.fixed_start_index,
            spec.start_partition,
        )
