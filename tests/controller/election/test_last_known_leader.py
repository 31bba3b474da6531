"""Kafka's last-known-leader election (balanced recovery, KIP-966) with eligible leader replicas on: the
last known ELR holds the leader a partition had before it went leaderless, and when its ISR and ELR are
both empty that leader is elected once it is active again, as an unclean election (ISR it alone, its log
RECOVERING). First in Kafka's PartitionChangeBuilder, as its own tests pin it
(PartitionChangeBuilderTest's testEligibleLeaderReplicas_ElectLastKnownLeader*, _IsrCanShrinkToZero and
_ElrCanBeElected with the last known leader on, min ISR 3); then through the controller on a virtual
clock: every replica crashes, and the last leader comes back, or another replica first."""

from __future__ import annotations

from controller.cluster import LeaderRecoveryState, PartitionState
from controller.election.change import ElectionKind, PartitionChangeBuilder
from tests.controller.election.test_kafka_builder_elr import partition
from tests.support.dynamics import Sim, make_sim


def build(p: PartitionState, acceptable, target_isr=None, unclean_shutdown=()) -> dict:
    builder = PartitionChangeBuilder(p, frozenset(acceptable)).set_election(ElectionKind.PREFERRED)
    builder.set_eligible_leader_replicas(3)
    if unclean_shutdown:
        builder.set_unclean_shutdown_replicas(unclean_shutdown)
    if target_isr is not None:
        builder.set_target_isr(target_isr)
    record = builder.build("test")
    return {} if record is None else dict(record.items())


def test_the_last_known_leader_is_elected_when_the_isr_and_elr_are_empty():
    record = build(partition([], -1, last_known=[1]), {1, 2, 3, 4}, [])
    assert {k: record[k] for k in ("isr", "leader", "leader_recovery_state", "last_known_elr")} == {
        "isr": [1],
        "leader": 1,
        "leader_recovery_state": LeaderRecoveryState.RECOVERING,
        "last_known_elr": [],
    }
    assert (record["leader_epoch"], record["partition_epoch"]) == (101, 201)
    assert "elr" not in record


def test_the_last_known_leader_is_not_elected_while_the_elr_has_a_member():
    # ELR [3], 3 fenced: no clean leader, and the last known leader may not be elected either.
    assert build(partition([], -1, elr=[3], last_known=[1]), {1, 2, 4}, []) == {}


def test_the_last_known_leader_is_not_elected_while_it_is_fenced():
    assert build(partition([], -1, last_known=[1]), {2, 3, 4}, []) == {}


def test_a_partition_that_goes_leaderless_remembers_its_leader():
    record = build(partition([1, 2, 3, 4], 1), set(), [])
    assert (record["isr"], record["elr"], record["leader"], record["last_known_elr"]) == (
        [],
        [1, 2, 3, 4],
        -1,
        [1],
    )
    # A later change while leaderless (a replica back from a crash leaves the ELR) keeps it as it is.
    p = partition([], -1, elr=[1, 2, 3, 4], last_known=[1])
    assert build(p, set(), unclean_shutdown=[2]) == {"elr": [1, 3, 4], "partition_epoch": 201}


def test_an_elr_member_elected_cleanly_leaves_the_last_known_elr_empty():
    record = build(partition([1], 1, elr=[3]), {2, 3, 4}, [])
    assert (record["isr"], record["elr"], record["leader"]) == ([3], [1], 3)
    assert "last_known_elr" not in record and "leader_recovery_state" not in record


def test_a_leader_elected_otherwise_empties_the_last_known_elr():
    # ISR [2] (its member back): a clean election; the last known leader is forgotten.
    record = build(partition([2], -1, last_known=[1]), {1, 2}, [2])
    assert (record["leader"], record["last_known_elr"]) == (2, [])
    assert "leader_recovery_state" not in record


# ------------------------------------------------------------------------------------- the controller

