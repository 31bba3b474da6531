"""Kafka's KRaft default placer, ``StripedReplicaPlacer``, reproduced exactly.

Racks are visited round-robin from a random starting rack that advances by one per partition
(the "stripes"); within a rack, brokers are visited round-robin from a random offset, unfenced
brokers before fenced ones; the leader is always unfenced. After as many partitions as there are
unfenced brokers, the rack order and every rack's broker order are reshuffled.

Everything random goes through a ``java.util.Random``-compatible generator in the order Kafka
draws it (racks initialised in Java ``HashMap`` order), so with the same generator this placer
returns what Kafka's returns: ``StripedReplicaPlacer(random=MockRandom())`` reproduces Kafka's unit
tests. Like Kafka's, it ignores the spec's start partition and the existing assignments.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from controller.placement.api import (
    ClusterView,
    InvalidReplicationFactorError,
    PlacementSpec,
    ReplicaPlacementError,
    ReplicaPlacer,
    UsableBroker,
)
from controller.placement.java_collections import (
    hashmap_iteration_order,
    optional_string_hash,
    optional_string_sort_key,
)
from controller.placement.java_random import JavaRandom, JavaRandomLike, random_from_configs, shuffle

__all__ = ["BrokerList", "RackList", "StripedReplicaPlacer"]

log = logging.getLogger(__name__)


def _check_positive(replication_factor: int) -> None:
    if replication_factor <= 0:
        raise InvalidReplicationFactorError(
            f"Invalid replication factor {replication_factor}: the replication factor must be positive."
        )


def _check_some_unfenced(num_unfenced: int) -> None:
    if num_unfenced == 0:
        raise InvalidReplicationFactorError("All brokers are currently fenced.")


def _check_enough_brokers(replication_factor: int, num_total: int) -> None:
    if replication_factor > num_total:
        raise InvalidReplicationFactorError(
            f"The target replication factor of {replication_factor} cannot be reached because only "
            f"{num_total} broker(s) are registered."
        )


class BrokerList:
    """Brokers of one kind (fenced or unfenced) in one rack, handed out round-robin per epoch.

    ``next(epoch)`` returns each broker at most once per epoch; a new epoch restarts the walk one
    place further along. ``doubled`` holds the brokers twice so ``doubled[index + offset]`` needs no
    modulo.
    """

    __slots__ = ("brokers", "doubled", "size", "index", "offset", "epoch")

    def __init__(self, brokers: Iterable[int] = ()) -> None:
        self.brokers: list[int] = list(brokers)
        self.doubled: list[int] = self.brokers * 2
        self.size = len(self.brokers)
        self.index = 0
        self.offset = 0
        self.epoch = 0

    def add(self, broker: int) -> BrokerList:
        self.brokers.append(broker)
        self.doubled = self.brokers * 2
        self.size = len(self.brokers)
        return self

    def initialize(self, random: JavaRandomLike) -> None:
        """Sorts the brokers and draws a random start offset (draws nothing when empty)."""
        if self.brokers:
            self.brokers.sort()
            self.doubled = self.brokers * 2
            self.offset = random.next_int(self.size)

    def shuffle(self, random: JavaRandomLike) -> None:
        shuffle(self.brokers, random)
        self.doubled = self.brokers * 2

    def next(self, epoch: int) -> int:
        """The next broker of this epoch, or -1 when the list is empty or used up in this epoch."""
        size = self.size
        if size == 0:
            return -1
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % size
        index = self.index
        if index >= size:
            return -1
        self.index = index + 1
        return self.doubled[index + self.offset]


class _Rack:
    __slots__ = ("fenced", "unfenced")

    def __init__(self) -> None:
        self.fenced = BrokerList()
        self.unfenced = BrokerList()


class RackList:
    """Kafka's ``StripedReplicaPlacer.RackList``: the racks of one placement call and their cursors.

    Construction draws from ``random`` exactly as Kafka does: each rack's fenced then unfenced
    broker list in ``HashMap`` iteration order of the rack names, then the starting rack.
    """

    def __init__(self, random: JavaRandomLike, brokers: Iterable[UsableBroker]) -> None:
        self._random = random
        racks: dict[str | None, _Rack] = {}
        num_total = num_unfenced = 0
        for broker in brokers:
            rack = racks.get(broker.rack)
            if rack is None:
                rack = racks[broker.rack] = _Rack()
            if broker.fenced:
                rack.fenced.add(broker.id)
            else:
                num_unfenced += 1
                rack.unfenced.add(broker.id)
            num_total += 1
        self._racks = racks
        #: Rack names in Java HashMap iteration order: the order Kafka initialises and shuffles racks.
        self._hash_order = [
            racks[name] for name in hashmap_iteration_order(list(racks), optional_string_hash)
        ]
        for rack in self._hash_order:
            rack.fenced.initialize(random)
            rack.unfenced.initialize(random)
        self.rack_names: list[str | None] = sorted(racks, key=optional_string_sort_key)
        self.num_total_brokers = num_total
        self.num_unfenced_brokers = num_unfenced
        self._epoch = 0
        self._offset = random.next_int(len(self.rack_names)) if self.rack_names else 0

    def _shuffle(self) -> None:
        shuffle(self.rack_names, self._random)
        for rack in self._hash_order:
            rack.fenced.shuffle(self._random)
            rack.unfenced.shuffle(self._random)

    def place(self, replication_factor: int) -> list[int]:
        """Kafka's ``RackList.place``: the replicas of one more partition, leader first."""
        return self.place_partitions(replication_factor, 1)[0]

    def place_partitions(self, replication_factor: int, count: int) -> list[list[int]]:
        """``count`` successive ``place(replication_factor)`` calls, with the loop kept tight.

        The body inlines ``BrokerList.next`` (see there); it must stay equivalent to it.
        """
        _check_positive(replication_factor)
        _check_enough_brokers(replication_factor, self.num_total_brokers)
        _check_some_unfenced(self.num_unfenced_brokers)
        racks = self._racks
        num_racks = len(self.rack_names)
        num_unfenced = self.num_unfenced_brokers
        unfenced = [racks[name].unfenced for name in self.rack_names]
        fenced = [racks[name].fenced for name in self.rack_names]
        followers = range(replication_factor - 1)
        epoch = self._epoch
        offset = self._offset
        placements: list[list[int]] = []
        append = placements.append
        for _ in range(count):
            if epoch == num_unfenced and num_unfenced > 1:
                self._shuffle()
                unfenced = [racks[name].unfenced for name in self.rack_names]
                fenced = [racks[name].fenced for name in self.rack_names]
                epoch = 0
            if offset == num_racks:
                offset = 0
            # The leader: the first rack from `offset` on with an unfenced broker left in this epoch.
            first_rack = offset
            misses = 0
            while True:
                bl = unfenced[first_rack]
                size = bl.size
                if size:
                    if bl.epoch != epoch:
                        bl.epoch = epoch
                        bl.index = 1
                        o = bl.offset + 1
                        if o == size:
                            o = 0
                        bl.offset = o
                        leader = bl.doubled[o]
                        break
                    index = bl.index
                    if index < size:
                        bl.index = index + 1
                        leader = bl.doubled[index + bl.offset]
                        break
                misses += 1
                if misses > num_racks:
                    raise ReplicaPlacementError(
                        "no unfenced broker is left in any rack in this round (Kafka's "
                        "StripedReplicaPlacer would loop forever here)"
                    )
                first_rack += 1
                if first_rack == num_racks:
                    first_rack = 0
            replicas = [leader]
            # Followers: racks round-robin from `offset`, skipping the leader's rack once.
            rack_index = offset
            for _f in followers:
                misses = 0
                while True:
                    if rack_index == first_rack:
                        first_rack = -1
                        result = -1
                    else:
                        result = -1
                        bl = unfenced[rack_index]
                        size = bl.size
                        if size:
                            if bl.epoch != epoch:
                                bl.epoch = epoch
                                bl.index = 1
                                o = bl.offset + 1
                                if o == size:
                                    o = 0
                                bl.offset = o
                                result = bl.doubled[o]
                            else:
                                index = bl.index
                                if index < size:
                                    bl.index = index + 1
                                    result = bl.doubled[index + bl.offset]
                        if result < 0:
                            bl = fenced[rack_index]
                            size = bl.size
                            if size:
                                if bl.epoch != epoch:
                                    bl.epoch = epoch
                                    bl.index = 1
                                    o = bl.offset + 1
                                    if o == size:
                                        o = 0
                                    bl.offset = o
                                    result = bl.doubled[o]
                                else:
                                    index = bl.index
                                    if index < size:
                                        bl.index = index + 1
                                        result = bl.doubled[index + bl.offset]
                    rack_index += 1
                    if rack_index == num_racks:
                        rack_index = 0
                    if result >= 0:
                        break
                    misses += 1
                    if misses > num_racks + 1:
                        raise ReplicaPlacementError(
                            "no broker is left in any rack for this partition (Kafka's "
                            "StripedReplicaPlacer would loop forever here)"
                        )
                replicas.append(result)
            append(replicas)
            epoch += 1
            offset += 1
        self._epoch = epoch
        self._offset = offset
        return placements


