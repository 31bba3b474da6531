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
