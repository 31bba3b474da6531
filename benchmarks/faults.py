"""Request faults that match nothing cost (next to) nothing: Metadata and Produce with 100 faults registered
against the same server with none, in the same run.

Two ``placement-sim serve`` processes: one without faults, one with 100 faults in ``simulator.faults`` that
match no request of the load (other API keys, client ids, listeners, versions, and topics and partitions
the requests do not name, so that some faults look into every Metadata body and some into every Produce
body). Both servers get the topic ``orders`` (3 partitions x RF 3) up front. Closed-loop load from this
process: 8 connections x 8 requests in flight, of Metadata v12 for ``orders``, then of Produce v9 (acks=1)
of a RecordBatch v2 of 3 records to ``orders`` partition 0; every Produce body differs (its records'
timestamp), as a producer's batches do, so that no Produce is matched from a cache of bodies already
seen. The measure is the server process's CPU time per request (user + system, from /proc), in rounds
that measure both servers back to back (so that a busy machine disturbs both alike); per request kind,
the ratio is the median of the rounds' ratios. Target: at most 1.1x the CPU per request without faults,
for Metadata and for Produce (exit 1 when either misses). For comparison it also prints the dispatch's
own time per Metadata request in this process, with and without the faults.

    .venv/bin/python benchmarks/faults.py [--seconds 1] [--rounds 9]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import struct
import sys
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.server import cpu_seconds, start  # noqa: E402
from controller.answers import Later  # noqa: E402
from controller.assembly import create_server  # noqa: E402
from controller.config import ServerConfig  # noqa: E402
from controller.dispatch import Origin  # noqa: E402
from controller.faults import parse_faults  # noqa: E402
from controller.records.batch import client_batch  # noqa: E402
from protocol import load_schemas  # noqa: E402
from protocol.client import BlockingClient  # noqa: E402
from protocol.codes import ApiKey  # noqa: E402
from protocol.framing import encode_request  # noqa: E402

SCHEMAS = load_schemas()
CONNECTIONS = 8
IN_FLIGHT = 8
TARGET = 1.1
TOPIC = "orders"
PARTITIONS = 3
TOPIC_SPEC = {
    "Name": TOPIC,
    "NumPartitions": PARTITIONS,
    "ReplicationFactor": 3,
    "Assignments": [],
    "Configs": [],
}
METADATA = {
    "Topics": [{"Name": TOPIC}],
    "AllowAutoTopicCreation": False,
    "IncludeTopicAuthorizedOperations": False,
}
#: Distinct Produce bodies, cycled: more than the faults' cache of request bodies holds (4096), so that
#: every Produce is matched afresh, as a producer's ever-new batches are.
PRODUCE_BODIES = 8192
RECORDS = [(b"key-%d" % i, b"value-%d-" % i + b"x" * 40) for i in range(3)]


class Workload(NamedTuple):
    """One kind of request: its API key, version and the bodies sent in turn."""

    name: str
    api_key: ApiKey
    version: int
    bodies: list[bytes]


def metadata_load() -> Workload:
    return Workload(
        "Metadata v12 (one topic)", ApiKey.METADATA, 12, [SCHEMAS.request(3).encode(METADATA, 12)]
    )


def produce_load(count: int = PRODUCE_BODIES) -> Workload:
    """Produce v9, acks=1, of a batch of 3 records to partition 0; the batches differ in their timestamp."""
    produce = SCHEMAS.request(ApiKey.PRODUCE)

    def body(timestamp_ms: int) -> bytes:
        partition = {"Index": 0, "Records": client_batch(RECORDS, timestamp_ms)}
        request = {
            "TransactionalId": None,
            "Acks": 1,
            "TimeoutMs": 5000,
            "TopicData": [{"Name": TOPIC, "PartitionData": [partition]}],
        }
        return produce.encode(request, 9)

    start_ms = int(time.time() * 1000)
    return Workload(
        "Produce v9 acks=1 (3 records)", ApiKey.PRODUCE, 9, [body(start_ms + i) for i in range(count)]
    )


def nothing_matching(count: int = 100) -> str:
    """``count`` faults, none of which matches the benchmark's Metadata and Produce requests."""
    kinds = [
        lambda i: f"error=NOT_CONTROLLER api=CreateTopics client=c{i}",
        lambda i: f"drop client=nobody-{i}",
        lambda i: f"delay=100 api=Metadata broker={100 + i}",
        lambda i: f"error=REQUEST_TIMED_OUT api=Metadata@0-{i % 8} once",
        lambda i: f"error=UNKNOWN_TOPIC_OR_PARTITION api=Metadata topic=absent-{i}",
        lambda i: f"error=NOT_LEADER_OR_FOLLOWER api=Produce topic=absent-{i}",
        lambda i: f"delay=100 api=Produce topic={TOPIC} partition={1 + i % (PARTITIONS - 1)}",
        lambda i: f"close=before api=Produce@0-{i % 9} client=bench",
    ]
    return "; ".join(kinds[i % len(kinds)](i) for i in range(count))


def create_topic(port: int) -> None:
    """``orders``, on a server, before the load."""
    with BlockingClient.connect(f"127.0.0.1:{port}", request_timeout=10) as client:
        answer = client.send("CreateTopicsRequest", {"Topics": [TOPIC_SPEC], "timeoutMs": 5000})
    if answer["Topics"][0]["ErrorCode"] != 0:
        raise RuntimeError(f"creating {TOPIC}: {answer}")


