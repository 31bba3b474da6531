"""Properties of the data path over interleavings of produce, crash, restart, isolate, a follower that
stops copying, the synthetic workload, and time, on the virtual clock (hypothesis, bounded examples).

A record is *committed* once the high watermark passes it (an acks=all producer is answered then; every
acks=all answer the test waits for is checked to be committed). Under clean elections no committed
record is ever lost; with unclean elections allowed, ``lost_records()`` is exactly the committed records
that are no longer readable once the cluster has recovered. Records are named by (offset, leader epoch
of their batch): an epoch has one leader, which gives an offset once."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.cluster import NO_LEADER, Process
from controller.data_path import DataPath
from controller.records.checks import ClientBatch, check_client_batch
from protocol.codes import ErrorCode
from tests.controller.records.batches import build
from tests.support.dynamics import make_sim

BROKERS = (0, 1, 2)

steps = st.lists(
    st.one_of(
        st.tuples(st.just("produce"), st.integers(1, 4)),
        st.tuples(st.just("crash"), st.sampled_from(BROKERS)),
        st.tuples(st.just("isolate"), st.sampled_from(BROKERS)),
        st.tuples(st.just("restart"), st.sampled_from(BROKERS)),
        st.tuples(st.just("stall"), st.sampled_from(BROKERS)),
        st.tuples(st.just("load"), st.sampled_from([0, 0, 20, 300])),
        st.tuples(st.just("advance"), st.sampled_from([10, 100, 1000, 5000, 12_000])),
    ),
    max_size=30,
)


async def _run(actions: list[tuple[str, int]], unclean: bool, policy: str = "kafka") -> None:
    sim = await make_sim(
        list(BROKERS),
        policy,
        properties={
            "auto.leader.rebalance.enable": "false",
            "replica.lag.time.max.ms": "2000",
            "unclean.leader.election.enable": "true" if unclean else "false",
        },
    )
    data = DataPath(sim.dynamics.config, sim.cluster, sim.clock, sim.dynamics)
    committed: set[tuple[int, int]] = set()
    hook = sim.dynamics.replication.on_high_watermark

    def on_high_watermark(p) -> None:  # type: ignore[no-untyped-def]
        """Every record below the high watermark as it moves up is committed (the logs are small)."""
        leader_log = data.log_of(p, p.leader)
        for batch in leader_log.read(leader_log.log_start_offset, p.high_watermark, 1 << 40):
            for offset in range(batch.base_offset, min(batch.last_offset + 1, p.high_watermark)):
                committed.add((offset, batch.leader_epoch))
        hook(p)

    sim.dynamics.replication.on_high_watermark = on_high_watermark
    answers: list[tuple[asyncio.Future[ErrorCode], set[tuple[int, int]]]] = []
    try:
        sim.topic("t", [[0, 1, 2]])
        p = sim.p("t")
        settings_ = data.topic_settings("t")
        for action, value in actions:
            if action == "produce":
                leader = p.leader
                if leader == NO_LEADER or not sim.cluster.broker_state(leader).serving:
                    continue
                batch = check_client_batch(build(value), 9, settings_.limits, data.now_ms(), "t", 0)
                assert isinstance(batch, ClientBatch)
                appended = data.append(p, batch, settings_)
                records = {(o, p.leader_epoch) for o in range(appended.base_offset, appended.last_offset + 1)}
                answers.append((data.wait_for_high_watermark(p, appended.last_offset + 1), records))
            elif action in ("crash", "isolate"):
                if sim.cluster.broker_state(value).process is Process.UP:
                    await sim.dynamics.stop_broker(value, action)
            elif action == "restart":
                await sim.dynamics.set_replication(value, records_per_s=None)
                if sim.cluster.broker_state(value).process is not Process.UP:
                    await sim.dynamics.start_broker(value)
            elif action == "load":  # the synthetic workload (records per second) beside client batches
                await sim.dynamics.produce_load("t", value)
            elif action == "stall":
                await sim.dynamics.set_replication(value, records_per_s=0)
            else:
                await sim.dynamics.advance(value)
        # Recovery: every broker back and copying, no more load, time for elections and replication.
        await sim.dynamics.produce_load("t", 0)
        for broker in BROKERS:
            await sim.dynamics.set_replication(broker, records_per_s=None)
            if sim.cluster.broker_state(broker).process is not Process.UP:
                await sim.dynamics.start_broker(broker)
        await sim.dynamics.advance(15_000)
        if p.leader == NO_LEADER:  # no ISR member came back first: nothing to read from yet
            return
        leader_log = data.log_of(p, p.leader)
        readable = {
            (offset, batch.leader_epoch)
            for batch in leader_log.read(leader_log.log_start_offset, p.high_watermark, 1 << 40)
            for offset in range(batch.base_offset, batch.last_offset + 1)
        }
        for future, records in answers:
            if future.done() and future.result() is ErrorCode.NONE:
                assert records <= committed  # answered acks=all means committed
        lost = {
            (o, r.leader_epoch) for r in data.lost_records() for o in range(r.first_offset, r.last_offset + 1)
        }
        if unclean or policy == "fluvio":
            assert lost == committed - readable
        else:
            assert lost == set()
            assert committed <= readable
    finally:
        await sim.close()


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_clean_elections_never_lose_a_committed_record(actions: list[tuple[str, int]]) -> None:
    asyncio.run(_run(actions, unclean=False))


@pytest.mark.parametrize("policy", ["kafka", "fluvio"])
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(actions=steps)
def test_lost_records_are_exactly_the_committed_records_no_longer_readable(
    policy: str, actions: list[tuple[str, int]]
) -> None:
    """Fluvio's elections may pick a replica within its lag bound that lacks committed records, whatever
    unclean.leader.election.enable says: the accounting must be exact there too."""
    asyncio.run(_run(actions, unclean=True, policy=policy))
