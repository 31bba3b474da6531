"""The consumer group protocol on the cluster's clock (Kafka's ``GroupMetadataManager`` for consumer groups),
without the wire.

**A heartbeat** (ConsumerGroupHeartbeat, :meth:`ConsumerGroupCoordinator.heartbeat`) goes as Kafka's does:

1. the group is found or made (epoch 0 makes it; a classic group is upgraded when the migration policy
   allows it), the member found or made (a static member replaces the instance's previous member once
   that one has left with epoch -2), its epoch checked (FENCED_MEMBER_EPOCH for an epoch the coordinator
   did not give; the previous epoch is accepted with owned partitions within the assignment, as Kafka
   accepts a heartbeat whose answer was lost);
2. its subscription updated (topic names, a regular expression resolved at once against the cluster's
   topics with RE2 semantics, rack, assignor, rebalance timeout); a changed subscription, or a change of
   the subscribed topics' partitions, bumps the group epoch;
3. when the group epoch is ahead of the target assignment's, a new target assignment is computed with the
   assignor most members ask for (else the first of ``group.consumer.assignors``), at most every
   ``consumer.assignment.interval.ms`` (else later, on a timer);
4. the member reconciles towards its target (:func:`controller.consumer_groups.group.reconcile`):
   revocation before assignment; a member that does not revoke within its rebalance timeout is fenced;
5. its session restarts (``consumer.session.timeout.ms``; a member whose session ends is fenced and
   leaves the group, which bumps the epoch).

The answer carries the member's id and epoch, the heartbeat interval, and its assignment when it changed
or the member sent a full request. Every change is a record (:mod:`controller.consumer_groups.group`),
applied at once and appended to ``__consumer_offsets`` through the group service; the answer is given
once the records are durable (Kafka answers after its write commits), NOT_COORDINATOR when a move of the
coordinator lost them first.

**Members of the classic protocol** in a consumer group (the upgrade path): a JoinGroup to a consumer
group with members joins it as a member whose subscription and owned partitions come from its
``ConsumerProtocolSubscription``; its generation is its member epoch; SyncGroup gives it its assigned
partitions as a ``ConsumerProtocolAssignment``; its Heartbeat answers REBALANCE_IN_PROGRESS when it must
rejoin to go on reconciling. When the last member of the consumer protocol leaves a group of classic
members, the group is converted back to a classic group (the downgrade), which rebalances; a consumer
member joining a classic group of the ``consumer`` protocol type converts it (the upgrade), as
``group.consumer.migration.policy`` allows (``bidirectional`` by default).
"""

from __future__ import annotations

import base64
import logging
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from controller.clock import Clock, Timer
from controller.cluster import ConfigDerived
from controller.consumer_groups import regex
from controller.consumer_groups.assignors import ASSIGNORS, AssignorError, MemberSpec
from controller.consumer_groups.group import (
    EMPTY,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ClassicMetadata,
    ConsumerGroup,
    Current,
    FencedMember,
    GroupState,
    Member,
    MemberState,
    Resolved,
    Subscription,
    assignment_of,
    reconcile,
)
from controller.consumer_groups.protocol import read_assignment, read_subscription, write_assignment
from controller.events import EventLog
from controller.groups.classic import ClassicGroup, JoinResult, SyncResult
from controller.groups.classic import GroupState as ClassicState
from controller.groups.classic import Member as ClassicMember
from protocol.codes import ErrorCode

log = logging.getLogger(__name__)

__all__ = [
    "ConsumerGroupCoordinator",
    "ConsumerSettings",
    "HeartbeatRequest",
    "Refused",
]

#: Kafka's floor between two resolutions of a group's regular expressions, in ms.
REGEX_MIN_REFRESH_MS = 10_000


class Refused(Exception):
    """A request refused with ``code`` and Kafka's message (an ``ApiException``)."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ConsumerSettings:
    """The coordinator's settings of the consumer group protocol (Kafka's ``GroupCoordinatorConfig``)."""

    max_size: int = 2**31 - 1
    #: The assignors by name; the first is the default.
    assignors: tuple[str, ...] = ("uniform", "range")
    upgrade: bool = True
    downgrade: bool = True
    regex_refresh_interval_ms: int = 600_000
    #: ``group.max.size``: a downgrade that would exceed it does not happen.
    classic_max_size: int = 2**31 - 1


class HeartbeatRequest(NamedTuple):
    """A ConsumerGroupHeartbeat request as the coordinator reads it."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topic_names: Sequence[str] | None = None
    topic_regex: str | None = None
    server_assignor: str | None = None
    #: (topic id, partitions) the member owns, or None (unchanged).
    owned: list[tuple[uuid.UUID, list[int]]] | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1


#: What a heartbeat's answer holds (the handler makes the wire answer of it).
HeartbeatAnswer = dict[str, Any]
#: Records: (kind, value) each (:mod:`controller.consumer_groups.group`).
Records = list[tuple[str, Any]]


