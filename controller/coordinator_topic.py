"""A coordinator's internal topic on the replication model: the part the group coordinator
(``__consumer_offsets``, :mod:`controller.groups.durable`) and the transaction coordinator
(``__transaction_state``, :mod:`controller.transactions.state_log`) share.

As in Kafka, a key (a group id, a transactional id) belongs to partition
``Utils.abs(key.hashCode()) % partitions`` of the topic (Java's ``String.hashCode``; ``Utils.abs`` maps
``Integer.MIN_VALUE`` to 0), and its coordinator is that partition's leader. The topic is made at the
first request that needs it, with the configured partitions and replicas (capped by the brokers there
are), placed by the configured placer, with the topic configs the coordinator asks for.

A coordinator writes its state as records appended to the partition's leader: each record moves the
leader's log end offset one on (:meth:`CoordinatorTopic.append`), followers copy it as they copy
anything (:mod:`controller.dynamics.replication`), and an answer that must be durable waits until the
partition's high watermark covers its record (:meth:`CoordinatorTopic.wait`, Kafka's appends with
acks=all): answered as soon as the model raises the high watermark, and polled on the replication tick
too. What the records hold, what a new leader loads and what a move loses are the coordinator's own.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import Callable, Mapping

from controller.clock import Clock, Timer
from controller.cluster import NO_LEADER, Cluster, PartitionState
from controller.dynamics.replication import Replication
from controller.topic_admin import NewTopic, TopicAdmin
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = ["LOAD_MS", "CoordinatorTopic", "coordinator_partition", "java_string_hash"]

#: How long a new coordinator loads a partition (COORDINATOR_LOAD_IN_PROGRESS meanwhile), in ms.
LOAD_MS = 100


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, in 32-bit two's complement."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@functools.lru_cache(maxsize=65536)
def coordinator_partition(key: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode()) % partitions`` (``Utils.abs(MIN_VALUE)`` is 0)."""
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


#: A durable answer: called once the record is below the high watermark.
Respond = Callable[[], None]


