"""kafka-python's KafkaAdminClient reads and changes topic and broker configs on the simulator:
create_topics with configs, describe_configs (all, modified, with synonyms), alter_configs
(incremental and legacy), and the change taking effect in the cluster's replication rules; and
describe_log_dirs on every broker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.admin._configs import AlterConfigOp
from kafka.errors import InvalidConfigurationError

from controller.embedded import ServerThread
from tests.clients.conftest import WireLog, kafka_python_admin

CLIENT = "kafka-python"


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


@pytest.fixture(scope="module")
def admin(server: ServerThread) -> Iterator[KafkaAdminClient]:
    with kafka_python_admin(server) as client:
        yield client


def topic_configs(admin: KafkaAdminClient, name: str, config_filter: str = "modified", **kwargs) -> dict:
    return admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, name)], config_filter=config_filter, **kwargs
    )["topic"][name]


def test_create_topics_with_configs_and_an_invalid_one(admin: KafkaAdminClient):
    result = admin.create_topics(
        {
            "kp-cfg": {"num_partitions": 1, "replication_factor": 3, "configs": {"min.insync.replicas": "2"}},
            "kp-cfg-bad": {"num_partitions": 1, "replication_factor": 3, "configs": {"retention.ms": "abc"}},
            "kp-cfg-unknown": {"num_partitions": 1, "replication_factor": 3, "configs": {"foo.bar": "1"}},
        },
        raise_errors=False,
    )
    by_name = {t["name"]: t for t in result["topics"]}
    assert (by_name["kp-cfg-bad"]["error_code"], by_name["kp-cfg-bad"]["error_message"]) == (
        40,
        "Invalid value abc for configuration retention.ms: Not a number of type LONG",
    )
    assert (by_name["kp-cfg-unknown"]["error_code"], by_name["kp-cfg-unknown"]["error_message"]) == (
        40,
        "Unknown topic config name: foo.bar",
    )
    created = by_name["kp-cfg"]
    assert created["error_code"] == 0
    assert created["configs"]["min.insync.replicas"]["value"] == "2"
    assert created["configs"]["min.insync.replicas"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert created["configs"]["retention.ms"]["config_source"] == "STATIC_BROKER_CONFIG"
    with pytest.raises(InvalidConfigurationError):
        admin.create_topics(
            {"kp-cfg-bad": {"num_partitions": 1, "replication_factor": 1, "configs": {"x.y": "1"}}}
        )


def test_describe_configs_modified_all_and_synonyms(admin: KafkaAdminClient):
    modified = topic_configs(admin, "kp-cfg")
    assert {k: v["value"] for k, v in modified.items()} == {"min.insync.replicas": "2"}
    every = topic_configs(admin, "kp-cfg", "all", include_synonyms=True)
    assert len(every) == 37
    retention = every["retention.ms"]
    assert (retention["value"], retention["config_source"], retention["read_only"]) == (
        str(48 * 3_600_000),
        "STATIC_BROKER_CONFIG",
        False,
    )
    assert [(s["name"], s["value"], s["source"]) for s in retention["synonyms"]] == [
        ("log.retention.hours", "48", "STATIC_BROKER_CONFIG"),
        ("log.retention.hours", "168", "DEFAULT_CONFIG"),
    ]
    broker = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
    configs = broker["broker"]["1"]
    assert (configs["log.retention.hours"]["value"], configs["log.retention.hours"]["config_source"]) == (
        "48",
        "STATIC_BROKER_CONFIG",
    )
    assert configs["listeners"]["read_only"] is True and configs["min.insync.replicas"]["read_only"] is False


def test_incremental_and_legacy_alter_configs(admin: KafkaAdminClient, server: ServerThread):
    topic = ConfigResource(
        ConfigResourceType.TOPIC,
        "kp-cfg",
        {"cleanup.policy": (AlterConfigOp.APPEND, "compact"), "retention.ms": "3600000"},
    )
    assert admin.alter_configs([topic]) == {"topic": {"kp-cfg": "OK"}}
    assert {k: v["value"] for k, v in topic_configs(admin, "kp-cfg").items()} == {
        "min.insync.replicas": "2",
        "cleanup.policy": "delete,compact",
        "retention.ms": "3600000",
    }
    bad = admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, "kp-cfg", {"retention.ms": "soon"})], raise_on_unknown=False
    )
    assert bad["topic"]["kp-cfg"].startswith("[Error 40] InvalidConfigurationError")
    assert (
        "Invalid value soon for configuration retention.ms: Not a number of type LONG"
        in bad["topic"]["kp-cfg"]
    )
    # The legacy request replaces every config; kafka-python first reads the modified ones to keep them.
    legacy = ConfigResource(ConfigResourceType.TOPIC, "kp-cfg", {"retention.ms": "7200000"})
    assert admin.alter_configs([legacy], incremental=False) == {"topic": {"kp-cfg": "OK"}}
    assert topic_configs(admin, "kp-cfg")["retention.ms"]["value"] == "7200000"
    assert admin.reset_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-cfg", ["retention.ms"])]) == {
        "topic": {"kp-cfg": "OK"}
    }
    assert "retention.ms" not in topic_configs(admin, "kp-cfg")
    default = ConfigResource(ConfigResourceType.BROKER, "0", {"log.retention.ms": "5400000"})
    assert admin.alter_configs([default]) == {"broker": {"0": "OK"}}
    assert server.call(server.server.controller.cluster.broker_configs, 0) == {"log.retention.ms": "5400000"}


def test_altering_min_insync_replicas_changes_the_high_watermark_rule(
    admin: KafkaAdminClient, server: ServerThread
):
    assert (
        admin.create_topics({"kp-isr": {"num_partitions": 1, "replication_factor": 3}})["topics"][0][
            "error_code"
        ]
        == 0
    )
    server.stop_broker(2)
    server.advance(15_000)  # broker 2 is fenced and leaves the ISR
    server.produce_load("kp-isr", 10)
    server.advance(1000)
    moving = server.partition_state("kp-isr", 0)
    assert moving.isr == (0, 1) and moving.high_watermark == moving.log_end_offsets[moving.leader]
    change = ConfigResource(ConfigResourceType.TOPIC, "kp-isr", {"min.insync.replicas": "3"})
    assert admin.alter_configs([change]) == {"topic": {"kp-isr": "OK"}}
    frozen = server.partition_state("kp-isr", 0).high_watermark
    server.advance(1000)
    state = server.partition_state("kp-isr", 0)
    assert state.high_watermark == frozen < state.log_end_offsets[state.leader]
    server.produce_load("kp-isr", 0)
    server.start_broker(2)
    server.advance(5000)  # broker 2 registers, catches up and is unfenced
    assert 2 in server.partition_state("kp-isr", 0).isr


def test_describe_log_dirs_lists_each_brokers_replicas(server: ServerThread):
    # kafka-python asks the brokers its last Metadata named. The module's admin may have read it while
    # broker 2 was down (it refreshes when a connection it picked at random drops: seen in CI), and
    # kafka-python does not refresh again for 5 minutes; a new client reads the cluster as it is.
    with kafka_python_admin(server) as admin:
        answers = admin.describe_log_dirs(topic_partitions=["kp-isr"])
    assert sorted(a["broker"] for a in answers) == [0, 1, 2]
    for answer in answers:
        [log_dir] = answer["log_dirs"]
        assert (log_dir["error_code"], log_dir["log_dir"]) == (0, "/tmp/kafka-logs")
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in log_dir["topics"]] == [
            ("kp-isr", [0])
        ]


def test_every_request_decoded_cleanly(admin: KafkaAdminClient, server: ServerThread, wire_log: WireLog):
    wire_log.assert_clean(server)
    used = {api for api, _, client in wire_log.requests if client == "placement-sim-tests"}
    assert {19, 32, 33, 35, 44} <= used
