"""The admin RPCs over real sockets with the project's client: every version, every broker listener."""

from __future__ import annotations

import asyncio
import socket
import struct
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from controller.embedded import ServerThread
from controller.placement import ClusterView, PlacementSpec, UsableBroker, load_placer
from controller.placement.builtin.java_random import SEED_KEY
from controller.placement.builtin.striped import CONTINUE_OFFSETS_KEY
from protocol import load_schemas
from protocol.client import KafkaClient
from protocol.framing import encode_request

SCHEMAS = load_schemas()
ZERO = uuid.UUID(int=0)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    """6 brokers in 3 racks (broker 5 fenced), the striped placer, seed 3."""
    brokers = [(i, f"rack-{i % 3}", i == 5) for i in range(6)]
    with ServerThread.start(placer="striped", brokers=brokers, seed=3) as started:
        yield started


@pytest.fixture
async def client(server: ServerThread) -> AsyncIterator[KafkaClient]:
    async with await KafkaClient.connect(server.bootstrap, request_timeout=10) as connected:
        yield connected


async def create(client: KafkaClient, *topics: dict, version: int | None = None, validate_only: bool = False):
    request = {"Topics": [{"Assignments": [], "Configs": [], **t} for t in topics], "timeoutMs": 5000}
    request["validateOnly"] = validate_only
    return (await client.send("CreateTopicsRequest", request, version=version))["Topics"]


async def metadata(client: KafkaClient, names: list[str] | None = None, version: int | None = None) -> dict:
    topics = None if names is None else [{"Name": n} for n in names]
    return await client.send(
        "MetadataRequest", {"Topics": topics, "AllowAutoTopicCreation": True}, version=version
    )


async def test_api_versions_advertise_the_admin_apis(client: KafkaClient):
    assert {k: client.api_versions[k] for k in (3, 19, 20, 37, 60)} == {
        3: (0, 13),
        19: (0, 7),
        20: (0, 6),
        37: (0, 3),
        60: (0, 2),
    }


async def test_every_listener_advertises_the_unfenced_brokers_and_answers_alike(server: ServerThread):
    addresses = server.brokers
    assert sorted(addresses) == [0, 1, 2, 3, 4, 5]  # the fenced broker listens too
    answers = []
    for bootstrap in [server.bootstrap, *addresses.values()]:
        async with await KafkaClient.connect(bootstrap) as c:
            response = await metadata(c, [])
        answers.append(response)
        brokers = {b["NodeId"]: (f"{b['Host']}:{b['Port']}", b["Rack"]) for b in response["Brokers"]}
        assert brokers == {i: (addresses[i], f"rack-{i % 3}") for i in range(5)}
        assert (response["ClusterId"], response["ControllerId"]) == ("placement-sim", 0)
    assert all(a == answers[0] for a in answers)


async def test_describe_cluster_lists_fenced_brokers_only_when_asked(
    client: KafkaClient, server: ServerThread
):
    plain = await client.send("DescribeClusterRequest", {}, version=1)
    assert [b["BrokerId"] for b in plain["Brokers"]] == [0, 1, 2, 3, 4]
    full = await client.send("DescribeClusterRequest", {"IncludeFencedBrokers": True}, version=2)
    assert [(b["BrokerId"], b["IsFenced"]) for b in full["Brokers"]] == [(i, i == 5) for i in range(6)]
    assert f"{full['Brokers'][5]['Host']}:{full['Brokers'][5]['Port']}" == server.brokers[5]
    assert (full["ErrorCode"], full["ClusterId"], full["ControllerId"]) == (0, "placement-sim", 0)
    wrong = await client.send("DescribeClusterRequest", {"EndpointType": 2}, version=1)
    assert wrong["ErrorCode"] == 114 and wrong["Brokers"] == [] and "endpoint type 2" in wrong["ErrorMessage"]


async def test_created_topics_show_in_metadata_with_leader_isr_and_offline_replicas(client: KafkaClient):
    [auto, manual] = await create(
        client,
        {"Name": "md-placed", "NumPartitions": 4, "ReplicationFactor": 3},
        {"Name": "md-manual", "NumPartitions": -1, "ReplicationFactor": -1,
         "Assignments": [{"PartitionIndex": 0, "BrokerIds": [5, 1]}, {"PartitionIndex": 1, "BrokerIds": [2, 5]}]},
    )  # fmt: skip
    assert (auto["ErrorCode"], auto["NumPartitions"], auto["ReplicationFactor"]) == (0, 4, 3)
    assert manual["ErrorCode"] == 0
    response = await metadata(client, ["md-placed", "md-manual"])
    placed, assigned = response["Topics"]
    assert placed["TopicId"] == auto["TopicId"] != ZERO
    for p in placed["Partitions"]:
        assert p["LeaderId"] == p["ReplicaNodes"][0] and p["IsrNodes"] == p["ReplicaNodes"]
        assert 5 not in p["ReplicaNodes"] and len({b % 3 for b in p["ReplicaNodes"]}) == 3  # one per rack
    assert [
        (p["LeaderId"], p["LeaderEpoch"], p["IsrNodes"], p["OfflineReplicas"]) for p in assigned["Partitions"]
    ] == [
        (1, 0, [1], [5]),
        (2, 0, [2], [5]),
    ]


