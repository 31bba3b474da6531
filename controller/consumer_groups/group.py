"""One group of the consumer group protocol (Kafka's ``ConsumerGroup`` and ``ConsumerGroupMember``), its
records, and how a member reconciles towards its target assignment (Kafka's ``CurrentAssignmentBuilder``).

Plain state and the rules that read it; what changes it over time (heartbeats, timers) is
:class:`controller.consumer_groups.coordinator.ConsumerGroupCoordinator`. The state changes only by
records, as in Kafka: the coordinator makes the records a change needs, appends them to
``__consumer_offsets`` and replays them here (:meth:`ConsumerGroup.replay`); a coordinator that takes
the group over after a move replays the same records from its log. The records are Kafka's (their kinds
are the names of Kafka's record types, their values what those records hold):

=========================================  ======================  ==========================================
kind                                       key                     value (None: a tombstone)
=========================================  ======================  ==========================================
``ConsumerGroupMetadata``                  the group               (group epoch, metadata hash)
``ConsumerGroupMemberMetadata``            a member                its :class:`Subscription`
``ConsumerGroupTargetAssignmentMetadata``  the group               (target assignment epoch, its time)
``ConsumerGroupTargetAssignmentMember``    a member                its target :data:`Assignment`
``ConsumerGroupCurrentMemberAssignment``   a member                its :class:`Current` assignment
``ConsumerGroupRegularExpression``         a regular expression    its :class:`Resolved` topics
=========================================  ======================  ==========================================

A member's epochs and states (Kafka's ``MemberState``): Stable (it owns its assignment of its epoch),
UnrevokedPartitions (it must give up ``pending_revocation`` before it gets the next epoch),
UnreleasedPartitions (some partitions of its target are still owned by others). A group's state
(Kafka's ``ConsumerGroupState``) follows from them: Empty (no members), Assigning (the group epoch is
ahead of the target assignment's), Reconciling (some member is not at the target epoch yet), Stable.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "EMPTY",
    "LEAVE_EPOCH",
    "STATIC_LEAVE_EPOCH",
    "Assignment",
    "ClassicMetadata",
    "ConsumerGroup",
    "Current",
    "GroupState",
    "Member",
    "MemberState",
    "Resolved",
    "Subscription",
    "assignment_of",
    "reconcile",
]

#: A member's epoch when it leaves (-1), and a static member's that will come back (-2).
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

#: Partitions by topic id: ``{topic_id: frozenset(partitions)}``, never with an empty set.
Assignment = Mapping[uuid.UUID, frozenset[int]]
EMPTY: Assignment = {}


def assignment_of(pairs: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> dict[uuid.UUID, frozenset[int]]:
    """An :data:`Assignment` from (topic id, partitions) pairs (empty sets left out, repeats merged)."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, partitions in pairs:
        merged = out.get(topic_id, frozenset()) | frozenset(partitions)
        if merged:
            out[topic_id] = merged
    return out


class MemberState(enum.IntEnum):
    """A member's reconciliation state, with Kafka's record values."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @property
    def shown(self) -> str:
        return {0: "stable", 1: "unrevoked_partitions", 2: "unreleased_partitions"}.get(self.value, "unknown")


class GroupState(enum.Enum):
    """A group's state, named as Kafka shows it (ListGroups, ConsumerGroupDescribe)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class ClassicMetadata:
    """What a member of the classic protocol in a consumer group keeps (Kafka's ``ClassicMemberMetadata``):
    its session timeout and the protocols of its JoinGroup, in its order of preference."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class Subscription:
    """A member's ``ConsumerGroupMemberMetadata`` record: who it is and what it subscribes to."""

    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    topic_names: tuple[str, ...] = ()
    topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic: ClassicMetadata | None = None


@dataclass(frozen=True)
class Current:
    """A member's ``ConsumerGroupCurrentMemberAssignment`` record: its epochs, state and partitions."""

    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    #: (topic id, partition) -> the member epoch it was assigned at, for every partition it owns (Kafka
    #: 4.3's ``AssignmentEpochs``): a commit of an older member epoch is taken for a partition the member
    #: has owned since then.
    epochs: Mapping[tuple[uuid.UUID, int], int] = field(default_factory=dict)

    def assignment_epoch(self, topic_id: uuid.UUID, partition: int) -> int | None:
        """The epoch the partition was assigned to the member at, None when it does not own it."""
        if partition in self.assigned.get(topic_id, ()) or partition in self.pending_revocation.get(
            topic_id, ()
        ):
            return self.epochs.get((topic_id, partition), self.member_epoch)
        return None


