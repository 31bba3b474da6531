"""Share groups on the wire, with a raw client and a virtual clock: ShareGroupHeartbeat's errors and
epochs, the share sessions' epochs, the admin APIs (answers as a real Kafka 4.4.0 broker gave them to the
same requests), FindCoordinator of a share-partition key, and a share group that keeps its members and
epochs when its group coordinator's broker crashes."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from controller.embedded import ServerThread
from protocol import ZERO_UUID
from protocol.client import BlockingClient

TIMEOUT = 10.0
BROKERS = [(0, "a"), (1, "b"), (2, "c")]
PROPS = {"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500}


@pytest.fixture
def server() -> Iterator[ServerThread]:
    """On a virtual clock that a pump thread moves 50 ms every 20 ms of wall time: the coordinators'
    writes replicate (a heartbeat that changes a group is answered once its write is durable)."""
    with ServerThread.start(brokers=BROKERS, clock="virtual", seed=4, properties=PROPS) as started:
        stop = threading.Event()
        pump = threading.Thread(
            target=lambda: [started.advance(50) for _ in iter(lambda: stop.wait(0.02), True)]
        )
        pump.start()
        try:
            yield started
        finally:
            stop.set()
            pump.join(5)


@pytest.fixture
def real() -> Iterator[ServerThread]:
    """On the real clock: the admin APIs wait for the share coordinator's writes to replicate."""
    with ServerThread.start(brokers=BROKERS, seed=4, properties=PROPS) as started:
        yield started


@pytest.fixture
def client(server: ServerThread) -> Iterator[BlockingClient]:
    c = BlockingClient.connect(server.bootstrap)
    try:
        yield c
    finally:
        c.close()


def send(client: BlockingClient, name: str, data: dict[str, Any], version: int) -> dict[str, Any]:
    return client.send(name, data, version=version, timeout=TIMEOUT)


def heartbeat(
    client: BlockingClient, group: str, member: str, epoch: int, topics: list[str] | None
) -> dict[str, Any]:
    return send(
        client,
        "ShareGroupHeartbeatRequest",
        {
            "GroupId": group,
            "MemberId": member,
            "MemberEpoch": epoch,
            "RackId": None,
            "SubscribedTopicNames": topics,
        },
        1,
    )


def setup(
    server: ServerThread, client: BlockingClient, topic: str = "jobs", partitions: int = 2
) -> uuid.UUID:
    send(client, "FindCoordinatorRequest", {"Key": "g", "KeyType": 0}, 3)
    created = send(
        client,
        "CreateTopicsRequest",
        {"Topics": [{"Name": topic, "NumPartitions": partitions, "ReplicationFactor": 3, "Assignments": [], "Configs": []}],
         "timeoutMs": 5000, "validateOnly": False},
        5,
    )  # fmt: skip
    assert created["Topics"][0]["ErrorCode"] == 0
    if server.server.controller.clock.__class__.__name__ == "VirtualClock":
        server.advance(200)
    return server.call(lambda: server.server.controller.cluster.topics[topic].topic_id)


