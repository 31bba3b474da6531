"""The group coordinator as a broker: ``__consumer_offsets`` on the replication model.

As in Kafka, a group belongs to partition ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``
of ``__consumer_offsets`` (Java's ``String.hashCode``; ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0), and
its coordinator is that partition's leader. The topic is made at the first FindCoordinator, with
``offsets.topic.num.partitions`` partitions and ``offsets.topic.replication.factor`` replicas (capped by the
brokers there are), placed by the configured placer.

Every record Kafka's coordinator writes (a group's generation and assignment, one per committed partition,
tombstones) is appended to that partition's leader as one synthetic record: the leader's log end offset
moves one on, followers copy it as they copy anything (:mod:`controller.dynamics.replication`), and the
log offset of each record is remembered. An OffsetCommit is answered once the partition's high watermark
covers its records (Kafka appends with acks=all).

When the partition's leader changes (a crash, a hang, an isolation, an election), requests to the old
broker get NOT_COORDINATOR and FindCoordinator names the new leader, which loads the partition's groups:
for :data:`LOAD_MS` on the cluster's clock it answers COORDINATOR_LOAD_IN_PROGRESS; what it loads is the
records up to its own log end offset. Records above it (an unclean election, or commits not yet copied)
are lost: lost commits are listed in :attr:`GroupService.lost_commits`. Parked JoinGroup and SyncGroup
requests of the moved groups are answered NOT_COORDINATOR. Each move is an event (``group coordinator``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from controller.clock import Clock, Timer
from controller.cluster import NO_LEADER, Cluster
from controller.config import ServerConfig
from controller.dynamics.replication import Replication
from controller.groups.classic import ClassicGroup, GroupState
from controller.groups.coordinator import CommittedOffset, GroupCoordinator, GroupSettings
from controller.topic_admin import NewTopic, TopicAdmin
from controller.topic_names import GROUP_METADATA_TOPIC_NAME
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = [
    "LOAD_MS",
    "OFFSETS_TOPIC",
    "GroupService",
    "LostCommit",
    "coordinator_partition",
    "java_string_hash",
]

OFFSETS_TOPIC = GROUP_METADATA_TOPIC_NAME
#: How long a new coordinator loads a partition's groups (COORDINATOR_LOAD_IN_PROGRESS meanwhile), in ms.
LOAD_MS = 100


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, in 32-bit two's complement."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


@functools.lru_cache(maxsize=65536)
def coordinator_partition(group_id: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode()) % partitions`` (``Utils.abs(MIN_VALUE)`` is 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@dataclass(frozen=True)
class LostCommit:
    """A commit whose record was above the new leader's log end offset when the coordinator moved."""

    group_id: str
    topic: str
    partition: int
    offset: int
    #: Where its record was in ``__consumer_offsets``.
    log_partition: int
    log_offset: int
    #: Clock time of the move that lost it.
    lost_at: int


class _Record(NamedTuple):
    """One record of ``__consumer_offsets`` (a tuple: one is made per partition committed)."""

    offset: int
    group_id: str
    #: ("group", snapshot or None for a tombstone) or ("offset", ((topic, partition), CommittedOffset | None)).
    kind: str
    value: Any


#: A partition's records are compacted once they are this many, and then again once they have doubled.
COMPACT_AT = 4096


