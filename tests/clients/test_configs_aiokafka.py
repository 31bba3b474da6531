"""aiokafka's AIOKafkaAdminClient reads and changes configs on the simulator: create_topics with configs
(INVALID_CONFIG with Kafka's message), describe_configs with sources and synonyms, alter_configs on topics
and brokers (the legacy request: it replaces a resource's configs), and an altered max.message.bytes
refusing a bigger record at the next Produce of aiokafka's producer.

aiokafka 0.14 has no incremental_alter_configs: its admin client sends AlterConfigs (33) only. Its
describe_configs and alter_configs send a topic's resources to any broker and a broker's to that broker.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import MessageSizeTooLargeError

from controller.embedded import ServerThread
from protocol.codes import ErrorCode
from tests.clients.conftest import WireLog

CLIENT = "aiokafka admin"
CLIENT_ID = "placement-sim-tests"

#: DescribeConfigs' ConfigSource values (Kafka's DescribeConfigsResponse.ConfigSource).
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER, STATIC_BROKER, DEFAULT = 1, 2, 3, 4, 5


@pytest.fixture(scope="module")
def server(wire_log: WireLog) -> Iterator[ServerThread]:
    """Three brokers on a virtual clock, log.retention.hours=48 in server.properties."""
    with ServerThread.start(
        brokers=[(0, "a"), (1, "b"), (2, "c")],
        clock="virtual",
        seed=2,
        properties={"log.retention.hours": "48", "auto.leader.rebalance.enable": "false"},
    ) as started:
        yield started


async def admin_for(server: ServerThread) -> AIOKafkaAdminClient:
    admin = AIOKafkaAdminClient(
        bootstrap_servers=server.bootstrap, client_id=CLIENT_ID, request_timeout_ms=5000
    )
    await admin.start()
    return admin


def topic_configs(server: ServerThread, topic: str) -> dict[str, str]:
    """The topic's own configs, as the cluster keeps them."""
    return server.call(lambda: dict(server.server.controller.cluster.topics[topic].configs))


async def describe(
    admin: AIOKafkaAdminClient, kind: ConfigResourceType, name: str, keys: list[str] | None = None
) -> dict[str, dict]:
    """One resource's config entries by name, with synonyms."""
    wanted = None if keys is None else dict.fromkeys(keys)
    [response] = await admin.describe_configs([ConfigResource(kind, name, wanted)], include_synonyms=True)
    [resource] = response.to_object()["resources"]
    assert (resource["error_code"], resource["error_message"]) == (0, "")  # Kafka answers an empty message
    return {e["config_names"]: e for e in resource["config_entries"]}


def resources(responses: list) -> list[tuple[int, str, int, str | None]]:
    """(resource type, name, error code, message) of every resource AlterConfigs answered."""
    return [
        (r["resource_type"], r["resource_name"], r["error_code"], r["error_message"])
        for response in responses
        for r in response.to_object()["resources"]
    ]


