"""A coordinator's state on an internal topic, as Kafka's coordinators keep it: the one home of what the
group coordinator (``__consumer_offsets``, :mod:`controller.groups.durable`) and the share coordinator
(``__share_group_state``, :mod:`controller.share.coordinator`) share.

A key (a group id, a share-partition key) belongs to partition ``Utils.abs(key.hashCode()) % partitions``
of the topic (Java's ``String.hashCode``; ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0), and its
coordinator is that partition's leader. The topic is made at first use, with the configured partitions
and replication factor (capped by the brokers there are), placed by the configured placer.

Every record the coordinator writes is appended to its partition's leader as one synthetic record: the
leader's log end offset moves one on, followers copy it as they copy anything
(:mod:`controller.dynamics.replication`), and the log offset of each record is remembered. A write is
answered once the partition's high watermark covers its records (Kafka's coordinators append with
acks=all).

When a partition's leader changes (a crash, a hang, an isolation, an election), requests to the old broker
get NOT_COORDINATOR, and the new leader loads what the partition's log holds up to its own log end offset:
for :data:`LOAD_MS` on the cluster's clock it answers COORDINATOR_LOAD_IN_PROGRESS. Records above its log
end offset (an unclean election, or writes not yet copied) are lost: the owner is told which
(:meth:`CoordinatorLog.moved`) and accounts for them. Each move is an event.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

from controller.clock import Clock, Timer
from controller.cluster import NO_LEADER, Cluster
from controller.dynamics.replication import Replication
from controller.topic_admin import NewTopic, TopicAdmin
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = [
    "COMPACT_AT",
    "LOAD_MS",
    "CoordinatorLog",
    "LogRecord",
    "coordinator_partition",
    "java_string_hash",
]

#: How long a new coordinator loads a partition (COORDINATOR_LOAD_IN_PROGRESS meanwhile), in ms.
LOAD_MS = 100
#: A partition's records are compacted once they are this many, and then again once they have doubled.
COMPACT_AT = 4096


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


class LogRecord(NamedTuple):
    """One record of a coordinator's partition (a tuple: one is made per record written)."""

    offset: int
    #: The coordinator key it belongs to (a group id, a share-partition key).
    key: str
    #: What it is, for its owner ("group", "offset", "share", ...).
    kind: str
    value: Any


