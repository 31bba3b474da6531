"""The classic group protocol case by case, as Kafka's GroupMetadataManagerTest checks it: joins, the
initial delay, generations, protocol votes, syncs, heartbeats, sessions, static members, leaves, commits."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from controller.clock import VirtualClock
from controller.events import EventLog
from controller.groups.classic import GroupState, JoinResult, SyncResult, consumer_subscription
from controller.groups.coordinator import GroupCoordinator, GroupSettings, JoinRequest, OffsetCommit
from protocol.codes import ErrorCode

E = ErrorCode


class Harness:
    def __init__(self, delay_ms: int = 0, **settings: int) -> None:
        self.clock = VirtualClock()
        self.events = EventLog(self.clock.now)
        self.coordinator = GroupCoordinator(
            self.clock,
            GroupSettings(initial_rebalance_delay_ms=delay_ms, **settings),
            seed=7,
            events=self.events,
        )

    def advance(self, ms: int) -> None:
        asyncio.run(self.clock.advance(ms))

    def join(
        self,
        member_id: str = "",
        group: str = "g",
        protocols=(("range", b"r"),),
        session_ms: int = 10_000,
        rebalance_ms: int = 30_000,
        instance_id: str | None = None,
        client_id: str = "c",
        protocol_type: str = "consumer",
        v4: bool = True,
    ) -> list[JoinResult]:
        answers: list[JoinResult] = []
        self.coordinator.join(
            JoinRequest(
                group,
                member_id,
                protocol_type,
                list(protocols),
                session_ms,
                rebalance_ms,
                instance_id,
                require_known_member_id=v4,
                client_id=client_id,
                client_host="/127.0.0.1",
            ),
            answers.append,
        )
        return answers

    def new_member(self, **kw) -> tuple[str, list[JoinResult]]:
        [first] = self.join(**kw)
        assert first.error is E.MEMBER_ID_REQUIRED
        return first.member_id, self.join(first.member_id, **kw)

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments=(),
        group: str = "g",
        instance_id: str | None = None,
    ) -> list[SyncResult]:
        answers: list[SyncResult] = []
        self.coordinator.sync(
            group, generation, member_id, instance_id, "consumer", None, list(assignments), answers.append
        )
        return answers

    def state(self, group: str = "g") -> GroupState:
        return self.coordinator.groups[group].state


def stable_group(h: Harness, count: int = 2) -> list[str]:
    """``count`` dynamic members through one rebalance; the first is the leader."""
    ids, parked = [], []
    for i in range(count):
        member_id, answers = h.new_member(client_id=f"c{i}")
        ids.append(member_id)
        parked.append(answers)
    h.advance(0)
    assert all(len(a) == 1 and a[0].error is E.NONE for a in parked)
    leader = h.coordinator.groups["g"].leader
    h.sync(leader, 1, [(m, m.encode()) for m in ids])
    assert h.state() is GroupState.STABLE
    return ids


def test_a_v4_join_without_a_member_id_gets_member_id_required_and_an_id_from_the_client_id() -> None:
    h = Harness()
    [answer] = h.join(client_id="consumer-1")
    assert answer.error is E.MEMBER_ID_REQUIRED
    assert answer.member_id.startswith("consumer-1-") and len(answer.member_id) == len("consumer-1-") + 36
    assert h.coordinator.groups["g"].pending_members == {answer.member_id}
    assert h.state() is GroupState.EMPTY


def test_member_ids_are_the_same_for_the_same_seed() -> None:
    assert Harness().join()[0].member_id == Harness().join()[0].member_id


@pytest.mark.parametrize("session_ms", [5999, 1_800_001])
def test_a_session_timeout_outside_the_bounds_is_refused(session_ms: int) -> None:
    h = Harness()
    [answer] = h.join(session_ms=session_ms)
    assert answer.error is E.INVALID_SESSION_TIMEOUT
    assert "g" not in h.coordinator.groups


def test_an_empty_group_id_is_invalid() -> None:
    assert Harness().join(group="")[0].error is E.INVALID_GROUP_ID


def test_an_unknown_member_id_in_an_unknown_group_is_refused() -> None:
    assert Harness().join("who")[0].error is E.UNKNOWN_MEMBER_ID


def test_an_empty_protocol_type_or_list_is_inconsistent() -> None:
    h = Harness()
    assert h.join(protocol_type="", v4=False)[0].error is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocols=(), v4=False)[0].error is E.INCONSISTENT_GROUP_PROTOCOL


def test_the_first_join_waits_for_the_initial_rebalance_delay_then_completes() -> None:
    h = Harness(delay_ms=3000)
    member, parked = h.new_member()
    assert parked == [] and h.state() is GroupState.PREPARING_REBALANCE
    h.advance(2999)
    assert parked == []
    h.advance(1)
    [answer] = parked
    assert answer == JoinResult(E.NONE, member, 1, "consumer", "range", member, ((member, None, b"r"),))
    assert h.state() is GroupState.COMPLETING_REBALANCE


def test_a_member_arriving_during_the_initial_delay_extends_it_up_to_the_rebalance_timeout() -> None:
    h = Harness(delay_ms=3000)
    first, parked_first = h.new_member(rebalance_ms=7000)
    h.advance(2000)
    second, parked_second = h.new_member(client_id="d", rebalance_ms=7000)
    h.advance(1000)  # the first delay ends: a member was added, so it waits min(3000, 4000) more
    assert parked_first == [] and parked_second == []
    h.advance(2999)
    assert parked_first == []
    h.advance(1)
    assert parked_first[0].generation == 1 and parked_second[0].generation == 1
    assert {m for m, _, _ in parked_first[0].members} == {first, second}
    assert parked_second[0].members == ()
    assert parked_second[0].leader == first


def test_a_join_before_v4_is_added_at_once_without_member_id_required() -> None:
    h = Harness()
    assert h.join(v4=False) == []
    h.advance(0)
    assert h.state() is GroupState.COMPLETING_REBALANCE


def test_the_protocol_is_chosen_by_vote_among_those_every_member_supports() -> None:
    h = Harness()
    _, a = h.new_member(client_id="a", protocols=(("roundrobin", b"1"), ("range", b"2"), ("sticky", b"3")))
    _, b = h.new_member(client_id="b", protocols=(("sticky", b"4"), ("range", b"5")))
    _, c = h.new_member(client_id="c", protocols=(("range", b"6"), ("sticky", b"7")))
    h.advance(0)
    # roundrobin is not common; votes: a -> range, b -> sticky, c -> range.
    assert a[0].protocol_name == b[0].protocol_name == c[0].protocol_name == "range"
    assert [md for _, _, md in a[0].members] == [b"2", b"5", b"6"]


def test_a_member_without_a_common_protocol_is_refused() -> None:
    h = Harness()
    stable_group(h, 1)
    [answer] = h.join(protocols=(("other", b""),))
    assert answer.error is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocol_type="connect")[0].error is E.INCONSISTENT_GROUP_PROTOCOL


def test_the_protocols_a_newcomer_may_use_follow_the_members_joins_changes_and_leaves() -> None:
    h = Harness()
    both = (("range", b""), ("sticky", b""))
    a, _ = h.new_member(client_id="a", protocols=both)
    b, _ = h.new_member(client_id="b", protocols=both)
    h.advance(0)
    assert h.join(protocols=(("range", b""),))[0].error is E.MEMBER_ID_REQUIRED
    assert h.join(a, protocols=(("sticky", b""),)) == []  # a now supports sticky alone (a rebalance starts)
    assert h.join(protocols=(("range", b""),))[0].error is E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocols=(("sticky", b""),))[0].error is E.MEMBER_ID_REQUIRED
    assert h.coordinator.leave("g", [(a, None)]) == (E.NONE, [E.NONE])
    assert h.join(protocols=(("range", b""),))[0].error is E.MEMBER_ID_REQUIRED  # b supports range
    assert h.join(b, protocols=(("other", b""),))[0].error is E.INCONSISTENT_GROUP_PROTOCOL


def test_sync_hands_each_member_its_assignment_and_the_group_becomes_stable() -> None:
    h = Harness()
    leader, _ = h.new_member(client_id="a")
    follower, _ = h.new_member(client_id="b")
    h.advance(0)
    waiting = h.sync(follower, 1)
    assert waiting == [] and h.state() is GroupState.COMPLETING_REBALANCE
    [mine] = h.sync(leader, 1, [(leader, b"L"), (follower, b"F")])
    assert mine == SyncResult(E.NONE, "consumer", "range", b"L")
    assert waiting == [SyncResult(E.NONE, "consumer", "range", b"F")]
    assert h.state() is GroupState.STABLE
    # Stable: a sync is answered with the current assignment at once.
    assert h.sync(follower, 1) == [SyncResult(E.NONE, "consumer", "range", b"F")]


def test_sync_errors() -> None:
    h = Harness()
    ids = stable_group(h)
    assert h.sync(ids[0], 2)[0].error is E.ILLEGAL_GENERATION
    assert h.sync("nobody", 1)[0].error is E.UNKNOWN_MEMBER_ID
    assert h.sync("x", 1, group="none")[0].error is E.UNKNOWN_MEMBER_ID
    answers: list[SyncResult] = []
    h.coordinator.sync("g", 1, ids[0], None, "consumer", "roundrobin", [], answers.append)
    assert answers[0].error is E.INCONSISTENT_GROUP_PROTOCOL


def test_heartbeats_answer_by_state_generation_and_member() -> None:
    h = Harness()
    leader, follower = stable_group(h)
    c = h.coordinator
    assert c.heartbeat("g", 1, follower, None) is E.NONE
    assert c.heartbeat("g", 0, follower, None) is E.ILLEGAL_GENERATION
    assert c.heartbeat("g", 1, "stranger", None) is E.UNKNOWN_MEMBER_ID
    assert c.heartbeat("none", 1, follower, None) is E.UNKNOWN_MEMBER_ID
    h.join(leader)  # the leader rejoining forces a rebalance
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert c.heartbeat("g", 1, follower, None) is E.REBALANCE_IN_PROGRESS


def test_a_sync_parked_when_a_rebalance_starts_gets_rebalance_in_progress() -> None:
    h = Harness()
    leader, _ = h.new_member(client_id="a")
    follower, _ = h.new_member(client_id="b")
    h.advance(0)
    parked = h.sync(follower, 1)
    h.new_member(client_id="c")  # a new member during CompletingRebalance
    assert parked == [SyncResult(E.REBALANCE_IN_PROGRESS)]
    assert h.state() is GroupState.PREPARING_REBALANCE
    assert h.sync(leader, 1)[0].error is E.REBALANCE_IN_PROGRESS


def test_a_member_whose_session_expires_is_removed_and_the_group_rebalances() -> None:
    h = Harness()
    leader, follower = stable_group(h)
    h.advance(9000)
    assert h.coordinator.heartbeat("g", 1, leader, None) is E.NONE
    h.advance(1000)  # the follower's 10 s session is over
    group = h.coordinator.groups["g"]
    assert list(group.members) == [leader]
    assert group.state is GroupState.PREPARING_REBALANCE
    parked = h.join(leader)
    assert parked[0].generation == 2 and parked[0].members == ((leader, None, b"r"),)


def test_members_that_do_not_rejoin_within_the_rebalance_timeout_are_dropped() -> None:
    h = Harness()
    leader, follower = stable_group(h)
    parked = h.join(follower, rebalance_ms=30_000)  # a changed-nothing follower in Stable: answered at once
    assert parked[0].generation == 1 and parked[0].members == ()
    h.join(leader, rebalance_ms=20_000)
    for _ in range(2):  # the follower keeps its session alive but never rejoins
        h.advance(9000)
        assert h.coordinator.heartbeat("g", 1, follower, None) is E.REBALANCE_IN_PROGRESS
    h.advance(12_000)  # the rebalance timeout (the longest of the members', 30 s) passes
    group = h.coordinator.groups["g"]
    assert list(group.members) == [leader] and group.generation == 2
    assert h.coordinator.heartbeat("g", 1, follower, None) is E.UNKNOWN_MEMBER_ID


def test_a_leader_that_does_not_rejoin_hands_leadership_to_one_that_did() -> None:
    h = Harness()
    leader, follower = stable_group(h)
    parked = h.join(follower, protocols=(("range", b"new"),))  # changed metadata: a rebalance
    assert parked == [] and h.state() is GroupState.PREPARING_REBALANCE
    for _ in range(3):  # the leader heartbeats but never rejoins
        h.advance(9000)
        assert h.coordinator.heartbeat("g", 1, leader, None) is E.REBALANCE_IN_PROGRESS
    h.advance(3000)  # the 30 s rebalance timeout
    [answer] = parked
    assert (answer.error, answer.generation, answer.leader) == (E.NONE, 2, follower)
    assert answer.members == ((follower, None, b"new"),)


def test_static_member_rejoining_with_a_new_id_fences_the_old_one_without_a_rebalance() -> None:
    h = Harness()
    parked = h.join(instance_id="i-1", client_id="a")
    assert parked == []  # static members join at once (no MEMBER_ID_REQUIRED), parked until the delay
    h.advance(0)
    old = parked[0].member_id
    assert old.startswith("i-1-") and parked[0].leader == old
    h.sync(old, 1, [(old, b"mine")], instance_id="i-1")
    [again] = h.join(instance_id="i-1", client_id="a")  # restarted: no member id
    assert again.error is E.NONE and again.member_id != old and again.generation == 1
    assert h.state() is GroupState.STABLE
    assert h.coordinator.heartbeat("g", 1, old, "i-1") is E.FENCED_INSTANCE_ID
    assert h.coordinator.heartbeat("g", 1, again.member_id, "i-1") is E.NONE
    assert h.sync(again.member_id, 1, instance_id="i-1")[0].assignment == b"mine"


def test_static_members_do_not_get_member_id_required() -> None:
    h = Harness()
    assert h.join(instance_id="i-1") == []


def test_leave_group_batched_by_member_id_and_instance_id() -> None:
    h = Harness()
    ids = [h.new_member(client_id="a")[0]]
    assert h.join(instance_id="i-9", client_id="s") == []
    ids.append(h.new_member(client_id="b")[0])
    h.advance(0)
    h.sync(ids[0], 1)
    group = h.coordinator.groups["g"]
    static_id = group.static_members["i-9"]
    error, results = h.coordinator.leave("g", [(ids[1], None), ("", "i-9"), ("ghost", None), ("", "i-0")])
    assert error is E.NONE
    assert results == [E.NONE, E.NONE, E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID]
    assert static_id not in group.members and ids[1] not in group.members
    assert group.state is GroupState.PREPARING_REBALANCE


def test_the_last_member_leaving_empties_the_group_at_the_next_generation() -> None:
    h = Harness()
    [only] = stable_group(h, 1)
    assert h.coordinator.leave("g", [(only, None)]) == (E.NONE, [E.NONE])
    group = h.coordinator.groups["g"]
    assert group.state is GroupState.EMPTY and group.generation == 2 and group.protocol_name is None


def test_commits_are_checked_against_generation_and_member() -> None:
    h = Harness()
    leader, follower = stable_group(h)
    c = h.coordinator
    out: list[list[ErrorCode]] = []
    commit = [OffsetCommit("t", 0, 42, 3, "m")]
    c.commit("g", 1, follower, None, commit, 8, out.append)
    c.commit("g", 0, follower, None, commit, 8, out.append)
    c.commit("g", 1, "nobody", None, commit, 8, out.append)
    c.commit("g", -1, "", None, commit, 8, out.append)  # outside the group while it is not empty
    c.commit("absent", 3, "x", None, commit, 8, out.append)
    c.commit("absent", 3, "x", None, commit, 9, out.append)
    assert out == [
        [E.NONE],
        [E.ILLEGAL_GENERATION],
        [E.UNKNOWN_MEMBER_ID],
        [E.UNKNOWN_MEMBER_ID],
        [E.ILLEGAL_GENERATION],
        [E.GROUP_ID_NOT_FOUND],
    ]
    error, [(topic, partition, kept)] = c.fetch("g", [("t", 0)])
    assert (error, topic, partition, kept.offset, kept.leader_epoch, kept.metadata) == (
        E.NONE,
        "t",
        0,
        42,
        3,
        "m",
    )
    assert c.fetch("g", [("t", 1)])[1] == [("t", 1, None)]


def test_a_commit_during_completing_rebalance_gets_rebalance_in_progress() -> None:
    h = Harness()
    leader, _ = h.new_member()
    h.advance(0)
    out: list[list[ErrorCode]] = []
    h.coordinator.commit("g", 1, leader, None, [OffsetCommit("t", 0, 1)], 8, out.append)
    assert out == [[E.REBALANCE_IN_PROGRESS]]


def test_a_simple_group_commits_outside_group_management_and_lists_as_empty() -> None:
    h = Harness()
    out: list[list[ErrorCode]] = []
    h.coordinator.commit(
        "simple", -1, "", None, [OffsetCommit("t", 1, 5), OffsetCommit("t", 0, 4)], 8, out.append
    )
    assert out == [[E.NONE, E.NONE]]
    assert [g.group_id for g in h.coordinator.list_groups(["empty"])] == ["simple"]
    assert [(t, p, o.offset) for t, p, o in h.coordinator.fetch("simple", None)[1]] == [
        ("t", 0, 4),
        ("t", 1, 5),
    ]


def test_commit_metadata_too_large_is_refused_per_partition() -> None:
    h = Harness()
    out: list[list[ErrorCode]] = []
    h.coordinator.commit(
        "s", -1, "", None, [OffsetCommit("t", 0, 1, -1, "x" * 4097), OffsetCommit("t", 1, 1)], 8, out.append
    )
    assert out == [[E.OFFSET_METADATA_TOO_LARGE, E.NONE]]


def test_delete_groups_only_empty_ones_with_their_offsets() -> None:
    h = Harness()
    stable_group(h, 1)
    h.coordinator.commit("s", -1, "", None, [OffsetCommit("t", 0, 1)], 8, lambda codes: None)
    assert h.coordinator.delete_group("g") is E.NON_EMPTY_GROUP
    assert h.coordinator.delete_group("nope") is E.GROUP_ID_NOT_FOUND
    assert h.coordinator.delete_group("s") is E.NONE
    assert "s" not in h.coordinator.groups and h.coordinator.fetch("s", None) == (E.NONE, [])


def subscription(*topics: str) -> bytes:
    body = struct.pack(">hi", 0, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1)


def test_offset_delete_refuses_topics_the_group_subscribes_to() -> None:
    h = Harness()
    member, _ = h.new_member(protocols=(("range", subscription("orders")),))
    h.advance(0)
    h.sync(member, 1, [(member, b"")])
    for topic in ("orders", "old"):
        h.coordinator.commit("g", 1, member, None, [OffsetCommit(topic, 0, 9)], 8, lambda codes: None)
    error, codes = h.coordinator.delete_offsets("g", [("orders", 0), ("old", 0)])
    assert (error, codes) == (E.NONE, [E.GROUP_SUBSCRIBED_TO_TOPIC, E.NONE])
    assert [t for t, _, _ in h.coordinator.fetch("g", None)[1]] == ["orders"]
    assert h.coordinator.delete_offsets("none", [("x", 0)]) == (E.GROUP_ID_NOT_FOUND, [])


def test_consumer_subscription_reads_the_topics() -> None:
    assert consumer_subscription(subscription("a", "b")) == {"a", "b"}
    assert consumer_subscription(b"\x00") is None


def test_list_groups_filters_by_state_and_type() -> None:
    h = Harness()
    stable_group(h, 1)
    h.coordinator.commit("s", -1, "", None, [OffsetCommit("t", 0, 1)], 8, lambda codes: None)
    c = h.coordinator
    assert [g.group_id for g in c.list_groups()] == ["g", "s"]
    assert [g.group_id for g in c.list_groups(["STABLE"])] == ["g"]
    assert c.list_groups(types=["consumer"]) == []
    assert [g.group_id for g in c.list_groups(types=["Classic"])] == ["g", "s"]


def test_group_changes_are_events() -> None:
    h = Harness()
    stable_group(h, 1)
    changes = [(e.subject, e.changes) for e in h.events]
    assert changes[0][0] == "group g"
    states = [after for _, ch in changes for name, _, after in ch if name == "state"]
    assert states == ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable"]


def test_groups_and_pending_members_are_capped() -> None:
    """What cheap requests leave behind is bounded: at most simulator.max.groups groups (a JoinGroup or a
    simple OffsetCommit that would make one more is GROUP_MAX_SIZE_REACHED) and at most
    simulator.max.pending.members ids handed out with MEMBER_ID_REQUIRED and not yet joined with, in all
    groups (defaults pinned)."""
    from controller.config import ServerConfig

    config = ServerConfig()
    assert (config.max_groups, config.max_pending_members) == (100_000, 50_000)
    assert (GroupSettings().max_groups, GroupSettings().max_pending_members) == (100_000, 50_000)
    h = Harness(max_groups=3, max_pending_members=2)
    [first] = h.join(group="g1")
    [second] = h.join(group="g2")
    assert first.error is second.error is E.MEMBER_ID_REQUIRED
    assert h.coordinator.pending_members == 2
    assert [a.error for a in h.join(group="g3")] == [E.GROUP_MAX_SIZE_REACHED]  # pending members at the cap
    assert [a.error for a in h.join(group="g4")] == [E.GROUP_MAX_SIZE_REACHED]  # groups at the cap
    answers: list[list[ErrorCode]] = []
    h.coordinator.commit("g5", -1, "", None, [OffsetCommit("t", 0, 5)], 8, answers.append)
    assert answers == [[E.GROUP_MAX_SIZE_REACHED]]
    h.join(first.member_id, group="g1")  # a pending member joins: no longer pending
    assert h.coordinator.pending_members == 1
    assert [a.error for a in h.join(group="g3")] == [E.MEMBER_ID_REQUIRED]
    h.advance(10_000)  # the pending members' sessions end
    assert h.coordinator.pending_members == 0


def test_the_counts_kept_for_a_join_phase_match_the_members_over_a_seeded_walk() -> None:
    """Whether every member has rejoined is a count kept as waiters come and go (Kafka's
    numMembersAwaitingJoinResponse), and the members' ids a tuple kept until they change: over joins,
    rejoins with other protocols, static replacements, syncs, leaves and expiries, both stay what a walk
    over the members gives."""
    import random

    h = Harness(delay_ms=100)
    rng = random.Random(11)
    known: list[str] = []
    checked = completed = 0
    for _ in range(1500):
        op = rng.randrange(7)
        group = h.coordinator.groups.get("g")
        if op == 0 or not known:
            answers = h.join(client_id=f"c{rng.randrange(5)}", session_ms=6000)
            if answers and answers[0].error is E.MEMBER_ID_REQUIRED:
                known.append(answers[0].member_id)
                h.join(answers[0].member_id, session_ms=6000)
        elif op == 1:
            protocols = (("range", b"r"),) if rng.random() < 0.7 else (("range", b"x"), ("rr", b"y"))
            h.join(rng.choice(known), protocols=protocols, session_ms=6000)
        elif op == 2:
            h.join(instance_id=f"i{rng.randrange(3)}", client_id="s", session_ms=6000, v4=False)
        elif op == 3 and group is not None and group.members:
            member = rng.choice(list(group.members))
            given = [(m, b"a") for m in group.members] if member == group.leader else []
            completed += sum(a.error is E.NONE for a in h.sync(member, group.generation, given))
        elif op == 4 and group is not None and group.members:
            h.coordinator.leave("g", [(rng.choice(list(group.members)), None)])
        else:
            h.advance(rng.choice((0, 50, 200, 3000, 7000)))
        group = h.coordinator.groups.get("g")
        if group is not None:
            assert group.awaiting[0] == sum(m.join_waiter is not None for m in group.members.values())
            assert group.member_ids() == tuple(group.members)
            assert group.has_all_members_joined() == (
                not group.pending_members and all(m.join_waiter is not None for m in group.members.values())
            )
            checked += 1
    assert checked > 1000 and completed > 10  # the walk went through join phases and syncs


class HeldLog:
    """A ``__consumer_offsets`` whose group writes are answered when the test says (the high watermark
    covering them, or the write failing)."""

    def __init__(self) -> None:
        self.groups: list[tuple[dict, Any]] = []

    def write_group(self, group, respond=None, assignment=None) -> None:
        self.groups.append((group.snapshot(assignment), respond))

    def write_offsets(self, group_id, offsets, respond) -> None:
        respond(E.NONE)

    def write_txn_offsets(self, group_id, producer_id, offsets, respond) -> None:
        respond()


class Rebalanced:
    """Two members through a join phase with a :class:`HeldLog`; every member's SyncGroup sent, the
    leader's last: ``ids`` (the leader first), each member's SyncGroup answers (``synced``), the group's
    record written with the leader's assignment and what answers its write (``record``, ``respond``)."""

    def __init__(self, count: int = 2) -> None:
        h = self.h = Harness()
        h.coordinator.log = log = HeldLog()
        joined = [h.new_member(client_id=f"c{i}")[0] for i in range(count)]
        h.advance(0)
        leader = h.coordinator.groups["g"].leader
        ids = self.ids = sorted(joined, key=lambda m: m != leader)
        synced = [h.sync(m, 1) for m in ids[1:]]
        synced.insert(0, h.sync(leader, 1, [(m, m.encode()) for m in ids]))
        self.synced = synced
        [(self.record, self.respond)] = [w for w in log.groups if w[1] is not None]


