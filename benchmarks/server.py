"""Server throughput and latency: placement-sim against the floor of a minimal asyncio server.

Closed-loop load: 8 connections x 8 requests in flight, CreateReplicaPlacement of 12 partitions x RF 3.
The floor answers every frame with one fixed, valid CreateReplicaPlacement response (no decoding, no
placement): what asyncio itself costs on this machine. Both servers run in their own process, the
load generator in this one. Also single-connection round-trip latency (one request in flight), and
the server process's CPU time per request under load (user + system, from /proc), which shared and
busy machines disturb far less than throughput.

    .venv/bin/python benchmarks/server.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol import load_schemas  # noqa: E402
from protocol.framing import encode_request  # noqa: E402

SCHEMAS = load_schemas()
CONNECTIONS = 8
IN_FLIGHT = 8
REQUEST = {"NumPartitions": 12, "ReplicationFactor": 3}
TARGET = 0.70


def fixed_response_body() -> bytes:
    placement = [{"PartitionId": p, "Replicas": [p % 6, (p + 1) % 6, (p + 2) % 6]} for p in range(12)]
    return SCHEMAS.response(68).encode(
        {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "ReplicaPlacement": placement}, 0
    )


async def floor_server() -> None:
    """Answers every frame with the same response (correlation id copied), header v1."""
    body = fixed_response_body()
    size = struct.pack(">i", 4 + 1 + len(body))
    tail = b"\x00" + body

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                n = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(n)
                writer.write(size + frame[4:8] + tail)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    print(f"listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


def start(cmd: list[str]) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("listening on "):
            return proc, int(line.rsplit(":", 1)[1])
    raise RuntimeError(f"{cmd} did not start")


async def load(port: int, seconds: float, connections: int, in_flight: int) -> tuple[float, list[float]]:
    """Closed loop: each connection keeps ``in_flight`` requests outstanding; returns (req/s, latencies)."""
    latencies: list[float] = []
    stop_at = time.perf_counter() + seconds
    count = 0

    async def one_connection() -> None:
        nonlocal count
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = SCHEMAS.request(68).encode(REQUEST, 0)
        sent: dict[int, float] = {}
        correlation = 0

        def send() -> None:
            nonlocal correlation
            correlation += 1
            sent[correlation] = time.perf_counter()
            writer.write(encode_request(SCHEMAS, 68, 0, correlation, "bench", body))

        for _ in range(in_flight):
            send()
        while True:
            n = struct.unpack(">i", await reader.readexactly(4))[0]
            frame = await reader.readexactly(n)
            now = time.perf_counter()
            latencies.append(now - sent.pop(struct.unpack_from(">i", frame)[0]))
            count += 1
            if now < stop_at:
                send()
            elif not sent:
                break
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(one_connection() for _ in range(connections)))
    return count / (time.perf_counter() - started), latencies


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(pid: int, port: int, seconds: float) -> dict[str, float]:
    asyncio.run(load(port, 0.5, CONNECTIONS, IN_FLIGHT))  # warm up
    cpu_before = cpu_seconds(pid)
    started = time.perf_counter()
    rate, latencies = asyncio.run(load(port, seconds, CONNECTIONS, IN_FLIGHT))
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds(pid) - cpu_before
    _, single = asyncio.run(load(port, seconds / 2, 1, 1))
    q = statistics.quantiles(latencies, n=100)
    return {
        "rate": rate,
        "p50": q[49] * 1000,
        "p99": q[98] * 1000,
        "rtt": statistics.median(single) * 1e6,
        "cpu": cpu / len(latencies) * 1e6,
        "busy": cpu / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--floor", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        asyncio.run(floor_server())
        return
    servers = {
        "placement-sim (striped)": [
            sys.executable,
            "-m",
            "cli.main",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--seed",
            "1",
        ],
        "floor: fixed-response asyncio server": [sys.executable, __file__, "--floor"],
    }
    results = {}
    for name, cmd in servers.items():
        proc, port = start(cmd)
        try:
            results[name] = measure(proc.pid, port, args.seconds)
        finally:
            proc.terminate()
            proc.wait(10)
    floor = results["floor: fixed-response asyncio server"]
    print(
        f"\nCreateReplicaPlacement 12 partitions x RF 3; {CONNECTIONS} connections x {IN_FLIGHT} in flight, "
        f"{args.seconds:g}s; single-connection round trip with 1 in flight\n"
    )
    print(
        "| server | requests/s | p50 ms | p99 ms | round trip µs | server CPU µs/request | server CPU busy "
        "| throughput vs floor |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(
            f"| {name} | {r['rate']:,.0f} | {r['p50']:.2f} | {r['p99']:.2f} | {r['rtt']:.0f} | "
            f"{r['cpu']:.1f} | {r['busy']:.0%} | {r['rate'] / floor['rate']:.0%} |"
        )
    share = results["placement-sim (striped)"]["rate"] / floor["rate"]
    print(f"\ntarget: 70% of the floor's throughput: {'met' if share >= TARGET else 'missed'} ({share:.0%})")
    if share < TARGET:
        sys.exit(1)


if __name__ == "__main__":
    main()
