"""The share coordinator: share-partition state on ``__share_group_state``, as Kafka's ``ShareCoordinator``
keeps it (KIP-932).

A share-partition's key is ``groupId:topicId:partition`` (Kafka's ``SharePartitionKey.asCoordinatorKey``);
its state (:class:`~controller.share.partition.ShareState`: start offset, state epoch, the in-flight records
that are not plain AVAILABLE) lives on partition ``Utils.abs(key.hashCode()) %
share.coordinator.state.topic.num.partitions`` of ``__share_group_state``, whose leader is the key's
share coordinator. The topic, its placement, the appends and the wait for the high watermark are
:class:`~controller.coordinator_topic.CoordinatorTopic`'s, shared with the group and transaction
coordinators: every write is one record (a whole snapshot, as Kafka's ``ShareSnapshot``), answered once the
high watermark covers it.

When a partition's leader changes (a crash, a hang, an isolation, an election), requests to the old broker
get NOT_COORDINATOR and the new leader loads what its log holds, up to its own log end offset: for
:data:`~controller.coordinator_topic.LOAD_MS` on the cluster's clock it answers
COORDINATOR_LOAD_IN_PROGRESS. Records are compacted as Kafka compacts the topic: below every replica's log
end offset, the last of each key. Each move is an event (``share``).

A write not answered yet that the move loses is answered NOT_COORDINATOR, and the writer tries it again
at the new coordinator (Kafka's persister retries so): nothing is lost. An answered write the new leader's
log does not hold (only an unclean election takes one) is lost from the coordinator. The share-partition's
leader still holds that state in memory and writes it again with its next change, as Kafka's does; only
when the share-partition is loaded from the coordinator before that (its own leader moved too) are
accepted records lost: each is then reported (:class:`LostAcknowledgement`), with the records it makes
deliverable again.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from controller.clock import Clock
from controller.cluster import NO_LEADER, Cluster
from controller.coordinator_topic import LOAD_MS, CoordinatorTopic
from controller.dynamics.replication import Replication
from controller.share.partition import ShareState
from controller.topic_admin import TopicAdmin
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = ["SHARE_STATE_TOPIC", "LostAcknowledgement", "ShareCoordinator", "share_key"]

SHARE_STATE_TOPIC = "__share_group_state"

#: A partition's records are compacted once they are this many, and then again once they have doubled.
COMPACT_AT = 4096


def share_key(group: str, topic_id: uuid.UUID, partition: int) -> str:
    """Kafka's ``SharePartitionKey.asCoordinatorKey``: ``groupId:topicId:partition`` (the topic id in
    Kafka's base64 form)."""
    return f"{group}:{kafka_uuid(topic_id)}:{partition}"


def kafka_uuid(value: uuid.UUID) -> str:
    """A UUID as Kafka's ``Uuid.toString`` writes it: URL-safe base64 of its 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


@dataclass(frozen=True)
class LostAcknowledgement:
    """Records a share group accepted whose acceptance a move of the share coordinator lost before the
    share-partition's leader wrote it again: they are deliverable again."""

    group: str
    topic: str
    partition: int
    offsets: tuple[int, ...]
    #: Where the lost write was in ``__share_group_state``.
    log_partition: int
    log_offset: int
    at: int


class _Record(NamedTuple):
    """One record of ``__share_group_state`` (a tuple: one is made per write)."""

    offset: int
    #: The share-partition's key.
    key: str
    #: Its state, None for a tombstone (DeleteShareGroupState).
    value: ShareState | None


class _Pending:
    """A write appended and not answered yet: a move that loses its record sets ``lost``."""

    __slots__ = ("offset", "lost")

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.lost = False


