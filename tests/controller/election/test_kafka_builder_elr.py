"""Eligible leader replicas (KIP-966) in Kafka's PartitionChangeBuilder, as its own tests pin them
(PartitionChangeBuilderTest's testEligibleLeaderReplicas_*, min ISR 3, the last known leader not used);
then the same rules through the controller: fencing empties the ISR into the ELR, a broker that comes
back cleanly leads from it, one that crashed leaves it."""

from __future__ import annotations

from controller.cluster import PartitionState, PartitionStatus
from controller.election.change import ElectionKind, PartitionChangeBuilder
from tests.support.dynamics import make_sim


def partition(isr, leader, elr=(), last_known=(), replicas=(1, 2, 3, 4)) -> PartitionState:
    return PartitionState(
        "foo",
        0,
        list(replicas),
        leader,
        list(isr),
        leader_epoch=100,
        partition_epoch=200,
        leo=[0] * len(replicas),
        caught_up=[0] * len(replicas),
        elr=list(elr),
        last_known_elr=list(last_known),
    )


def build(p: PartitionState, acceptable, target_isr=None, unclean_shutdown=()) -> dict:
    builder = PartitionChangeBuilder(p, frozenset(acceptable)).set_election(ElectionKind.PREFERRED)
    builder.set_eligible_leader_replicas(3).use_last_known_leader(False)
    if unclean_shutdown:
        builder.set_unclean_shutdown_replicas(unclean_shutdown)
    if target_isr is not None:
        builder.set_target_isr(target_isr)
    record = builder.build("test")
    return {} if record is None else dict(record.items())


def test_isr_shrinks_below_min_isr():
    assert build(partition([1, 2, 3, 4], 1), {1, 2, 4}, [1, 2]) == {
        "isr": [1, 2],
        "elr": [3, 4],
        "partition_epoch": 201,
    }


def test_isr_expands_to_min_isr():
    p = partition([1, 2], 1, elr=[3], last_known=[4])
    assert build(p, {1, 2, 4}, [1, 2, 3]) == {
        "isr": [1, 2, 3],
        "elr": [],
        "last_known_elr": [],
        "partition_epoch": 201,
    }


def test_a_new_isr_member_not_in_the_elr_leaves_the_elr_as_it_is():
    p = partition([1], 1, elr=[3], last_known=[2])
    assert build(p, {1, 2, 4}, [1, 4]) == {"isr": [1, 4], "partition_epoch": 201}


def test_unclean_shutdown_replicas_leave_the_elr():
    p = partition([1], 1, elr=[2, 3])
    assert build(p, {1, 2, 4}, unclean_shutdown=[3]) == {
        "elr": [2],
        "last_known_elr": [3],
        "partition_epoch": 201,
    }


def test_an_elr_member_is_elected_cleanly_when_the_isr_is_empty():
    p = partition([1], 1, elr=[3], last_known=[2])
    assert build(p, {2, 3, 4}, []) == {
        "isr": [3],
        "elr": [1],
        "leader": 3,
        "leader_epoch": 101,
        "last_leader": 1,
        "partition_epoch": 201,
    }


def test_the_isr_can_shrink_to_nothing():
    assert build(partition([1, 2, 3, 4], 1), set(), []) == {
        "isr": [],
        "elr": [1, 2, 3, 4],
        "leader": -1,
        "leader_epoch": 101,
        "last_leader": 1,
        "status": PartitionStatus.OFFLINE,
        "partition_epoch": 201,
    }


async def test_the_controller_keeps_the_elr_through_fencing_and_a_clean_return():
    sim = await make_sim(
        [1, 2, 3], properties={"auto.leader.rebalance.enable": "false", "min.insync.replicas": "2"}
    )
    try:
        sim.topic("foo", [[1, 2, 3]])
        await sim.fence(3)
        assert (sim.state("foo"), sim.p("foo").elr) == ((1, [1, 2]), [])
        await sim.dynamics.stop_broker(2, "controlled")  # below min ISR: 2 is eligible
        await sim.dynamics.advance(2000)
        assert (sim.state("foo"), sim.p("foo").elr) == ((1, [1]), [2])
        await sim.fence(1)  # the ISR empties: no leader, 1 joins the ELR
        assert (sim.state("foo"), sim.p("foo").elr) == ((-1, []), [1, 2])
        # 2 shut down cleanly: back, it leads from the ELR, and is the ISR alone.
        await sim.restart(2)
        assert (sim.state("foo"), sim.p("foo").elr) == ((2, [2]), [1])
    finally:
        await sim.close()


async def test_a_broker_back_from_a_crash_leaves_the_elr():
    sim = await make_sim(
        [1, 2, 3], properties={"auto.leader.rebalance.enable": "false", "min.insync.replicas": "2"}
    )
    try:
        sim.topic("foo", [[1, 2, 3]])
        await sim.fence(3, 2, 1)
        assert sim.p("foo").elr == [1, 2]
        await sim.restart(1)  # a new process after a crash: an unclean shutdown
        await sim.dynamics.advance(2000)
        p = sim.p("foo")
        assert (p.leader, p.isr, p.elr, p.last_known_elr) == (-1, [], [2], [1])
    finally:
        await sim.close()


async def test_with_elr_off_the_last_isr_member_stays():
    properties = {"auto.leader.rebalance.enable": "false", "simulator.eligible.leader.replicas.version": "0"}
    sim = await make_sim([1, 2, 3], properties={**properties, "min.insync.replicas": "2"})
    try:
        sim.topic("foo", [[1, 2, 3]])
        await sim.fence(3, 2, 1)
        p = sim.p("foo")
        assert (p.leader, p.isr, p.elr) == (-1, [1], [])
    finally:
        await sim.close()
