"""The authorizer over the KIP-848 consumer group and KIP-932 share group APIs, over the wire, as Kafka's
KafkaApis checks them, for an allowed and a refused principal over SASL PLAIN: ``alice`` may READ (and
DELETE) the group ``g`` and READ the topic ``t``; ``bob`` has no ACL; nobody but the super user ``admin``
has one on the topic ``secret`` (``allow.everyone.if.no.acl.found=false``)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controller.embedded import ServerThread
from protocol.client import BlockingClient
from protocol.codes import ErrorCode

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
TOPIC, GROUP = 2, 3
READ, DELETE, DESCRIBE, ALLOW, LITERAL = 3, 6, 8, 3, 3
LIBRDKAFKA = ("librdkafka", "2.12.0")
TIMEOUT = 10.0
G_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
T_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
PROPS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "allow.everyone.if.no.acl.found": "false",
    "group.consumer.assignment.interval.ms": "0",
    "group.initial.rebalance.delay.ms": "0",
}


def allow(kind: int, name: str, op: int) -> dict[str, Any]:
    return {
        "ResourceType": kind,
        "ResourceName": name,
        "ResourcePatternType": LITERAL,
        "Principal": "User:alice",
        "Host": "*",
        "Operation": op,
        "PermissionType": ALLOW,
    }


class Cluster:
    def __init__(self, server: ServerThread) -> None:
        self.server = server
        self.clients: list[BlockingClient] = []

    def login(self, user: str) -> BlockingClient:
        """A connection authenticated as ``user`` that speaks Kafka's key space (apiKey 68)."""
        c = BlockingClient.connect(self.server.bootstrap, software=LIBRDKAFKA, request_timeout=TIMEOUT)
        self.clients.append(c)
        assert c.send("SaslHandshakeRequest", {"Mechanism": "PLAIN"}, version=1)["ErrorCode"] == 0
        auth_bytes = f"\0{user}\0{USERS[user]}".encode()
        assert c.send("SaslAuthenticateRequest", {"AuthBytes": auth_bytes}, version=2)["ErrorCode"] == 0
        return c


@pytest.fixture
def cluster(placement_sim_factory: Callable[..., ServerThread]) -> Iterator[Cluster]:
    server = placement_sim_factory(security="SASL_PLAINTEXT", users=USERS, properties=PROPS)
    cluster = Cluster(server)
    admin = cluster.login("admin")
    created = admin.send(
        "CreateAclsRequest",
        {"Creations": [allow(GROUP, "g", READ), allow(GROUP, "g", DELETE), allow(TOPIC, "t", READ)]},
    )
    assert [r["ErrorCode"] for r in created["Results"]] == [0, 0, 0]
    for name in ("t", "secret"):
        server.create_topic(name, 1, 1)
    deadline = time.monotonic() + TIMEOUT
    while True:  # the group coordinator's topic is made at the first FindCoordinator
        found = admin.send("FindCoordinatorRequest", {"KeyType": 0, "CoordinatorKeys": ["g"]}, version=6)
        if found["Coordinators"][0]["ErrorCode"] == ErrorCode.NONE:
            break
        assert time.monotonic() < deadline, found
        time.sleep(0.05)
    yield cluster
    for c in cluster.clients:
        c.close()


def join(c: BlockingClient, api: str, topics: list[str], member: str = "m" * 22) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "GroupId": "g",
        "MemberId": member,
        "MemberEpoch": 0,
        "SubscribedTopicNames": topics,
    }
    if api == "ConsumerGroupHeartbeatRequest":
        fields.update(RebalanceTimeoutMs=30000, TopicPartitions=[])
    return c.send(api, fields, version=1)


def topic_ids(c: BlockingClient) -> dict[str, uuid.UUID]:
    return {
        t["Name"]: t["TopicId"] for t in c.send("MetadataRequest", {"Topics": None}, version=12)["Topics"]
    }


