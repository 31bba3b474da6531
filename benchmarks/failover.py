"""Failover of 10,000 partitions: a real Apache Kafka cluster beside the simulator, the same crash.

Both peers come from ``benchmarks/peers.py``: Kafka is a KRaft cluster of three brokers in racks a, b, c
under a dedicated controller (``harness/kafka_cluster.py``, from the jars ``make reference`` caches); the
simulator is ``placement-sim serve`` with three brokers in the same racks, on the real clock. Both run
with ``broker.session.timeout.ms`` = 3000 and ``broker.heartbeat.interval.ms`` = 500 (the harness's
values). Each gets ``--partitions`` (10,000) partitions x RF 3 as ten topics (Kafka's controller takes at
most 10,000 records in one request), created by CreateTopics, then waited for until Metadata shows every
partition led with its three replicas in sync.

A round: every partition is given its preferred leader (ElectLeaders, preferred, all partitions), then
broker 1 crashes: Kafka's is sent SIGKILL; the simulator's is crashed through its control API (its
brokers share one process). From that moment, this process asks Metadata for every topic on broker 0
in a loop until no partition names broker 1 or no one as its leader: **the failover time**. Also
printed: when the first partition had moved (the crash noticed: the session timeout), and the
partitions that moved. Then broker 1 starts again and the next round waits until every ISR is full.
Each peer runs ``--repeat`` rounds; the medians count.

Target (the script exits 1 if it is missed): the simulator's median failover time at most Kafka's
(1.0x). Both are dominated by the session timeout, which both keep; the rest is the controller's work
and the brokers' learning of it.

    .venv/bin/python benchmarks/failover.py [--partitions 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [p for p in (str(ROOT), str(ROOT / "benchmarks")) if p not in sys.path]

import peer  # noqa: E402
import peers  # noqa: E402
from peer import ask, decode, frame  # noqa: E402
from peers import KAFKA, SIM, KafkaPeer, Peer, Server  # noqa: E402

SESSION_MS = 3000
HEARTBEAT_MS = 500
TOPICS = 10
REPLICATION = 3
VICTIM = 1
TARGET = 1.0
PROPERTIES = {
    "broker.session.timeout.ms": str(SESSION_MS),
    "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
    "auto.leader.rebalance.enable": "false",
}


@dataclass
class Round:
    moved: int  # partitions broker 1 led
    first_s: float  # crash to the first partition led elsewhere
    settled_s: float  # crash to none led by broker 1 or by no one
    polls: int  # Metadata answers read meanwhile


def kafka() -> KafkaPeer:
    return peers.kafka_peer(3, properties=PROPERTIES, heap="1g")


def simulator() -> Server:
    sets = [f"{k}={v}" for k, v in {**PROPERTIES, "simulator.brokers": "0:a,1:b,2:c"}.items()]
    return peers.simulator(*(arg for s in sets for arg in ("--set", s)))


def broker_address(server: Peer, broker: int) -> tuple[str, int]:
    answer = decode(3, 12, ask(server.address, frame(3, 12, {"Topics": [], "AllowAutoTopicCreation": False})))
    found = [b for b in answer["Brokers"] if b["NodeId"] == broker]
    return (found[0]["Host"], found[0]["Port"]) if found else server.address


def leaders(address: tuple[str, int]) -> list[tuple[int, tuple[int, ...]]]:
    """(leader, ISR) of every partition of every topic, from Metadata on ``address``."""
    answer = decode(3, 12, ask(address, frame(3, 12, {"Topics": None, "AllowAutoTopicCreation": False})))
    return [
        (p["LeaderId"], tuple(p["IsrNodes"]))
        for t in answer["Topics"]
        if not t["IsInternal"]
        for p in t["Partitions"]
    ]


def wait_healthy(address: tuple[str, int], partitions: int, timeout: float = 600.0) -> None:
    """Until every partition has a leader and all its replicas in sync."""
    deadline = time.monotonic() + timeout
    while True:
        state = leaders(address)
        if len(state) == partitions and all(lead >= 0 and len(isr) == REPLICATION for lead, isr in state):
            return
        if time.monotonic() > deadline:
            healthy = sum(lead >= 0 and len(isr) == REPLICATION for lead, isr in state)
            raise RuntimeError(f"{healthy} of {partitions} partitions healthy after {timeout:g} s")
        time.sleep(1.0)


def elect_preferred(server: Peer, address: tuple[str, int], timeout: float = 300.0) -> None:
    """Preferred leaders everywhere (ElectLeaders v2 for all partitions), until Metadata shows it."""
    body = {"ElectionType": 0, "TopicPartitions": None, "TimeoutMs": 60000}
    answer = decode(43, 2, ask(peer.controller_address(server), frame(43, 2, body), timeout=120))
    if answer["ErrorCode"] != 0:
        raise RuntimeError(f"{server.name}: ElectLeaders: {answer['ErrorCode']}")
    deadline = time.monotonic() + timeout
    while True:
        answer = decode(3, 12, ask(address, frame(3, 12, {"Topics": None, "AllowAutoTopicCreation": False})))
        parts = [p for t in answer["Topics"] if not t["IsInternal"] for p in t["Partitions"]]
        if all(p["LeaderId"] == p["ReplicaNodes"][0] for p in parts):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{server.name}: preferred leaders not back after {timeout:g} s")
        time.sleep(0.5)


def crash(server: Peer) -> None:
    if isinstance(server, KafkaPeer):
        server.cluster.kill(VICTIM)
    else:
        from protocol.client import BlockingClient

        with BlockingClient.connect(f"{server.address[0]}:{server.address[1]}", request_timeout=30) as c:
            c.stop_broker(VICTIM, "crash")


def restart(server: Peer) -> None:
    if isinstance(server, KafkaPeer):
        server.cluster.restart(VICTIM, timeout=600)
    else:
        from protocol.client import BlockingClient

        with BlockingClient.connect(f"{server.address[0]}:{server.address[1]}", request_timeout=30) as c:
            c.start_broker(VICTIM)


def one_round(server: Peer, address: tuple[str, int], partitions: int, last: bool) -> Round:
    elect_preferred(server, address)
    moved = sum(lead == VICTIM for lead, _ in leaders(address))
    crash(server)
    crashed = time.perf_counter()
    first = None
    polls = 0
    while True:
        state = leaders(address)
        now = time.perf_counter()
        polls += 1
        led = sum(lead == VICTIM for lead, _ in state)
        if first is None and led < moved:
            first = now - crashed
        if led == 0 and all(lead >= 0 for lead, _ in state):
            settled = now - crashed
            break
        if now - crashed > 600:
            raise RuntimeError(f"{server.name}: {led} partitions still led by broker {VICTIM} after 600 s")
    round_ = Round(moved, first if first is not None else settled, settled, polls)
    print(
        f"  {server.name}: {moved:,} partitions moved; first after {round_.first_s:.2f} s, all after "
        f"{round_.settled_s:.2f} s ({polls} Metadata answers read)",
        file=sys.stderr,
        flush=True,
    )
    if not last:  # the next round starts from a whole cluster
        restart(server)
        wait_healthy(address, partitions)
    return round_


def fencings(server: KafkaPeer) -> dict[int, int]:
    """How often Kafka's controller fenced each broker for a session timeout, from its log: the victim
    once a round; any other count means a broker missed its heartbeats (a starved machine)."""
    counts: dict[int, int] = {}
    for node in server.cluster.nodes.values():
        if node.spec.is_controller and node.log_file.exists():
            for line in node.log_file.read_text(errors="replace").splitlines():
                if "Fencing broker " in line and "session has timed out" in line:
                    broker = int(line.split("Fencing broker ", 1)[1].split()[0])
                    counts[broker] = counts.get(broker, 0) + 1
    return counts


def run(server: Peer, partitions: int, repeat: int) -> tuple[list[Round], dict[str, Any]]:
    began = time.perf_counter()
    server.start()
    notes: dict[str, Any] = {"start_s": time.perf_counter() - began}
    try:
        per_topic = partitions // TOPICS
        names = [f"failover-{i}" for i in range(TOPICS)]
        began = time.perf_counter()
        for name in names:  # one request each: Kafka's controller takes 10,000 records per request at most
            peer.create_on(server, [name], partitions=per_topic, replication=REPLICATION, timeout=600)
        address = broker_address(server, 0)
        wait_healthy(address, per_topic * TOPICS)
        notes["create_s"] = time.perf_counter() - began
        notes["rss_mb"] = server.rss_mb()
        rounds = [one_round(server, address, per_topic * TOPICS, i == repeat - 1) for i in range(repeat)]
        if isinstance(server, KafkaPeer):
            notes["fencings"] = fencings(server)
    finally:
        server.stop()
    return rounds, notes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if args.partitions % TOPICS:
        parser.error(f"--partitions: a multiple of {TOPICS}")
    peer.load_codec()
    results = {}
    for server in (simulator(), kafka()):
        results[server.name] = run(server, args.partitions, args.repeat)

    print(
        f"\n{args.partitions:,} partitions x RF {REPLICATION} in {TOPICS} topics on 3 brokers (racks a, b, c); "
        f"broker {VICTIM} crashes (Kafka: SIGKILL); broker.session.timeout.ms={SESSION_MS}, "
        f"heartbeat {HEARTBEAT_MS} ms; medians of {args.repeat} rounds\n"
    )
    print(
        "| peer | partitions moved | crash to first moved, s | crash to all moved, s | all moved less the "
        "session, s | Metadata answers read | start, s | topics created and in sync, s | RSS MB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    medians = {}
    for name, (rounds, notes) in results.items():
        settled = statistics.median(r.settled_s for r in rounds)
        medians[name] = settled
        print(
            f"| {name} | {statistics.median(r.moved for r in rounds):,.0f} | "
            f"{statistics.median(r.first_s for r in rounds):.2f} | {settled:.2f} | "
            f"{settled - SESSION_MS / 1000:.2f} | {statistics.median(r.polls for r in rounds):.0f} | "
            f"{notes['start_s']:.1f} | {notes['create_s']:.1f} | {notes['rss_mb']:.0f} |"
        )
    for name, (_, notes) in results.items():
        if "fencings" in notes:
            print(
                f"{name}: fenced for a session timeout (controller's log), by broker: {notes['fencings']} "
                f"(broker {VICTIM}: once a round is the crash; any other is a broker starved of its heartbeats)"
            )
    ratio = medians[SIM] / medians[KAFKA]
    print(
        "\nrounds, crash to all moved (s): "
        + "; ".join(
            f"{name} {', '.join(f'{r.settled_s:.2f}' for r in rounds)}"
            for name, (rounds, _) in results.items()
        )
    )
    met = ratio <= TARGET
    print(
        f"target: the simulator's failover at most {TARGET:.1f}x Kafka's: {ratio:.2f}x, {'met' if met else 'MISSED'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
