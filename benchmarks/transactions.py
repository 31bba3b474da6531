"""Transactions: placement-sim against librdkafka's mock cluster (C), same client, same workload, measured
in the same run.

The peer is the mock cluster inside confluent-kafka's librdkafka (``test.mock.num.brokers=3``, which
serves transactions), started in its own process by ``benchmarks/peers.py --mock 3``. The
simulator is ``placement-sim serve`` with three brokers (seed 1) in another process, its replication
model ticking every ``simulator.replication.tick.ms`` = 1 ms (``--tick-ms``); its followers copy a
leader's append at once (``simulator.replication.fetch.at.once=true``, off by default), so that an
acks=all answer, a coordinator's write to ``__transaction_state`` (replication factor 3, min ISR 2) and
the markers wait for a follower's copy, as on Kafka, not for a tick. This process is the client for
both: one confluent-kafka transactional producer (acks=all, idempotent, as a transactional producer is), the same configuration
against each.

The workload, as the issue sets it: transactions of 10 records (100 bytes each) over 3 partitions of a
topic with 3 replicas (created with CreateTopics on the simulator, auto-created by Metadata on the mock,
which has no CreateTopics), each begun, its records produced, and committed (``commit_transaction``
waits for the coordinator's answer), one after the other. After ``--warm-up`` transactions, ``--txns``
are timed, ``--repeats`` times:

- **transactions per second**: the timed transactions over the wall time from the first begin to the
  last commit's answer;
- **server CPU per transaction**: the server's CPU over the same window, its idle CPU over that wall
  time subtracted, per transaction: for the simulator its whole process (every thread,
  ``/proc/PID/task/*/schedstat``), for the mock its ``rdk:mock`` thread, which serves every broker (the
  rest of its process is the idle client that hosts it).

The medians of the repeats are compared. Targets (the script exits 1 if one is missed): the simulator's
throughput at least the mock's (1.0x), its CPU per transaction at most 1.5x the mock's.

A third server shows the floor (reported, not gated): ``benchmarks/server.py --floor``, the least a
Python server on the same event loop spends per request (an ``asyncio.Protocol`` answering every frame
with one fixed answer), here sent one request at a time on one connection, as a transaction's requests
come (each waits for its answer): its CPU per request, times the requests of a transaction
(:data:`REQUESTS_PER_TXN`: AddPartitionsToTxn, a Produce to each partition's leader, EndTxn), is the
least any Python server could spend per transaction. What the simulator spends above it is its
machinery: the coordinator's records, the markers and their replication through the model.

    .venv/bin/python benchmarks/transactions.py [--txns 300] [--warm-up 30] [--repeats 3] [--tick-ms 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import peers as peer  # noqa: E402
from benchmarks.groups import idle_ns, server_cpu_ns  # noqa: E402

THROUGHPUT_TARGET = 1.0
CPU_TARGET = 1.5
BROKERS = 3
TOPIC = "bench-txn"
PARTITIONS = 3
RECORDS = 10
VALUE = b"v" * 100
TIMEOUT = 60.0
#: The requests of one transaction from confluent-kafka (librdkafka) once its partitions are known:
#: AddPartitionsToTxn, one Produce per partition (each partition's leader on its own broker), EndTxn.
REQUESTS_PER_TXN = 1 + PARTITIONS + 1
FLOOR = "Python floor"


@dataclass
class Run:
    txns: int
    seconds: float
    cpu_ns: float

    @property
    def per_second(self) -> float:
        return self.txns / self.seconds

    @property
    def cpu_us(self) -> float:
        return self.cpu_ns / self.txns / 1000


def simulator(tick_ms: int) -> peer.Server:
    return peer.simulator(
        "--set", "simulator.brokers=0:a,1:b,2:c", "--set", f"simulator.replication.tick.ms={tick_ms}",
        "--set", "simulator.replication.fetch.at.once=true",
    )  # fmt: skip


def mock_server() -> peer.Server:
    return peer.mock_server(BROKERS)


def create_topic(server: peer.Server) -> None:
    """The topic with 3 replicas: CreateTopics on the simulator, a Metadata auto-creation on the mock."""
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = "{}:{}".format(*server.address)
    if server.name == peer.SIM:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(TIMEOUT)
        return
    from confluent_kafka import Producer

    probe = Producer({"bootstrap.servers": bootstrap, "allow.auto.create.topics": True})
    metadata = probe.list_topics(TOPIC, timeout=TIMEOUT)
    partitions = metadata.topics[TOPIC].partitions
    assert len(partitions) >= PARTITIONS and all(len(partitions[p].replicas) == 3 for p in range(PARTITIONS))


def transactional_producer(server: peer.Server, name: str) -> object:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": "{}:{}".format(*server.address),
            "transactional.id": name,
            "linger.ms": 0,
            "socket.timeout.ms": 10_000,
        }
    )
    producer.init_transactions(TIMEOUT)
    return producer


def transactions(producer: object, count: int) -> None:
    for _ in range(count):
        producer.begin_transaction()  # type: ignore[attr-defined]
        for i in range(RECORDS):
            producer.produce(TOPIC, value=VALUE, partition=i % PARTITIONS)  # type: ignore[attr-defined]
        producer.commit_transaction(TIMEOUT)  # type: ignore[attr-defined]


def measure(server: peer.Server, txns: int, warm_up: int, repeats: int) -> list[Run]:
    create_topic(server)
    producer = transactional_producer(server, f"bench-{server.name.replace(' ', '-')}")
    transactions(producer, warm_up)
    runs = []
    for _ in range(repeats):
        idle = idle_ns([server], 1.0)[server.name]
        before = server_cpu_ns(server)
        started = time.perf_counter()
        transactions(producer, txns)
        elapsed = time.perf_counter() - started
        runs.append(Run(txns, elapsed, server_cpu_ns(server) - before - idle * elapsed))
    producer.flush(TIMEOUT)  # type: ignore[attr-defined]
    return runs


def floor_us_per_request(requests: int, repeats: int) -> float:
    """The floor's CPU per request (µs, median of ``repeats``), one request in flight on one connection."""
    import asyncio

    from benchmarks import server as server_bench

    floor = peer.Server(FLOOR, [sys.executable, server_bench.__file__, "--floor", "auto"])
    floor.start()
    try:
        port = floor.address[1]
        asyncio.run(server_bench.load(port, 0.5, 1, 1))  # warm up
        each = []
        for _ in range(repeats):
            idle = idle_ns([floor], 1.0)[FLOOR]
            before = floor.cpu_ns()
            started = time.perf_counter()
            count = asyncio.run(_requests(port, requests))
            elapsed = time.perf_counter() - started
            each.append((floor.cpu_ns() - before - idle * elapsed) / count / 1000)
        return statistics.median(each)
    finally:
        floor.stop()


