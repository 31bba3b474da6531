"""A real Apache Kafka cluster (KRaft) on loopback, from the jars ``make reference`` caches.

Each node is one JVM running ``kafka.Kafka server.properties`` on storage formatted in a temporary folder
with ``kafka.tools.StorageTool format`` (Kafka's own way in, as its scripts run it; not Kafka's test kit,
which is not among the published jars). Two shapes:

- ``single``: one combined controller+broker (node 0), for the single-broker cases.
- ``three-racks``: a dedicated controller (node 100) and three brokers 0, 1, 2 in racks ``a``, ``b``, ``c``,
  for replication. The controller stands apart so that a broker killed or stopped for a failure case never
  touches the quorum: the cluster then behaves as the simulator's model does (one controller that fences a
  broker after ``broker.session.timeout.ms``), without a controller election on top.

Ports are ephemeral (free loopback ports picked just before the start), session timeouts short, heaps
small. The cluster is ready when every broker's own listener answers Metadata naming every broker; the
start time and each node's memory (RSS) are measured. Nodes stop by PID (SIGTERM, then SIGKILL), and are
started with a parent-death signal so that none outlives the Python process that started it.

>>> with KafkaCluster.start("three-racks") as cluster:
...     print(cluster.bootstrap, cluster.summary())
...     cluster.kill(1)          # SIGKILL; cluster.pause(1) / resume(1): SIGSTOP / SIGCONT
...     cluster.restart(1)       # the same node, same port and storage, waited for until it is back

``python -m harness.kafka_cluster [--shape three-racks]`` starts one and prints its bootstrap.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from harness.jvm import KAFKA_LOGGING, HarnessMissing, java, kafka_classpath

__all__ = [
    "KAFKA_VERSION",
    "SHAPES",
    "DEFAULT_FEATURES",
    "ELR_DEFAULT_LEVEL",
    "ELR_FEATURE",
    "ClusterShape",
    "KafkaCluster",
    "KafkaNode",
    "NodeSpec",
    "elr_level",
    "rss_bytes",
]

#: The version ``harness/kafka/pom.xml`` pins (checked against the cached broker jar at start).
KAFKA_VERSION = "4.4.0"
LOOPBACK = "127.0.0.1"

#: What every node runs with besides its own identity: short timeouts for failure cases, few threads and
#: small internal topics for a shared two-core machine. The simulator of a differential test is given the
#: same values where it has the setting (tests/differential/).
BASE_PROPERTIES: dict[str, str] = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "4000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.num.partitions": "3",
    "share.coordinator.state.topic.min.isr": "1",
    "auto.create.topics.enable": "false",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.replica.fetchers": "1",
    "num.recovery.threads.per.data.dir": "1",
    "background.threads": "2",
    "log.cleaner.threads": "1",
    "controller.quorum.election.timeout.ms": "1000",
    "controller.quorum.fetch.timeout.ms": "2000",
    # Kafka's automatic preferred-leader elections run every 5 minutes on a cluster a test session keeps
    # for longer: one may move a leader between two steps that the harness sees as settled. The
    # simulator of a differential test runs without them too (harness/differential/machine.py).
    "auto.leader.rebalance.enable": "false",
    # Kafka's group cleanup runs at this interval (10 min by default) and deletes an empty group with no
    # committed offsets, such as one a JoinGroup answered MEMBER_ID_REQUIRED made: a timer the simulator
    # does not run (docs/fidelity.md). Once a day, it never falls inside a differential sequence.
    "offsets.retention.check.interval.ms": "86400000",
}

#: Kafka's eligible leader replicas feature (KIP-966) and its level on a new Kafka 4.4 cluster (on).
ELR_FEATURE, ELR_DEFAULT_LEVEL = "eligible.leader.replicas.version", "1"

#: Feature levels the storage is formatted with (``StorageTool format --feature NAME=LEVEL``), over the
#: release's defaults: none, so the reference runs as a new Kafka 4.4 cluster does, eligible leader
#: replicas on, as the simulator's default. ``REFERENCE_ELR_VERSION=0`` in the environment formats it with
#: them off (Kafka 3.x's ISR rules: the last ISR member stays listed, ``min.insync.replicas`` is no
#: cluster-level config); the differential tests then run the simulator at 0 too (:func:`elr_level`).
DEFAULT_FEATURES: dict[str, str] = (
    {ELR_FEATURE: os.environ["REFERENCE_ELR_VERSION"]} if os.environ.get("REFERENCE_ELR_VERSION") else {}
)


def elr_level(features: Mapping[str, str] = DEFAULT_FEATURES) -> str:
    """The eligible leader replicas level a cluster formatted with ``features`` runs at."""
    return features.get(ELR_FEATURE, ELR_DEFAULT_LEVEL)


#: JVM options favouring a quick start and a small footprint; benchmarks measuring steady throughput may
#: pass their own (``jvm_options=``).
DEFAULT_JVM_OPTIONS: tuple[str, ...] = (
    "-Xms64m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
)


@dataclass(frozen=True)
class NodeSpec:
    """One node of a shape: its id, its roles and its rack."""

    node_id: int
    roles: tuple[str, ...]
    rack: str | None = None

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles


@dataclass(frozen=True)
class ClusterShape:
    name: str
    nodes: tuple[NodeSpec, ...]

    @property
    def brokers(self) -> tuple[NodeSpec, ...]:
        return tuple(n for n in self.nodes if n.is_broker)

    @property
    def controllers(self) -> tuple[NodeSpec, ...]:
        return tuple(n for n in self.nodes if n.is_controller)


SHAPES: dict[str, ClusterShape] = {
    "single": ClusterShape("single", (NodeSpec(0, ("broker", "controller")),)),
    "three-racks": ClusterShape(
        "three-racks",
        (
            NodeSpec(100, ("controller",)),
            NodeSpec(0, ("broker",), "a"),
            NodeSpec(1, ("broker",), "b"),
            NodeSpec(2, ("broker",), "c"),
        ),
    ),
}


class ClusterStartError(RuntimeError):
    """A node did not start or the cluster did not become ready; the message quotes the node's log."""