def test_heartbeat_epochs_assignment_and_errors(server: ServerThread, client: BlockingClient) -> None:
    topic_id = setup(server, client)
    assert heartbeat(client, "g", "", 0, ["jobs"])["ErrorCode"] == 42
    assert (
        heartbeat(client, "g", "m1", 0, None)["ErrorMessage"]
        == "SubscribedTopicNames must be set in first request."
    )
    joined = heartbeat(client, "g", "m1", 0, ["jobs"])
    assert (joined["ErrorCode"], joined["MemberId"], joined["HeartbeatIntervalMs"]) == (0, "m1", 5000)
    assert joined["Assignment"] == {"TopicPartitions": [{"TopicId": topic_id, "Partitions": [0, 1]}]}
    epoch = joined["MemberEpoch"]
    second = heartbeat(client, "g", "m2", 0, ["jobs"])
    assert second["Assignment"] == {"TopicPartitions": [{"TopicId": topic_id, "Partitions": [1]}]}
    again = heartbeat(client, "g", "m1", epoch, None)
    assert again["MemberEpoch"] == second["MemberEpoch"] > epoch
    assert again["Assignment"] == {"TopicPartitions": [{"TopicId": topic_id, "Partitions": [0]}]}
    assert heartbeat(client, "g", "m1", again["MemberEpoch"], None)["Assignment"] is None  # unchanged
    assert heartbeat(client, "g", "m1", epoch, None)["ErrorCode"] == 110  # FENCED_MEMBER_EPOCH
    assert heartbeat(client, "g", "m9", 3, None)["ErrorCode"] == 25  # UNKNOWN_MEMBER_ID
    assert heartbeat(client, "g", "m2", -1, None)["MemberEpoch"] == -1
    server.advance(46_000)  # m1's session (45 s) ends without heartbeats
    described = send(
        client, "ShareGroupDescribeRequest", {"GroupIds": ["g"], "IncludeAuthorizedOperations": False}, 1
    )
    group = described["Groups"][0]
    assert (group["GroupState"], group["Members"], group["AssignorName"]) == ("Empty", [], "simple")


def fetch(
    client: BlockingClient,
    member: str,
    epoch: int,
    topic_id: uuid.UUID,
    acks: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return send(
        client,
        "ShareFetchRequest",
        {"GroupId": "g", "MemberId": member, "ShareSessionEpoch": epoch, "MaxWaitMs": 0, "MinBytes": 1,
         "MaxBytes": 1 << 20, "MaxRecords": 100, "BatchSize": 100,
         "Topics": [{"TopicId": topic_id, "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": acks or []}]}],
         "ForgottenTopicsData": []},
        1,
    )  # fmt: skip


def test_share_session_epochs(server: ServerThread, client: BlockingClient) -> None:
    topic_id = setup(server, client)
    heartbeat(client, "g", "m1", 0, ["jobs"])
    assert fetch(client, "m1", 3, topic_id)["ErrorCode"] == 122  # SHARE_SESSION_NOT_FOUND
    ack = [{"FirstOffset": 0, "LastOffset": 0, "AcknowledgeTypes": [1]}]
    assert fetch(client, "m1", 0, topic_id, ack)["ErrorCode"] == 42  # acknowledgements cannot open a session
    assert fetch(client, "m1", 0, topic_id)["ErrorCode"] == 0
    assert fetch(client, "m1", 2, topic_id)["ErrorCode"] == 123  # INVALID_SHARE_SESSION_EPOCH: 1 is next
    assert fetch(client, "m1", 1, topic_id)["ErrorCode"] == 0
    closed = send(
        client,
        "ShareAcknowledgeRequest",
        {"GroupId": "g", "MemberId": "m1", "ShareSessionEpoch": -1, "Topics": []},
        1,
    )
    assert closed["ErrorCode"] == 0
    assert (
        send(
            client,
            "ShareAcknowledgeRequest",
            {"GroupId": "g", "MemberId": "m1", "ShareSessionEpoch": 0, "Topics": []},
            1,
        )["ErrorCode"]
        == 123
    )


def test_admin_apis_answer_as_kafka(real: ServerThread) -> None:
    server = real
    client = BlockingClient.connect(server.bootstrap)
    try:
        admin_apis(server, client)
    finally:
        client.close()