async def test_create_topics_with_configs_and_invalid_ones(server: ServerThread) -> None:
    admin = await admin_for(server)
    try:
        response = await admin.create_topics(
            [
                NewTopic("ak-cfg", 1, 3, topic_configs={"min.insync.replicas": "2"}),
                NewTopic("ak-cfg-bad", 1, 3, topic_configs={"retention.ms": "abc"}),
                NewTopic("ak-cfg-unknown", 1, 3, topic_configs={"foo.bar": "x"}),
            ]
        )
    finally:
        await admin.close()
    assert [
        (t["topic"], t["error_code"], t["error_message"]) for t in response.to_object()["topic_errors"]
    ] == [
        ("ak-cfg", 0, None),
        (
            "ak-cfg-bad",
            ErrorCode.INVALID_CONFIG,
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        ("ak-cfg-unknown", ErrorCode.INVALID_CONFIG, "Unknown topic config name: foo.bar"),
    ]
    assert topic_configs(server, "ak-cfg") == {"min.insync.replicas": "2"}
    created = server.call(lambda: sorted(server.server.controller.cluster.topics))
    assert "ak-cfg" in created and "ak-cfg-bad" not in created and "ak-cfg-unknown" not in created


async def test_describe_configs_shows_sources_and_synonyms(server: ServerThread) -> None:
    admin = await admin_for(server)
    try:
        every = await describe(admin, ConfigResourceType.TOPIC, "ak-cfg")
        some = await describe(
            admin, ConfigResourceType.TOPIC, "ak-cfg", ["retention.ms", "max.message.bytes"]
        )
        broker = await describe(admin, ConfigResourceType.BROKER, "1", ["log.retention.hours", "listeners"])
    finally:
        await admin.close()
    assert len(every) == 37

    def shown(entry: dict) -> tuple:
        synonyms = [
            (s["config_name"], s["config_value"], s["config_source"]) for s in entry["config_synonyms"]
        ]
        return entry["config_value"], entry["config_source"], entry["read_only"], synonyms

    assert shown(every["min.insync.replicas"]) == (
        "2",
        DYNAMIC_TOPIC,
        False,
        [
            ("min.insync.replicas", "2", DYNAMIC_TOPIC),
            # KIP-966 on (Kafka 4.1's default): the controller's cluster-level value
            ("min.insync.replicas", "1", DYNAMIC_DEFAULT_BROKER),
            ("min.insync.replicas", "1", DEFAULT),
        ],
    )
    assert shown(every["retention.ms"]) == (
        str(48 * 3_600_000),
        STATIC_BROKER,
        False,
        [("log.retention.hours", "48", STATIC_BROKER), ("log.retention.hours", "168", DEFAULT)],
    )
    assert sorted(some) == ["max.message.bytes", "retention.ms"]
    assert shown(some["max.message.bytes"]) == (
        "1048588",
        DEFAULT,
        False,
        [("message.max.bytes", "1048588", DEFAULT)],
    )
    assert sorted(broker) == ["listeners", "log.retention.hours"]
    assert shown(broker["log.retention.hours"]) == (
        "48",
        STATIC_BROKER,
        True,  # read-only: Kafka changes log.retention.ms at run time, not this synonym
        [("log.retention.hours", "48", STATIC_BROKER), ("log.retention.hours", "168", DEFAULT)],
    )
    assert broker["listeners"]["read_only"] is True


async def produce(server: ServerThread, topic: str, values: list[bytes]) -> list[int | type[Exception]]:
    """Each value sent alone (acks=1): its offset, or the class of the error the producer raised."""
    producer = AIOKafkaProducer(
        bootstrap_servers=server.bootstrap, client_id=CLIENT_ID, acks=1, request_timeout_ms=5000
    )
    await producer.start()
    answers: list[int | type[Exception]] = []
    try:
        for value in values:
            try:
                answers.append((await producer.send_and_wait(topic, value, partition=0)).offset)
            except MessageSizeTooLargeError as error:
                answers.append(type(error))
    finally:
        await producer.stop()
    return answers


async def test_alter_configs_replaces_a_topics_configs_and_the_next_produce_obeys_them(
    server: ServerThread,
) -> None:
    big, small = b"x" * 500, b"y" * 50
    assert await produce(server, "ak-cfg", [big]) == [0]
    admin = await admin_for(server)
    try:
        change = ConfigResource(ConfigResourceType.TOPIC, "ak-cfg", {"max.message.bytes": "200"})
        assert resources(await admin.alter_configs([change])) == [(2, "ak-cfg", 0, None)]
        # AlterConfigs replaces: min.insync.replicas, left out, is back to its default.
        assert topic_configs(server, "ak-cfg") == {"max.message.bytes": "200"}
        described = await describe(admin, ConfigResourceType.TOPIC, "ak-cfg", ["max.message.bytes"])
        assert (
            described["max.message.bytes"]["config_value"],
            described["max.message.bytes"]["config_source"],
        ) == (
            "200",
            DYNAMIC_TOPIC,
        )
        bad = ConfigResource(ConfigResourceType.TOPIC, "ak-cfg", {"retention.ms": "soon"})
        assert resources(await admin.alter_configs([bad])) == [
            (
                2,
                "ak-cfg",
                ErrorCode.INVALID_CONFIG,
                "Invalid value soon for configuration retention.ms: Not a number of type LONG",
            )
        ]
        assert topic_configs(server, "ak-cfg") == {"max.message.bytes": "200"}  # unchanged
    finally:
        await admin.close()
    # The record batch of 500 bytes is over 200 now; one of 50 is not.
    assert await produce(server, "ak-cfg", [big, small]) == [MessageSizeTooLargeError, 1]


async def test_alter_configs_on_a_broker(server: ServerThread) -> None:
    admin = await admin_for(server)
    try:
        change = ConfigResource(ConfigResourceType.BROKER, "0", {"log.retention.ms": "5400000"})
        # aiokafka sends a (here empty) topic request to any broker, and each broker's resources to it.
        assert resources(await admin.alter_configs([change])) == [(4, "0", 0, None)]
        assert server.call(server.server.controller.cluster.broker_configs, 0) == {
            "log.retention.ms": "5400000"
        }
        described = await describe(admin, ConfigResourceType.BROKER, "0", ["log.retention.ms"])
        entry = described["log.retention.ms"]
        assert (entry["config_value"], entry["config_source"]) == ("5400000", DYNAMIC_BROKER)
        static = ConfigResource(ConfigResourceType.BROKER, "0", {"listeners": "PLAINTEXT://:1"})
        assert resources(await admin.alter_configs([static])) == [
            (4, "0", ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [listeners]")
        ]
        assert server.call(server.server.controller.cluster.broker_configs, 0) == {
            "log.retention.ms": "5400000"
        }
    finally:
        await admin.close()


def test_every_request_decoded_cleanly(server: ServerThread, wire_log: WireLog) -> None:
    wire_log.assert_clean(server)
    used = {api for api, _, client in wire_log.requests if client == CLIENT_ID}
    assert {0, 19, 32, 33} <= used
