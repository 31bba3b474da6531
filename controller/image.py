"""The metadata image: what brokers know of the cluster, as Metadata and DescribeCluster show it.

An immutable snapshot, rebuilt per topic only for the topics that changed (their ``version``), so that a
Metadata request during a big failover costs a copy of the topic map, not of every partition. A broker
isolated from the controller keeps answering from the image it had when it was cut off.

Kafka's rules (``KRaftMetadataCache``): the broker list holds the registered, unfenced brokers; a
partition without a leader answers LEADER_NOT_AVAILABLE with its leader epoch still shown; offline
replicas are those on fenced or unregistered brokers; Metadata v0 alone filters those out of the
replica and ISR lists and then answers REPLICA_NOT_AVAILABLE.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from controller.cluster import NO_LEADER, Cluster, Topic
from controller.placement.api import UsableBroker

__all__ = ["ImageBuilder", "MetadataImage", "PartitionImage", "TopicImage"]


@dataclass(frozen=True, slots=True)
class PartitionImage:
    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionImage, ...]
    #: The topic's version this image was made from (with the alive brokers it was made against).
    version: int
    #: What readers derive from this image and keep while it lives (a Metadata entry per version, ...).
    derived: dict[object, object] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class MetadataImage:
    generation: int
    #: Registered brokers, fenced ones included (with their flag).
    brokers: tuple[UsableBroker, ...]
    controller_id: int
    topics: Mapping[str, TopicImage]
    topics_by_id: Mapping[uuid.UUID, TopicImage]

    @property
    def alive(self) -> frozenset[int]:
        return frozenset(b.id for b in self.brokers if not b.fenced)


class ImageBuilder:
    """Makes the current image of a cluster, reusing the images of topics that did not change."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._image: MetadataImage | None = None
        self._topics: dict[str, TopicImage] = {}
        self._alive: frozenset[int] = frozenset()

    def image(self) -> MetadataImage:
        cluster = self.cluster
        if self._image is not None and self._image.generation == cluster.generation:
            return self._image
        brokers = cluster.brokers
        alive = frozenset(b.id for b in brokers if not b.fenced)
        if alive != self._alive:
            self._topics.clear()  # offline replicas depend on who is alive
            self._alive = alive
        topics: dict[str, TopicImage] = {}
        for name, topic in cluster.topics.items():
            cached = self._topics.get(name)
            if cached is None or cached.version != topic.version or cached.topic_id != topic.topic_id:
                cached = _topic_image(topic, alive)
            topics[name] = cached
        self._topics = topics
        self._image = MetadataImage(
            cluster.generation,
            brokers,
            cluster.controller_id,
            topics,
            {t.topic_id: t for t in topics.values()},
        )
        return self._image


def _topic_image(topic: Topic, alive: frozenset[int]) -> TopicImage:
    partitions = tuple(
        PartitionImage(
            p.index,
            p.leader if p.leader != NO_LEADER else NO_LEADER,
            p.leader_epoch,
            tuple(p.replicas),
            tuple(p.isr),
            tuple(r for r in p.replicas if r not in alive),
        )
        for p in topic.partitions
    )
    return TopicImage(topic.name, topic.topic_id, partitions, topic.version)
