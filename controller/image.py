"""The metadata image: what brokers know of the cluster, as Metadata and DescribeCluster show it.

An immutable snapshot, made from the last one and the topics changed since (the cluster keeps their
names), so that a Metadata request after a change costs the changed topics and a copy of the topic map,
not every partition. A broker
isolated from the controller keeps answering from the image it had when it was cut off.

Kafka's rules (``KRaftMetadataCache``): the broker list holds the registered, unfenced brokers; a
partition without a leader answers LEADER_NOT_AVAILABLE with its leader epoch still shown; offline
replicas are those on fenced or unregistered brokers; Metadata v0 alone filters those out of the
replica and ISR lists and then answers REPLICA_NOT_AVAILABLE.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from controller.cluster import NO_LEADER, Cluster, Topic
from controller.offload import Turns, gc_paused
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
    #: The eligible leader replicas and the last known ELR (KIP-966; empty with ELR off).
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionImage, ...]
    #: The topic's version this image was made from (with the alive brokers it was made against).
    version: int
    #: What readers derive from this image and keep while it lives (its encoded Metadata entry per
    #: version, ...).
    derived: dict[object, object] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class MetadataImage:
    generation: int
    #: Registered brokers, fenced ones included (with their flag).
    brokers: tuple[UsableBroker, ...]
    controller_id: int
    topics: Mapping[str, TopicImage]
    topics_by_id: Mapping[uuid.UUID, TopicImage]
    #: What readers derive from this image and keep while it lives (Metadata's broker list, ...).
    derived: dict[object, object] = field(default_factory=dict, compare=False, repr=False)

    @property
    def alive(self) -> frozenset[int]:
        return frozenset(b.id for b in self.brokers if not b.fenced)


class ImageBuilder:
    """Makes the current image of a cluster from the last one and the topics changed since (the cluster
    keeps their names): the cost of an image is what changed, not the cluster's size."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._image: MetadataImage | None = None
        #: The cluster's :attr:`~Cluster.touch_position` the current image was made at.
        self._position = 0
        self._alive: frozenset[int] = frozenset()
        #: The cluster's broker generation the current image was made at.
        self._broker_generation = -1
        #: The names of the topics changed since the current image, read up to the touch position
        #: ``_scanned`` (:meth:`unchanged_for`).
        self._touched_names: set[str] = set()
        self._scanned = 0

    def current(self) -> MetadataImage | None:
        """The image if it is up to date (None: the next :meth:`image` makes it)."""
        image = self._image
        return image if image is not None and image.generation == self.cluster.generation else None

    def stale(self) -> int:
        """About how many partitions the next image must rebuild (all of them when the live brokers
        changed): the work of a rebuild is per partition, and a hundred topics of a thousand partitions
        each took 0.4 s to rebuild in one step. Costs the changes since the last image."""
        cluster = self.cluster
        if self._image is not None and self._image.generation == cluster.generation:
            return 0
        if self._image is None or frozenset(b.id for b in cluster.brokers if not b.fenced) != self._alive:
            return cluster.partition_count
        touched = cluster.touched_since(self._position)
        if touched is None:
            return cluster.partition_count
        topics = cluster.topics
        return sum(len(topics[name].partitions) for name in set(touched) if name in topics)

    def unchanged_for(self, names: Iterable[str]) -> MetadataImage | None:
        """The last image when, since it was made, the cluster changed in other topics only (neither in its
        brokers nor in the topics ``names``): what it says of those topics is what a new image would say,
        without the cost of a new one (a copy of the topic maps: while a request auto-creates 100,000
        topics, every other client's Metadata paid it). None otherwise. Costs the changes since the last
        call and the names."""
        image, cluster = self._image, self.cluster
        if image is None:
            return None
        if image.generation == cluster.generation:
            return image
        if cluster.broker_generation != self._broker_generation:
            return None
        touched = cluster.touched_since(self._scanned)
        if touched is None:  # no longer kept
            return None
        self._touched_names.update(touched)
        self._scanned = cluster.touch_position
        changed = self._touched_names
        return None if any(name in changed for name in names) else image

    def image(self) -> MetadataImage:
        """The current image, rebuilt for the topics that changed, in one step."""
        for _ in self._build():
            pass
        assert self._image is not None
        return self._image

    async def image_in_turns(self) -> MetadataImage:
        """The current image, rebuilt in turns of the event loop (for many changed topics); partitions that
        change meanwhile show at the next request, as metadata reaches brokers over time."""
        with gc_paused():
            for _ in self._build():
                await asyncio.sleep(0)
        assert self._image is not None
        return self._image

    def _build(self) -> Iterator[None]:
        cluster = self.cluster
        if self._image is not None and self._image.generation == cluster.generation:
            return
        generation, position = cluster.generation, cluster.touch_position
        broker_generation = cluster.broker_generation
        brokers = cluster.brokers
        alive = frozenset(b.id for b in brokers if not b.fenced)
        base = self._image if alive == self._alive else None  # offline replicas depend on who is alive
        touched = cluster.touched_since(self._position) if base is not None else None
        if touched is None:
            built = yield from _every_topic(cluster, base, alive)
        else:
            built = yield from _changed_topics(cluster, base, dict.fromkeys(touched), alive)
        image = MetadataImage(generation, brokers, cluster.controller_id, *built)
        if self._image is None or image.generation > self._image.generation:  # builds may overlap
            self._image, self._position, self._alive = image, position, alive
            self._broker_generation = broker_generation
            self._touched_names, self._scanned = set(), position
            cluster.forget_touched(position)


