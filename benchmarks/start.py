"""Start: how soon an embedded server (and the command line) answers, beside librdkafka's mock cluster.

Each measure runs in a fresh interpreter (the same one, the same site-packages), alternating the simulator
and the mock run by run so that a drift of the machine's speed falls on both; medians of ``--runs``.

- **in process, import to stop**: ``from controller.embedded import ServerThread``, ``ServerThread.start()``,
  its first ApiVersions answer (the project's blocking client), ``stop()``, timed inside the interpreter
  from before the first import; the mock's: ``import confluent_kafka``, a client with
  ``test.mock.num.brokers=6`` (the mock starts inside it), its first Metadata answer (``list_topics``).
  Target: at most 0.30 s.
- **start alone** (everything imported first): ``ServerThread.start()`` to its first answer, against the
  mock's client creation to its first Metadata answer. Target: at most 1.0x the mock's.
- **the whole process**: ``placement-sim serve`` spawned to its first ApiVersions v2 answer, against the
  mock's process (``benchmarks/peers.py --mock 6``: the interpreter, ``import confluent_kafka``, the mock)
  spawned to the same answer (``benchmarks/peer.py``'s ``start_cost``, which also runs beside kfake and
  Kafka there). Target: at most 1.5x the mock's.
- **the command line**: ``placement-sim --help`` and ``placement-sim topics list`` against a running
  server, spawn to exit. Target: at most 0.25 s each. Beside them, as their peer, the **Python floor** of
  a command: the same interpreter importing ``asyncio`` (as every client command does), sending one
  ApiVersions request over a socket and reading its answer, spawn to exit: what no Python command line
  can go below on the machine as loaded at the time.

Exits 1 when a target is missed.

    .venv/bin/python benchmarks/start.py [--runs 21]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import peer, peers  # noqa: E402

IN_PROCESS_TARGET_S = 0.30
START_TARGET = 1.0
PROCESS_TARGET = 1.5
CLI_TARGET_S = 0.25

_SIMULATOR = """
import time
t0 = time.perf_counter()
from controller.embedded import ServerThread
from protocol.client import BlockingClient
t1 = time.perf_counter()
server = ServerThread.start()
client = BlockingClient.connect(server.bootstrap, connect_timeout=10, request_timeout=10)
t2 = time.perf_counter()
client.close()
server.stop()
t3 = time.perf_counter()
print({"total": t3 - t0, "start": t2 - t1})
"""

_MOCK = """
import time
t0 = time.perf_counter()
import confluent_kafka
t1 = time.perf_counter()
producer = confluent_kafka.Producer({"test.mock.num.brokers": 6, "client.id": "start-bench"})
producer.list_topics(timeout=10)
t2 = time.perf_counter()
del producer
t3 = time.perf_counter()
print({"total": t3 - t0, "start": t2 - t1})
"""


def _run(script: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    result: dict[str, float] = eval(done.stdout.strip().splitlines()[-1], {})  # a dict literal we printed
    return result


_FLOOR = """
import asyncio, socket, sys
host, port = sys.argv[1].rsplit(":", 1)
with socket.create_connection((host, int(port)), timeout=10) as sock:
    # ApiVersions v0: size, api key 18, version 0, correlation id 1, no client id
    sock.sendall(b"\\x00\\x00\\x00\\x0a\\x00\\x12\\x00\\x00\\x00\\x00\\x00\\x01\\xff\\xff")
    size = int.from_bytes(sock.recv(4), "big")
    while size > 0:
        size -= len(sock.recv(size))
"""


def _wall(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=60, check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="runs of each measure (median)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()

    sim: list[dict[str, float]] = []
    mock: list[dict[str, float]] = []
    _run(_SIMULATOR), _run(_MOCK)  # warm the file cache and the bytecode
    for _ in range(args.runs):
        sim.append(_run(_SIMULATOR))
        mock.append(_run(_MOCK))

    peer.load_codec()  # the ApiVersions request start_cost sends
    processes: dict[str, list[float]] = {peers.SIM: [], peers.MOCK: []}
    for _ in range(args.runs):
        for server in (peers.simulator(), peers.mock_server(6)):
            processes[server.name].append(peer.start_cost(server)[0] / 1000)

    from controller.embedded import ServerThread

    command = [sys.executable, "-m", "placement_sim.cli.main"]
    helps: list[float] = []
    lists: list[float] = []
    floors: list[float] = []
    with ServerThread.start() as server:
        _wall([*command, "--help"])
        for _ in range(args.runs):
            helps.append(_wall([*command, "--help"]))
            lists.append(_wall([*command, "topics", "list", "--bootstrap-server", server.bootstrap]))
            floors.append(_wall([sys.executable, "-c", _FLOOR, server.bootstrap]))

    def median(runs: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    rows = [
        # label, simulator, peer (None: an absolute target), target, met
        ("in process: import, start, first answer, stop (s)", median(sim, "total"), median(mock, "total")),
        ("start alone: start to first answer (s)", median(sim, "start"), median(mock, "start")),
        (
            "whole process: serve spawned to first answer (s)",
            statistics.median(processes[peers.SIM]),
            statistics.median(processes[peers.MOCK]),
        ),
        ("placement-sim --help, spawn to exit (s)", statistics.median(helps), statistics.median(floors)),
        ("placement-sim topics list, spawn to exit (s)", statistics.median(lists), statistics.median(floors)),
    ]
    targets = [
        ("≤ 0.30 s", rows[0][1] <= IN_PROCESS_TARGET_S),
        (f"≤ {START_TARGET:.1f}x the mock", rows[1][1] <= START_TARGET * rows[1][2]),
        (f"≤ {PROCESS_TARGET:.1f}x the mock", rows[2][1] <= PROCESS_TARGET * rows[2][2]),
        ("≤ 0.25 s", rows[3][1] <= CLI_TARGET_S),
        ("≤ 0.25 s", rows[4][1] <= CLI_TARGET_S),
    ]
    print(f"medians of {args.runs} runs, each in a fresh interpreter, simulator and mock alternating\n")
    print(
        "| measure | peer: librdkafka mock (the CLI rows: the Python floor) | placement-sim | ratio | target | met |"
    )
    print("|---|---:|---:|---:|---|---|")
    missed = []
    for (label, ours, theirs), (target, met) in zip(rows, targets, strict=True):
        shown = f"{theirs:.3f}" if theirs is not None else "-"
        ratio = f"{ours / theirs:.2f}x" if theirs else "-"
        print(f"| {label} | {shown} | {ours:.3f} | {ratio} | {target} | {'yes' if met else 'NO'} |")
        if not met:
            missed.append(label)
    if args.json:
        print(
            json.dumps(
                {
                    "simulator": sim,
                    "mock": mock,
                    "processes": processes,
                    "help": helps,
                    "topics_list": lists,
                    "floor": floors,
                }
            )
        )
    print("\ntargets: " + ("all met" if not missed else "missed: " + "; ".join(missed)))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
