"""DescribeTopicPartitions (75): topics in name order, a page of partitions at a time with the cursor Kafka
gives, the eligible leader replicas of a partition whose ISR emptied, and Kafka's errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.embedded import ServerThread
from protocol.client import BlockingClient
from protocol.codes import ErrorCode

TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


@pytest.fixture
def server() -> Iterator[ServerThread]:
    properties = {"min.insync.replicas": "2", "auto.leader.rebalance.enable": "false"}
    with ServerThread.start(properties=properties, clock="virtual", seed=2) as running:
        yield running


def create(client: BlockingClient, name: str, assignments: list[list[int]]) -> None:
    topic = {
        "Name": name,
        "NumPartitions": -1,
        "ReplicationFactor": -1,
        "Assignments": [{"PartitionIndex": i, "BrokerIds": a} for i, a in enumerate(assignments)],
        "Configs": [],
    }
    answer = client.send("CreateTopicsRequest", {"Topics": [topic], "timeoutMs": 5000})
    assert answer["Topics"][0]["ErrorCode"] == 0


def describe(client: BlockingClient, names: list[str], limit: int = 2000, cursor=None) -> dict:
    request = {"Topics": [{"Name": n} for n in names], "ResponsePartitionLimit": limit, "Cursor": cursor}
    return client.send("DescribeTopicPartitionsRequest", request)


def test_pages_follow_the_cursor(server: ServerThread):
    with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
        create(client, "b-topic", [[0, 1, 2]] * 3)
        create(client, "a-topic", [[1, 2, 3]] * 2)
        seen, cursor, pages = [], None, 0
        while True:
            page = describe(client, [], limit=2, cursor=cursor)
            pages += 1
            for topic in page["Topics"]:
                assert (topic["ErrorCode"], topic["TopicAuthorizedOperations"]) == (0, TOPIC_OPERATIONS)
                seen += [(topic["Name"], p["PartitionIndex"]) for p in topic["Partitions"]]
            cursor = page["NextCursor"]
            if cursor is None:
                break
        assert pages == 3
        assert seen == [("a-topic", 0), ("a-topic", 1), ("b-topic", 0), ("b-topic", 1), ("b-topic", 2)]
        # A page that ends between topics names the next topic's first partition.
        first = describe(client, ["a-topic", "b-topic"], limit=2)
        assert first["NextCursor"] == {"TopicName": "b-topic", "PartitionIndex": 0}


def test_kafkas_errors(server: ServerThread):
    with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
        create(client, "known", [[0]])
        answer = describe(client, ["known", "unknown", "bad name"])
        assert sorted((t["Name"], t["ErrorCode"]) for t in answer["Topics"]) == [
            ("bad name", ErrorCode.INVALID_TOPIC_EXCEPTION),
            ("known", 0),
            ("unknown", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        refused = describe(client, ["known"], cursor={"TopicName": "other", "PartitionIndex": 0})
        assert [t["ErrorCode"] for t in refused["Topics"]] == [ErrorCode.INVALID_REQUEST]


def test_the_eligible_leader_replicas_are_shown(server: ServerThread):
    with BlockingClient.connect(server.bootstrap, request_timeout=10) as client:
        create(client, "orders", [[0, 1, 2]])
        for broker in (2, 1):  # below min.insync.replicas=2: 1 becomes eligible
            server.stop_broker(broker, "controlled")
            server.advance(2000)
        [p] = describe(client, ["orders"])["Topics"][0]["Partitions"]
        assert (p["LeaderId"], p["IsrNodes"], p["EligibleLeaderReplicas"], p["LastKnownElr"]) == (
            0,
            [0],
            [1],
            [],
        )
        server.stop_broker(0, "crash")
        server.advance(9000 + 2000)
        [p] = describe(client, ["orders"])["Topics"][0]["Partitions"]
        assert (p["ErrorCode"], p["LeaderId"], p["IsrNodes"], p["EligibleLeaderReplicas"]) == (
            0,
            -1,
            [],
            [0, 1],
        )
        assert p["OfflineReplicas"] == [0, 1, 2]
        # 1 shut down cleanly: back, it leads cleanly from the ELR.
        server.start_broker(1)
        server.advance(2000)
        [p] = describe(client, ["orders"])["Topics"][0]["Partitions"]
        assert (p["LeaderId"], p["IsrNodes"], p["EligibleLeaderReplicas"]) == (1, [1], [0])
