"""One classic consumer group: its state, generation, members and chosen protocol (Kafka's ``ClassicGroup``).

Plain state and the rules that read it; what changes it over time (joins, timers, syncs) is
:class:`controller.groups.coordinator.GroupCoordinator`, as Kafka's ``GroupMetadataManager`` drives its
``ClassicGroup`` objects.

States and the ones each may be entered from (Kafka's ``ClassicGroupState``)::

    Empty               <- PreparingRebalance
    PreparingRebalance  <- Stable, CompletingRebalance, Empty
    CompletingRebalance <- PreparingRebalance
    Stable              <- CompletingRebalance
    Dead                <- every state
"""

from __future__ import annotations

import collections
import enum
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protocol.codes import ErrorCode

__all__ = ["ClassicGroup", "GroupError", "GroupState", "JoinResult", "Member", "SyncResult"]


class GroupState(enum.Enum):
    """A classic group's state, named as Kafka shows it (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS = {
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY},
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.DEAD: set(GroupState),
}


class GroupError(Exception):
    """A request refused with ``code`` (what Kafka throws as an ``ApiException``)."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


@dataclass(frozen=True)
class JoinResult:
    """The JoinGroup answer for one member; ``members`` (id, instance id, metadata) only for the leader."""

    error: ErrorCode
    member_id: str
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True)
class SyncResult:
    """The SyncGroup answer for one member."""

    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


JoinWaiter = Callable[[JoinResult], None]
SyncWaiter = Callable[[SyncResult], None]


