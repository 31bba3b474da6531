"""Server machinery per request: placement-sim against the floor of a minimal Python server.

Closed-loop load: 8 connections x 8 requests in flight, CreateReplicaPlacement of 12 partitions x RF 3.
The floor answers every frame with one fixed, valid CreateReplicaPlacement response (no decoding, no
placement) from an ``asyncio.Protocol`` on the same event loop as the simulator (uvloop where it is
installed): what a Python server costs at the least on this machine. Both servers run in their own
process, the load generator in this one; the server process's CPU time per request (user + system, from
/proc) is the measure, which busy machines disturb far less than throughput. The placer's own time is
measured in this process, in the same run, calling the same placer on the same cluster; the
simulator's machinery is its CPU per request minus that. Target: machinery at most 1.5x the floor's
CPU per request (exit 1 when missed). Rows on asyncio's own loop are shown for comparison.

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

from controller.defaults import DEFAULT_BROKERS  # noqa: E402
from controller.eventloop import loop_factory, loop_name  # noqa: E402
from controller.placement.api import ClusterView, PlacementSpec  # noqa: E402
from controller.placement.loader import load_placer  # noqa: E402
from protocol import load_schemas  # noqa: E402
from protocol.framing import encode_request  # noqa: E402

SCHEMAS = load_schemas()
CONNECTIONS = 8
IN_FLIGHT = 8
REQUEST = {"NumPartitions": 12, "ReplicationFactor": 3}
TARGET = 1.5
SEED = "1"


def fixed_response_body() -> bytes:
    placement = [{"PartitionId": p, "Replicas": [p % 6, (p + 1) % 6, (p + 2) % 6]} for p in range(12)]
    return SCHEMAS.response(68).encode(
        {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "ReplicaPlacement": placement}, 0
    )


class _Floor(asyncio.Protocol):
    """Answers every frame with the same response (correlation id copied), header v1; pipelined
    requests' answers in one write, as the simulator writes them."""

    def __init__(self, size: bytes, tail: bytes) -> None:
        self.size = size
        self.tail = tail
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        out = []
        pos = 0
        while len(buffer) - pos >= 4:
            (n,) = struct.unpack_from(">i", buffer, pos)
            if len(buffer) - pos - 4 < n:
                break
            out.append(self.size + bytes(buffer[pos + 8 : pos + 12]) + self.tail)
            pos += 4 + n
        del buffer[:pos]
        if out and self.transport is not None:
            self.transport.write(b"".join(out))


async def floor_server() -> None:
    body = fixed_response_body()
    size = struct.pack(">i", 4 + 1 + len(body))
    tail = b"\x00" + body
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _Floor(size, tail), "127.0.0.1", 0)
    print(f"event loop {loop_name(loop)}", flush=True)
    print(f"listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


def placer_microseconds(runs: int = 20_000) -> float:
    """The striped placer's own time for one request's placement, as the server calls it."""
    placer = load_placer("striped", {"simulator.seed": SEED})
    cluster = ClusterView(DEFAULT_BROKERS)
    spec = PlacementSpec(0, REQUEST["NumPartitions"], REQUEST["ReplicationFactor"])
    for _ in range(1000):
        placer.place(spec, cluster)
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(runs // 5):
            placer.place(spec, cluster)
        best = min(best, (time.perf_counter() - started) / (runs // 5))
    return best * 1e6


def start(cmd: list[str]) -> tuple[subprocess.Popen[str], int, str]:
    """Starts a server; returns it, its port and the event loop it says it runs on."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    loop = "?"
    for line in proc.stdout:
        if "event loop " in line:
            loop = line.rsplit("event loop ", 1)[1].strip()
        if line.startswith("listening on "):  # listening on HOST:PORT, then (PROTOCOL) from serve
            return proc, int(line.split()[2].rsplit(":", 1)[1]), loop
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
    parser.add_argument("--floor", choices=["auto", "asyncio"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor:
        with asyncio.Runner(loop_factory=loop_factory(args.floor)) as runner:
            runner.run(floor_server())
        return
    serve = [
        sys.executable,
        "-m",
        "placement_sim.cli.main",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--seed",
        SEED,
    ]
    servers = {
        "placement-sim (striped)": (serve, True),
        "floor: fixed-response Protocol": ([sys.executable, __file__, "--floor", "auto"], False),
        "placement-sim (striped), asyncio loop": (serve + ["--set", "simulator.event.loop=asyncio"], True),
        "floor: fixed-response Protocol, asyncio loop": (
            [sys.executable, __file__, "--floor", "asyncio"],
            False,
        ),
    }
    results = {}
    loops = {}
    for name, (cmd, _) in servers.items():
        proc, port, loop = start(cmd)
        loops[name] = loop
        try:
            results[name] = measure(proc.pid, port, args.seconds)
        finally:
            proc.terminate()
            proc.wait(10)
    placer = placer_microseconds()
    print(
        f"\nCreateReplicaPlacement 12 partitions x RF 3; {CONNECTIONS} connections x {IN_FLIGHT} in flight, "
        f"{args.seconds:g}s; round trip: one connection, 1 in flight; the placer's own time, in this "
        f"process: {placer:.1f} µs per request\n"
    )
    print(
        "| server | event loop | requests/s | p50 ms | p99 ms | round trip µs | server CPU µs/request "
        "| machinery µs/request | vs floor |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    ratios = {}
    for name, r in results.items():
        simulator = servers[name][1]
        machinery = r["cpu"] - placer if simulator else r["cpu"]
        floor = results[f"floor: fixed-response Protocol{name.partition(')')[2]}"]["cpu"]
        ratios[name] = machinery / floor
        print(
            f"| {name} | {loops[name]} | {r['rate']:,.0f} | {r['p50']:.2f} | {r['p99']:.2f} | {r['rtt']:.0f} | "
            f"{r['cpu']:.1f} | {machinery:.1f} | {ratios[name]:.2f}x |"
        )
    ratio = ratios["placement-sim (striped)"]
    print(
        f"\ntarget: machinery at most {TARGET}x the floor's CPU per request: "
        f"{'met' if ratio <= TARGET else 'missed'} ({ratio:.2f}x)"
    )
    if ratio > TARGET:
        sys.exit(1)


if __name__ == "__main__":
    main()