@pytest.mark.parametrize("api", ["ConsumerGroupHeartbeatRequest", "ShareGroupHeartbeatRequest"])
def test_heartbeats_need_read_on_the_group_and_describe_on_the_topics(cluster: Cluster, api: str):
    alice, bob = cluster.login("alice"), cluster.login("bob")
    refused = join(bob, api, ["t"])
    assert (refused["ErrorCode"], refused["ErrorMessage"]) == (G_DENIED, "Group authorization failed.")
    assert join(alice, api, ["t", "secret"])["ErrorCode"] == T_DENIED
    joined = join(alice, api, ["t"])
    assert joined["ErrorCode"] == ErrorCode.NONE, joined


@pytest.mark.parametrize(
    ("api", "heartbeat"),
    [
        ("ConsumerGroupDescribeRequest", "ConsumerGroupHeartbeatRequest"),
        ("ShareGroupDescribeRequest", "ShareGroupHeartbeatRequest"),
    ],
)
def test_describes_need_describe_on_the_group_and_on_the_assigned_topics(
    cluster: Cluster, api: str, heartbeat: str
):
    admin, alice, bob = cluster.login("admin"), cluster.login("alice"), cluster.login("bob")
    assert join(alice, heartbeat, ["t"])["ErrorCode"] == ErrorCode.NONE
    asked = {"GroupIds": ["g"], "IncludeAuthorizedOperations": True}
    (group,) = alice.send(api, asked, version=1)["Groups"]
    assert group["ErrorCode"] == ErrorCode.NONE and len(group["Members"]) == 1
    assert group["AuthorizedOperations"] == (1 << READ) | (1 << DELETE) | (1 << DESCRIBE)
    (refused,) = bob.send(api, asked, version=1)["Groups"]
    assert (refused["ErrorCode"], refused["Members"]) == (G_DENIED, [])
    # Once a member is assigned a topic alice may not describe, the group is refused to her, not to admin.
    assert join(admin, heartbeat, ["secret"], member="a" * 22)["ErrorCode"] == ErrorCode.NONE
    deadline = time.monotonic() + TIMEOUT
    while True:
        (seen,) = admin.send(api, asked, version=1)["Groups"]
        names = {t["TopicName"] for m in seen["Members"] for t in m["Assignment"]["TopicPartitions"]}
        if "secret" in names:
            break
        assert time.monotonic() < deadline, seen
        join(admin, heartbeat, ["secret"], member="a" * 22) if heartbeat.startswith("Share") else None
        time.sleep(0.05)
    (hidden,) = alice.send(api, asked, version=1)["Groups"]
    assert (hidden["ErrorCode"], hidden["ErrorMessage"], hidden["Members"]) == (
        T_DENIED,
        "The group has described topic(s) that the client is not authorized to describe.",
        [],
    )


def fetch_request(member: str, epoch: int, ids: dict[str, uuid.UUID]) -> dict[str, Any]:
    return {
        "GroupId": "g",
        "MemberId": member,
        "ShareSessionEpoch": epoch,
        "MaxWaitMs": 0,
        "MinBytes": 0,
        "MaxBytes": 1 << 20,
        "MaxRecords": 10,
        "BatchSize": 10,
        "Topics": [
            {"TopicId": ids[name], "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": []}]}
            for name in ("t", "secret")
        ],
        "ForgottenTopicsData": [],
    }


def test_share_fetch_and_acknowledge_need_read_on_the_group_and_the_topics(cluster: Cluster):
    alice, bob = cluster.login("alice"), cluster.login("bob")
    ids = topic_ids(cluster.login("admin"))
    member = join(alice, "ShareGroupHeartbeatRequest", ["t"])["MemberId"]
    refused = bob.send("ShareFetchRequest", fetch_request(member, 0, ids), version=1)
    assert (refused["ErrorCode"], refused["Responses"]) == (G_DENIED, [])
    fetched = alice.send("ShareFetchRequest", fetch_request(member, 0, ids), version=1)
    assert fetched["ErrorCode"] == ErrorCode.NONE, fetched
    codes = {r["TopicId"]: [p["ErrorCode"] for p in r["Partitions"]] for r in fetched["Responses"]}
    assert codes[ids["secret"]] == [T_DENIED]
    assert codes.get(ids["t"], [ErrorCode.NONE]) == [ErrorCode.NONE]
    ack = {"FirstOffset": 0, "LastOffset": 0, "AcknowledgeTypes": [1]}
    request = {
        "GroupId": "g",
        "MemberId": member,
        "ShareSessionEpoch": 1,
        "Topics": [
            {"TopicId": ids["secret"], "Partitions": [{"PartitionIndex": 0, "AcknowledgementBatches": [ack]}]}
        ],
    }
    assert bob.send("ShareAcknowledgeRequest", request, version=1)["ErrorCode"] == G_DENIED
    acknowledged = alice.send("ShareAcknowledgeRequest", request, version=1)
    assert acknowledged["ErrorCode"] == ErrorCode.NONE, acknowledged
    assert [p["ErrorCode"] for r in acknowledged["Responses"] for p in r["Partitions"]] == [T_DENIED]


