"""Server CPU per request: placement-sim against librdkafka's mock cluster (C), same requests, same load.

The gating peer is the mock cluster that ships inside confluent-kafka's librdkafka: a client created
with ``test.mock.num.brokers=6`` starts it in its own process (``benchmarks/peers.py --mock``), which
prints the first broker's address and then idles. Beside it (``--peers``, both by default, not gated):
franz-go's kfake (Go) with 6 brokers, and a real Apache Kafka cluster (6 brokers in 3 racks under a
dedicated controller, ``harness/kafka_cluster.py``, its JVMs with the full JIT), whose CPU is that of
all its JVMs, its idle CPU (heartbeats, the controller's no-op records) subtracted; every peer is
started, stopped and read by ``benchmarks/peers.py``. The simulator is ``placement-sim serve`` (6 brokers in 3
racks, striped, seed 1) in another process. This process is the load generator for both: one
pre-encoded request frame per case, the same bytes to both servers, sent in a closed loop of 8
connections x 8 requests in flight. Before and after each run it reads the server process's CPU time
(utime + stime from /proc/<pid>/stat, in clock ticks), subtracts the process's idle CPU over the same
wall time (measured for both processes together, with no load) and divides by the requests: µs of
server CPU per request. Both servers get the same request count per case, after a 1 s warm-up each:
about ``--seconds`` on the slower one, raised (up to 4x that) until the cheaper one spends at least
100 ticks, so that one tick is at most 1% of either figure. The other peers get the same count too, or, if
one is slower, what it answers in about ``--seconds`` (at least 1,000 requests): their counts and CPU
ticks are in the load table. The mock's own thread (``rdk:mock``,
which serves all its brokers) is also read alone: the rest of its process is the client hosting it.

Topics: the simulator, kfake and Kafka get them through CreateTopics (4 partitions x RF 3 each, sent
to the broker Metadata names controller, then until Metadata shows every partition led); the mock has no
CreateTopics handler, so they are auto-created by one Metadata request naming them (the mock's
defaults are 4 partitions and RF min(3, brokers) = 3). Both then hold the same topic names with 4
partitions x 3 replicas each, checked before any load.

A third server shows the floor: the least a Python server on the same event loop (uvloop) can spend
per request. It is this script with ``--floor``: an ``asyncio.Protocol`` that cuts frames by their size
prefix and answers each from a table of the simulator's own answers to those exact request bytes
(given to it per case), with nothing else: no header parsing, no checks, no counters, no flow control.
The simulator's ratio to it is what its machinery costs; the floor's ratio to the mock is what Python
and its event loop cost, which no server in Python goes below.

Cases: ApiVersions v2; Metadata v12 for all topics; Metadata v12 for 5 named topics. Start: from the
process spawn to the first ApiVersions v2 answer on the printed bootstrap address (same interpreter,
same site-packages for both; median of several runs), as wall time and as the CPU the process used
until then; the Python floor's start (the least process that answers it) beside them; kfake's the same
way; Kafka's for one combined controller+broker node, from its JVM's launch (its storage formatted
before, not counted) to its Metadata answer naming itself, median of ``--kafka-starts``. Targets: the
simulator's CPU per request and its start (wall and CPU) at most 1.0x the mock's (the script exits 1 if any is missed). ``--topics 10,100,1000``
adds a table of how Metadata's cost grows with the topic count; that table reports its ratios
against the same target but never fails the run (the gate is the 100-topic table).

    .venv/bin/python benchmarks/peer.py [--seconds 8] [--topics 10,100,1000] [--starts 5] [--peers kfake,kafka]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "benchmarks")) if p not in sys.path]

# The peers' one home (benchmarks/peers.py): starting, stopping and reading the CPU of each.
from peers import (  # noqa: E402
    CLK_TCK,
    HOST,
    KAFKA,
    KFAKE,
    MOCK,
    MOCK_THREAD,
    SIM,
    Peer,
    Server,
    kafka_peer,
    kfake_server,
    mock_server,
    simulator,
)

__all__ = ["HOST", "MOCK", "SIM", "Server", "mock_server", "simulator"]  # what the other benchmarks use

BROKERS = 6
PARTITIONS = 4
REPLICATION = 3
GATE_TOPICS = 100
CONNECTIONS = 8
IN_FLIGHT = 8
#: A request each connection sends first, its answer not counted (None: none): ApiVersions naming a client
#: library, so that the connection speaks that library's key space (apiKey 68: docs/groups.md).
GREETING: bytes | None = None
TARGET = 1.0
NAMED = 5
CLIENT_ID = "peer-bench"
MIN_TICKS = 100
FLOOR = "Python floor"
#: The other peers a run can add beside the mock (``--peers``): franz-go's kfake and a real Kafka cluster.
OTHERS = {"kfake": KFAKE, "kafka": KAFKA}
#: The least requests an other peer answers per case (when it is slower than the gate's count allows).
OTHER_MIN_REQUESTS = 1000


# -- the floor's process (this script with --floor) -------------------------------------------------


def floor_main(path: str) -> None:
    """Serve the answers in ``path`` (pickled {apiKey+version+client id+body: response after the
    correlation id}) on an ephemeral port, on uvloop when it is installed; print the address; serve until
    SIGTERM. The least any Python server does per request: cut the frame, find its answer, write."""
    import pickle

    with open(path, "rb") as f:
        answers: dict[bytes, bytes] = pickle.load(f)
    try:
        import uvloop

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()

    class Answering(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport
            self.buffer = bytearray()

        def data_received(self, data: bytes) -> None:
            buffer = self.buffer
            buffer += data
            out = []
            pos, end = 0, len(buffer)
            while end - pos >= 4:
                size = int.from_bytes(buffer[pos : pos + 4], "big")
                if end - pos - 4 < size:
                    break
                request = bytes(buffer[pos + 4 : pos + 4 + size])
                pos += 4 + size
                rest = answers[request[:4] + request[8:]]
                out.append((4 + len(rest)).to_bytes(4, "big") + request[4:8] + rest)
            del buffer[:pos]
            self.transport.write(b"".join(out))  # type: ignore[attr-defined]

    server = loop.run_until_complete(loop.create_server(Answering, HOST, 0))
    port = server.sockets[0].getsockname()[1]
    print(f"listening on {HOST}:{port}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: loop.stop())
    loop.run_forever()


def floor_server(sim: Server, case: Case, directory: str) -> Server:
    """The floor, taught the simulator's answer to the case's request."""
    import pickle

    request = case.frame()
    answer = ask(sim.address, request)
    answers = {request[4:8] + request[12:]: answer[4:]}
    if GREETING is not None:
        answers[GREETING[4:8] + GREETING[12:]] = ask(sim.address, GREETING)[4:]
    path = os.path.join(directory, "answers.pickle")
    with open(path, "wb") as f:
        pickle.dump(answers, f)
    return Server(FLOOR, [sys.executable, __file__, "--floor", path])


# -- wire --------------------------------------------------------------------------------------------


SCHEMAS = None  # the project's codec; loaded by the load generator only, never in the mock's process


def load_codec() -> None:
    global SCHEMAS
    sys.path.insert(0, str(ROOT))
    from protocol import load_schemas

    SCHEMAS = load_schemas()


def frame(
    api_key: int, version: int, data: dict, correlation: int = 1, key_space: str | None = None
) -> bytes:
    from protocol.framing import encode_request

    body = SCHEMAS.request(api_key, key_space).encode(data, version)
    return encode_request(SCHEMAS, api_key, version, correlation, CLIENT_ID, body)


def ask(address: tuple[str, int], request: bytes, timeout: float = 30.0) -> bytes:
    """One request on a fresh connection; the whole response frame (without its size prefix)."""
    with socket.create_connection(address, timeout=timeout) as sock:
        if GREETING is not None:
            sock.sendall(GREETING)
            read_frame(sock)
        sock.sendall(request)
        return read_frame(sock)


def read_frame(sock: socket.socket) -> bytes:
    from tests.support.rawwire import read_response

    frame = read_response(sock)
    if frame is None:
        raise ConnectionError("closed by the server")
    return frame


def decode(api_key: int, version: int, response: bytes, key_space: str | None = None) -> dict:
    """Decode a response frame's body; bytes after the body are tolerated, as Kafka's clients do."""
    from protocol.framing import parse_response_header, response_header_version

    _, start = parse_response_header(response, response_header_version(SCHEMAS, api_key, version))
    values, _ = SCHEMAS.response(api_key, key_space).decode_from(response, start, version)
    return values


def topic_names(count: int) -> list[str]:
    return [f"bench-{i:05d}" for i in range(count)]


# -- topics ------------------------------------------------------------------------------------------


def create_topics(mock: Server, sim: Server, names: list[str], *others: Peer) -> None:
    """The same topics on every server: by CreateTopics (the simulator, kfake, Kafka), or on the mock,
    which has no CreateTopics, auto-created by one Metadata request naming them."""
    if not names:
        return
    for server in (sim, *others):
        create_on(server, names)
    # The mock has no CreateTopics handler: a Metadata request naming unknown topics with
    # AllowAutoTopicCreation creates them with its defaults (4 partitions, RF min(3, brokers)).
    auto = {"Topics": [{"Name": n} for n in names], "AllowAutoTopicCreation": True}
    made = decode(3, 12, ask(mock.address, frame(3, 12, auto)))
    bad = [t for t in made["Topics"] if t["ErrorCode"] != 0]
    if bad:
        raise RuntimeError(f"auto-creating topics on the mock failed: {bad[:3]}")


def controller_address(server: Peer) -> tuple[str, int]:
    """The broker Metadata names controller (kfake answers CreateTopics there only; Kafka's brokers forward
    it, and every listener of the simulator takes it): the server's own address when none is listed."""
    answer = decode(3, 12, ask(server.address, frame(3, 12, {"Topics": [], "AllowAutoTopicCreation": False})))
    for broker in answer["Brokers"]:
        if broker["NodeId"] == answer["ControllerId"]:
            return (broker["Host"], broker["Port"])
    return server.address