def admin_apis(server: ServerThread, client: BlockingClient) -> None:
    topic_id = setup(server, client, partitions=1)
    heartbeat(client, "g", "m1", 0, ["jobs"])
    assert fetch(client, "m1", 0, topic_id)["ErrorCode"] == 0  # the share-partition starts (latest: 0)
    heartbeat(client, "g", "m1", -1, None)
    listed = send(client, "ListGroupsRequest", {"StatesFilter": [], "TypesFilter": ["share"]}, 5)
    assert listed["Groups"] == [
        {"GroupId": "g", "ProtocolType": "share", "GroupState": "Empty", "GroupType": "share"}
    ]
    offsets = send(client, "DescribeShareGroupOffsetsRequest",
                   {"Groups": [{"GroupId": "g", "Topics": None}, {"GroupId": "nope", "Topics": None},
                               {"GroupId": "g", "Topics": [{"TopicName": "zzz", "Partitions": [0]}]}]}, 1)  # fmt: skip
    assert offsets["Groups"][0]["Topics"] == [
        {"TopicName": "jobs", "TopicId": topic_id, "Partitions": [
            {"PartitionIndex": 0, "StartOffset": 0, "LeaderEpoch": 0, "Lag": 0, "ErrorCode": 0, "ErrorMessage": None}]}
    ]  # fmt: skip
    assert offsets["Groups"][1] == {"GroupId": "nope", "Topics": [], "ErrorCode": 0, "ErrorMessage": None}
    assert offsets["Groups"][2]["Topics"] == [
        {"TopicName": "zzz", "TopicId": ZERO_UUID, "Partitions": [
            {"PartitionIndex": 0, "StartOffset": -1, "LeaderEpoch": 0, "Lag": -1, "ErrorCode": 0, "ErrorMessage": None}]}
    ]  # fmt: skip
    altered = send(client, "AlterShareGroupOffsetsRequest", {"GroupId": "g", "Topics": [
        {"TopicName": "jobs", "Partitions": [{"PartitionIndex": 0, "StartOffset": 3}]},
        {"TopicName": "zzz", "Partitions": [{"PartitionIndex": 0, "StartOffset": 3}]}]}, 0)  # fmt: skip
    assert [p["ErrorCode"] for t in altered["Responses"] for p in t["Partitions"]] == [0, 3]
    assert server.call(lambda: server.server.controller.share.start_offsets("g"))[("jobs", 0)][0] == 3
    # The lowest start offset a request can carry: its lag is more than an int64 holds, and is answered
    # as the most it can say (a fuzzed request made an answer that could not be encoded).
    lowest = send(client, "AlterShareGroupOffsetsRequest", {"GroupId": "g", "Topics": [
        {"TopicName": "jobs", "Partitions": [{"PartitionIndex": 0, "StartOffset": -(2**63)}]}]}, 0)  # fmt: skip
    assert [p["ErrorCode"] for t in lowest["Responses"] for p in t["Partitions"]] == [0]
    described = send(
        client, "DescribeShareGroupOffsetsRequest", {"Groups": [{"GroupId": "g", "Topics": None}]}, 1
    )
    [partition] = described["Groups"][0]["Topics"][0]["Partitions"]
    assert (partition["StartOffset"], partition["Lag"], partition["ErrorCode"]) == (-(2**63), 2**63 - 1, 0)
    deleted = send(
        client,
        "DeleteShareGroupOffsetsRequest",
        {"GroupId": "g", "Topics": [{"TopicName": "jobs"}, {"TopicName": "zzz"}]},
        0,
    )
    assert [(t["TopicName"], t["ErrorCode"]) for t in deleted["Responses"]] == [("jobs", 0), ("zzz", 3)]
    assert server.call(lambda: server.server.controller.share.start_offsets("g")) == {}
    key = f"g:{topic_id}:0"
    found = send(client, "FindCoordinatorRequest", {"KeyType": 2, "CoordinatorKeys": [key, "bad"]}, 6)[
        "Coordinators"
    ]
    assert found[0]["ErrorCode"] == 0 and found[0]["NodeId"] in (0, 1, 2)
    assert found[1]["ErrorCode"] == 42
    assert send(client, "DeleteGroupsRequest", {"GroupsNames": ["g"]}, 2)["Results"] == [
        {"GroupId": "g", "ErrorCode": 0}
    ]
    assert (
        send(client, "ListGroupsRequest", {"StatesFilter": [], "TypesFilter": ["share"]}, 5)["Groups"] == []
    )


