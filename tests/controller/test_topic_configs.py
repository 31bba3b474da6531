"""Kafka's topic config table: names, types, defaults, validators with Kafka's messages, broker synonyms
and where a value comes from (topic, dynamic broker, dynamic default, server.properties, default)."""

from __future__ import annotations

import pytest

from controller.cluster import Cluster
from controller.config import ServerConfig
from controller.config.topic_configs import (
    BROKER_SYNONYMS,
    TOPIC_CONFIGS,
    ConfigSource,
    ConfigType,
    InvalidConfig,
    check_static_synonyms,
    topic_config_def,
    validate_topic_configs,
)
from controller.placement.api import UsableBroker
from controller.plugins.properties import ConfigError

#: Kafka 4's topic configs (TopicConfig's names without the ones 4.0 removed).
#: Apache Kafka 4.4's topic configs (the differential tests ask the real broker for them).
KAFKA_4_TOPIC_CONFIGS = {
    "cleanup.policy",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.type",
    "compression.zstd.level",
    "delete.retention.ms",
    "errors.deadletterqueue.group.enable",
    "file.delete.delay.ms",
    "flush.messages",
    "flush.ms",
    "follower.replication.throttled.replicas",
    "index.interval.bytes",
    "leader.replication.throttled.replicas",
    "local.retention.bytes",
    "local.retention.ms",
    "max.compaction.lag.ms",
    "max.decompressed.message.bytes",
    "max.message.bytes",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.type",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "preallocate",
    "remote.copy.lag.bytes",
    "remote.copy.lag.ms",
    "remote.log.copy.disable",
    "remote.log.delete.on.disable",
    "remote.storage.enable",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.index.bytes",
    "segment.jitter.ms",
    "segment.ms",
    "unclean.leader.election.enable",
}


def test_the_table_has_every_kafka_4_topic_config_once_with_a_valid_default_and_documentation() -> None:
    names = [d.name for d in TOPIC_CONFIGS]
    assert sorted(names) == sorted(KAFKA_4_TOPIC_CONFIGS)
    for d in TOPIC_CONFIGS:
        d.parse(d.default)  # Kafka's default passes Kafka's validator
        assert d.doc
    assert len(set(BROKER_SYNONYMS)) == len(BROKER_SYNONYMS)


@pytest.mark.parametrize(
    ("name", "kind", "default", "synonyms"),
    [
        (
            "retention.ms",
            ConfigType.LONG,
            "604800000",
            ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
        ),
        ("segment.ms", ConfigType.LONG, "604800000", ["log.roll.ms", "log.roll.hours"]),
        ("max.message.bytes", ConfigType.INT, "1048588", ["message.max.bytes"]),
        ("min.insync.replicas", ConfigType.INT, "1", ["min.insync.replicas"]),
        ("unclean.leader.election.enable", ConfigType.BOOLEAN, "false", ["unclean.leader.election.enable"]),
        ("cleanup.policy", ConfigType.LIST, "delete", ["log.cleanup.policy"]),
        ("min.cleanable.dirty.ratio", ConfigType.DOUBLE, "0.5", ["log.cleaner.min.cleanable.ratio"]),
        (
            "message.timestamp.after.max.ms",
            ConfigType.LONG,
            "3600000",
            ["log.message.timestamp.after.max.ms"],
        ),
        ("segment.bytes", ConfigType.INT, "1073741824", ["log.segment.bytes"]),
        ("remote.storage.enable", ConfigType.BOOLEAN, "false", []),
    ],
)
def test_types_defaults_and_synonyms_are_kafkas(name, kind, default, synonyms) -> None:
    d = topic_config_def(name)
    assert d is not None
    assert (d.kind, d.default, [s.key for s in d.synonyms]) == (kind, default, synonyms)


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"foo.bar": "1"}, "Unknown topic config name: foo.bar"),
        (
            {"retention.ms": "abc"},
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        (
            {"retention.ms": "-2"},
            "Invalid value -2 for configuration retention.ms: Value must be at least -1",
        ),
        (
            {"max.message.bytes": "3000000000"},
            "Invalid value 3000000000 for configuration max.message.bytes: Not a number of type INT",
        ),
        (
            {"min.insync.replicas": "0"},
            "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
        ),
        (
            {"unclean.leader.election.enable": "yes"},
            "Invalid value yes for configuration unclean.leader.election.enable: Expected value to be either true "
            "or false",
        ),
        (
            {"cleanup.policy": "compact,purge"},
            "Invalid value purge for configuration cleanup.policy: String must be one of: compact, delete",
        ),
        (
            {"compression.type": "brotli"},
            "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, "
            "lz4, snappy, gzip, producer",
        ),
        (
            {"message.timestamp.type": "createtime"},
            "Invalid value createtime for configuration message.timestamp.type: String must be one of: "
            "CreateTime, LogAppendTime",
        ),
        (
            {"min.cleanable.dirty.ratio": "1.5"},
            "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1",
        ),
        (
            {"compression.gzip.level": "0"},
            "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1",
        ),
        (
            {"segment.bytes": "1000"},
            "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576",
        ),
        (
            {"leader.replication.throttled.replicas": "0:1,x"},
            "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: "
            "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following "
            "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
        ),
        (
            {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
        ),
        (
            {"remote.storage.enable": "true"},
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log "
            "storage.",
        ),
        # Names first, then values in the table's order (Kafka's LogConfig.validate).
        ({"retention.ms": "x", "nope": "1"}, "Unknown topic config name: nope"),
        (
            {"retention.ms": "x", "segment.bytes": "y"},
            "Invalid value y for configuration segment.bytes: Not a number of type INT",
        ),
    ],
)
def test_invalid_configs_get_kafkas_messages(configs, message) -> None:
    with pytest.raises(InvalidConfig) as raised:
        validate_topic_configs(configs)
    assert str(raised.value) == message