def create_on(
    server: Peer,
    names: list[str],
    partitions: int = PARTITIONS,
    replication: int = REPLICATION,
    timeout: float = 120.0,
) -> None:
    """CreateTopics for ``names`` (``partitions`` x ``replication`` each), then until Metadata on the server's
    address shows every one with a leader for every partition (a real cluster's brokers learn of new
    topics from its controller a little after the answer)."""
    body = {
        "Topics": [
            {
                "Name": n,
                "NumPartitions": partitions,
                "ReplicationFactor": replication,
                "Assignments": [],
                "Configs": [],
            }
            for n in names
        ],
        "timeoutMs": 60000,
        "validateOnly": False,
    }
    created = decode(19, 7, ask(controller_address(server), frame(19, 7, body), timeout=timeout))
    bad = [t for t in created["Topics"] if t["ErrorCode"] != 0]
    if bad:
        raise RuntimeError(f"CreateTopics on {server.name} failed: {bad[:3]}")
    wanted = {"Topics": [{"Name": n} for n in names], "AllowAutoTopicCreation": False}
    deadline = time.monotonic() + timeout
    while True:
        topics = decode(3, 12, ask(server.address, frame(3, 12, wanted)))["Topics"]
        if all(t["ErrorCode"] == 0 and all(p["LeaderId"] >= 0 for p in t["Partitions"]) for t in topics):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{server.name}: topics without leaders after {timeout:g} s")
        time.sleep(0.2)