async def _requests(port: int, count: int) -> int:
    """``count`` requests to the floor, each sent once the last is answered."""
    import asyncio
    import struct

    from benchmarks import server as server_bench
    from protocol.framing import encode_request

    reader, writer = await asyncio.open_connection(peer.HOST, port)
    body = server_bench.SCHEMAS.request(68).encode(server_bench.REQUEST, 0)
    for correlation in range(count):
        writer.write(encode_request(server_bench.SCHEMAS, 68, 0, correlation, "bench", body))
        (n,) = struct.unpack(">i", await reader.readexactly(4))
        await reader.readexactly(n)
    writer.close()
    return count


def report(figures: dict[str, list[Run]], args: argparse.Namespace, floor_us: float) -> int:
    mock, sim = figures[peer.MOCK], figures[peer.SIM]
    rate = {name: statistics.median(r.per_second for r in runs) for name, runs in figures.items()}
    cpu = {name: statistics.median(r.cpu_us for r in runs) for name, runs in figures.items()}
    print(
        f"transactions of {RECORDS} records of {len(VALUE)} B over {PARTITIONS} partitions, acks=all, RF 3; "
        f"{args.txns} timed x {args.repeats} (medians); mock with {BROKERS} brokers; simulator tick "
        f"{args.tick_ms} ms"
    )
    print(f"{'':28}{peer.MOCK:>18}{peer.SIM:>16}{'ratio':>9}{'target':>10}")
    rate_ratio = rate[peer.SIM] / rate[peer.MOCK]
    cpu_ratio = cpu[peer.SIM] / cpu[peer.MOCK]
    rows = [
        (
            "transactions per second",
            rate[peer.MOCK],
            rate[peer.SIM],
            rate_ratio,
            f">= {THROUGHPUT_TARGET:.1f}x",
        ),
        ("server CPU per txn (µs)", cpu[peer.MOCK], cpu[peer.SIM], cpu_ratio, f"<= {CPU_TARGET:.1f}x"),
    ]
    for label, m, s, ratio, target in rows:
        print(f"{label:28}{m:>18.1f}{s:>16.1f}{ratio:>8.2f}x{target:>10}")
    for name, runs in ((peer.MOCK, mock), (peer.SIM, sim)):
        each = ", ".join(f"{r.per_second:.0f}/s {r.cpu_us:.0f} µs" for r in runs)
        print(f"  {name} runs: {each}")
    floor_txn = floor_us * REQUESTS_PER_TXN
    print(
        f"floor (not gated): {FLOOR} {floor_us:.1f} µs per request, one at a time, x {REQUESTS_PER_TXN} "
        f"requests = {floor_txn:.0f} µs per transaction ({floor_txn / cpu[peer.MOCK]:.2f}x the mock); "
        f"the simulator {cpu[peer.SIM] / floor_txn:.2f}x the floor, {cpu[peer.SIM] - floor_txn:.0f} µs above it"
    )
    missed = []
    if rate_ratio < THROUGHPUT_TARGET:
        missed.append(f"throughput {rate_ratio:.2f}x < {THROUGHPUT_TARGET}x")
    if cpu_ratio > CPU_TARGET:
        missed.append(f"CPU per transaction {cpu_ratio:.2f}x > {CPU_TARGET}x")
    if missed:
        print("MISSED: " + "; ".join(missed))
        return 1
    print("every target met")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--txns", type=int, default=300)
    parser.add_argument("--warm-up", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tick-ms", type=int, default=1)
    args = parser.parse_args()
    figures: dict[str, list[Run]] = {}
    for server in (mock_server(), simulator(args.tick_ms)):
        server.start()
        try:
            figures[server.name] = measure(server, args.txns, args.warm_up, args.repeats)
        finally:
            server.stop()
    floor_us = floor_us_per_request(args.txns * REQUESTS_PER_TXN, args.repeats)
    return report(figures, args, floor_us)


if __name__ == "__main__":
    sys.exit(main())