class StripedReplicaPlacer(ReplicaPlacer):
    """Kafka's KRaft default replica placer (short name ``striped``).

    ``random`` is any generator with Java's ``next_int(bound)``; without one the placer uses
    ``JavaRandom(simulator.seed)`` from ``configure()``, or an unseeded ``JavaRandom``.
    """

    rack_aware = True

    def __init__(self, random: JavaRandomLike | None = None) -> None:
        self._random_given = random is not None
        self._random: JavaRandomLike = random if random is not None else JavaRandom()

    def configure(self, configs: Mapping[str, str]) -> None:
        if not self._random_given:
            self._random = random_from_configs(configs)

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        rack_list = RackList(self._random, cluster.usable(spec))
        _check_positive(spec.num_replicas)
        _check_some_unfenced(rack_list.num_unfenced_brokers)
        _check_enough_brokers(spec.num_replicas, rack_list.num_total_brokers)
        if spec.num_partitions <= 0:
            return []
        placements = rack_list.place_partitions(spec.num_replicas, spec.num_partitions)
        log.debug(
            "placed %d partition(s) x %d replica(s) on %d broker(s) in %d rack(s)",
            spec.num_partitions,
            spec.num_replicas,
            rack_list.num_total_brokers,
            len(rack_list.rack_names),
        )
        return placements
