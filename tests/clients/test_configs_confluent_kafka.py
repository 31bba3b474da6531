"""confluent-kafka's AdminClient (librdkafka) reads and changes configs on the simulator: create_topics
with configs (INVALID_CONFIG with Kafka's message), describe_configs with sources and synonyms,
alter_configs, incremental_alter_configs, and unclean.leader.election.enable turned on for a leaderless
partition, elected at the controller's periodic check on the virtual clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

from controller.dynamics import UNCLEAN_ELECTION_CHECK_MS
from controller.embedded import ServerThread
from tests.clients.conftest import WireLog
from tests.clients.test_confluent_kafka import Handle, admin_for

CLIENT = "confluent-kafka"
TIMEOUT = 10.0


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
def handle(server: ServerThread) -> Iterator[Handle]:
    held = Handle(admin_for(server))
    yield held
    held.destroy()


def describe(handle: Handle, kind: ResourceType, name: str) -> dict[str, ConfigEntry]:
    [future] = handle.client.describe_configs([ConfigResource(kind, name)], request_timeout=TIMEOUT).values()
    return future.result(TIMEOUT)


def test_create_topics_with_configs_and_invalid_ones(handle: Handle, server: ServerThread):
    futures = handle.client.create_topics(
        [
            NewTopic("ck-cfg", 1, 3, config={"min.insync.replicas": "2", "cleanup.policy": "compact"}),
            NewTopic("ck-cfg-bad", 1, 3, config={"min.insync.replicas": "0"}),
            NewTopic("ck-cfg-unknown", 1, 3, config={"foo.bar": "1"}),
        ],
        request_timeout=TIMEOUT,
    )
    assert futures["ck-cfg"].result(TIMEOUT) is None
    for name, message in (
        ("ck-cfg-bad", "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
        ("ck-cfg-unknown", "Unknown topic config name: foo.bar"),
    ):
        with pytest.raises(KafkaException) as raised:
            futures[name].result(TIMEOUT)
        error = raised.value.args[0]
        assert (error.code(), error.str()) == (KafkaError.INVALID_CONFIG, message)
    assert server.call(lambda: dict(server.server.controller.cluster.topics["ck-cfg"].configs)) == {
        "min.insync.replicas": "2",
        "cleanup.policy": "compact",
    }


def test_describe_configs_shows_sources_and_synonyms(handle: Handle):
    configs = describe(handle, ResourceType.TOPIC, "ck-cfg")
    assert len(configs) == 33
    own, static, default = (
        configs["min.insync.replicas"],
        configs["retention.ms"],
        configs["max.message.bytes"],
    )
    assert (own.value, own.source, own.is_default) == ("2", ConfigSource.DYNAMIC_TOPIC_CONFIG.value, False)
    assert (static.value, static.source) == (str(48 * 3_600_000), ConfigSource.STATIC_BROKER_CONFIG.value)
    assert (default.value, default.source, default.is_default) == (
        "1048588",
        ConfigSource.DEFAULT_CONFIG.value,
        True,
    )
    # librdkafka keys synonyms by name: the last of log.retention.hours' two (static 48, default 168) stays.
    assert {k: (s.value, s.source) for k, s in static.synonyms.items()} == {
        "log.retention.hours": ("168", ConfigSource.DEFAULT_CONFIG.value)
    }
    broker = describe(handle, ResourceType.BROKER, "1")
    assert broker["listeners"].is_read_only and not broker["min.insync.replicas"].is_read_only
    assert broker["ssl.key.password"].is_sensitive and broker["ssl.key.password"].value is None


def test_alter_and_incremental_alter_configs(handle: Handle, server: ServerThread):
    cluster = server.server.controller.cluster
    legacy = ConfigResource(ResourceType.TOPIC, "ck-cfg", set_config={"retention.ms": "1000"})
    [future] = handle.client.alter_configs([legacy], request_timeout=TIMEOUT).values()
    assert future.result(TIMEOUT) is None
    assert server.call(lambda: dict(cluster.topics["ck-cfg"].configs)) == {"retention.ms": "1000"}  # replaced

    changes = ConfigResource(
        ResourceType.TOPIC,
        "ck-cfg",
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
            ConfigEntry("segment.ms", "60000", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    [future] = handle.client.incremental_alter_configs([changes], request_timeout=TIMEOUT).values()
    assert future.result(TIMEOUT) is None
    assert server.call(lambda: dict(cluster.topics["ck-cfg"].configs)) == {
        "cleanup.policy": "delete,compact",
        "segment.ms": "60000",
    }

    bad = ConfigResource(
        ResourceType.TOPIC,
        "ck-cfg",
        incremental_configs=[ConfigEntry("retention.ms", "x", incremental_operation=AlterConfigOpType.SET)],
    )
    [future] = handle.client.incremental_alter_configs([bad], request_timeout=TIMEOUT).values()
    with pytest.raises(KafkaException) as raised:
        future.result(TIMEOUT)
    error = raised.value.args[0]
    assert (error.code(), error.str()) == (
        KafkaError.INVALID_CONFIG,
        "Invalid value x for configuration retention.ms: Not a number of type LONG",
    )

    broker = ConfigResource(
        ResourceType.BROKER,
        "0",
        incremental_configs=[
            ConfigEntry("listeners", "PLAINTEXT://:1", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    [future] = handle.client.incremental_alter_configs([broker], request_timeout=TIMEOUT).values()
    with pytest.raises(KafkaException) as raised:
        future.result(TIMEOUT)
    error = raised.value.args[0]
    assert (error.code(), error.str()) == (
        KafkaError.INVALID_REQUEST,
        "Cannot update these configs dynamically: Set(listeners)",
    )

    # A key Kafka's brokers do not know is kept, as Kafka keeps it; a static one is refused.
    for key, value, refusal in [
        ("cleanup.policy", "compact", None),
        ("log.retention.hours", "1", "Cannot update these configs dynamically: Set(log.retention.hours)"),
    ]:
        change = ConfigResource(
            ResourceType.BROKER,
            "0",
            incremental_configs=[ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)],
        )
        [future] = handle.client.incremental_alter_configs([change], request_timeout=TIMEOUT).values()
        if refusal is None:
            assert future.result(TIMEOUT) is None
        else:
            with pytest.raises(KafkaException) as raised:
                future.result(TIMEOUT)
            assert raised.value.args[0].str() == refusal
    assert server.call(server.server.controller.cluster.broker_configs, 0) == {"cleanup.policy": "compact"}


def test_unclean_election_turned_on_elects_at_the_periodic_check(handle: Handle, server: ServerThread):
    # Led by 1 with 2 following: the controller (broker 0, which librdkafka sends admin requests to) stays up.
    created = handle.client.create_topics(
        [NewTopic("ck-unclean", 1, replica_assignment=[[1, 2]])], request_timeout=TIMEOUT
    )
    assert created["ck-unclean"].result(TIMEOUT) is None
    leader, follower = 1, 2
    server.set_replication(follower, records_per_s=0)  # the follower stops copying: it leaves the ISR
    server.produce_load("ck-unclean", 10)
    server.advance(50_000)
    server.produce_load("ck-unclean", 0)
    assert server.partition_state("ck-unclean", 0).isr == (leader,)
    server.stop_broker(leader)
    server.advance(15_000)  # fenced: no leader left in the ISR, none elected
    assert server.partition_state("ck-unclean", 0).leader == -1

    on = ConfigResource(
        ResourceType.TOPIC,
        "ck-unclean",
        incremental_configs=[
            ConfigEntry("unclean.leader.election.enable", "true", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    [future] = handle.client.incremental_alter_configs([on], request_timeout=TIMEOUT).values()
    assert future.result(TIMEOUT) is None
    assert server.partition_state("ck-unclean", 0).leader == -1  # not at once: at the next check
    server.advance(UNCLEAN_ELECTION_CHECK_MS)
    state = server.partition_state("ck-unclean", 0)
    assert (state.leader, state.isr) == (follower, (follower,))
    server.start_broker(leader)
    server.set_replication(follower, records_per_s=None)


def test_every_request_decoded_cleanly(handle: Handle, server: ServerThread, wire_log: WireLog):
    wire_log.assert_clean(server)
    used = {api for api, _, client in wire_log.requests if client == "placement-sim-tests"}
    assert {19, 32, 33, 44} <= used