class ConsumerGroupCoordinator:
    """Every consumer group of the cluster (see the module docstring). ``cluster`` gives the topics
    (``topics``, ``touch_position``, ``group_config``); ``log`` is where records go
    (:class:`controller.groups.durable.GroupService`); ``classic`` the classic coordinator
    (:class:`controller.groups.coordinator.GroupCoordinator`), for the upgrade and downgrade."""

    def __init__(
        self,
        clock: Clock,
        cluster: Any,
        settings: ConsumerSettings,
        classic: Any,
        log_: Any = None,
        seed: int | None = None,
        events: EventLog | None = None,
    ) -> None:
        self.clock = clock
        self.cluster = cluster
        self.settings = settings
        self.classic = classic
        self.log = log_
        self.events = events
        self.groups: dict[str, ConsumerGroup] = {}
        self._random = random.Random(seed) if seed is not None else random.Random()
        self._timers: dict[tuple[str, ...], Timer] = {}
        #: When each member's session ends (a heartbeat moves it; the timer catches up when it fires).
        self._session_end: dict[tuple[str, str], int] = {}
        self._seen: dict[str, tuple[Any, ...]] = {}
        #: Group configs in effect, (group id, name) -> value.
        self._configs: ConfigDerived[tuple[str, str], int] = ConfigDerived(self.cluster)

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    # ------------------------------------------------------------------------------------- settings

    def _group_config(self, group_id: str, name: str) -> int:
        """A group config's value in effect (the group's own, else its broker default), kept until a config
        changes (every heartbeat reads two)."""
        return self._configs.get((group_id, name), self._read_group_config, group_id, name)

    def _read_group_config(self, group_id: str, name: str) -> int:
        return int(self.cluster.group_config(group_id, name))

    def session_timeout_ms(self, group_id: str) -> int:
        return self._group_config(group_id, "consumer.session.timeout.ms")

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self._group_config(group_id, "consumer.heartbeat.interval.ms")

    # ------------------------------------------------------------------------------------- records

    def _write(self, group_id: str, records: Records, respond: Callable[[bool], None] | None = None) -> None:
        """Applies ``records`` (those of a group that exists by now) and appends them to the log;
        ``respond(durable)`` once they are durable (False: a move of the coordinator lost them first)."""
        if not records:
            if respond is not None:
                respond(True)
            return
        if self.log is None:
            if respond is not None:
                respond(True)
            return
        last = None
        for kind, value in records:
            last = self.log.append(group_id, kind, [value])
        if respond is not None:
            done = respond
            self.log.when_durable(group_id, last, len(records), lambda error: done(error == ErrorCode.NONE))

    def _apply(self, group: ConsumerGroup, records: Records, kind: str, value: Any) -> None:
        """One record: applied to the group now, and kept to be written."""
        group.replay(kind, value)
        records.append((kind, value))

    def replay(self, group_id: str, kind: str, value: Any) -> None:
        """One record as a coordinator that takes the group over reads it (:meth:`load`)."""
        group = self.groups.get(group_id)
        if group is None:
            if value is None:
                return
            group = self.groups[group_id] = ConsumerGroup(group_id)
        group.replay(kind, value)
        if kind == "ConsumerGroupMetadata" and value is None and not group.members:
            del self.groups[group_id]

    # ------------------------------------------------------------------------------------- timers

    def _schedule(self, key: tuple[str, ...], delay_ms: int, action: Callable[[], None]) -> None:
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()

        def fire() -> None:
            if self._timers.get(key) is timer:
                del self._timers[key]
            action()

        timer = self.clock.call_later(max(0, delay_ms), fire, "consumer group " + " ".join(key))
        self._timers[key] = timer

    def _cancel(self, key: tuple[str, ...]) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _cancel_member_timers(self, group_id: str, member_id: str) -> None:
        self._session_end.pop((group_id, member_id), None)
        for kind in ("session", "rebalance", "join", "sync"):
            self._cancel((kind, group_id, member_id))

    def _session(self, group_id: str, member_id: str, timeout_ms: int, now: int | None = None) -> None:
        """The member's session now ends ``timeout_ms`` from now (``now``: the clock, when read already);
        the timer moves only when that is sooner (a heartbeat costs no timer)."""
        end = (self.clock.now() if now is None else now) + timeout_ms
        self._session_end[(group_id, member_id)] = end
        key = ("session", group_id, member_id)
        timer = self._timers.get(key)
        if timer is not None and timer.when <= end:
            return
        self._schedule(key, timeout_ms, lambda: self._session_timer(group_id, member_id))

    def _session_timer(self, group_id: str, member_id: str) -> None:
        end = self._session_end.get((group_id, member_id))
        now = self.clock.now()
        if end is not None and end > now:
            self._schedule(
                ("session", group_id, member_id), end - now, lambda: self._session_timer(group_id, member_id)
            )
            return
        self._session_end.pop((group_id, member_id), None)
        self._fence_operation(group_id, member_id, "the member session expired")

    def _fence_operation(self, group_id: str, member_id: str, reason: str) -> None:
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        log.info("[GroupId %s] Member %s fenced from the group because %s.", group_id, member_id, reason)
        records: Records = []
        self._fence(group, group.members[member_id], records)
        self._write(group_id, records)
        self._note(group_id, f"member {member_id} fenced: {reason}")

    # ------------------------------------------------------------------------------------- events

    def _note(self, group_id: str, cause: str) -> None:
        """Records what changed in the group since last noted (state, epochs, members)."""
        if self.events is None:
            return
        group = self.groups.get(group_id)
        now = (
            (group.state.value, group.group_epoch, group.assignment_epoch, tuple(sorted(group.members)))
            if group is not None
            else (GroupState.DEAD.value, -1, -1, ())
        )
        before = self._seen.get(group_id, (None, 0, 0, ()))
        if now == before:
            return
        if group is None:
            self._seen.pop(group_id, None)
        else:
            self._seen[group_id] = now
        changes: list[tuple[str, Any, Any]] = []
        for name, old, new in zip(("state", "group epoch", "assignment epoch"), before, now, strict=False):
            if old != new:
                changes.append((name, old, new))
        if before[3] != now[3]:
            changes.append(("members", len(before[3]), len(now[3])))
        self.events.record("group", f"group {group_id}", changes, cause)

    # ------------------------------------------------------------------------------------- heartbeat

    def heartbeat(self, request: HeartbeatRequest, respond: Callable[[HeartbeatAnswer], None]) -> None:
        """ConsumerGroupHeartbeat: ``respond`` gets the answer once what it changed is durable."""
        records: Records = []
        try:
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                answer = self._leave(request, records)
            else:
                answer = self._heartbeat(request, records)
        except Refused as refused:
            # Records made before the refusal stand (an upgrade of a classic group, say): Kafka writes none
            # of them; here the checks that refuse come before any record but those of a conversion.
            self._write(request.group_id, records)
            respond(error_answer(refused.code, refused.message))
            return
        group_id = request.group_id
        if not records:  # a heartbeat that changed nothing: nothing to wait for
            respond(answer)
            return

        def durable(ok: bool) -> None:
            if ok:
                respond(answer)
            else:
                respond(
                    error_answer(
                        ErrorCode.NOT_COORDINATOR, "The coordinator moved before the change was written."
                    )
                )

        self._write(group_id, records, durable)
        self._note(group_id, f"heartbeat of {answer.get('MemberId') or request.member_id}")

    def _heartbeat(self, request: HeartbeatRequest, records: Records) -> HeartbeatAnswer:
        group_id = request.group_id
        now = self.clock.now()
        joining = request.member_epoch == 0
        group = self._get_or_create_group(group_id, joining, records)
        member_id = request.member_id
        if len(group.members) >= self.settings.max_size and (not member_id or member_id not in group.members):
            raise Refused(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {self.settings.max_size} members.",
            )
        if not member_id:
            member_id = self._new_member_id()
        if request.instance_id is None:
            member = self._dynamic_member(group, member_id, request, joining)
        else:
            member = self._static_member(group, member_id, request, joining, records)
        if request.topic_regex is not None and request.topic_regex != member.subscription.topic_regex:
            invalid = regex.check(request.topic_regex) if request.topic_regex else None
            if invalid is not None:
                raise Refused(ErrorCode.INVALID_REGULAR_EXPRESSION, invalid)
        # 1. The member's subscription (a plain heartbeat changes nothing of it).
        sub = member.subscription
        if (
            request.instance_id is None
            and request.rack_id is None
            and request.rebalance_timeout_ms == -1
            and request.server_assignor is None
            and request.topic_names is None
            and request.topic_regex is None
            and request.client_id == sub.client_id
            and request.client_host == sub.client_host
            and sub.classic is None
            and member_id in group.members
        ):
            updated = sub
        else:
            updated = self._updated_subscription(sub, request)
        bump = self._update_subscription(group, member, updated, records)

        member = group.members[member_id]
        # 2. The group epoch: subscriptions, resolved regular expressions, the subscribed topics' metadata.
        bump = self._refresh_regexes(group, records, now) or bump
        bump = self._refresh_metadata(group, records, bump)
        # 3. The target assignment.
        target_epoch, target = self._target(group, member, records, now)
        # 4. Reconciliation.
        before = member.current
        try:
            member = self._reconcile(group, member, target_epoch, target, request.owned, records)
        except FencedMember as fenced:
            raise Refused(ErrorCode.FENCED_MEMBER_EPOCH, str(fenced)) from None
        # 5. The session.
        self._session(group_id, member_id, self.session_timeout_ms(group_id), now)
        answer: HeartbeatAnswer = {
            "ErrorCode": ErrorCode.NONE,
            "MemberId": member_id,
            "MemberEpoch": member.member_epoch,
            "HeartbeatIntervalMs": self.heartbeat_interval_ms(group_id),
            "Assignment": None,
        }
        full = joining or (
            request.rebalance_timeout_ms != -1
            and request.topic_names is not None
            and request.owned is not None
        )
        if full or (member.current is not before and member.current.assigned != before.assigned):
            answer["Assignment"] = member.current.assigned
        return answer

    @staticmethod
    def _updated_subscription(sub: Subscription, request: HeartbeatRequest) -> Subscription:
        """The subscription with what the request changes (a null or -1 field: unchanged)."""
        return replace(
            sub,
            instance_id=request.instance_id if request.instance_id is not None else sub.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else sub.rack_id,
            rebalance_timeout_ms=(
                request.rebalance_timeout_ms
                if request.rebalance_timeout_ms != -1
                else sub.rebalance_timeout_ms
            ),
            server_assignor=request.server_assignor
            if request.server_assignor is not None
            else sub.server_assignor,
            topic_names=tuple(request.topic_names) if request.topic_names is not None else sub.topic_names,
            topic_regex=(request.topic_regex or None) if request.topic_regex is not None else sub.topic_regex,
            client_id=request.client_id,
            client_host=request.client_host,
            classic=None,
        )

    def _new_member_id(self) -> str:
        """A member id as Kafka's ``Uuid.randomUuid().toString()`` makes it (22 characters of URL-safe
        base64), from the seeded generator."""
        data = self._random.getrandbits(128).to_bytes(16, "big")
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    def _get_or_create_group(self, group_id: str, create: bool, records: Records) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        classic = self.classic.groups.get(group_id)
        if classic is not None:
            if create and classic.is_in(ClassicState.EMPTY):
                self._delete_empty_classic(classic)
            elif create and self._upgradable(classic):
                return self._upgrade(classic, records)
            else:
                raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if not create:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        group = self.groups[group_id] = ConsumerGroup(group_id)
        return group

    def _dynamic_member(
        self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest, joining: bool
    ) -> Member:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise Refused(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group.group_id}.",
                )
            log.info(
                "[GroupId %s] Member %s joins the consumer group using the consumer protocol.",
                group.group_id,
                member_id,
            )
            return Member(member_id)
        self._check_epoch(member, request.member_epoch, request.owned)
        return member

    def _static_member(
        self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest, joining: bool, records: Records
    ) -> Member:
        instance_id = request.instance_id
        assert instance_id is not None
        existing = group.static_member(instance_id)
        if joining:
            if existing is None:
                return group.members.get(member_id) or Member(member_id)
            if existing.member_id == member_id:
                return existing
            if not existing.uses_classic_protocol and existing.member_epoch != STATIC_LEAVE_EPOCH:
                raise Refused(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} cannot join the group because "
                    f"the instance id is owned by {existing.member_id} member.",
                )
            new = Member(
                member_id,
                existing.subscription,
                replace(existing.current, member_epoch=0, previous_member_epoch=0),
            )
            self._replace_member(group, existing, new, records)
            return group.members[member_id]
        if existing is None:
            raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise Refused(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{existing.member_id}.",
            )
        self._check_epoch(existing, request.member_epoch, request.owned)
        return existing

    @staticmethod
    def _check_epoch(member: Member, epoch: int, owned: list[tuple[uuid.UUID, list[int]]] | None) -> None:
        """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid`` (epoch 0, a rejoin, is always accepted)."""
        if epoch == 0:
            return
        if epoch > member.member_epoch:
            raise Refused(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a greater member epoch ({epoch}) than the one known by the "
                f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
            )
        if epoch < member.member_epoch:
            if epoch != member.current.previous_member_epoch or not _is_subset(owned, member.assigned):
                raise Refused(
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    f"The consumer group member has a smaller member epoch ({epoch}) than the one known by the "
                    f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and "
                    "rejoin.",
                )

    def _replace_member(self, group: ConsumerGroup, old: Member, new: Member, records: Records) -> None:
        """A static member's new incarnation takes the old one's place, target and assignment."""
        target = group.target.get(old.member_id, EMPTY)
        self._remove_member_records(group, old.member_id, records)
        self._apply(group, records, "ConsumerGroupMemberMetadata", (new.member_id, new.subscription))
        self._apply(group, records, "ConsumerGroupTargetAssignmentMember", (new.member_id, target))
        self._apply(group, records, "ConsumerGroupCurrentMemberAssignment", (new.member_id, new.current))

    def _remove_member_records(self, group: ConsumerGroup, member_id: str, records: Records) -> None:
        self._apply(group, records, "ConsumerGroupCurrentMemberAssignment", (member_id, None))
        self._apply(group, records, "ConsumerGroupTargetAssignmentMember", (member_id, None))
        self._apply(group, records, "ConsumerGroupMemberMetadata", (member_id, None))

    def _update_subscription(
        self, group: ConsumerGroup, member: Member, updated: Subscription, records: Records
    ) -> bool:
        """Writes the member's subscription if it changed; whether the group epoch must be bumped."""
        known = member.member_id in group.members
        if known and (updated is member.subscription or updated == member.subscription):
            return False
        old = member.subscription
        self._apply(group, records, "ConsumerGroupMemberMetadata", (member.member_id, updated))
        if not known:
            return True
        return (
            updated.topic_names != old.topic_names
            or updated.topic_regex != old.topic_regex
            or updated.server_assignor != old.server_assignor
        )

    # ------------------------------------------------------------------------------------- regexes

    def _refresh_regexes(self, group: ConsumerGroup, records: Records, now: int) -> bool:
        """Resolves the group's regular expressions: a new one at once, the others when topics changed
        (at most every 10 s) or ``group.consumer.regex.refresh.interval.ms`` passed. Whether the resolved
        topics changed."""
        wanted = group.regex_subscribers.keys()
        if not wanted and not group.resolved_regexes:
            return False
        changed = False
        for old in [r for r in group.resolved_regexes if r not in wanted]:
            self._apply(group, records, "ConsumerGroupRegularExpression", (old, None))
            changed = True
        if not wanted:
            return changed
        position = self.cluster.touch_position
        unresolved = [r for r in wanted if r not in group.resolved_regexes]
        due = now - group.regex_refreshed_at >= REGEX_MIN_REFRESH_MS and (
            any(r.version != position for r in group.resolved_regexes.values())
            or now - group.regex_refreshed_at >= self.settings.regex_refresh_interval_ms
        )
        todo = sorted(wanted) if due else sorted(unresolved)
        if not todo:
            return changed
        names = [n for n in self.cluster.topics if not _internal(n)]
        for pattern in todo:
            topics = frozenset(regex.matching(pattern, names))
            old_resolved = group.resolved_regexes.get(pattern)
            if old_resolved is not None and old_resolved.topics == topics:
                if old_resolved.version != position:
                    group.resolved_regexes[pattern] = Resolved(topics, position, old_resolved.timestamp)
                continue
            self._apply(
                group, records, "ConsumerGroupRegularExpression", (pattern, Resolved(topics, position, now))
            )
            changed = True
        group.regex_refreshed_at = now
        return changed

    # ------------------------------------------------------------------------------------- metadata

    def _subscription_metadata(self, group: ConsumerGroup) -> tuple[tuple[str, uuid.UUID, int], ...]:
        """The subscribed topics that exist, with their ids and partition counts, in name order."""
        topics = self.cluster.topics
        found = []
        for name in sorted(group.subscribed_topic_names()):
            topic = topics.get(name)
            if topic is not None:
                found.append((name, topic.topic_id, len(topic.partitions)))
        return tuple(found)

    def _refresh_metadata(self, group: ConsumerGroup, records: Records, bump: bool) -> bool:
        """Bumps the group epoch when ``bump`` or the subscribed topics' metadata changed (checked when the
        cluster's topics changed since last time); whether it did."""
        position = self.cluster.touch_position
        if bump or position != group.metadata_position:
            metadata_hash = hash(self._subscription_metadata(group)) & 0x7FFFFFFFFFFFFFFF
            group.metadata_position = position
            if metadata_hash != group.metadata_hash:
                bump = True
            if bump:
                self._apply(group, records, "ConsumerGroupMetadata", (group.group_epoch + 1, metadata_hash))
                log.info("[GroupId %s] Bumped group epoch to %d.", group.group_id, group.group_epoch)
        return bump

    # ------------------------------------------------------------------------------------- target assignment

    def _target(
        self, group: ConsumerGroup, member: Member, records: Records, now: int
    ) -> tuple[int, Assignment]:
        """The target epoch and the member's target assignment, computed anew when the group epoch is ahead
        and the assignment interval allows it (else a timer computes it when it does)."""
        if group.group_epoch > group.assignment_epoch:
            interval = self._group_config(group.group_id, "consumer.assignment.interval.ms")
            last = group.assignment_timestamp
            if last == 0 or interval == 0 or now >= last + interval:
                self._compute_target(group, records, now)
            else:
                gid = group.group_id
                self._schedule(("assign", gid), last + interval - now, lambda: self._delayed_target(gid))
        return group.assignment_epoch, group.target.get(member.member_id, EMPTY)

    def _delayed_target(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is None or group.group_epoch <= group.assignment_epoch:
            return
        records: Records = []
        self._compute_target(group, records, self.clock.now())
        self._write(group_id, records)
        self._note(group_id, "target assignment computed after the assignment interval")

    def _compute_target(self, group: ConsumerGroup, records: Records, now: int) -> None:
        metadata = self._subscription_metadata(group)
        ids = {name: topic_id for name, topic_id, _ in metadata}
        partitions = {topic_id: count for _, topic_id, count in metadata}
        specs = []
        counts = group.subscribed_topic_names()
        homogeneous = all(n == len(group.members) for n in counts.values())
        for member_id in sorted(group.members):
            member = group.members[member_id]
            topics = frozenset(ids[t] for t in group.subscribed_topics_of(member) if t in ids)
            specs.append(
                MemberSpec(member_id, member.instance_id, topics, group.target.get(member_id, EMPTY))
            )
        name = group.preferred_assignor() or self.settings.assignors[0]
        assignor = ASSIGNORS.get(name) or ASSIGNORS[self.settings.assignors[0]]
        try:
            assigned = assignor(specs, partitions, homogeneous)
        except AssignorError as exc:
            raise Refused(
                ErrorCode.UNKNOWN_SERVER_ERROR,
                f"Failed to compute a new target assignment for epoch {group.group_epoch}: {exc}",
            ) from None
        for member_id in sorted(group.members):
            new = assigned.get(member_id, EMPTY)
            if new != group.target.get(member_id):
                self._apply(group, records, "ConsumerGroupTargetAssignmentMember", (member_id, new))
        self._apply(group, records, "ConsumerGroupTargetAssignmentMetadata", (group.group_epoch, now))
        self._cancel(("assign", group.group_id))
        log.info(
            "[GroupId %s] Computed a new target assignment for epoch %d with '%s' assignor.",
            group.group_id,
            group.group_epoch,
            name,
        )

    # ------------------------------------------------------------------------------------- reconciliation

    def _reconcile(
        self,
        group: ConsumerGroup,
        member: Member,
        target_epoch: int,
        target: Assignment,
        owned: list[tuple[uuid.UUID, list[int]]] | None,
        records: Records,
    ) -> Member:
        if member.is_reconciled_to(target_epoch):
            return member
        current = reconcile(member, target_epoch, target, group.partition_epoch, owned)
        if current == member.current:
            return member
        self._apply(group, records, "ConsumerGroupCurrentMemberAssignment", (member.member_id, current))
        member = group.members[member.member_id]
        if not member.uses_classic_protocol:
            if current.state is MemberState.UNREVOKED_PARTITIONS:
                self._schedule_rebalance_timeout(group.group_id, member)
            else:
                self._cancel(("rebalance", group.group_id, member.member_id))
        return member

    def _schedule_rebalance_timeout(self, group_id: str, member: Member) -> None:
        """The member must revoke within its rebalance timeout, else it is fenced."""
        mid, epoch = member.member_id, member.member_epoch
        timeout = max(0, member.subscription.rebalance_timeout_ms)
        self._schedule(
            ("rebalance", group_id, mid),
            timeout,
            lambda: self._rebalance_timeout(group_id, mid, epoch, timeout),
        )

    def _rebalance_timeout(self, group_id: str, member_id: str, epoch: int, timeout_ms: int) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is not None and member.member_epoch == epoch:
            self._fence_operation(
                group_id, member_id, f"it failed to transition from epoch {epoch} within {timeout_ms}ms"
            )

    # ------------------------------------------------------------------------------------- leaving

    def _leave(self, request: HeartbeatRequest, records: Records) -> HeartbeatAnswer:
        group = self.groups.get(request.group_id)
        if group is None:
            if request.group_id in self.classic.groups:
                raise Refused(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a consumer group."
                )
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {request.group_id} not found.")
        answer: HeartbeatAnswer = {
            "ErrorCode": ErrorCode.NONE,
            "MemberId": request.member_id,
            "MemberEpoch": request.member_epoch,
            "HeartbeatIntervalMs": 0,
            "Assignment": None,
        }
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise Refused(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {request.member_id} is not a member of group {group.group_id}.",
                )
        else:
            member = group.static_member(request.instance_id)
            if member is None:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown.")
            if member.member_id != request.member_id:
                raise Refused(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {request.member_id} with instance id {request.instance_id} was fenced by "
                    f"member {member.member_id}.",
                )
            if request.member_epoch == STATIC_LEAVE_EPOCH:
                # It will be back: it keeps its place and its partitions until its session ends.
                current = replace(member.current, member_epoch=STATIC_LEAVE_EPOCH, pending_revocation={})
                self._apply(
                    group, records, "ConsumerGroupCurrentMemberAssignment", (member.member_id, current)
                )
                answer["MemberEpoch"] = STATIC_LEAVE_EPOCH
                return answer
        self._fence(group, member, records)
        return answer

    def _fence(self, group: ConsumerGroup, member: Member, records: Records) -> None:
        """The member leaves (or is fenced): the group converts back to a classic group when only classic
        members stay and the policy allows it; else its records go and the group epoch is bumped."""
        if self._downgradable(group, member.member_id):
            self._downgrade(group, member.member_id, records)
            return
        self._remove_member_records(group, member.member_id, records)
        self._cancel_member_timers(group.group_id, member.member_id)
        self._refresh_regexes(group, records, self.clock.now())
        metadata_hash = hash(self._subscription_metadata(group)) & 0x7FFFFFFFFFFFFFFF
        group.metadata_position = self.cluster.touch_position
        self._apply(group, records, "ConsumerGroupMetadata", (group.group_epoch + 1, metadata_hash))

    # ------------------------------------------------------------------------------------- upgrade, downgrade

    def _upgradable(self, classic: Any) -> bool:
        """Whether a classic group may become a consumer group (Kafka's ``validateOnlineUpgrade``); raises
        Refused with Kafka's reason when it may not."""
        gid = classic.group_id
        if not self.settings.upgrade:
            reason = "online upgrade is disabled"
        elif classic.protocol_type != "consumer":
            reason = "the group does not use the consumer embedded protocol"
        elif len(classic.members) > self.settings.max_size:
            reason = "the group size exceeds the consumer group maximum size"
        else:
            return True
        raise Refused(
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade classic group {gid} to consumer group because {reason}.",
        )

    def _delete_empty_classic(self, classic: Any) -> None:
        """An empty classic group gives way to a consumer group of its id (its offsets stay)."""
        coordinator = self.classic
        classic.transition(ClassicState.DEAD)
        del coordinator.groups[classic.group_id]
        if coordinator.log is not None:
            coordinator.log.write_group(classic)

    def _upgrade(self, classic: Any, records: Records) -> ConsumerGroup:
        """A classic group of the ``consumer`` protocol type becomes a consumer group: its members keep their
        assignment, as members of the classic protocol (Kafka's ``convertToConsumerGroup``)."""
        group_id = classic.group_id
        coordinator = self.classic
        for m in classic.members.values():
            if m.join_waiter is not None:
                waiter, m.join_waiter = m.join_waiter, None
                waiter(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, m.member_id))
            if m.sync_waiter is not None:
                waiter2, m.sync_waiter = m.sync_waiter, None
                waiter2(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        group = ConsumerGroup(group_id)
        ids = {name: t.topic_id for name, t in self.cluster.topics.items()}
        members: list[Member] = []
        try:
            for m in classic.members.values():
                subscription = read_subscription(m.metadata(classic.protocol_name))
                assigned = read_assignment(m.assignment) if m.assignment else {}
                members.append(
                    Member(
                        m.member_id,
                        Subscription(
                            instance_id=m.instance_id,
                            rack_id=subscription.get("RackId"),
                            client_id=m.client_id,
                            client_host=m.client_host,
                            topic_names=tuple(subscription["Topics"]),
                            rebalance_timeout_ms=m.rebalance_timeout_ms,
                            classic=ClassicMetadata(m.session_timeout_ms, tuple(m.protocols)),
                        ),
                        Current(
                            classic.generation,
                            classic.generation,
                            MemberState.STABLE,
                            assignment_of((ids[t], ps) for t, ps in assigned.items() if t in ids),
                        ),
                    )
                )
        except ValueError:
            raise Refused(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {group_id} to consumer group because the embedded consumer "
                "protocol is malformed.",
            ) from None
        coordinator.unload(group_id, ErrorCode.REBALANCE_IN_PROGRESS)
        classic.transition(ClassicState.DEAD)
        del coordinator.groups[group_id]
        if coordinator.log is not None:
            coordinator.log.write_group(classic)
        self.groups[group_id] = group
        group.group_epoch = group.assignment_epoch = classic.generation
        for member in members:
            group.replay("ConsumerGroupTargetAssignmentMember", (member.member_id, member.current.assigned))
            group.replay("ConsumerGroupMemberMetadata", (member.member_id, member.subscription))
            group.replay("ConsumerGroupCurrentMemberAssignment", (member.member_id, member.current))
        group.metadata_hash = hash(self._subscription_metadata(group)) & 0x7FFFFFFFFFFFFFFF
        group.metadata_position = self.cluster.touch_position
        records.extend(group.creation_records())
        for member in members:
            assert member.subscription.classic is not None
            self._session(group_id, member.member_id, member.subscription.classic.session_timeout_ms)
        log.info("[GroupId %s] Upgraded the classic group to a consumer group.", group_id)
        return group

    def _downgradable(self, group: ConsumerGroup, leaving: str) -> bool:
        member = group.members.get(leaving)
        if member is None or member.uses_classic_protocol:
            return False
        if group.classic_members() != len(group.members) - 1 or len(group.members) <= 1:
            return False
        if not self.settings.downgrade:
            log.info(
                "Cannot downgrade consumer group %s to classic group because the online downgrade is disabled.",
                group.group_id,
            )
            return False
        return len(group.members) - 1 <= self.settings.classic_max_size

    def _downgrade(self, group: ConsumerGroup, leaving: str, records: Records) -> None:
        """Only members of the classic protocol stay: the group becomes a classic group of them, which
        rebalances (Kafka's ``convertToClassicGroup``)."""
        group_id = group.group_id
        names = {t.topic_id: name for name, t in self.cluster.topics.items()}
        classic = ClassicGroup(group_id, generation=group.group_epoch)
        classic.protocol_type = "consumer"
        for member in group.members.values():
            if member.member_id == leaving:
                continue
            meta = member.subscription.classic
            assert meta is not None
            assignment = {names[t]: sorted(ps) for t, ps in member.assigned.items() if t in names}
            version = _subscription_version(meta.protocols[0][1]) if meta.protocols else 0
            classic.add(
                ClassicMember(
                    member.member_id,
                    member.instance_id,
                    member.subscription.client_id,
                    member.subscription.client_host,
                    member.subscription.rebalance_timeout_ms,
                    meta.session_timeout_ms,
                    "consumer",
                    list(meta.protocols),
                    write_assignment(assignment, version),
                )
            )
        classic.protocol_name = classic.select_protocol()
        classic.leader = next(iter(classic.members), None)
        classic.state = ClassicState.STABLE
        classic.previous_state = ClassicState.COMPLETING_REBALANCE
        for member_id in list(group.members):
            self._cancel_member_timers(group_id, member_id)
        records.extend(group.tombstones())
        for kind, value in group.tombstones():
            group.replay(kind, value)
        self.groups.pop(group_id, None)
        coordinator = self.classic
        coordinator.groups[group_id] = classic
        if coordinator.log is not None:
            coordinator.log.write_group(classic)
        for m in classic.members.values():
            coordinator._reschedule_heartbeat(classic, m)
        coordinator._prepare_rebalance(classic, f"Downgrade group {group_id} from consumer to classic.")
        log.info("[GroupId %s] Downgraded the consumer group to a classic group.", group_id)

    # ------------------------------------------------------------------------------------- classic members

    def owns(self, group_id: str) -> bool:
        return group_id in self.groups

    def classic_join(self, request: Any, respond: Callable[[Any], None]) -> bool:
        """A JoinGroup of a classic member: taken (True) when the group is a consumer group with members
        (an empty one gives way to a classic group: False, after deleting it)."""
        group = self.groups.get(request.group_id)
        if group is None:
            return False
        records: Records = []
        if group.is_empty():
            records.extend(group.tombstones())
            for kind, value in group.tombstones():
                group.replay(kind, value)
            self.groups.pop(request.group_id, None)
            self._write(request.group_id, records)
            self._note(request.group_id, "empty consumer group deleted for a classic join")
            return False
        member_id = request.member_id
        unknown = member_id == ""
        if unknown:
            member_id = str(uuid.UUID(int=self._random.getrandbits(128), version=4))
        try:
            if len(group.members) >= self.settings.max_size and member_id not in group.members:
                raise Refused(ErrorCode.GROUP_MAX_SIZE_REACHED)
            names = {name for name, _ in request.protocols}
            if not group.supports_classic_protocols(request.protocol_type, names):
                raise Refused(
                    ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                    f"Member {member_id}'s protocols are not supported.",
                )
            if unknown and request.instance_id is None and request.require_known_member_id:
                respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))
                return True
            if request.instance_id is None:
                member = group.members.get(member_id)
                if member is None:
                    member = Member(member_id)
            else:
                existing = group.static_member(request.instance_id)
                if existing is None:
                    member = group.members.get(member_id) or Member(member_id)
                elif unknown or existing.member_id != member_id:
                    if not unknown:
                        raise Refused(ErrorCode.FENCED_INSTANCE_ID)
                    new = Member(
                        member_id,
                        existing.subscription,
                        replace(existing.current, member_epoch=0, previous_member_epoch=0),
                    )
                    self._replace_member(group, existing, new, records)
                    member = group.members[member_id]
                else:
                    member = existing
            subscription = read_subscription(request.protocols[0][1])
        except Refused as refused:
            self._write(request.group_id, records)
            respond(JoinResult(refused.code, member_id if not unknown else ""))
            return True
        except ValueError:
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return True
        sub = member.subscription
        updated = replace(
            sub,
            instance_id=request.instance_id if request.instance_id is not None else sub.instance_id,
            rack_id=subscription.get("RackId") or sub.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms
            if request.rebalance_timeout_ms != -1
            else sub.rebalance_timeout_ms,
            topic_names=tuple(subscription["Topics"]),
            client_id=request.client_id,
            client_host=request.client_host,
            classic=ClassicMetadata(request.session_timeout_ms, tuple(request.protocols)),
        )
        now = self.clock.now()
        bump = self._update_subscription(group, member, updated, records)
        member = group.members[member_id]
        bump = self._refresh_regexes(group, records, now) or bump
        self._refresh_metadata(group, records, bump)
        target_epoch, target = self._target(group, member, records, now)
        ids = {name: t.topic_id for name, t in self.cluster.topics.items()}
        owned = [
            (ids[o["Topic"]], list(o["Partitions"]))
            for o in subscription.get("OwnedPartitions", ())
            if o["Topic"] in ids
        ]
        try:
            member = self._reconcile(group, member, target_epoch, target, owned, records)
        except FencedMember:
            respond(JoinResult(ErrorCode.FENCED_MEMBER_EPOCH, member_id))
            return True
        protocol = updated.classic.protocols[0][0] if updated.classic and updated.classic.protocols else ""
        result = JoinResult(ErrorCode.NONE, member_id, member.member_epoch, "consumer", protocol, "")
        group_id = request.group_id

        def durable(ok: bool) -> None:
            if not ok:
                respond(JoinResult(ErrorCode.NOT_COORDINATOR, member_id))
                return
            self._cancel(("join", group_id, member_id))
            if group_id in self.groups:
                self._session(group_id, member_id, request.session_timeout_ms)
                timeout = request.rebalance_timeout_ms
                self._schedule(
                    ("sync", group_id, member_id),
                    timeout,
                    lambda: self._fence_operation(
                        group_id, member_id, "the member failed to sync within timeout"
                    ),
                )
            respond(result)

        self._write(group_id, records, durable)
        self._note(group_id, f"classic join of {member_id}")
        return True

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> Member:
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID)
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID)
            if member.member_id != member_id:
                raise Refused(ErrorCode.FENCED_INSTANCE_ID)
        if not member.uses_classic_protocol:
            raise Refused(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol."
            )
        return member

    def classic_sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        respond: Callable[[Any], None],
    ) -> bool:
        """A SyncGroup of a classic member of a consumer group: its assigned partitions."""
        group = self.groups.get(group_id)
        if group is None:
            return False
        if group.is_empty():
            respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            return True
        try:
            member = self._classic_member(group, member_id, instance_id)
            if member.member_epoch != generation:
                raise Refused(ErrorCode.ILLEGAL_GENERATION)
            meta = member.subscription.classic
            assert meta is not None
            name = meta.protocols[0][0] if meta.protocols else ""
            if (protocol_type is not None and protocol_type != "consumer") or (
                protocol_name is not None and protocol_name != name
            ):
                raise Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            self._check_rebalance(group, member)
        except Refused as refused:
            respond(SyncResult(refused.code))
            return True
        names = {t.topic_id: n for n, t in self.cluster.topics.items()}
        version = _subscription_version(meta.protocols[0][1]) if meta.protocols else 0
        assignment = {names[t]: sorted(ps) for t, ps in member.assigned.items() if t in names}
        self._cancel(("sync", group_id, member.member_id))
        self._session(group_id, member.member_id, meta.session_timeout_ms)
        respond(SyncResult(ErrorCode.NONE, "consumer", name, write_assignment(assignment, version)))
        return True

    def _check_rebalance(self, group: ConsumerGroup, member: Member) -> None:
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._join_timeout(group.group_id, member)
            raise Refused(
                ErrorCode.REBALANCE_IN_PROGRESS,
                f"A new rebalance is triggered in group {group.group_id} and member {member.member_id} should "
                "rejoin to catch up.",
            )

    def _join_timeout(self, group_id: str, member: Member) -> None:
        key = ("join", group_id, member.member_id)
        if key not in self._timers:
            mid = member.member_id
            self._schedule(
                key,
                member.subscription.rebalance_timeout_ms,
                lambda: self._fence_operation(
                    group_id, mid, "the classic member failed to join within the rebalance timeout"
                ),
            )

    def classic_heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode | None:
        """A Heartbeat of a classic member of a consumer group (None: not a consumer group)."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        try:
            member = self._classic_member(group, member_id, instance_id)
            if member.member_epoch != generation:
                raise Refused(ErrorCode.ILLEGAL_GENERATION)
        except Refused as refused:
            return refused.code
        meta = member.subscription.classic
        assert meta is not None
        self._session(group_id, member.member_id, meta.session_timeout_ms)
        if (
            member.member_epoch < group.group_epoch
            or member.state is MemberState.UNREVOKED_PARTITIONS
            or (
                member.state is MemberState.UNRELEASED_PARTITIONS
                and not group.waiting_on_unreleased_partition(member)
            )
        ):
            self._join_timeout(group_id, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def classic_leave(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> list[tuple[str, str | None, ErrorCode]] | None:
        """A LeaveGroup of classic members of a consumer group: (member id, instance id, error) each (None:
        not a consumer group)."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        results: list[tuple[str, str | None, ErrorCode]] = []
        records: Records = []
        left = False
        for member_id, instance_id in members:
            try:
                if instance_id is None:
                    member = group.members.get(member_id)
                    if member is None:
                        raise Refused(ErrorCode.UNKNOWN_MEMBER_ID)
                else:
                    member = group.static_member(instance_id)
                    if member is None:
                        raise Refused(ErrorCode.UNKNOWN_MEMBER_ID)
                    if member_id and member.member_id != member_id:
                        raise Refused(ErrorCode.FENCED_INSTANCE_ID)
                if not member.uses_classic_protocol:
                    raise Refused(ErrorCode.UNKNOWN_MEMBER_ID)
            except Refused as refused:
                results.append((member_id, instance_id, refused.code))
                continue
            self._remove_member_records(group, member.member_id, records)
            self._cancel_member_timers(group_id, member.member_id)
            results.append((member.member_id, instance_id, ErrorCode.NONE))
            left = True
        if left:
            self._refresh_regexes(group, records, self.clock.now())
            metadata_hash = hash(self._subscription_metadata(group)) & 0x7FFFFFFFFFFFFFFF
            self._apply(group, records, "ConsumerGroupMetadata", (group.group_epoch + 1, metadata_hash))
        self._write(group_id, records)
        self._note(group_id, "classic members left")
        return results

    # ------------------------------------------------------------------------------------- offsets, admin

    def commit_error(
        self, group_id: str, member_id: str, epoch: int, version: int, transactional: bool
    ) -> ErrorCode | Callable[[str, int], ErrorCode]:
        """Kafka's ``ConsumerGroup.validateOffsetCommit``: a commit from outside the group (epoch -1) only to
        an empty group; else the member must exist (UNKNOWN_MEMBER_ID) and use OffsetCommit v9+ unless it
        is of the classic protocol (UNSUPPORTED_VERSION). Its own epoch commits every partition; a newer
        one is refused (STALE_MEMBER_EPOCH; a classic member's generation: ILLEGAL_GENERATION); an older
        one (a commit sent before the member's epoch moved on) gives a check per partition: the member must
        own the partition since that epoch (Kafka 4.3's assignment epochs)."""
        group = self.groups[group_id]
        if epoch < 0 and not group.members:
            return ErrorCode.NONE
        if transactional and epoch < 0 and member_id == "":
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and not member.uses_classic_protocol and version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        stale = ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
        if epoch == member.member_epoch:
            return ErrorCode.NONE
        if epoch > member.member_epoch:
            return stale
        ids = {name: t.topic_id for name, t in self.cluster.topics.items()}
        current = member.current

        def check(topic: str, partition: int) -> ErrorCode:
            topic_id = ids.get(topic)
            assigned_at = current.assignment_epoch(topic_id, partition) if topic_id is not None else None
            return ErrorCode.NONE if assigned_at is not None and epoch >= assigned_at else stale

        return check

    def fetch_error(self, group_id: str, member_id: str | None, epoch: int) -> ErrorCode:
        """Kafka's ``ConsumerGroup.validateOffsetFetch``: a fetch naming no member and no epoch is an
        admin's; else the member must exist and give its epoch."""
        if member_id is None and epoch < 0:
            return ErrorCode.NONE
        member = self.groups[group_id].members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return _epoch_error(epoch, member)

    def is_subscribed_to(self, group_id: str, topic: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and topic in group.subscribed_topic_names()

    def delete_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups of a consumer group: only an empty one (its offsets are the classic coordinator's)."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        records = group.tombstones()
        for kind, value in records:
            group.replay(kind, value)
        del self.groups[group_id]
        self._write(group_id, records)
        self._note(group_id, "group deleted")
        return ErrorCode.NONE

    def unload(self, group_id: str) -> None:
        """The coordinator no longer holds the group: its timers stop and it is forgotten."""
        for key in [k for k in self._timers if k[1] == group_id]:
            self._cancel(key)
        for key in [k for k in self._session_end if k[0] == group_id]:
            del self._session_end[key]
        self.groups.pop(group_id, None)

    def loaded(self, group_id: str) -> None:
        """A coordinator that took the group over has replayed its records: every member's session and
        pending revocation restart, as Kafka's ``onLoaded`` does."""
        group = self.groups.get(group_id)
        if group is None:
            return
        for member in group.members.values():
            classic = member.subscription.classic
            timeout = classic.session_timeout_ms if classic is not None else self.session_timeout_ms(group_id)
            self._session(group_id, member.member_id, timeout)
            if member.state is MemberState.UNREVOKED_PARTITIONS and classic is None:
                self._schedule_rebalance_timeout(group_id, member)
        if group.group_epoch > group.assignment_epoch:
            gid = group_id
            self._schedule(("assign", gid), 0, lambda: self._delayed_target(gid))
        self._note(group_id, "coordinator loaded the group")


def _epoch_error(epoch: int, member: Member) -> ErrorCode:
    if epoch == member.member_epoch:
        return ErrorCode.NONE
    return ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH


def _is_subset(owned: list[tuple[uuid.UUID, list[int]]] | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    for topic_id, partitions in owned:
        have = assigned.get(topic_id)
        if have is None:
            return False
        if any(p not in have for p in partitions):
            return False
    return True


def _internal(name: str) -> bool:
    return name in ("__consumer_offsets", "__transaction_state", "__share_group_state")


def _subscription_version(metadata: bytes) -> int:
    """The version a ``ConsumerProtocolSubscription`` was written in (its first int16), capped at 3."""
    if len(metadata) < 2:
        return 0
    version = int.from_bytes(metadata[:2], "big", signed=True)
    return max(0, min(version, 3))


def error_answer(code: ErrorCode, message: str | None) -> HeartbeatAnswer:
    return {
        "ErrorCode": code,
        "ErrorMessage": message,
        "MemberId": None,
        "MemberEpoch": 0,
        "HeartbeatIntervalMs": 0,
        "Assignment": None,
    }