# -- cases -------------------------------------------------------------------------------------------


@dataclass
class Case:
    label: str
    api_key: int
    version: int
    data: dict
    topics: list[str] | None  # the topics the response must hold, None for ApiVersions

    def frame(self) -> bytes:
        return frame(self.api_key, self.version, self.data)

    def check(self, server: Peer) -> int:
        """Ask once, check the answer, return the response frame's size in bytes."""
        response = ask(server.address, self.frame())
        values = decode(self.api_key, self.version, response)
        if self.topics is None:
            if values["ErrorCode"] != 0:
                raise RuntimeError(f"{server.name}: {self.label}: error {values['ErrorCode']}")
            return len(response) + 4
        topics = values["Topics"]
        if sorted(t["Name"] for t in topics) != sorted(self.topics):
            raise RuntimeError(
                f"{server.name}: {self.label}: {len(topics)} topics, not the {len(self.topics)} asked"
            )
        for t in topics:
            shape = [len(p["ReplicaNodes"]) for p in t["Partitions"]]
            if t["ErrorCode"] != 0 or shape != [REPLICATION] * PARTITIONS:
                raise RuntimeError(
                    f"{server.name}: {self.label}: topic {t['Name']} is {t['ErrorCode']}, {shape}"
                )
        return len(response) + 4