class GroupService:
    """The coordinator of every group, placed on the brokers (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        cluster: Cluster,
        clock: Clock,
        replication: Replication,
        topic_admin: TopicAdmin,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.clock = clock
        self.replication = replication
        self.topic_admin = topic_admin
        self.partitions = config.offsets_partitions
        self.coordinator = GroupCoordinator(
            clock,
            GroupSettings(
                min_session_timeout_ms=config.group_min_session_timeout_ms,
                max_session_timeout_ms=config.group_max_session_timeout_ms,
                initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                max_groups=config.max_groups,
                max_pending_members=config.max_pending_members,
            ),
            seed=config.seed,
            events=cluster.events,
        )
        self.coordinator.log = self
        self.lost_commits: list[LostCommit] = []
        self._records: dict[int, list[_Record]] = {}
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
        self.coordinator.close()
        if self._poll is not None:
            self._poll.cancel()

    # ------------------------------------------------------------------------------------- placement

    def partition_of(self, group_id: str) -> int:
        return coordinator_partition(group_id, self.partitions)

    async def ensure_topic(self) -> ErrorCode:
        """Makes ``__consumer_offsets`` if it is not there yet: once, in a task of its own, however many ask
        at the same time (a caller that gives up does not cancel it)."""
        if OFFSETS_TOPIC in self.cluster.topics:
            return ErrorCode.NONE
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create())
        return await asyncio.shield(self._creating)

    async def _create(self) -> ErrorCode:
        try:
            return await self._create_topic()
        except Exception:
            log.exception("creating %s failed", OFFSETS_TOPIC)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE

    async def _create_topic(self) -> ErrorCode:
        brokers = len(self.cluster.brokers)
        rf = max(1, min(self.config.offsets_replication_factor, brokers))
        [result] = await self.topic_admin.create_topics([NewTopic(OFFSETS_TOPIC, self.partitions, rf)])
        if result.ok or result.error is ErrorCode.TOPIC_ALREADY_EXISTS:
            log.info("created %s: %d partitions, replication factor %d", OFFSETS_TOPIC, self.partitions, rf)
            return ErrorCode.NONE
        log.warning("cannot create %s: %s %s", OFFSETS_TOPIC, result.error, result.message)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE

    def coordinator_of(self, group_id: str) -> tuple[ErrorCode, int]:
        """The coordinator's broker id, or COORDINATOR_NOT_AVAILABLE (no topic yet, no serving leader)."""
        topic = self.cluster.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_LEADER
        p = topic.partitions[self.partition_of(group_id) % len(topic.partitions)]
        if p.leader == NO_LEADER or p.leader not in self.cluster.serving_ids():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, NO_LEADER
        return ErrorCode.NONE, p.leader

    def check(self, group_id: str, broker: int | None) -> ErrorCode:
        """Whether ``broker`` (None: the bootstrap listener, which answers for any broker) may take a request
        for ``group_id`` now: NONE, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
        COORDINATOR_LOAD_IN_PROGRESS."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        error, leader = self.coordinator_of(group_id)
        if error:
            return error
        if broker is not None and broker != leader:
            return ErrorCode.NOT_COORDINATOR
        index = self.partition_of(group_id)
        self._follow(index, leader)
        if self.clock.now() < self._loaded_at.get(index, 0):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def follow_all(self) -> None:
        """Brings every partition's groups to their current leader (what a check does for one)."""
        topic = self.cluster.topics.get(OFFSETS_TOPIC)
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
        p = self.cluster.partition(OFFSETS_TOPIC, index)
        end = p.leo_of(leader)
        groups = {r.group_id for r in self._records.get(index, ())}
        groups |= {g for g in self.coordinator.groups if self.partition_of(g) == index}
        groups |= {g for g in self.coordinator.offsets if self.partition_of(g) == index}
        for group_id in sorted(groups):
            self.coordinator.unload(group_id, ErrorCode.NOT_COORDINATOR)
        kept, lost = [], []
        for record in self._records.get(index, ()):
            (kept if record.offset < end else lost).append(record)
        self._records[index] = kept
        for record in lost:
            if record.kind == "offset" and record.value[1] is not None:
                (topic, partition), value = record.value
                self.lost_commits.append(
                    LostCommit(record.group_id, topic, partition, value.offset, index, record.offset, now)
                )
        waiting = self._waiting.pop(index, deque())
        self._waiting[index] = deque((offset, respond) for offset, respond in waiting if offset < end)
        for offset, respond in waiting:
            if offset >= end:
                respond()  # answered; the commit itself is gone (as with acks=all and a lost write)
        for group_id in sorted(groups):
            self._load(group_id, [r for r in kept if r.group_id == group_id])
        self.cluster.events.record(
            "group",
            f"{OFFSETS_TOPIC}-{index}",
            [("coordinator", holder, leader), ("lost records", 0, len(lost))],
            f"partition leader moved; loading {len(groups)} group(s) from its log up to offset {end}",
        )
        self._check_waiting()

    def _load(self, group_id: str, records: list[_Record]) -> None:
        offsets: dict[tuple[str, int], CommittedOffset] = {}
        snapshot: dict[str, Any] | None = None
        written = False
        for record in records:
            if record.kind == "group":
                snapshot, written = record.value, True
            else:
                key, value = record.value
                if value is None:
                    offsets.pop(key, None)
                else:
                    offsets[key] = value
        self.coordinator.offsets.pop(group_id, None)
        if offsets:
            self.coordinator.offsets[group_id] = offsets
        if snapshot is None and offsets and not written:
            snapshot = ClassicGroup(group_id).snapshot()  # a group that only committed: a simple group
        self.coordinator.load(group_id, snapshot)

    # ------------------------------------------------------------------------------------- the log

    def _append(self, group_id: str, kind: str, values: list[Any]) -> int | None:
        """Appends one record per value to the group's partition (its leader's log end offset moves on by
        as many); the offset of the last, or None when there is no partition to append to."""
        index = self.partition_of(group_id)
        topic = self.cluster.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return None  # no coordinator partition (groups driven in-process only): kept in memory
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
        records.extend(_Record(offset + n, group_id, kind, value) for n, value in enumerate(values))
        if len(records) >= self._compact_at.get(index, COMPACT_AT):
            self._compact(index, min(p.leo))
        self._holder.setdefault(index, p.leader)
        self.replication.refresh(p, "group coordinator append")
        self.replication.touch(p)
        return offset + len(values) - 1

    def _compact(self, index: int, below: int) -> None:
        """Kafka compacts ``__consumer_offsets`` (``cleanup.policy=compact``): of the records every replica
        has (below ``below``, the lowest log end offset), only the last of each key (a group's metadata, a
        group's partition) is kept. What any replica loads after a move, and what a move loses, are the
        same as before (those records are below every replica's log end offset)."""
        records = self._records[index]
        last: dict[tuple[Any, ...], int] = {}
        for n, record in enumerate(records):
            if record.offset >= below:
                break
            key = (record.group_id, record.kind, record.value[0] if record.kind == "offset" else None)
            last[key] = n
        else:
            n = len(records)
        if len(last) < n:
            keep = sorted(last.values())
            self._records[index] = records = [records[k] for k in keep] + records[n:]
        self._compact_at[index] = max(COMPACT_AT, 2 * len(records))

    def write_group(self, group: ClassicGroup) -> None:
        self._append(group.group_id, "group", [None if group.is_in(GroupState.DEAD) else group.snapshot()])

    def write_offsets(
        self,
        group_id: str,
        offsets: list[tuple[tuple[str, int], CommittedOffset | None]],
        respond: Callable[[], None],
    ) -> None:
        last = self._append(group_id, "offset", offsets)
        if last is None:
            respond()
            return
        index = self.partition_of(group_id)
        p = self.cluster.topics[OFFSETS_TOPIC].partitions[index]
        if last < p.high_watermark:
            respond()
            return
        self._waiting.setdefault(index, deque()).append((last, respond))
        if self._poll is None:
            self._poll = self.clock.call_later(
                self.config.replication_tick_ms, self._on_poll, "commits wait for HW"
            )

    def _check_waiting(self) -> None:
        """Answers the commits the high watermark covers (they wait in log order); polls on the replication
        tick while some wait."""
        topic = self.cluster.topics.get(OFFSETS_TOPIC)
        for index in list(self._waiting):
            entries = self._waiting[index]
            hw = topic.partitions[index].high_watermark if topic is not None else 1 << 62
            while entries and entries[0][0] < hw:
                entries.popleft()[1]()
            if not entries:
                del self._waiting[index]
        if self._waiting and self._poll is None:
            self._poll = self.clock.call_later(
                self.config.replication_tick_ms, self._on_poll, "commits wait for HW"
            )

    def _on_poll(self) -> None:
        self._poll = None
        self._check_waiting()

    # ------------------------------------------------------------------------------------- reading

    def group_state(self, group_id: str) -> dict[str, Any] | None:
        """The group now (None: no such group): state, generation, protocol, leader, members with their
        assignments, and its coordinator broker."""
        self.follow_all()
        group = self.coordinator.groups.get(group_id)
        if group is None:
            return None
        _, broker = self.coordinator_of(group_id)
        return {
            "group_id": group_id,
            "state": group.state.value,
            "generation": group.generation,
            "protocol_type": group.protocol_type,
            "protocol": group.protocol_name,
            "leader": group.leader,
            "members": {
                m.member_id: {
                    "instance_id": m.instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "assignment": m.assignment,
                }
                for m in group.members.values()
            },
            "coordinator": broker,
            "coordinator_partition": self.partition_of(group_id),
        }

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        """(topic, partition) -> committed offset."""
        self.follow_all()
        return {
            key: value.offset for key, value in sorted(self.coordinator.offsets.get(group_id, {}).items())
        }
