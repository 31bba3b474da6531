"""The GROUP config resource (type 32) on the wire: DescribeConfigs, IncrementalAlterConfigs and
AlterConfigs answer as a real Kafka 4.4.0 broker answered the same requests (recorded from one, with
``group.share.record.lock.duration.ms=1000`` in its server.properties), and a change takes effect for
the group at once."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.config.group_configs import parse_duration_ms
from controller.embedded import ServerThread
from protocol.client import BlockingClient

GROUP = 32
TIMEOUT = 10.0


@pytest.fixture(scope="module")
def client() -> Iterator[BlockingClient]:
    props = {"group.share.record.lock.duration.ms": 1000}
    with ServerThread.start(brokers=[(0, "a")], properties=props) as server:
        c = BlockingClient.connect(server.bootstrap)
        try:
            c.server = server  # type: ignore[attr-defined]
            yield c
        finally:
            c.close()


def describe(client: BlockingClient, name: str) -> dict:
    response = client.send(
        "DescribeConfigsRequest",
        {
            "Resources": [{"ResourceType": GROUP, "ResourceName": name, "ConfigurationKeys": None}],
            "IncludeSynonyms": True,
            "IncludeDocumentation": False,
        },
        version=4,
        timeout=TIMEOUT,
    )
    return response["Results"][0]


def alter(
    client: BlockingClient, name: str, *changes: tuple[str, str | None, int], validate_only: bool = True
) -> tuple[int, str | None]:
    response = client.send(
        "IncrementalAlterConfigsRequest",
        {
            "Resources": [
                {
                    "ResourceType": GROUP,
                    "ResourceName": name,
                    "Configs": [{"Name": n, "ConfigOperation": op, "Value": v} for n, v, op in changes],
                }
            ],
            "ValidateOnly": validate_only,
        },
        version=1,
        timeout=TIMEOUT,
    )
    [result] = response["Responses"]
    return result["ErrorCode"], result["ErrorMessage"]


def test_describe_lists_kafka_s_group_configs_with_their_synonyms(client: BlockingClient) -> None:
    result = describe(client, "payments")
    assert result["ErrorCode"] == 0
    entries = {e["Name"]: e for e in result["Configs"]}
    assert len(entries) == 21  # Kafka 4.4's non-internal group configs
    assert "consumer.assignor.offload.enable" not in entries  # internal: accepted, never described
    lock = entries["share.record.lock.duration.ms"]
    assert (lock["Value"], lock["ConfigSource"], lock["ConfigType"]) == ("1000", 4, 3)
    assert lock["Synonyms"] == [
        {"Name": "group.share.record.lock.duration.ms", "Value": "1000", "Source": 4},
        {"Name": "group.share.record.lock.duration.ms", "Value": "30000", "Source": 5},
    ]
    reset = entries["share.auto.offset.reset"]
    assert (reset["Value"], reset["ConfigSource"], reset["Synonyms"]) == (
        "latest",
        5,
        [{"Name": "share.auto.offset.reset", "Value": "latest", "Source": 5}],
    )
    assert entries["streams.assignor.name"]["Synonyms"] == [
        {"Name": "group.streams.assignors", "Value": "sticky", "Source": 5}
    ]
    empty = describe(client, "")
    assert (empty["ErrorCode"], empty["ErrorMessage"]) == (42, "Group name must not be empty")


KAFKA_REFUSALS = [
    (("share.auto.offset.reset", "foo", 0), "Invalid value foo for configuration share.auto.offset.reset: Invalid value `foo` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."),
    (("share.auto.offset.reset", "by_duration:-PT1H", 0), "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."),
    (("share.record.lock.duration.ms", "500", 0), "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000"),
    (("share.record.lock.duration.ms", "999999999", 0), "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."),
    (("nope.x", "1", 0), "Unknown group config name: nope.x"),
    (("share.delivery.count.limit", "1", 0), "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"),
    (("share.delivery.count.limit", "11", 0), "share.delivery.count.limit must be in the range 2 to 10 inclusive."),
    (("share.session.timeout.ms", "1000", 0), "share.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
    (("share.isolation.level", "x", 0), "Invalid value x for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"),
    (("share.partition.max.record.locks", "50", 0), "Invalid value 50 for configuration share.partition.max.record.locks: Value must be at least 100"),
    (("share.partition.max.record.locks", "20000", 0), "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."),
    (("errors.deadletterqueue.topic.name", "__x", 0), "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"),
    (("share.auto.offset.reset", "x", 2), "Can't APPEND to key share.auto.offset.reset because its type is not LIST."),
    (("streams.rack.aware.assignment.tags", "a", 2), "Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST."),
]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"), KAFKA_REFUSALS, ids=[f"{c[0]}={c[1]}" for c, _ in KAFKA_REFUSALS]
)
def test_refusals_are_kafka_s(client: BlockingClient, change: tuple[str, str, int], message: str) -> None:
    assert alter(client, "payments", change) == (40, message)


def test_accepted_changes_take_effect(client: BlockingClient) -> None:
    assert alter(client, "", ("share.auto.offset.reset", "earliest", 0)) == (
        42,
        "Default group resources are not allowed.",
    )
    for ok in [
        [("share.session.timeout.ms", "50000", 0), ("share.heartbeat.interval.ms", "6000", 0)],
        [("share.auto.offset.reset", "by_duration:PT1H", 0)],
        [("consumer.assignor.offload.enable", "false", 0)],
        [("share.auto.offset.reset", None, 1)],
    ]:
        assert alter(client, "payments", *ok) == (0, None)
    server = client.server  # type: ignore[attr-defined]
    cluster = server.server.controller.cluster
    # Read (and so cached) before the change, which must replace it.
    assert server.call(lambda: cluster.group_config("payments", "share.auto.offset.reset")) == "latest"
    assert alter(client, "payments", ("share.auto.offset.reset", "earliest", 0), validate_only=False) == (
        0,
        None,
    )
    entry = {e["Name"]: e for e in describe(client, "payments")["Configs"]}["share.auto.offset.reset"]
    assert (entry["Value"], entry["ConfigSource"]) == ("earliest", 8)
    assert server.call(lambda: cluster.group_config("payments", "share.auto.offset.reset")) == "earliest"
    assert server.call(lambda: cluster.group_config("audit", "share.delivery.count.limit")) == 5  # cached
    legacy = client.send(
        "AlterConfigsRequest",
        {"Resources": [{"ResourceType": GROUP, "ResourceName": "audit", "Configs": [{"Name": "share.delivery.count.limit", "Value": "3"}]}], "ValidateOnly": False},
        version=2,
        timeout=TIMEOUT,
    )  # fmt: skip
    assert legacy["Responses"][0]["ErrorCode"] == 0
    assert server.call(lambda: cluster.group_config("audit", "share.delivery.count.limit")) == 3


def test_iso_8601_durations_as_java_reads_them() -> None:
    assert parse_duration_ms("PT1H") == 3_600_000
    assert parse_duration_ms("P1DT2H3M4.5S") == 86_400_000 + 7_200_000 + 180_000 + 4_500
    assert parse_duration_ms("pt0.25s") == 250
    assert parse_duration_ms("-PT1S") == -1000
    for bad in ("", "P", "PT", "1H", "PT1X", "P1H"):
        assert parse_duration_ms(bad) is None, bad