class CoordinatorTopic:
    """One coordinator's internal topic (see the module docstring)."""

    def __init__(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        configs: Mapping[str, str],
        cluster: Cluster,
        clock: Clock,
        replication: Replication,
        topic_admin: TopicAdmin,
        tick_ms: int,
    ) -> None:
        self.name = name
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.configs = dict(configs)
        self.cluster = cluster
        self.clock = clock
        self.replication = replication
        self.topic_admin = topic_admin
        self.tick_ms = tick_ms
        #: Answers waiting for the high watermark, by partition, in log order: (record offset, respond).
        self._waiting: dict[int, deque[tuple[int, Respond]]] = {}
        self._poll: Timer | None = None
        self._creating: asyncio.Future[ErrorCode] | None = None
        replication.watermark_watchers[name] = self._high_watermark_moved

    def close(self) -> None:
        if self.replication.watermark_watchers.get(self.name) == self._high_watermark_moved:
            del self.replication.watermark_watchers[self.name]
        if self._creating is not None and not self._creating.done():
            self._creating.cancel()
        if self._poll is not None:
            self._poll.cancel()
            self._poll = None

    # ------------------------------------------------------------------------------------- placement

    def partition_of(self, key: str) -> int:
        return coordinator_partition(key, self.partitions)

    @property
    def exists(self) -> bool:
        return self.name in self.cluster.topics

    async def ensure(self) -> ErrorCode:
        """Makes the topic if it is not there yet: once, in a task of its own, however many ask at the same
        time (a caller that gives up does not cancel it)."""
        if self.name in self.cluster.topics:
            return ErrorCode.NONE
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create())
        return await asyncio.shield(self._creating)

    async def _create(self) -> ErrorCode:
        try:
            rf = max(1, min(self.replication_factor, len(self.cluster.brokers)))
            topic = NewTopic(self.name, self.partitions, rf, configs=self.configs)
            [result] = await self.topic_admin.create_topics([topic])
        except Exception:
            log.exception("creating %s failed", self.name)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if result.ok or result.error is ErrorCode.TOPIC_ALREADY_EXISTS:
            log.info("created %s: %d partitions, replication factor %d", self.name, self.partitions, rf)
            return ErrorCode.NONE
        log.warning("cannot create %s: %s %s", self.name, result.error, result.message)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE

    def partition(self, index: int) -> PartitionState | None:
        """Partition ``index`` of the topic, None before the topic exists."""
        topic = self.cluster.topics.get(self.name)
        if topic is None:
            return None
        return topic.partitions[index % len(topic.partitions)]

    def coordinator_of(self, key: str) -> tuple[ErrorCode, int]:
        """The coordinator's broker id, or COORDINATOR_NOT_AVAILABLE (no topic yet, no serving leader)."""
        return self.leader_of(self.partition_of(key))

    def leader_of(self, index: int) -> tuple[ErrorCode, int]:
        """The broker that coordinates the keys of partition ``index`` (:meth:`coordinator_of`)."""
        p = self.partition(index)
        if p is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_LEADER
        if p.leader == NO_LEADER or p.leader not in self.cluster.serving_ids():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_LEADER
        return ErrorCode.NONE, p.leader

    # ------------------------------------------------------------------------------------- records

    def append(self, index: int, count: int, why: str) -> int | None:
        """Appends ``count`` records to partition ``index``'s leader (its log end offset moves on by as
        many); the offset of the last, or None when there is no partition or no leader to append to."""
        p = self.partition(index)
        if p is None or p.leader == NO_LEADER:
            return None
        return self.append_at(p, count, why)

    def append_at(self, p: PartitionState, count: int, why: str) -> int:
        """:meth:`append` to ``p``, a partition of the topic that has a leader."""
        leo = list(p.leo)
        i = p.replicas.index(p.leader)
        offset = leo[i]
        leo[i] += count
        self.cluster.progress(p, leo=leo)
        self.replication.refresh(p, why)
        self.replication.appended(p)
        return offset + count - 1

    def wait(self, index: int, offset: int, respond: Respond) -> None:
        """Calls ``respond`` once partition ``index``'s high watermark passes ``offset`` (at once if it has)."""
        p = self.partition(index)
        if p is None:
            respond()
            return
        self.wait_at(p, offset, respond)

    def wait_at(self, p: PartitionState, offset: int, respond: Respond) -> None:
        """:meth:`wait` on ``p``, a partition of the topic."""
        if offset < p.high_watermark:
            respond()
            return
        self._waiting.setdefault(p.index, deque()).append((offset, respond))
        self._schedule()

    def take_waiting(self, index: int) -> deque[tuple[int, Respond]]:
        """The answers waiting on partition ``index``, taken out (its coordinator moved: the owner decides)."""
        return self._waiting.pop(index, deque())

    def check_waiting(self) -> None:
        """Answers the records the high watermark covers (they wait in log order); polls on the replication
        tick while some wait."""
        topic = self.cluster.topics.get(self.name)
        for index in list(self._waiting):
            entries = self._waiting[index]
            hw = topic.partitions[index].high_watermark if topic is not None else 1 << 62
            while entries and entries[0][0] < hw:
                entries.popleft()[1]()
            if not entries:
                self._waiting.pop(index, None)
        self._schedule()

    def _schedule(self) -> None:
        if self._waiting and self._poll is None:
            self._poll = self.clock.call_later(
                self.tick_ms, self._on_poll, f"{self.name} appends wait for HW"
            )

    def _high_watermark_moved(self, p: PartitionState) -> None:
        """The model's hook: a partition's high watermark moved up. The answers it covers are given as soon
        as the model's step is over (a timer at once: never inside the step), not at the next poll."""
        entries = self._waiting.get(p.index)
        if not entries or entries[0][0] >= p.high_watermark:
            return
        if self._poll is not None:
            if self._poll.when <= self.clock.now():
                return
            self._poll.cancel()
        self._poll = self.clock.call_later(0, self._on_poll, f"{self.name} appends wait for HW")

    def _on_poll(self) -> None:
        self._poll = None
        self.check_waiting()
