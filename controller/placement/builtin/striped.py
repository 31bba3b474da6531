"""Kafka's KRaft default placer, ``StripedReplicaPlacer``, reproduced exactly.

Racks are visited round-robin from a random starting rack that advances by one per partition
(the "stripes"); within a rack, brokers are visited round-robin from a random offset, unfenced
brokers before fenced ones; the leader is always unfenced. After as many partitions as there are
unfenced brokers, the rack order and every rack's broker order are reshuffled.

Everything random goes through a ``java.util.Random``-compatible generator in the order Kafka
draws it (racks initialised in Java ``HashMap`` order), so with the same generator this placer
returns what Kafka's returns: ``StripedReplicaPlacer(random=MockRandom())`` reproduces Kafka's unit
tests. Like Kafka's (3.0 to 4.x and trunk), it ignores the spec's start partition and the existing
assignments.

``continue_offsets=True`` (``simulator.placer.striped.continue.offsets=true``) switches on what
KAFKA-14437 proposed (apache/kafka#12943, closed without being merged): when the topic already has
partitions, the rack offset continues after the rack of the last partition's leader and each rack's
unfenced offset continues after the broker of that rack the most recent partition used, instead of
being drawn at random; the pull request's tests are reproduced exactly.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from controller.placement.api import (
    ClusterView,
    PlacementSpec,
    ReplicaPlacementError,
    ReplicaPlacer,
    UsableBroker,
)
from controller.placement.builtin.java_collections import (
    hashmap_iteration_order,
    optional_string_hash,
    optional_string_sort_key,
)
from controller.placement.builtin.java_random import JavaRandom, JavaRandomLike, random_from_configs, shuffle
from controller.placement.rules import require_enough_brokers, require_positive, require_some_unfenced
from controller.plugins.properties import Property, boolean

__all__ = [
    "CONTINUE_OFFSETS",
    "CONTINUE_OFFSETS_KEY",
    "BrokerList",
    "RackLayout",
    "RackList",
    "StripedReplicaPlacer",
    "continue_offsets_from_configs",
    "last_used_brokers",
    "previous_broker_offset",
    "previous_rack_offset",
    "topic_partitions",
]

log = logging.getLogger(__name__)

#: Continue the offsets of a topic's existing partitions (KAFKA-14437); default false.
CONTINUE_OFFSETS = Property(
    "simulator.placer.striped.continue.offsets",
    "false",
    boolean,
    "`striped` placer: partitions added to a topic continue its rack and broker offsets, as proposed "
    "in KAFKA-14437 (never merged into Kafka); false: fresh random offsets, as Kafka does",
)
CONTINUE_OFFSETS_KEY = CONTINUE_OFFSETS.key

Rack = str | None


def topic_partitions(
    assignments: Mapping[tuple[str, int], Sequence[int]], topic: str | None
) -> list[Sequence[int]]:
    """The replica lists of ``topic``'s partitions in ``assignments``, lowest partition id first.

    What KAFKA-14437's ``replicasForTopicName`` hands the placer: every partition the topic has, so
    the last one is the highest partition id. Empty replica lists are left out.
    """
    if topic is None or not assignments:
        return []
    found = [(p, replicas) for (t, p), replicas in assignments.items() if t == topic and replicas]
    found.sort(key=lambda item: item[0])
    return [replicas for _, replicas in found]


def last_used_brokers(broker_racks: Mapping[int, Rack], existing: Sequence[Sequence[int]]) -> dict[Rack, int]:
    """For each rack, the broker of that rack that the most recent partition used first.

    Partitions are searched from the last one back, each one's replicas leader first; brokers that are
    not in ``broker_racks`` (not usable in this call) are passed over.
    """
    wanted = len(set(broker_racks.values()))
    found: dict[Rack, int] = {}
    for replicas in reversed(existing):
        for broker in replicas:
            if broker in broker_racks and broker_racks[broker] not in found:
                found[broker_racks[broker]] = broker
        if len(found) == wanted:
            break
    return found


def previous_broker_offset(
    broker_racks: Mapping[int, Rack], existing: Sequence[Sequence[int]], rack: Rack, unfenced: Sequence[int]
) -> int | None:
    """KAFKA-14437's ``tryGetPreviousBrokerOffset``: where ``rack``'s last used broker sits in ``unfenced``.

    None when no existing partition used the rack, or when the broker it used last is not among
    ``unfenced`` (it is fenced now): then the rack's offset is drawn at random.
    """
    broker = last_used_brokers(broker_racks, existing).get(rack)
    if broker is None:
        return None
    try:
        return list(unfenced).index(broker)
    except ValueError:
        return None


def previous_rack_offset(
    broker_racks: Mapping[int, Rack], existing: Sequence[Sequence[int]], racks: Sequence[Rack]
) -> int | None:
    """KAFKA-14437's ``tryGetPreviousRackOffset``: the index in ``racks`` of the last partition's leader's rack.

    None without existing partitions, when that leader is not a usable broker, or when its rack is not
    in ``racks``: then the starting rack is drawn at random.
    """
    if not existing or existing[-1][0] not in broker_racks:
        return None
    try:
        return list(racks).index(broker_racks[existing[-1][0]])
    except ValueError:
        return None


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

    def continue_after(self, previous_offset: int) -> None:
        """Sorts the brokers and starts one place after ``previous_offset`` (KAFKA-14437); draws nothing."""
        if self.brokers:
            self.brokers.sort()
            self.doubled = self.brokers * 2
            self.offset = (previous_offset + 1) % self.size

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

    def __init__(self, fenced: list[int] | None = None, unfenced: list[int] | None = None) -> None:
        self.fenced = BrokerList(fenced or ())
        self.unfenced = BrokerList(unfenced or ())


class RackLayout:
    """What a placement call derives from its brokers alone, before drawing anything at random.

    Rack names in insertion order (first broker first), in Java ``HashMap`` iteration order and
    sorted; each rack's fenced and unfenced broker ids, sorted (Kafka sorts them before drawing a
    broker list's offset, so the sorted order is all that matters to its draws; the continuation
    KAFKA-14437 proposed also needs the order they came in, see :meth:`positions`). The same brokers
    give the same layout, so the placer keeps the last one.
    """

    __slots__ = (
        "names",
        "hash_order",
        "sorted_names",
        "fenced",
        "unfenced",
        "num_total",
        "num_unfenced",
        "_brokers",
        "_positions",
    )

    def __init__(self, brokers: Iterable[UsableBroker]) -> None:
        brokers = tuple(brokers)
        self._brokers = brokers
        self._positions: tuple[dict[int, Rack], dict[int, int]] | None = None
        fenced: dict[str | None, list[int]] = {}
        unfenced: dict[str | None, list[int]] = {}
        num_total = num_unfenced = 0
        for broker in brokers:
            if broker.rack not in fenced:
                fenced[broker.rack] = []
                unfenced[broker.rack] = []
            if broker.fenced:
                fenced[broker.rack].append(broker.id)
            else:
                num_unfenced += 1
                unfenced[broker.rack].append(broker.id)
            num_total += 1
        for ids in (*fenced.values(), *unfenced.values()):
            ids.sort()
        self.names: list[str | None] = list(fenced)
        self.hash_order = hashmap_iteration_order(self.names, optional_string_hash)
        self.sorted_names = sorted(self.names, key=optional_string_sort_key)
        self.fenced = fenced
        self.unfenced = unfenced
        self.num_total = num_total
        self.num_unfenced = num_unfenced

    def positions(self) -> tuple[dict[int, Rack], dict[int, int]]:
        """Each broker's rack, and each unfenced broker's place among its rack's unfenced brokers.

        The place is counted in the order the brokers came (KAFKA-14437 looks a broker up before the
        list is sorted, and then applies that index to the sorted list). Built on first use.
        """
        if self._positions is None:
            rack_of: dict[int, Rack] = {}
            place: dict[int, int] = {}
            seen: dict[Rack, int] = {}
            for broker in self._brokers:
                rack_of[broker.id] = broker.rack
                if not broker.fenced:
                    place[broker.id] = seen.get(broker.rack, 0)
                    seen[broker.rack] = place[broker.id] + 1
            self._positions = (rack_of, place)
        return self._positions


class RackList:
    """Kafka's ``StripedReplicaPlacer.RackList``: the racks of one placement call and their cursors.

    Construction draws from ``random`` exactly as Kafka does: each rack's fenced then unfenced
    broker list in ``HashMap`` iteration order of the rack names, then the starting rack.
    ``layout`` may be given when it was derived from the same brokers before.

    ``existing`` (the topic's partitions so far, lowest partition id first) continues their offsets
    as KAFKA-14437 proposed: a rack's unfenced list starts one broker after the one of that rack the
    most recent partition used, and the starting rack is the one after the last partition's leader's;
    those offsets are not drawn. Empty (the default), the draws are Kafka's.
    """

    def __init__(
        self,
        random: JavaRandomLike,
        brokers: Iterable[UsableBroker],
        layout: RackLayout | None = None,
        existing: Sequence[Sequence[int]] = (),
    ) -> None:
        self._random = random
        if layout is None:
            layout = RackLayout(brokers)
        racks = {name: _Rack(layout.fenced[name], layout.unfenced[name]) for name in layout.names}
        self._racks = racks
        #: Racks in Java HashMap iteration order of their names: the order Kafka initialises and shuffles them.
        self._hash_order = [racks[name] for name in layout.hash_order]
        self.rack_names: list[str | None] = list(layout.sorted_names)
        self.num_total_brokers = layout.num_total
        self.num_unfenced_brokers = layout.num_unfenced
        self._epoch = 0
        if not existing:
            for rack in self._hash_order:
                rack.fenced.initialize(random)
                rack.unfenced.initialize(random)
            self._offset = random.next_int(len(self.rack_names)) if self.rack_names else 0
            return
        rack_of, place = layout.positions()
        last_used = last_used_brokers(rack_of, existing)
        for name in layout.hash_order:
            rack = racks[name]
            rack.fenced.initialize(random)
            broker = last_used.get(name)
            previous = place.get(broker) if broker is not None else None
            if previous is None:
                rack.unfenced.initialize(random)
            else:
                rack.unfenced.continue_after(previous)
        previous_rack = previous_rack_offset(rack_of, existing, self.rack_names)
        if previous_rack is not None:
            self._offset = (previous_rack + 1) % len(self.rack_names)
        else:
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
        require_positive(replication_factor)
        require_enough_brokers(replication_factor, self.num_total_brokers)
        require_some_unfenced(self.num_unfenced_brokers)
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


def continue_offsets_from_configs(configs: Mapping[str, str], default: bool = False) -> bool:
    """``simulator.placer.striped.continue.offsets``: ``true`` or ``false``; ``default`` when absent or blank.

    Raises ConfigError (a ValueError) naming the key for any other value.
    """
    raw = configs.get(CONTINUE_OFFSETS_KEY)
    if raw is None or not str(raw).strip():
        return default
    return bool(CONTINUE_OFFSETS.parse(CONTINUE_OFFSETS_KEY, str(raw)))


class StripedReplicaPlacer(ReplicaPlacer):
    """Kafka's KRaft default replica placer (short name ``striped``).

    ``random`` is any generator with Java's ``next_int(bound)``; without one the placer uses
    ``JavaRandom(simulator.seed)`` from ``configure()``, or an unseeded ``JavaRandom``.

    ``continue_offsets`` (``simulator.placer.striped.continue.offsets``, default false) continues
    the offsets of the spec's topic's existing partitions as KAFKA-14437 proposed (see the module);
    false is Kafka's behaviour: fresh random offsets on every call.
    """

    rack_aware = True
    properties = (CONTINUE_OFFSETS,)

    def __init__(self, random: JavaRandomLike | None = None, continue_offsets: bool = False) -> None:
        self._random_given = random is not None
        self._random: JavaRandomLike = random if random is not None else JavaRandom()
        self.continue_offsets = continue_offsets
        # The layout of the brokers of the last call (the same brokers, call after call, as a rule).
        self._layout_brokers: tuple[UsableBroker, ...] | None = None
        self._layout: RackLayout | None = None

    def configure(self, configs: Mapping[str, str]) -> None:
        if not self._random_given:
            self._random = random_from_configs(configs)
        self.continue_offsets = continue_offsets_from_configs(configs, self.continue_offsets)

    def place(self, spec: PlacementSpec, cluster: ClusterView) -> list[list[int]]:
        brokers = cluster.usable(spec)
        if brokers != self._layout_brokers:
            self._layout = RackLayout(brokers)
            self._layout_brokers = brokers
        existing = topic_partitions(cluster.assignments, spec.topic) if self.continue_offsets else ()
        rack_list = RackList(self._random, brokers, self._layout, existing)
        require_positive(spec.num_replicas)
        require_some_unfenced(rack_list.num_unfenced_brokers)
        require_enough_brokers(spec.num_replicas, rack_list.num_total_brokers)
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