def api_versions() -> Case:
    return Case("ApiVersions v2", 18, 2, {}, None)


def metadata_all(topics: int) -> Case:
    data = {"Topics": None, "AllowAutoTopicCreation": False}
    return Case(f"Metadata v12, all {topics:,} topics", 3, 12, data, topic_names(topics))


def metadata_named(topics: int) -> Case:
    names = topic_names(NAMED)
    data = {"Topics": [{"Name": n} for n in names], "AllowAutoTopicCreation": False}
    return Case(f"Metadata v12, {NAMED} named of {topics:,} topics", 3, 12, data, names)


# -- the load generator ------------------------------------------------------------------------------


class _Connection(asyncio.Protocol):
    """One closed-loop connection: responses are counted by their size prefix, the bodies skipped.

    Kafka answers a connection's requests in order, so a response's send time is the oldest
    outstanding one.
    """

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.sent_at: collections.deque[float] = collections.deque()
        self.head = b""
        self.remaining = 0
        self.transport: asyncio.Transport | None = None
        #: Answered once the greeting (GREETING) is: its answer is not counted.
        self.greeted: asyncio.Future[None] | None = None

    def greet(self, request: bytes) -> asyncio.Future[None]:
        self.greeted = asyncio.get_running_loop().create_future()
        self.sent_at.append(time.perf_counter())
        self.transport.write(request)  # type: ignore[union-attr]
        return self.greeted

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self) -> None:
        run = self.run
        if run.sent < run.total and (run.deadline is None or time.perf_counter() < run.deadline):
            run.sent += 1
            self.sent_at.append(time.perf_counter())
            self.transport.write(run.frame)  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        pos, n = 0, len(data)
        while pos < n:
            if self.remaining:
                if n - pos < self.remaining:
                    self.remaining -= n - pos
                    return
                pos += self.remaining
                self.remaining = 0
                if self.greeted is not None and not self.greeted.done():
                    self.sent_at.popleft()
                    self.greeted.set_result(None)
                    continue
                run = self.run
                run.latencies.append(time.perf_counter() - self.sent_at.popleft())
                run.received += 1
                self.send()
                if run.received == run.sent:  # nothing left to send, nothing outstanding
                    run.done.set_result(None)
            else:
                take = min(4 - len(self.head), n - pos)
                self.head += data[pos : pos + take]
                pos += take
                if len(self.head) == 4:
                    self.remaining = int.from_bytes(self.head, "big")
                    self.head = b""

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.run.done.done():
            self.run.done.set_exception(ConnectionError(f"the server closed a connection ({exc})"))


class _Run:
    def __init__(self, request: bytes, total: int, deadline: float | None) -> None:
        self.frame = request
        self.total = total
        self.deadline = deadline
        self.sent = 0
        self.received = 0
        self.latencies: list[float] = []
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()


async def _load(
    address: tuple[str, int], request: bytes, total: int, seconds: float | None = None
) -> tuple[float, list[float]]:
    """Closed loop until ``total`` answers (or, with ``seconds``, until that long has passed)."""
    loop = asyncio.get_running_loop()
    run = _Run(request, total, None)
    connections = [
        (await loop.create_connection(lambda: _Connection(run), *address))[1] for _ in range(CONNECTIONS)
    ]
    if GREETING is not None:
        await asyncio.gather(*(c.greet(GREETING) for c in connections))
    started = time.perf_counter()
    if seconds is not None:
        run.deadline = started + seconds
    for _ in range(IN_FLIGHT):
        for c in connections:
            c.send()
    await run.done
    elapsed = time.perf_counter() - started
    for c in connections:
        c.transport.close()  # type: ignore[union-attr]
    return elapsed, run.latencies