def _free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (held open together while they are picked)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """The child gets SIGKILL when the process that started it dies (Linux): no JVM outlives a crashed or
    killed test run. Where prctl is not there, the atexit stop remains."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def rss_bytes(pid: int) -> int:
    """The resident set of a process, from /proc (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@dataclass
class KafkaNode:
    """One node: its folder (``server.properties``, ``data/``, ``server.log``), its ports and its JVM."""

    spec: NodeSpec
    folder: Path
    port: int | None  # the broker listener (None for a controller only)
    controller_port: int | None
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    paused: bool = False

    @property
    def node_id(self) -> int:
        return self.spec.node_id

    @property
    def address(self) -> str | None:
        return f"{LOOPBACK}:{self.port}" if self.port is not None else None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def config_file(self) -> Path:
        return self.folder / "server.properties"

    @property
    def log_file(self) -> Path:
        return self.folder / "server.log"

    def rss_bytes(self) -> int:
        return rss_bytes(self.process.pid) if self.running and self.process is not None else 0

    def log_tail(self, lines: int = 30) -> str:
        texts = []
        for name in ("server.log", "stdout.log"):
            path = self.folder / name
            if path.exists():
                texts.extend(path.read_text(errors="replace").splitlines()[-lines:])
        return "\n".join(texts[-lines:])


@dataclass
class KafkaCluster:
    """A started cluster. Use :meth:`start`; :meth:`stop` (or leaving the ``with`` block) ends it."""

    shape: ClusterShape
    folder: Path
    nodes: dict[int, KafkaNode]
    cluster_id: str
    properties: dict[str, str]
    heap: str
    jvm_options: tuple[str, ...]
    #: The feature levels the storage was formatted with (:data:`DEFAULT_FEATURES` and the caller's).
    features: dict[str, str] = field(default_factory=dict)
    keep_folder: bool = False
    #: Seconds from the first process started to every broker answering Metadata with every broker.
    startup_seconds: float = 0.0
    #: Seconds the storage formatting took (all nodes at once).
    format_seconds: float = 0.0
    _stopped: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # ----------------------------------------------------------------------------------------- start

    @classmethod
    def start(
        cls,
        shape: str | ClusterShape = "single",
        *,
        properties: Mapping[str, str | int] | None = None,
        features: Mapping[str, str | int] | None = None,
        heap: str = "384m",
        jvm_options: Sequence[str] = DEFAULT_JVM_OPTIONS,
        timeout: float = 180.0,
        folder: Path | str | None = None,
        keep_folder: bool = False,
    ) -> KafkaCluster:
        """Formats storage and starts every node of ``shape``, then waits (up to ``timeout`` s) until it
        is ready. ``properties`` override :data:`BASE_PROPERTIES` on every node, ``features`` (feature
        name to level) :data:`DEFAULT_FEATURES` at formatting."""
        chosen = SHAPES[shape] if isinstance(shape, str) else shape
        kafka_classpath()  # fails early, with its message, when `make reference` has not run
        _check_version()
        base = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix=f"kafka-{chosen.name}-"))
        base.mkdir(parents=True, exist_ok=True)
        ports = iter(_free_ports(len(chosen.brokers) + len(chosen.controllers)))
        nodes = {}
        for spec in chosen.nodes:
            nodes[spec.node_id] = KafkaNode(
                spec,
                base / f"node-{spec.node_id}",
                next(ports) if spec.is_broker else None,
                next(ports) if spec.is_controller else None,
            )
        merged = {**BASE_PROPERTIES, **{k: str(v) for k, v in (properties or {}).items()}}
        cluster = cls(
            chosen,
            base,
            nodes,
            _cluster_id(),
            merged,
            heap,
            tuple(jvm_options),
            features={**DEFAULT_FEATURES, **{k: str(v) for k, v in (features or {}).items()}},
            keep_folder=keep_folder or folder is not None,
        )
        try:
            cluster._write_configs()
            began = time.monotonic()
            cluster._format()
            cluster.format_seconds = time.monotonic() - began
            began = time.monotonic()
            for node in cluster.nodes.values():
                cluster._launch(node)
            cluster.wait_ready(timeout)
            cluster.startup_seconds = time.monotonic() - began
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _write_configs(self) -> None:
        voters = ",".join(f"{n.node_id}@{LOOPBACK}:{n.controller_port}" for n in self._controllers())
        brokers = len(self.shape.brokers)
        for node in self.nodes.values():
            node.folder.mkdir(parents=True, exist_ok=True)
            listeners = []
            if node.port is not None:
                listeners.append(f"PLAINTEXT://{LOOPBACK}:{node.port}")
            if node.controller_port is not None:
                listeners.append(f"CONTROLLER://{LOOPBACK}:{node.controller_port}")
            props = {
                "node.id": str(node.node_id),
                "process.roles": ",".join(node.spec.roles),
                "controller.quorum.voters": voters,
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "listeners": ",".join(listeners),
                "log.dirs": str(node.folder / "data"),
                "offsets.topic.replication.factor": str(min(3, brokers)),
                "transaction.state.log.replication.factor": str(min(3, brokers)),
                "share.coordinator.state.topic.replication.factor": str(min(3, brokers)),
                **self.properties,
            }
            if node.spec.is_broker:
                props["inter.broker.listener.name"] = "PLAINTEXT"
                props["advertised.listeners"] = f"PLAINTEXT://{LOOPBACK}:{node.port}"
            if node.spec.rack is not None:
                props["broker.rack"] = node.spec.rack
            node.config_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            (node.folder / "log4j2.properties").write_text(_log4j2(node.log_file))

    def _controllers(self) -> list[KafkaNode]:
        return [n for n in self.nodes.values() if n.spec.is_controller]

    def _java(self, node: KafkaNode, main: str, args: Sequence[str], heap: str) -> list[str]:
        extra = [str(KAFKA_LOGGING / "*")] if (KAFKA_LOGGING / ".fetched").exists() else []
        return [
            java(),
            f"-Xmx{heap}",
            *self.jvm_options,
            f"-Dlog4j2.configurationFile={node.folder / 'log4j2.properties'}",
            "-cp",
            kafka_classpath(*extra),
            main,
            *args,
        ]

    def _format(self) -> None:
        """``StorageTool format`` for every node at once (each is a JVM start: in parallel they take the
        time of about one)."""

        def format_one(node: KafkaNode) -> None:
            command = self._java(
                node,
                "kafka.tools.StorageTool",
                [
                    "format",
                    "-t",
                    self.cluster_id,
                    "-c",
                    str(node.config_file),
                    *(
                        arg
                        for name, level in self.features.items()
                        for arg in ("--feature", f"{name}={level}")
                    ),
                ],
                "128m",
            )
            done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
            if done.returncode != 0:
                raise ClusterStartError(
                    f"formatting node {node.node_id} failed ({done.returncode}): "
                    f"{(done.stdout + done.stderr).strip()[-2000:]}"
                )

        with ThreadPoolExecutor(len(self.nodes)) as pool:
            for future in [pool.submit(format_one, n) for n in self.nodes.values()]:
                future.result()

    def _launch(self, node: KafkaNode) -> None:
        stdout = open(node.folder / "stdout.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            node.process = subprocess.Popen(
                self._java(node, "kafka.Kafka", [str(node.config_file)], self.heap),
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=subprocess.STDOUT,
                cwd=node.folder,
                preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl, before exec
            )
        finally:
            stdout.close()
        node.started_at = time.monotonic()
        node.paused = False

    # ----------------------------------------------------------------------------------------- state

    def wait_ready(self, timeout: float = 180.0, brokers: Sequence[int] | None = None) -> None:
        """Until each running broker answers Metadata listing every broker in ``brokers`` (default: every
        running one)."""
        deadline = time.monotonic() + timeout
        expected = set(brokers) if brokers is not None else {n.node_id for n in self._running_brokers()}
        last: object = "no answer yet"
        while time.monotonic() < deadline:
            for node in self.nodes.values():
                if node.process is not None and node.process.poll() is not None and not self._stopped:
                    raise ClusterStartError(
                        f"node {node.node_id} exited with {node.process.returncode}:\n{node.log_tail()}"
                    )
            try:
                if all(self.metadata_brokers(node) >= expected for node in self._running_brokers()):
                    return
                last = {n.node_id: sorted(self.metadata_brokers(n)) for n in self._running_brokers()}
            except OSError as exc:
                last = exc
            time.sleep(0.25)
        tails = "\n".join(f"--- node {n.node_id}\n{n.log_tail(15)}" for n in self.nodes.values())
        raise ClusterStartError(f"the cluster was not ready within {timeout:g}s ({last}):\n{tails}")

    def _running_brokers(self) -> list[KafkaNode]:
        return [n for n in self.nodes.values() if n.spec.is_broker and n.running and not n.paused]

    def metadata_brokers(self, node: KafkaNode, timeout: float = 5.0) -> set[int]:
        """The broker ids that ``node``'s Metadata (v0 over a raw socket) names; OSError if it does not
        answer."""
        assert node.port is not None
        with socket.create_connection((LOOPBACK, node.port), timeout=timeout) as s:
            s.settimeout(timeout)
            # MetadataRequest v0: header v1 (apiKey 3, version 0, correlation 1, client id), topics [].
            client = b"kafka-cluster-ready"
            body = (
                (3).to_bytes(2, "big")
                + (0).to_bytes(2, "big")
                + (1).to_bytes(4, "big")
                + len(client).to_bytes(2, "big")
                + client
                + (0).to_bytes(4, "big")
            )
            s.sendall(len(body).to_bytes(4, "big") + body)
            size = int.from_bytes(_read_exactly(s, 4), "big")
            frame = _read_exactly(s, size)
        # correlation id (4), then brokers: [node_id int32, host string, port int32]
        count = int.from_bytes(frame[4:8], "big", signed=True)
        ids, offset = set(), 8
        for _ in range(max(count, 0)):
            ids.add(int.from_bytes(frame[offset : offset + 4], "big", signed=True))
            host_len = int.from_bytes(frame[offset + 4 : offset + 6], "big", signed=True)
            offset += 6 + max(host_len, 0) + 4
        return ids

    @property
    def bootstrap(self) -> str:
        """Every broker's address, comma-separated (what a client's ``bootstrap.servers`` takes)."""
        return ",".join(a for a in self.brokers.values())

    @property
    def brokers(self) -> dict[int, str]:
        """Each broker's listener as ``host:port``, by node id."""
        return {n.node_id: n.address for n in self.nodes.values() if n.address is not None}

    def broker_ids(self) -> list[int]:
        return sorted(n.node_id for n in self.nodes.values() if n.spec.is_broker)

    def memory(self) -> dict[int, int]:
        """Each running node's resident memory in bytes, by node id."""
        return {n.node_id: n.rss_bytes() for n in self.nodes.values()}

    def summary(self) -> str:
        """One line: the shape, start time and memory, for the test session's report and the benchmarks."""
        rss = self.memory()
        per_node = ", ".join(f"{i}: {b / 2**20:.0f}" for i, b in sorted(rss.items()))
        return (
            f"Apache Kafka {KAFKA_VERSION} '{self.shape.name}' ({len(self.nodes)} JVMs): storage formatted "
            f"in {self.format_seconds:.1f} s, ready {self.startup_seconds:.1f} s after launch; "
            f"RSS {sum(rss.values()) / 2**20:.0f} MB ({per_node} MB by node)"
        )

    # -------------------------------------------------------------------------------------- failures

    def node(self, node_id: int) -> KafkaNode:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise KeyError(f"no node {node_id} in '{self.shape.name}' (nodes {sorted(self.nodes)})") from None

    def kill(self, node_id: int, timeout: float = 30.0) -> None:
        """SIGKILL: the node's process ends at once (as a crash); :meth:`restart` brings it back."""
        node = self.node(node_id)
        if node.running and node.process is not None:
            if node.paused:
                node.process.send_signal(signal.SIGCONT)
            node.process.kill()
            node.process.wait(timeout)
        node.paused = False

    def terminate(self, node_id: int, timeout: float = 60.0) -> None:
        """SIGTERM: Kafka's controlled shutdown (leaders move away first), then the process ends."""
        node = self.node(node_id)
        if node.running and node.process is not None:
            node.process.terminate()
            try:
                node.process.wait(timeout)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait(30)

    def pause(self, node_id: int) -> None:
        """SIGSTOP: the node stays, its sockets open, and answers nothing (as a hung broker)."""
        node = self.node(node_id)
        if node.running and node.process is not None and not node.paused:
            node.process.send_signal(signal.SIGSTOP)
            node.paused = True

    def resume(self, node_id: int) -> None:
        """SIGCONT: a paused node carries on where it stopped."""
        node = self.node(node_id)
        if node.running and node.process is not None and node.paused:
            node.process.send_signal(signal.SIGCONT)
            node.paused = False

    def restart(self, node_id: int, timeout: float = 180.0) -> float:
        """Starts a killed or terminated node again (same ports, same storage) and waits until every
        broker names it again; returns the seconds that took."""
        node = self.node(node_id)
        if node.running:
            raise RuntimeError(f"node {node_id} is running; kill or terminate it first")
        began = time.monotonic()
        self._launch(node)
        self.wait_ready(timeout, brokers=[n for n in self.broker_ids() if self.nodes[n].running])
        return time.monotonic() - began

    # ------------------------------------------------------------------------------------------ stop

    def stop(self, grace: float = 10.0) -> None:
        """Every node by PID: brokers first (SIGTERM, then SIGKILL after ``grace`` s), then the
        controllers; the folder is removed unless kept."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        brokers = [n for n in self.nodes.values() if n.spec.is_broker and not n.spec.is_controller]
        for group in (brokers, [n for n in self.nodes.values() if n.spec.is_controller]):
            for node in group:
                if node.running and node.process is not None:
                    if node.paused:
                        node.process.send_signal(signal.SIGCONT)
                    node.process.terminate()
            deadline = time.monotonic() + grace
            for node in group:
                if node.process is None:
                    continue
                try:
                    node.process.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    node.process.kill()
                    node.process.wait(30)
        if not self.keep_folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __enter__(self) -> KafkaCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _read_exactly(s: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left > 0:
        chunk = s.recv(left)
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe base64 without padding (as ``random-uuid``), drawn
    again when it starts with '-' (as Kafka's ``Uuid.randomUuid``: a command line would read it as an
    option)."""
    import base64

    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _check_version() -> None:
    from harness.jvm import KAFKA_LIB

    jar = KAFKA_LIB / f"kafka_2.13-{KAFKA_VERSION}.jar"
    if not jar.exists():
        found = sorted(p.name for p in KAFKA_LIB.glob("kafka_2.13-*.jar"))
        raise HarnessMissing(f"expected {jar.name} in {KAFKA_LIB}, found {found}: run `make reference`")


