"""The benchmarks' peers, in one place: each started in processes of its own, stopped, and its CPU read.

- **librdkafka's mock cluster** (C), inside confluent-kafka: :func:`mock_server`. A client created with
  ``test.mock.num.brokers`` starts it in this module's process (``peers.py --mock BROKERS``), which prints
  the first broker's address and idles; the mock's own thread (``rdk:mock``) serves every broker.
- **franz-go's kfake** (Go): :func:`kfake_server`, ``harness/go``'s ``kfake-peer`` (``make reference``
  builds it), which starts kfake with that many brokers on 127.0.0.1 and prints the first one's address.
- **Apache Kafka** (Java, KRaft): :func:`kafka_peer`, a real cluster of ``harness/kafka_cluster.py`` from
  the jars ``make reference`` caches: a dedicated controller and that many brokers in three racks, or one
  combined node (``brokers=1``).
- **The simulator**: :func:`simulator`, ``placement-sim serve`` (its default cluster, seed 1).

Every peer has a ``name``, ``start()`` (returns once it answers on ``address``), ``stop()``, its process
ids (``pids``), its CPU (``cpu_ticks()`` and, finer, ``cpu_ns()``: every thread of every process, live
ones) and its memory (``rss_mb()``). ``spawned`` is the time (``time.perf_counter``) its server process
started, so that spawn-to-first-answer can be measured.

    .venv/bin/python benchmarks/peers.py [--peer kfake|kafka|mock|simulator] [--brokers 3]

starts one, prints its address and its start, and stops it.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HOST = "127.0.0.1"
CLK_TCK = os.sysconf("SC_CLK_TCK")
MOCK = "librdkafka mock"
KFAKE = "franz-go kfake"
KAFKA = "Apache Kafka"
SIM = "placement-sim"
MOCK_THREAD = "rdk:mock"  # the mock cluster's one I/O thread, serving all its brokers


class Peer(Protocol):
    """What every peer offers (:class:`Server` for one process, :class:`KafkaPeer` for a cluster)."""

    name: str
    address: tuple[str, int]
    spawned: float

    def start(self) -> None: ...
    def stop(self) -> None: ...
    @property
    def pids(self) -> list[int]: ...
    def cpu_ticks(self) -> int: ...
    def cpu_ns(self) -> int: ...
    def rss_mb(self) -> float: ...


# -- processes ---------------------------------------------------------------------------------------


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the benchmark process dies, however it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _ticks(path: str) -> int:
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def process_ticks(pid: int) -> int:
    """User + system CPU of a whole process (all its threads), in clock ticks."""
    return _ticks(f"/proc/{pid}/stat")


def process_ns(pid: int) -> int:
    """CPU time of a process's live threads, in ns (``/proc/PID/task/*/schedstat``)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # the thread ended meanwhile
            continue
    return total


def process_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError(f"no VmRSS for process {pid}")


@dataclass
class Server:
    """A peer in one process that prints ``listening on HOST:PORT`` once it answers there."""

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

    @property
    def pids(self) -> list[int]:
        return [self.pid]

    def cpu_ticks(self) -> int:
        """User + system CPU of the whole process (all threads), in clock ticks."""
        return process_ticks(self.pid)

    def cpu_ns(self) -> int:
        """CPU time of the process's live threads, in ns (``/proc/PID/task/*/schedstat``)."""
        return process_ns(self.pid)

    def rss_mb(self) -> float:
        return process_rss_mb(self.pid)

    def thread_ticks(self, comm: str) -> int | None:
        """User + system CPU of the process's thread named ``comm``, if it has one."""
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            with open(f"/proc/{self.pid}/task/{tid}/comm") as f:
                if f.read().strip() == comm:
                    return _ticks(f"/proc/{self.pid}/task/{tid}/stat")
        return None


# -- librdkafka's mock cluster (this module with --mock) ---------------------------------------------


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


def mock_server(brokers: int = 6) -> Server:
    """librdkafka's mock cluster with ``brokers`` brokers. It has no CreateTopics: a Metadata request
    naming topics with AllowAutoTopicCreation makes them (4 partitions, RF min(3, brokers))."""
    return Server(MOCK, [sys.executable, __file__, "--mock", str(brokers)])


# -- franz-go's kfake ----------------------------------------------------------------------------------


def kfake_server(brokers: int = 6, partitions: int = 4) -> Server:
    """kfake with ``brokers`` brokers (``partitions``: its default for CreateTopics with -1 and for
    auto-created topics). It serves CreateTopics."""
    from harness.golang import binary

    return Server(
        KFAKE, [str(binary("kfake-peer")), "-brokers", str(brokers), "-partitions", str(partitions)]
    )


# -- the simulator -----------------------------------------------------------------------------------