@dataclass
class Result:
    cpu_us: float  # server CPU per request, idle subtracted
    thread_us: float | None  # the same, the mock cluster's own thread only
    rate: float
    p50_ms: float
    p99_ms: float
    busy: float  # server CPU over wall time, idle subtracted
    raw_ticks: int
    requests: int = 0


def warm_up(server: Peer, case: Case, seconds: float) -> tuple[float, float]:
    """Load for ``seconds`` (warms both servers' codecs and caches); requests/s and CPU s/request."""
    before = server.cpu_ticks()
    elapsed, latencies = asyncio.run(_load(server.address, case.frame(), 1 << 62, seconds))
    ticks = max(server.cpu_ticks() - before, 1)
    return len(latencies) / elapsed, ticks / CLK_TCK / len(latencies)


def request_count(warm: list[tuple[float, float]], seconds: float) -> int:
    """The same count for both servers: about ``seconds`` on the slower one, and at least enough that
    the cheaper one spends MIN_TICKS of CPU (so a tick is at most 1% of it), within 4 x ``seconds``."""
    slowest = min(rate for rate, _ in warm)
    cheapest = min(cpu for _, cpu in warm)
    n = max(slowest * seconds, min(MIN_TICKS / CLK_TCK / cheapest, 4 * slowest * seconds), 100)
    return int(round(n, 2 - len(str(int(n)))))  # two significant digits


def measure(server: Peer, case: Case, total: int, idle_per_s: float) -> Result:
    request = case.frame()
    before = server.cpu_ticks()
    threads = getattr(server, "thread_ticks", lambda _: None)
    thread_before = threads(MOCK_THREAD)
    elapsed, latencies = asyncio.run(_load(server.address, request, total))
    ticks = server.cpu_ticks() - before
    thread_after = threads(MOCK_THREAD)
    cpu = ticks / CLK_TCK - idle_per_s * elapsed
    thread_us = None
    if thread_before is not None and thread_after is not None:
        thread_us = (thread_after - thread_before) / CLK_TCK / total * 1e6
    q = statistics.quantiles(latencies, n=100)
    return Result(
        requests=total,
        cpu_us=cpu / total * 1e6,
        thread_us=thread_us,
        rate=total / elapsed,
        p50_ms=q[49] * 1000,
        p99_ms=q[98] * 1000,
        busy=cpu / elapsed,
        raw_ticks=ticks,
    )


def idle_cpu(servers: list[Peer], seconds: float) -> dict[str, float]:
    """CPU seconds per wall second of each process with no load, all measured in the same window."""
    before = {s.name: s.cpu_ticks() for s in servers}
    started = time.perf_counter()
    time.sleep(seconds)
    elapsed = time.perf_counter() - started
    return {s.name: (s.cpu_ticks() - before[s.name]) / CLK_TCK / elapsed for s in servers}


# -- start -------------------------------------------------------------------------------------------


def start_cost(server: Peer) -> tuple[float, float]:
    """Spawn to the first ApiVersions v2 answer on the bootstrap address the process printed: the wall
    time, and the CPU the process's threads had used by then (``/proc/PID/task/*/schedstat``, in ns:
    finer than the clock tick; a thread that ended before the answer is not counted, on either side)."""
    request = frame(18, 2, {})
    try:
        server.start()
        ask(server.address, request)
        wall = (time.perf_counter() - server.spawned) * 1000
        return wall, server.cpu_ns() / 1e6
    finally:
        server.stop()