class ShareCoordinator:
    """Share-partition state on ``__share_group_state`` (see the module docstring)."""

    def __init__(
        self,
        partitions: int,
        replication_factor: int,
        cluster: Cluster,
        clock: Clock,
        replication: Replication,
        topic_admin: TopicAdmin,
        tick_ms: int,
        write_timeout_ms: int = 5000,
    ) -> None:
        self.topic = CoordinatorTopic(
            SHARE_STATE_TOPIC,
            partitions,
            replication_factor,
            {"cleanup.policy": "compact"},
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
        self.write_timeout_ms = write_timeout_ms
        #: key -> the state the coordinator holds (what its leader loaded and wrote since).
        self.states: dict[str, ShareState] = {}
        #: key -> (the state a move lost, where its record was): until the share-partition writes again.
        self.lost: dict[str, tuple[ShareState, int, int]] = {}
        #: Every record appended, by partition, in log order (compacted: the last per key).
        self._records: dict[int, list[_Record]] = {}
        self._compact_at: dict[int, int] = {}
        #: Per partition, the writes appended and not answered yet.
        self._unanswered: dict[int, list[_Pending]] = {}
        #: The broker holding each partition's state, and when its load ends.
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
        topic = self.cluster.topics.get(SHARE_STATE_TOPIC)
        if topic is None:
            return
        serving = self.cluster.serving_ids()
        for p in topic.partitions:
            if p.index in self._holder and p.leader != NO_LEADER and p.leader in serving:
                self._follow(p.index, p.leader)

    # ------------------------------------------------------------------------------------- reading

    def read(self, key: str, broker: int | None = None) -> tuple[ErrorCode, ShareState | None]:
        """ReadShareGroupState: the state kept for ``key`` (None: none yet), or the coordinator's error."""
        error = self.check_partition(self.partition_of(key), broker)
        if error:
            return error, None
        return ErrorCode.NONE, self.states.get(key)

    def keys_of(self, group: str) -> list[str]:
        """Every key with state of ``group``."""
        self.follow_all()
        prefix = group + ":"
        return sorted(k for k in self.states if k.startswith(prefix) and k.count(":") >= 2)

    # ------------------------------------------------------------------------------------- writing

    def write(
        self,
        key: str,
        state: ShareState | None,
        respond: Callable[[ErrorCode], None],
        *,
        time_out: bool = False,
    ) -> None:
        """WriteShareGroupState (None: DeleteShareGroupState): appended at the key's coordinator and
        answered NONE once durable. While the coordinator loads, or has no leader, or when a move lost the
        record before it was durable, the write is tried again on the replication tick, as Kafka's persister
        retries, until ``write_timeout_ms`` pass: then it is answered with the coordinator's error. With
        ``time_out`` (the admin writes: AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups), a
        record appended but not yet durable when they pass (followers stopped, not yet out of the ISR) is
        answered COORDINATOR_NOT_AVAILABLE then, as Kafka's coordinator runtime times a write out (it may
        still become durable later). A share-partition's own writes wait for durability: their answer
        decides whether an acknowledgement stands, and one that later becomes durable after an error
        answer would leave the coordinator's state and the share-partition's apart."""
        give_up = self.clock.now() + self.write_timeout_ms
        answered = False
        given = respond

        def respond(error: ErrorCode) -> None:
            nonlocal answered
            if not answered:
                answered = True
                given(error)

        def attempt() -> None:
            if answered:
                return
            index = self.partition_of(key)
            error = self.check_partition(index, None)
            if error:
                retry(error)
                return
            p = self.topic.partition(index)
            assert p is not None
            offset = p.leo[p.replicas.index(p.leader)]
            if self.topic.append(index, 1, "share coordinator append") is None:
                respond(ErrorCode.COORDINATOR_NOT_AVAILABLE)
                return
            records = self._records.setdefault(index, [])
            records.append(_Record(offset, key, state))
            if len(records) >= self._compact_at.get(index, COMPACT_AT):
                self._compact(index, min(p.leo))
            self._holder.setdefault(index, p.leader)
            if state is None:
                self.states.pop(key, None)
            else:
                self.states[key] = state
            self.lost.pop(key, None)
            pending = _Pending(offset)
            self._unanswered.setdefault(index, []).append(pending)

            def durable() -> None:
                if timeout is not None:
                    timeout.cancel()
                waiting = self._unanswered.get(index, [])
                if pending in waiting:
                    waiting.remove(pending)
                if pending.lost:
                    retry(ErrorCode.NOT_COORDINATOR)
                else:
                    respond(ErrorCode.NONE)

            timeout = (
                self.clock.call_at(
                    max(give_up, self.clock.now()),
                    lambda: respond(ErrorCode.COORDINATOR_NOT_AVAILABLE),
                    "share state write times out",
                )
                if time_out
                else None
            )
            self.topic.wait(index, offset, durable)

        def retry(error: ErrorCode) -> None:
            if self.clock.now() >= give_up:
                respond(error)
            else:
                self.clock.call_later(self.tick_ms, attempt, "share state write retries")

        attempt()

    def _compact(self, index: int, below: int) -> None:
        """``__share_group_state`` is compacted: of the records every replica has (below ``below``, the
        lowest log end offset), the last per key is kept (tombstones too)."""
        records = self._records[index]
        last: dict[str, int] = {}
        n = 0
        for n, record in enumerate(records):
            if record.offset >= below:
                break
            last[record.key] = n
        else:
            n = len(records)
        if len(last) < n:
            keep = sorted(last.values())
            self._records[index] = records = [records[k] for k in keep] + records[n:]
        self._compact_at[index] = max(COMPACT_AT, 2 * len(records))

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
        p = self.cluster.partition(SHARE_STATE_TOPIC, index)
        end = p.leo_of(leader)
        unanswered: set[int] = set()
        for pending in self._unanswered.get(index, ()):
            unanswered.add(pending.offset)
            if pending.offset >= end:
                pending.lost = True
        kept: list[_Record] = []
        lost: list[_Record] = []
        for record in self._records.get(index, ()):
            (kept if record.offset < end else lost).append(record)
        self._records[index] = kept
        for key in [k for k in self.states if self.partition_of(k) == index]:
            del self.states[key]
        for record in kept:
            if record.value is None:
                self.states.pop(record.key, None)
            else:
                self.states[record.key] = record.value
        for record in lost:
            if record.value is not None and record.offset not in unanswered:
                self.lost[record.key] = (record.value, index, record.offset)
        for offset, respond in self.topic.take_waiting(index):
            if offset < end:
                self.topic.wait(index, offset, respond)
            else:
                respond()  # a write not answered yet: it is tried again at the new coordinator
        loaded = sum(1 for k in self.states if self.partition_of(k) == index)
        self.cluster.events.record(
            "share",
            f"{SHARE_STATE_TOPIC}-{index}",
            [("coordinator", holder, leader), ("lost records", 0, len(lost))],
            f"partition leader moved; loading {loaded} share-partition state(s) from its log up to offset {end}",
        )
        self.topic.check_waiting()
