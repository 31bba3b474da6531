"""The simulated cluster's state: brokers with racks and fencing, topics and their partitions."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from controller.placement.api import ClusterView, UsableBroker
from controller.topic_names import collision_key

__all__ = ["Cluster", "PartitionState", "Topic"]


@dataclass
class PartitionState:
    """One partition: replicas in placement order; the leader is the first replica on an unfenced broker."""

    index: int
    replicas: list[int]
    leader: int
    leader_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    offline: list[int] = field(default_factory=list)


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionState]

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0


class Cluster:
    """Brokers and topics. All mutation goes through its methods, so the placer's view stays current."""

    def __init__(self, brokers: Iterable[UsableBroker], seed: int | None = None) -> None:
        self._brokers: dict[int, UsableBroker] = {b.id: b for b in brokers}
        self.topics: dict[str, Topic] = {}
        self._topics_by_id: dict[uuid.UUID, Topic] = {}
        # Topic names with '.' and '_' unified -> the topic holding that key (Kafka's collision rule).
        self._collision_keys: dict[str, str] = {}
        #: Bumped on every change of topics or partitions, so that readers can cache what they derive.
        self.generation = 0
        self._assignments: dict[tuple[str, int], tuple[int, ...]] = {}
        self._view: ClusterView | None = None
        # Topic ids are deterministic when seeded (same requests give the same bytes).
        self._uuid_source = _UuidSource(seed)

    @property
    def brokers(self) -> tuple[UsableBroker, ...]:
        return tuple(self._brokers.values())

    def broker(self, broker_id: int) -> UsableBroker | None:
        return self._brokers.get(broker_id)

    @property
    def controller_id(self) -> int:
        """The broker that clients send administrative requests to: the lowest unfenced id (-1: none)."""
        live = [b.id for b in self._brokers.values() if not b.fenced]
        return min(live) if live else -1

    def topic_by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._topics_by_id.get(topic_id)

    def colliding_topic(self, name: str) -> str | None:
        """The existing topic whose name equals ``name`` up to '.' versus '_', if any (not ``name`` itself)."""
        other = self._collision_keys.get(collision_key(name))
        return other if other is not None and other != name else None

    def view(self) -> ClusterView:
        """What a placer sees: the brokers and every current assignment (read-only, cached)."""
        if self._view is None:
            self._view = ClusterView(self.brokers, MappingProxyType(dict(self._assignments)))
        return self._view

    def _partition_state(self, index: int, replicas: Sequence[int]) -> PartitionState:
        live = [r for r in replicas if (b := self._brokers.get(r)) is not None and not b.fenced]
        offline = [r for r in replicas if r not in live]
        return PartitionState(index, list(replicas), live[0] if live else -1, 0, live, offline)

    def add_topic(self, name: str, replicas: Sequence[Sequence[int]]) -> Topic:
        if name in self.topics:
            raise ValueError(f"topic {name!r} already exists")
        topic = Topic(name, self._uuid_source.next(), [])
        self.topics[name] = topic
        self._topics_by_id[topic.topic_id] = topic
        self._collision_keys.setdefault(collision_key(name), name)
        self.add_partitions(name, replicas)
        return topic

    def add_partitions(self, name: str, replicas: Sequence[Sequence[int]]) -> None:
        topic = self.topics[name]
        start = len(topic.partitions)
        for offset, rs in enumerate(replicas):
            index = start + offset
            topic.partitions.append(self._partition_state(index, rs))
            self._assignments[(name, index)] = tuple(rs)
        self._view = None
        self.generation += 1

    def delete_topic(self, name: str) -> Topic:
        topic = self.topics.pop(name)
        self._topics_by_id.pop(topic.topic_id, None)
        if self._collision_keys.get(collision_key(name)) == name:
            del self._collision_keys[collision_key(name)]
        for p in topic.partitions:
            self._assignments.pop((name, p.index), None)
        self._view = None
        self.generation += 1
        return topic


class _UuidSource:
    def __init__(self, seed: int | None) -> None:
        import random

        self._random = random.Random(seed) if seed is not None else None

    def next(self) -> uuid.UUID:
        if self._random is None:
            return uuid.uuid4()
        return uuid.UUID(int=self._random.getrandbits(128), version=4)
