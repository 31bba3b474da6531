"""A broker that crashed during its controlled shutdown and is started again registers afresh: a new
process is not in controlled shutdown (Kafka's ClusterControlManager.registerBroker), it is unfenced at
its first heartbeat and followers on it rejoin the ISR."""

from __future__ import annotations

from controller.cluster import BrokerState
from tests.support.dynamics import make_sim


async def test_a_broker_crashed_in_controlled_shutdown_comes_back_running() -> None:
    sim = await make_sim([0, 1, 2], properties={"auto.leader.rebalance.enable": "false"})
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.stop_broker(0, "controlled")
        await sim.dynamics.stop_broker(0, "crash")
        await sim.dynamics.advance(10_000)  # the session expires: fenced
        assert sim.cluster.broker_state(0).state is BrokerState.OFFLINE
        await sim.dynamics.start_broker(0)
        await sim.dynamics.advance(2_100)  # its first heartbeat, then a replication tick
        b = sim.cluster.broker_state(0)
        assert (b.state, b.in_controlled_shutdown, b.fenced) == (BrokerState.RUNNING, False, False)
        assert sim.state("t") == (1, [0, 1, 2])  # 0 is back in the ISR; 1 still leads
    finally:
        await sim.close()


async def test_starting_a_broker_in_controlled_shutdown_registers_its_new_process_at_once() -> None:
    """``start_broker`` on a broker whose controlled shutdown has begun and not finished: its new process
    registers at once, as Kafka (4.1+, KAFKA-19047: ClusterControlManager.registerBroker lets a new
    incarnation replace one in controlled shutdown) allows; the shutdown is over and never completes, the
    broker is unfenced at its first heartbeat and rejoins the ISR."""
    sim = await make_sim([0, 1, 2], properties={"auto.leader.rebalance.enable": "false"})
    try:
        sim.topic("t", [[0, 1, 2]])
        await sim.dynamics.stop_broker(0, "controlled")
        b = sim.cluster.broker_state(0)
        assert (b.state, sim.state("t")) == (BrokerState.CONTROLLED_SHUTDOWN, (1, [1, 2]))
        epoch = b.epoch
        await sim.dynamics.start_broker(0)
        b = sim.cluster.broker_state(0)
        assert (b.in_controlled_shutdown, b.epoch) == (False, epoch + 1)  # a new incarnation
        await sim.dynamics.advance(10_000)  # past the old shutdown's heartbeat, the new first one, a tick
        b = sim.cluster.broker_state(0)
        assert (b.state, b.in_controlled_shutdown, b.fenced) == (BrokerState.RUNNING, False, False)
        assert sim.state("t") == (1, [0, 1, 2])
    finally:
        await sim.close()