def test_valid_values_are_parsed_as_kafka_parses_them() -> None:
    values = validate_topic_configs(
        {
            "cleanup.policy": " compact , delete ",
            "unclean.leader.election.enable": "TRUE",
            "min.insync.replicas": " 2 ",
            "retention.ms": "-1",
            "min.cleanable.dirty.ratio": "0.25",
            "leader.replication.throttled.replicas": "*",
        }
    )
    assert values == {
        "cleanup.policy": ["compact", "delete"],
        "unclean.leader.election.enable": True,
        "min.insync.replicas": 2,
        "retention.ms": -1,
        "min.cleanable.dirty.ratio": 0.25,
        "leader.replication.throttled.replicas": ["*"],
    }


def test_a_bad_synonym_in_server_properties_stops_startup_with_kafkas_message() -> None:
    check_static_synonyms({"log.retention.hours": "12", "unrelated.key": "x"})
    with pytest.raises(
        ConfigError,
        match="Invalid value soon for configuration log.retention.hours: Not a number of type INT",
    ):
        ServerConfig.from_properties({"log.retention.hours": "soon"})


def _cluster(static: dict[str, str] | None = None) -> Cluster:
    cluster = Cluster(
        [UsableBroker(0, None, False), UsableBroker(1, None, False)], seed=1, static_configs=static
    )
    cluster.add_topic("t", [[0, 1]])
    return cluster


def test_a_value_resolves_topic_then_dynamic_broker_then_dynamic_default_then_static_then_default() -> None:
    cluster = _cluster({"log.retention.hours": "48"})
    entry = cluster.describe_topic_config("t", "retention.ms")
    assert (entry.value, entry.source) == (str(48 * 3_600_000), ConfigSource.STATIC_BROKER_CONFIG)
    assert cluster.topic_config("t", "retention.ms") == 48 * 3_600_000

    cluster.set_broker_configs(None, {"log.retention.minutes": "30"}, "test")
    assert cluster.topic_config("t", "retention.ms") == 30 * 60_000
    assert (
        cluster.describe_topic_config("t", "retention.ms").source
        is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    )

    cluster.set_broker_configs(1, {"log.retention.ms": "1000"}, "test")
    assert cluster.topic_config("t", "retention.ms", broker=1) == 1000
    assert cluster.topic_config("t", "retention.ms", broker=0) == 30 * 60_000
    assert cluster.topic_config("t", "retention.ms") == 30 * 60_000  # the controller has no per-broker values

    cluster.set_topic_configs("t", {"retention.ms": "5"}, "test")
    entry = cluster.describe_topic_config("t", "retention.ms", broker=1)
    assert (entry.value, entry.source) == ("5", ConfigSource.TOPIC_CONFIG)
    assert entry.synonyms == (
        ("retention.ms", "5", ConfigSource.TOPIC_CONFIG),
        ("log.retention.ms", "1000", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("log.retention.minutes", "30", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", "48", ConfigSource.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
    )
    assert cluster.topic_config("t", "retention.ms", broker=1) == 5

    cluster.set_topic_configs("t", {}, "test")
    cluster.set_broker_configs(None, {}, "test")
    cluster.set_broker_configs(1, {}, "test")
    assert cluster.topic_config("t", "retention.ms", broker=1) == 48 * 3_600_000
    changes = [e for e in cluster.events.since(0) if e.kind == "config"]
    assert [e.subject for e in changes] == [
        "brokers (cluster default)",
        "broker 1",
        "topic t",
        "topic t",
        "brokers (cluster default)",
        "broker 1",
    ]


def test_a_config_without_broker_synonym_is_kafkas_default() -> None:
    entry = _cluster().describe_topic_config("t", "remote.storage.enable")
    assert (entry.value, entry.source, entry.synonyms) == ("false", ConfigSource.DEFAULT_CONFIG, ())
    entry = _cluster().describe_topic_config("t", "min.insync.replicas")
    assert (entry.value, entry.source) == ("1", ConfigSource.DEFAULT_CONFIG)
    assert entry.synonyms == (("min.insync.replicas", "1", ConfigSource.DEFAULT_CONFIG),)


def test_a_topic_made_again_under_a_deleted_ones_name_has_its_own_configs() -> None:
    cluster = _cluster()
    assert cluster.topic_config("t", "min.insync.replicas") == 1
    cluster.delete_topic("t")
    cluster.add_topic("t", [[0, 1]], {"min.insync.replicas": "2"})
    assert cluster.topic_config("t", "min.insync.replicas") == 2
    cluster.delete_topic("t")
    cluster.add_topic("t", [[0, 1]])
    assert cluster.topic_config("t", "min.insync.replicas") == 1
