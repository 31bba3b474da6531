"""Scale (issue 33): many connections, a million partitions, a hundred thousand idempotent producers.

Three parts, each against a fresh server process per round (``--rounds``, 3; medians of the rounds):

- **connections**: ``--connections`` (5,000) client connections, opened from ``--client-processes``
  (4) asyncio processes of their own, each connection asking Metadata of one topic once a second (each
  at its own seeded phase within the second; a connection whose last answer has not come skips its turn)
  for ``--seconds`` (10). Reported: the answers' p50 and p99, each connection's first answer apart (it
  pays the connection's setup), requests unanswered, the server's CPU over the run (in cores: CPU seconds
  per second) and its RSS with the connections open, and what that RSS grew by per connection; and the
  client processes' own CPU and how late their event loops ran (a client starved of CPU on a loaded
  machine measures its own lateness as the server's); and the reference, in the same run: one client
  asking Metadata of the same topic every 5 ms on the idle server (its p99), before the connections. Against the simulator (``max.connections`` and
  ``max.connections.per.ip`` raised to hold them: every client is on 127.0.0.1) and against
  librdkafka's mock (its ``rdk:mock`` thread's CPU; its RSS includes the idle client that hosts it).
  Target (the simulator): every request answered, p99 (after the first answers) at most 50 ms.
- **partitions**: ``--partitions`` (1,000,000) partitions of replication factor 3 over ``--brokers``
  (1,000) brokers in three racks, created with CreateTopics (topics of 1,000 partitions, 100 topics a
  request: the simulator's own fast path is its CreateTopics; its scenarios and ``serve`` options create
  topics through it too), ``simulator.max.partitions`` set to the count. Reported: the creation's time,
  the server's RSS per partition, the time of a Metadata of all topics (on a raw socket: from sending it
  to holding the whole answer; twice, the second answered from what the first encoded) and its size;
  meanwhile a well-behaved client (``tests.support.probe``: Metadata of one topic every 5 ms, in a
  process of its own) records its answers. Targets: that client's p99 at most 50 ms and its worst at
  most 250 ms, during the creation and during the Metadata (docs/limits.md); every partition listed.
  Not against the mock: it creates topics only when a Metadata names them (4 partitions each, no
  CreateTopics), so a million partitions are 250,000 auto-created topics, and it keeps its topics in
  a list searched from the start for every topic a request names.
- **producers**: ``--producers`` (100,000) idempotent producers, each an InitProducerId then one Produce
  (acks=all, one record of 100 bytes, sequence 0) to partition ``i % 100`` of a topic of 100 partitions
  (replication factor 1), over ``--producer-connections`` (100) connections from two client processes,
  each connection with 8 producers under way. Reported: the time from the first InitProducerId to the
  last answer, producers per second, the server's CPU per producer and its RSS per producer (what it
  grew by). On the simulator, DescribeProducers of partition 0 then lists its producers (all of them:
  ``simulator.max.producers.per.partition`` is 10,000). Against the simulator and the mock (one broker:
  every partition's leader on the connection). Target: every producer answered without error (both
  peers), and each producer of partition 0 listed (the simulator).

The script exits 1 when a target is missed. The figures go in docs/benchmarks.md ("Scale").

    .venv/bin/python benchmarks/scale.py [--part connections|partitions|producers] [--rounds 3]
        [--connections 5000] [--partitions 1000000] [--brokers 1000] [--producers 100000] [--no-mock]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import socket
import statistics
import struct
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.peers import CLK_TCK, MOCK, MOCK_THREAD, SIM, Server, mock_server, simulator  # noqa: E402

P99_TARGET_MS = 50.0
WORST_TARGET_MS = 250.0
TOPIC = "scale"
PROBE_TOPIC = "probe"
PARTITIONS_PER_TOPIC = 1000
TOPICS_PER_REQUEST = 100
PRODUCER_PARTITIONS = 100
IN_FLIGHT = 8
ANSWER_TIMEOUT = 30.0
#: How long the reference client watches the idle server (Metadata of one topic every 5 ms), seconds.
REFERENCE_SECONDS = 3.0


def raise_fd_limit() -> tuple[int, int]:
    """Raises this process's open-file limit to its hard limit (its children inherit it): the limits after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def median(values: list[float]) -> float:
    return statistics.median(values)