def _log4j2(path: Path) -> str:
    return (
        "status = warn\n"
        "appender.file.type = File\n"
        "appender.file.name = FILE\n"
        f"appender.file.fileName = {path}\n"
        "appender.file.layout.type = PatternLayout\n"
        "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
        "rootLogger.level = INFO\n"
        "rootLogger.appenderRef.file.ref = FILE\n"
        "logger.request.name = kafka.request.logger\n"
        "logger.request.level = WARN\n"
    )


@contextlib.contextmanager
def running(shape: str = "single", **options: object) -> Iterator[KafkaCluster]:
    """``with running("three-racks") as cluster:``: started, and stopped at the end whatever happens."""
    cluster = KafkaCluster.start(shape, **options)  # type: ignore[arg-type]
    try:
        yield cluster
    finally:
        cluster.stop()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.kafka_cluster",
        description="Start a real Apache Kafka KRaft cluster on loopback and print its bootstrap; "
        "Ctrl-C (or SIGTERM) stops it.",
    )
    parser.add_argument("--shape", choices=sorted(SHAPES), default="single")
    parser.add_argument("--heap", default="384m", help="each node's -Xmx (default 384m)")
    parser.add_argument("--folder", help="keep the nodes' folders (configs, data, server.log) here")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="a broker property, on every node"
    )
    parser.add_argument(
        "--feature",
        action="append",
        default=[],
        metavar="NAME=LEVEL",
        help="a feature level to format with (default: Kafka 4.4's own levels)",
    )
    parser.add_argument("--exit", action="store_true", help="stop as soon as it is ready (a start-up check)")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.set)
    features = dict(item.split("=", 1) for item in args.feature)
    cluster = KafkaCluster.start(
        args.shape, properties=overrides, features=features, heap=args.heap, folder=args.folder
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        print(f"bootstrap: {cluster.bootstrap}", flush=True)
        for node in cluster.nodes.values():
            where = node.address or f"{LOOPBACK}:{node.controller_port} (controller)"
            rack = f" rack {node.spec.rack}" if node.spec.rack else ""
            print(f"node {node.node_id} ({','.join(node.spec.roles)}{rack}): {where} pid {node.pid}")
        print(cluster.summary(), flush=True)
        print(f"folder: {cluster.folder}", flush=True)
        if not args.exit:
            with contextlib.suppress(KeyboardInterrupt):
                stop.wait()
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
