"""The group coordinator as a broker: ``__consumer_offsets`` on the replication model.

The internal topic's machinery (placement, appends, waiting for the high watermark, moves, compaction) is
:mod:`controller.coordinator_log`'s, shared with the share coordinator. As in Kafka, a group belongs to partition ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``
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
Share groups (:mod:`controller.share`) keep their records here too, as Kafka's coordinator does: they join
as a family (:attr:`GroupService.families`), loaded and accounted for by their own module on each move.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from controller.clock import Clock
from controller.cluster import Cluster
from controller.config import ServerConfig
from controller.coordinator_log import (
    COMPACT_AT,
    LOAD_MS,
    CoordinatorLog,
    LogRecord,
    coordinator_partition,
    java_string_hash,
)
from controller.dynamics.replication import Replication
from controller.groups.classic import ClassicGroup, GroupState
from controller.groups.coordinator import CommittedOffset, GroupCoordinator, GroupSettings
from controller.topic_admin import TopicAdmin
from controller.topic_names import GROUP_METADATA_TOPIC_NAME
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = [
    "COMPACT_AT",
    "LOAD_MS",
    "OFFSETS_TOPIC",
    "GroupService",
    "LostCommit",
    "coordinator_partition",
    "java_string_hash",
]

OFFSETS_TOPIC = GROUP_METADATA_TOPIC_NAME


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


#: A family whose groups also live on ``__consumer_offsets`` (share groups): told when a partition's
#: coordinator moves, with the records of its own kinds, so that it loads them (and drops what it held).
GroupFamily = Any


class GroupService(CoordinatorLog):
    """The coordinator of every group, placed on the brokers (see the module docstring)."""

    event_kind = "group"

    def __init__(
        self,
        config: ServerConfig,
        cluster: Cluster,
        clock: Clock,
        replication: Replication,
        topic_admin: TopicAdmin,
    ) -> None:
        super().__init__(
            OFFSETS_TOPIC,
            config.offsets_partitions,
            config.offsets_replication_factor,
            cluster,
            clock,
            replication,
            topic_admin,
            config.replication_tick_ms,
        )
        self.config = config
        self.coordinator = GroupCoordinator(
            clock,
            GroupSettings(
                min_session_timeout_ms=config.group_min_session_timeout_ms,
                max_session_timeout_ms=config.group_max_session_timeout_ms,
                initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
            ),
            seed=config.seed,
            events=cluster.events,
        )
        self.coordinator.log = self
        self.lost_commits: list[LostCommit] = []
        #: Other group families on this topic (:data:`GroupFamily`), by the record kinds they write.
        self.families: dict[str, GroupFamily] = {}

    def close(self) -> None:
        super().close()
        self.coordinator.close()

    def check(self, group_id: str, broker: int | None) -> ErrorCode:
        """Whether ``broker`` (None: the bootstrap listener, which answers for any broker) may take a request
        for ``group_id`` now: NONE, NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
        COORDINATOR_LOAD_IN_PROGRESS."""
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        return self.check_partition(self.partition_of(group_id), broker)

    # ------------------------------------------------------------------------------------- moves

    def moved(self, index: int, kept: list[LogRecord], lost: list[LogRecord], now: int) -> str:
        groups = {r.key for r in self._records.get(index, ()) if r.kind in ("group", "offset")}
        groups |= {r.key for r in lost if r.kind in ("group", "offset")}
        groups |= {g for g in self.coordinator.groups if self.partition_of(g) == index}
        groups |= {g for g in self.coordinator.offsets if self.partition_of(g) == index}
        for group_id in sorted(groups):
            self.coordinator.unload(group_id, ErrorCode.NOT_COORDINATOR)
        for record in lost:
            if record.kind == "offset" and record.value[1] is not None:
                (topic, partition), value = record.value
                self.lost_commits.append(
                    LostCommit(record.key, topic, partition, value.offset, index, record.offset, now)
                )
        for group_id in sorted(groups):
            self._load(group_id, [r for r in kept if r.key == group_id and r.kind in ("group", "offset")])
        loaded = [f"{len(groups)} group(s)"]
        for kind, family in self.families.items():
            count = family.moved(
                index, [r for r in kept if r.kind == kind], [r for r in lost if r.kind == kind], now
            )
            loaded.append(f"{count} {kind} group(s)")
        return ", ".join(loaded)

    def compaction_key(self, record: LogRecord) -> Hashable:
        if record.kind == "offset":
            return (record.key, record.kind, record.value[0])
        return (record.key, record.kind, None)

    def _load(self, group_id: str, records: list[LogRecord]) -> None:
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

    def write_group(self, group: ClassicGroup) -> None:
        self.append(group.group_id, "group", [None if group.is_in(GroupState.DEAD) else group.snapshot()])

    def write_offsets(
        self,
        group_id: str,
        offsets: list[tuple[tuple[str, int], CommittedOffset | None]],
        respond: Callable[[], None],
    ) -> None:
        self.when_durable(group_id, self.append(group_id, "offset", offsets), respond)

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
