"""Admin RPC speed: CreateTopics of 1,000 topics x 12 partitions and Metadata of them.

Every measurement runs against a fresh ``placement-sim serve`` process (the default cluster: 6 brokers
in 3 racks, the striped placer, seed 1), so the client and the server do not share a core's GIL. The
same operations are timed through the project's asyncio client and through kafka-python's
KafkaAdminClient (the reference, measured in the same run); both include their client's own encoding
and decoding. The server's answer time for a full Metadata of 10,000 partitions (1,000 topics x 10)
is also measured on a raw socket: from sending the request to holding the whole response, with no
decoding on the client side. Target: under 50 ms (the script exits 1 if it misses).

    .venv/bin/python benchmarks/admin.py [--topics 1000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafka.admin import KafkaAdminClient  # noqa: E402

from protocol import load_schemas  # noqa: E402
from protocol.client import KafkaClient  # noqa: E402
from protocol.framing import encode_request  # noqa: E402
from tests.support.rawwire import read_response  # noqa: E402

SCHEMAS = load_schemas()
TARGET_MS = 50.0


class Served:
    """A ``placement-sim serve`` process on an ephemeral port."""

    def __init__(self) -> None:
        cmd = [
            sys.executable,
            "-m",
            "placement_sim.cli.main",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--seed",
            "1",
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("listening on "):
                self.bootstrap = line.split()[2]  # listening on HOST:PORT (PROTOCOL)
                return
        raise RuntimeError("the server did not start")

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def topic_request(names: list[str], partitions: int) -> dict:
    topics = [
        {"Name": n, "NumPartitions": partitions, "ReplicationFactor": 3, "Assignments": [], "Configs": []}
        for n in names
    ]
    return {"Topics": topics, "timeoutMs": 60000, "validateOnly": False}


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def names(count: int) -> list[str]:
    return [f"bench-{i:05d}" for i in range(count)]


# -- the project's client ---------------------------------------------------------------------------


def ours(count: int, partitions: int, repeat: int, one_request: bool) -> dict[str, float]:
    async def run() -> dict[str, float]:
        with Served() as server:
            async with await KafkaClient.connect(server.bootstrap, request_timeout=120) as client:
                start = time.perf_counter()
                if one_request:
                    response = await client.send(
                        "CreateTopicsRequest", topic_request(names(count), partitions)
                    )
                    assert all(t["ErrorCode"] == 0 for t in response["Topics"])
                else:
                    for name in names(count):
                        response = await client.send("CreateTopicsRequest", topic_request([name], partitions))
                        assert response["Topics"][0]["ErrorCode"] == 0
                create = time.perf_counter() - start
                times = []
                for _ in range(repeat):
                    start = time.perf_counter()
                    response = await client.send("MetadataRequest", {"Topics": None})
                    times.append(time.perf_counter() - start)
                assert sum(len(t["Partitions"]) for t in response["Topics"]) == count * partitions
                return {"create": create, "metadata": statistics.median(times) * 1000}

    return asyncio.run(run())


# -- kafka-python's client (the reference) ----------------------------------------------------------


def kafka_python(count: int, partitions: int, repeat: int, one_request: bool) -> dict[str, float]:
    with Served() as server:
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=120000)
        try:
            spec = {"num_partitions": partitions, "replication_factor": 3}
            start = time.perf_counter()
            if one_request:
                admin.create_topics({name: spec for name in names(count)}, timeout_ms=60000)
            else:
                for name in names(count):
                    admin.create_topics({name: spec}, timeout_ms=60000)
            create = time.perf_counter() - start
            described: list = []

            def describe() -> None:
                described[:] = admin.describe_topics()

            metadata = median_ms(describe, repeat)
            assert sum(len(t["partitions"]) for t in described) == count * partitions
            return {"create": create, "metadata": metadata}
        finally:
            admin.close()


# -- the server's answer time on a raw socket -------------------------------------------------------


def raw_answer_ms(count: int, partitions: int, repeat: int) -> tuple[float, int]:
    """Median time from sending a full Metadata request to holding the whole response; and its size."""
    with Served() as server:

        async def create() -> None:
            async with await KafkaClient.connect(server.bootstrap, request_timeout=120) as client:
                await client.send("CreateTopicsRequest", topic_request(names(count), partitions))

        asyncio.run(create())
        host, port = server.bootstrap.rsplit(":", 1)
        body = SCHEMAS.request(3).encode({"Topics": None}, 12)
        size = 0
        with socket.create_connection((host, int(port)), timeout=30) as sock:

            def ask() -> None:
                nonlocal size
                sock.sendall(encode_request(SCHEMAS, 3, 12, 1, "bench", body))
                answer = read_response(sock)
                assert answer is not None, "the server closed the connection"
                size = len(answer)

            ask()  # the first call compiles the codecs
            return median_ms(ask, repeat), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20, help="Metadata requests per measurement (median)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    n = args.topics
    rows: list[tuple[str, str, str]] = []

    for one_request, label in ((True, "one request"), (False, f"{n:,} requests")):
        mine = ours(n, 12, args.repeat, one_request)
        ref = kafka_python(n, 12, args.repeat, one_request)
        rows.append(
            (
                f"CreateTopics {n:,} x 12 partitions, {label}: total s (per topic ms)",
                f"{mine['create']:.2f} ({mine['create'] / n * 1000:.2f})",
                f"{ref['create']:.2f} ({ref['create'] / n * 1000:.2f})",
            )
        )
        if one_request:
            rows.append(
                (
                    f"Metadata of all {n * 12:,} partitions, client round trip: median ms",
                    f"{mine['metadata']:.1f}",
                    f"{ref['metadata']:.1f}",
                )
            )

    mine10 = ours(n, 10, args.repeat, True)
    ref10 = kafka_python(n, 10, args.repeat, True)
    rows.append(
        (
            f"Metadata of {n * 10:,} partitions, client round trip: median ms",
            f"{mine10['metadata']:.1f}",
            f"{ref10['metadata']:.1f}",
        )
    )
    answer, size = raw_answer_ms(n, 10, args.repeat)
    verdict = "meets" if answer < TARGET_MS else "MISSES"
    rows.append(
        (
            f"Metadata of {n * 10:,} partitions, server answer on a raw socket ({size / 1e3:,.0f} kB): median ms",
            f"{answer:.1f} ({verdict} the {TARGET_MS:g} ms target)",
            "-",
        )
    )

    print(
        f"\nplacement-sim serve (6 brokers, 3 racks, striped, RF 3); Metadata medians over {args.repeat} requests\n"
    )
    print("| measurement | placement-sim client | kafka-python client (reference) |")
    print("|---|---:|---:|")
    for row in rows:
        print(f"| {row[0]} | {row[1]} | {row[2]} |")
    if answer >= TARGET_MS:
        sys.exit(1)


if __name__ == "__main__":
    main()
