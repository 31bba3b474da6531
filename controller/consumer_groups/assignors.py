"""The server-side assignors of the consumer group protocol: ``uniform`` and ``range``, as Kafka's
``UniformAssignor`` and ``RangeAssignor`` assign.

An assignor gets every member (its subscribed topic ids, its instance id, its current target
assignment) and the partition count of every subscribed topic, and gives each member its new target.

- ``range`` (Kafka's ``RangeAssignor``): members sorted by instance id (static members first) then member
  id; each topic's partitions cut into contiguous ranges, the first ``partitions % subscribers``
  subscribers one more. Members with the same subscriptions of topics with as many partitions get the
  same partition numbers of every topic (co-partitioning). Exactly Kafka's assignment.
- ``uniform`` (Kafka's ``UniformAssignor``): balance first (any two members differ by at most one
  partition where their subscriptions allow it), then stickiness (a member keeps what it has). With every
  member subscribed to the same topics (homogeneous), as Kafka's ``UniformHomogeneousAssignmentBuilder``:
  each member keeps up to its quota of what it had, the rest goes, in topic and partition order, to the
  members below their quota. With different subscriptions (heterogeneous), members keep what they are
  still subscribed to, unassigned partitions go to the least loaded subscriber, then partitions move from
  the most to the least loaded subscriber of each topic until no move helps.

Kafka iterates members and topics in Java hash order, which no client sees as a rule; here members go in
member id order and topics in topic name order, so that the same group gets the same assignment
(docs/fidelity.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from controller.consumer_groups.group import Assignment

__all__ = ["ASSIGNORS", "AssignorError", "MemberSpec", "range_assignor", "uniform_assignor"]


class AssignorError(Exception):
    """The assignor could not assign (Kafka's ``PartitionAssignorException``)."""


@dataclass(frozen=True)
class MemberSpec:
    """What an assignor knows of a member."""

    member_id: str
    instance_id: str | None
    #: The ids of the topics it subscribes to that exist.
    topics: frozenset[uuid.UUID]
    #: Its current target assignment.
    assignment: Assignment


#: An assignor: (members in member id order, partition counts by topic id in topic name order,
#: homogeneous) -> member id -> its new target assignment.
Assignor = Callable[[Sequence[MemberSpec], Mapping[uuid.UUID, int], bool], dict[str, Assignment]]


def range_assignor(
    members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int], homogeneous: bool
) -> dict[str, Assignment]:
    if not members:
        return {}
    ordered = sorted(
        members,
        key=lambda m: (0, m.instance_id, "") if m.instance_id is not None else (1, "", m.member_id),
    )
    subscribers: dict[uuid.UUID, int] = {}
    for member in ordered:
        for topic_id in member.topics:
            if topic_id not in partitions:
                raise AssignorError("Member is subscribed to a non-existent topic")
            subscribers[topic_id] = subscribers.get(topic_id, 0) + 1
    quotas = {t: divmod(partitions[t], n) for t, n in subscribers.items()}
    extra = {t: q[1] for t, q in quotas.items()}
    next_range = dict.fromkeys(subscribers, 0)
    result: dict[str, Assignment] = {}
    for member in ordered:
        mine: dict[uuid.UUID, frozenset[int]] = {}
        for topic_id in partitions:  # topic name order
            if topic_id not in member.topics:
                continue
            quota = quotas[topic_id][0]
            if extra[topic_id] > 0:
                quota += 1
                extra[topic_id] -= 1
            start = next_range[topic_id]
            end = min(start + quota, partitions[topic_id])
            next_range[topic_id] = end
            if start < end:
                mine[topic_id] = frozenset(range(start, end))
        result[member.member_id] = mine
    return result


def uniform_assignor(
    members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int], homogeneous: bool
) -> dict[str, Assignment]:
    if not members:
        return {}
    for member in members:
        for topic_id in member.topics:
            if topic_id not in partitions:
                raise AssignorError(
                    f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata."
                )
    if homogeneous:
        return _uniform_homogeneous(members, partitions)
    return _uniform_heterogeneous(members, partitions)