ELR_ON = {"auto.leader.rebalance.enable": "false", "simulator.eligible.leader.replicas.version": "1"}


async def all_crashed(min_isr: str, unclean: str = "false") -> Sim:
    """Brokers 1-3, topic foo on [1, 2, 3] (1 leads); every broker crashes, 3 first, 1 last."""
    sim = await make_sim([1, 2, 3], properties={**ELR_ON, "min.insync.replicas": min_isr})
    sim.topic("foo", [[1, 2, 3]], unclean_leader_election_enable=unclean)
    assert sim.state("foo") == (1, [1, 2, 3])
    await sim.fence(3, 2, 1)
    return sim


def elr_state(sim: Sim) -> tuple[int, list[int], list[int], list[int]]:
    p = sim.p("foo")
    return p.leader, p.isr, p.elr, p.last_known_elr


async def test_every_replica_crashes_and_the_last_leader_returns():
    sim = await all_crashed("1")
    try:
        # min ISR 1: only the last ISR member (the leader) went to the ELR; it is the last known leader.
        assert elr_state(sim) == (-1, [], [1], [1])
        await sim.restart(1)  # back from a crash: it leaves the ELR, which empties; unfenced, it leads
        p = sim.p("foo")
        assert elr_state(sim) == (1, [1], [], [])
        assert p.leader_recovery_state is LeaderRecoveryState.RECOVERING
        causes = [e.cause for e in sim.cluster.events if e.subject == "foo-0" and e.change("leader")]
        assert "unclean election of the last known leader 1" in causes[-1]
        await sim.dynamics.advance(2000)  # its log recovered, the others back in sync as they return
        assert sim.p("foo").leader_recovery_state is LeaderRecoveryState.RECOVERED
    finally:
        await sim.close()


async def test_another_replica_back_first_leaves_the_partition_leaderless_until_the_last_leader_returns():
    sim = await all_crashed("1")
    try:
        await sim.restart(2, 3)
        await sim.dynamics.advance(5000)
        assert elr_state(sim) == (-1, [], [1], [1])  # as Kafka: 2 and 3 were not in the ISR nor the ELR
        await sim.restart(1)
        assert elr_state(sim) == (1, [1], [], [])
        await sim.dynamics.advance(2000)
        assert sim.state("foo") == (1, [1, 2, 3])
    finally:
        await sim.close()


async def test_with_unclean_elections_allowed_another_replica_back_first_leads():
    sim = await all_crashed("1", unclean="true")
    try:
        await sim.restart(2)
        # The ELR still holds 1 (fenced): no last-known-leader election; an unclean one takes 2.
        assert elr_state(sim) == (2, [2], [], [])
        assert sim.p("foo").leader_recovery_state is LeaderRecoveryState.RECOVERING
        causes = [e.cause for e in sim.cluster.events if e.subject == "foo-0" and e.change("leader")]
        assert "unclean election: 2 was not in the ISR []" in causes[-1]
    finally:
        await sim.close()


async def test_above_min_isr_1_the_last_leader_waits_for_the_elr_to_empty():
    """min ISR 2: the ISR shrank below it with 2 and 1 in it, so both are in the ELR. The last leader
    back first leaves the ELR but may not lead while 2 is there (fenced); 2 back from its crash leaves it
    too, and the last leader is elected."""
    sim = await all_crashed("2")
    try:
        assert elr_state(sim) == (-1, [], [1, 2], [1])
        await sim.restart(1)
        assert elr_state(sim) == (-1, [], [2], [1])
        await sim.restart(2)
        assert elr_state(sim)[:3] == (1, [1], [])
        elected = [e for e in sim.cluster.events if e.subject == "foo-0" and e.change("leader")][-1]
        assert elected.change("leader_recovery_state") == (0, 1)  # RECOVERED -> RECOVERING
        assert "unclean election of the last known leader 1" in elected.cause
    finally:
        await sim.close()
