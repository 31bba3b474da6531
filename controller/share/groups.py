"""Share groups' membership, as Kafka's ``GroupMetadataManager`` runs it for share groups (KIP-932): members
join, heartbeat and leave with ShareGroupHeartbeat; the group epoch moves on each change of members or of
what they subscribe to; the target assignment is the ``simple`` assignor's; a member takes its target
assignment at its next heartbeat (share groups have no revocation to wait for), and its epoch becomes the
assignment's epoch.

The ``simple`` assignor (Kafka's ``SimpleAssignor``) spreads the partitions of the subscribed topics over
the members that subscribe to them: with at least as many partitions as members each partition goes to one
member; with more members than partitions each member gets one partition, so that partitions are shared
(records are split between their members by acquisition). Members and partitions are taken in a fixed
order (member ids sorted, then topic names and partition indexes), so the same members get the same
assignment.

A member's session ends ``share.session.timeout.ms`` (a group config) after its last heartbeat: it is then
removed, as one that left. Each change is written to the group's coordinator partition of
``__consumer_offsets`` (:class:`ShareGroupLog`) and loaded from there by a coordinator that takes over.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from controller.clock import Clock, Timer
from protocol.codes import ErrorCode
from protocol.errors import Refusal

__all__ = ["ShareGroup", "ShareGroups", "ShareMember", "TopicInfo", "simple_assignment"]

#: The assignor share groups use (Kafka's ``group.share.assignors`` default).
ASSIGNOR = "simple"


@dataclass(frozen=True)
class TopicInfo:
    """A subscribed topic as the assignor sees it."""

    name: str
    topic_id: uuid.UUID
    partitions: int


@dataclass
class ShareMember:
    member_id: str
    epoch: int
    rack: str | None
    client_id: str
    client_host: str
    subscribed: tuple[str, ...]
    #: topic id -> partitions, as last given to the member.
    assignment: dict[uuid.UUID, tuple[int, ...]] = field(default_factory=dict)

    def snapshot(self) -> dict[str, Any]:
        return {
            "member_id": self.member_id,
            "epoch": self.epoch,
            "rack": self.rack,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscribed": list(self.subscribed),
            "assignment": {str(k): list(v) for k, v in self.assignment.items()},
        }

    @classmethod
    def load(cls, data: Mapping[str, Any]) -> ShareMember:
        return cls(
            data["member_id"],
            data["epoch"],
            data["rack"],
            data["client_id"],
            data["client_host"],
            tuple(data["subscribed"]),
            {uuid.UUID(k): tuple(v) for k, v in data["assignment"].items()},
        )


@dataclass
class ShareGroup:
    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    #: member id -> topic id -> partitions: the assignor's last answer.
    target: dict[str, dict[uuid.UUID, tuple[int, ...]]] = field(default_factory=dict)
    #: What the target was computed from: (topic, id, partitions) of every subscribed topic.
    topics_seen: tuple[tuple[str, str, int], ...] = ()

    @property
    def state(self) -> str:
        """Kafka's ``ShareGroupState`` as ListGroups and ShareGroupDescribe show it."""
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed}

    def snapshot(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "epoch": self.epoch,
            "assignment_epoch": self.assignment_epoch,
            "members": [m.snapshot() for m in self.members.values()],
            "target": {mid: {str(k): list(v) for k, v in t.items()} for mid, t in self.target.items()},
            "topics_seen": [list(t) for t in self.topics_seen],
        }

    @classmethod
    def load(cls, data: Mapping[str, Any]) -> ShareGroup:
        group = cls(data["group_id"], data["epoch"], data["assignment_epoch"])
        for m in data["members"]:
            member = ShareMember.load(m)
            group.members[member.member_id] = member
        group.target = {
            mid: {uuid.UUID(k): tuple(v) for k, v in t.items()} for mid, t in data["target"].items()
        }
        group.topics_seen = tuple(tuple(t) for t in data["topics_seen"])  # type: ignore[misc]
        return group


