"""The server-side assignors (``uniform``, ``range``) and a member's reconciliation (Kafka's
``CurrentAssignmentBuilder``), without a server."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.consumer_groups.assignors import AssignorError, MemberSpec, range_assignor, uniform_assignor
from controller.consumer_groups.group import (
    Current,
    FencedMember,
    Member,
    MemberState,
    reconcile,
)

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


def spec(member_id: str, topics: set[uuid.UUID], assignment: dict | None = None, instance: str | None = None):
    return MemberSpec(member_id, instance, frozenset(topics), assignment or {})


def test_range_gives_contiguous_ranges_the_first_members_one_more_and_co_partitions() -> None:
    members = [spec("m0", {T1, T2}), spec("m1", {T1, T2})]
    result = range_assignor(members, {T1: 3, T2: 3}, True)
    assert result == {
        "m0": {T1: frozenset({0, 1}), T2: frozenset({0, 1})},
        "m1": {T1: frozenset({2}), T2: frozenset({2})},
    }


def test_range_puts_static_members_first_in_instance_id_order() -> None:
    members = [spec("a", {T1}), spec("b", {T1}, instance="i1"), spec("c", {T1}, instance="i0")]
    result = range_assignor(members, {T1: 4}, True)
    assert result == {"c": {T1: frozenset({0, 1})}, "b": {T1: frozenset({2})}, "a": {T1: frozenset({3})}}


def test_range_with_different_subscriptions_counts_each_topics_own_subscribers() -> None:
    members = [spec("m0", {T1}), spec("m1", {T1, T2})]
    result = range_assignor(members, {T1: 2, T2: 3}, False)
    assert result == {"m0": {T1: frozenset({0})}, "m1": {T1: frozenset({1}), T2: frozenset({0, 1, 2})}}


def test_an_assignor_refuses_a_topic_it_does_not_know() -> None:
    with pytest.raises(AssignorError):
        uniform_assignor([spec("m0", {T1})], {}, True)
    with pytest.raises(AssignorError):
        range_assignor([spec("m0", {T1})], {}, True)


def test_uniform_keeps_what_members_have_up_to_their_quota_and_moves_only_the_rest() -> None:
    first = uniform_assignor([spec("m0", {T1})], {T1: 6}, True)
    assert first == {"m0": {T1: frozenset(range(6))}}
    second = uniform_assignor([spec("m0", {T1}, first["m0"]), spec("m1", {T1})], {T1: 6}, True)
    assert second["m0"] == {T1: frozenset({0, 1, 2})} and second["m1"] == {T1: frozenset({3, 4, 5})}


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(1, 8), min_size=1, max_size=3),
    members=st.integers(1, 5),
    subscriptions=st.lists(st.sets(st.integers(0, 2), min_size=1), min_size=5, max_size=5),
    homogeneous=st.booleans(),
)
def test_uniform_assigns_every_subscribed_partition_once_and_balances(
    counts: list[int], members: int, subscriptions: list[set[int]], homogeneous: bool
) -> None:
    topics = [uuid.UUID(int=10 + i) for i in range(len(counts))]
    partitions = dict(zip(topics, counts, strict=True))
    if homogeneous:
        subs = [set(topics)] * members
    else:
        subs = [{topics[i % len(topics)] for i in s} for s in subscriptions[:members]]
    specs = [spec(f"m{i}", subs[i]) for i in range(members)]
    result = uniform_assignor(specs, partitions, homogeneous)
    owners: dict[tuple[uuid.UUID, int], str] = {}
    for member_id, assignment in result.items():
        for topic_id, parts in assignment.items():
            assert topic_id in next(s.topics for s in specs if s.member_id == member_id)
            for p in parts:
                assert (topic_id, p) not in owners
                owners[(topic_id, p)] = member_id
    subscribed = {t for s in specs for t in s.topics}
    assert set(owners) == {(t, p) for t in subscribed for p in range(partitions[t])}
    if homogeneous:
        sizes = [sum(len(ps) for ps in a.values()) for a in result.values()]
        assert max(sizes) - min(sizes) <= 1
    # Assigning again from the result moves nothing (stickiness).
    again = uniform_assignor(
        [spec(s.member_id, s.topics, result[s.member_id]) for s in specs], partitions, homogeneous
    )
    assert again == result


def member(
    epoch: int, assigned: dict, state: MemberState = MemberState.STABLE, pending: dict | None = None
) -> Member:
    return Member("m", current=Current(epoch, epoch - 1, state, assigned, pending or {}))


FREE = lambda topic_id, partition: -1  # noqa: E731 - nobody else owns anything


def test_a_member_gives_partitions_up_before_it_gets_the_next_epoch() -> None:
    m = member(3, {T1: frozenset({0, 1, 2})})
    target = {T1: frozenset({0}), T2: frozenset({5})}
    first = reconcile(m, 4, target, FREE, [(T1, [0, 1, 2])])
    assert (first.member_epoch, first.state) == (3, MemberState.UNREVOKED_PARTITIONS)
    assert first.assigned == {T1: frozenset({0})} and first.pending_revocation == {T1: frozenset({1, 2})}
    # Still owning a revoked partition: nothing moves.
    waiting = Member("m", current=first)
    assert reconcile(waiting, 4, target, FREE, [(T1, [0, 2])]) == first
    # Revoked: the next epoch, with the new partition (assigned at that epoch).
    done = reconcile(waiting, 4, target, FREE, [(T1, [0])])
    assert (done.member_epoch, done.previous_member_epoch, done.state) == (4, 3, MemberState.STABLE)
    assert done.assigned == target and done.epochs[(T2, 5)] == 4 and done.epochs[(T1, 0)] == 3


def test_a_partition_still_owned_by_another_member_waits() -> None:
    m = member(1, {})
    owner = {(T1, 1): 1}
    current = reconcile(m, 2, {T1: frozenset({0, 1})}, lambda t, p: owner.get((t, p), -1), [])
    assert (current.member_epoch, current.state) == (2, MemberState.UNRELEASED_PARTITIONS)
    assert current.assigned == {T1: frozenset({0})}
    released = reconcile(Member("m", current=current), 2, {T1: frozenset({0, 1})}, FREE, [(T1, [0])])
    assert released.state is MemberState.STABLE and released.assigned == {T1: frozenset({0, 1})}


def test_a_member_in_an_unknown_state_must_rejoin_unless_it_owns_nothing() -> None:
    m = member(2, {T1: frozenset({0})}, MemberState.UNKNOWN)
    with pytest.raises(FencedMember):
        reconcile(m, 2, {T1: frozenset({0})}, FREE, [(T1, [0])])
    assert reconcile(m, 2, {T1: frozenset({0})}, FREE, []).state is MemberState.STABLE
