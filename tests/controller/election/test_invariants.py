"""Properties of the dynamics over random sequences of failures, restarts, load and elections, for both
policies: no leader on a fenced broker, the leader always in the in-sync set, epochs never going back,
the high watermark never going back (but after an unclean election) and never above an in-sync
replica's log end offset; and the same events giving the same event log."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.dynamics import Sim, make_sim

BROKERS = [(0, "a"), (1, "b"), (2, "c"), (3, "a"), (4, "b")]
ASSIGNMENT = [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1], [0, 2, 4]]
MODES = ["crash", "hang", "isolate", "controlled"]

broker = st.integers(0, 4)
operations = st.one_of(
    st.tuples(st.just("stop"), broker, st.sampled_from(MODES)),
    st.tuples(st.just("start"), broker),
    st.tuples(st.just("advance"), st.sampled_from([1, 100, 1_000, 2_000, 9_000, 16_000, 35_000, 95_000])),
    st.tuples(st.just("load"), st.sampled_from(["t", "u"]), st.sampled_from([0, 3, 50, 400])),
    st.tuples(
        st.just("replication"), broker, st.sampled_from([0, 500, 40_000]), st.sampled_from([None, 0, 5, 1000])
    ),
    st.tuples(
        st.just("elect"),
        st.sampled_from(["t", "u"]),
        st.integers(0, 2),
        st.sampled_from(["preferred", "unclean"]),
    ),
    st.tuples(st.just("fail_promotion"), broker, st.booleans()),
)


async def run(policy: str, ops: list[tuple], unclean: str) -> tuple[Sim, list[str]]:
    sim = await make_sim(BROKERS, policy=policy, properties={"unclean.leader.election.enable": unclean})
    sim.topic("t", ASSIGNMENT[:3])
    sim.topic("u", ASSIGNMENT[3:])
    seen: dict[tuple[str, int], tuple[int, int, int]] = {}
    unclean_seen = 0
    for op in ops:
        d = sim.dynamics
        try:
            if op[0] == "stop":
                await d.stop_broker(op[1], op[2])
            elif op[0] == "start":
                await d.start_broker(op[1])
            elif op[0] == "advance":
                await d.advance(op[1])
            elif op[0] == "load":
                await d.produce_load(op[1], op[2])
            elif op[0] == "replication":
                await d.set_replication(op[1], op[2], op[3])
            elif op[0] == "elect":
                await d.elect(op[1], op[2], op[3])
            else:
                await d.fail_promotion(op[1], op[2])
        except ValueError:
            continue  # e.g. stopping a broker that is already stopped
        unclean_now = sum(1 for e in d.events() if "unclean election" in e.cause)
        for p in sim.cluster.partitions():
            key = (p.topic, p.index)
            if p.leader != -1:
                b = sim.cluster.broker_state(p.leader)
                assert b is not None and b.registered and not b.fenced, (
                    f"{p.name} led by fenced broker {p.leader}"
                )
                assert p.leader in p.isr, f"{p.name}: leader {p.leader} outside the in-sync set {p.isr}"
            isr_leos = [leo for r, leo in zip(p.replicas, p.leo, strict=True) if r in p.isr]
            if p.leader != -1 and isr_leos:
                assert p.high_watermark <= min(isr_leos), f"{p.name}: HW {p.high_watermark} above {isr_leos}"
            if key in seen:
                leader_epoch, partition_epoch, hw = seen[key]
                assert p.leader_epoch >= leader_epoch and p.partition_epoch >= partition_epoch
                if unclean_now == unclean_seen:
                    assert p.high_watermark >= hw, f"{p.name}: HW went back from {hw} to {p.high_watermark}"
            seen[key] = (p.leader_epoch, p.partition_epoch, p.high_watermark)
        unclean_seen = unclean_now
    return sim, [str(e) for e in sim.dynamics.events()]


@settings(max_examples=400, deadline=None)
@given(
    policy=st.sampled_from(["kafka", "fluvio"]),
    ops=st.lists(operations, min_size=1, max_size=25),
    unclean=st.sampled_from(["false", "true"]),
)
def test_invariants_hold_and_the_same_events_give_the_same_log(policy, ops, unclean) -> None:
    async def twice() -> tuple[list[str], list[str]]:
        first, log1 = await run(policy, ops, unclean)
        await first.close()
        second, log2 = await run(policy, ops, unclean)
        await second.close()
        return log1, log2

    log1, log2 = asyncio.run(twice())
    assert log1 == log2
