"""DescribeLogDirs over real sockets: each broker lists the replicas it holds, in every version."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from protocol.client import KafkaClient


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with ServerThread.start(brokers=[(0, None), (1, None), (2, None)], clock="virtual", seed=1) as started:
        cluster = started.server.controller.cluster
        started.call(lambda: cluster.add_topic("ld", [[0, 1], [1, 2], [2, 0]]))
        started.call(lambda: cluster.add_topic("other", [[1]]))
        yield started


async def log_dirs(server: ServerThread, broker: int | None, topics, version: int) -> dict:
    address = server.bootstrap if broker is None else server.brokers[broker]
    async with await KafkaClient.connect(address, request_timeout=10) as client:
        return await client.send("DescribeLogDirsRequest", {"Topics": topics}, version=version)


@pytest.mark.parametrize("version", range(1, 5))  # v0 is gone since Kafka 4 (KIP-896)
async def test_each_broker_describes_its_replicas(server: ServerThread, version: int):
    response = await log_dirs(server, 1, None, version)
    [result] = response["Results"]
    assert (result["ErrorCode"], result["LogDir"]) == (0, "/tmp/kafka-logs")
    partitions = {
        (t["Name"], p["PartitionIndex"]): (p["PartitionSize"], p["OffsetLag"], p["IsFutureKey"])
        for t in result["Topics"]
        for p in t["Partitions"]
    }
    assert partitions == {("ld", 0): (0, 0, False), ("ld", 1): (0, 0, False), ("other", 0): (0, 0, False)}
    if version >= 4:
        assert (result["TotalBytes"], result["UsableBytes"]) == (-1, -1)


async def test_named_partitions_only(server: ServerThread):
    response = await log_dirs(
        server, 0, [{"Topic": "ld", "Partitions": [2, 1]}, {"Topic": "nope", "Partitions": [0]}], 4
    )
    [result] = response["Results"]
    assert [(t["Name"], [p["PartitionIndex"] for p in t["Partitions"]]) for t in result["Topics"]] == [
        ("ld", [2])
    ]


async def test_the_bootstrap_listener_holds_no_log_directory(server: ServerThread):
    assert (await log_dirs(server, None, None, 4))["Results"] == []