class CoordinatorLog:
    """The partitions of one internal topic as a coordinator's log (see the module docstring). Owners
    subclass it and define :meth:`moved` (what a new leader loads, what is lost) and
    :meth:`compaction_key`."""

    #: What the events and messages call the coordinator ("group", "share").
    event_kind = "coordinator"

    def __init__(
        self,
        topic: str,
        partitions: int,
        replication_factor: int,
        cluster: Cluster,
        clock: Clock,
        replication: Replication,
        topic_admin: TopicAdmin,
        tick_ms: int,
        topic_configs: dict[str, str] | None = None,
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.cluster = cluster
        self.clock = clock
        self.replication = replication
        self.topic_admin = topic_admin
        self.tick_ms = tick_ms
        self.topic_configs = topic_configs or {}
        self._records: dict[int, list[LogRecord]] = {}
        #: How many records a partition may hold before it is compacted again.
        self._compact_at: dict[int, int] = {}
        self._holder: dict[int, int] = {}
        self._loaded_at: dict[int, int] = {}
        self._waiting: dict[int, deque[tuple[int, Callable[[], None]]]] = {}
        self._poll: Timer | None = None
        self._creating: asyncio.Future[ErrorCode] | None = None

    def close(self) -> None:
        if self._creating is not None and not self._creating.done():
            self._creating.cancel()
        if self._poll is not None:
            self._poll.cancel()

    # ------------------------------------------------------------------------------------- placement

    def partition_of(self, key: str) -> int:
        return coordinator_partition(key, self.partitions)

    async def ensure_topic(self) -> ErrorCode:
        """Makes the topic if it is not there yet: once, in a task of its own, however many ask at the same
        time (a caller that gives up does not cancel it)."""
        if self.topic in self.cluster.topics:
            return ErrorCode.NONE
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create())
        return await asyncio.shield(self._creating)

    async def _create(self) -> ErrorCode:
        try:
            return await self._create_topic()
        except Exception:
            log.exception("creating %s failed", self.topic)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE

    async def _create_topic(self) -> ErrorCode:
        brokers = len(self.cluster.brokers)
        rf = max(1, min(self.replication_factor, brokers))
        new = NewTopic(self.topic, self.partitions, rf, configs=dict(self.topic_configs))
        [result] = await self.topic_admin.create_topics([new])
        if result.ok or result.error is ErrorCode.TOPIC_ALREADY_EXISTS:
            log.info("created %s: %d partitions, replication factor %d", self.topic, self.partitions, rf)
            return ErrorCode.NONE
        log.warning("cannot create %s: %s %s", self.topic, result.error, result.message)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE

    def leader_of(self, index: int) -> tuple[ErrorCode, int]:
        """The serving leader of partition ``index``, or COORDINATOR_NOT_AVAILABLE."""
        topic = self.cluster.topics.get(self.topic)
        if topic is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_LEADER
        p = topic.partitions[index % len(topic.partitions)]
        if p.leader == NO_LEADER or p.leader not in self.cluster.serving_ids():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_LEADER
        return ErrorCode.NONE, p.leader

    def coordinator_of(self, key: str) -> tuple[ErrorCode, int]:
        """The coordinator's broker id for ``key``, or COORDINATOR_NOT_AVAILABLE (no topic yet, no serving
        leader)."""
        return self.leader_of(self.partition_of(key))

    def check_partition(self, index: int, broker: int | None) -> ErrorCode:
        """Whether ``broker`` (None: the bootstrap listener, which answers for any broker) may take a request
        for partition ``index`` now: NONE, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
        COORDINATOR_LOAD_IN_PROGRESS."""
        error, leader = self.leader_of(index)
        if error:
            return error
        if broker is not None and broker != leader:
            return ErrorCode.NOT_COORDINATOR
        self._follow(index, leader)
        if self.clock.now() < self._loaded_at.get(index, 0):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def follow_all(self) -> None:
        """Brings every partition's state to its current leader (what a check does for one)."""
        topic = self.cluster.topics.get(self.topic)
        if topic is None:
            return
        serving = self.cluster.serving_ids()
        for p in topic.partitions:
            if p.index in self._holder and p.leader != NO_LEADER and p.leader in serving:
                self._follow(p.index, p.leader)

    def holder(self, index: int) -> int | None:
        """The broker whose state of partition ``index`` is loaded (None: nothing written yet)."""
        return self._holder.get(index)

    # ------------------------------------------------------------------------------------- moves

    def _follow(self, index: int, leader: int) -> None:
        holder = self._holder.get(index)
        if holder == leader:
            return
        self._holder[index] = leader
        if holder is None:
            return  # the partition's first coordinator: nothing to load
        now = self.clock.now()
        self._loaded_at[index] = now + LOAD_MS
        p = self.cluster.partition(self.topic, index)
        end = p.leo_of(leader)
        kept: list[LogRecord] = []
        lost: list[LogRecord] = []
        for record in self._records.get(index, ()):
            (kept if record.offset < end else lost).append(record)
        self._records[index] = kept
        waiting = self._waiting.pop(index, deque())
        self._waiting[index] = deque((offset, respond) for offset, respond in waiting if offset < end)
        for offset, respond in waiting:
            if offset >= end:
                respond()  # answered; the write itself is gone (as with acks=all and a lost write)
        loaded = self.moved(index, kept, lost, now)
        self.cluster.events.record(
            self.event_kind,
            f"{self.topic}-{index}",
            [("coordinator", holder, leader), ("lost records", 0, len(lost))],
            f"partition leader moved; loading {loaded} from its log up to offset {end}",
        )
        self._check_waiting()

    def moved(self, index: int, kept: list[LogRecord], lost: list[LogRecord], now: int) -> str:
        """Partition ``index`` has a new coordinator: it loads ``kept`` (the records its log holds);
        ``lost`` were above its log end offset. Returns what it loaded, for the event ("3 group(s)")."""
        raise NotImplementedError

    def compaction_key(self, record: LogRecord) -> Hashable:
        """Records with the same key replace each other when the log is compacted."""
        raise NotImplementedError

    # ------------------------------------------------------------------------------------- the log

    def records(self, index: int) -> list[LogRecord]:
        """Partition ``index``'s records, in log order (compacted)."""
        return self._records.get(index, [])

    def append(self, key: str, kind: str, values: list[Any]) -> int | None:
        """Appends one record per value to ``key``'s partition (its leader's log end offset moves on by as
        many); the offset of the last, or None when there is no partition to append to."""
        index = self.partition_of(key)
        topic = self.cluster.topics.get(self.topic)
        if topic is None:
            return None  # no coordinator partition (driven in-process only): kept in memory
        p = topic.partitions[index]
        if p.leader == NO_LEADER:
            return None
        leo = list(p.leo)
        i = p.replicas.index(p.leader)
        offset = leo[i]
        leo[i] += len(values)
        self.cluster.progress(p, leo=leo)
        records = self._records.get(index)
        if records is None:
            records = self._records[index] = []
        records.extend(LogRecord(offset + n, key, kind, value) for n, value in enumerate(values))
        if len(records) >= self._compact_at.get(index, COMPACT_AT):
            self._compact(index, min(p.leo))
        self._holder.setdefault(index, p.leader)
        self.replication.refresh(p, f"{self.event_kind} coordinator append")
        self.replication.touch(p)
        return offset + len(values) - 1

    def _compact(self, index: int, below: int) -> None:
        """The internal topics are compacted (``cleanup.policy=compact``): of the records every replica has
        (below ``below``, the lowest log end offset), only the last of each key is kept. What any replica
        loads after a move, and what a move loses, are the same as before (those records are below every
        replica's log end offset)."""
        records = self._records[index]
        last: dict[Hashable, int] = {}
        for n, record in enumerate(records):
            if record.offset >= below:
                break
            last[self.compaction_key(record)] = n
        else:
            n = len(records)
        if len(last) < n:
            keep = sorted(last.values())
            self._records[index] = records = [records[k] for k in keep] + records[n:]
        self._compact_at[index] = max(COMPACT_AT, 2 * len(records))

    def when_durable(self, key: str, last: int | None, respond: Callable[[], None]) -> None:
        """Calls ``respond`` once the high watermark of ``key``'s partition covers offset ``last`` (at once
        when None: nothing was appended). Writes are answered in log order."""
        if last is None:
            respond()
            return
        index = self.partition_of(key)
        p = self.cluster.topics[self.topic].partitions[index]
        if last < p.high_watermark:
            respond()
            return
        self._waiting.setdefault(index, deque()).append((last, respond))
        if self._poll is None:
            self._poll = self.clock.call_later(self.tick_ms, self._on_poll, "coordinator writes wait for HW")

    def _check_waiting(self) -> None:
        """Answers the writes the high watermark covers (they wait in log order); polls on the replication
        tick while some wait."""
        topic = self.cluster.topics.get(self.topic)
        for index in list(self._waiting):
            entries = self._waiting[index]
            hw = topic.partitions[index].high_watermark if topic is not None else 1 << 62
            while entries and entries[0][0] < hw:
                entries.popleft()[1]()
            if not entries:
                del self._waiting[index]
        if self._waiting and self._poll is None:
            self._poll = self.clock.call_later(self.tick_ms, self._on_poll, "coordinator writes wait for HW")

    def _on_poll(self) -> None:
        self._poll = None
        self._check_waiting()