def test_the_leaders_assignment_is_handed_out_once_the_groups_record_is_durable() -> None:
    r = Rebalanced()
    assert [m[8] for m in r.record["members"]] == [m.encode() for m in r.ids]  # the record holds it
    assert r.synced == [[], []] and r.h.state() is GroupState.COMPLETING_REBALANCE
    assert r.h.coordinator.groups["g"].members[r.ids[1]].assignment == b""  # not the group's yet
    r.respond(E.NONE)
    assert [a[0].error for a in r.synced] == [E.NONE, E.NONE]
    assert [a[0].assignment for a in r.synced] == [m.encode() for m in r.ids]
    assert r.h.state() is GroupState.STABLE


def test_a_failed_write_of_the_assignment_hands_out_its_error_and_rebalances() -> None:
    r = Rebalanced()
    r.respond(E.NOT_COORDINATOR)
    assert [(a[0].error, a[0].assignment) for a in r.synced] == [(E.NOT_COORDINATOR, b"")] * 2
    assert r.h.state() is GroupState.PREPARING_REBALANCE


def test_an_assignment_stored_after_the_group_moved_on_is_not_handed_out() -> None:
    r = Rebalanced()
    r.h.join(r.ids[0], protocols=(("range", b"new"),))  # a changed rejoin before the write is durable
    assert [a[0].error for a in r.synced] == [E.REBALANCE_IN_PROGRESS] * 2
    r.respond(E.NONE)
    assert r.h.state() is GroupState.PREPARING_REBALANCE
    assert all(m.assignment == b"" for m in r.h.coordinator.groups["g"].members.values())


@pytest.mark.parametrize("outcome", [E.NONE, E.NOT_COORDINATOR])
def test_a_write_that_completes_after_its_group_was_unloaded_does_not_act_on_it(outcome) -> None:
    r = Rebalanced()
    r.h.coordinator.unload("g", E.NOT_COORDINATOR)  # the coordinator moved: the parked syncs are told
    assert [a[0].error for a in r.synced] == [E.NOT_COORDINATOR] * 2
    r.respond(outcome)
    assert r.h.state() is GroupState.COMPLETING_REBALANCE  # neither Stable nor rebalancing here
    assert not [key for key in r.h.coordinator._timers if key[1] == "g"]
    assert all(len(a) == 1 for a in r.synced)
