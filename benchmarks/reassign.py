"""Reassignment cost: every partition of one topic moves one replica, its leader among the moved ones.

In this process, on a virtual clock (the kafka election policy, no sockets): 6 brokers, one topic of
10,000 / 30,000 partitions x RF 3 (partition i on brokers i, i+1, i+2 mod 6). Every partition is reassigned
to brokers i+3, i+1, i+2: one replica added, the leader removed. Measured, as CPU time of this process:
``start``, the AlterPartitionReassignments call (validation, the change records that widen the replicas,
the replication model told); ``complete``, one replication tick (the new replicas copy, join the ISR)
and the controller's completions (the removed leader replaced by the policy's election, one record per
partition). The script checks that every reassignment completed and every leader moved. Each size runs
``--repeat`` times; the best counts (a shared machine only ever adds time).

Target (the script exits 1 if it is missed): the cost per partition at the largest size is within 1.5x of
that at the smallest (nothing grows with the size of the topic: a broker's partition index once did).

    .venv/bin/python benchmarks/reassign.py [--sizes 10000,30000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BROKERS = 6
SIZES = (10_000, 30_000)
TARGET_LINEAR = 1.5


async def measure(partitions: int) -> tuple[float, float]:
    from controller.clock import VirtualClock
    from controller.cluster import Cluster
    from controller.config import ServerConfig
    from controller.dynamics import Dynamics
    from controller.events import EventLog
    from controller.placement.api import UsableBroker

    config = ServerConfig.from_properties(
        {
            "simulator.clock": "virtual",
            "simulator.election.policy": "kafka",
            "auto.leader.rebalance.enable": "false",
        }
    )
    clock = VirtualClock()
    cluster = Cluster(
        [UsableBroker(b, None, False) for b in range(BROKERS)], seed=0, events=EventLog(clock.now)
    )
    dynamics = await Dynamics.start(config, cluster, clock, asyncio.Lock())
    try:
        cluster.add_topic(
            "wide", [[i % BROKERS, (i + 1) % BROKERS, (i + 2) % BROKERS] for i in range(partitions)]
        )
        moves = {
            ("wide", i): [(i + 3) % BROKERS, (i + 1) % BROKERS, (i + 2) % BROKERS] for i in range(partitions)
        }
        began = time.process_time()
        outcomes = await dynamics.reassign(moves)
        started = time.process_time()
        await dynamics.advance(config.replication_tick_ms)
        completed = time.process_time()
        assert all(o.error is None for o in outcomes)
        assert cluster.reassigning() == []
        assert all(p.leader == (p.index + 3) % BROKERS for p in cluster.topics["wide"].partitions)
        return started - began, completed - started
    finally:
        await dynamics.close()
        await clock.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    per_partition = {}
    print(f"{'partitions':>10}  {'start s':>8}  {'complete s':>10}  {'us/partition':>12}")
    for size in sizes:
        runs = [asyncio.run(measure(size)) for _ in range(args.repeat)]
        start, complete = min(runs, key=sum)
        per_partition[size] = (start + complete) / size
        print(f"{size:>10}  {start:>8.3f}  {complete:>10.3f}  {per_partition[size] * 1e6:>12.1f}")
    ratio = per_partition[sizes[-1]] / per_partition[sizes[0]]
    ok = ratio <= TARGET_LINEAR
    print(
        f"cost per partition, {sizes[-1]} over {sizes[0]}: {ratio:.2f}x (target <= {TARGET_LINEAR}x): {'ok' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