def start_floor(directory: str) -> Server:
    """The floor for start: this script with ``--floor``, taught the simulator's ApiVersions v2 answer
    (the least a Python process does to answer: the interpreter, the event loop, a listening socket)."""
    import pickle

    sim = simulator()
    request = frame(18, 2, {})
    try:
        sim.start()
        answer = ask(sim.address, request)
    finally:
        sim.stop()
    path = os.path.join(directory, "start-answers.pickle")
    with open(path, "wb") as f:
        pickle.dump({request[4:8] + request[12:]: answer[4:]}, f)
    return Server(FLOOR, [sys.executable, __file__, "--floor", path])


# -- report ------------------------------------------------------------------------------------------


def verdict(ratio: float, target: float = TARGET) -> str:
    return "met" if ratio <= target else "**missed**"


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("inf")


def print_cpu_table(rows: list[Row], gated: bool, others: Others) -> None:
    names = other_names(others)
    print(
        "| case | requests | mock µs CPU/request | simulator µs CPU/request | ratio | target | met? "
        "| Python floor µs | floor / mock | simulator / floor |"
        + "".join(f" {name} µs | simulator / {name} |" for name in names)
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|" + "---:|---:|" * len(names))
    for label, total, m, s, f in rows:
        ratio = _ratio(s.cpu_us, m.cpu_us)
        target = f"≤ {TARGET:.1f}x" + ("" if gated else " (not gated)")
        extra = "".join(
            f" {o.cpu_us:.1f} | {_ratio(s.cpu_us, o.cpu_us):.2f}x |"
            for o in (others[label][name] for name in names)
        )
        print(
            f"| {label} | {total:,} | {m.cpu_us:.1f} | {s.cpu_us:.1f} | {ratio:.2f}x | {target} | {verdict(ratio)} "
            f"| {f.cpu_us:.1f} | {_ratio(f.cpu_us, m.cpu_us):.2f}x | {_ratio(s.cpu_us, f.cpu_us):.2f}x |{extra}"
        )


def other_names(others: Others) -> list[str]:
    """The other peers measured, in ``OTHERS``' order."""
    measured = {name for results in others.values() for name in results}
    return [name for name in OTHERS.values() if name in measured]


def print_load_table(rows: list[Row], sizes: dict[tuple[str, str], int], others: Others) -> None:
    print(
        "| case | server | response bytes | requests | requests/s | p50 ms | p99 ms | server CPU busy | CPU ticks |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, _, m, s, f in rows:
        for name, r in ((MOCK, m), (SIM, s), (FLOOR, f), *others[label].items()):
            print(
                f"| {label} | {name} | {sizes[(label, name)]:,} | {r.requests:,} | {r.rate:,.0f} | {r.p50_ms:.2f} | "
                f"{r.p99_ms:.2f} | {r.busy:.0%} | {r.raw_ticks} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floor", metavar="ANSWERS", help=argparse.SUPPRESS)
    parser.add_argument(
        "--seconds",
        type=float,
        default=8.0,
        help="per case, the slower server's run lasts about this long: both get the same request count",
    )
    parser.add_argument("--requests", type=int, help="a fixed request count per case instead of --seconds")
    parser.add_argument(
        "--topics",
        default=str(GATE_TOPICS),
        help="comma-separated topic counts for a Metadata growth table, e.g. 10,100,1000 (the gate is 100)",
    )
    parser.add_argument("--starts", type=int, default=5, help="start measurements per server (median)")
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of idle CPU measurement")
    parser.add_argument(
        "--peers",
        default="kfake,kafka",
        help="the other peers beside the mock, comma-separated: kfake, kafka (a real cluster; '' for none)",
    )
    parser.add_argument("--kafka-starts", type=int, default=3, help="start measurements of Kafka (median)")
    args = parser.parse_args()
    if args.floor is not None:
        floor_main(args.floor)
        return

    load_codec()
    counts = sorted({int(c) for c in args.topics.split(",")} | {GATE_TOPICS})
    if counts[0] < NAMED:
        parser.error(
            f"--topics: every count must be at least {NAMED} (the named-topics case asks for {NAMED})"
        )
    chosen = [c.strip() for c in args.peers.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in OTHERS]
    if unknown:
        parser.error(f"--peers: unknown {unknown}; choose among {sorted(OTHERS)}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # children are stopped on the way out

    # Start: fresh processes, alternating, no topics on either side.
    starts: dict[str, list[tuple[float, float]]] = {MOCK: [], SIM: [], FLOOR: []}
    learned: list[str] = []
    with tempfile.TemporaryDirectory() as directory:
        floor = start_floor(directory)
        for _ in range(args.starts):
            fresh: list[Peer] = [mock_server(BROKERS), simulator(), floor]
            if "kfake" in chosen:
                fresh.append(kfake_server(BROKERS, PARTITIONS))
            for server in fresh:
                starts.setdefault(server.name, []).append(start_cost(server))
                learned += [
                    n.split("(from ", 1)[1][:-1] for n in getattr(server, "notes", []) if "(from " in n
                ]
    if "kafka" in chosen:  # one combined node: the least Kafka process that answers
        for _ in range(args.kafka_starts):
            starts.setdefault(KAFKA, []).append(start_cost(kafka_peer(1)))
    bare = statistics.median(bare_interpreter_ms() for _ in range(args.starts))

    mock, sim = mock_server(BROKERS), simulator()
    others: list[Peer] = []
    if "kfake" in chosen:
        others.append(kfake_server(BROKERS, PARTITIONS))
    if "kafka" in chosen:
        others.append(kafka_peer(BROKERS, throughput=True))  # steady state: the full JIT
    try:
        for server in (mock, sim, *others):
            server.start()
        rows, growth, sizes, idle, extra = load_all(args, counts, mock, sim, others)
    finally:
        for server in (mock, sim, *others):
            server.stop()
    report(args, counts, rows, growth, sizes, idle, starts, learned, bare, extra)


def bare_interpreter_ms() -> float:
    """Spawn to exit of the same interpreter doing nothing: the part of start both sides share."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, cwd=ROOT)
    return (time.perf_counter() - started) * 1000


Row = tuple[str, int, Result, Result, Result]  # label, requests, the mock, the simulator, the floor
#: Case label -> the other peers' results (name -> result).
Others = dict[str, dict[str, Result]]


def load_all(
    args: argparse.Namespace, counts: list[int], mock: Server, sim: Server, others: list[Peer]
) -> tuple[list[Row], list[Row], dict[tuple[str, str], int], dict[str, float], Others]:
    idle = idle_cpu([mock, sim, *others], args.idle)  # keyed by name
    extra: Others = {}
    have = 0
    gate: list[Row] = []
    growth: list[Row] = []
    sizes: dict[tuple[str, str], int] = {}
    for count in counts:
        create_topics(mock, sim, topic_names(count)[have:], *others)
        have = count
        cases = [metadata_all(count), metadata_named(count)]
        if count == GATE_TOPICS:
            cases.insert(0, api_versions())
        for case in cases:
            for server in (mock, sim, *others):
                sizes[(case.label, server.name)] = case.check(server)
            with tempfile.TemporaryDirectory() as directory:
                floor = floor_server(sim, case, directory)
                floor.start()
                try:
                    sizes[(case.label, FLOOR)] = case.check(floor)
                    floor_idle = idle_cpu([floor], 1.0)[FLOOR]
                    warm = [warm_up(server, case, 1.0) for server in (mock, sim, floor)]
                    total = args.requests or request_count(warm, args.seconds)
                    m = measure(mock, case, total, idle[mock.name])
                    s = measure(sim, case, total, idle[sim.name])
                    f = measure(floor, case, total, floor_idle)
                    extra[case.label] = {}
                    for o in others:  # the same count, or what a slower peer answers in about --seconds
                        rate, _ = warm_up(o, case, 1.0)
                        asked = min(total, max(OTHER_MIN_REQUESTS, int(rate * args.seconds)))
                        extra[case.label][o.name] = measure(o, case, asked, idle[o.name])
                finally:
                    floor.stop()
            row = (case.label, total, m, s, f)
            if case.api_key == 3:
                growth.append(row)
            if count == GATE_TOPICS:
                gate.append(row)
            print(
                f"  {case.label}: {total:,} requests; mock {m.cpu_us:.1f} µs, simulator {s.cpu_us:.1f} µs, "
                f"floor {f.cpu_us:.1f} µs"
                + "".join(f", {name} {r.cpu_us:.1f} µs" for name, r in extra[case.label].items()),
                file=sys.stderr,
                flush=True,
            )
    return gate, growth, sizes, idle, extra


def report(
    args: argparse.Namespace,
    counts: list[int],
    gate: list[Row],
    growth: list[Row],
    sizes: dict[tuple[str, str], int],
    idle: dict[str, float],
    starts: dict[str, list[tuple[float, float]]],
    learned: list[str],
    bare: float,
    others: Others,
) -> None:
    names = other_names(others)
    print(
        f"\n{BROKERS} brokers, {GATE_TOPICS} topics x {PARTITIONS} partitions x RF {REPLICATION} on both servers; "
        f"{CONNECTIONS} connections x {IN_FLIGHT} in flight, closed loop, one load generator process; the same "
        "request count per case for both (about --seconds on the slower server). Server CPU: utime + stime "
        f"of the server process from /proc (clock tick {1000 / CLK_TCK:g} ms), its idle CPU subtracted.\n"
    )
    print_cpu_table(gate, gated=True, others=others)
    for index, what in ((0, "wall ms"), (1, "CPU ms")):
        m_start, s_start, f_start = (
            statistics.median(run[index] for run in starts[n]) for n in (MOCK, SIM, FLOOR)
        )
        ratio = s_start / m_start
        extra = ""
        for name in names:
            if name in starts:
                o_start = statistics.median(run[index] for run in starts[name])
                extra += f" {o_start:.0f} | {_ratio(s_start, o_start):.2f}x |"
            else:
                extra += " - | - |"
        print(
            f"| start: spawn to first ApiVersions answer, {what} (median of {args.starts}) | - | {m_start:.0f} | "
            f"{s_start:.0f} | {ratio:.2f}x | ≤ {TARGET:.1f}x | {verdict(ratio)} | {f_start:.0f} | "
            f"{_ratio(f_start, m_start):.2f}x | {_ratio(s_start, f_start):.2f}x |{extra}"
        )
    print()
    print_load_table(gate, sizes, others)
    print()
    print(
        f"idle CPU, every server in the same {args.idle:g} s with no load: "
        + ", ".join(f"{name} {per_s * 1000:.1f} ms/s" for name, per_s in idle.items())
        + " (subtracted per wall second of each run)"
    )
    threads = [(label, m.thread_us) for label, _, m, _, _ in gate if m.thread_us is not None]
    if threads:
        print(
            f"the mock cluster's own thread ({MOCK_THREAD}) alone, µs CPU/request: "
            + "; ".join(f"{label} {us:.1f}" for label, us in threads)
        )
    print(
        "start runs, wall/CPU ms: "
        + "; ".join(
            f"{name} {', '.join(f'{wall:.0f}/{cpu:.0f}' for wall, cpu in runs)}"
            for name, runs in starts.items()
        )
        + f"; a bare interpreter (spawn to exit of `python -c pass`): {bare:.0f}"
    )
    if learned:
        print("the mock's process took its address from: " + ", ".join(sorted(set(learned))))

    if len(counts) > 1:
        print(
            f"\nMetadata v12 by topic count ({PARTITIONS} partitions x RF {REPLICATION} each); "
            "the ratios are reported against the same target but do not fail the run\n"
        )
        print_cpu_table(growth, gated=False, others=others)
        print()
        print_load_table(growth, sizes, others)

    missed = [label for label, _, m, s, _ in gate if s.cpu_us > TARGET * m.cpu_us]
    for index, what in ((0, "start wall"), (1, "start CPU")):
        m_start, s_start = (statistics.median(run[index] for run in starts[n]) for n in (MOCK, SIM))
        if s_start > TARGET * m_start:
            missed.append(what)
    print(
        f"\ntargets (simulator at most {TARGET:.1f}x the mock): "
        + ("all met" if not missed else "missed: " + "; ".join(missed))
    )
    if missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
