"""Properties of the data path over interleavings of produce, crash, restart, isolate, a follower that
stops copying, the synthetic workload, and time, on the virtual clock (hypothesis, bounded examples).

A record is *committed* once the high watermark passes it (an acks=all producer is answered then; every
acks=all answer the test waits for is checked to be committed). Batches go with acks=all, 1 or 0. Under
clean elections no committed record is ever lost; with unclean elections allowed, ``lost_records()``
holds exactly the acknowledged (not acks=0) committed records that are no longer readable once the
cluster has recovered, and every answered acks=all record is readable or lost with an unclean election
as cause. Beyond the committed records, what ``lost_records()`` holds is acks=1 records none of which a
consumer can read. At every step a consumer reads only below the high watermark, which never passes a
record an in-sync replica lacks. Records are named by (offset, leader epoch of their batch): an epoch has
one leader, which gives an offset once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
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
        st.tuples(st.just("produce"), st.tuples(st.integers(1, 4), st.sampled_from([-1, -1, 1, 0]))),
        st.tuples(st.just("crash"), st.sampled_from(BROKERS)),
        st.tuples(st.just("failover"), st.just(12_000)),
        st.tuples(st.just("lag"), st.just(0)),
        st.tuples(st.just("isolate"), st.sampled_from(BROKERS)),
        st.tuples(st.just("restart"), st.sampled_from(BROKERS)),
        st.tuples(st.just("stall"), st.sampled_from(BROKERS)),
        st.tuples(st.just("load"), st.sampled_from([0, 0, 20, 300])),
        st.tuples(st.just("advance"), st.sampled_from([10, 100, 1000, 5000, 12_000])),
    ),
    max_size=30,
)
sessions = st.sampled_from([1500, 9000])

#: Always tried: acks=1, acks=0 and acks=all batches the followers have not copied when the leader fails.
UNCOPIED = [
    ("produce", (2, 1)),
    ("advance", 100),
    ("lag", 0),
    ("produce", (2, 1)),
    ("produce", (1, 0)),
    ("produce", (2, -1)),
    ("advance", 100),
    ("failover", 12_000),
]


def _check_reads(data: DataPath, p, policy: str) -> None:  # type: ignore[no-untyped-def]
    """What a consumer can read (Fetch reads the leader's log below the high watermark) is held, batch
    for batch, by every in-sync replica. The high watermark never passes the leader's log end, under
    either style (a Fluvio promotion of a replica behind it brings it down to the new leader's)."""
    if p.leader == NO_LEADER:
        return
    leader_log = data.log_of(p, p.leader)
    assert p.high_watermark <= leader_log.log_end_offset
    visible = list(leader_log.read(leader_log.log_start_offset, p.high_watermark, 1 << 40))
    assert all(batch.base_offset < p.high_watermark for batch in visible)
    for r in p.isr:
        replica_log = data.log_of(p, r)
        for batch in visible:
            if batch.base_offset >= replica_log.log_start_offset and not batch.is_synthetic:
                assert replica_log.batch_at(batch.base_offset) is batch


async def _run(actions: list[tuple[str, Any]], unclean: bool, session_ms: int, policy: str = "kafka") -> None:
    sim = await make_sim(
        list(BROKERS),
        policy,
        properties={
            "auto.leader.rebalance.enable": "false",
            "replica.lag.time.max.ms": "2000",
            # 1,500 ms: a crashed leader is fenced before its lagging followers leave the ISR (clean
            # elections of a follower that lacks acks=1 batches); 9,000 ms: after (unclean ones).
            "broker.session.timeout.ms": str(session_ms),
            "broker.heartbeat.interval.ms": "300",
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
    acks_of: dict[tuple[int, int], int] = {}
    try:
        sim.topic("t", [[0, 1, 2]])
        p = sim.p("t")
        settings_ = data.topic_settings("t")
        for action, value in actions:
            if action == "produce":
                leader = p.leader
                if leader == NO_LEADER or not sim.cluster.broker_state(leader).serving:
                    continue
                count, acks = value
                batch = check_client_batch(build(count), 9, settings_.limits, data.now_ms(), "t", 0)
                assert isinstance(batch, ClientBatch)
                appended = data.append(p, batch, settings_, acks)
                records = {(o, p.leader_epoch) for o in range(appended.base_offset, appended.last_offset + 1)}
                acks_of.update(dict.fromkeys(records, acks))
                if acks == -1:
                    assert appended.replicated is not None  # the wait is registered by the append
                    answers.append((appended.replicated, records))
            elif action in ("crash", "isolate"):
                if sim.cluster.broker_state(value).process is Process.UP:
                    await sim.dynamics.stop_broker(value, action)
            elif action == "failover":  # the leader crashes and is fenced: an election follows
                if p.leader != NO_LEADER and sim.cluster.broker_state(p.leader).process is Process.UP:
                    await sim.dynamics.stop_broker(p.leader, "crash")
                await sim.dynamics.advance(value)
            elif action == "restart":
                await sim.dynamics.set_replication(value, records_per_s=None)
                if sim.cluster.broker_state(value).process is not Process.UP:
                    await sim.dynamics.start_broker(value)
            elif action == "load":  # the synthetic workload (records per second) beside client batches
                await sim.dynamics.produce_load("t", value)
            elif action == "lag":  # the leader's followers stop copying (acks=1 batches stay uncopied)
                for follower in p.replicas:
                    if follower != p.leader:
                        await sim.dynamics.set_replication(follower, records_per_s=0)
            elif action == "stall":
                await sim.dynamics.set_replication(value, records_per_s=0)
            else:
                await sim.dynamics.advance(value)
            _check_reads(data, p, policy)
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
        _check_reads(data, p, policy)
        acknowledged_all: set[tuple[int, int]] = set()
        for future, records in answers:
            if future.done() and future.result() is ErrorCode.NONE:
                assert records <= committed  # answered acks=all means committed
                acknowledged_all |= records
        entries = data.lost_records()
        named = [(o, r.leader_epoch) for r in entries for o in range(r.first_offset, r.last_offset + 1)]
        lost = set(named)
        assert len(named) == len(lost)  # a record is accounted lost once
        # acks=0 records, and acks=all records whose wait did not succeed (their producer got an error)
        never_acknowledged = {record for record, acks in acks_of.items() if acks == 0}
        for future, records in answers:
            if not (future.done() and future.result() is ErrorCode.NONE):
                never_acknowledged |= records
        assert all(r.acks in (-1, 1) for r in entries)
        assert not lost & never_acknowledged  # acks=0 records are never losses
        for r in entries:  # each entry's acks is that of the batch it names
            for o in range(r.first_offset, r.last_offset + 1):
                assert acks_of.get((o, r.leader_epoch), -1) == r.acks  # -1: the synthetic workload
        # Every answered acks=all record is readable, or lost by an election that could lose it.
        lost_uncleanly = {
            (o, r.leader_epoch)
            for r in entries
            if not r.cause.startswith("clean election")
            for o in range(r.first_offset, r.last_offset + 1)
        }
        assert acknowledged_all <= readable | lost_uncleanly
        if unclean or policy == "fluvio":
            assert lost & committed == committed - never_acknowledged - readable
        else:
            assert lost & committed == set()
            assert committed <= readable
            assert all(r.cause.startswith("clean election") and r.acks == 1 for r in entries)
        # Beyond the committed records only acks=1 records are lost, and none of them is readable.
        assert all(acks_of[record] == 1 for record in lost - committed)
        assert not (lost - committed) & readable
    finally:
        await sim.close()


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(steps, sessions)
@example(UNCOPIED, 1500)
def test_clean_elections_never_lose_a_committed_record(
    actions: list[tuple[str, Any]], session_ms: int
) -> None:
    asyncio.run(_run(actions, unclean=False, session_ms=session_ms))


@pytest.mark.parametrize("policy", ["kafka", "fluvio"])
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(actions=steps, session_ms=sessions)
@example(actions=UNCOPIED, session_ms=1500)
@example(actions=UNCOPIED, session_ms=9000)
def test_lost_records_are_exactly_the_committed_records_no_longer_readable(
    policy: str, actions: list[tuple[str, Any]], session_ms: int
) -> None:
    """Fluvio's elections may pick a replica within its lag bound that lacks committed records, whatever
    unclean.leader.election.enable says: the accounting must be exact there too."""
    asyncio.run(_run(actions, unclean=True, session_ms=session_ms, policy=policy))
