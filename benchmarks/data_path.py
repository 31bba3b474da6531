"""Produce and consume 1 KB records through the data path: placement-sim against librdkafka's mock
cluster, same client, same workload, measured in the same run.

The peer is the mock cluster inside confluent-kafka's librdkafka (``test.mock.num.brokers=3``), started
in its own process as ``benchmarks/peer.py --mock 3`` starts it. The simulator is ``placement-sim serve``
(its default cluster, seed 1) in another process, with the replication model ticking every
``simulator.replication.tick.ms`` = 1 ms (``--tick-ms``), so that an acks=all answer waits for a
follower's copy, not for a coarse tick. This process is the client for both: confluent-kafka, the same
configuration against each.

Workloads, each on partition 0 of its own topic with 3 replicas (created with CreateTopics on the
simulator, auto-created by Metadata on the mock, which has no CreateTopics), once with acks=1 and once
with acks=all (idempotent, as a producer's default is):

- **produce**: ``--records`` records of 1 KB, linger.ms=5, from the first produce() to the end of
  flush(): MB/s (10^6 bytes of record values);
- **consume**: the same records read back by a consumer that assigns the partition from the beginning
  (no group), from the first record received to the last: MB/s;
- **server CPU per MB**: the server process's CPU time (every thread, ``/proc/PID/task/*/schedstat``)
  over each phase, per MB moved: ms/MB;
- **memory held**: the server's resident set (``VmRSS``) once both topics hold their records, and its
  growth since before the first record.

Targets, as the issue sets them (the script prints a table and exits 1 if one is missed): the
simulator's throughput at least the mock's (1.0x) and its server CPU per MB at most the mock's (1.0x),
for each phase and acks. Memory is reported, not gated.

``--profile`` instead runs the simulator in this process (``controller.embedded.ServerThread``) under
cProfile while confluent-kafka produces ``--records`` records with acks=all, and prints the functions
that took the most time on the server's thread.

    .venv/bin/python benchmarks/data_path.py [--records 4000] [--tick-ms 1] [--profile]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import peer  # noqa: E402
from peer import MOCK, SIM, Server, decode, frame, load_codec  # noqa: E402

VALUE = b"x" * 1024
MB = 1e6
TARGET = 1.0
MOCK_BROKERS = 3
ACKS = ("1", "all")


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
    produce: dict[str, Phase] = field(default_factory=dict)  # acks -> phase
    consume: dict[str, Phase] = field(default_factory=dict)
    rss_before_mb: float = 0.0
    rss_after_mb: float = 0.0


def simulator(tick_ms: int) -> Server:
    cmd = [
        sys.executable, "-m", "placement_sim.cli.main", "serve", "--listen", "127.0.0.1:0", "--seed", "1",
        "--set", f"simulator.replication.tick.ms={tick_ms}", "--set", "simulator.log.max.bytes=-1",
    ]  # fmt: skip
    return Server(SIM, cmd)


def mock_server() -> Server:
    return Server(MOCK, [sys.executable, peer.__file__, "--mock", str(MOCK_BROKERS)])


def topic_for(acks: str) -> str:
    return f"bench-data-acks-{acks}"


def create_topic(server: Server, topic: str) -> None:
    from peer import ask

    if server.name == SIM:
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


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / MB
    raise RuntimeError(f"no VmRSS for process {pid}")


def produce(bootstrap: str, topic: str, acks: str, records: int) -> Callable[[], None]:
    """A producer connected and warmed up (one record delivered); the returned call sends ``records``."""
    from confluent_kafka import Producer

    errors: list[object] = []

    def report(error: object, _message: object) -> None:
        if error is not None:
            errors.append(error)

    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": acks == "all", "linger.ms": 5}
    )
    producer.produce(topic, value=b"warm-up", partition=0, on_delivery=report)
    producer.flush(30)

    def run() -> None:
        for _ in range(records):
            while True:
                try:
                    producer.produce(topic, value=VALUE, partition=0, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.01)
        if producer.flush(300) != 0:
            raise RuntimeError(f"{topic}: records left unsent")
        if errors:
            raise RuntimeError(f"{topic}: {errors[:3]}")

    return run


def consume(bootstrap: str, topic: str, wanted: int) -> tuple[float, float]:
    """Reads ``wanted`` records from the beginning: (time of the first record, time of the last)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got = 0
    first: float | None = None
    deadline = time.perf_counter() + 60
    while got < wanted and time.perf_counter() < deadline:
        # Never ask for more than is left: consume() waits its whole timeout for a batch it cannot fill.
        for message in consumer.consume(min(1000, wanted - got), 0.5):
            if message.error() is None:
                if first is None:
                    first = time.perf_counter()
                got += 1
    last = time.perf_counter()
    consumer.close()
    if got < wanted or first is None:
        raise RuntimeError(f"{topic}: read {got} of {wanted} records")
    return first, last


