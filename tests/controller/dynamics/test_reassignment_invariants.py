"""Reassignments among random failures, restarts, load, replication limits, elections and partitions added
(Kafka's policy):
after every step the partition state holds together (the leader in the ISR, the ISR within the replicas,
the adding and removing replicas within them and apart, the logs aligned with the replicas, the
cluster's indexes by broker and of reassigning partitions matching the partitions); once every broker
is back and copies freely, every reassignment completes; and the same steps give the same event log."""

from __future__ import annotations

import asyncio

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.support.dynamics import Sim, make_sim

BROKERS = [(0, "a"), (1, "b"), (2, "c"), (3, "a"), (4, "b")]
ASSIGNMENT = [[0, 1, 2], [1, 2, 3], [2, 3, 4]]

broker = st.integers(0, 4)
operations = st.one_of(
    st.tuples(st.just("stop"), broker, st.sampled_from(["crash", "hang", "controlled"])),
    st.tuples(st.just("start"), broker),
    st.tuples(st.just("advance"), st.sampled_from([1, 100, 1_000, 9_000, 35_000])),
    st.tuples(st.just("load"), st.sampled_from([0, 50, 400])),
    st.tuples(st.just("replication"), broker, st.sampled_from([None, 0, 20])),
    st.tuples(st.just("elect"), st.integers(0, 2), st.sampled_from(["preferred", "unclean"])),
    st.tuples(st.just("grow"), st.lists(broker, min_size=1, max_size=3, unique=True)),
    st.tuples(
        st.just("reassign"),
        st.integers(0, 2),
        st.one_of(st.none(), st.lists(broker, min_size=1, max_size=4, unique=True)),
    ),
)


def check(sim: Sim) -> None:
    cluster = sim.cluster
    reassigning = []
    for p in cluster.partitions():
        assert len(set(p.replicas)) == len(p.replicas), p
        assert len(p.leo) == len(p.replicas) == len(p.caught_up), p
        assert set(p.isr) <= set(p.replicas), p
        assert p.leader == -1 or p.leader in p.isr, p
        assert set(p.adding_replicas) <= set(p.replicas) and set(p.removing_replicas) <= set(p.replicas), p
        assert not set(p.adding_replicas) & set(p.removing_replicas), p
        if p.adding_replicas or p.removing_replicas:
            reassigning.append(p)
    assert cluster.reassigning() == reassigning
    for b in range(5):
        assert cluster.partitions_on(b) == [p for p in cluster.partitions() if b in p.replicas]
    assert dict(cluster.view().assignments) == {
        (p.topic, p.index): tuple(p.replicas) for p in cluster.partitions()
    }


async def run(ops: list[tuple]) -> tuple[Sim, list[str]]:
    sim = await make_sim(BROKERS, properties={"auto.leader.rebalance.enable": "false"})
    sim.topic("t", ASSIGNMENT)
    d = sim.dynamics
    for op in ops:
        try:
            if op[0] == "stop":
                await d.stop_broker(op[1], op[2])
            elif op[0] == "start":
                await d.start_broker(op[1])
            elif op[0] == "advance":
                await d.advance(op[1])
            elif op[0] == "load":
                await d.produce_load("t", op[1])
            elif op[0] == "replication":
                await d.set_replication(op[1], records_per_s=op[2])
            elif op[0] == "elect":
                await d.elect("t", op[1], op[2])
            elif op[0] == "grow":
                sim.cluster.add_partitions("t", [op[1]], now=sim.clock.now())
            else:
                await d.reassign({("t", op[1]): op[2]})
        except ValueError:
            continue  # e.g. stopping a broker that is already stopped
        check(sim)
    # Every broker back, copying freely, no new records: every reassignment completes.
    await d.produce_load("t", 0)
    await d.advance(10_000)  # controlled shutdowns end (the broker stops)
    for b in range(5):
        await d.set_replication(b, records_per_s=None)
    # Twice: a hung broker resumed in the middle of a controlled shutdown finishes it (it stops), and is
    # started again the second time.
    for _ in range(2):
        for b in range(5):
            if sim.cluster.broker_state(b).process.value != "up":
                await d.start_broker(b)
        await d.advance(10_000)
    await d.advance(50_000)
    check(sim)
    assert sim.cluster.reassigning() == []
    return sim, [str(e) for e in d.events()]


@settings(max_examples=150, deadline=None)
@example(ops=[("stop", 0, "controlled"), ("stop", 0, "hang"), ("reassign", 0, [0])])
@given(ops=st.lists(operations, min_size=1, max_size=25))
def test_reassignments_hold_together_complete_and_repeat(ops) -> None:
    async def twice() -> tuple[list[str], list[str]]:
        first, log1 = await run(ops)
        await first.close()
        second, log2 = await run(ops)
        await second.close()
        return log1, log2

    log1, log2 = asyncio.run(twice())
    assert log1 == log2