def simple_assignment(
    members: Mapping[str, tuple[str, ...]], topics: Mapping[str, TopicInfo]
) -> dict[str, dict[uuid.UUID, tuple[int, ...]]]:
    """The ``simple`` assignor (see the module docstring): member id -> topic id -> partitions."""
    out: dict[str, dict[uuid.UUID, list[int]]] = {m: {} for m in members}
    for name in sorted(topics):
        info = topics[name]
        subscribers = sorted(m for m, subscribed in members.items() if name in subscribed)
        if not subscribers or info.partitions <= 0:
            continue
        if info.partitions >= len(subscribers):
            for p in range(info.partitions):
                out[subscribers[p % len(subscribers)]].setdefault(info.topic_id, []).append(p)
        else:
            for i, member in enumerate(subscribers):
                out[member].setdefault(info.topic_id, []).append(i % info.partitions)
    return {m: {t: tuple(sorted(ps)) for t, ps in a.items()} for m, a in out.items()}


class ShareGroupLog(Protocol):
    """Where a group's changes are written (its coordinator partition of ``__consumer_offsets``)."""

    def write_share_group(self, group: ShareGroup | None, group_id: str) -> None: ...


@dataclass(frozen=True)
class Heartbeat:
    """A ShareGroupHeartbeat as the coordinator reads it."""

    group_id: str
    member_id: str
    member_epoch: int
    rack: str | None
    subscribed: tuple[str, ...] | None
    client_id: str = ""
    client_host: str = ""


