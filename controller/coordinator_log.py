"""A coordinator's records on its internal topic, and what a move of a partition's leader does to them: the
layer above :mod:`controller.coordinator_topic` (placement, appends, answers once durable) that the share
coordinator (``__share_group_state``, :mod:`controller.share.coordinator`) keeps its state with.

Each record written is remembered with its log offset. When a partition's leader changes (a crash, a
hang, an isolation, an election), requests to the old broker get NOT_COORDINATOR and the new leader loads
what its log holds, up to its own log end offset: for :data:`LOAD_MS` on the cluster's clock it answers
COORDINATOR_LOAD_IN_PROGRESS. Records above its log end offset (an unclean election, or writes not yet
copied) are lost: the owner is told which (:meth:`CoordinatorLog.moved`) and accounts for them; answers
waiting for them are given (the write itself is gone, as with acks=all and a lost write). The records are
compacted as Kafka compacts the internal topics: below every replica's log end offset, the last of each
key. Each move is an event.

The group coordinator (:mod:`controller.groups.durable`) keeps its own records the same way on
``__consumer_offsets`` (with its transactional offsets); folding it onto this layer is left to do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from typing import Any, NamedTuple

from controller.clock import Clock
from controller.cluster import NO_LEADER, Cluster
from controller.coordinator_topic import LOAD_MS, CoordinatorTopic
from controller.dynamics.replication import Replication
from controller.topic_admin import TopicAdmin
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = ["COMPACT_AT", "LOAD_MS", "CoordinatorLog", "LogRecord"]

#: A partition's records are compacted once they are this many, and then again once they have doubled.
COMPACT_AT = 4096


class LogRecord(NamedTuple):
    """One record of a coordinator's partition (a tuple: one is made per record written)."""

    offset: int
    #: The coordinator key it belongs to (a share-partition key).
    key: str
    #: What it is, for its owner.
    kind: str
    value: Any


class CoordinatorLog:
    """The partitions of one internal topic as a coordinator's log (see the module docstring). Owners
    subclass it and define :meth:`moved` and :meth:`compaction_key`."""

    #: What the events call the coordinator.
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
        self.topic = CoordinatorTopic(
            topic,
            partitions,
            replication_factor,
            topic_configs or {},
            cluster,
            clock,
            replication,
            topic_admin,
            tick_ms,
        )
        self.partitions = partitions
        self.cluster = cluster
        self.clock = clock
        self.tick_ms = tick_ms
        self._records: dict[int, list[LogRecord]] = {}
        self._compact_at: dict[int, int] = {}
        self._holder: dict[int, int] = {}
        self._loaded_at: dict[int, int] = {}

    def close(self) -> None:
        self.topic.close()

    # ------------------------------------------------------------------------------------- placement

    def partition_of(self, key: str) -> int:
        return self.topic.partition_of(key)

    async def ensure_topic(self) -> ErrorCode:
        return await self.topic.ensure()

    def coordinator_of(self, key: str) -> tuple[ErrorCode, int]:
        return self.topic.coordinator_of(key)

    def check_partition(self, index: int, broker: int | None) -> ErrorCode:
        """Whether ``broker`` (None: the bootstrap listener, which answers for any broker) may take a request
        for partition ``index`` now: NONE, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
        COORDINATOR_LOAD_IN_PROGRESS."""
        p = self.topic.partition(index)
        if p is None or p.leader == NO_LEADER or p.leader not in self.cluster.serving_ids():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if broker is not None and broker != p.leader:
            return ErrorCode.NOT_COORDINATOR
        self._follow(index, p.leader)
        if self.clock.now() < self._loaded_at.get(index, 0):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def follow_all(self) -> None:
        """Brings every partition's state to its current leader (what a check does for one)."""
        topic = self.cluster.topics.get(self.topic.name)
        if topic is None:
            return
        serving = self.cluster.serving_ids()
        for p in topic.partitions:
            if p.index in self._holder and p.leader != NO_LEADER and p.leader in serving:
                self._follow(p.index, p.leader)

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
        p = self.cluster.partition(self.topic.name, index)
        end = p.leo_of(leader)
        kept: list[LogRecord] = []
        lost: list[LogRecord] = []
        for record in self._records.get(index, ()):
            (kept if record.offset < end else lost).append(record)
        self._records[index] = kept
        for offset, respond in self.topic.take_waiting(index):
            if offset < end:
                self.topic.wait(index, offset, respond)
            else:
                respond()
        loaded = self.moved(index, kept, lost, now)
        self.cluster.events.record(
            self.event_kind,
            f"{self.topic.name}-{index}",
            [("coordinator", holder, leader), ("lost records", 0, len(lost))],
            f"partition leader moved; loading {loaded} from its log up to offset {end}",
        )
        self.topic.check_waiting()

    def moved(self, index: int, kept: list[LogRecord], lost: list[LogRecord], now: int) -> str:
        """Partition ``index`` has a new coordinator: it loads ``kept``; ``lost`` were above its log end
        offset. Returns what it loaded, for the event."""
        raise NotImplementedError

    def compaction_key(self, record: LogRecord) -> Hashable:
        """Records with the same key replace each other when the log is compacted."""
        raise NotImplementedError

    # ------------------------------------------------------------------------------------- the log

    def records(self, index: int) -> list[LogRecord]:
        return self._records.get(index, [])

    def append(self, key: str, kind: str, values: list[Any]) -> int | None:
        """Appends one record per value to ``key``'s partition; the offset of the last, or None when there
        is no partition or leader to append to."""
        index = self.partition_of(key)
        p = self.topic.partition(index)
        if p is None or p.leader == NO_LEADER:
            return None
        offset = p.leo[p.replicas.index(p.leader)]
        last = self.topic.append(index, len(values), f"{self.event_kind} coordinator append")
        if last is None:
            return None
        records = self._records.setdefault(index, [])
        records.extend(LogRecord(offset + n, key, kind, value) for n, value in enumerate(values))
        if len(records) >= self._compact_at.get(index, COMPACT_AT):
            self._compact(index, min(p.leo))
        self._holder.setdefault(index, p.leader)
        return last

    def _compact(self, index: int, below: int) -> None:
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
        """Calls ``respond`` once the high watermark of ``key``'s partition passes ``last`` (at once when
        None: nothing was appended)."""
        if last is None:
            respond()
        else:
            self.topic.wait(self.partition_of(key), last, respond)