#: The topics of an image, by name and by id.
Built = tuple[dict[str, TopicImage], dict[uuid.UUID, TopicImage]]


def _every_topic(
    cluster: Cluster, base: MetadataImage | None, alive: frozenset[int]
) -> Generator[None, None, Built]:
    """Every topic's image (unchanged ones taken from ``base``), in creation order."""
    reuse = base.topics if base is not None else {}
    topics: dict[str, TopicImage] = {}
    by_id: dict[uuid.UUID, TopicImage] = {}
    turns = Turns()
    for name, topic in list(cluster.topics.items()):
        image = reuse.get(name)
        if image is None or image.version != topic.version or image.topic_id != topic.topic_id:
            image = _topic_image(topic, alive)
        topics[name] = by_id[topic.topic_id] = image
        if turns.due():
            yield
    return topics, by_id


def _changed_topics(
    cluster: Cluster, base: MetadataImage, names: Iterable[str], alive: frozenset[int]
) -> Generator[None, None, Built]:
    """``base`` with the topics named (each once, in the order of their first change) remade: changed in
    place, deleted ones gone, new ones appended in creation order (every new topic was created after the
    topics ``base`` holds; they are sorted only when their first changes were not in that order)."""
    topics = dict(base.topics)
    by_id = dict(base.topics_by_id)
    new: list[Topic] = []
    in_order = True
    turns = Turns()
    for name in names:
        old = topics.get(name)
        topic = cluster.topics.get(name)
        if old is not None and (topic is None or topic.topic_id != old.topic_id):
            del topics[name], by_id[old.topic_id]
            old = None
        if topic is None:
            continue
        if old is None:
            if new and topic.created < new[-1].created:
                in_order = False
            new.append(topic)
        elif old.version != topic.version:
            topics[name] = by_id[topic.topic_id] = _topic_image(topic, alive)
        if turns.due():
            yield
    if not in_order:  # a topic deleted and created again: rare (a sort of 100,000 held the loop)
        new.sort(key=lambda topic: topic.created)
    for topic in new:
        topics[topic.name] = by_id[topic.topic_id] = _topic_image(topic, alive)
        if turns.due():
            yield
    return topics, by_id


def _topic_image(topic: Topic, alive: frozenset[int]) -> TopicImage:
    partitions = tuple(
        PartitionImage(
            p.index,
            p.leader if p.leader != NO_LEADER else NO_LEADER,
            p.leader_epoch,
            tuple(p.replicas),
            tuple(p.isr),
            tuple(r for r in p.replicas if r not in alive),
            tuple(p.elr),
            tuple(p.last_known_elr),
        )
        for p in topic.partitions
    )
    return TopicImage(topic.name, topic.topic_id, partitions, topic.version)