async def test_unknown_topics_by_name_and_by_id(client: KafkaClient):
    response = await metadata(client, ["no-such-topic"])
    assert [(t["Name"], t["ErrorCode"], t["Partitions"]) for t in response["Topics"]] == [
        ("no-such-topic", 3, [])
    ]
    missing = uuid.UUID(int=99)
    by_id = await client.send("MetadataRequest", {"Topics": [{"TopicId": missing, "Name": None}]}, version=12)
    assert [(t["Name"], t["TopicId"], t["ErrorCode"]) for t in by_id["Topics"]] == [(None, missing, 100)]


async def test_topics_by_id_and_old_versions(client: KafkaClient):
    [created] = await create(
        client, {"Name": "md-old", "NumPartitions": 2, "ReplicationFactor": 2}, version=0
    )
    assert created == {"Name": "md-old", "ErrorCode": 0}
    current = await metadata(client, ["md-old"])
    topic_id = current["Topics"][0]["TopicId"]
    by_id = await client.send(
        "MetadataRequest", {"Topics": [{"TopicId": topic_id, "Name": None}]}, version=12
    )
    assert by_id["Topics"][0]["Name"] == "md-old"
    v0 = await metadata(client, [], version=0)  # v0: an empty list means every topic
    [old] = [t for t in v0["Topics"] if t["Name"] == "md-old"]
    assert [p["ReplicaNodes"] for p in old["Partitions"]] == [
        p["ReplicaNodes"] for p in current["Topics"][0]["Partitions"]
    ]
    v1 = await metadata(client, [], version=1)  # v1+: an empty list means none
    assert v1["Topics"] == []


async def test_create_topics_errors_per_topic_in_every_version(client: KafkaClient):
    for version in (1, 4, 7):
        topics = await create(
            client,
            {"Name": f"ct-ok-{version}", "NumPartitions": 1, "ReplicationFactor": 1},
            {"Name": "bad/name", "NumPartitions": 1, "ReplicationFactor": 1},
            {"Name": f"ct-rf-{version}", "NumPartitions": 1, "ReplicationFactor": 7},
            version=version,
        )
        assert [(t["Name"], t["ErrorCode"]) for t in topics] == [
            (f"ct-ok-{version}", 0),
            ("bad/name", 17),
            (f"ct-rf-{version}", 38),
        ]
        assert topics[2]["ErrorMessage"] == (
            "Unable to replicate the partition 7 time(s): The target replication factor of 7 cannot be reached "
            "because only 6 broker(s) are registered or some brokers have all their log directories cordoned."
        )


async def test_validate_only_creates_nothing(client: KafkaClient):
    [result] = await create(
        client, {"Name": "ct-dry", "NumPartitions": 3, "ReplicationFactor": 2}, validate_only=True
    )
    assert (result["ErrorCode"], result["NumPartitions"], result["ReplicationFactor"]) == (0, 3, 2)
    assert (await metadata(client, ["ct-dry"]))["Topics"][0]["ErrorCode"] == 3