# -- the wire --------------------------------------------------------------------------------------


def _schemas() -> Any:
    from protocol import load_schemas

    return load_schemas()


def request_frame(api_key: int, version: int, data: dict[str, Any], correlation: int = 1) -> bytes:
    from protocol.framing import encode_request

    schemas = _schemas()
    body = schemas.request(api_key).encode(data, version)
    return encode_request(schemas, api_key, version, correlation, "scale-bench", body)


def metadata_frame(topics: list[str] | None, auto_create: bool = False) -> bytes:
    names = None if topics is None else [{"Name": name} for name in topics]
    return request_frame(3, 4, {"Topics": names, "AllowAutoTopicCreation": auto_create})


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


def blocking_answer(bootstrap: str, frame: bytes, timeout: float = 600.0) -> tuple[float, bytes]:
    """Sends ``frame`` on a connection of its own: (seconds until the whole answer is held, the answer)."""
    from tests.support.rawwire import raw_connect, read_response

    sock = raw_connect(bootstrap, timeout=timeout)
    try:
        started = time.perf_counter()
        sock.sendall(frame)
        answer = read_response(sock)
        took = time.perf_counter() - started
    finally:
        sock.close()
    if answer is None:
        raise AssertionError("the server closed the connection unanswered")
    return took, answer


# -- the client processes --------------------------------------------------------------------------


class _Asker(asyncio.Protocol):
    """One client connection: sends the frame at the times :meth:`ask` is called, reads each answer (its
    size prefix and body) and records the time from the send to the answer's last byte."""

    def __init__(self, latencies: list[float], firsts: list[float], failures: list[str]) -> None:
        self.latencies = latencies
        self.firsts = firsts  # each connection's first answer, apart: it pays the connection's setup
        self.answered = False
        self.failures = failures
        self.transport: asyncio.Transport | None = None
        self.sent: float | None = None
        self.buffer = bytearray()
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def ask(self, frame: bytes) -> None:
        if self.lost or self.transport is None:
            return
        if self.sent is not None:  # the last answer has not come: counted unanswered once
            if time.perf_counter() - self.sent > ANSWER_TIMEOUT:
                self.failures.append("metadata: no answer within the timeout")
                self.transport.close()
            return
        self.sent = time.perf_counter()
        self.transport.write(frame)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        while len(buffer) >= 4:
            size = int.from_bytes(buffer[:4], "big")
            if len(buffer) < 4 + size:
                return
            del buffer[: 4 + size]
            if self.sent is not None:
                took = time.perf_counter() - self.sent
                (self.latencies if self.answered else self.firsts).append(took)
                self.answered = True
                self.sent = None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost:
            self.lost = True
            self.failures.append(f"connection lost: {exc!r}")


def worker_connections(params: dict[str, Any]) -> dict[str, Any]:
    """Opens ``count`` connections, says ``ready``, waits for the start time on stdin, then asks Metadata
    on each once a second for ``seconds`` (each connection at its own seeded phase; a connection whose
    last answer has not come skips its turn): every answer's latency, what went wrong, and this process's
    own CPU and how late its event loop ran (a client process starved of CPU measures its own lateness)."""
    frame = metadata_frame([params["topic"]])
    host, port = params["bootstrap"].rsplit(":", 1)
    rng = random.Random(params["seed"])
    latencies: list[float] = []
    firsts: list[float] = []
    failures: list[str] = []
    lateness: list[float] = []
    spent: dict[str, float] = {}

    async def run() -> None:
        loop = asyncio.get_running_loop()
        gate = asyncio.Semaphore(100)

        async def connect() -> _Asker | None:
            async with gate:
                try:
                    _, asker = await asyncio.wait_for(
                        loop.create_connection(lambda: _Asker(latencies, firsts, failures), host, int(port)),
                        30,
                    )
                    return asker
                except (OSError, TimeoutError) as exc:
                    failures.append(f"connect: {exc!r}")
                    return None

        askers = [a for a in await asyncio.gather(*(connect() for _ in range(params["count"]))) if a]
        print("ready", flush=True)
        start_at = float(await loop.run_in_executor(None, sys.stdin.readline))
        begin = loop.time() + max(0.0, start_at - time.time())  # wall clock shared between processes
        cpu = time.process_time()

        def fire(asker: _Asker, when: float) -> None:
            lateness.append(loop.time() - when)
            asker.ask(frame)

        for asker in askers:
            phase = rng.random()
            for k in range(params["seconds"]):
                loop.call_at(begin + phase + k, fire, asker, begin + phase + k)
        await asyncio.sleep(max(0.0, begin + params["seconds"] + 2.0 - loop.time()))
        for asker in askers:
            if asker.sent is not None and not asker.lost:
                failures.append("metadata: unanswered at the end")
            asker.lost = True  # closed by this side from here
            if asker.transport is not None:
                asker.transport.close()
        spent["cpu_s"] = time.process_time() - cpu

    asyncio.run(run())
    return {
        "latencies": latencies,
        "firsts": firsts,
        "failures": failures,
        "cpu_s": spent["cpu_s"],
        "late_p99_ms": percentile(lateness, 0.99) * 1000 if lateness else 0.0,
    }


