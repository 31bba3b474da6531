"""Another client's Metadata while one client sends the data path's biggest requests (issue 28).

A ``placement-sim serve`` process (the default cluster, seed 1) holds a topic of ``--partitions``
partitions (20,000) and a small one of big batches. A prober process (tests.support.probe) asks Metadata
for no topics every 5 ms on its own connection and records each answer's time. Each request below is
sent ``--rounds`` times (3), alone, while the prober watches; the reference is the prober on the idle
server, in the same run:

- **Produce, every partition**: one batch of one record to each of the 20,000 partitions (acks=1);
- **Produce, 100,000 entries**: the partitions named five times each (8 MB: each answered once, the
  last batch appended, as Kafka does);
- **Produce, a gzip batch at the bound**: 1 MB of gzip whose records decompress past
  ``simulator.records.max.decompressed.bytes`` (refused with INVALID_RECORD once 64 MiB are read);
- **ListOffsets by timestamp**, **Fetch** (MaxBytes 2^31-1: capped by ``fetch.max.bytes``),
  **DeleteRecords** (to each high watermark) and **OffsetCommit** (a group's offsets), each naming every
  partition;
- **Fetch, one partition a hundred times** with MaxBytes and PartitionMaxBytes of 2^31-1 (answered once,
  within ``fetch.max.bytes``).

Per request: the median over the rounds of its answer time and of the prober's p99 and worst answer.
Targets (the script exits 1 when one is missed): for each request, the prober's p99 at most 50 ms and its
worst at most 250 ms (medians over the rounds).

    .venv/bin/python benchmarks/stalls.py [--partitions 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import struct
import sys
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from controller.records.batch import HEADER_SIZE, client_batch, compute_crc  # noqa: E402
from protocol import load_schemas  # noqa: E402
from protocol.client import BlockingClient  # noqa: E402
from protocol.framing import encode_request  # noqa: E402
from protocol.wire import uvarint_bytes, zigzag32  # noqa: E402
from tests.support.probe import LatencyProbe  # noqa: E402
from tests.support.rawwire import raw_connect, read_response  # noqa: E402
from tests.support.serve import served  # noqa: E402

SCHEMAS = load_schemas()
P99_TARGET_MS = 50.0
WORST_TARGET_MS = 250.0
MB = 1 << 20
TOPIC = "wide"
BIG = "big"


def now_ms() -> int:
    return int(time.time() * 1000)


def frame(api_key: int, version: int, data: dict) -> bytes:
    return encode_request(
        SCHEMAS, api_key, version, 7, "stalls-bench", SCHEMAS.request(api_key).encode(data, version)
    )


def produce_frame(entries: list[tuple[str, int, bytes]]) -> bytes:
    topics: dict[str, list[dict]] = {}
    for topic, index, records in entries:
        topics.setdefault(topic, []).append({"Index": index, "Records": records})
    data = {
        "Acks": 1,
        "TimeoutMs": 60_000,
        "TopicData": [{"Name": name, "PartitionData": parts} for name, parts in topics.items()],
    }
    return frame(0, 9, data)


def gzip_bomb() -> bytes:
    """A batch of one record of 256 MiB of zeros, gzip'd: under 1 MB."""
    size = 256 * MB
    body_head = b"\x00\x00\x00\x01" + uvarint_bytes(zigzag32(size))
    head = uvarint_bytes(zigzag32(len(body_head) + size + 1)) + body_head
    deflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    section = b"".join([deflater.compress(head), *(deflater.compress(bytes(MB)) for _ in range(size // MB))])
    section += deflater.compress(b"\x00") + deflater.flush()
    out = bytearray(client_batch([(None, b"")], now_ms())[:HEADER_SIZE] + section)
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, 1)  # gzip
    struct.pack_into(">I", out, 17, compute_crc(out))
    return bytes(out)


def fetch_frame(partitions: list[int], topic: str) -> bytes:
    data = {
        "ReplicaId": -1,
        "MaxWaitMs": 0,
        "MinBytes": 0,
        "MaxBytes": 2**31 - 1,
        "IsolationLevel": 0,
        "Topics": [
            {
                "Topic": topic,
                "Partitions": [
                    {
                        "Partition": i,
                        "FetchOffset": 0,
                        "PartitionMaxBytes": 2**31 - 1,
                        "CurrentLeaderEpoch": -1,
                    }
                    for i in partitions
                ],
            }
        ],
    }
    return frame(1, 11, data)


def requests(partitions: int) -> dict[str, Callable[[], bytes]]:
    """What is sent, by name: each a function making its frame (made before the prober starts)."""
    everyone = range(partitions)
    return {
        "Produce, every partition": lambda: produce_frame(
            [(TOPIC, i, client_batch([(None, b"v")], now_ms())) for i in everyone]
        ),
        "Produce, 100,000 entries": lambda: produce_frame(
            [
                (TOPIC, i % partitions, client_batch([(None, b"w%d" % (i // partitions))], now_ms()))
                for i in range(100_000)
            ]
        ),
        "Produce, a gzip batch at the bound": lambda: produce_frame([(BIG, 0, gzip_bomb())]),
        "ListOffsets by timestamp": lambda: frame(
            2,
            7,
            {
                "ReplicaId": -1,
                "IsolationLevel": 0,
                "Topics": [
                    {
                        "Name": TOPIC,
                        "Partitions": [
                            {"PartitionIndex": i, "CurrentLeaderEpoch": -1, "Timestamp": 0} for i in everyone
                        ],
                    }
                ],
            },
        ),
        "Fetch, every partition": lambda: fetch_frame(list(everyone), TOPIC),
        "Fetch, one partition 100 times": lambda: fetch_frame([0] * 100, BIG),
        "OffsetCommit, every partition": lambda: frame(
            8,
            8,
            {
                "GroupId": "stalls",
                "GenerationIdOrMemberEpoch": -1,
                "MemberId": "",
                "GroupInstanceId": None,
                "Topics": [
                    {
                        "Name": TOPIC,
                        "Partitions": [
                            {
                                "PartitionIndex": i,
                                "CommittedOffset": 1,
                                "CommittedLeaderEpoch": -1,
                                "CommittedMetadata": "",
                            }
                            for i in everyone
                        ],
                    }
                ],
            },
        ),
        "DeleteRecords, every partition": lambda: frame(
            21,
            2,
            {
                "Topics": [
                    {"Name": TOPIC, "Partitions": [{"PartitionIndex": i, "Offset": -1} for i in everyone]}
                ],
                "TimeoutMs": 60_000,
            },
        ),
    }


def send(bootstrap: str, request: bytes) -> float:
    """Sends one request on a connection of its own and waits for its answer: the time it took (s)."""
    sock = raw_connect(bootstrap, timeout=600)
    try:
        started = time.perf_counter()
        threading.Thread(target=sock.sendall, args=(request,), daemon=True).start()
        answer = read_response(sock)
        if answer is None:
            raise AssertionError("the server closed the connection unanswered")
        return time.perf_counter() - started
    finally:
        sock.close()


def quantiles(latencies: list[float]) -> tuple[float, float]:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, ordered[-1] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with served() as bootstrap:
        with BlockingClient.connect(bootstrap, request_timeout=600) as client:
            created = client.send(
                "CreateTopicsRequest",
                {
                    "Topics": [
                        {
                            "Name": TOPIC,
                            "NumPartitions": args.partitions,
                            "ReplicationFactor": 1,
                            "Assignments": [],
                            "Configs": [],
                        },
                        {
                            "Name": BIG,
                            "NumPartitions": 1,
                            "ReplicationFactor": 1,
                            "Assignments": [],
                            "Configs": [],
                        },
                    ],
                    "timeoutMs": 600_000,
                },
                version=5,
            )
            assert {t["ErrorCode"] for t in created["Topics"]} == {0}, created
            for _ in range(8):  # 8 MB of 1 MB batches to read back
                client.send(
                    "ProduceRequest",
                    {
                        "Acks": 1,
                        "TimeoutMs": 30_000,
                        "TopicData": [
                            {
                                "Name": BIG,
                                "PartitionData": [
                                    {
                                        "Index": 0,
                                        "Records": client_batch([(None, bytes(1_000_000))], now_ms()),
                                    }
                                ],
                            }
                        ],
                    },
                    version=9,
                )
        with LatencyProbe(bootstrap, metadata=True, at_least=2.0) as idle:
            pass
        idle_p99, idle_worst = quantiles(idle.latencies)
        for name, make in requests(args.partitions).items():
            took, p99s, worsts = [], [], []
            for _ in range(args.rounds):
                request = make()
                with LatencyProbe(bootstrap, metadata=True, at_least=0.5) as probe:
                    took.append(send(bootstrap, request))
                assert probe.failures == [], probe.failures
                p99, worst = quantiles(probe.latencies)
                p99s.append(p99)
                worsts.append(worst)
            rows.append(
                (
                    name,
                    len(request),
                    statistics.median(took),
                    statistics.median(p99s),
                    statistics.median(worsts),
                )
            )
            print(
                f"  {name}: {rows[-1][2]:.2f} s, p99 {rows[-1][3]:.1f} ms, worst {rows[-1][4]:.1f} ms",
                flush=True,
            )
    print()
    print(f"Metadata prober, idle server (reference): p99 {idle_p99:.1f} ms, worst {idle_worst:.1f} ms")
    print()
    print("| Request | Bytes | Answered in (median) | Prober p99 | Prober worst | Target |")
    print("|---|---|---|---|---|---|")
    missed = False
    for name, size, took, p99, worst in rows:
        miss = p99 > P99_TARGET_MS or worst > WORST_TARGET_MS
        missed |= miss
        print(
            f"| {name} | {size:,} | {took:.2f} s | {p99:.1f} ms | {worst:.1f} ms | "
            f"p99 <= {P99_TARGET_MS:.0f} ms, worst <= {WORST_TARGET_MS:.0f} ms: {'**missed**' if miss else 'met'} |"
        )
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