def _uniform_homogeneous(
    members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    topics = [t for t in partitions if t in members[0].topics]
    if not topics:
        return {m.member_id: {} for m in members}
    assigned_now = {(t, p) for m in members for t, ps in m.assignment.items() for p in ps}
    unassigned = [(t, p) for t in topics for p in range(partitions[t]) if (t, p) not in assigned_now]
    total = sum(partitions[t] for t in topics)
    minimum, extra = divmod(total, len(members))
    result: dict[str, dict[uuid.UUID, set[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    subscribed = set(topics)
    for member in members:
        quota = minimum
        if extra > 0:
            quota += 1
            extra -= 1
        mine: dict[uuid.UUID, set[int]] = {}
        for topic_id, parts in member.assignment.items():
            if topic_id not in subscribed:
                continue
            for p in sorted(parts):
                if p >= partitions[topic_id]:
                    continue  # the topic shrank (it was deleted and made again)
                if quota > 0:
                    quota -= 1
                    mine.setdefault(topic_id, set()).add(p)
                else:
                    unassigned.append((topic_id, p))
        if quota > 0:
            unfilled.append((member.member_id, quota))
        result[member.member_id] = mine
    index = 0
    for member_id, quota in unfilled:
        mine = result[member_id]
        for _ in range(quota):
            if index >= len(unassigned):
                break
            topic_id, p = unassigned[index]
            index += 1
            mine.setdefault(topic_id, set()).add(p)
    if index < len(unassigned):
        raise AssignorError("Partitions were left unassigned")
    return {m: {t: frozenset(ps) for t, ps in a.items() if ps} for m, a in result.items()}


def _uniform_heterogeneous(
    members: Sequence[MemberSpec], partitions: Mapping[uuid.UUID, int]
) -> dict[str, Assignment]:
    order = {m.member_id: i for i, m in enumerate(members)}
    subscribers: dict[uuid.UUID, list[str]] = {t: [] for t in partitions}
    for member in members:
        for topic_id in member.topics:
            subscribers[topic_id].append(member.member_id)
    owner: dict[tuple[uuid.UUID, int], str] = {}
    held: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in members}
    count = dict.fromkeys(held, 0)
    # Stickiness: each member keeps what it has of the topics it still subscribes to.
    for member in members:
        for topic_id, parts in member.assignment.items():
            if topic_id not in member.topics:
                continue
            for p in sorted(parts):
                if p < partitions[topic_id] and (topic_id, p) not in owner:
                    owner[(topic_id, p)] = member.member_id
                    held[member.member_id].setdefault(topic_id, set()).add(p)
                    count[member.member_id] += 1
    # Unassigned partitions go to their least loaded subscriber.
    for topic_id, subs in subscribers.items():
        if not subs:
            continue
        for p in range(partitions[topic_id]):
            if (topic_id, p) in owner:
                continue
            member_id = min(subs, key=lambda m: (count[m], order[m]))
            owner[(topic_id, p)] = member_id
            held[member_id].setdefault(topic_id, set()).add(p)
            count[member_id] += 1
    # Balance: move partitions from the most to the least loaded subscriber of each topic.
    for _ in range(len(members) * max(1, len(partitions))):
        moved = False
        for topic_id, subs in subscribers.items():
            if len(subs) < 2:
                continue
            while True:
                most = max(subs, key=lambda m: (count[m], -order[m]))
                least = min(subs, key=lambda m: (count[m], order[m]))
                if count[most] - count[least] <= 1 or not held[most].get(topic_id):
                    break
                p = max(held[most][topic_id])
                held[most][topic_id].discard(p)
                held[least].setdefault(topic_id, set()).add(p)
                count[most] -= 1
                count[least] += 1
                moved = True
        if not moved:
            break
    return {m: {t: frozenset(ps) for t, ps in a.items() if ps} for m, a in held.items()}


#: The assignors by the names members ask for (``ServerAssignor``) and ``group.consumer.assignors`` lists.
ASSIGNORS: dict[str, Assignor] = {"uniform": uniform_assignor, "range": range_assignor}

#: Kafka's class names of the built-in assignors (``group.consumer.assignors`` takes either).
CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}
