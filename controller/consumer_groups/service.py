"""The consumer group protocol (KIP-848) joined to the server: a subsystem built at the first request that
needs it (a ConsumerGroupHeartbeat, a ConsumerGroupDescribe), on top of the classic groups' service.

Its groups live where every group does: on the leader of their ``__consumer_offsets`` partition, with
their committed offsets in the classic coordinator. It joins :class:`controller.groups.durable.GroupService`
as a family of groups: its records (:mod:`controller.consumer_groups.group`) are appended, compacted and
copied with the others, and when a partition's leader changes the new coordinator replays them (a
heartbeat meanwhile gets COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR, as for classic groups). It
joins the classic coordinator too (its ``modern`` hook), which hands it the JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit and OffsetFetch requests of its groups.

Settings (``server.properties``): ``group.consumer.max.size``, ``group.consumer.assignors``,
``group.consumer.migration.policy``, ``group.consumer.regex.refresh.interval.ms``; the session timeout, the
heartbeat interval and the assignment interval are group configs (``consumer.session.timeout.ms``, ...)
whose broker defaults are ``group.consumer.session.timeout.ms`` and the like
(:mod:`controller.config.group_configs`).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from controller.consumer_groups.assignors import CLASS_NAMES
from controller.consumer_groups.coordinator import ConsumerGroupCoordinator, ConsumerSettings
from controller.consumer_groups.group import GroupState
from protocol.codes import ErrorCode

if TYPE_CHECKING:
    from controller.groups.durable import GroupService

log = logging.getLogger(__name__)

__all__ = ["KINDS", "ConsumerGroupService", "settings_of"]

#: The record kinds of consumer groups (Kafka's record types).
KINDS = frozenset(
    {
        "ConsumerGroupMetadata",
        "ConsumerGroupMemberMetadata",
        "ConsumerGroupTargetAssignmentMetadata",
        "ConsumerGroupTargetAssignmentMember",
        "ConsumerGroupCurrentMemberAssignment",
        "ConsumerGroupRegularExpression",
    }
)
#: The kinds keyed by a member (or a regular expression) besides the group.
_KEYED = frozenset(KINDS - {"ConsumerGroupMetadata", "ConsumerGroupTargetAssignmentMetadata"})


def settings_of(config: Any) -> ConsumerSettings:
    """The coordinator's settings from the server's configuration."""
    assignors = tuple(CLASS_NAMES.get(name, name) for name in config.consumer_assignors)
    policy = config.consumer_migration_policy
    return ConsumerSettings(
        max_size=config.consumer_max_size,
        assignors=assignors,
        upgrade=policy in ("upgrade", "bidirectional"),
        downgrade=policy in ("downgrade", "bidirectional"),
        regex_refresh_interval_ms=config.consumer_regex_refresh_interval_ms,
        classic_max_size=config.group_max_size,
    )


class ConsumerGroupService:
    """The consumer group protocol's groups, placed on the brokers (see the module docstring)."""

    def __init__(self, controller: Any) -> None:
        """``controller``: the :class:`controller.app.Controller` (its config, clock, cluster, groups)."""
        self.controller = controller
        groups: GroupService = controller.groups
        self.groups = groups
        config = controller.config
        self.coordinator = ConsumerGroupCoordinator(
            controller.clock,
            controller.cluster,
            settings_of(config),
            groups.coordinator,
            groups,
            seed=config.seed,
            events=controller.cluster.events,
        )
        groups.add_family(self, KINDS)
        groups.coordinator.modern = self.coordinator

    def close(self) -> None:
        self.coordinator.close()

    # ------------------------------------------------------------------------------------- the family

    def owns(self, group_id: str) -> bool:
        return group_id in self.coordinator.groups

    def compaction_key(self, record: Any) -> Hashable:
        if record.kind in _KEYED:
            return (record.group_id, record.value[0])
        return record.group_id

    def moved(self, index: int, kept: list[Any], lost: list[Any], now: int) -> int:
        """Partition ``index`` has a new coordinator: its consumer groups are replayed from ``kept``."""
        coordinator = self.coordinator
        partition_of = self.groups.partition_of
        held = {g for g in coordinator.groups if partition_of(g) == index}
        held |= {r.group_id for r in kept} | {r.group_id for r in lost}
        for group_id in sorted(held):
            coordinator.unload(group_id)
        for record in kept:
            coordinator.replay(record.group_id, record.kind, record.value)
        loaded = sorted(g for g in held if g in coordinator.groups)
        for group_id in loaded:
            coordinator.loaded(group_id)
        if lost:
            log.info(
                "%d consumer group record(s) of partition %d lost with the move of its coordinator",
                len(lost),
                index,
            )
        return len(loaded)

    # ------------------------------------------------------------------------------------- reading

    def check(self, group_id: str, broker: int | None) -> ErrorCode:
        """Whether ``broker`` may take a request for ``group_id`` now (:meth:`GroupService.check`)."""
        return self.groups.check(group_id, broker)

    def list_groups(self, broker: int | None, states: Any = (), types: Any = ()) -> list[dict[str, Any]]:
        """ListGroups' entries of the consumer groups ``broker`` coordinates (None: every one)."""
        wanted_states = {s.strip().lower() for s in states}
        wanted_types = {t.strip().lower() for t in types}
        if wanted_types and "consumer" not in wanted_types:
            return []
        groups = self.groups
        groups.follow_all()
        out = []
        for group_id, group in sorted(self.coordinator.groups.items()):
            state = group.state.value
            if wanted_states and state.lower() not in wanted_states:
                continue
            if broker is not None and groups.coordinator_of(group_id) != (ErrorCode.NONE, broker):
                continue
            out.append(
                {
                    "GroupId": group_id,
                    "ProtocolType": "consumer",
                    "GroupState": state,
                    "GroupType": "consumer",
                }
            )
        return out

    def group_state(self, group_id: str) -> dict[str, Any] | None:
        """The consumer group now (None: no such group), for tests and tools."""
        self.groups.follow_all()
        group = self.coordinator.groups.get(group_id)
        if group is None:
            return None
        names = {t.topic_id: n for n, t in self.controller.cluster.topics.items()}

        def shown(assignment: Any) -> dict[str, list[int]]:
            return {
                names.get(t, str(t)): sorted(ps)
                for t, ps in sorted(assignment.items(), key=lambda i: names.get(i[0], ""))
            }

        _, broker = self.groups.coordinator_of(group_id)
        return {
            "group_id": group_id,
            "type": "consumer",
            "state": group.state.value,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor": group.preferred_assignor() or self.coordinator.settings.assignors[0],
            "members": {
                m.member_id: {
                    "instance_id": m.instance_id,
                    "client_id": m.subscription.client_id,
                    "protocol": "classic" if m.uses_classic_protocol else "consumer",
                    "member_epoch": m.member_epoch,
                    "state": m.state.shown,
                    "subscribed_topics": sorted(group.subscribed_topics_of(m)),
                    "topic_regex": m.subscription.topic_regex,
                    "assignment": shown(m.assigned),
                    "pending_revocation": shown(m.current.pending_revocation),
                    "target": shown(group.target.get(m.member_id, {})),
                }
                for m in group.members.values()
            },
            "coordinator": broker,
            "coordinator_partition": self.groups.partition_of(group_id),
        }

    def is_dead(self, group_id: str) -> bool:
        group = self.coordinator.groups.get(group_id)
        return group is None or group.state is GroupState.DEAD