@dataclass(frozen=True)
class Resolved:
    """A ``ConsumerGroupRegularExpression`` record: the topics a regular expression matched, as of the
    cluster's topic changes ``version``, at ``timestamp``."""

    topics: frozenset[str]
    version: int
    timestamp: int


@dataclass(frozen=True)
class Member:
    """One member: its id, its subscription and its current assignment."""

    member_id: str
    subscription: Subscription = Subscription()
    current: Current = Current()

    @property
    def instance_id(self) -> str | None:
        return self.subscription.instance_id

    @property
    def member_epoch(self) -> int:
        return self.current.member_epoch

    @property
    def state(self) -> MemberState:
        return self.current.state

    @property
    def assigned(self) -> Assignment:
        return self.current.assigned

    @property
    def uses_classic_protocol(self) -> bool:
        return self.subscription.classic is not None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.current.state is MemberState.STABLE and self.current.member_epoch == epoch


class ConsumerGroup:
    """A group's state (see the module docstring)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        #: The signature of the subscribed topics' metadata the group epoch was last bumped for (Kafka
        #: 4.1's metadata hash).
        self.metadata_hash = 0
        #: The epoch of the target assignment (-1 once its record is a tombstone).
        self.assignment_epoch = 0
        #: When the target assignment was last computed (clock ms; 0: never).
        self.assignment_timestamp = 0
        self.members: dict[str, Member] = {}
        #: instance id -> member id of the static members.
        self.static_members: dict[str, str] = {}
        #: member id -> its target assignment.
        self.target: dict[str, Assignment] = {}
        #: (topic id, partition) -> the epoch of the member that owns it (Kafka's currentPartitionEpoch).
        self.partition_epochs: dict[tuple[uuid.UUID, int], int] = {}
        #: regex -> what it matched.
        self.resolved_regexes: dict[str, Resolved] = {}
        #: The cluster's topic-change position the subscription metadata was computed at (-1: never).
        self.metadata_position = -1
        #: When the regular expressions were last resolved (clock ms).
        self.regex_refreshed_at = 0
        #: regex -> how many members subscribe with it.
        self.regex_subscribers: dict[str, int] = {}

    # ------------------------------------------------------------------------------------- reading

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        epoch = self.assignment_epoch
        if any(not m.is_reconciled_to(epoch) for m in self.members.values()):
            return GroupState.RECONCILING
        return GroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    def static_member(self, instance_id: str | None) -> Member | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def target_of(self, member_id: str, instance_id: str | None = None) -> Assignment:
        """The member's target assignment; a static member replacing another takes the other's."""
        if instance_id is not None:
            previous = self.static_members.get(instance_id)
            if previous is not None:
                return self.target.get(previous, EMPTY)
            return EMPTY
        return self.target.get(member_id, EMPTY)

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member that owns the partition now, or -1 when nobody does."""
        return self.partition_epochs.get((topic_id, partition), -1)

    def subscribed_topic_names(self) -> dict[str, int]:
        """Topic name -> how many members subscribe to it (by name, or through a resolved regex)."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            sub = member.subscription
            for name in sub.topic_names:
                counts[name] = counts.get(name, 0) + 1
            if sub.topic_regex:
                resolved = self.resolved_regexes.get(sub.topic_regex)
                if resolved is not None:
                    for name in resolved.topics:
                        counts[name] = counts.get(name, 0) + 1
        return counts

    def subscribed_topics_of(self, member: Member) -> set[str]:
        sub = member.subscription
        topics = set(sub.topic_names)
        if sub.topic_regex:
            resolved = self.resolved_regexes.get(sub.topic_regex)
            if resolved is not None:
                topics |= resolved.topics
        return topics

    def preferred_assignor(self) -> str | None:
        """The server assignor most members ask for (Kafka's ``preferredServerAssignor``), if any does."""
        counts: dict[str, int] = {}
        for member in self.members.values():
            name = member.subscription.server_assignor
            if name is not None:
                counts[name] = counts.get(name, 0) + 1
        if not counts:
            return None
        best = max(counts.values())
        return min(name for name, count in counts.items() if count == best)

    def classic_members(self) -> int:
        return sum(1 for m in self.members.values() if m.uses_classic_protocol)

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Whether a member of the classic protocol with these protocols may join (Kafka's rule: the
        ``consumer`` protocol type, and a protocol every classic member supports)."""
        if protocol_type != "consumer":
            return False
        if not self.members:
            return bool(names)
        classic = [m for m in self.members.values() if m.subscription.classic is not None]
        if not classic:
            return bool(names)
        for name in names:
            if all(any(p == name for p, _ in m.subscription.classic.protocols) for m in classic):  # type: ignore[union-attr]
                return True
        return False

    def waiting_on_unreleased_partition(self, member: Member) -> bool:
        """Whether a member in UnreleasedPartitions still waits for a partition another member owns."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, partitions in self.target.get(member.member_id, EMPTY).items():
            owned = member.assigned.get(topic_id, frozenset())
            for p in partitions:
                if p not in owned and self.partition_epoch(topic_id, p) != -1:
                    return True
        return False

    # ------------------------------------------------------------------------------------- records

    def replay(self, kind: str, value: Any) -> None:
        """Applies one record of this group (see the module docstring)."""
        if kind == "ConsumerGroupMetadata":
            if value is not None:
                self.group_epoch, self.metadata_hash = value
        elif kind == "ConsumerGroupMemberMetadata":
            member_id, subscription = value
            if subscription is None:
                self._remove_member(member_id)
            else:
                old = self.members.get(member_id) or Member(member_id)
                self._update_member(replace(old, subscription=subscription))
        elif kind == "ConsumerGroupCurrentMemberAssignment":
            member_id, current = value
            old = self.members.get(member_id)
            if current is None:
                if old is not None:
                    self._update_member(replace(old, current=Current(LEAVE_EPOCH, LEAVE_EPOCH)))
            else:
                self._update_member(replace(old or Member(member_id), current=current))
        elif kind == "ConsumerGroupTargetAssignmentMember":
            member_id, assignment = value
            if assignment is None:
                self.target.pop(member_id, None)
            else:
                self.target[member_id] = assignment
        elif kind == "ConsumerGroupTargetAssignmentMetadata":
            if value is None:
                self.assignment_epoch = -1
            else:
                self.assignment_epoch, self.assignment_timestamp = value
        elif kind == "ConsumerGroupRegularExpression":
            regex, resolved = value
            if resolved is None:
                self.resolved_regexes.pop(regex, None)
            else:
                self.resolved_regexes[regex] = resolved
        else:
            raise ValueError(f"not a consumer group record: {kind}")

    def _count_regex(self, member: Member, delta: int) -> None:
        regex = member.subscription.topic_regex
        if regex:
            count = self.regex_subscribers.get(regex, 0) + delta
            if count > 0:
                self.regex_subscribers[regex] = count
            else:
                self.regex_subscribers.pop(regex, None)

    def _update_member(self, new: Member) -> None:
        old = self.members.get(new.member_id)
        if old is not None:
            self._count_regex(old, -1)
            self._drop_epochs(old)
            if old.instance_id is not None and old.instance_id != new.instance_id:
                if self.static_members.get(old.instance_id) == old.member_id:
                    del self.static_members[old.instance_id]
        self.members[new.member_id] = new
        self._count_regex(new, 1)
        epoch = new.current.member_epoch
        for assignment in (new.current.assigned, new.current.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    self.partition_epochs[(topic_id, p)] = epoch
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id

    def _drop_epochs(self, member: Member) -> None:
        epoch = member.current.member_epoch
        for assignment in (member.current.assigned, member.current.pending_revocation):
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    if self.partition_epochs.get((topic_id, p)) == epoch:
                        del self.partition_epochs[(topic_id, p)]

    def _remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self._count_regex(old, -1)
        self._drop_epochs(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self.static_members[old.instance_id]

    def tombstones(self, replaced: tuple[str, str] | None = None) -> list[tuple[str, Any]]:
        """The records that delete the group (Kafka's ``createGroupTombstoneRecords``); ``replaced``: a
        member id (old, new) whose tombstones are written under the new id (a static member replaced as
        the group is converted)."""

        def mid(member_id: str) -> str:
            return replaced[1] if replaced is not None and member_id == replaced[0] else member_id

        records: list[tuple[str, Any]] = []
        records += [("ConsumerGroupCurrentMemberAssignment", (mid(m), None)) for m in self.members]
        records += [("ConsumerGroupTargetAssignmentMember", (mid(m), None)) for m in self.members]
        records.append(("ConsumerGroupTargetAssignmentMetadata", None))
        records += [("ConsumerGroupMemberMetadata", (mid(m), None)) for m in self.members]
        records += [("ConsumerGroupRegularExpression", (regex, None)) for regex in self.resolved_regexes]
        records.append(("ConsumerGroupMetadata", None))
        return records

    def creation_records(self) -> list[tuple[str, Any]]:
        """The records that make the group as it is (Kafka's ``createConsumerGroupRecords``)."""
        records: list[tuple[str, Any]] = []
        records += [
            ("ConsumerGroupMemberMetadata", (m.member_id, m.subscription)) for m in self.members.values()
        ]
        records.append(("ConsumerGroupMetadata", (self.group_epoch, self.metadata_hash)))
        records += [
            ("ConsumerGroupTargetAssignmentMember", (m, self.target.get(m, EMPTY))) for m in self.members
        ]
        records.append(
            ("ConsumerGroupTargetAssignmentMetadata", (self.group_epoch, self.assignment_timestamp))
        )
        records += [
            ("ConsumerGroupCurrentMemberAssignment", (m.member_id, m.current)) for m in self.members.values()
        ]
        return records


def reconcile(
    member: Member,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Any,
    owned: list[tuple[uuid.UUID, list[int]]] | None,
) -> Current:
    """The member's next current assignment towards the target (Kafka's ``CurrentAssignmentBuilder``):
    partitions it must give up are revoked first (it stays at its epoch, UnrevokedPartitions, until its
    heartbeat no longer lists them in ``owned``); then it moves to the target epoch with the target's
    partitions that nobody else owns (``partition_epoch(topic_id, partition) == -1``), UnreleasedPartitions
    while some are still owned by others. ``owned``: the partitions the member says it owns (None: it did
    not say)."""
    current = member.current
    state = current.state
    if state is MemberState.STABLE:
        if current.member_epoch != target_epoch:
            return _next(member, current.member_epoch, target_epoch, target, partition_epoch, owned)
        return current
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, current.pending_revocation):
            return current
        return _next(member, current.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, current.member_epoch, target_epoch, target, partition_epoch, owned)
    # UNKNOWN: the member must start over (Kafka fences it unless it owns nothing).
    if owned is None or owned:
        raise FencedMember(
            "The consumer group member is in a unknown state. The member must abandon all its partitions "
            "and rejoin."
        )
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned)


class FencedMember(Exception):
    """The member must rejoin with epoch 0 (FENCED_MEMBER_EPOCH)."""


def _owns_any(owned: list[tuple[uuid.UUID, list[int]]] | None, partitions: Assignment) -> bool:
    if owned is None:
        return True
    for topic_id, parts in owned:
        pending = partitions.get(topic_id)
        if pending and any(p in pending for p in parts):
            return True
    return False


def _next(
    member: Member,
    member_epoch: int,
    target_epoch: int,
    target: Assignment,
    partition_epoch: Any,
    owned: list[tuple[uuid.UUID, list[int]]] | None,
) -> Current:
    current = member.current
    unreleased = False
    assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoke: dict[uuid.UUID, frozenset[int]] = {}
    pending: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id in {*target, *current.assigned}:
        wanted = target.get(topic_id, frozenset())
        had = current.assigned.get(topic_id, frozenset())
        kept = had & wanted
        gone = had - kept
        new = wanted - kept
        free = frozenset(p for p in new if partition_epoch(topic_id, p) == -1)
        if len(free) != len(new):
            unreleased = True
        if kept:
            assigned[topic_id] = kept
        if gone:
            revoke[topic_id] = gone
        if free:
            pending[topic_id] = free
    previous = current.member_epoch  # Kafka's updateMemberEpoch: the previous epoch is the one it had
    old_epochs = current.epochs

    def epochs_of(*assignments: Assignment, new_at: int | None = None) -> dict[tuple[uuid.UUID, int], int]:
        out = {}
        for assignment in assignments:
            for topic_id, partitions in assignment.items():
                for p in partitions:
                    out[(topic_id, p)] = old_epochs.get((topic_id, p), previous)
        if new_at is not None:
            for topic_id, partitions in pending.items():
                for p in partitions:
                    out[(topic_id, p)] = new_at
        return out

    if revoke and _owns_any(owned, revoke):
        return Current(
            member_epoch,
            previous,
            MemberState.UNREVOKED_PARTITIONS,
            assigned,
            revoke,
            epochs_of(assigned, revoke),
        )
    epochs = epochs_of(assigned, new_at=target_epoch)
    for topic_id, partitions in pending.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | partitions
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return Current(target_epoch, previous, state, assigned, {}, epochs)
