"""Config RPC speed: what CreateTopics' configs (v5+) and DescribeConfigs cost, against references
measured in the same run.

Each measurement runs against fresh ``placement-sim serve`` processes (the default cluster, seed 1), with
the project's asyncio client:

- CreateTopics of ``--topics`` topics (1 partition, RF 1) in one request at v7, whose answer carries the
  33 configs of every new topic (34 entries per topic to encode and decode), against the same request
  at v4 (one entry per topic; the reference). Target: v7 within 3x of v4.
- DescribeConfigs of every one of those topics (33 entries each) in one request, against Metadata of
  all of them (the reference; median of ``--repeat``). Target: the client round trip within 40x the
  Metadata one (33 entries per topic against a topic and its partition).
- The same DescribeConfigs while a latency probe (another process) asks ApiVersions every 5 ms: at most
  1% of its answers over 50 ms and none over 250 ms (the fairness tests' rule).

The script exits 1 if a target is missed.

    .venv/bin/python benchmarks/configs.py [--topics 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol.client import KafkaClient  # noqa: E402
from tests.support.probe import LatencyProbe  # noqa: E402
from tests.support.serve import served  # noqa: E402

CREATE_RATIO_TARGET = 3.0
DESCRIBE_RATIO_TARGET = 40.0
CONFIGS_PER_TOPIC = 33


def create_request(count: int) -> dict:
    topics = [
        {"Name": f"cfg-{i:06d}", "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [], "Configs": []}
        for i in range(count)
    ]
    return {"Topics": topics, "timeoutMs": 120_000, "validateOnly": False}


def describe_request(count: int) -> dict:
    resources = [
        {"ResourceType": 2, "ResourceName": f"cfg-{i:06d}", "ConfigurationKeys": None} for i in range(count)
    ]
    return {"Resources": resources, "IncludeSynonyms": False, "IncludeDocumentation": False}


async def timed(
    client: KafkaClient, api: str, request: dict, version: int | None = None
) -> tuple[float, dict]:
    start = time.perf_counter()
    response = await client.send(api, request, version=version)
    return time.perf_counter() - start, response


def create_seconds(count: int, version: int) -> float:
    async def run() -> float:
        with served() as bootstrap:
            async with await KafkaClient.connect(bootstrap, request_timeout=300) as client:
                took, response = await timed(client, "CreateTopicsRequest", create_request(count), version)
        assert all(t["ErrorCode"] == 0 for t in response["Topics"])
        if version >= 5:
            assert all(len(t["Configs"]) == CONFIGS_PER_TOPIC for t in response["Topics"])
        return took

    return asyncio.run(run())


def describe_and_metadata(count: int, repeat: int) -> tuple[float, float, LatencyProbe]:
    async def run(bootstrap: str) -> tuple[float, float]:
        async with await KafkaClient.connect(bootstrap, request_timeout=300) as client:
            await client.send("CreateTopicsRequest", create_request(count), version=4)
            describe, metadata = [], []
            for _ in range(repeat):
                took, response = await timed(client, "DescribeConfigsRequest", describe_request(count))
                assert sum(len(r["Configs"]) for r in response["Results"]) == count * CONFIGS_PER_TOPIC
                describe.append(took)
                took, response = await timed(client, "MetadataRequest", {"Topics": None})
                assert len(response["Topics"]) == count
                metadata.append(took)
        return statistics.median(describe), statistics.median(metadata)

    async def probed(bootstrap: str) -> None:
        async with await KafkaClient.connect(bootstrap, request_timeout=300) as client:
            await client.send("DescribeConfigsRequest", describe_request(count))

    with served() as bootstrap:
        describe, metadata = asyncio.run(run(bootstrap))
        with LatencyProbe(bootstrap) as probe:
            asyncio.run(probed(bootstrap))
    return describe, metadata, probe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5, help="DescribeConfigs/Metadata rounds (median)")
    args = parser.parse_args()
    n = args.topics
    v4 = create_seconds(n, 4)
    v7 = create_seconds(n, 7)
    describe, metadata, probe = describe_and_metadata(n, args.repeat)
    per_entry_us = describe / (n * CONFIGS_PER_TOPIC) * 1e6
    print(
        f"CreateTopics of {n:,} topics, one request: v7 (33 configs each) {v7:.2f} s, v4 {v4:.2f} s, ratio {v7 / v4:.2f}"
    )
    print(
        f"DescribeConfigs of {n:,} topics ({n * CONFIGS_PER_TOPIC:,} entries): {describe * 1000:.0f} ms "
        f"({per_entry_us:.2f} us per entry); Metadata of them {metadata * 1000:.0f} ms; ratio {describe / metadata:.1f}"
    )
    print(
        f"ApiVersions probe during DescribeConfigs: {probe.count} answers, worst {probe.worst * 1000:.0f} ms, "
        f"{probe.share_above(0.050):.1%} over 50 ms"
    )
    missed = []
    if v7 / v4 > CREATE_RATIO_TARGET:
        missed.append(f"CreateTopics v7 / v4 = {v7 / v4:.2f} > {CREATE_RATIO_TARGET}")
    if describe / metadata > DESCRIBE_RATIO_TARGET:
        missed.append(f"DescribeConfigs / Metadata = {describe / metadata:.1f} > {DESCRIBE_RATIO_TARGET}")
    if probe.share_above(0.050) > 0.01 or probe.worst > 0.250:
        missed.append("the probe waited too long")
    for line in missed:
        print(f"MISSED: {line}")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