def worker_producers(params: dict[str, Any]) -> dict[str, Any]:
    """Producers ``first`` .. ``first + count - 1``, over ``connections`` connections: each an
    InitProducerId, then one Produce to partition ``i % partitions``."""
    from controller.records.batch import client_batch
    from protocol.client import KafkaClient

    errors: dict[str, int] = {}
    value = bytes(100)

    async def run() -> None:
        clients = [
            await KafkaClient.connect(params["bootstrap"], request_timeout=ANSWER_TIMEOUT, negotiate=False)
            for _ in range(params["connections"])
        ]
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        ids = iter(range(params["first"], params["first"] + params["count"]))

        async def producer(client: KafkaClient, i: int) -> None:
            init = await client.send(
                "InitProducerIdRequest", {"TransactionalId": None, "TransactionTimeoutMs": 60_000}, 4
            )
            if init["ErrorCode"]:
                errors[f"InitProducerId {init['ErrorCode']}"] = (
                    errors.get(f"InitProducerId {init['ErrorCode']}", 0) + 1
                )
                return
            batch = client_batch(
                [(None, value)], int(time.time() * 1000), (init["ProducerId"], init["ProducerEpoch"], 0)
            )
            partition = {"Index": i % params["partitions"], "Records": batch}
            data = {
                "Acks": -1,
                "TimeoutMs": 30_000,
                "TopicData": [{"Name": TOPIC, "PartitionData": [partition]}],
            }
            answer = await client.send("ProduceRequest", data, 9)
            [code] = [p["ErrorCode"] for t in answer["Responses"] for p in t["PartitionResponses"]]
            if code:
                errors[f"Produce {code}"] = errors.get(f"Produce {code}", 0) + 1

        async def lane(client: KafkaClient) -> None:
            for i in ids:
                try:
                    await producer(client, i)
                except Exception as exc:  # a connection lost or an answer late: counted, reported
                    errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1

        await asyncio.gather(*(lane(c) for c in clients for _ in range(IN_FLIGHT)))
        for client in clients:
            await client.close()

    asyncio.run(run())
    return {"errors": errors}


WORKERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "connections": worker_connections,
    "producers": worker_producers,
}


@contextmanager
def workers(kind: str, params: list[dict[str, Any]]) -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """Client processes, one per ``params``; each is ready once yielded. The yielded function starts them
    all (sending the start time) and returns what each reported."""
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", kind, json.dumps(p)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for p in params
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if line.strip() != "ready":
                raise AssertionError(f"a {kind} client process did not start: {line!r}")

        def go() -> list[dict[str, Any]]:
            start_at = time.time() + 0.2
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write(f"{start_at}\n")
                proc.stdin.flush()
            results = []
            for proc in procs:
                out, _ = proc.communicate(timeout=3600)
                results.append(json.loads(out.splitlines()[-1]))
            return results

        yield go
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


# -- the peers -------------------------------------------------------------------------------------


def server_cpu_s(peer: Server) -> float:
    """CPU seconds of the server: the simulator's whole process, the mock's ``rdk:mock`` thread."""
    if peer.name == MOCK:
        ticks = peer.thread_ticks(MOCK_THREAD)
        assert ticks is not None, "the mock has no rdk:mock thread"
        return ticks / CLK_TCK
    return peer.cpu_ns() / 1e9


