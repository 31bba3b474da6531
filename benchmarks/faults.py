"""Request faults that match nothing cost (next to) nothing: Metadata with 100 faults registered against the
same server with none, in the same run.

Two ``placement-sim serve`` processes: one without faults, one with 100 faults in ``simulator.faults`` that
match no request of the load (other API keys, client ids, listeners, versions, and topics the requests do
not name, so that some faults look into every Metadata body). Closed-loop load from this process: 8
connections x 8 requests in flight, Metadata v12 for one topic. The measure is the server process's CPU
time per request (user + system, from /proc), in rounds that measure both servers back to back (so that
a busy machine disturbs both alike); the ratio is the median of the rounds' ratios. Target: at most 1.1x
the CPU per request without faults (exit 1 when missed). For comparison it also prints the dispatch's own
time per request in this process, with and without the faults.

    .venv/bin/python benchmarks/faults.py [--seconds 1] [--rounds 9]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.server import cpu_seconds, start  # noqa: E402
from controller.assembly import create_server  # noqa: E402
from controller.config import ServerConfig  # noqa: E402
from controller.dispatch import Origin  # noqa: E402
from controller.faults import parse_faults  # noqa: E402
from protocol import load_schemas  # noqa: E402
from protocol.framing import encode_request  # noqa: E402

SCHEMAS = load_schemas()
CONNECTIONS = 8
IN_FLIGHT = 8
TARGET = 1.1
METADATA = {
    "Topics": [{"Name": "orders"}],
    "AllowAutoTopicCreation": False,
    "IncludeTopicAuthorizedOperations": False,
}


def nothing_matching(count: int = 100) -> str:
    """``count`` faults, none of which matches the benchmark's Metadata requests."""
    kinds = [
        lambda i: f"error=NOT_CONTROLLER api=CreateTopics client=c{i}",
        lambda i: f"drop client=nobody-{i}",
        lambda i: f"delay=100 api=Metadata broker={100 + i}",
        lambda i: f"error=REQUEST_TIMED_OUT api=Metadata@0-{i % 8} once",
        lambda i: f"error=UNKNOWN_TOPIC_OR_PARTITION api=Metadata topic=absent-{i}",
    ]
    return "; ".join(kinds[i % len(kinds)](i) for i in range(count))


async def load(port: int, seconds: float) -> int:
    """Closed loop; the number of answers."""
    stop_at = time.perf_counter() + seconds
    count = 0
    body = SCHEMAS.request(3).encode(METADATA, 12)

    async def one_connection() -> None:
        nonlocal count
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        correlation = 0
        outstanding = 0

        def send() -> None:
            nonlocal correlation, outstanding
            correlation += 1
            outstanding += 1
            writer.write(encode_request(SCHEMAS, 3, 12, correlation, "bench", body))

        for _ in range(IN_FLIGHT):
            send()
        while outstanding:
            n = struct.unpack(">i", await reader.readexactly(4))[0]
            await reader.readexactly(n)
            outstanding -= 1
            count += 1
            if time.perf_counter() < stop_at:
                send()
        writer.close()

    await asyncio.gather(*(one_connection() for _ in range(CONNECTIONS)))
    return count


def cpu_per_request(pid: int, port: int, seconds: float) -> float:
    before = cpu_seconds(pid)
    answered = asyncio.run(load(port, seconds))
    return (cpu_seconds(pid) - before) / answered * 1e6


def dispatch_microseconds(rounds: int, calls: int = 20_000) -> tuple[float, float]:
    """In this process, for comparison: the dispatch's time per Metadata request (its answer is kept after
    the first), without faults and with the 100, in alternating rounds; the medians."""

    async def run() -> tuple[float, float]:
        server = await create_server(ServerConfig.from_properties({"listeners": "127.0.0.1:0"}))
        try:
            dispatcher, faults = server.dispatcher, server.faults
            frame = encode_request(SCHEMAS, 3, 12, 1, "bench", SCHEMAS.request(3).encode(METADATA, 12))[4:]
            origin = Origin("127.0.0.1:1")
            specs = parse_faults(nothing_matching())
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(rounds):
                for with_faults in (False, True):
                    if with_faults:
                        faults.add_all(specs)
                    dispatcher.answer(frame, origin)
                    started = time.process_time()
                    for _ in range(calls):
                        dispatcher.answer(frame, origin)
                    times[with_faults].append((time.process_time() - started) / calls * 1e6)
                    faults.clear()
            return statistics.median(times[False]), statistics.median(times[True])
        finally:
            await server.controller.close()

    return asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    serve = [
        sys.executable,
        "-m",
        "placement_sim.cli.main",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--seed",
        "1",
    ]
    servers = {
        "no faults": serve,
        "100 faults matching nothing": serve + ["--set", f"simulator.faults={nothing_matching()}"],
    }
    started = {name: start(cmd) for name, cmd in servers.items()}
    try:
        for _, port, _ in started.values():
            asyncio.run(load(port, 0.5))  # warm up
        samples: dict[str, list[float]] = {name: [] for name in servers}
        for _ in range(args.rounds):
            for name, (proc, port, _) in started.items():
                samples[name].append(cpu_per_request(proc.pid, port, args.seconds))
    finally:
        for proc, _, _ in started.values():
            proc.terminate()
            proc.wait(10)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    ratios = [
        f / n for n, f in zip(samples["no faults"], samples["100 faults matching nothing"], strict=True)
    ]
    print(
        f"\nMetadata v12 (one topic), {CONNECTIONS} connections x {IN_FLIGHT} in flight, "
        f"{args.rounds} alternating rounds of {args.seconds:g}s\n"
    )
    print("| server | CPU µs/request (median) | rounds |")
    print("|---|---:|---|")
    for name, median in medians.items():
        rounds = ", ".join(f"{v:.1f}" for v in samples[name])
        print(f"| {name} | {median:.1f} | {rounds} |")
    ratio = statistics.median(ratios)
    print(f"\nper round, with faults / without: {', '.join(f'{r:.2f}' for r in ratios)}")
    none, some = dispatch_microseconds(args.rounds)
    print(
        f"in this process, the dispatch alone per request (kept answer): {none:.2f} µs without faults, "
        f"{some:.2f} µs with the 100 ({some / none:.2f}x)"
    )
    print(
        f"\ntarget: at most {TARGET}x the CPU per request without faults: {'met' if ratio <= TARGET else 'missed'} ({ratio:.2f}x)"
    )
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