def test_share_group_offsets_need_the_group_and_read_on_the_topics(cluster: Cluster):
    alice, bob = cluster.login("alice"), cluster.login("bob")
    topics = [{"TopicName": "secret", "Partitions": [0]}, {"TopicName": "t", "Partitions": [0]}]
    asked = {"Groups": [{"GroupId": "g", "Topics": topics}]}
    (refused,) = bob.send("DescribeShareGroupOffsetsRequest", asked, version=1)["Groups"]
    assert refused["ErrorCode"] == G_DENIED
    (described,) = alice.send("DescribeShareGroupOffsetsRequest", asked, version=1)["Groups"]
    codes = {t["TopicName"]: [p["ErrorCode"] for p in t["Partitions"]] for t in described["Topics"]}
    assert (described["ErrorCode"], codes) == (ErrorCode.NONE, {"secret": [T_DENIED], "t": [ErrorCode.NONE]})

    alter = {
        "GroupId": "g",
        "Topics": [
            {"TopicName": name, "Partitions": [{"PartitionIndex": 0, "StartOffset": 0}]}
            for name in ("secret", "t")
        ],
    }
    assert bob.send("AlterShareGroupOffsetsRequest", alter, version=0)["ErrorCode"] == G_DENIED
    altered = alice.send("AlterShareGroupOffsetsRequest", alter, version=0)
    codes = {r["TopicName"]: [p["ErrorCode"] for p in r["Partitions"]] for r in altered["Responses"]}
    assert (altered["ErrorCode"], codes) == (ErrorCode.NONE, {"secret": [T_DENIED], "t": [ErrorCode.NONE]})

    delete = {"GroupId": "g", "Topics": [{"TopicName": "secret"}, {"TopicName": "t"}]}
    assert bob.send("DeleteShareGroupOffsetsRequest", delete, version=0)["ErrorCode"] == G_DENIED
    deleted = alice.send("DeleteShareGroupOffsetsRequest", delete, version=0)
    codes = {r["TopicName"]: r["ErrorCode"] for r in deleted["Responses"]}
    assert (deleted["ErrorCode"], codes) == (ErrorCode.NONE, {"secret": T_DENIED, "t": ErrorCode.NONE})


def test_find_coordinator_checks_groups_and_share_coordinator_keys(cluster: Cluster):
    admin, alice, bob = cluster.login("admin"), cluster.login("alice"), cluster.login("bob")
    groups = {"KeyType": 0, "CoordinatorKeys": ["g"]}
    assert alice.send("FindCoordinatorRequest", groups, version=6)["Coordinators"][0]["ErrorCode"] == 0
    assert bob.send("FindCoordinatorRequest", groups, version=6)["Coordinators"][0]["ErrorCode"] == G_DENIED
    key = f"g:{topic_ids(admin)['t']}:0"
    share = {"KeyType": 2, "CoordinatorKeys": [key]}
    (refused,) = alice.send("FindCoordinatorRequest", share, version=6)["Coordinators"]
    assert refused["ErrorCode"] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    (allowed,) = admin.send("FindCoordinatorRequest", share, version=6)["Coordinators"]
    assert allowed["ErrorCode"] != ErrorCode.CLUSTER_AUTHORIZATION_FAILED
