"""The classic group protocol on the cluster's clock: Kafka's ``GroupMetadataManager`` (classic groups) and
``OffsetMetadataManager`` (commits), without the wire.

Requests whose answer waits (JoinGroup, SyncGroup, OffsetCommit) take a ``respond`` callback, called once
with the answer, as Kafka completes a response future; the others return their answer. Timers follow
Kafka's: the initial rebalance delay (``group.initial.rebalance.delay.ms``, extended while new members
arrive, up to the rebalance timeout), the rebalance timeout of the join phase, the session timeout of every
member (a heartbeat, a commit or a rebalance resets it), the join timeout of new members (5 minutes) and
the sync timeout (the rebalance timeout after the join phase completes).

Where Kafka writes a record to ``__consumer_offsets`` (a group's generation and assignment, an offset
commit, a tombstone) this calls its :class:`GroupLog` (:mod:`controller.groups.durable`), which decides
when a commit is answered (once the partition's high watermark covers it) and what a coordinator that
takes over loads. Without one, everything is answered at once and kept.

Member ids are the client id (or the instance id) and a UUID, as Kafka makes them; the UUIDs come from a
seeded generator, so the same requests give the same ids.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from controller.clock import Clock, Timer
from controller.events import EventLog
from controller.groups.classic import (
    ClassicGroup,
    GroupError,
    GroupState,
    JoinResult,
    JoinWaiter,
    Member,
    SyncResult,
    SyncWaiter,
)
from protocol.codes import ErrorCode

__all__ = [
    "CommitWaiter",
    "CommittedOffset",
    "GroupCoordinator",
    "GroupLog",
    "GroupSettings",
    "JoinRequest",
    "OffsetCommit",
]

#: Kafka's ``classicGroupNewMemberJoinTimeoutMs``: a new member's parked JoinGroup expires after 5 minutes.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
#: Kafka's ``offset.metadata.max.bytes`` default: longer commit metadata is refused.
OFFSET_METADATA_MAX_BYTES = 4096


@dataclass(frozen=True)
class GroupSettings:
    """The coordinator's settings (Kafka's ``GroupCoordinatorConfig`` defaults)."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    #: The simulator's caps on what cheap requests leave behind (``simulator.max.groups``,
    #: ``simulator.max.pending.members``): groups, and member ids handed out with MEMBER_ID_REQUIRED
    #: that no member joined with yet, in all.
    max_groups: int = 100_000
    max_pending_members: int = 50_000


