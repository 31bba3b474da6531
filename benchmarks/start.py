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
- **the command line**: ``placement-sim --help`` and ``placement-sim topics list`` against a running
  server, spawn to exit. Target: at most 0.25 s each.

The whole process, ``placement-sim serve`` to its first ApiVersions answer, is ``benchmarks/peer.py``'s
start row (beside the mock's process, kfake and Kafka). Exits 1 when a target is missed.

    .venv/bin/python benchmarks/start.py [--runs 9]
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

IN_PROCESS_TARGET_S = 0.30
START_TARGET = 1.0
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


def _wall(cmd: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=60, check=True)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="runs of each measure (median)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()

    sim: list[dict[str, float]] = []
    mock: list[dict[str, float]] = []
    _run(_SIMULATOR), _run(_MOCK)  # warm the file cache and the bytecode
    for _ in range(args.runs):
        sim.append(_run(_SIMULATOR))
        mock.append(_run(_MOCK))

    from controller.embedded import ServerThread

    command = [sys.executable, "-m", "placement_sim.cli.main"]
    helps: list[float] = []
    lists: list[float] = []
    with ServerThread.start() as server:
        _wall([*command, "--help"])
        for _ in range(args.runs):
            helps.append(_wall([*command, "--help"]))
            lists.append(_wall([*command, "topics", "list", "--bootstrap-server", server.bootstrap]))

    def median(runs: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    rows = [
        # label, simulator, peer (None: an absolute target), target, met
        ("in process: import, start, first answer, stop (s)", median(sim, "total"), median(mock, "total")),
        ("start alone: start to first answer (s)", median(sim, "start"), median(mock, "start")),
        ("placement-sim --help, spawn to exit (s)", statistics.median(helps), None),
        ("placement-sim topics list, spawn to exit (s)", statistics.median(lists), None),
    ]
    targets = [
        ("≤ 0.30 s", rows[0][1] <= IN_PROCESS_TARGET_S),
        (f"≤ {START_TARGET:.1f}x the mock", rows[1][1] <= START_TARGET * rows[1][2]),
        ("≤ 0.25 s", rows[2][1] <= CLI_TARGET_S),
        ("≤ 0.25 s", rows[3][1] <= CLI_TARGET_S),
    ]
    print(f"medians of {args.runs} runs, each in a fresh interpreter, simulator and mock alternating\n")
    print("| measure | librdkafka mock | placement-sim | ratio | target | met |")
    print("|---|---:|---:|---:|---|---|")
    missed = []
    for (label, ours, theirs), (target, met) in zip(rows, targets, strict=True):
        peer = f"{theirs:.3f}" if theirs is not None else "-"
        ratio = f"{ours / theirs:.2f}x" if theirs else "-"
        print(f"| {label} | {peer} | {ours:.3f} | {ratio} | {target} | {'yes' if met else 'NO'} |")
        if not met:
            missed.append(label)
    if args.json:
        print(json.dumps({"simulator": sim, "mock": mock, "help": helps, "topics_list": lists}))
    print("\ntargets: " + ("all met" if not missed else "missed: " + "; ".join(missed)))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