def measure(server: Server, records: int) -> Figures:
    bootstrap = f"{server.address[0]}:{server.address[1]}"
    figures = Figures(rss_before_mb=rss_mb(server.pid))
    megabytes = records * len(VALUE) / MB
    for acks in ACKS:
        topic = topic_for(acks)
        create_topic(server, topic)
        run = produce(bootstrap, topic, acks, records)
        cpu, began = server.cpu_ns(), time.perf_counter()
        run()
        figures.produce[acks] = Phase(time.perf_counter() - began, (server.cpu_ns() - cpu) / 1e9, megabytes)
        cpu = server.cpu_ns()
        first, last = consume(bootstrap, topic, records + 1)
        # The consumer's start (Metadata, ListOffsets) is not counted in its time; its CPU is, in both.
        figures.consume[acks] = Phase(last - first, (server.cpu_ns() - cpu) / 1e9, megabytes)
    figures.rss_after_mb = rss_mb(server.pid)
    return figures


def report(figures: dict[str, Figures], records: int, tick_ms: int) -> int:
    mock, sim = figures[MOCK], figures[SIM]
    rows: list[tuple[str, float, float, float, str, bool]] = []
    for acks in ACKS:
        for name, m, s in (
            ("produce", mock.produce[acks], sim.produce[acks]),
            ("consume", mock.consume[acks], sim.consume[acks]),
        ):
            ratio = s.mb_per_s / m.mb_per_s
            rows.append(
                (
                    f"{name} acks={acks} (MB/s)",
                    m.mb_per_s,
                    s.mb_per_s,
                    ratio,
                    f">= {TARGET}x",
                    ratio >= TARGET,
                )
            )
            ratio = s.cpu_ms_per_mb / m.cpu_ms_per_mb
            rows.append(
                (
                    f"{name} acks={acks} CPU (ms/MB)",
                    m.cpu_ms_per_mb,
                    s.cpu_ms_per_mb,
                    ratio,
                    f"<= {TARGET}x",
                    ratio <= TARGET,
                )
            )
    rows.append(
        (
            "RSS held (MB)",
            mock.rss_after_mb,
            sim.rss_after_mb,
            sim.rss_after_mb / mock.rss_after_mb,
            "-",
            True,
        )
    )
    grown = (mock.rss_after_mb - mock.rss_before_mb, sim.rss_after_mb - sim.rss_before_mb)
    rows.append(
        ("RSS growth (MB)", grown[0], grown[1], grown[1] / grown[0] if grown[0] else float("inf"), "-", True)
    )
    # fmt: skip
    print(f"{'':30} {MOCK:>16} {SIM:>16} {'ratio':>8}  target")
    for label, m, s, ratio, target, met in rows:
        print(f"{label:30} {m:16.2f} {s:16.2f} {ratio:8.2f}  {target}{'' if met else '  MISSED'}")
    print(
        f"({records} records of {len(VALUE)} bytes per acks, {records * len(VALUE) / MB:.1f} MB; "
        f"RF 3; mock with {MOCK_BROKERS} brokers; simulator tick {tick_ms} ms)"
    )
    missed = [r[0] for r in rows if not r[5]]
    if missed:
        print("MISSED: " + ", ".join(missed))
        return 1
    print("all targets met")
    return 0


def profile(records: int, tick_ms: int, top: int = 25) -> None:
    """cProfile on the in-process server's thread while confluent-kafka produces with acks=all."""
    import cProfile
    import pstats

    from controller.embedded import ServerThread

    properties = {"simulator.replication.tick.ms": tick_ms, "simulator.log.max.bytes": -1}
    with ServerThread.start(brokers=[(0, None), (1, None), (2, None)], properties=properties) as server:
        address = server.bootstrap.rsplit(":", 1)
        target = Server(SIM, [])
        target.address = (address[0], int(address[1]))
        topic = topic_for("all")
        create_topic(target, topic)
        run = produce(server.bootstrap, topic, "all", records)
        profiler = cProfile.Profile()
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
    parser.add_argument("--records", type=int, default=4000)
    parser.add_argument("--tick-ms", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="profile the simulator under produce load")
    args = parser.parse_args()
    load_codec()
    if args.profile:
        profile(args.records, args.tick_ms)
        return 0
    figures: dict[str, Figures] = {}
    for server in (mock_server(), simulator(args.tick_ms)):
        server.start()
        try:
            figures[server.name] = measure(server, args.records)
        finally:
            server.stop()
    return report(figures, args.records, args.tick_ms)


if __name__ == "__main__":
    sys.exit(main())