def test_the_share_group_fails_over_with_its_coordinator(
    server: ServerThread, client: BlockingClient
) -> None:
    setup(server, client)
    joined = heartbeat(client, "g", "m1", 0, ["jobs"])
    coordinator = server.call(lambda: server.server.controller.groups.coordinator_of("g"))[1]
    server.stop_broker(coordinator, "crash")
    server.advance(2500)  # fenced: the __consumer_offsets partition's leadership moves
    moved = server.call(lambda: server.server.controller.groups.coordinator_of("g"))[1]
    assert moved not in (coordinator, -1)
    again = heartbeat(client, "g", "m1", joined["MemberEpoch"], None)
    for _ in range(100):  # COORDINATOR_LOAD_IN_PROGRESS while the new coordinator loads
        if again["ErrorCode"] != 14:
            break
        time.sleep(0.02)
        again = heartbeat(client, "g", "m1", joined["MemberEpoch"], None)
    assert (again["ErrorCode"], again["MemberEpoch"]) == (0, joined["MemberEpoch"])  # loaded from its log


def test_a_deleted_topics_share_state_is_removed(server: ServerThread, client: BlockingClient) -> None:
    """As Kafka's share coordinator does when the metadata shows a topic deleted (KAFKA-19201): a
    tombstone for each of its share-partitions' states, whatever the group's state; the leaders forget
    the share-partitions; a topic made again under the name starts from share.auto.offset.reset."""
    from controller.records.batch import client_batch
    from controller.share.coordinator import share_key

    server.call(
        lambda: server.server.controller.cluster.set_group_configs(
            "g", {"share.auto.offset.reset": "earliest"}, "test"
        )
    )

    def produce(values: list[bytes]) -> None:
        records = client_batch([(None, v) for v in values], 0, (-1, -1, -1))
        answer = send(client, "ProduceRequest", {"Acks": -1, "TimeoutMs": 5000, "TransactionalId": None,
                      "TopicData": [{"Name": "jobs", "PartitionData": [{"Index": 0, "Records": records}]}]}, 9)  # fmt: skip
        assert answer["Responses"][0]["PartitionResponses"][0]["ErrorCode"] == 0

    def states() -> dict[str, Any]:
        return server.call(lambda: dict(server.server.controller.share.coordinator.states))

    old_id = setup(server, client, partitions=1)
    produce([b"a", b"b", b"c"])
    heartbeat(client, "g", "m1", 0, ["jobs"])
    acquired = fetch(client, "m1", 0, old_id)["Responses"][0]["Partitions"][0]["AcquiredRecords"]
    assert acquired == [{"FirstOffset": 0, "LastOffset": 2, "DeliveryCount": 1}]
    ack = [{"FirstOffset": 0, "LastOffset": 1, "AcknowledgeTypes": [1]}]
    assert fetch(client, "m1", 1, old_id, ack)["Responses"][0]["Partitions"][0]["AcknowledgeErrorCode"] == 0
    old_key = share_key("g", old_id, 0)
    assert states()[old_key].start_offset == 2

    deleted = send(
        client,
        "DeleteTopicsRequest",
        {"Topics": [{"Name": "jobs", "TopicId": ZERO_UUID}], "TimeoutMs": 5000},
        6,
    )
    assert deleted["Responses"][0]["ErrorCode"] == 0  # fmt: skip
    server.wait_until(lambda: old_key not in states(), timeout=TIMEOUT)
    assert server.call(lambda: [k for k in server.server.controller.share.partitions if k[1] == "jobs"]) == []
    time.sleep(0.3)  # the tombstone is durable: nothing writes the old state back
    assert not [k for k in states() if k.startswith("g:")]

    new_id = setup(server, client, partitions=1)
    assert new_id != old_id
    produce([b"d"])
    heartbeat(client, "g", "m1", 0, ["jobs"])
    again = fetch(client, "m1", 0, new_id)["Responses"][0]["Partitions"][0]["AcquiredRecords"]
    assert again == [{"FirstOffset": 0, "LastOffset": 0, "DeliveryCount": 1}]
    assert list(states()) == [share_key("g", new_id, 0)]
