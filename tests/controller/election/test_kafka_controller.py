"""Kafka's KRaft controller (ReplicationControlManagerTest, ELR off) on the simulator's clock.

Where Kafka's tests fence a broker by hand, these crash it and let its session expire; where they send
AlterPartition to put a follower back in the ISR, the replication model does it (a follower that has
every record rejoins at the next tick).
"""

from __future__ import annotations

import pytest

from protocol.codes import ErrorCode
from tests.support.dynamics import make_sim

# Kafka 3.x's rules, as ReplicationControlManagerTest has them with ELR off.
NO_REBALANCE = {"auto.leader.rebalance.enable": "false", "simulator.eligible.leader.replicas.version": "0"}


async def test_fence_multiple_brokers() -> None:
    sim = await make_sim([0, 1, 2, 3, 4], properties=NO_REBALANCE)
    try:
        sim.topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
        await sim.fence(2, 3)
        assert sim.state("foo", 0) == (1, [1])
        assert sim.state("foo", 1) == (4, [4])
        assert sim.state("foo", 2) == (0, [0, 1])
    finally:
        await sim.close()


async def test_fencing_a_follower_bumps_only_the_partition_epoch() -> None:
    sim = await make_sim([0, 1, 2, 3, 4], properties=NO_REBALANCE)
    try:
        sim.topic("foo", [[1, 2, 3, 4]])
        await sim.fence(3)
        p = sim.p("foo")
        assert (p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch) == (
            [1, 2, 3, 4],
            [1, 2, 4],
            1,
            0,
            1,
        )
        # Unfencing does not put it back in the ISR by itself; fetching does (AlterPartition in Kafka).
        await sim.dynamics.start_broker(3)
        await sim.dynamics.advance(2000)
        assert sim.p("foo").isr == [1, 2, 4] and sim.cluster.is_active(3)
        await sim.dynamics.advance(100)
        p = sim.p("foo")
        assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ([1, 2, 3, 4], 1, 0, 2)
    finally:
        await sim.close()


async def test_elect_preferred_leaders() -> None:
    # Broker 0 registered but fenced, broker 1 in controlled shutdown.
    sim = await make_sim([(0, None, True), 1, 2, 3, 4], properties=NO_REBALANCE)
    try:
        sim.topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
        await sim.dynamics.stop_broker(1, "controlled")
        assert [sim.state("foo", i) for i in range(3)] == [(2, [2, 3]), (2, [2, 3, 4]), (2, [2])]
        wanted = [("foo", 0), ("foo", 1), ("foo", 2), ("bar", 0), ("bar", 1)]
        outcomes = await sim.dynamics.elect_leaders("preferred", wanted)
        assert [o.error for o in outcomes] == [
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            ErrorCode.ELECTION_NOT_NEEDED,
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ]
        assert outcomes[3].message == "No such topic as bar"
        # Broker 1 registers again, 0 and 1 are unfenced and catch up: the ISRs grow back.
        await sim.dynamics.advance(2000)  # the controlled shutdown completes at the next heartbeat
        await sim.dynamics.start_broker(1)
        await sim.dynamics.start_broker(0)
        await sim.dynamics.advance(2100)
        # A leader asks for a grown ISR in its HashSet's order (Kafka's AlterPartition): by broker id.
        assert [sim.state("foo", i) for i in range(3)] == [(2, [1, 2, 3]), (2, [2, 3, 4]), (2, [0, 1, 2])]
        outcomes = await sim.dynamics.elect_leaders("preferred", wanted)
        assert [o.error for o in outcomes] == [
            None,
            ErrorCode.ELECTION_NOT_NEEDED,
            None,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ]
        assert sim.state("foo", 0)[0] == 1 and sim.state("foo", 2)[0] == 0
    finally:
        await sim.close()


