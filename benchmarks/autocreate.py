"""Other clients' Metadata while one Metadata request auto-creates 100,000 topics.

A ``placement-sim serve`` process (the default cluster, seed 1, ``auto.create.topics.enable=true``)
holds one topic, ``probe``. A prober process asks Metadata for ``probe`` every 5 ms on its own connection
and records each answer's time; meanwhile another client sends one Metadata request naming 100,000
unknown topics, which the server creates (with the defaults) before answering. The reference is the
prober's own latency on the idle server, measured in the same run. Target: while the topics are created,
the prober's 99th percentile stays under 50 ms (the script exits 1 if it misses).

    .venv/bin/python benchmarks/autocreate.py [--topics 100000]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol import load_schemas  # noqa: E402
from protocol.framing import encode_request  # noqa: E402
from tests.support.rawwire import read_response  # noqa: E402
from tests.support.serve import served  # noqa: E402

SCHEMAS = load_schemas()
TARGET_MS = 50.0
PROBE_INTERVAL = 0.005


def connect(bootstrap: str, timeout: float) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def metadata_frame(names: list[str] | None, correlation: int, allow: bool = True) -> bytes:
    topics = None if names is None else [{"Name": n} for n in names]
    body = SCHEMAS.request(3).encode({"Topics": topics, "AllowAutoTopicCreation": allow}, 9)
    return encode_request(SCHEMAS, 3, 9, correlation, "autocreate-bench", body)


def probe(bootstrap: str) -> None:
    """The prober (a process of its own): Metadata for ``probe`` until a line comes on stdin."""
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    sock = connect(bootstrap, 30)
    latencies = []
    correlation = 0
    print("ready", flush=True)
    while not stop.is_set():
        correlation += 1
        started = time.perf_counter()
        sock.sendall(metadata_frame(["probe"], correlation, allow=False))
        answer = read_response(sock)
        assert answer is not None and int.from_bytes(answer[:4], "big") == correlation
        latencies.append(time.perf_counter() - started)
        time.sleep(PROBE_INTERVAL)
    print(json.dumps(latencies), flush=True)


class Prober:
    def __init__(self, bootstrap: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--probe", bootstrap],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def stop(self) -> list[float]:
        out, _ = self.proc.communicate("stop\n", timeout=60)
        return [latency * 1000 for latency in json.loads(out.strip().splitlines()[-1])]


def summary(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"{len(ordered)} answers, p50 {statistics.median(ordered):.1f} ms, p99 {p99:.1f} ms, "
        f"max {ordered[-1]:.1f} ms"
    )


def p99(latencies: list[float]) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=100_000)
    parser.add_argument("--probe", metavar="BOOTSTRAP", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe(args.probe)
        return
    with served({"auto.create.topics.enable": "true"}) as bootstrap:
        with connect(bootstrap, 30) as sock:
            sock.sendall(metadata_frame(["probe"], 1))
            assert read_response(sock) is not None
        prober = Prober(bootstrap)
        time.sleep(1.0)
        idle = prober.stop()
        names = [f"auto-{i:06d}" for i in range(args.topics)]
        frame = metadata_frame(names, 2)
        prober = Prober(bootstrap)
        with connect(bootstrap, 300) as sock:
            started = time.perf_counter()
            sock.sendall(frame)
            answer = read_response(sock)
            took = time.perf_counter() - started
        busy = prober.stop()
    assert answer is not None
    topics = SCHEMAS.response(3).decode(answer[5:], 9)["Topics"]
    assert len(topics) == args.topics and all(t["ErrorCode"] == 0 for t in topics)
    print(f"Metadata auto-creating {args.topics:,} topics answered in {took:.2f} s")
    print(f"other client's Metadata, idle server (reference): {summary(idle)}")
    print(f"other client's Metadata, meanwhile: {summary(busy)}")
    missed = p99(busy) > TARGET_MS
    print(f"target: p99 under {TARGET_MS:.0f} ms meanwhile: {'MISSED' if missed else 'met'}")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