async def test_create_partitions_and_delete_topics(client: KafkaClient):
    await create(client, {"Name": "cp-grow", "NumPartitions": 2, "ReplicationFactor": 2})
    request = {
        "Topics": [
            {"Name": "cp-grow", "Count": 4, "Assignments": None},
            {"Name": "cp-missing", "Count": 4, "Assignments": None},
        ],
        "TimeoutMs": 5000,
        "ValidateOnly": False,
    }
    results = (await client.send("CreatePartitionsRequest", request, version=0))["Results"]
    assert [(r["Name"], r["ErrorCode"]) for r in results] == [("cp-grow", 0), ("cp-missing", 3)]
    manual = {"Topics": [{"Name": "cp-grow", "Count": 5, "Assignments": [{"BrokerIds": [4, 9]}]}],
              "TimeoutMs": 5000, "ValidateOnly": False}  # fmt: skip
    [bad] = (await client.send("CreatePartitionsRequest", manual, version=3))["Results"]
    assert (bad["ErrorCode"], bad["ErrorMessage"]) == (39, "invalid spu id: 9")
    partitions = (await metadata(client, ["cp-grow"]))["Topics"][0]["Partitions"]
    assert [p["PartitionIndex"] for p in partitions] == [0, 1, 2, 3]

    old = await client.send(
        "DeleteTopicsRequest", {"TopicNames": ["cp-grow", "cp-missing"], "TimeoutMs": 5000}, version=1
    )
    assert [(r["Name"], r["ErrorCode"]) for r in old["Responses"]] == [("cp-grow", 0), ("cp-missing", 3)]
    [created] = await create(client, {"Name": "del-by-id", "NumPartitions": 1, "ReplicationFactor": 1})
    new = await client.send("DeleteTopicsRequest", {"Topics": [{"Name": None, "TopicId": created["TopicId"]}],
                                                    "TimeoutMs": 5000}, version=6)  # fmt: skip
    assert [(r["Name"], r["TopicId"], r["ErrorCode"]) for r in new["Responses"]] == [
        ("del-by-id", created["TopicId"], 0)
    ]
    assert (await metadata(client, ["del-by-id"]))["Topics"][0]["ErrorCode"] == 3


async def test_create_partitions_continues_striped_offsets_only_when_asked(placement_sim_factory):
    """``simulator.placer.striped.continue.offsets``: CreatePartitions places like the striped placer
    in-process that saw the topic's first partitions (KAFKA-14437's proposal when true, Kafka's fresh
    offsets when false)."""
    brokers = [(i, f"rack-{i % 3}") for i in range(6)]
    cluster = tuple(UsableBroker(i, f"rack-{i % 3}", False) for i in range(6))
    grown: dict[str, list[list[int]]] = {}
    for flag in ("true", "false"):
        server = placement_sim_factory(brokers=brokers, seed=5, properties={CONTINUE_OFFSETS_KEY: flag})
        async with await KafkaClient.connect(server.bootstrap) as client:
            await create(client, {"Name": "orders", "NumPartitions": 2, "ReplicationFactor": 3})
            grow = {"Topics": [{"Name": "orders", "Count": 5, "Assignments": None}], "TimeoutMs": 5000}
            [result] = (await client.send("CreatePartitionsRequest", grow))["Results"]
            assert result["ErrorCode"] == 0
            partitions = (await metadata(client, ["orders"]))["Topics"][0]["Partitions"]
        grown[flag] = [p["ReplicaNodes"] for p in sorted(partitions, key=lambda p: p["PartitionIndex"])]
        placer = load_placer("striped", {SEED_KEY: "5", CONTINUE_OFFSETS_KEY: flag})
        first = placer.place(PlacementSpec(0, 2, 3, topic="orders"), ClusterView(cluster))
        assignments = {("orders", p): tuple(replicas) for p, replicas in enumerate(first)}
        more = placer.place(PlacementSpec(2, 3, 3, topic="orders"), ClusterView(cluster, assignments))
        assert grown[flag] == first + more
    assert grown["true"][:2] == grown["false"][:2]
    assert grown["true"][2:] != grown["false"][2:]


def test_bytes_after_a_request_body_are_ignored(server: ServerThread):
    """librdkafka sends three stray bytes after some Metadata bodies; Kafka ignores them, so do we."""
    body = SCHEMAS.request(3).encode({"Topics": None}, 12) + b"\x01\x00\x00"
    frame = encode_request(SCHEMAS, 3, 12, 7, "raw", body)
    host, port = server.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(frame)
        size = struct.unpack(">i", _recv(sock, 4))[0]
        response = _recv(sock, size)
    assert struct.unpack_from(">i", response)[0] == 7  # the correlation id: answered, not closed
    assert server.stats["requests:trailing bytes"] >= 1


def _recv(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "the server closed the connection"
        data += chunk
    return data


def test_auto_creation_when_configured(placement_sim_factory):
    server = placement_sim_factory(properties={"auto.create.topics.enable": "true", "num.partitions": "3",
                                               "default.replication.factor": "2"})  # fmt: skip

    async def ask(allow: bool) -> dict:
        async with await KafkaClient.connect(server.bootstrap) as c:
            request = {"Topics": [{"Name": "auto-topic"}], "AllowAutoTopicCreation": allow}
            return await c.send("MetadataRequest", request, version=9)

    refused = asyncio.run(ask(False))
    assert refused["Topics"][0]["ErrorCode"] == 3
    created = asyncio.run(ask(True))
    [topic] = created["Topics"]
    assert topic["ErrorCode"] == 0 and len(topic["Partitions"]) == 3
    assert {len(p["ReplicaNodes"]) for p in topic["Partitions"]} == {2}