async def load(port: int, seconds: float, workload: Workload) -> int:
    """Closed loop; the number of answers."""
    stop_at = time.perf_counter() + seconds
    count = 0
    bodies = workload.bodies
    sent = 0

    async def one_connection() -> None:
        nonlocal count, sent
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        correlation = 0
        outstanding = 0

        def send() -> None:
            nonlocal correlation, outstanding, sent
            correlation += 1
            outstanding += 1
            body = bodies[sent % len(bodies)]
            sent += 1
            writer.write(
                encode_request(SCHEMAS, workload.api_key, workload.version, correlation, "bench", body)
            )

        for _ in range(IN_FLIGHT):
            send()
        while outstanding:
            n = struct.unpack(">i", await reader.readexactly(4))[0]
            await reader.readexactly(n)
            outstanding -= 1
            count += 1
            if time.perf_counter() < stop_at:
                send()
        writer.close()

    await asyncio.gather(*(one_connection() for _ in range(CONNECTIONS)))
    return count


def cpu_per_request(pid: int, port: int, seconds: float, workload: Workload) -> float:
    before = cpu_seconds(pid)
    answered = asyncio.run(load(port, seconds, workload))
    return (cpu_seconds(pid) - before) / answered * 1e6


def dispatch_microseconds(
    workloads: list[Workload], rounds: int, calls: int = 10_000
) -> dict[str, tuple[float, float]]:
    """In this process, for comparison: the dispatch's time per request of each workload (a Metadata
    answer is kept after the first), without faults and with the 100, in alternating rounds; the medians
    by workload."""

    async def answered(answer: object) -> object:
        while isinstance(answer, Later):
            answer = await answer.run()
        return answer

    async def run() -> dict[str, tuple[float, float]]:
        server = await create_server(ServerConfig.from_properties({"listeners": "127.0.0.1:0"}))
        try:
            dispatcher, faults = server.dispatcher, server.faults
            origin = Origin("127.0.0.1:1")
            create = {"Topics": [TOPIC_SPEC], "timeoutMs": 5000}
            create_frame = encode_request(SCHEMAS, 19, 5, 1, "bench", SCHEMAS.request(19).encode(create, 5))
            await answered(dispatcher.answer(create_frame[4:], origin))
            specs = parse_faults(nothing_matching())
            medians = {}
            for workload in workloads:
                frames = [
                    encode_request(SCHEMAS, workload.api_key, workload.version, 1, "bench", body)[4:]
                    for body in workload.bodies
                ]
                times: dict[bool, list[float]] = {False: [], True: []}
                for _ in range(rounds):
                    for with_faults in (False, True):
                        if with_faults:
                            faults.add_all(specs)
                        await answered(dispatcher.answer(frames[0], origin))
                        started = time.process_time()
                        for i in range(calls):
                            answer = dispatcher.answer(frames[i % len(frames)], origin)
                            if isinstance(answer, Later):
                                await answered(answer)
                        times[with_faults].append((time.process_time() - started) / calls * 1e6)
                        faults.clear()
                medians[workload.name] = (statistics.median(times[False]), statistics.median(times[True]))
            return medians
        finally:
            await server.controller.close()

    return asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    serve = [
        sys.executable,
        "-m",
        "placement_sim.cli.main",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--seed",
        "1",
    ]
    none, some = "no faults", "100 faults matching nothing"
    servers = {none: serve, some: serve + ["--set", f"simulator.faults={nothing_matching()}"]}
    workloads = [metadata_load(), produce_load()]
    started = {name: start(cmd) for name, cmd in servers.items()}
    samples: dict[str, dict[str, list[float]]] = {w.name: {name: [] for name in servers} for w in workloads}
    try:
        for _, port, _ in started.values():
            create_topic(port)
            for workload in workloads:
                asyncio.run(load(port, 0.5, workload))  # warm up
        for _ in range(args.rounds):
            for workload in workloads:
                for name, (proc, port, _) in started.items():
                    samples[workload.name][name].append(
                        cpu_per_request(proc.pid, port, args.seconds, workload)
                    )
    finally:
        for proc, _, _ in started.values():
            proc.terminate()
            proc.wait(10)
    print(
        f"\n{CONNECTIONS} connections x {IN_FLIGHT} in flight, {args.rounds} rounds of {args.seconds:g}s "
        "per request kind, the two servers back to back in each\n"
    )
    print("| requests | server | CPU µs/request (median) | rounds |")
    print("|---|---|---:|---|")
    ratios: dict[str, list[float]] = {}
    for workload in workloads:
        by_server = samples[workload.name]
        for name, values in by_server.items():
            rounds = ", ".join(f"{v:.1f}" for v in values)
            print(f"| {workload.name} | {name} | {statistics.median(values):.1f} | {rounds} |")
        ratios[workload.name] = [f / n for n, f in zip(by_server[none], by_server[some], strict=True)]
    print()
    for name, values in ratios.items():
        print(f"{name}, per round, with faults / without: {', '.join(f'{r:.2f}' for r in values)}")
    for name, (alone_none, alone_some) in dispatch_microseconds(workloads, args.rounds).items():
        print(
            f"in this process, the dispatch alone per {name} request: {alone_none:.2f} µs without faults, "
            f"{alone_some:.2f} µs with the 100 ({alone_some / alone_none:.2f}x)"
        )
    print()
    missed = False
    for name, values in ratios.items():
        ratio = statistics.median(values)
        met = ratio <= TARGET
        missed |= not met
        print(
            f"target for {name}: at most {TARGET}x the CPU per request without faults: "
            f"{'met' if met else 'missed'} ({ratio:.2f}x)"
        )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