@dataclass(eq=False)
class Member:
    """One member (Kafka's ``ClassicGroupMember``); ``protocols`` in the member's order of preference."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    sync_waiter: SyncWaiter | None = None
    #: Joined but not yet through a completed join phase: it may time out while it waits.
    is_new: bool = False
    #: What answers its JoinGroup (:attr:`join_waiter`).
    _join_waiter: JoinWaiter | None = field(default=None, repr=False)
    #: The count of members awaiting a join answer of the group it is in (None: in none).
    _awaiting: list[int] | None = field(default=None, repr=False)

    @property
    def join_waiter(self) -> JoinWaiter | None:
        """What answers the member's JoinGroup while it waits for the join phase (None: it does not)."""
        return self._join_waiter

    @join_waiter.setter
    def join_waiter(self, waiter: JoinWaiter | None) -> None:
        tally = self._awaiting
        if tally is not None and (waiter is None) is not (self._join_waiter is None):
            tally[0] += 1 if waiter is not None else -1
        self._join_waiter = waiter

    @property
    def awaiting_join(self) -> bool:
        return self._join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def metadata(self, protocol: str | None) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        return b""

    def matches(self, protocols: Sequence[tuple[str, bytes]]) -> bool:
        return list(protocols) == self.protocols

    def vote(self, candidates: set[str]) -> str:
        """The first protocol of the member's own order that every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """Whether its session is kept without a heartbeat: a member waiting on a rebalance is (Kafka)."""
        if self.is_new:
            return False
        return self.awaiting_join or self.awaiting_sync


@dataclass(eq=False)
class ClassicGroup:
    """A classic group's state (see the module docstring)."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    #: Members by id, in the order they joined (the next leader is the first left).
    members: dict[str, Member] = field(default_factory=dict)
    #: Ids handed out with MEMBER_ID_REQUIRED, not yet joined with.
    pending_members: set[str] = field(default_factory=set)
    #: Members of the current generation that have not sent SyncGroup yet.
    pending_sync: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)
    #: A member joined during the initial rebalance delay: the delay is extended.
    new_member_added: bool = False
    #: False once the coordinator no longer holds the group (unloaded by a coordinator move): what was
    #: pending for it (a write of its assignment) no longer acts on it.
    loaded: bool = True
    #: How many members support each protocol name (Kafka's ``ClassicGroup.supportedProtocols``): whether a
    #: joining member's protocols fit the group is then not a walk over every member.
    supported: collections.Counter[str] = field(default_factory=collections.Counter, repr=False)
    #: How many members await a join answer (Kafka's ``numMembersAwaitingJoinResponse``), kept by the
    #: members' :attr:`Member.join_waiter`: whether all have rejoined is then not a walk over every member.
    awaiting: list[int] = field(default_factory=lambda: [0], repr=False)
    #: The members' ids in order, made when asked after they change (:meth:`member_ids`).
    _ids: tuple[str, ...] | None = field(default=None, repr=False)

    # ----------------------------------------------------------------------------------- state

    def transition(self, to: GroupState) -> None:
        if self.state not in _VALID_PREVIOUS[to]:
            raise RuntimeError(f"group {self.group_id}: {self.state.value} -> {to.value} is not a transition")
        self.previous_state, self.state = self.state, to

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    @property
    def is_empty(self) -> bool:
        return not self.members

    # ----------------------------------------------------------------------------------- members

    def member_ids(self) -> tuple[str, ...]:
        """The members' ids in the order they joined (the same tuple while they do not change)."""
        ids = self._ids
        if ids is None:
            ids = self._ids = tuple(self.members)
        return ids

    def _attach(self, member: Member) -> None:
        member._awaiting = self.awaiting
        if member._join_waiter is not None:
            self.awaiting[0] += 1

    def _detach(self, member: Member) -> None:
        if member._join_waiter is not None:
            self.awaiting[0] -= 1
        member._awaiting = None

    def add(self, member: Member, join_waiter: JoinWaiter | None = None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        known = self.members.get(member.member_id)
        if known is None:
            self.supported.update({name for name, _ in member.protocols})
            self._ids = None
        if known is not member:
            if known is not None:
                self._detach(known)
            self._attach(member)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        member.join_waiter = join_waiter
        self.pending_members.discard(member.member_id)
        if self.leader is None:
            self.leader = member.member_id

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported.subtract({name for name, _ in member.protocols})
            self._detach(member)
            self._ids = None
        if member is not None and member.instance_id is not None:
            self.static_members.pop(member.instance_id, None)
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync.discard(member_id)

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """The static member ``instance_id`` now has id ``new_id``; its waiters are told it was fenced."""
        member = self.members.pop(old_id)
        if member.join_waiter is not None:
            member.join_waiter(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
            member.join_waiter = None
        if member.sync_waiter is not None:
            member.sync_waiter(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
            member.sync_waiter = None
        member.member_id = new_id
        self.members[new_id] = member
        self._ids = None
        if self.leader == old_id:
            self.leader = new_id
        self.static_members[instance_id] = new_id
        self.pending_sync.discard(old_id)
        return member

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and self.awaiting[0] == len(self.members)

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        """UNKNOWN_MEMBER_ID, or FENCED_INSTANCE_ID for a static member known under another id."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID)
        if member_id not in self.members:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def elect_joined_leader(self) -> bool:
        """Kafka's ``maybeElectNewJoinedLeader``: a leader that did not rejoin hands over to one that did."""
        if self.leader is None:
            return False
        if self.members[self.leader].awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader = member.member_id
                return True
        return False

    # ----------------------------------------------------------------------------------- protocols

    def set_protocols(self, member: Member, protocols: Sequence[tuple[str, bytes]]) -> None:
        """A member's protocols change (it rejoins with new ones)."""
        if self.members.get(member.member_id) is member:
            before = {name for name, _ in member.protocols}
            after = {name for name, _ in protocols}
            if before != after:
                self.supported.subtract(before)
                self.supported.update(after)
        member.protocols = list(protocols)

    def supports_protocols(self, protocol_type: str, protocols: Sequence[tuple[str, bytes]]) -> bool:
        names = {name for name, _ in protocols}
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        if self.protocol_type != protocol_type:
            return False
        supported, count = self.supported, len(self.members)
        return any(supported[name] == count for name in names)

    def candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        common = {name for name, _ in members[0].protocols}
        for m in members[1:]:
            common &= {name for name, _ in m.protocols}
        return common

    def select_protocol(self) -> str:
        """The protocol every member supports with the most votes (each member votes for the first of its
        own list that all support); a tie goes to the protocol voted for first, in join order."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            name = member.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        best = max(votes.values())
        return next(name for name, count in votes.items() if count == best)

    def init_next_generation(self) -> None:
        self.generation += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(GroupState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition(GroupState.EMPTY)
        self.pending_sync.clear()

    def current_members(self) -> tuple[tuple[str, str | None, bytes], ...]:
        """What the leader receives: every member with its metadata for the chosen protocol."""
        return tuple(
            (m.member_id, m.instance_id, m.metadata(self.protocol_name)) for m in self.members.values()
        )

    def join_result(self, member_id: str, skip_assignment: bool = False) -> JoinResult:
        return JoinResult(
            ErrorCode.NONE,
            member_id,
            self.generation,
            self.protocol_type,
            self.protocol_name,
            self.leader or "",
            self.current_members() if member_id == self.leader else (),
            skip_assignment,
        )

    # ----------------------------------------------------------------------------------- subscriptions

    def subscribed_topics(self) -> set[str] | None:
        """The topics the members subscribe to, read from their consumer-protocol metadata; None when the
        group is not a consumer group or some metadata cannot be read."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            read = consumer_subscription(member.metadata(self.protocol_name))
            if read is None:
                return None
            topics |= read
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        if not self.members:
            return False
        topics = self.subscribed_topics()
        return True if topics is None else topic in topics

    def snapshot(self, assignment: Mapping[str, bytes] | None = None) -> dict[str, Any]:
        """The group as Kafka's GroupMetadata record keeps it: what a coordinator loads after a move
        (``assignment``: the members' assignments written instead of those they hold)."""
        return {
            "generation": self.generation,
            "protocol_type": self.protocol_type,
            "protocol_name": self.protocol_name,
            "leader": self.leader,
            "members": [
                (
                    m.member_id,
                    m.instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.protocol_type,
                    list(m.protocols),
                    m.assignment if assignment is None else assignment.get(m.member_id, b""),
                )
                for m in self.members.values()
            ],
        }


def consumer_subscription(metadata: bytes) -> set[str] | None:
    """The topics of a ``ConsumerProtocolSubscription`` (every version starts with an int16 version, then
    the topics as an int32 count of int16-length strings); None when it cannot be read."""
    try:
        offset = 2
        (count,) = struct.unpack_from(">i", metadata, offset)
        offset += 4
        if count < 0 or count > len(metadata):
            return None
        topics = set()
        for _ in range(count):
            (length,) = struct.unpack_from(">h", metadata, offset)
            offset += 2
            if length < 0 or offset + length > len(metadata):
                return None
            topics.add(metadata[offset : offset + length].decode())
            offset += length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