@contextmanager
def running(peer: Server) -> Iterator[Server]:
    peer.start()
    try:
        yield peer
    finally:
        peer.stop()


def bootstrap_of(peer: Server) -> str:
    return f"{peer.address[0]}:{peer.address[1]}"


def create_topics(bootstrap: str, topics: list[tuple[str, int, int]]) -> None:
    """CreateTopics of (name, partitions, replication factor), as many a request as are given."""
    frame = request_frame(
        19,
        5,
        {
            "Topics": [
                {"Name": n, "NumPartitions": p, "ReplicationFactor": rf, "Assignments": [], "Configs": []}
                for n, p, rf in topics
            ],
            "timeoutMs": 600_000,
            "validateOnly": False,
        },
    )
    _, answer = blocking_answer(bootstrap, frame)
    decoded = _schemas().response(19).decode(answer[5:], 5)  # correlation id, header's tagged fields
    failed = [t for t in decoded["Topics"] if t["ErrorCode"]]
    assert not failed, failed[:3]


def auto_create(bootstrap: str, topic: str) -> None:
    """The mock's way: a Metadata naming the topic with AllowAutoTopicCreation."""
    blocking_answer(bootstrap, metadata_frame([topic], auto_create=True))
    time.sleep(0.2)


# -- (a) connections -------------------------------------------------------------------------------


