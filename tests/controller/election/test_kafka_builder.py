"""Kafka's PartitionChangeBuilder, as its own unit tests pin it (PartitionChangeBuilderTest, ELR off).

Fixtures as in those tests: leader epoch 100, partition epoch 200. "Acceptable" brokers are the active ones:
the others are registered but fenced here. Cases about reassignment are left out; those about ELR are
test_kafka_builder_elr.py's.
"""

from __future__ import annotations

import pytest

from controller.cluster import LeaderRecoveryState
from controller.election.api import Trigger
from controller.election.service import Change
from tests.support.dynamics import Sim, make_sim


async def sim_with(partition: dict, acceptable: set[int]) -> Sim:
    """One partition ``foo-0`` with the given registration; brokers 1-4, only ``acceptable`` active."""
    sim = await make_sim(
        [(b, None, b not in acceptable) for b in (1, 2, 3, 4)],
        # Kafka 3.x's rules, as those tests have them (ELR: test_kafka_builder_elr.py).
        properties={
            "auto.leader.rebalance.enable": "false",
            "simulator.eligible.leader.replicas.version": "0",
        },
    )
    sim.dynamics.elections.on_changes = lambda ps: None  # the builder alone: no replication afterwards
    sim.topic("foo", [partition["replicas"]])
    p = sim.p("foo")
    p.isr = list(partition["isr"])
    p.leader = partition["leader"]
    p.leader_epoch, p.partition_epoch = 100, 200
    p.leader_recovery_state = partition.get("recovery", RECOVERED)
    return sim


RECOVERED, RECOVERING = LeaderRecoveryState.RECOVERED, LeaderRecoveryState.RECOVERING
FOO = {"replicas": [2, 1, 3], "isr": [2, 1, 3], "leader": 1}
BAZ = {"replicas": [2, 1, 3], "isr": [1, 3], "leader": 3}
OFFLINE = {"replicas": [2, 1, 3], "isr": [3], "leader": -1}
NOT_3 = {1, 2, 4}


async def change(sim: Sim, target_isr=None, trigger=None):
    [result] = await sim.dynamics.elections.change([Change(sim.p("foo"), target_isr, trigger)], "test")
    p = sim.p("foo")
    return result, (p.leader, list(p.isr), p.leader_epoch, p.partition_epoch)


# testElectLeader: the node each election picks (FOO: acceptable r != 3; BAZ: all acceptable).
@pytest.mark.parametrize(
    ("partition", "acceptable", "trigger", "target_isr", "leader", "unclean"),
    [
        (FOO, NOT_3, Trigger.PREFERRED, None, 2, False),
        (FOO, NOT_3, None, None, 1, False),
        (FOO, NOT_3, Trigger.UNCLEAN, None, 1, False),
        (FOO, NOT_3, None, [1, 3], 1, False),
        (FOO, NOT_3, Trigger.UNCLEAN, [1, 3], 1, False),
        (FOO, NOT_3, None, [3], -1, False),
        (FOO, NOT_3, Trigger.UNCLEAN, [3], 2, True),
        (BAZ, {1, 2, 3, 4}, Trigger.PREFERRED, None, 3, False),
        (BAZ, {1, 2, 3, 4}, None, None, 3, False),
        (BAZ, {1, 2, 3, 4}, Trigger.UNCLEAN, None, 3, False),
    ],
)
async def test_elect_leader(partition, acceptable, trigger, target_isr, leader, unclean) -> None:
    sim = await sim_with(partition, acceptable)
    try:
        _, (elected, isr, _, _) = await change(sim, target_isr, trigger)
        assert elected == leader
        if unclean:
            assert isr == [leader] and sim.p("foo").leader_recovery_state is RECOVERING
    finally:
        await sim.close()


@pytest.mark.parametrize(
    ("partition", "acceptable", "trigger"),
    [(FOO, NOT_3, None), (FOO, NOT_3, Trigger.UNCLEAN), (BAZ, {1, 2, 3, 4}, Trigger.PREFERRED)],
)
async def test_no_change_writes_no_record(partition, acceptable, trigger) -> None:
    sim = await sim_with(partition, acceptable)
    try:
        result, state = await change(sim, None, trigger)
        assert not result.changed
        assert state == (partition["leader"], partition["isr"], 100, 200)
    finally:
        await sim.close()


async def test_isr_change_does_not_bump_the_leader_epoch() -> None:
    sim = await sim_with(FOO, NOT_3)
    try:
        _, state = await change(sim, [2, 1])
        assert state == (1, [2, 1], 100, 201)
    finally:
        await sim.close()


async def test_isr_change_and_leader_change() -> None:
    sim = await sim_with(FOO, NOT_3)
    try:
        _, state = await change(sim, [2, 3])
        assert state == (2, [2, 3], 101, 201)
    finally:
        await sim.close()


@pytest.mark.parametrize(
    ("partition", "acceptable", "target_isr", "expected"),
    [
        (FOO, NOT_3, [3], (2, [2], 101, 201)),  # #1
        (OFFLINE, {1}, None, (1, [1], 101, 201)),  # #2
        (OFFLINE, {1}, [2], (1, [1], 101, 201)),  # #3
    ],
)
async def test_unclean_leader_election(partition, acceptable, target_isr, expected) -> None:
    sim = await sim_with(partition, acceptable)
    try:
        _, state = await change(sim, target_isr, Trigger.UNCLEAN)
        assert state == expected
        assert sim.p("foo").leader_recovery_state is RECOVERING  # LeaderRecoveryState RECOVERING
    finally:
        await sim.close()


async def test_change_in_leadership_does_not_change_recovery_state() -> None:
    sim = await sim_with({"replicas": [1, 2, 3], "isr": [1], "leader": 1, "recovery": RECOVERING}, set())
    try:
        # Nothing acceptable, target ISR empty: the ISR is not written empty, the leader goes.
        _, state = await change(sim, [])
        assert state == (-1, [1], 101, 201) and sim.p("foo").leader_recovery_state is RECOVERING
        for broker in (1, 2, 3):
            sim.cluster.update_broker(broker, "test", fenced=False, held_fenced=False)
        _, state = await change(sim)
        assert state == (1, [1], 102, 202) and sim.p("foo").leader_recovery_state is RECOVERING
    finally:
        await sim.close()


async def test_unclean_sets_leader_recovering_state() -> None:
    sim = await sim_with({"replicas": [1, 2, 3], "isr": [2, 3], "leader": -1}, {1})
    try:
        _, (leader, isr, _, _) = await change(sim, None, Trigger.UNCLEAN)
        assert (leader, isr, sim.p("foo").leader_recovery_state is RECOVERING) == (1, [1], True)
    finally:
        await sim.close()
