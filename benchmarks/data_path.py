"""Produce and consume through the data path: placement-sim against librdkafka's mock cluster, same
client, same workload, measured in the same run, each phase long enough to trust and repeated.

The peer is the mock cluster inside confluent-kafka's librdkafka (``test.mock.num.brokers=3``), started
in its own process by ``benchmarks/peers.py --mock 3``. The simulator is ``placement-sim serve``
(its default cluster, seed 1) in another process, with the replication model ticking every
``simulator.replication.tick.ms`` = 1 ms (``--tick-ms``), so that an acks=all answer waits for a
follower's copy, not for a coarse tick. This process is the client for both: confluent-kafka, the same
configuration against each. Beside them, not gated (``--peers``, both by default): franz-go's kfake and a
real Apache Kafka cluster (3 brokers under a dedicated controller, its JVMs with the full JIT), started
by ``benchmarks/peers.py``, each given the same topics by CreateTopics; Kafka's CPU is all its JVMs'.

The matrix: acks=1 and acks=all (idempotent, as a producer's default is), records of 1 KB and 16 KB, 1
and 8 producers (``--acks``, ``--sizes``, ``--producers``). Every row writes to the same 16 topics of one
partition and 3 replicas (created with CreateTopics on the simulator, auto-created by Metadata on the mock,
which has no CreateTopics), round robin: the mock keeps at most 5 MiB per partition, so a phase of 64 MB
is read back whole only when spread that way (the simulator's log bound is set to 8 MiB a partition here,
as near the mock's as a phase allows). Each phase moves ``--megabytes`` (64 by default) of record values
and is repeated ``--repeats`` times (5); the table gives the median and the spread (lowest-highest):

- **produce**: the row's producers (each a confluent-kafka producer, linger.ms=5, in a thread of its own,
  connected and warmed up first) send the phase's records together, from the first produce() to the end
  of every flush(): MB/s (10^6 bytes of record values);
- **consume**: the same records read back by one consumer that assigns every topic's partition at the
  offsets where the phase began (no group), from its assignment (once connected and told the leaders)
  to the last record received: MB/s;
- **server CPU per MB**: the server process's CPU time (every thread, ``/proc/PID/task/*/schedstat``)
  over each phase, per MB moved: ms/MB;
- **first consumer**: the server's CPU for the run's first consumer, reading the warm-up records (its
  Metadata, ListOffsets and first Fetch answers), before any timed phase: what a server does once, at its
  first consumer (the simulator makes each API version's codec on first use), not a cost per MB;
- **memory held**: the server's resident set (``VmRSS``) after the matrix, and its growth since before
  the first record.

A third server shows the **Python floor**: the least a Python asyncio server (uvloop) spends for the
same bytes. It is this script with ``--floor``: an ``asyncio.BufferedProtocol`` that reads the socket
into one reused buffer, reads each frame's size, API key and correlation id, and answers a taught
response for that API key; no decode, no copy of a frame, nothing kept. This process replays to it the
requests confluent-kafka sends the simulator, with the same shapes and sizes: Produce v10 requests
carrying one batch of 1 KB records each, as full as librdkafka's ``batch.size`` (1,000,000 bytes)
lets it be, 5 in flight; and Fetch v16 requests, one at a time, each answered with such a batch. Its
CPU per MB (over at least 64 MB per phase, after a warm-up) is in the table (1 KB rows) beside the mock's and the
simulator's: the simulator's ratio to it is what its own machinery costs, the floor's ratio to the mock
what Python and its event loop cost. The floor's load is a replay, not a client, so only its CPU rows
are shown, and they are not gated.

The same replay is then sent to the simulator (to the leader of a topic of its own, RF 3, acks=1; the
Fetch requests name that topic's id and read its first batch), and to a second floor that keeps each
Produce request's bytes in a buffer of its own (``--keep``: what any server that serves the records
back must at least do; on this machine most of that cost is the kernel handing the process fresh
memory), and to a third that keeps them and reads each batch's records as a Kafka leader reads them at
append (``--keep --read``: ``LogValidator``'s checks, through the project's one reader of records), the
least a server that answers a Produce as Kafka does must do. A second table shows them side by side,
in CPU per MB (not gated): the simulator's distance from the floors on exactly the same bytes, without a
client's own variation.

Targets, as the issue sets them (the script prints a table and exits 1 if one is missed): the
simulator's median throughput at least the mock's (1.0x) and its median server CPU per MB at most the
mock's (1.0x), in every row and phase; the first consumer's CPU at most 2x the mock's. Memory is
reported, not gated.

``--profile`` instead runs the simulator in this process (``controller.embedded.ServerThread``) under
cProfile while confluent-kafka produces ``--records`` records with acks=all, and prints the functions
that took the most time on the server's thread.

    .venv/bin/python benchmarks/data_path.py [--megabytes 64] [--repeats 5] [--sizes 1024,16384]
        [--producers 1,8] [--acks 1,all] [--peers kfake,kafka] [--tick-ms 1] [--profile [--records 4000]]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pickle
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import peer  # noqa: E402
import peers  # noqa: E402
from peer import FLOOR, HOST, MOCK, SIM, Server, decode, frame, load_codec  # noqa: E402
from peers import KAFKA, KFAKE, Peer  # noqa: E402

VALUE = b"x" * 1024
MB = 1e6
TARGET = 1.0
#: A consumer's first answers: the simulator's server CPU at most this many times the mock's.
FIRST_FETCH_TARGET = 2.0
MOCK_BROKERS = 3
ACKS = ("1", "all")
SIZES = (1024, 16384)
PRODUCERS = (1, 8)
#: The records of a phase are spread over this many single-partition topics (RF 3), round robin: the mock
#: keeps at most 5 MiB per partition (older batches are dropped as it appends), so a phase of 64 MB is
#: read back whole only when no partition of it holds more than that.
TOPICS = 16
#: The simulator's log bound per partition in this benchmark (the mock's own is 5 MiB): a phase's share of
#: a partition (64 MB / 16) stays readable, and the run's memory stays bounded on both sides.
SIM_LOG_MAX_BYTES = 8 << 20
#: (acks, record size, producers): one row of the matrix, each measured ``--repeats`` times.
Row = tuple[str, int, int]


@dataclass
class Phase:
    seconds: float
    cpu_s: float
    megabytes: float

    @property
    def mb_per_s(self) -> float:
        return self.megabytes / self.seconds

    @property
    def cpu_ms_per_mb(self) -> float:
        return self.cpu_s * 1000 / self.megabytes


@dataclass
class Figures:
    produce: dict[Row, list[Phase]] = field(default_factory=dict)  # row -> a phase per repeat
    consume: dict[Row, list[Phase]] = field(default_factory=dict)
    #: The server's CPU (s) for the first consumer of the run, reading the warm-up records (its first
    #: Metadata, ListOffsets and Fetch answers), before any timed consume.
    consumer_start: float = 0.0
    rss_before_mb: float = 0.0
    rss_after_mb: float = 0.0


def median_of(phases: list[Phase], figure: str) -> float:
    return statistics.median(getattr(p, figure) for p in phases)


def spread_of(phases: list[Phase], figure: str) -> str:
    """The spread of a figure over the repeats: its lowest and highest value."""
    values = [getattr(p, figure) for p in phases]
    return f"{min(values):.2f}-{max(values):.2f}"


def simulator(tick_ms: int) -> Server:
    cmd = [
        sys.executable, "-m", "placement_sim.cli.main", "serve", "--listen", "127.0.0.1:0", "--seed", "1",
        "--set", f"simulator.replication.tick.ms={tick_ms}",
        "--set", f"simulator.log.max.bytes={SIM_LOG_MAX_BYTES}",
    ]  # fmt: skip
    return Server(SIM, cmd)


def mock_server() -> Server:
    return peers.mock_server(MOCK_BROKERS)


#: The other peers a run can add (``--peers``), each with as many brokers as the mock: franz-go's kfake,
#: and a real Kafka cluster (three brokers under a controller; its JVMs with the full JIT).
OTHERS = {"kfake": KFAKE, "kafka": KAFKA}


def other_peer(choice: str) -> Peer:
    if choice == "kfake":
        return peers.kfake_server(MOCK_BROKERS, 1)
    return peers.kafka_peer(MOCK_BROKERS, heap="1g", throughput=True)


def topic_for(acks: str) -> str:
    """The topic of the simulator's replayed load (the floor's table)."""
    return f"bench-data-acks-{acks}"


#: The topics every row of the matrix writes to and reads from (one partition each, RF 3).
MATRIX_TOPICS = [f"bench-data-{index:02d}" for index in range(TOPICS)]


def create_topic(server: Peer, topic: str) -> None:
    from peer import ask, create_on

    if server.name in (KFAKE, KAFKA):  # CreateTopics, then until the broker knows the topic's leader
        create_on(server, [topic], partitions=1, replication=3)
    elif server.name == SIM:
        body = {
            "Topics": [
                {"Name": topic, "NumPartitions": 1, "ReplicationFactor": 3, "Assignments": [], "Configs": []}
            ],
            "timeoutMs": 60000,
            "validateOnly": False,
        }
        answer = decode(19, 7, ask(server.address, frame(19, 7, body)))
        assert answer["Topics"][0]["ErrorCode"] == 0, answer
    else:
        auto = {"Topics": [{"Name": topic}], "AllowAutoTopicCreation": True}
        answer = decode(3, 12, ask(server.address, frame(3, 12, auto)))
        assert answer["Topics"][0]["ErrorCode"] == 0, answer
        assert len(answer["Topics"][0]["Partitions"][0]["ReplicaNodes"]) == 3, answer


def produce(bootstrap: str, acks: str, size: int, producers: int, records: int) -> Callable[[], None]:
    """``producers`` producers connected and warmed up (each has delivered a record to every topic); the
    returned call has them send ``records`` records of ``size`` bytes together, round robin over the
    topics (producer i sends records i, i + producers, ...), each from a thread of its own."""
    from confluent_kafka import Producer

    errors: list[object] = []
    value = b"x" * size

    def report(error: object, _message: object) -> None:
        if error is not None:
            errors.append(error)

    config = {
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "enable.idempotence": acks == "all",
        "linger.ms": 5,
    }
    clients = [Producer(config) for _ in range(producers)]
    for client in clients:
        for topic in MATRIX_TOPICS:
            client.produce(topic, value=b"warm-up", partition=0, on_delivery=report)
        client.flush(60)

    def send(index: int) -> None:
        client = clients[index]
        for number in range(index, records, producers):
            topic = MATRIX_TOPICS[number % TOPICS]
            while True:
                try:
                    client.produce(topic, value=value, partition=0, on_delivery=report)
                    break
                except BufferError:
                    client.poll(0.01)
        if client.flush(300) != 0:
            errors.append(f"producer {index}: records left unsent")

    def run() -> None:
        threads = [threading.Thread(target=send, args=(index,)) for index in range(producers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise RuntimeError(f"{errors[:3]}")

    return run


def high_watermarks(bootstrap: str) -> dict[str, int]:
    """Each matrix topic's high watermark (where the next phase's records will start)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-offsets"})
    try:
        return {t: consumer.get_watermark_offsets(TopicPartition(t, 0), timeout=30)[1] for t in MATRIX_TOPICS}
    finally:
        consumer.close()