@dataclass(frozen=True)
class JoinRequest:
    """A JoinGroup request as the coordinator reads it."""

    group_id: str
    member_id: str
    protocol_type: str
    protocols: Sequence[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    instance_id: str | None = None
    #: v4+: a new member gets MEMBER_ID_REQUIRED and an id, and joins again with it.
    require_known_member_id: bool = True
    #: v9+: the leader of a static group rejoining while Stable may skip the assignment.
    supports_skip_assignment: bool = False
    client_id: str = ""
    client_host: str = ""
    reason: str | None = None


class _CountedSet(set[str]):
    """A group's pending members: a set whose size changes are added to a tally shared by every group
    (:attr:`GroupCoordinator.pending_members`)."""

    def __init__(self, tally: list[int]) -> None:
        super().__init__()
        self._tally = tally

    def add(self, item: str) -> None:
        if item not in self:
            self._tally[0] += 1
            super().add(item)

    def discard(self, item: str) -> None:
        if item in self:
            self._tally[0] -= 1
            super().discard(item)

    def remove(self, item: str) -> None:
        if item not in self:
            raise KeyError(item)
        self.discard(item)

    def clear(self) -> None:
        self._tally[0] -= len(self)
        super().clear()


class OffsetCommit(NamedTuple):
    """One partition's commit as an OffsetCommit request gives it (a tuple: one is made per partition
    committed, on every commit)."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


class CommittedOffset(NamedTuple):
    """An offset as kept: what OffsetFetch answers (a tuple, made per partition committed)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_time: int


#: Called once with one error code per commit, in request order.
CommitWaiter = Callable[[list[ErrorCode]], None]


class GroupLog(Protocol):
    """Where the coordinator writes what Kafka writes to ``__consumer_offsets``."""

    def write_group(
        self,
        group: ClassicGroup,
        respond: Callable[[ErrorCode], None] | None = None,
        assignment: Mapping[str, bytes] | None = None,
    ) -> None:
        """The group's generation, protocol and members with their assignments (or its removal);
        ``assignment``: the members' assignments written instead of those they hold. ``respond``, when
        given, with NONE once the record is durable, or with the error of a write that failed."""

    def write_offsets(
        self,
        group_id: str,
        offsets: list[tuple[tuple[str, int], CommittedOffset | None]],
        respond: Callable[[ErrorCode], None],
    ) -> None:
        """Commits (None: a tombstone); ``respond`` with NONE once they are durable, or with the error
        of a write that failed (NOT_COORDINATOR: the coordinator moved to a replica without them)."""

    def write_txn_offsets(
        self,
        group_id: str,
        producer_id: int,
        offsets: list[tuple[tuple[str, int], CommittedOffset]],
        respond: Callable[[], None],
    ) -> None:
        """Offsets committed in ``producer_id``'s open transaction; ``respond`` once they are durable."""


class ModernGroups(Protocol):
    """The consumer group protocol's groups as the classic coordinator consults them (members of the
    classic protocol in a consumer group, offsets of a consumer group)."""

    def owns(self, group_id: str) -> bool: ...

    def classic_join(self, request: JoinRequest, respond: JoinWaiter) -> bool: ...

    def classic_sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        respond: SyncWaiter,
    ) -> bool: ...

    def classic_heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode | None: ...

    def classic_leave(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> list[tuple[str, str | None, ErrorCode]] | None: ...

    def commit_error(
        self, group_id: str, member_id: str, epoch: int, version: int, transactional: bool
    ) -> ErrorCode: ...

    def fetch_error(self, group_id: str, member_id: str | None, epoch: int) -> ErrorCode: ...

    def is_subscribed_to(self, group_id: str, topic: str) -> bool: ...

    def delete_group(self, group_id: str) -> ErrorCode: ...


class GroupCoordinator:
    """Every classic group of the cluster and their committed offsets (see the module docstring)."""

    def __init__(
        self,
        clock: Clock,
        settings: GroupSettings | None = None,
        seed: int | None = None,
        events: EventLog | None = None,
    ) -> None:
        self.clock = clock
        self.settings = settings or GroupSettings()
        self.groups: dict[str, ClassicGroup] = {}
        self.offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        #: Offsets committed in open transactions: group id -> producer id -> partition -> offset
        #: (Kafka's ``pendingTransactionalOffsets``), made the group's by a commit marker.
        self.pending_offsets: dict[str, dict[int, dict[tuple[str, int], CommittedOffset]]] = {}
        self.events = events
        self.log: GroupLog | None = None
        #: The groups of the consumer group protocol (KIP-848), once they are in use
        #: (:class:`controller.consumer_groups.coordinator.ConsumerGroupCoordinator`): the classic APIs
        #: of a group that is one of them go to it, as Kafka's ``GroupMetadataManager`` routes them.
        self.modern: ModernGroups | None = None
        self._random = random.Random(seed) if seed is not None else random.Random()
        self._timers: dict[tuple[str, ...], Timer] = {}
        #: When each member's session ends (a heartbeat moves it; the timer catches up when it fires).
        self._session_end: dict[tuple[str, ...], int] = {}
        self._seen: dict[str, tuple[str, int, str | None, tuple[str, ...]]] = {}
        #: Every group's pending members, in all (kept by the groups' counted sets).
        self._pending = [0]

    def _new_group(self, group_id: str) -> ClassicGroup:
        group = ClassicGroup(group_id)
        group.pending_members = _CountedSet(self._pending)
        return group

    @property
    def pending_members(self) -> int:
        """Member ids handed out with MEMBER_ID_REQUIRED and not joined with yet, in every group."""
        return self._pending[0]

    # ------------------------------------------------------------------------------------------- timers

    def _schedule(self, key: tuple[str, ...], delay_ms: int, action: Callable[[], None]) -> None:
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()

        def fire() -> None:
            if self._timers.get(key) is timer:
                del self._timers[key]
            action()

        timer = self.clock.call_later(delay_ms, fire, "group " + " ".join(key))
        self._timers[key] = timer

    def _cancel(self, key: tuple[str, ...]) -> None:
        self._session_end.pop(key, None)
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _reschedule_heartbeat(
        self, group: ClassicGroup, member: Member, timeout_ms: int | None = None
    ) -> None:
        """The member's session now ends ``timeout_ms`` (its session timeout) from now. The timer is moved
        only when the end comes sooner; otherwise the one set fires, finds the later end and waits on
        (a heartbeat costs no timer)."""
        self._session(
            group.group_id, member.member_id, member.session_timeout_ms if timeout_ms is None else timeout_ms
        )

    def _session(self, gid: str, mid: str, timeout_ms: int) -> None:
        key = ("heartbeat", gid, mid)
        end = self.clock.now() + timeout_ms
        self._session_end[key] = end
        timer = self._timers.get(key)
        if timer is not None and timer.when <= end:
            return
        self._schedule(key, timeout_ms, lambda: self._session_timer(gid, mid))

    def _session_timer(self, group_id: str, member_id: str) -> None:
        key = ("heartbeat", group_id, member_id)
        end = self._session_end.get(key)
        if end is not None and end > self.clock.now():
            self._schedule(key, end - self.clock.now(), lambda: self._session_timer(group_id, member_id))
            return
        self._session_end.pop(key, None)
        self._expire_heartbeat(group_id, member_id)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    # ------------------------------------------------------------------------------------------- events

    def _note(self, group_id: str, cause: str) -> None:
        """Records what changed in the group since last noted (state, generation, leader, members)."""
        if self.events is None:
            return
        group = self.groups.get(group_id)
        now = (
            (group.state.value, group.generation, group.leader, group.member_ids())
            if group is not None
            else (GroupState.DEAD.value, -1, None, ())
        )
        before = self._seen.get(group_id, (None, 0, None, ()))
        if now == before:
            return
        if group is None:
            self._seen.pop(group_id, None)
        else:
            self._seen[group_id] = now
        changes: list[tuple[str, Any, Any]] = []
        for name, old, new in zip(("state", "generation", "leader"), before, now, strict=False):
            if old != new:
                changes.append((name, old, new))
        if before[3] != now[3]:
            changes.append(("members", len(before[3]), len(now[3])))
        self.events.record("group", f"group {group_id}", changes, cause)

    # ------------------------------------------------------------------------------------------- join

    def _member_id(self, client_id: str, instance_id: str | None) -> str:
        return f"{instance_id if instance_id is not None else client_id}-{uuid.UUID(int=self._random.getrandbits(128), version=4)}"

    @staticmethod
    def _refused(group_id: str) -> ErrorCode:
        """Whether the coordinator (the broker) may take the group is the caller's check; here the id."""
        return ErrorCode.INVALID_GROUP_ID if not group_id else ErrorCode.NONE

    def join(self, request: JoinRequest, respond: JoinWaiter) -> None:
        """JoinGroup: ``respond`` is called when the join phase completes (or at once with an error)."""
        error = self._refused(request.group_id)
        if error:
            respond(JoinResult(error, request.member_id))
            return
        if self.modern is not None and self.modern.classic_join(request, respond):
            return
        s = self.settings
        if not s.min_session_timeout_ms <= request.session_timeout_ms <= s.max_session_timeout_ms:
            respond(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, request.member_id))
            return
        unknown = request.member_id == ""
        group = self.groups.get(request.group_id)
        if group is None:
            if not unknown:
                respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, request.member_id))
                return
            if len(self.groups) >= self.settings.max_groups:
                respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, ""))
                return
            group = self.groups[request.group_id] = self._new_group(request.group_id)
        if not self._accepts(group, request.member_id):
            group.remove(request.member_id)
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, ""))
        elif unknown:
            self._join_new_member(group, request, respond)
        else:
            self._join_existing_member(group, request, respond)
        self._note(group.group_id, f"join of {request.member_id or 'a new member'}")

    def _accepts(self, group: ClassicGroup, member_id: str) -> bool:
        limit = self.settings.max_size
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return True
        if len(group.members) < limit:
            return True  # fewer members than the limit: fewer awaiting a join too
        if group.is_in(GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            awaiting = sum(1 for m in group.members.values() if m.awaiting_join)
            return (member is not None and member.awaiting_join) or awaiting < limit
        return member_id in group.members or len(group.members) < limit

    def _join_new_member(self, group: ClassicGroup, request: JoinRequest, respond: JoinWaiter) -> None:
        if group.is_in(GroupState.DEAD):
            respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(request.protocol_type, request.protocols):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        new_id = self._member_id(request.client_id, request.instance_id)
        if request.instance_id is not None:
            existing = group.static_members.get(request.instance_id)
            if existing is not None:
                self._update_static_member(group, request, existing, new_id, respond)
            else:
                self._add_member(group, request, new_id, respond)
        elif request.require_known_member_id:
            if self._pending[0] >= self.settings.max_pending_members:
                respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, ""))
                return
            group.pending_members.add(new_id)
            self._session(group.group_id, new_id, request.session_timeout_ms)
            respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member(group, request, new_id, respond)

    def _join_existing_member(self, group: ClassicGroup, request: JoinRequest, respond: JoinWaiter) -> None:
        member_id = request.member_id
        if group.is_in(GroupState.DEAD):
            respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(request.protocol_type, request.protocols):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_members:
            if request.instance_id is not None:  # a pending member is never static (Kafka: an illegal state)
                respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                return
            self._add_member(group, request, member_id, respond)
            return
        try:
            group.validate_member(member_id, request.instance_id)
        except GroupError as refusal:
            respond(JoinResult(refusal.code, member_id))
            return
        member = group.members[member_id]
        reason = f"member {member_id} rejoins during {group.state.value}"
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._update_member(group, member, request, respond)
            self._rebalance_or_complete_join(group, reason)
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            if member.matches(request.protocols):
                # The member missed its JoinGroup answer: the current generation's again.
                respond(group.join_result(member_id))
            else:
                self._update_member(group, member, request, respond)
                self._rebalance_or_complete_join(group, f"member {member_id} changed its metadata")
        elif group.is_in(GroupState.STABLE):
            if member_id == group.leader or not member.matches(request.protocols):
                # The leader rejoining forces a rebalance (its view of the topics may have changed).
                self._update_member(group, member, request, respond)
                self._rebalance_or_complete_join(group, reason)
            else:
                result = group.join_result(member_id)
                respond(
                    JoinResult(
                        result.error,
                        member_id,
                        result.generation,
                        result.protocol_type,
                        result.protocol_name,
                        result.leader,
                    )
                )
        else:  # Empty: the member must reset its generation and join again
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _update_member(
        self, group: ClassicGroup, member: Member, request: JoinRequest, respond: JoinWaiter | None
    ) -> None:
        group.set_protocols(member, request.protocols)
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        if respond is not None:
            member.join_waiter = respond

    def _add_member(
        self, group: ClassicGroup, request: JoinRequest, member_id: str, respond: JoinWaiter
    ) -> None:
        member = Member(
            member_id,
            request.instance_id,
            request.client_id,
            request.client_host,
            request.rebalance_timeout_ms,
            request.session_timeout_ms,
            request.protocol_type,
            list(request.protocols),
            is_new=True,
        )
        if group.is_in(GroupState.PREPARING_REBALANCE) and group.previous_state is GroupState.EMPTY:
            group.new_member_added = True
        group.add(member, respond)
        # A parked JoinGroup cannot heartbeat: new members time out after the new-member join timeout.
        self._reschedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._rebalance_or_complete_join(group, f"member {member_id} added")

    def _update_static_member(
        self, group: ClassicGroup, request: JoinRequest, old_id: str, new_id: str, respond: JoinWaiter
    ) -> None:
        assert request.instance_id is not None
        leader_before = group.leader
        member = group.replace_static_member(request.instance_id, old_id, new_id)
        self._cancel(("heartbeat", group.group_id, old_id))
        self._reschedule_heartbeat(group, member)
        self._update_member(group, member, request, respond)
        if group.is_in(GroupState.STABLE):
            if group.protocol_name == group.select_protocol():
                # Same protocol: no rebalance; the member takes over the old id's place and assignment.
                member.join_waiter = None
                if self.log is not None:
                    self.log.write_group(group)
                if request.supports_skip_assignment:
                    is_leader = new_id == group.leader
                    result = group.join_result(new_id, skip_assignment=is_leader)
                    respond(
                        result
                        if is_leader
                        else JoinResult(
                            result.error,
                            new_id,
                            result.generation,
                            result.protocol_type,
                            result.protocol_name,
                            result.leader,
                        )
                    )
                else:
                    respond(
                        JoinResult(
                            ErrorCode.NONE,
                            new_id,
                            group.generation,
                            group.protocol_type,
                            group.protocol_name,
                            leader_before or "",
                        )
                    )
            else:
                self._rebalance_or_complete_join(
                    group, f"static member {request.instance_id} changed protocols"
                )
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"static member {request.instance_id} rejoined during a sync")
        else:
            self._maybe_complete_join(group)

    def _rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join(group)

    def _maybe_complete_join(self, group: ClassicGroup) -> None:
        if (
            group.is_in(GroupState.PREPARING_REBALANCE)
            and group.previous_state is not GroupState.EMPTY
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            self._propagate_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        group.pending_sync.clear()
        self._cancel(("sync", group.group_id))
        initial = group.is_in(GroupState.EMPTY)
        gid = group.group_id
        if initial:
            delay = self.settings.initial_rebalance_delay_ms
            remaining = max(group.max_rebalance_timeout_ms() - delay, 0)
            self._schedule(("join", gid), delay, lambda: self._initial_delay_over(gid, delay, remaining))
        group.transition(GroupState.PREPARING_REBALANCE)
        self._note(gid, reason)
        if not initial:
            if group.has_all_members_joined():
                self._complete_join(group)
            else:
                self._schedule(
                    ("join", gid), group.max_rebalance_timeout_ms(), lambda: self._join_timeout(gid)
                )

    def _initial_delay_over(self, group_id: str, delay: int, remaining: int) -> None:
        group = self.groups.get(group_id)
        if group is None:
            return
        if group.new_member_added and remaining:
            group.new_member_added = False
            new_delay = min(self.settings.initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self._schedule(
                ("join", group_id),
                new_delay,
                lambda: self._initial_delay_over(group_id, new_delay, new_remaining),
            )
        else:
            self._complete_join(group)
        self._note(group_id, "initial rebalance delay over")

    def _join_timeout(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None:
            self._complete_join(group)
            self._note(group_id, "rebalance timeout")

    def _complete_join(self, group: ClassicGroup) -> None:
        gid = group.group_id
        self._cancel(("join", gid))
        for member in group.not_yet_rejoined():
            if member.instance_id is None:  # static members keep their place until their session expires
                group.remove(member.member_id)
                self._cancel(("heartbeat", gid, member.member_id))
        if group.is_in(GroupState.DEAD):
            return
        if not group.elect_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout for sessions to drop the silent members.
            self._schedule(("join", gid), group.max_rebalance_timeout_ms(), lambda: self._join_timeout(gid))
            return
        group.init_next_generation()
        if group.is_in(GroupState.EMPTY):
            if self.log is not None:
                self.log.write_group(group)
            return
        for member in list(group.members.values()):
            waiter, member.join_waiter = member.join_waiter, None
            if waiter is not None:
                waiter(group.join_result(member.member_id))
            self._reschedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        generation = group.generation
        self._schedule(
            ("sync", gid),
            group.max_rebalance_timeout_ms(),
            lambda: self._expire_pending_sync(gid, generation),
        )

    def _expire_pending_sync(self, group_id: str, generation: int) -> None:
        group = self.groups.get(group_id)
        if group is None or group.generation != generation:
            return
        if group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and group.pending_sync:
            for member_id in sorted(group.pending_sync):
                group.remove(member_id)
                self._cancel(("heartbeat", group_id, member_id))
            self._prepare_rebalance(group, "members did not sync within the rebalance timeout")
            self._note(group_id, "sync timeout")

    def _expire_heartbeat(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return
        if member_id in group.pending_members:
            group.remove(member_id)
            if group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
                self._complete_join(group)
        elif member_id in group.members:
            member = group.members[member_id]
            if not member.has_satisfied_heartbeat():
                self._remove_member(group, member, f"member {member_id} session expired")
        self._note(group_id, f"session of {member_id} expired")

    def _remove_member(self, group: ClassicGroup, member: Member, reason: str) -> None:
        if member.join_waiter is not None:
            waiter, member.join_waiter = member.join_waiter, None
            waiter(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        group.remove(member.member_id)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._rebalance_or_complete_join(group, reason)
        elif group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            self._complete_join(group)

    # ------------------------------------------------------------------------------------------- sync

    def _propagate_error(self, group: ClassicGroup, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate(group, error)

    def _propagate(self, group: ClassicGroup, error: ErrorCode) -> None:
        ok = error is ErrorCode.NONE
        for member in group.members.values():
            waiter, member.sync_waiter = member.sync_waiter, None
            if waiter is not None:
                waiter(
                    SyncResult(
                        error,
                        group.protocol_type if ok else None,
                        group.protocol_name if ok else None,
                        member.assignment,
                    )
                )
                self._reschedule_heartbeat(group, member)

    def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Sequence[tuple[str, bytes]],
        respond: SyncWaiter,
    ) -> None:
        """SyncGroup: ``respond`` is called when the leader's assignment arrives (or at once)."""
        error = self._refused(group_id)
        if error:
            respond(SyncResult(error))
            return
        modern = self.modern
        if modern is not None and modern.classic_sync(
            group_id, generation, member_id, instance_id, protocol_type, protocol_name, respond
        ):
            return
        group = self.groups.get(group_id)
        if group is None:
            respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            return
        error = self._sync_error(group, generation, member_id, instance_id, protocol_type, protocol_name)
        if error:
            respond(SyncResult(error))
        elif group.is_in(GroupState.PREPARING_REBALANCE):
            respond(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            group.members[member_id].sync_waiter = respond
            group.pending_sync.discard(member_id)
            if member_id == group.leader:
                given = dict(assignments)
                assignment = {m: given.get(m, b"") for m in group.members}
                if self.log is None:
                    self._assigned(group, generation, member_id, assignment, ErrorCode.NONE)
                else:
                    # Kafka hands the assignment out once the group's record is committed.
                    self.log.write_group(
                        group,
                        lambda error: self._assigned(group, generation, member_id, assignment, error),
                        assignment,
                    )
        elif group.is_in(GroupState.STABLE):
            group.pending_sync.discard(member_id)
            member = group.members[member_id]
            respond(SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment))
        else:
            respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))

    def _assigned(
        self,
        group: ClassicGroup,
        generation: int,
        leader: str,
        assignment: Mapping[str, bytes],
        error: ErrorCode,
    ) -> None:
        """The leader's assignment is stored (or its write failed, ``error``): the members get it and the
        group is Stable, if it is still completing that generation's rebalance (Kafka's ``storeGroup``
        callback: a member that joined meanwhile started another; a group unloaded meanwhile is not this
        coordinator's). A write that failed hands out the error, and the group rebalances again."""
        if not group.loaded or self.groups.get(group.group_id) is not group or group.generation != generation:
            return
        if not group.is_in(GroupState.COMPLETING_REBALANCE):
            return
        if error:
            self._propagate_error(group, error)
            self._prepare_rebalance(group, f"error {error.name} when storing the assignment of {leader}")
            return
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
        self._propagate(group, ErrorCode.NONE)
        group.transition(GroupState.STABLE)
        self._note(group.group_id, f"assignment from leader {leader}")

    @staticmethod
    def _sync_error(
        group: ClassicGroup,
        generation: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> ErrorCode:
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(member_id, instance_id)
        except GroupError as refusal:
            return refusal.code
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return ErrorCode.NONE

    # ------------------------------------------------------------------------------------------- heartbeat, leave

    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        error = self._refused(group_id)
        if error:
            return error
        group = self.groups.get(group_id)
        if group is None:
            if self.modern is not None:
                modern_error = self.modern.classic_heartbeat(group_id, generation, member_id, instance_id)
                if modern_error is not None:
                    return modern_error
            return ErrorCode.UNKNOWN_MEMBER_ID
        state = group.state
        if state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        member = group.members.get(member_id)
        if member is None or instance_id is not None:
            try:
                group.validate_member(member_id, instance_id)
            except GroupError as refusal:
                return refusal.code
            member = group.members[member_id]
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        if state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._session(group_id, member_id, member.session_timeout_ms)
        if state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """LeaveGroup: the group's error, and one per (member id, instance id) in request order."""
        error = self._refused(group_id)
        if error:
            return error, []
        group = self.groups.get(group_id)
        if group is None:
            left = self.modern.classic_leave(group_id, members) if self.modern is not None else None
            if left is not None:
                return ErrorCode.NONE, [code for _, _, code in left]
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        if group.is_in(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        results: list[ErrorCode] = []
        left = []
        for member_id, instance_id in members:
            if member_id == "":
                # Removal by instance id (an administrator's), with no member id.
                current = group.static_members.get(instance_id) if instance_id is not None else None
                if current is None:
                    results.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                self._remove_current(group, current)
                left.append(current)
            elif member_id in group.pending_members:
                group.remove(member_id)
                self._cancel(("heartbeat", group_id, member_id))
                left.append(member_id)
            else:
                try:
                    group.validate_member(member_id, instance_id)
                except GroupError as refusal:
                    results.append(refusal.code)
                    continue
                self._remove_current(group, member_id)
                left.append(member_id)
            results.append(ErrorCode.NONE)
        if left:
            reason = f"members {', '.join(left)} left"
            if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self._rebalance_or_complete_join(group, reason)
            elif group.is_in(GroupState.PREPARING_REBALANCE):
                self._maybe_complete_join(group)
            self._note(group_id, reason)
        return ErrorCode.NONE, results

    def _remove_current(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members[member_id]
        self._cancel(("heartbeat", group.group_id, member_id))
        if member.join_waiter is not None:
            waiter, member.join_waiter = member.join_waiter, None
            waiter(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        group.remove(member_id)

    # ------------------------------------------------------------------------------------------- offsets

    def commit(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        commits: Sequence[OffsetCommit],
        version: int,
        respond: CommitWaiter,
    ) -> None:
        """OffsetCommit: ``respond`` gets one error per commit once the commits are durable."""
        error = self._refused(group_id)
        modern = self.modern if self.modern is not None and self.modern.owns(group_id) else None
        created = group_id not in self.groups and modern is None
        group: ClassicGroup | None = None
        #: A consumer group's check of each partition (a commit of a member's older epoch).
        per_partition: Callable[[str, int], ErrorCode] | None = None
        if not error:
            if modern is not None:
                checked = modern.commit_error(group_id, member_id, generation, version, False)
                if isinstance(checked, ErrorCode):
                    error = checked
                else:
                    per_partition = checked
            else:
                try:
                    group = self._commit_group(group_id, generation, member_id, instance_id, version)
                except GroupError as refusal:
                    error = refusal.code
        if error:
            respond([error] * len(commits))
            return
        if (
            group is not None
            and group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE)
            and member_id in group.members
        ):
            self._reschedule_heartbeat(group, group.members[member_id])
        now = self.clock.now()
        codes: list[ErrorCode] = []
        kept: list[tuple[tuple[str, int], CommittedOffset | None]] = []
        for topic, partition, offset, leader_epoch, metadata in commits:
            if per_partition is not None:
                refused = per_partition(topic, partition)
                if refused:
                    codes.append(refused)
                    continue
            if metadata is None:
                metadata = ""
            elif len(metadata) > OFFSET_METADATA_MAX_BYTES:
                codes.append(ErrorCode.OFFSET_METADATA_TOO_LARGE)
                continue
            codes.append(ErrorCode.NONE)
            kept.append(((topic, partition), CommittedOffset(offset, leader_epoch, metadata, now)))
        if created:  # a commit changes nothing else _note records (state, generation, leader, members)
            self._note(group_id, "offsets committed")
        if not kept:
            respond(codes)
            return
        if self.log is None:
            self.apply_offsets(group_id, kept)
            respond(codes)
            return

        def written(error: ErrorCode) -> None:
            # Kafka shows a commit (OffsetFetch) once its record is committed, and answers the error of
            # a write that failed (NOT_COORDINATOR when the coordinator moved first) without applying it.
            if error is ErrorCode.NONE:
                self.apply_offsets(group_id, kept)
                respond(codes)
            else:
                respond([error if code is ErrorCode.NONE else code for code in codes])

        self.log.write_offsets(group_id, kept, written)

    def txn_commit(
        self,
        group_id: str,
        producer_id: int,
        generation: int,
        member_id: str,
        instance_id: str | None,
        commits: Sequence[OffsetCommit],
        version: int,
        respond: CommitWaiter,
    ) -> None:
        """TxnOffsetCommit once the transaction coordinator knows the group is in the transaction: the
        group and member checked as Kafka's ``validateTransactionalOffsetCommit`` does (a simple group is
        made for a commit outside group management), then the offsets kept pending for ``producer_id``
        until its transaction ends (:meth:`end_transaction`); ``respond`` once they are durable."""
        error = self._refused(group_id)
        modern = self.modern if self.modern is not None and self.modern.owns(group_id) else None
        created = group_id not in self.groups and modern is None
        per_partition: Callable[[str, int], ErrorCode] | None = None
        if not error:
            if modern is not None:
                checked = modern.commit_error(group_id, member_id, generation, version, True)
                if isinstance(checked, ErrorCode):
                    error = checked
                else:
                    per_partition = checked
            else:
                try:
                    self._commit_group(
                        group_id, generation, member_id, instance_id, version, transactional=True
                    )
                except GroupError as refusal:
                    error = refusal.code
        if error:
            respond([error] * len(commits))
            return
        now = self.clock.now()
        codes: list[ErrorCode] = []
        kept: list[tuple[tuple[str, int], CommittedOffset]] = []
        for topic, partition, offset, leader_epoch, metadata in commits:
            if per_partition is not None:
                refused = per_partition(topic, partition)
                if refused:
                    codes.append(refused)
                    continue
            if metadata is None:
                metadata = ""
            elif len(metadata) > OFFSET_METADATA_MAX_BYTES:
                codes.append(ErrorCode.OFFSET_METADATA_TOO_LARGE)
                continue
            codes.append(ErrorCode.NONE)
            kept.append(((topic, partition), CommittedOffset(offset, leader_epoch, metadata, now)))
        if created:
            self._note(group_id, "transactional offsets committed")
        if not kept:
            respond(codes)
            return
        pending = self.pending_offsets.setdefault(group_id, {}).setdefault(producer_id, {})
        pending.update(kept)
        if self.log is not None:
            self.log.write_txn_offsets(group_id, producer_id, kept, lambda: respond(codes))
        else:
            respond(codes)

    def end_transaction(
        self, group_id: str, producer_id: int, commit: bool
    ) -> dict[tuple[str, int], CommittedOffset]:
        """The marker of ``producer_id``'s transaction reached the group's partition: its pending offsets
        become the group's (commit) or go (abort); returns those it made the group's."""
        by_producer = self.pending_offsets.get(group_id)
        if by_producer is None:
            return {}
        ended = by_producer.pop(producer_id, {})
        if not by_producer:
            del self.pending_offsets[group_id]
        if commit and ended:
            self.apply_offsets(group_id, list(ended.items()))
            return ended
        return {}

    def apply_offsets(
        self, group_id: str, offsets: Sequence[tuple[tuple[str, int], CommittedOffset | None]]
    ) -> None:
        kept = self.offsets.setdefault(group_id, {})
        for key, value in offsets:
            if value is None:
                kept.pop(key, None)
            else:
                kept[key] = value
        if not kept:
            del self.offsets[group_id]

    def _commit_group(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        version: int,
        transactional: bool = False,
    ) -> ClassicGroup:
        group = self.groups.get(group_id)
        if group is None:
            if generation < 0:
                # A commit outside group management (an admin, an assigned consumer): a simple group.
                if len(self.groups) >= self.settings.max_groups:
                    raise GroupError(ErrorCode.GROUP_MAX_SIZE_REACHED)
                group = self.groups[group_id] = self._new_group(group_id)
                return group
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION)
        if group.is_in(GroupState.DEAD):
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if generation < 0 and group.is_in(GroupState.EMPTY):
            return group
        if generation >= 0 or member_id or instance_id is not None:
            group.validate_member(member_id, instance_id)
            if generation != group.generation:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION)
        elif not transactional and not group.is_in(GroupState.EMPTY):
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        if not transactional and group.is_in(GroupState.COMPLETING_REBALANCE):
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)
        return group

    def fetch(
        self,
        group_id: str,
        partitions: Sequence[tuple[str, int]] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> tuple[ErrorCode, list[tuple[str, int, CommittedOffset | None]]]:
        """OffsetFetch: the group's error, then per partition its committed offset (None: none). ``None``
        partitions: every committed one, in topic and partition order. ``member_id`` and ``member_epoch``
        (v9+) are checked against a consumer group's member (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID)."""
        error = self._refused(group_id)
        if not error and self.modern is not None and self.modern.owns(group_id):
            error = self.modern.fetch_error(group_id, member_id, member_epoch)
        if error:
            return error, []
        kept = self.offsets.get(group_id, {})
        if partitions is None:
            return ErrorCode.NONE, [(t, p, kept[(t, p)]) for t, p in sorted(kept)]
        return ErrorCode.NONE, [(t, p, kept.get((t, p))) for t, p in partitions]

    def delete_offsets(
        self, group_id: str, partitions: Sequence[tuple[str, int]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """OffsetDelete: not for partitions of topics a non-empty consumer group subscribes to."""
        error = self._refused(group_id)
        if error:
            return error, []
        modern = self.modern if self.modern is not None and self.modern.owns(group_id) else None
        group = self.groups.get(group_id)
        if modern is not None:
            subscribed: Callable[[str], bool] = lambda topic: modern.is_subscribed_to(group_id, topic)  # noqa: E731
        elif group is None or group.is_in(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        elif group.members and group.protocol_type != "consumer":
            return ErrorCode.NON_EMPTY_GROUP, []
        else:
            subscribed = group.is_subscribed_to
        codes = []
        removed: list[tuple[tuple[str, int], CommittedOffset | None]] = []
        kept = self.offsets.get(group_id, {})
        for topic, partition in partitions:
            if subscribed(topic):
                codes.append(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
                continue
            codes.append(ErrorCode.NONE)
            if (topic, partition) in kept:
                removed.append(((topic, partition), None))
        if removed:
            self.apply_offsets(group_id, removed)
            if self.log is not None:
                self.log.write_offsets(group_id, removed, _ignored)
        return ErrorCode.NONE, codes

    # ------------------------------------------------------------------------------------------- admin

    def list_groups(self, states: Sequence[str] = (), types: Sequence[str] = ()) -> list[ClassicGroup]:
        """The groups, in id order; ``states``/``types`` filter case-insensitively (empty: all)."""
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        if wanted_types and "classic" not in wanted_types:
            return []
        return [
            g
            for gid, g in sorted(self.groups.items())
            if not wanted_states or g.state.value.lower() in wanted_states
        ]

    def delete_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups for one group: only an empty group, with its offsets."""
        error = self._refused(group_id)
        if error:
            return error
        if self.modern is not None and self.modern.owns(group_id):
            error = self.modern.delete_group(group_id)
            if not error:
                self._delete_offsets_of(group_id)
            return error
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND
        if not group.is_in(GroupState.EMPTY):
            return ErrorCode.NON_EMPTY_GROUP
        group.transition(GroupState.DEAD)
        group.pending_members.clear()
        del self.groups[group_id]
        for key in [k for k in self._timers if k[1] == group_id]:
            self._cancel(key)
        removed: list[tuple[tuple[str, int], CommittedOffset | None]] = [
            (key, None) for key in sorted(self.offsets.pop(group_id, {}))
        ]
        if self.log is not None:
            self.log.write_group(group)
            if removed:
                self.log.write_offsets(group_id, removed, _ignored)
        self._note(group_id, "group deleted")
        return ErrorCode.NONE

    def _delete_offsets_of(self, group_id: str) -> None:
        removed: list[tuple[tuple[str, int], CommittedOffset | None]] = [
            (key, None) for key in sorted(self.offsets.pop(group_id, {}))
        ]
        if removed and self.log is not None:
            self.log.write_offsets(group_id, removed, lambda: None)

    # ------------------------------------------------------------------------------------------- moves

    def unload(self, group_id: str, error: ErrorCode) -> None:
        """The coordinator no longer holds the group: parked requests are answered ``error`` and its timers
        stop (Kafka fails the futures of an unloaded shard)."""
        group = self.groups.get(group_id)
        for key in [k for k in self._timers if k[1] == group_id]:
            self._cancel(key)
        if group is None:
            return
        group.loaded = False
        for member in group.members.values():
            if member.join_waiter is not None:
                waiter, member.join_waiter = member.join_waiter, None
                waiter(JoinResult(error, member.member_id))
            if member.sync_waiter is not None:
                waiter2, member.sync_waiter = member.sync_waiter, None
                waiter2(SyncResult(error))

    def load(self, group_id: str, snapshot: dict[str, Any] | None) -> None:
        """The group as a coordinator that takes over reads it from the log: the last written generation,
        Stable with its members (their sessions restart) or Empty; None: no group."""
        gone = self.groups.pop(group_id, None)
        if gone is not None:
            gone.pending_members.clear()
        if snapshot is None:
            self._note(group_id, "coordinator loaded the group: none")
            return
        group = self._new_group(group_id)
        group.generation = snapshot["generation"]
        group.protocol_type = snapshot["protocol_type"]
        group.protocol_name = snapshot["protocol_name"]
        for mid, iid, cid, host, rebalance_ms, session_ms, ptype, protocols, assignment in snapshot[
            "members"
        ]:
            member = Member(mid, iid, cid, host, rebalance_ms, session_ms, ptype, list(protocols), assignment)
            group.add(member)
        group.leader = snapshot["leader"] if snapshot["leader"] in group.members else group.leader
        if group.members:
            group.state = GroupState.STABLE
            group.previous_state = GroupState.COMPLETING_REBALANCE
            for member in group.members.values():
                self._reschedule_heartbeat(group, member)
        self.groups[group_id] = group
        self._note(group_id, "coordinator loaded the group")


def _ignored(error: ErrorCode) -> None:
    """A tombstone's write needs no answer (applied when it was asked for)."""