def simulator(*extra: str) -> Server:
    """``placement-sim serve`` on an ephemeral port, seed 1 (its default cluster: 6 brokers in 3 racks);
    ``extra``: more options (``--set KEY=VALUE``...)."""
    cmd = [sys.executable, "-m", "placement_sim.cli.main", "serve", "--listen", f"{HOST}:0", "--seed", "1"]
    return Server(SIM, [*cmd, *extra])


# -- Apache Kafka --------------------------------------------------------------------------------------

#: JVM options for steady throughput: the full JIT (the harness's default keeps C1 only, for a quick start).
THROUGHPUT_JVM_OPTIONS = (
    "-XX:+UseSerialGC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)


@dataclass
class KafkaPeer:
    """A real Kafka cluster (KRaft) as a peer: ``brokers`` brokers in racks a, b, c, ... under a dedicated
    controller, or one combined controller+broker when ``brokers`` is 1. Its CPU and memory are every
    node's (the controller's included); ``address`` is the first broker's listener."""

    brokers: int = 3
    properties: dict[str, str] = field(default_factory=dict)
    heap: str = "384m"
    jvm_options: Sequence[str] | None = None
    name: str = KAFKA
    address: tuple[str, int] = ("", 0)
    spawned: float = 0.0
    #: Seconds the storage formatting took before the start (a JVM per node, in parallel).
    format_seconds: float = 0.0
    cluster: Any = None

    def shape(self) -> Any:
        from harness.kafka_cluster import SHAPES, ClusterShape, NodeSpec

        if self.brokers == 1:
            return SHAPES["single"]
        racks = "abcdefghij"
        nodes = [NodeSpec(100, ("controller",))]
        nodes += [NodeSpec(i, ("broker",), racks[i % 3]) for i in range(self.brokers)]
        return ClusterShape(f"{self.brokers}-brokers", tuple(nodes))

    def start(self) -> None:
        from harness.kafka_cluster import DEFAULT_JVM_OPTIONS, KafkaCluster

        options = DEFAULT_JVM_OPTIONS if self.jvm_options is None else tuple(self.jvm_options)
        cluster = KafkaCluster.start(
            self.shape(), properties=self.properties, heap=self.heap, jvm_options=options, timeout=300
        )
        self.spawned = time.perf_counter() - cluster.startup_seconds
        self.format_seconds = cluster.format_seconds
        self.cluster = cluster
        first = min((n for n in cluster.nodes.values() if n.spec.is_broker), key=lambda n: n.node_id)
        assert first.port is not None
        self.address = (HOST, first.port)

    def stop(self) -> None:
        if self.cluster is not None:
            cluster, self.cluster = self.cluster, None
            cluster.stop()

    def node_pid(self, node_id: int) -> int:
        pid = self.cluster.nodes[node_id].pid
        assert pid is not None
        return pid

    @property
    def pids(self) -> list[int]:
        return [n.pid for n in self.cluster.nodes.values() if n.running and n.pid is not None]

    def cpu_ticks(self) -> int:
        return sum(process_ticks(pid) for pid in self.pids)

    def cpu_ns(self) -> int:
        return sum(process_ns(pid) for pid in self.pids)

    def rss_mb(self) -> float:
        return sum(process_rss_mb(pid) for pid in self.pids)

    def thread_ticks(self, comm: str) -> int | None:
        return None


def kafka_peer(
    brokers: int = 3,
    *,
    properties: dict[str, str] | None = None,
    heap: str = "384m",
    throughput: bool = False,
) -> KafkaPeer:
    """A real Kafka cluster of ``brokers`` brokers (1: one combined node); ``throughput`` runs the JVMs
    with the full JIT (:data:`THROUGHPUT_JVM_OPTIONS`) instead of the harness's quick-start options."""
    return KafkaPeer(
        brokers,
        dict(properties or {}),
        heap,
        THROUGHPUT_JVM_OPTIONS if throughput else None,
    )


def peer_by_name(name: str, brokers: int) -> Peer:
    if name == "mock":
        return mock_server(brokers)
    if name == "kfake":
        return kfake_server(brokers)
    if name == "kafka":
        return kafka_peer(brokers)
    if name == "simulator":
        return simulator()
    raise ValueError(f"unknown peer {name!r}: mock, kfake, kafka or simulator")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mock", type=int, metavar="BROKERS", help=argparse.SUPPRESS)
    parser.add_argument("--peer", default="kfake", help="mock, kfake, kafka or simulator")
    parser.add_argument("--brokers", type=int, default=3)
    args = parser.parse_args()
    if args.mock is not None:
        mock_main(args.mock)
        return
    peer = peer_by_name(args.peer, args.brokers)
    peer.start()
    try:
        started = time.perf_counter() - peer.spawned
        print(
            f"{peer.name} at {peer.address[0]}:{peer.address[1]}: started in {started:.2f} s, "
            f"{peer.cpu_ns() / 1e9:.2f} s of CPU, {peer.rss_mb():.0f} MB resident, processes {peer.pids}"
        )
    finally:
        peer.stop()


if __name__ == "__main__":
    main()
