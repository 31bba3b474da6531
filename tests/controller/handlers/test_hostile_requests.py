"""Requests a hostile or careless client sends: each is answered, with Kafka's error where Kafka has one,
and what the answer does not acknowledge is not created."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from protocol.client import KafkaClient
from tests.support.placers import placer_file as placer
from tests.support.rawwire import SCHEMAS, raw_connect, read_response, request_frame

POLICY_VIOLATION = 44
LIMIT = "above the limit of 20 (simulator.max.partitions)."


def ask(bootstrap: str, api_key: int, version: int, data: dict) -> dict:
    """One request on a connection of its own; the decoded answer (the connection must not close)."""
    sock = raw_connect(bootstrap, timeout=30)
    try:
        sock.sendall(request_frame(api_key, version, data, correlation_id=7))
        frame = read_response(sock)
    finally:
        sock.close()
    assert frame is not None, "the server closed the connection instead of answering"
    assert int.from_bytes(frame[:4], "big") == 7
    flexible = SCHEMAS.request(api_key).is_flexible(version) and api_key != 18
    return SCHEMAS.response(api_key).decode(frame[5 if flexible else 4 :], version)


def create_topics(bootstrap: str, topics: list[dict], version: int = 5, timeout_ms: int = 5000) -> list[dict]:
    request = {
        "Topics": [
            {"Assignments": [], "Configs": [], "NumPartitions": -1, "ReplicationFactor": -1, **t}
            for t in topics
        ],
        "timeoutMs": timeout_ms,
        "validateOnly": False,
    }
    return ask(bootstrap, 19, version, request)["Topics"]


def topic_names(bootstrap: str) -> set[str]:
    return {t["Name"] for t in ask(bootstrap, 3, 12, {"Topics": None})["Topics"]}


# ------------------------------------------------------------------------------ the cluster's partition limit


@pytest.fixture
def limited(placement_sim_factory):
    """A server that holds at most 20 partitions, with a topic of 2 already."""
    server = placement_sim_factory(
        properties={"simulator.max.partitions": "20", "auto.create.topics.enable": "true"}
    )
    assert (
        create_topics(server.bootstrap, [{"Name": "two", "NumPartitions": 2, "ReplicationFactor": 2}])[0][
            "ErrorCode"
        ]
        == 0
    )
    return server


def test_create_topics_with_counts_past_the_partition_limit(limited):
    [answer] = create_topics(
        limited.bootstrap, [{"Name": "big", "NumPartitions": 19, "ReplicationFactor": 1}]
    )
    assert (answer["ErrorCode"], answer["ErrorMessage"]) == (
        POLICY_VIOLATION,
        f"19 more partition(s) would make 21 in the cluster, {LIMIT}",
    )
    [fits] = create_topics(limited.bootstrap, [{"Name": "fits", "NumPartitions": 18, "ReplicationFactor": 1}])
    assert fits["ErrorCode"] == 0
    assert topic_names(limited.bootstrap) == {"two", "fits"}


def test_create_topics_with_manual_assignments_past_the_partition_limit(limited):
    assignments = [{"PartitionIndex": i, "BrokerIds": [i % 6]} for i in range(19)]
    [answer] = create_topics(limited.bootstrap, [{"Name": "manual", "Assignments": assignments}])
    assert (answer["ErrorCode"], answer["ErrorMessage"]) == (
        POLICY_VIOLATION,
        f"19 more partition(s) would make 21 in the cluster, {LIMIT}",
    )
    assert topic_names(limited.bootstrap) == {"two"}


@pytest.mark.parametrize("manual", [False, True], ids=["placed", "manual"])
def test_create_partitions_past_the_partition_limit(limited, manual):
    assignments = [{"BrokerIds": [i % 6, (i + 1) % 6]} for i in range(19)] if manual else None
    request = {"Topics": [{"Name": "two", "Count": 21, "Assignments": assignments}], "TimeoutMs": 5000}
    [answer] = ask(limited.bootstrap, 37, 1, {**request, "ValidateOnly": False})["Results"]
    assert (answer["ErrorCode"], answer["ErrorMessage"]) == (
        POLICY_VIOLATION,
        f"19 more partition(s) would make 21 in the cluster, {LIMIT}",
    )
    [topic] = ask(limited.bootstrap, 3, 12, {"Topics": [{"Name": "two", "TopicId": uuid.UUID(int=0)}]})[
        "Topics"
    ]
    assert len(topic["Partitions"]) == 2


def test_metadata_auto_creation_past_the_partition_limit(limited):
    # num.partitions is 1: 18 new topics fit, the last two do not.
    names = [{"Name": f"auto-{i}"} for i in range(20)]
    answer = ask(limited.bootstrap, 3, 9, {"Topics": names, "AllowAutoTopicCreation": True})
    assert [t["ErrorCode"] for t in answer["Topics"]] == [0] * 18 + [POLICY_VIOLATION] * 2
    assert len(topic_names(limited.bootstrap)) == 19


def test_create_replica_placement_creates_nothing_so_the_partition_limit_does_not_apply(limited):
    answer = ask(limited.bootstrap, 68, 0, {"NumPartitions": 100, "ReplicationFactor": 1})
    assert answer["ErrorCode"] == 0 and len(answer["ReplicaPlacement"]) == 100
    assert topic_names(limited.bootstrap) == {"two"}


# ------------------------------------------------------------------------------ answers to odd requests


def test_a_six_thousand_entry_node_id_list_is_answered(placement_sim):
    answer = ask(
        placement_sim.bootstrap,
        68,
        0,
        {"NumPartitions": 3, "ReplicationFactor": 2, "NodeId": list(range(6000))},
    )
    assert answer["ErrorCode"] == 42  # INVALID_REQUEST, naming the unknown ids without listing them all
    assert answer["ErrorMessage"].startswith("NodeId names unregistered broker id(s) [6, 7, 8,")
    assert answer["ErrorMessage"].endswith("... 5974 more].") and len(answer["ErrorMessage"]) < 300


LONG = "n" * 32_700


@pytest.mark.parametrize("version", [2, 4, 7])
def test_a_32700_character_topic_name_in_create_topics_is_answered(placement_sim, version):
    [answer] = create_topics(
        placement_sim.bootstrap, [{"Name": LONG, "NumPartitions": 1, "ReplicationFactor": 1}], version
    )
    assert (answer["Name"], answer["ErrorCode"]) == (LONG, 17)  # INVALID_TOPIC_EXCEPTION
    # Kafka's message names the topic: cut to what the string field carries.
    assert answer["ErrorMessage"].startswith(f"Topic name is invalid: the length of '{LONG[:1000]}")
    assert topic_names(placement_sim.bootstrap) == set()


@pytest.mark.parametrize("version", [1, 9, 12])
def test_a_32700_character_topic_name_in_metadata_is_answered(placement_sim_factory, version):
    server = placement_sim_factory(properties={"auto.create.topics.enable": "true"})
    answer = ask(server.bootstrap, 3, version, {"Topics": [{"Name": LONG}], "AllowAutoTopicCreation": True})
    assert [(t["Name"], t["ErrorCode"]) for t in answer["Topics"]] == [(LONG, 17)]


def test_a_32700_character_topic_name_in_create_replica_placement_is_answered(placement_sim):
    answer = ask(
        placement_sim.bootstrap, 68, 0, {"NumPartitions": 2, "ReplicationFactor": 2, "TopicName": LONG}
    )
    assert answer["ErrorCode"] == 0 and len(answer["ReplicaPlacement"]) == 2


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_and_v11_asking_by_topic_id_are_refused_as_kafka_does(placement_sim_factory, version):
    server = placement_sim_factory(properties={"auto.create.topics.enable": "true"})
    create_topics(server.bootstrap, [{"Name": "known", "NumPartitions": 1, "ReplicationFactor": 1}])
    [known] = ask(server.bootstrap, 3, 12, {"Topics": None})["Topics"]
    topics = [
        {"Name": None, "TopicId": known["TopicId"]},
        {"Name": "other", "TopicId": uuid.UUID(int=5)},
        {"Name": "known", "TopicId": uuid.UUID(int=0)},
    ]
    answer = ask(server.bootstrap, 3, version, {"Topics": topics, "AllowAutoTopicCreation": True})
    # Kafka refuses the whole request (no name, or a topic id, before v12): its error answer, no brokers,
    # every topic INVALID_REQUEST, nothing auto-created.
    assert [(t["Name"], t["ErrorCode"], len(t["Partitions"])) for t in answer["Topics"]] == [
        ("", 42, 0),
        ("other", 42, 0),
        ("known", 42, 0),
    ]
    assert (answer["Brokers"], answer["ClusterId"], answer["ControllerId"]) == ([], None, -1)
    assert topic_names(server.bootstrap) == {"known"}


# ------------------------------------------------------------------------------ one deadline per request


def test_one_deadline_covers_every_topic_of_a_request(placement_sim_factory):
    """Ten topics whose placer takes half a second each, timeoutMs 1.2 s: the first two are created, the
    rest time out by the same deadline (10 x 0.5 s without it), and only what was acknowledged exists."""
    server = placement_sim_factory(placer=placer("HalfSecond"))
    started = time.monotonic()
    answers = create_topics(
        server.bootstrap,
        [{"Name": f"slow-{i}", "NumPartitions": 1, "ReplicationFactor": 1} for i in range(10)],
        timeout_ms=1200,
    )
    took = time.monotonic() - started
    codes = [t["ErrorCode"] for t in answers]
    assert codes[:2] == [0, 0] and codes[2:] == [7] * 8, codes  # REQUEST_TIMED_OUT
    assert took < 4.5, f"took {took:.1f} s"
    assert topic_names(server.bootstrap) == {"slow-0", "slow-1"}


# ------------------------------------------------------------------------------ nothing unacknowledged


async def test_create_topics_abandoned_by_its_client_creates_nothing(placement_sim_factory, tmp_path):
    """The client leaves while the second of three topics is being placed: the first, already made, is
    not kept, since no answer acknowledged it."""
    server = placement_sim_factory(
        placer=placer("SlowOnce"), properties={"test.slow.marker": str(tmp_path / "slept")}
    )
    leaving = await KafkaClient.connect(server.bootstrap)
    topics = [
        {"Name": name, "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [], "Configs": []}
        for name in ("first", "slow", "third")
    ]
    request = {"Topics": topics, "timeoutMs": 120_000, "validateOnly": False}
    pending = asyncio.ensure_future(leaving.send("CreateTopicsRequest", request, version=5))
    await asyncio.sleep(0.8)
    await leaving.close()
    with pytest.raises(Exception):  # noqa: B017 - the client's own error for a closed connection
        await pending
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and server.stats["closed:client"] == 0:
        await asyncio.sleep(0.05)
    names = await asyncio.to_thread(topic_names, server.bootstrap)
    assert names == set()
    # The placer is free again for the next client.
    async with await KafkaClient.connect(server.bootstrap, request_timeout=60) as client:
        answer = await client.send("CreateTopicsRequest", {**request, "Topics": topics[:1]}, version=5)
    assert answer["Topics"][0]["ErrorCode"] == 0
