"""``ServerThread.create_topic`` and ``Server.create_topic``: a topic created from Python as CreateTopics
creates it, seen by a client's Metadata, refused as a client would be refused."""

from __future__ import annotations

import pytest

from controller.assembly import create_server
from controller.config import ServerConfig
from controller.embedded import ServerThread
from protocol.client import BlockingClient, KafkaClient
from protocol.codes import ErrorCode
from protocol.errors import Refusal


def _metadata(client: BlockingClient, topic: str) -> dict[int, list[int]]:
    response = client.send("MetadataRequest", {"Topics": [{"Name": topic}]}, version=12)
    [answer] = response["Topics"]
    assert answer["ErrorCode"] == 0
    return {p["PartitionIndex"]: p["ReplicaNodes"] for p in answer["Partitions"]}


def test_placed_assigned_and_refused_topics() -> None:
    with ServerThread.start(brokers=[(0, "a"), (1, "b"), (2, "c")], seed=1) as server:
        placed = server.create_topic("orders", 4, 2, configs={"retention.ms": "1000"})
        assigned = server.create_topic("events", assignments=[[2, 0], [1, 2]])
        assert assigned.replicas == [[2, 0], [1, 2]]
        mapped = server.create_topic("audit", assignments={1: [0], 0: [1]})
        assert mapped.replicas == [[1], [0]]
        with BlockingClient.connect(server.bootstrap) as client:
            assert _metadata(client, "orders") == dict(enumerate(placed.replicas))
            assert _metadata(client, "events") == {0: [2, 0], 1: [1, 2]}
            assert _metadata(client, "audit") == {0: [1], 1: [0]}
        assert [len(r) for r in placed.replicas] == [2] * 4 and placed.topic_id is not None
        assert server.partition_state("events", 1).leader == 1
        with pytest.raises(Refusal) as exists:
            server.create_topic("orders", 1, 1)
        assert (exists.value.code, exists.value.message) == (
            ErrorCode.TOPIC_ALREADY_EXISTS,
            "Topic 'orders' already exists.",
        )
        with pytest.raises(Refusal) as too_many:
            server.create_topic("wide", 1, 4)
        assert too_many.value.code == ErrorCode.INVALID_REPLICATION_FACTOR
        with pytest.raises(Refusal) as unknown:
            server.create_topic("elsewhere", assignments=[[7]])
        assert unknown.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert "wide" not in server.server.controller.cluster.topics


async def test_the_async_server_creates_topics_too() -> None:
    config = ServerConfig.from_properties({"listeners": "127.0.0.1:0", "simulator.brokers": "0,1"})
    async with await create_server(config) as server:
        result = await server.create_topic("orders", 2, 2)
        client = await KafkaClient.connect(server.bootstrap, connect_timeout=5, request_timeout=10)
        try:
            response = await client.send("MetadataRequest", {"Topics": [{"Name": "orders"}]}, version=12)
        finally:
            await client.close()
        [topic] = response["Topics"]
        assert [p["ReplicaNodes"] for p in topic["Partitions"]] == result.replicas