@pytest.mark.parametrize("every", [False, True])
async def test_elect_unclean_leaders(every: bool) -> None:
    sim = await make_sim([0, 1, 2, 3, 4], properties=NO_REBALANCE)
    try:
        sim.topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
        await sim.fence(2, 3)
        await sim.fence(1)
        assert [sim.state("foo", i) for i in range(3)] == [(-1, [1]), (4, [4]), (0, [0])]
        wanted = None if every else [("foo", 0), ("foo", 1), ("foo", 2)]
        outcomes = await sim.dynamics.elect_leaders("unclean", wanted)
        expected = [("foo", 0, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)]
        if not every:
            expected += [("foo", 1, ErrorCode.ELECTION_NOT_NEEDED), ("foo", 2, ErrorCode.ELECTION_NOT_NEEDED)]
        assert [(o.topic, o.partition, o.error) for o in outcomes] == expected
        # Broker 2 comes back: it catches up on foo-1 (ISR [2, 4]) and may lead foo-0 uncleanly.
        await sim.restart(2)
        await sim.dynamics.advance(100)
        assert sim.state("foo", 1) == (4, [2, 4])
        outcomes = await sim.dynamics.elect_leaders("unclean", wanted)
        expected = [("foo", 0, None)]
        if not every:
            expected += [("foo", 1, ErrorCode.ELECTION_NOT_NEEDED), ("foo", 2, ErrorCode.ELECTION_NOT_NEEDED)]
        assert [(o.topic, o.partition, o.error) for o in outcomes] == expected
        assert sim.state("foo", 0) == (2, [2])
        assert sim.state("foo", 1) == (4, [2, 4])  # not moved to its preferred replica
        assert sim.state("foo", 2)[0] == 0
    finally:
        await sim.close()


async def test_a_preferred_election_never_turns_unclean() -> None:
    sim = await make_sim([1, 2, 3, 4], properties=NO_REBALANCE)
    try:
        sim.topic("foo", [[1, 2, 3]])
        await sim.fence(2, 3)
        await sim.fence(1)
        await sim.restart(2)
        assert sim.state("foo") == (-1, [1])
        sim.cluster.topics["foo"].configs["unclean.leader.election.enable"] = "true"
        [outcome] = await sim.dynamics.elect_leaders("preferred", [("foo", 0)])
        assert outcome.error == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        assert sim.state("foo") == (-1, [1])
    finally:
        await sim.close()


@pytest.mark.parametrize("unclean", ["false", "true"])
async def test_unfencing_elects_leaderless_partitions_uncleanly_when_configured(unclean: str) -> None:
    sim = await make_sim(
        [0, 1, 2, 3, 4], properties={**NO_REBALANCE, "unclean.leader.election.enable": unclean}
    )
    try:
        sim.topic("foo", [[1, 2, 4], [1, 3, 4], [0, 2, 4]])
        await sim.fence(0, 1, 2, 3, 4)  # 4 is fenced last: it stays the ISR of every partition
        assert [sim.state("foo", i) for i in range(3)] == [(-1, [4])] * 3
        await sim.restart(2)
        if unclean == "true":
            assert [sim.state("foo", i) for i in range(3)] == [(2, [2]), (-1, [4]), (2, [2])]
        else:
            assert [sim.state("foo", i) for i in range(3)] == [(-1, [4])] * 3
    finally:
        await sim.close()


async def test_automatic_preferred_leader_balancing() -> None:
    sim = await make_sim([(0, None, True), (1, None, True), 2, 3, 4])
    try:
        sim.topic("foo", [[1, 2, 3], [2, 3, 4], [0, 2, 1]])
        assert [sim.state("foo", i)[0] for i in range(3)] == [2, 2, 2]
        await sim.dynamics.start_broker(1)
        await sim.dynamics.advance(2100)  # unfenced at its first heartbeat, back in the ISR at the next tick
        assert sim.state("foo", 0) == (2, [1, 2, 3])
        await sim.dynamics.advance(300_000 - 2100)  # leader.imbalance.check.interval.seconds=300
        assert sim.state("foo", 0)[0] == 1 and sim.state("foo", 2)[0] == 2
        await sim.dynamics.start_broker(0)
        await sim.dynamics.advance(2100)
        assert sim.state("foo", 2) == (2, [0, 1, 2])
        await sim.dynamics.advance(300_000)
        assert sim.state("foo", 2)[0] == 0
        assert [e.cause for e in sim.dynamics.events() if e.change("leader")][
            -1
        ] == "automatic leader rebalance"
    finally:
        await sim.close()