def connections_round(peer: Server, args: argparse.Namespace, seed: int) -> dict[str, float]:
    from tests.support.probe import LatencyProbe

    with running(peer):
        bootstrap = bootstrap_of(peer)
        if peer.name == MOCK:
            auto_create(bootstrap, TOPIC)
        else:
            create_topics(bootstrap, [(TOPIC, 6, 3)])
        with LatencyProbe(bootstrap, metadata=True, topic=TOPIC, at_least=REFERENCE_SECONDS) as idle:
            pass  # the reference: one client on the idle server, in the same run
        assert idle.failures == [], idle.failures
        rss_before = peer.rss_mb()
        share = -(-args.connections // args.client_processes)
        counts = [min(share, args.connections - i * share) for i in range(args.client_processes)]
        params = [
            {
                "bootstrap": bootstrap,
                "count": c,
                "seconds": args.seconds,
                "seed": seed * 1000 + i,
                "topic": TOPIC,
            }
            for i, c in enumerate(counts)
            if c > 0
        ]
        with workers("connections", params) as go:
            cpu_before, wall_before = server_cpu_s(peer), time.perf_counter()
            rss_open = peer.rss_mb()
            results = go()
            cpu = server_cpu_s(peer) - cpu_before
            wall = time.perf_counter() - wall_before
    latencies = [x for r in results for x in r["latencies"]]
    firsts = [x for r in results for x in r["firsts"]]
    failures = Counter(x.split(":")[0] for r in results for x in r["failures"])
    if failures:
        print(f"    {peer.name}: {dict(failures)}", flush=True)
    asked = args.connections * args.seconds
    return {
        "p50_ms": percentile(latencies, 0.5) * 1000 if latencies else float("nan"),
        "p99_ms": percentile(latencies, 0.99) * 1000 if latencies else float("nan"),
        "first_p50_ms": percentile(firsts, 0.5) * 1000 if firsts else float("nan"),
        "first_p99_ms": percentile(firsts, 0.99) * 1000 if firsts else float("nan"),
        "unanswered": asked - len(latencies) - len(firsts),
        "failures": sum(failures.values()),
        "cores": cpu / wall,
        "rss_mb": rss_open,
        "kb_per_connection": (rss_open - rss_before) * 1000 / args.connections,
        "idle_p99_ms": percentile(idle.latencies, 0.99) * 1000,
        "client_cores": sum(r["cpu_s"] for r in results) / wall,
        "client_late_p99_ms": max(r["late_p99_ms"] for r in results),
    }


def part_connections(args: argparse.Namespace) -> bool:
    limit = str(args.connections + 100)
    peers: list[Callable[[], Server]] = [
        lambda: simulator("--set", f"max.connections={limit}", "--set", f"max.connections.per.ip={limit}")
    ]
    if not args.no_mock:
        peers.append(lambda: mock_server(3))
    rows = []
    for make in peers:
        runs = [connections_round(make(), args, seed) for seed in range(1, args.rounds + 1)]
        name = make().name
        row = {key: median([r[key] for r in runs]) for key in runs[0]}
        rows.append((name, row))
        print(f"  {name}: {json.dumps({k: round(v, 2) for k, v in row.items()})}", flush=True)
    print()
    print(
        f"Connections: {args.connections:,} connections, Metadata of one topic once a second each, "
        f"{args.seconds} s, medians of {args.rounds} rounds"
    )
    print()
    print(
        "| Server | p50 | p99 | First answer p50 / p99 | Unanswered | Server CPU (cores) | Server RSS "
        "| RSS per connection | Clients' CPU (cores), loop lateness p99 | One client on the idle server: p99 "
        "| Target |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    missed = False
    for name, row in rows:
        target = "-"
        if name == SIM:
            miss = row["unanswered"] > 0 or row["p99_ms"] > P99_TARGET_MS
            missed |= miss
            target = _verdict(f"all answered, p99 <= {P99_TARGET_MS:.0f} ms", miss)
        print(
            f"| {name} | {row['p50_ms']:.1f} ms | {row['p99_ms']:.1f} ms | "
            f"{row['first_p50_ms']:.1f} ms / {row['first_p99_ms']:.1f} ms | {row['unanswered']:.0f} | "
            f"{row['cores']:.2f} | {row['rss_mb']:.0f} MB | {row['kb_per_connection']:.1f} KB | "
            f"{row['client_cores']:.2f}, {row['client_late_p99_ms']:.1f} ms | {row['idle_p99_ms']:.1f} ms | "
            f"{target} |"
        )
    return missed


# -- (b) partitions --------------------------------------------------------------------------------


def brokers_setting(count: int) -> str:
    return ",".join(f"{i}:rack-{'abc'[i % 3]}" for i in range(count))


def count_partitions(answer: bytes) -> int:
    decoded = _schemas().response(3).decode(answer[4:], 4)
    return sum(len(t["Partitions"]) for t in decoded["Topics"] if t["Name"] != PROBE_TOPIC)


def partitions_round(args: argparse.Namespace, check: bool) -> dict[str, float]:
    from tests.support.probe import LatencyProbe

    peer = simulator(
        "--set",
        f"simulator.brokers={brokers_setting(args.brokers)}",
        "--set",
        f"simulator.max.partitions={args.partitions + 1}",
    )
    per_topic = min(PARTITIONS_PER_TOPIC, args.partitions)
    topics = [f"t{i:05d}" for i in range(args.partitions // per_topic)]
    with running(peer):
        bootstrap = bootstrap_of(peer)
        create_topics(bootstrap, [(PROBE_TOPIC, 1, 3)])
        rss_before = peer.rss_mb()
        with LatencyProbe(bootstrap, metadata=True, topic=PROBE_TOPIC, at_least=0.5) as creating:
            started = time.perf_counter()
            for i in range(0, len(topics), TOPICS_PER_REQUEST):
                create_topics(bootstrap, [(t, per_topic, 3) for t in topics[i : i + TOPICS_PER_REQUEST]])
            created_s = time.perf_counter() - started
        rss_created = peer.rss_mb()
        frame = metadata_frame(None)
        with LatencyProbe(bootstrap, metadata=True, topic=PROBE_TOPIC, at_least=0.5) as asking:
            first_s, answer = blocking_answer(bootstrap, frame)
            again_s, _ = blocking_answer(bootstrap, frame)
        rss_asked = peer.rss_mb()
    listed = count_partitions(answer) if check else len(topics) * per_topic
    for probe in (creating, asking):
        assert probe.failures == [], probe.failures
    partitions = len(topics) * per_topic
    return {
        "partitions": partitions,
        "listed": listed,
        "create_s": created_s,
        "bytes_per_partition": (rss_created - rss_before) * 1e6 / partitions,
        "rss_mb": rss_asked,
        "metadata_s": first_s,
        "metadata_again_s": again_s,
        "metadata_mb": len(answer) / 1e6,
        "create_p99_ms": percentile(creating.latencies, 0.99) * 1000,
        "create_worst_ms": creating.worst * 1000,
        "metadata_p99_ms": percentile(asking.latencies, 0.99) * 1000,
        "metadata_worst_ms": asking.worst * 1000,
        "probe_answers": creating.count + asking.count,
    }


def part_partitions(args: argparse.Namespace) -> bool:
    runs = [partitions_round(args, check=(i == 0)) for i in range(args.rounds)]
    row = {key: median([r[key] for r in runs]) for key in runs[0]}
    row["listed"] = runs[0]["listed"]
    print(f"  {SIM}: {json.dumps({k: round(v, 2) for k, v in row.items()})}", flush=True)
    print()
    print(
        f"Partitions: {row['partitions']:,.0f} partitions (RF 3) over {args.brokers:,} brokers, "
        f"medians of {args.rounds} rounds; the well-behaved client asks Metadata of one topic every 5 ms"
    )
    print()
    print("| Measure | placement-sim | Target |")
    print("|---|---|---|")
    create_miss = row["create_p99_ms"] > P99_TARGET_MS or row["create_worst_ms"] > WORST_TARGET_MS
    meta_miss = row["metadata_p99_ms"] > P99_TARGET_MS or row["metadata_worst_ms"] > WORST_TARGET_MS
    list_miss = row["listed"] != row["partitions"]
    bound = f"p99 <= {P99_TARGET_MS:.0f} ms, worst <= {WORST_TARGET_MS:.0f} ms"
    lines = [
        ("Creation (CreateTopics)", f"{row['create_s']:.1f} s", "-"),
        ("Server RSS per partition", f"{row['bytes_per_partition']:,.0f} bytes", "-"),
        ("Server RSS after the Metadata", f"{row['rss_mb']:,.0f} MB", "-"),
        ("Metadata of all topics, first", f"{row['metadata_s']:.2f} s ({row['metadata_mb']:.1f} MB)", "-"),
        ("Metadata of all topics, again", f"{row['metadata_again_s']:.2f} s", "-"),
        (
            "Partitions listed (first round)",
            f"{row['listed']:,.0f}",
            _verdict(f"{row['partitions']:,.0f}", list_miss),
        ),
        (
            "Well-behaved client during the creation: p99 / worst",
            f"{row['create_p99_ms']:.1f} ms / {row['create_worst_ms']:.1f} ms",
            _verdict(bound, create_miss),
        ),
        (
            "Well-behaved client during the Metadata: p99 / worst",
            f"{row['metadata_p99_ms']:.1f} ms / {row['metadata_worst_ms']:.1f} ms",
            _verdict(bound, meta_miss),
        ),
    ]
    for measure, figure, target in lines:
        print(f"| {measure} | {figure} | {target} |")
    print()
    print(
        f"{MOCK}: not run (it has no CreateTopics; a million partitions would be 250,000 auto-created topics)"
    )
    return create_miss or meta_miss or list_miss


def _verdict(target: str, miss: bool) -> str:
    return f"{target}: {'**missed**' if miss else 'met'}"


# -- (c) producers ---------------------------------------------------------------------------------


def producers_round(peer: Server, args: argparse.Namespace) -> dict[str, float]:
    with running(peer):
        bootstrap = bootstrap_of(peer)
        if peer.name == MOCK:
            auto_create(bootstrap, TOPIC)  # the mock's default: 4 partitions; more below
        else:
            create_topics(bootstrap, [(TOPIC, PRODUCER_PARTITIONS, 1)])
        partitions = PRODUCER_PARTITIONS if peer.name == SIM else mock_partitions(bootstrap)
        rss_before = peer.rss_mb()
        half = args.producers // 2
        params = [
            {
                "bootstrap": bootstrap,
                "first": first,
                "count": count,
                "connections": max(1, args.producer_connections // 2),
                "partitions": partitions,
            }
            for first, count in ((0, half), (half, args.producers - half))
            if count > 0
        ]
        with workers("producers", params) as go:
            cpu_before, started = server_cpu_s(peer), time.perf_counter()
            results = go()
            took = time.perf_counter() - started
            cpu = server_cpu_s(peer) - cpu_before
        rss_after = peer.rss_mb()
        listed = described_producers(bootstrap) if peer.name == SIM else -1
    errors: dict[str, int] = {}
    for result in results:
        for kind, n in result["errors"].items():
            errors[kind] = errors.get(kind, 0) + n
    if errors:
        print(f"    {peer.name}: errors {errors}", flush=True)
    return {
        "partitions": partitions,
        "seconds": took,
        "per_s": args.producers / took,
        "cpu_us": cpu * 1e6 / args.producers,
        "bytes_per_producer": (rss_after - rss_before) * 1e6 / args.producers,
        "rss_mb": rss_after,
        "errors": sum(errors.values()),
        "listed": listed,
    }


def mock_partitions(bootstrap: str) -> int:
    _, answer = blocking_answer(bootstrap, metadata_frame([TOPIC]))
    decoded = _schemas().response(3).decode(answer[4:], 4)
    return len(decoded["Topics"][0]["Partitions"])


def described_producers(bootstrap: str) -> int:
    """How many producers DescribeProducers lists for partition 0."""
    frame = request_frame(61, 0, {"Topics": [{"Name": TOPIC, "PartitionIndexes": [0]}]})
    _, answer = blocking_answer(bootstrap, frame)
    decoded = _schemas().response(61).decode(answer[5:], 0)
    [partition] = decoded["Topics"][0]["Partitions"]
    assert partition["ErrorCode"] == 0, partition
    return len(partition["ActiveProducers"])


def part_producers(args: argparse.Namespace) -> bool:
    peers: list[Callable[[], Server]] = [lambda: simulator()]
    if not args.no_mock:
        peers.append(lambda: mock_server(1))
    rows = []
    for make in peers:
        runs = [producers_round(make(), args) for _ in range(args.rounds)]
        name = make().name
        row = {key: median([r[key] for r in runs]) for key in runs[0]}
        row["errors"] = max(r["errors"] for r in runs)
        row["listed"] = min(r["listed"] for r in runs)
        rows.append((name, row))
        print(f"  {name}: {json.dumps({k: round(v, 2) for k, v in row.items()})}", flush=True)
    print()
    print(
        f"Producers: {args.producers:,} idempotent producers (InitProducerId, one Produce acks=all each) over "
        f"{args.producer_connections} connections, medians of {args.rounds} rounds"
    )
    print()
    print(
        "| Server | Partitions | Time | Producers/s | Server CPU per producer | Server RSS per producer "
        "| Server RSS | Errors | Producers of partition 0 listed | Target |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    missed = False
    for name, row in rows:
        expected = sum(1 for i in range(args.producers) if i % row["partitions"] == 0)
        miss = row["errors"] > 0 or (name == SIM and row["listed"] != expected)
        missed |= miss
        listed = f"{row['listed']:,.0f} of {expected:,}" if name == SIM else "-"
        print(
            f"| {name} | {row['partitions']:.0f} | {row['seconds']:.1f} s | {row['per_s']:,.0f} | "
            f"{row['cpu_us']:.0f} us | {row['bytes_per_producer']:,.0f} bytes | {row['rss_mb']:.0f} MB | "
            f"{row['errors']:.0f} | {listed} | {_verdict('no error, every producer listed', miss)} |"
        )
    return missed


# -- main ------------------------------------------------------------------------------------------


PARTS: dict[str, Callable[[argparse.Namespace], bool]] = {
    "connections": part_connections,
    "partitions": part_partitions,
    "producers": part_producers,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("params", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("--part", choices=[*PARTS, "all"], default="all")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=5000)
    parser.add_argument("--client-processes", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--brokers", type=int, default=1000)
    parser.add_argument("--producers", type=int, default=100_000)
    parser.add_argument("--producer-connections", type=int, default=100)
    parser.add_argument("--no-mock", action="store_true", help="the simulator alone")
    args = parser.parse_args()
    soft, hard = raise_fd_limit()
    if args.worker:
        print(json.dumps(WORKERS[args.worker](json.loads(args.params))), flush=True)
        return
    print(f"open files allowed: {soft:,} (hard limit {hard:,}); {socket.gethostname()}", flush=True)
    missed = False
    for name, part in PARTS.items():
        if args.part in (name, "all"):
            print(f"\n== {name}", flush=True)
            missed |= part(args)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