class ShareGroups:
    """Every share group of the cluster (see the module docstring)."""

    def __init__(
        self,
        clock: Clock,
        topics: Callable[[set[str]], dict[str, TopicInfo]],
        group_setting: Callable[[str, str], Any],
        max_size: int,
        on_member_gone: Callable[[str, str, bool], None],
    ) -> None:
        """``topics`` describes the named topics that exist; ``group_setting(group, key)`` reads a group
        config; ``on_member_gone(group, member, expired)`` is told when a member leaves (``expired`` False) or
        its session ends (True)."""
        self.clock = clock
        self.groups: dict[str, ShareGroup] = {}
        self._topics = topics
        self._setting = group_setting
        self.max_size = max_size
        self._gone = on_member_gone
        self.log: ShareGroupLog | None = None
        self._sessions: dict[tuple[str, str], Timer] = {}

    def close(self) -> None:
        for timer in self._sessions.values():
            timer.cancel()
        self._sessions.clear()

    # ------------------------------------------------------------------------------------- heartbeat

    def heartbeat(self, request: Heartbeat) -> dict[str, Any]:
        """The answer to a ShareGroupHeartbeat whose coordinator checks passed: MemberId, MemberEpoch,
        HeartbeatIntervalMs, Assignment (None when unchanged); Refusal with Kafka's error otherwise."""
        gid, mid, epoch = request.group_id, request.member_id, request.member_epoch
        if not mid:
            raise Refusal(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if epoch < -1:
            raise Refusal(ErrorCode.INVALID_REQUEST, f"MemberEpoch is invalid: {epoch}.")
        if epoch == 0 and not request.subscribed:
            raise Refusal(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        interval = self._setting(gid, "share.heartbeat.interval.ms")
        group = self.groups.get(gid)
        if epoch == -1:
            if group is not None and mid in group.members:
                self._remove(group, mid, expired=False)
            return {"MemberId": mid, "MemberEpoch": -1, "HeartbeatIntervalMs": 0, "Assignment": None}
        if epoch == 0:
            if group is None:
                group = self.groups[gid] = ShareGroup(gid)
            member = group.members.get(mid)
            if member is None:
                if len(group.members) >= self.max_size:
                    raise Refusal(
                        ErrorCode.GROUP_MAX_SIZE_REACHED,
                        f"The share group has reached its maximum capacity of {self.max_size} members.",
                    )
                member = group.members[mid] = ShareMember(
                    mid,
                    0,
                    request.rack,
                    request.client_id,
                    request.client_host,
                    tuple(request.subscribed or ()),
                )
                group.epoch += 1
            fresh = True
        else:
            member = group.members.get(mid) if group is not None else None
            if group is None or member is None:
                raise Refusal(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
            if epoch != member.epoch:
                raise Refusal(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    f"The share group member has a smaller member epoch ({epoch}) than the one known by the "
                    f"group coordinator ({member.epoch}). The member must abandon all its partitions and rejoin."
                    if epoch < member.epoch
                    else f"The share group member has a greater member epoch ({epoch}) than the one known by "
                    f"the group coordinator ({member.epoch}). The member must abandon all its partitions and rejoin.",
                )
            fresh = False
        changed = False
        if request.subscribed is not None and tuple(request.subscribed) != member.subscribed:
            member.subscribed = tuple(request.subscribed)
            group.epoch += 1
            changed = True
        if request.rack is not None and request.rack != member.rack:
            member.rack = request.rack
        self._refresh_target(group)
        target = group.target.get(mid, {})
        assignment = None
        if fresh or target != member.assignment or member.epoch != group.assignment_epoch:
            changed = (
                changed or fresh or target != member.assignment or member.epoch != group.assignment_epoch
            )
            if fresh or target != member.assignment:
                assignment = {
                    "TopicPartitions": [
                        {"TopicId": t, "Partitions": list(ps)}
                        for t, ps in sorted(target.items(), key=lambda x: str(x[0]))
                    ]
                }
            member.assignment = dict(target)
            member.epoch = group.assignment_epoch
        self._touch(gid, mid)
        if changed and self.log is not None:
            self.log.write_share_group(group, gid)
        return {
            "MemberId": mid,
            "MemberEpoch": member.epoch,
            "HeartbeatIntervalMs": interval,
            "Assignment": assignment,
        }

    def _refresh_target(self, group: ShareGroup) -> None:
        """A new target assignment when the members, their subscriptions or the subscribed topics changed."""
        topics = self._topics(group.subscribed_topics())
        seen = tuple(sorted((t.name, str(t.topic_id), t.partitions) for t in topics.values()))
        if seen != group.topics_seen:
            group.topics_seen = seen
            if group.assignment_epoch == group.epoch:
                group.epoch += 1
        if group.assignment_epoch == group.epoch:
            return
        group.target = simple_assignment({m.member_id: m.subscribed for m in group.members.values()}, topics)
        group.assignment_epoch = group.epoch

    def _remove(self, group: ShareGroup, member_id: str, expired: bool) -> None:
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        group.epoch += 1
        timer = self._sessions.pop((group.group_id, member_id), None)
        if timer is not None:
            timer.cancel()
        self._refresh_target(group)
        if self.log is not None:
            self.log.write_share_group(group, group.group_id)
        self._gone(group.group_id, member_id, expired)

    # ------------------------------------------------------------------------------------- sessions

    def _touch(self, gid: str, mid: str) -> None:
        timeout = self._setting(gid, "share.session.timeout.ms")
        old = self._sessions.pop((gid, mid), None)
        if old is not None:
            old.cancel()

        def expire() -> None:
            self._sessions.pop((gid, mid), None)
            group = self.groups.get(gid)
            if group is not None and mid in group.members:
                self._remove(group, mid, expired=True)

        self._sessions[(gid, mid)] = self.clock.call_later(
            timeout, expire, f"share group {gid} member session"
        )

    # ------------------------------------------------------------------------------------- loading

    def unload(self, group_id: str) -> None:
        """The coordinator moved away: the group's state and timers go (a new coordinator loads them)."""
        self.groups.pop(group_id, None)
        for key in [k for k in self._sessions if k[0] == group_id]:
            self._sessions.pop(key).cancel()

    def load(self, group_id: str, snapshot: Mapping[str, Any] | None) -> None:
        """A new coordinator loads the group: every member's session starts again."""
        self.unload(group_id)
        if snapshot is None:
            return
        group = self.groups[group_id] = ShareGroup.load(snapshot)
        for mid in group.members:
            self._touch(group_id, mid)

    def deletable(self, group_id: str) -> ErrorCode:
        """Whether DeleteGroups may delete share group ``group_id``: only an empty one (NON_EMPTY_GROUP
        otherwise)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        return ErrorCode.NONE

    def delete(self, group_id: str) -> ErrorCode:
        """DeleteGroups of a share group (:meth:`deletable` first)."""
        error = self.deletable(group_id)
        if error:
            return error
        del self.groups[group_id]
        if self.log is not None:
            self.log.write_share_group(None, group_id)
        return ErrorCode.NONE