def consume(bootstrap: str, starts: dict[str, int], wanted: int) -> tuple[float, float]:
    """Reads ``wanted`` records from ``starts`` (topic -> offset; one consumer assigned every topic's
    partition, no group): (the time of its assignment, once connected and told the leaders by a Metadata
    answer; the time of the last record)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "auto.offset.reset": "error",  # a record dropped before it was read is an error, not a skip
        }
    )
    consumer.list_topics(timeout=30)  # connected and told the leaders before the clock starts
    first = time.perf_counter()
    consumer.assign([TopicPartition(topic, 0, offset) for topic, offset in starts.items()])
    got = 0
    deadline = time.perf_counter() + 300
    while got < wanted and time.perf_counter() < deadline:
        # Never ask for more than is left: consume() waits its whole timeout for a batch it cannot fill.
        for message in consumer.consume(min(1000, wanted - got), 0.5):
            if message.error() is not None:
                raise RuntimeError(f"consume: {message.error()}")
            got += 1
    last = time.perf_counter()
    consumer.close()
    if got < wanted:
        raise RuntimeError(f"read {got} of {wanted} records")
    return first, last


def records_for(size: int, producers: int, megabytes: float) -> int:
    """At least ``megabytes`` of ``size``-byte record values, a whole number of rounds over the topics and
    the producers."""
    unit = TOPICS * producers
    return -(-int(megabytes * MB) // (size * unit)) * unit


def measure(server: Peer, rows: list[Row], megabytes: float, repeats: int) -> Figures:
    bootstrap = f"{server.address[0]}:{server.address[1]}"
    figures = Figures(rss_before_mb=server.rss_mb())
    for topic in MATRIX_TOPICS:
        create_topic(server, topic)
    first = True
    for row in rows:
        acks, size, producers = row
        records = records_for(size, producers, megabytes)
        run = produce(bootstrap, acks, size, producers, records)
        if first:
            # The run's first consumer reads the warm-up records: the server's first answers to a
            # consumer's APIs (its codecs made on first use) are counted apart, not per MB.
            cpu = server.cpu_ns()
            consume(bootstrap, dict.fromkeys(MATRIX_TOPICS, 0), TOPICS)
            figures.consumer_start = (server.cpu_ns() - cpu) / 1e9
            first = False
        for _ in range(repeats):
            starts = high_watermarks(bootstrap)
            cpu, began = server.cpu_ns(), time.perf_counter()
            run()
            moved = records * size / MB
            produced = Phase(time.perf_counter() - began, (server.cpu_ns() - cpu) / 1e9, moved)
            figures.produce.setdefault(row, []).append(produced)
            cpu = server.cpu_ns()
            began_reading, last = consume(bootstrap, starts, records)
            # The consumer's start (its connection, Metadata) is not counted in its time; its CPU is, in both.
            figures.consume.setdefault(row, []).append(
                Phase(last - began_reading, (server.cpu_ns() - cpu) / 1e9, moved)
            )
            print(
                f"{server.name} acks={acks} {size} B x{producers}: produce {produced.mb_per_s:.1f} MB/s "
                f"{produced.cpu_ms_per_mb:.2f} ms/MB, consume {figures.consume[row][-1].mb_per_s:.1f} MB/s "
                f"{figures.consume[row][-1].cpu_ms_per_mb:.2f} ms/MB",
                file=sys.stderr,
                flush=True,
            )
    figures.rss_after_mb = server.rss_mb()
    return figures


# -- the Python floor (this script with --floor) -------------------------------------------------------

#: The versions confluent-kafka 2.16 (librdkafka 2.16) sends to the simulator.
PRODUCE_VERSION = 10
FETCH_VERSION = 16
#: librdkafka's ``batch.size``: the most a batch (so a Produce to one partition) carries, in bytes.
BATCH_BYTES = 1_000_000
#: librdkafka's ``max.in.flight`` for an idempotent producer: Produce requests pipelined on a connection.
IN_FLIGHT = 5
#: The floor is measured over at least this many MB per phase (its CPU per MB is small: more bytes, less noise).
FLOOR_MEGABYTES = 64.0
_SIZE = 4
#: The topic id the floor's Fetch requests name (the floor reads no request).
FLOOR_TOPIC_ID = uuid.UUID(int=1)


def floor_main(path: str, keep: bool, read: bool = False) -> None:
    """Serve the answers in ``path`` (pickled {apiKey: a whole response frame, correlation id 0}) on an
    ephemeral port, on uvloop when it is installed; print the address; serve until SIGTERM.

    The least a Python asyncio server does for the same bytes: the socket is read straight into one
    reused buffer (``asyncio.BufferedProtocol``, no copy of a frame, nothing kept), each frame's size
    prefix, API key and correlation id are read, and the taught answer for its API key goes out with the
    correlation id patched in. No decode, no checks, no log. With ``keep``, the rest of each Produce
    frame is read into a buffer of its own, which is kept (what any server that serves the records back
    must do at least: the memory the records take is the process's, fresh from the system). With
    ``read`` too, each kept batch's records are then read as a Kafka leader reads them at append
    (``LogValidator``: the project's ``validate_client_batch``, the one reading of records there is):
    what a server must do at least to answer a Produce as Kafka does."""
    with open(path, "rb") as f:
        answers: dict[Any, Any] = pickle.load(f)
    span = answers.pop("batch", None)  # where the batch lies in a Produce frame's rest
    validate: Any = None
    if read:
        from controller.records.checks import DEFAULT_LIMITS
        from controller.records.validator import validate_client_batch

        def validate(rest: bytearray) -> None:
            batch = memoryview(rest)[span[0] : span[1]]
            result = validate_client_batch(
                batch, PRODUCE_VERSION, DEFAULT_LIMITS, int(time.time() * 1000), "t", 0
            )
            if not hasattr(result, "header"):
                raise RuntimeError(f"the floor refused the replayed batch: {result}")

    try:
        import uvloop

        loop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()

    class Answering(asyncio.BufferedProtocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport
            self.buffer = bytearray(256 * 1024)
            self.head = bytearray()  # the first 12 bytes of the frame being read (size, key, version, id)
            self.remaining = 0  # bytes of the current frame's body still to skip
            self.kept: list[bytearray] = []  # with keep: each Produce frame's rest
            self.filling = 0  # bytes of the last kept frame still to read into it

        def get_buffer(self, sizehint: int) -> memoryview:
            if self.filling:
                last = self.kept[-1]
                return memoryview(last)[len(last) - self.filling :]
            return memoryview(self.buffer)

        def buffer_updated(self, nbytes: int) -> None:
            if self.filling:
                self.filling -= nbytes
                if not self.filling and validate is not None:
                    validate(self.kept[-1])
                return
            data = memoryview(self.buffer)[:nbytes]
            pos, out = 0, []
            while pos < nbytes:
                if self.remaining:
                    skip = min(self.remaining, nbytes - pos)
                    self.remaining -= skip
                    pos += skip
                    continue
                take = min(12 - len(self.head), nbytes - pos)
                self.head += data[pos : pos + take]
                pos += take
                if len(self.head) == 12:
                    head = bytes(self.head)
                    self.head.clear()
                    self.remaining = int.from_bytes(head[:4], "big") - 8
                    api_key = int.from_bytes(head[4:6], "big")
                    if keep and api_key == 0:
                        kept = bytearray(self.remaining)
                        here = min(self.remaining, nbytes - pos)
                        kept[:here] = data[pos : pos + here]
                        self.kept.append(kept)
                        pos += here
                        self.filling, self.remaining = self.remaining - here, 0
                        if not self.filling and validate is not None:
                            validate(kept)
                    answer = answers[api_key]
                    out.append(answer[:4] + head[8:12] + answer[8:] if len(answer) < 4096 else answer)
            if out:
                self.transport.write(b"".join(out) if len(out) > 1 else out[0])  # type: ignore[attr-defined]

    server = loop.run_until_complete(loop.create_server(Answering, HOST, 0))
    print(f"listening on {HOST}:{server.sockets[0].getsockname()[1]}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: loop.stop())
    loop.run_forever()


_FLOOR_BATCH: list[tuple[int, bytes]] = []


def floor_batch() -> tuple[int, bytes]:
    """The full batch of 1 KB records (``BATCH_BYTES``) every replayed Produce carries, and its count (made
    once: its timestamp is the time it was made, within the topic's bounds for the replay's minutes)."""
    if not _FLOOR_BATCH:
        from controller.records.batch import client_batch

        count = 1
        while len(client_batch([(None, VALUE)] * (count + 1), 0)) <= BATCH_BYTES:
            count += 1
        _FLOOR_BATCH.append((count, client_batch([(None, VALUE)] * count, int(time.time() * 1000))))
    return _FLOOR_BATCH[0]


def floor_frames(topic: str, topic_id: uuid.UUID = FLOOR_TOPIC_ID) -> tuple[int, bytes, bytes, bytes, bytes]:
    """The records in a full batch, the Produce request a client sends for a full batch of 1 KB records (``BATCH_BYTES``), the
    Produce answer, a consumer's Fetch request and the Fetch answer carrying that batch: the same
    shapes and sizes as the simulator gets and gives (a batch per request, a batch per answer)."""
    from protocol.framing import encode_response, response_header_version

    count, batch = floor_batch()
    schemas = peer.SCHEMAS
    produce_request = frame(
        0,
        PRODUCE_VERSION,
        {
            "TransactionalId": None,
            "Acks": 1,
            "TimeoutMs": 30000,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}],
        },
    )
    produce_answer = schemas.response(0).encode(
        {
            "Responses": [
                {
                    "Name": topic,
                    "PartitionResponses": [
                        {
                            "Index": 0,
                            "ErrorCode": 0,
                            "BaseOffset": 0,
                            "LogAppendTimeMs": -1,
                            "LogStartOffset": 0,
                        }
                    ],
                }
            ],
            "ThrottleTimeMs": 0,
        },
        PRODUCE_VERSION,
    )
    fetch_request = frame(
        1,
        FETCH_VERSION,
        {
            "MaxWaitMs": 500,
            "MinBytes": 1,
            "Topics": [
                {
                    "TopicId": topic_id,
                    "Partitions": [{"Partition": 0, "FetchOffset": 0, "PartitionMaxBytes": 1 << 20}],
                }
            ],
        },
    )
    partition = {
        "PartitionIndex": 0,
        "ErrorCode": 0,
        "HighWatermark": count,
        "LastStableOffset": count,
        "LogStartOffset": 0,
        "AbortedTransactions": None,
        "PreferredReadReplica": -1,
        "Records": batch,
    }
    fetch_answer = schemas.response(1).encode(
        {
            "ThrottleTimeMs": 0,
            "ErrorCode": 0,
            "SessionId": 0,
            "Responses": [{"TopicId": topic_id, "Partitions": [partition]}],
        },
        FETCH_VERSION,
    )
    return (
        count,
        produce_request,
        encode_response(0, response_header_version(schemas, 0, PRODUCE_VERSION), produce_answer),
        fetch_request,
        encode_response(0, response_header_version(schemas, 1, FETCH_VERSION), fetch_answer),
    )


class _Replay(asyncio.Protocol):
    """One connection of the floor's load: ``request`` sent ``total`` times, ``in_flight`` at a time."""

    def __init__(self, request: bytes, total: int, in_flight: int, done: asyncio.Future[None]) -> None:
        self.request, self.total, self.in_flight, self.done = request, total, in_flight, done
        self.sent = self.answered = 0
        self.head = b""
        self.remaining = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        for _ in range(min(self.in_flight, self.total)):
            self.send()

    def send(self) -> None:
        self.sent += 1
        self.transport.write(self.request)  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        pos, n = 0, len(data)
        while pos < n:
            if self.remaining:
                skip = min(self.remaining, n - pos)
                self.remaining -= skip
                pos += skip
                if self.remaining == 0:
                    self.answered += 1
                    if self.sent < self.total:
                        self.send()
                    elif self.answered == self.total and not self.done.done():
                        self.done.set_result(None)
                continue
            take = min(_SIZE - len(self.head), n - pos)
            self.head += data[pos : pos + take]
            pos += take
            if len(self.head) == _SIZE:
                self.remaining = int.from_bytes(self.head, "big")
                self.head = b""

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_exception(ConnectionError(f"the floor closed the connection ({exc})"))


async def _replay(address: tuple[str, int], request: bytes, total: int, in_flight: int) -> None:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    transport, _ = await loop.create_connection(lambda: _Replay(request, total, in_flight, done), *address)
    try:
        await done
    finally:
        transport.close()


def measure_floor(megabytes: float) -> tuple[Phase, Phase, Phase, Phase]:
    """The floor's CPU for producing and for consuming the bytes the clients move (``megabytes`` of 1 KB
    records, at least ``FLOOR_MEGABYTES``): this process replays the Produce and Fetch requests of
    :func:`floor_frames` to the floor (pipelined as librdkafka pipelines them), after a warm-up; then the
    Produce requests again to a floor that keeps their bytes (the third figure), and to one that keeps them
    and reads their records as a Kafka leader does (the fourth)."""
    per_request, produce_request, produce_answer, fetch_request, fetch_answer = floor_frames(topic_for("1"))
    records = floor_batch()[1]
    at = produce_request.index(records) - 12  # in the frame's rest, after size, key, version and id
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "answers.pickle")
        with open(path, "wb") as f:
            pickle.dump({0: produce_answer, 1: fetch_answer, "batch": (at, at + len(records))}, f)
        phases: list[Phase] = []
        for flags in ([], ["--keep"], ["--keep", "--read"]):
            server = Server(FLOOR, [sys.executable, __file__, "--floor", path, *flags])
            server.start()
            try:
                phases += replay(
                    server,
                    server.address,
                    per_request,
                    produce_request,
                    fetch_request,
                    megabytes,
                    fetch=not flags,
                )
            finally:
                server.stop()
        return phases[0], phases[1], phases[2], phases[3]


def measure_replayed(server: Server, megabytes: float) -> tuple[Phase, Phase]:
    """The simulator's CPU for the floor's load: the same Produce frames (acks=1) sent to the leader of a
    topic of its own (RF 3), and Fetch frames for its first batch, over the same bytes."""
    topic = "bench-data-replayed"
    create_topic(server, topic)
    answer = decode(3, 12, peer.ask(server.address, frame(3, 12, {"Topics": [{"Name": topic}]})))
    found = answer["Topics"][0]
    leader = found["Partitions"][0]["LeaderId"]
    broker = next(b for b in answer["Brokers"] if b["NodeId"] == leader)
    per_request, produce_request, _, fetch_request, _ = floor_frames(topic, found["TopicId"])
    produced, fetched = replay(
        server, (broker["Host"], broker["Port"]), per_request, produce_request, fetch_request, megabytes
    )
    return produced, fetched


def replay(
    server: Server,
    address: tuple[str, int],
    per_request: int,
    produce_request: bytes,
    fetch_request: bytes,
    megabytes: float,
    fetch: bool = True,
) -> list[Phase]:
    """``server``'s CPU for the produce and (``fetch``) the fetch requests replayed to ``address`` (after
    a warm-up of each), over at least ``FLOOR_MEGABYTES``."""
    wanted = max(megabytes, FLOOR_MEGABYTES)
    phases = []
    loads = ((produce_request, IN_FLIGHT), (fetch_request, 1)) if fetch else ((produce_request, IN_FLIGHT),)
    for request, in_flight in loads:
        asyncio.run(_replay(address, request, 3, in_flight))  # warm-up
        count = max(1, round(wanted * MB / (per_request * len(VALUE))))
        cpu, began = server.cpu_ns(), time.perf_counter()
        asyncio.run(_replay(address, request, count, in_flight))
        elapsed = time.perf_counter() - began
        phases.append(Phase(elapsed, (server.cpu_ns() - cpu) / 1e9, count * per_request * len(VALUE) / MB))
    return phases


def row_label(row: Row) -> str:
    acks, size, producers = row
    return f"acks={acks}, {size // 1024} KB, {producers} producer{'s' if producers > 1 else ''}"


def report(
    figures: dict[str, Figures],
    rows: list[Row],
    floor: tuple[Phase, Phase, Phase, Phase],
    replayed: tuple[Phase, Phase],
    megabytes: float,
    repeats: int,
    tick_ms: int,
) -> int:
    """The table: per row of the matrix and phase, the median (and the spread over the repeats) of the
    mock's and the simulator's throughput and server CPU per MB, the ratio of the medians (gated), the
    Python floor's CPU per MB where its replay is the same load (1 KB records) and the simulator's ratio
    to it; then the first consumer's CPU (gated) and the memory; then the replayed load's table."""
    mock, sim = figures[MOCK], figures[SIM]
    others = [name for name in OTHERS.values() if name in figures]  # not gated: shown beside
    missed: list[str] = []
    print(
        f"| row | phase | figure | {MOCK} median (spread) | {SIM} median (spread) | {SIM} / mock | target "
        f"| {FLOOR} | {SIM} / floor |" + "".join(f" {name} median |" for name in others)
    )
    print("|---|---|---|---:|---:|---:|---|---:|---:|" + "---:|" * len(others))
    for row in rows:
        for phase, floor_phase in (("produce", floor[0]), ("consume", floor[1])):
            m, s = getattr(mock, phase)[row], getattr(sim, phase)[row]
            for figure, unit, better_low in (
                ("mb_per_s", "MB/s", False),
                ("cpu_ms_per_mb", "CPU ms/MB", True),
            ):
                m_med, s_med = median_of(m, figure), median_of(s, figure)
                ratio = s_med / m_med
                met = ratio <= TARGET if better_low else ratio >= TARGET
                target = f"{'<=' if better_low else '>='} {TARGET}x"
                if not met:
                    missed.append(f"{row_label(row)} {phase} {unit}")
                f_med = floor_phase.cpu_ms_per_mb if better_low and row[1] == len(VALUE) else None
                beside = "".join(
                    f" {median_of(getattr(figures[n], phase)[row], figure):.2f} |" for n in others
                )
                print(
                    f"| {row_label(row)} | {phase} | {unit} | {m_med:.2f} ({spread_of(m, figure)}) "
                    f"| {s_med:.2f} ({spread_of(s, figure)}) | {ratio:.2f}x | {target}{'' if met else ' **missed**'} "
                    f"| {'-' if f_med is None else f'{f_med:.2f}'} | {'-' if f_med is None else f'{s_med / f_med:.2f}x'} |"
                    + beside
                )
    m_ms, s_ms = mock.consumer_start * 1000, sim.consumer_start * 1000
    met = s_ms <= FIRST_FETCH_TARGET * m_ms
    if not met:
        missed.append("first consumer CPU")
    beside = "".join(f" {figures[n].consumer_start * 1000:.2f} |" for n in others)
    print(
        f"| first consumer (Metadata, ListOffsets, first Fetch) | - | CPU ms | {m_ms:.2f} | {s_ms:.2f} "
        f"| {s_ms / m_ms:.2f}x | <= {FIRST_FETCH_TARGET}x{'' if met else ' **missed**'} | - | - |" + beside
    )
    for label, held in (("RSS held (MB)", True), ("RSS growth (MB)", False)):
        m_rss, s_rss = ((f.rss_after_mb if held else f.rss_after_mb - f.rss_before_mb) for f in (mock, sim))
        beside = "".join(
            f" {(figures[n].rss_after_mb if held else figures[n].rss_after_mb - figures[n].rss_before_mb):.1f} |"
            for n in others
        )
        ratio = f"{s_rss / m_rss:.2f}x" if m_rss else "-"
        print(f"| {label} | - | MB | {m_rss:.1f} | {s_rss:.1f} | {ratio} | - | - | - |" + beside)
    print(
        f"(each phase {megabytes:g} MB of record values or more over {TOPICS} topics of one partition, RF 3, "
        f"median of {repeats} repeats, spread = lowest-highest; mock{''.join(', ' + n for n in others)} "
        f"with {MOCK_BROKERS} brokers; simulator tick {tick_ms} ms; the floor over {floor[0].megabytes:.0f} MB "
        "of replayed Produce and Fetch frames of 1 KB records per phase)"
    )
    print()
    print(f"| the floor's load (replayed frames), CPU ms/MB | {FLOOR} | {SIM} | {SIM} / floor |")
    print("|---|---:|---:|---:|")
    for label, f, s in (
        (f"produce: Produce v{PRODUCE_VERSION}, a 1 MB batch each, acks=1", floor[0], replayed[0]),
        ("produce, the floor keeping each request's bytes", floor[2], replayed[0]),
        (
            "produce, the floor keeping the bytes and reading the records (LogValidator)",
            floor[3],
            replayed[0],
        ),
        (f"consume: Fetch v{FETCH_VERSION}, answered with a 1 MB batch", floor[1], replayed[1]),
    ):
        print(
            f"| {label} | {f.cpu_ms_per_mb:.2f} | {s.cpu_ms_per_mb:.2f} | {s.cpu_ms_per_mb / f.cpu_ms_per_mb:.2f}x |"
        )
    if missed:
        print("MISSED: " + "; ".join(missed))
        return 1
    print("all targets met")
    return 0


def profile(records: int, tick_ms: int, top: int = 25) -> None:
    """cProfile on the in-process server's thread (its CPU clock: a loaded machine's waits are not counted)
    while confluent-kafka produces with acks=all."""
    import cProfile
    import pstats

    from controller.embedded import ServerThread

    properties = {"simulator.replication.tick.ms": tick_ms, "simulator.log.max.bytes": SIM_LOG_MAX_BYTES}
    with ServerThread.start(brokers=[(0, None), (1, None), (2, None)], properties=properties) as server:
        address = server.bootstrap.rsplit(":", 1)
        target = Server(SIM, [])
        target.address = (address[0], int(address[1]))
        for topic in MATRIX_TOPICS:
            create_topic(target, topic)
        run = produce(server.bootstrap, "all", len(VALUE), 1, records)
        profiler = cProfile.Profile(time.thread_time)  # the server thread's CPU, not the wall clock
        server.call(profiler.enable)  # profiles the server's event loop thread only
        began = time.perf_counter()
        run()
        elapsed = time.perf_counter() - began
        server.call(profiler.disable)
    print(f"{records} records of {len(VALUE)} bytes, acks=all: {elapsed:.2f} s under cProfile")
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=64.0, help="MB of record values per phase")
    parser.add_argument("--repeats", type=int, default=5, help="repeats of each phase (median, spread)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="record sizes in bytes")
    parser.add_argument("--producers", default=",".join(map(str, PRODUCERS)), help="producer counts")
    parser.add_argument("--acks", default=",".join(ACKS), help="acks settings: 1, all")
    parser.add_argument("--records", type=int, default=4000, help="--profile: records produced")
    parser.add_argument("--tick-ms", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="profile the simulator under produce load")
    parser.add_argument("--floor", metavar="ANSWERS", help=argparse.SUPPRESS)
    parser.add_argument("--keep", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--read", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--peers",
        default="kfake,kafka",
        help="other peers shown beside the mock (not gated), comma-separated: kfake, kafka; '' for none",
    )
    args = parser.parse_args()
    if args.floor is not None:
        floor_main(args.floor, args.keep, args.read)
        return 0
    load_codec()
    if args.profile:
        profile(args.records, args.tick_ms)
        return 0
    rows: list[Row] = [
        (acks.strip(), int(size), int(producers))
        for acks in args.acks.split(",")
        for size in args.sizes.split(",")
        for producers in args.producers.split(",")
    ]
    figures: dict[str, Figures] = {}
    replayed: tuple[Phase, Phase] | None = None
    chosen = [c.strip() for c in args.peers.split(",") if c.strip()]
    unknown = [c for c in chosen if c not in OTHERS]
    if unknown:
        parser.error(f"--peers: unknown {unknown}; choose among {sorted(OTHERS)}")
    servers: list[Peer] = [mock_server(), simulator(args.tick_ms), *(other_peer(c) for c in chosen)]
    for server in servers:
        server.start()
        try:
            figures[server.name] = measure(server, rows, args.megabytes, args.repeats)
            if server.name == SIM:
                replayed = measure_replayed(server, args.megabytes)
        finally:
            server.stop()
    floor = measure_floor(args.megabytes)
    assert replayed is not None
    return report(figures, rows, floor, replayed, args.megabytes, args.repeats, args.tick_ms)


if __name__ == "__main__":
    sys.exit(main())
