"""Server CPU per request: placement-sim against librdkafka's mock cluster (C), same requests, same load.

The peer is the mock cluster that ships inside confluent-kafka's librdkafka: a client created with
``test.mock.num.brokers=6`` starts it in its own process (this script with ``--mock``), which prints
the first broker's address and then idles. The simulator is ``placement-sim serve`` (6 brokers in 3
racks, striped, seed 1) in another process. This process is the load generator for both: one
pre-encoded request frame per case, the same bytes to both servers, sent in a closed loop of 8
connections x 8 requests in flight. Before and after each run it reads the server process's CPU time
(utime + stime from /proc/<pid>/stat, in clock ticks), subtracts the process's idle CPU over the same
wall time (measured for both processes together, with no load) and divides by the requests: µs of
server CPU per request. Both servers get the same request count per case, after a 1 s warm-up each:
about ``--seconds`` on the slower one, raised (up to 4x that) until the cheaper one spends at least
100 ticks, so that one tick is at most 1% of either figure. The mock's own thread (``rdk:mock``,
which serves all its brokers) is also read alone: the rest of its process is the client hosting it.

Topics: the simulator gets them through CreateTopics (4 partitions x RF 3 each); the mock has no
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
until then; the Python floor's start (the least process that answers it) beside them. Targets: the
simulator's CPU per request and its start (wall and CPU) at most 1.0x the mock's (the script exits 1 if any is missed). ``--topics 10,100,1000``
adds a table of how Metadata's cost grows with the topic count; that table reports its ratios
against the same target but never fails the run (the gate is the 100-topic table).

    .venv/bin/python benchmarks/peer.py [--seconds 8] [--topics 10,100,1000] [--starts 5]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import ctypes
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
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
CLK_TCK = os.sysconf("SC_CLK_TCK")
MIN_TICKS = 100
MOCK = "librdkafka mock"
SIM = "placement-sim"
FLOOR = "Python floor"
MOCK_THREAD = "rdk:mock"  # the mock cluster's one I/O thread, serving all its brokers


# -- the mock cluster's process (this script with --mock) -------------------------------------------


def mock_main(brokers: int) -> None:
    """Start librdkafka's mock cluster through a client, print its first broker's address, idle.

    The mock's listeners are bound when the client's constructor returns, and librdkafka logs their
    addresses then (a notice that they replaced ``bootstrap.servers``): this process prints them
    from that notice, so neither side makes a request before announcing its address. Without the
    notice it asks its client's ``list_topics()``. Exits when stdin closes or on SIGTERM.
    """
    import logging

    import confluent_kafka

    notices: list[str] = []

    class Notices(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            notices.append(record.getMessage())

    logger = logging.getLogger("librdkafka")
    logger.addHandler(Notices())
    logger.setLevel(logging.DEBUG)  # librdkafka's own log_level decides what it logs
    logger.propagate = False
    producer = confluent_kafka.Producer(
        {
            "test.mock.num.brokers": brokers,
            "client.id": "peer-bench-mock",
            "logger": logger,
            "topic.metadata.refresh.interval.ms": -1,  # no periodic Metadata from the idle client
        }
    )
    producer.poll(0)  # delivers the constructor's log lines to the logger
    addresses = [n.split("replaced with ", 1)[1].strip().split(",") for n in notices if "replaced with " in n]
    if addresses:
        first, source = addresses[0][0], "the mock's notice"
    else:
        metadata = producer.list_topics(timeout=10)
        broker = min(metadata.brokers.values(), key=lambda b: b.id)
        first, source = f"{broker.host}:{broker.port}", "list_topics()"
    print(f"listening on {first} (from {source})", flush=True)
    sys.stdin.read()  # idle: no poll() and no requests from this process; librdkafka's threads run on
    del producer


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


# -- processes ---------------------------------------------------------------------------------------


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the benchmark process dies, however it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class Server:
    name: str
    cmd: list[str]
    proc: subprocess.Popen[str] | None = None
    address: tuple[str, int] = ("", 0)
    spawned: float = 0.0
    notes: list[str] = field(default_factory=list)

    def start(self) -> None:
        self.spawned = time.perf_counter()
        self.proc = subprocess.Popen(
            self.cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            preexec_fn=_die_with_parent,
        )
        assert self.proc.stdout is not None
        self.notes = []
        for line in self.proc.stdout:
            self.notes.append(line.rstrip())
            if line.startswith("listening on "):
                host, port = line.split()[2].rsplit(":", 1)
                self.address = (host, int(port))
                return
        raise RuntimeError(f"{self.name} did not start: {self.cmd}")

    def stop(self) -> None:
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def cpu_ticks(self) -> int:
        """User + system CPU of the whole process (all threads), in clock ticks."""
        return _ticks(f"/proc/{self.pid}/stat")

    def cpu_ns(self) -> int:
        """CPU time of the process's live threads, in ns (``/proc/PID/task/*/schedstat``)."""
        total = 0
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            try:
                with open(f"/proc/{self.pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (FileNotFoundError, ProcessLookupError):  # the thread ended meanwhile
                continue
        return total

    def thread_ticks(self, comm: str) -> int | None:
        """User + system CPU of the process's thread named ``comm``, if it has one."""
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            with open(f"/proc/{self.pid}/task/{tid}/comm") as f:
                if f.read().strip() == comm:
                    return _ticks(f"/proc/{self.pid}/task/{tid}/stat")
        return None


def _ticks(path: str) -> int:
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def mock_server() -> Server:
    return Server(MOCK, [sys.executable, __file__, "--mock", str(BROKERS)])


def simulator() -> Server:
    cmd = [sys.executable, "-m", "placement_sim.cli.main", "serve", "--listen", f"{HOST}:0", "--seed", "1"]
    return Server(SIM, cmd)


# -- topics ------------------------------------------------------------------------------------------


def create_topics(mock: Server, sim: Server, names: list[str]) -> None:
    if not names:
        return
    body = {
        "Topics": [
            {
                "Name": n,
                "NumPartitions": PARTITIONS,
                "ReplicationFactor": REPLICATION,
                "Assignments": [],
                "Configs": [],
            }
            for n in names
        ],
        "timeoutMs": 60000,
        "validateOnly": False,
    }
    created = decode(19, 7, ask(sim.address, frame(19, 7, body)))
    bad = [t for t in created["Topics"] if t["ErrorCode"] != 0]
    if bad:
        raise RuntimeError(f"CreateTopics on the simulator failed: {bad[:3]}")
    # The mock has no CreateTopics handler: a Metadata request naming unknown topics with
    # AllowAutoTopicCreation creates them with its defaults (4 partitions, RF min(3, brokers)).
    auto = {"Topics": [{"Name": n} for n in names], "AllowAutoTopicCreation": True}
    made = decode(3, 12, ask(mock.address, frame(3, 12, auto)))
    bad = [t for t in made["Topics"] if t["ErrorCode"] != 0]
    if bad:
        raise RuntimeError(f"auto-creating topics on the mock failed: {bad[:3]}")


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

    def check(self, server: Server) -> int:
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


def warm_up(server: Server, case: Case, seconds: float) -> tuple[float, float]:
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


def measure(server: Server, case: Case, total: int, idle_per_s: float) -> Result:
    request = case.frame()
    before = server.cpu_ticks()
    thread_before = server.thread_ticks(MOCK_THREAD)
    elapsed, latencies = asyncio.run(_load(server.address, request, total))
    ticks = server.cpu_ticks() - before
    thread_after = server.thread_ticks(MOCK_THREAD)
    cpu = ticks / CLK_TCK - idle_per_s * elapsed
    thread_us = None
    if thread_before is not None and thread_after is not None:
        thread_us = (thread_after - thread_before) / CLK_TCK / total * 1e6
    q = statistics.quantiles(latencies, n=100)
    return Result(
        cpu_us=cpu / total * 1e6,
        thread_us=thread_us,
        rate=total / elapsed,
        p50_ms=q[49] * 1000,
        p99_ms=q[98] * 1000,
        busy=cpu / elapsed,
        raw_ticks=ticks,
    )


def idle_cpu(servers: list[Server], seconds: float) -> dict[str, float]:
    """CPU seconds per wall second of each process with no load, all measured in the same window."""
    before = {s.name: s.cpu_ticks() for s in servers}
    started = time.perf_counter()
    time.sleep(seconds)
    elapsed = time.perf_counter() - started
    return {s.name: (s.cpu_ticks() - before[s.name]) / CLK_TCK / elapsed for s in servers}


# -- start -------------------------------------------------------------------------------------------


def start_cost(server: Server) -> tuple[float, float]:
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


def verdict(ratio: float) -> str:
    return "met" if ratio <= TARGET else "**missed**"


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("inf")


def print_cpu_table(rows: list[Row], gated: bool) -> None:
    print(
        "| case | requests | mock µs CPU/request | simulator µs CPU/request | ratio | target | met? "
        "| Python floor µs | floor / mock | simulator / floor |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
    for label, total, m, s, f in rows:
        ratio = _ratio(s.cpu_us, m.cpu_us)
        target = f"≤ {TARGET:.1f}x" + ("" if gated else " (not gated)")
        print(
            f"| {label} | {total:,} | {m.cpu_us:.1f} | {s.cpu_us:.1f} | {ratio:.2f}x | {target} | {verdict(ratio)} "
            f"| {f.cpu_us:.1f} | {_ratio(f.cpu_us, m.cpu_us):.2f}x | {_ratio(s.cpu_us, f.cpu_us):.2f}x |"
        )


def print_load_table(rows: list[Row], sizes: dict[tuple[str, str], int]) -> None:
    print("| case | server | response bytes | requests/s | p50 ms | p99 ms | server CPU busy | CPU ticks |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for label, _, m, s, f in rows:
        for name, r in ((MOCK, m), (SIM, s), (FLOOR, f)):
            print(
                f"| {label} | {name} | {sizes[(label, name)]:,} | {r.rate:,.0f} | {r.p50_ms:.2f} | "
                f"{r.p99_ms:.2f} | {r.busy:.0%} | {r.raw_ticks} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mock", type=int, metavar="BROKERS", help=argparse.SUPPRESS)
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
    args = parser.parse_args()
    if args.mock is not None:
        mock_main(args.mock)
        return
    if args.floor is not None:
        floor_main(args.floor)
        return

    load_codec()
    counts = sorted({int(c) for c in args.topics.split(",")} | {GATE_TOPICS})
    if counts[0] < NAMED:
        parser.error(
            f"--topics: every count must be at least {NAMED} (the named-topics case asks for {NAMED})"
        )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # children are stopped on the way out

    # Start: fresh processes, alternating, no topics on either side.
    starts: dict[str, list[tuple[float, float]]] = {MOCK: [], SIM: [], FLOOR: []}
    learned: list[str] = []
    with tempfile.TemporaryDirectory() as directory:
        floor = start_floor(directory)
        for _ in range(args.starts):
            for server in (mock_server(), simulator(), floor):
                starts[server.name].append(start_cost(server))
                learned += [n.split("(from ", 1)[1][:-1] for n in server.notes if "(from " in n]
    bare = statistics.median(bare_interpreter_ms() for _ in range(args.starts))

    mock, sim = mock_server(), simulator()
    try:
        mock.start()
        sim.start()
        rows, growth, sizes, idle = load_all(args, counts, mock, sim)
    finally:
        mock.stop()
        sim.stop()
    report(args, counts, rows, growth, sizes, idle, starts, learned, bare)


def bare_interpreter_ms() -> float:
    """Spawn to exit of the same interpreter doing nothing: the part of start both sides share."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True, cwd=ROOT)
    return (time.perf_counter() - started) * 1000


Row = tuple[str, int, Result, Result, Result]  # label, requests, the mock, the simulator, the floor


def load_all(
    args: argparse.Namespace, counts: list[int], mock: Server, sim: Server
) -> tuple[list[Row], list[Row], dict[tuple[str, str], int], dict[str, float]]:
    idle = idle_cpu([mock, sim], args.idle)  # keyed by MOCK and SIM
    have = 0
    gate: list[Row] = []
    growth: list[Row] = []
    sizes: dict[tuple[str, str], int] = {}
    for count in counts:
        create_topics(mock, sim, topic_names(count)[have:])
        have = count
        cases = [metadata_all(count), metadata_named(count)]
        if count == GATE_TOPICS:
            cases.insert(0, api_versions())
        for case in cases:
            for server in (mock, sim):
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
                finally:
                    floor.stop()
            row = (case.label, total, m, s, f)
            if case.api_key == 3:
                growth.append(row)
            if count == GATE_TOPICS:
                gate.append(row)
            print(
                f"  {case.label}: {total:,} requests; mock {m.cpu_us:.1f} µs, simulator {s.cpu_us:.1f} µs, "
                f"floor {f.cpu_us:.1f} µs",
                file=sys.stderr,
                flush=True,
            )
    return gate, growth, sizes, idle


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
) -> None:
    print(
        f"\n{BROKERS} brokers, {GATE_TOPICS} topics x {PARTITIONS} partitions x RF {REPLICATION} on both servers; "
        f"{CONNECTIONS} connections x {IN_FLIGHT} in flight, closed loop, one load generator process; the same "
        "request count per case for both (about --seconds on the slower server). Server CPU: utime + stime "
        f"of the server process from /proc (clock tick {1000 / CLK_TCK:g} ms), its idle CPU subtracted.\n"
    )
    print_cpu_table(gate, gated=True)
    for index, what in ((0, "wall ms"), (1, "CPU ms")):
        m_start, s_start, f_start = (
            statistics.median(run[index] for run in starts[n]) for n in (MOCK, SIM, FLOOR)
        )
        ratio = s_start / m_start
        print(
            f"| start: spawn to first ApiVersions answer, {what} (median of {args.starts}) | - | {m_start:.0f} | "
            f"{s_start:.0f} | {ratio:.2f}x | ≤ {TARGET:.1f}x | {verdict(ratio)} | {f_start:.0f} | "
            f"{_ratio(f_start, m_start):.2f}x | {_ratio(s_start, f_start):.2f}x |"
        )
    print()
    print_load_table(gate, sizes)
    print()
    print(
        f"idle CPU, both processes in the same {args.idle:g} s with no load: {MOCK} "
        f"{idle[MOCK] * 1000:.1f} ms/s, {SIM} {idle[SIM] * 1000:.1f} ms/s (subtracted per wall second of each run)"
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
        print_cpu_table(growth, gated=False)
        print()
        print_load_table(growth, sizes)

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
