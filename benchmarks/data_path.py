"""Produce and consume through the data path: placement-sim against librdkafka's mock cluster, same client,
same workload, measured in the same run.

The peer is the mock cluster inside confluent-kafka's librdkafka, started in its own process as
``benchmarks/peer.py`` starts it (``--mock``: 6 brokers). The simulator is ``placement-sim serve`` (6
brokers, seed 1) in another process, with the replication model ticking every
``simulator.replication.tick.ms`` = 1 ms (``--tick-ms``), so that an acks=all answer waits for a
follower's copy, not for a coarse tick. This process is the client for both: confluent-kafka, the same
configuration against each.

Workloads, on partition 0 of a topic with 3 replicas (created with CreateTopics on the simulator,
auto-created by Metadata on the mock, which has no CreateTopics):

- **produce**: ``--records`` records of 100 bytes, idempotent producer with acks=all and linger.ms=5,
  from the first produce() to the end of flush(): records per second;
- **consume**: the same records read back by a consumer that assigns the partition from the beginning
  (no group): records per second, from the first record received to the last (the consumer's start,
  its Metadata and ListOffsets, are not counted);
- **latency**: one record at a time (linger.ms=0), produce() then flush(), ``--rounds`` times, with
  acks=1 and with acks=all: the median and 99th percentile of a request's round trip, in ms.

Targets (the script prints a table and exits 1 if one is missed): the simulator's produce and consume
throughput at least 0.2x the mock's (a Python server with a replication model against C that keeps
nothing but the bytes), and its median latency per request at most 5x the mock's plus 2 ms (acks=all
waits at least one tick of the model).

    .venv/bin/python benchmarks/data_path.py [--records 20000] [--rounds 300] [--tick-ms 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from peer import MOCK, SIM, Server, decode, frame, load_codec, mock_server  # noqa: E402

TOPIC = "bench-data"
VALUE = b"x" * 100
THROUGHPUT_TARGET = 0.2
LATENCY_FACTOR = 5.0
LATENCY_SLACK_MS = 2.0


@dataclass
class Figures:
    produce_per_s: float
    consume_per_s: float
    latency_ms: dict[str, tuple[float, float]]  # acks -> (median, p99)


def simulator(tick_ms: int) -> Server:
    cmd = [
        sys.executable, "-m", "placement_sim.cli.main", "serve", "--listen", "127.0.0.1:0", "--seed", "1",
        "--set", f"simulator.replication.tick.ms={tick_ms}", "--set", "simulator.log.max.bytes=-1",
    ]  # fmt: skip
    return Server(SIM, cmd)


def create_topic(server: Server) -> None:
    from peer import ask

    if server.name == SIM:
        body = {
            "Topics": [
                {"Name": TOPIC, "NumPartitions": 1, "ReplicationFactor": 3, "Assignments": [], "Configs": []}
            ],
            "timeoutMs": 60000,
            "validateOnly": False,
        }
        answer = decode(19, 7, ask(server.address, frame(19, 7, body)))
        assert answer["Topics"][0]["ErrorCode"] == 0, answer
    else:
        auto = {"Topics": [{"Name": TOPIC}], "AllowAutoTopicCreation": True}
        answer = decode(3, 12, ask(server.address, frame(3, 12, auto)))
        assert answer["Topics"][0]["ErrorCode"] == 0, answer


def measure(server: Server, records: int, rounds: int) -> Figures:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    bootstrap = f"{server.address[0]}:{server.address[1]}"
    errors: list[object] = []

    def report(error: object, _message: object) -> None:
        if error is not None:
            errors.append(error)

    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5}
    )
    producer.produce(TOPIC, value=b"warm-up", partition=0, on_delivery=report)
    producer.flush(30)
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(TOPIC, value=VALUE, partition=0, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) != 0:
        raise RuntimeError(f"{server.name}: records left unsent")
    produce_s = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{server.name}: {errors[:3]}")

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
    wanted = records + 1
    got = 0
    first: float | None = None
    deadline = time.perf_counter() + 120
    while got < wanted and time.perf_counter() < deadline:
        for message in consumer.consume(1000, 0.5):
            if message.error() is None:
                if first is None:
                    first = time.perf_counter()
                got += 1
    consume_s = time.perf_counter() - (first if first is not None else deadline)
    consumer.close()
    if got < wanted:
        raise RuntimeError(f"{server.name}: read {got} of {wanted} records")

    latency: dict[str, tuple[float, float]] = {}
    for acks in ("1", "all"):
        single = Producer(
            {"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 0, "enable.idempotence": False}
        )
        single.produce(TOPIC, value=b"warm-up", partition=0)
        single.flush(30)
        times = []
        for _ in range(rounds):
            began = time.perf_counter()
            single.produce(TOPIC, value=VALUE, partition=0, on_delivery=report)
            single.flush(30)
            times.append((time.perf_counter() - began) * 1000)
        times.sort()
        latency[acks] = (statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))])
    if errors:
        raise RuntimeError(f"{server.name}: {errors[:3]}")
    return Figures(records / produce_s, wanted / consume_s, latency)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--tick-ms", type=int, default=1)
    args = parser.parse_args()
    load_codec()
    figures: dict[str, Figures] = {}
    for server in (mock_server(), simulator(args.tick_ms)):
        server.start()
        try:
            create_topic(server)
            figures[server.name] = measure(server, args.records, args.rounds)
        finally:
            server.stop()
    mock, sim = figures[MOCK], figures[SIM]
    rows = [
        ("produce (records/s, acks=all)", mock.produce_per_s, sim.produce_per_s, sim.produce_per_s / mock.produce_per_s, f">= {THROUGHPUT_TARGET}x"),
        ("consume (records/s)", mock.consume_per_s, sim.consume_per_s, sim.consume_per_s / mock.consume_per_s, f">= {THROUGHPUT_TARGET}x"),
    ]  # fmt: skip
    missed = [r[0] for r in rows if r[3] < THROUGHPUT_TARGET]
    for acks in ("1", "all"):
        (m_med, m_p99), (s_med, s_p99) = mock.latency_ms[acks], sim.latency_ms[acks]
        bound = LATENCY_FACTOR * m_med + LATENCY_SLACK_MS
        label = f"latency acks={acks} median (ms)"
        rows.append((label, m_med, s_med, s_med / m_med if m_med else float("inf"), f"<= {bound:.2f} ms"))
        rows.append(
            (f"latency acks={acks} p99 (ms)", m_p99, s_p99, s_p99 / m_p99 if m_p99 else float("inf"), "-")
        )
        if s_med > bound:
            missed.append(label)
    print(f"{'':34} {MOCK:>16} {SIM:>16} {'ratio':>8}  target")
    for label, m, s, ratio, target in rows:
        print(f"{label:34} {m:16.2f} {s:16.2f} {ratio:8.2f}  {target}")
    print(
        f"({args.records} records of {len(VALUE)} bytes; latency over {args.rounds} rounds; tick {args.tick_ms} ms)"
    )
    if missed:
        print("MISSED: " + ", ".join(missed))
        return 1
    print("all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
