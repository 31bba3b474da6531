"""Topic and broker configs over real sockets with the project's client: CreateTopics' configs,
DescribeConfigs, AlterConfigs and IncrementalAlterConfigs in every version."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from controller.embedded import ServerThread
from protocol.client import KafkaClient
from protocol.codes import ErrorCode

TOPIC, BROKER = 2, 4  # ConfigResource types
SOURCE_TOPIC, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT, SOURCE_STATIC, SOURCE_DEFAULT = 1, 2, 3, 4, 5


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    """3 brokers; log.retention.hours=48 in server.properties."""
    with ServerThread.start(
        brokers=[(0, None), (1, None), (2, None)],
        seed=5,
        properties={"log.retention.hours": "48", "simulator.clock": "virtual"},
    ) as started:
        yield started


@pytest.fixture
async def client(server: ServerThread) -> AsyncIterator[KafkaClient]:
    async with await KafkaClient.connect(server.bootstrap, request_timeout=10) as connected:
        yield connected


async def create(client: KafkaClient, name: str, configs: dict[str, str | None], version: int = 7, **extra):
    request = {
        "Topics": [
            {
                "Name": name,
                "NumPartitions": 1,
                "ReplicationFactor": 3,
                "Assignments": [],
                "Configs": [{"Name": k, "Value": v} for k, v in configs.items()],
            }
        ],
        "timeoutMs": 5000,
        "validateOnly": extra.get("validate_only", False),
    }
    [result] = (await client.send("CreateTopicsRequest", request, version=version))["Topics"]
    return result


async def test_create_topics_refuses_unknown_names_and_bad_values_with_kafkas_messages(client: KafkaClient):
    for version in (0, 4, 5, 7):
        result = await create(client, f"cfg-bad-{version}", {"retention.ms": "abc"}, version=version)
        assert result["ErrorCode"] == ErrorCode.INVALID_CONFIG
        if version >= 1:
            assert result["ErrorMessage"] == (
                "Invalid value abc for configuration retention.ms: Not a number of type LONG"
            )
    result = await create(client, "cfg-unknown", {"foo.bar": "1"})
    assert (result["ErrorCode"], result["ErrorMessage"]) == (
        ErrorCode.INVALID_CONFIG,
        "Unknown topic config name: foo.bar",
    )
    result = await create(client, "cfg-null", {"retention.ms": None})
    assert (result["ErrorCode"], result["ErrorMessage"]) == (
        ErrorCode.INVALID_CONFIG,
        "Null value not supported for topic configs: retention.ms",
    )
    assert result["Configs"] == []


async def test_created_topics_keep_their_configs_and_v5_answers_carry_every_config(
    client: KafkaClient, server: ServerThread
):
    result = await create(client, "cfg-ok", {"min.insync.replicas": "2", "cleanup.policy": "compact"})
    assert result["ErrorCode"] == 0
    configs = {
        c["Name"]: (c["Value"], c["ConfigSource"], c["ReadOnly"], c["IsSensitive"]) for c in result["Configs"]
    }
    assert len(configs) == 33
    assert configs["min.insync.replicas"] == ("2", SOURCE_TOPIC, False, False)
    assert configs["cleanup.policy"] == ("compact", SOURCE_TOPIC, False, False)
    assert configs["retention.ms"] == (str(48 * 3_600_000), SOURCE_STATIC, False, False)
    assert configs["max.message.bytes"] == ("1048588", SOURCE_DEFAULT, False, False)
    cluster = server.server.controller.cluster
    assert server.call(cluster.topic_config, "cfg-ok", "min.insync.replicas") == 2
    assert server.call(lambda: dict(cluster.topics["cfg-ok"].configs)) == {
        "min.insync.replicas": "2",
        "cleanup.policy": "compact",
    }


async def test_validate_only_answers_the_configs_and_keeps_nothing(client: KafkaClient, server: ServerThread):
    result = await create(client, "cfg-dry", {"retention.ms": "1000"}, validate_only=True)
    assert result["ErrorCode"] == 0
    assert [c for c in result["Configs"] if c["Name"] == "retention.ms"][0]["Value"] == "1000"
    assert server.call(lambda: "cfg-dry" in server.server.controller.cluster.topics) is False