async def test_controlled_shutdown_moves_leaders_first() -> None:
    sim = await make_sim([0, 1, 2], properties=NO_REBALANCE)
    try:
        sim.topic("foo", [[0, 1, 2]])
        await sim.dynamics.stop_broker(0, "controlled")
        b = sim.cluster.broker_state(0)
        assert b is not None and b.state.value == "controlled shutdown"
        assert sim.state("foo") == (1, [1, 2])
        await sim.dynamics.advance(2000)  # it stops at its next heartbeat, fenced
        assert b.state.value == "offline" and b.fenced
    finally:
        await sim.close()


async def test_fencing_removes_every_leadership() -> None:
    sim = await make_sim([0, 1, 2, 3], properties=NO_REBALANCE)
    try:
        sim.topic("foo", [[0, 1, 2], [1, 2, 3], [2, 3, 0], [0, 2, 1]])
        assert [sim.state("foo", i)[0] for i in range(4)] == [0, 1, 2, 0]
        await sim.fence(0)
        assert all(sim.state("foo", i)[0] != 0 for i in range(4))
    finally:
        await sim.close()


async def test_new_partitions_take_the_active_replicas_as_isr() -> None:
    sim = await make_sim([0, 1, (2, None, True)], properties=NO_REBALANCE)
    try:
        await sim.dynamics.stop_broker(1, "controlled")
        sim.topic("foo", [[1, 0, 2]])
        assert sim.state("foo") == (0, [0])
        sim.topic("bar", [[0, 1, 2]])
        assert sim.state("bar") == (0, [0])
    finally:
        await sim.close()


async def test_a_preferred_election_of_a_leaderless_partition_elects_another_isr_member() -> None:
    """ElectLeaders PREFERRED on a leaderless partition whose preferred replica cannot lead falls through
    to the first other valid ISR replica and answers success (ReplicationControlManager.electLeader)."""
    sim = await make_sim([1, 2, 3], properties=NO_REBALANCE)
    try:
        sim.topic("foo", [[1, 2, 3]])
        await sim.fence(1)
        p = sim.p("foo")
        p.leader = -1  # a leaderless partition with live ISR members (Kafka's test builds it by hand)
        [outcome] = await sim.dynamics.elect_leaders("preferred", [("foo", 0)])
        assert outcome.error is None
        assert sim.state("foo") == (2, [2, 3])
    finally:
        await sim.close()


async def test_automatic_balancing_elects_at_most_a_thousand_per_pass_and_goes_on_at_once() -> None:
    """MAX_ELECTIONS_PER_IMBALANCE = 1000: a pass that hits the cap runs the next one immediately."""
    sim = await make_sim([(1, None, True), 2, 3])
    try:
        sim.topic("foo", [[1, 2, 3]] * 1500)
        await sim.dynamics.start_broker(1)
        await sim.dynamics.advance(2100)  # unfenced, and back in every ISR at the next tick
        assert all(sim.state("foo", i) == (2, [1, 2, 3]) for i in range(1500))
        passes: list[tuple[int, int]] = []
        change = sim.dynamics.elections.change

        async def counted(changes, cause):
            if cause == "automatic leader rebalance":
                passes.append((sim.clock.now(), len(changes)))
            return await change(changes, cause)

        sim.dynamics.elections.change = counted
        await sim.dynamics.advance(300_000 - 2100)  # leader.imbalance.check.interval.seconds=300
        assert passes == [(300_000, 1000), (300_000, 500)]
        assert all(sim.state("foo", i)[0] == 1 for i in range(1500))
    finally:
        await sim.close()
