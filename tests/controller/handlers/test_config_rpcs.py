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
    """3 brokers; log.retention.hours=48 in server.properties; eligible leader replicas off (Kafka 3.x's
    broker-level min.insync.replicas; with them on, see the last test)."""
    with ServerThread.start(
        brokers=[(0, None), (1, None), (2, None)],
        seed=5,
        properties={
            "log.retention.hours": "48",
            "simulator.clock": "virtual",
            "simulator.eligible.leader.replicas.version": "0",
        },
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
    for version in (2, 4, 5, 7):
        result = await create(client, f"cfg-bad-{version}", {"retention.ms": "abc"}, version=version)
        assert result["ErrorCode"] == ErrorCode.INVALID_CONFIG
        assert (
            result["ErrorMessage"]
            == "Invalid value abc for configuration retention.ms: Not a number of type LONG"
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
    assert len(configs) == 37
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


async def describe(
    client: KafkaClient, *resources: tuple[int, str, list[str] | None], version: int = 4, **flags
):
    request = {
        "Resources": [
            {"ResourceType": t, "ResourceName": n, "ConfigurationKeys": k} for t, n, k in resources
        ],
        "IncludeSynonyms": flags.get("synonyms", False) and version >= 1,
        "IncludeDocumentation": flags.get("documentation", False) and version >= 3,
    }
    return (await client.send("DescribeConfigsRequest", request, version=version))["Results"]


async def alter(
    client: KafkaClient, *resources: tuple[int, str, dict], version: int = 2, validate_only=False
):
    request = {
        "Resources": [
            {
                "ResourceType": t,
                "ResourceName": n,
                "Configs": [{"Name": k, "Value": v} for k, v in configs.items()],
            }
            for t, n, configs in resources
        ],
        "ValidateOnly": validate_only,
    }
    return (await client.send("AlterConfigsRequest", request, version=version))["Responses"]


async def incremental(
    client: KafkaClient, *resources: tuple[int, str, list], version: int = 1, validate_only=False
):
    request = {
        "Resources": [
            {
                "ResourceType": t,
                "ResourceName": n,
                "Configs": [{"Name": k, "ConfigOperation": op, "Value": v} for k, op, v in changes],
            }
            for t, n, changes in resources
        ],
        "ValidateOnly": validate_only,
    }
    return (await client.send("IncrementalAlterConfigsRequest", request, version=version))["Responses"]


def outcome(results: list[dict]) -> list[tuple[int, str | None]]:
    return [(r["ErrorCode"], r["ErrorMessage"]) for r in results]


async def test_describe_configs_of_a_topic_in_every_version(client: KafkaClient):
    assert (await create(client, "dc", {"retention.ms": "1000"}))["ErrorCode"] == 0
    for version in range(1, 5):  # v0 is gone since Kafka 4 (KIP-896)
        [result] = await describe(
            client, (TOPIC, "dc", None), version=version, synonyms=True, documentation=True
        )
        assert (result["ErrorCode"], result["ResourceType"], result["ResourceName"]) == (0, TOPIC, "dc")
        configs = {c["Name"]: c for c in result["Configs"]}
        assert len(configs) == 37
        own, static, default = configs["retention.ms"], configs["segment.ms"], configs["max.message.bytes"]
        assert own["Value"] == "1000" and static["Value"] == "604800000"
        assert not own["ReadOnly"] and not own["IsSensitive"]
        assert (own["ConfigSource"], default["ConfigSource"]) == (SOURCE_TOPIC, SOURCE_DEFAULT)
        assert [(s["Name"], s["Value"], s["Source"]) for s in own["Synonyms"]] == [
            ("retention.ms", "1000", SOURCE_TOPIC),
            ("log.retention.hours", "48", SOURCE_STATIC),
            ("log.retention.hours", "168", SOURCE_DEFAULT),
        ]
        if version >= 3:
            assert (own["ConfigType"], configs["cleanup.policy"]["ConfigType"]) == (5, 7)  # LONG, LIST
            assert own["Documentation"] == "segments older than this are deleted (-1: kept forever)"
    [only] = await describe(client, (TOPIC, "dc", ["retention.ms", "no.such.key"]))
    assert [(c["Name"], c["Synonyms"], c["Documentation"]) for c in only["Configs"]] == [
        ("retention.ms", [], None)
    ]


async def test_describe_configs_errors_per_resource(client: KafkaClient):
    results = await describe(
        client,
        (TOPIC, "dc-missing", None),
        (TOPIC, "", None),
        (BROKER, "x", None),
        (BROKER, "9", None),
        (8, "0", None),
    )
    assert outcome(results) == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ""),  # Kafka answers an empty message
        (ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is invalid: the empty string is not allowed"),
        (ErrorCode.INVALID_REQUEST, "Broker id must be an integer, but it is: x"),
        (
            ErrorCode.INVALID_REQUEST,
            "Unexpected broker id, expected one of 0, 1, 2 or empty string, but received 9",
        ),
        (ErrorCode.INVALID_REQUEST, "Unsupported resource type: BROKER_LOGGER"),
    ]
    assert all(r["Configs"] == [] for r in results)


async def test_a_broker_listener_describes_only_its_own_broker(server: ServerThread):
    async with await KafkaClient.connect(server.brokers[1], request_timeout=10) as on_1:
        mine, other = await describe(on_1, (BROKER, "1", ["listeners"]), (BROKER, "2", None))
    assert mine["ErrorCode"] == 0 and [c["Name"] for c in mine["Configs"]] == ["listeners"]
    assert outcome([other]) == [
        (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 1 or empty string, but received 2")
    ]


async def test_broker_configs_show_sources_read_only_and_sensitive_flags(client: KafkaClient):
    [result] = await describe(client, (BROKER, "0", None), synonyms=True)
    configs = {c["Name"]: c for c in result["Configs"]}
    retention = configs["log.retention.hours"]
    assert (retention["Value"], retention["ConfigSource"], retention["ReadOnly"]) == (
        "48",
        SOURCE_STATIC,
        True,  # Kafka changes log.retention.ms at run time, not its synonyms in hours or minutes
    )
    assert configs["log.retention.ms"]["ReadOnly"] is False
    assert [(s["Name"], s["Value"], s["Source"]) for s in retention["Synonyms"]] == [
        ("log.retention.hours", "48", SOURCE_STATIC),
        ("log.retention.hours", "168", SOURCE_DEFAULT),
    ]
    assert (configs["log.retention.ms"]["Value"], configs["log.retention.ms"]["ConfigSource"]) == (
        None,
        SOURCE_DEFAULT,
    )
    assert (configs["listeners"]["ReadOnly"], configs["min.insync.replicas"]["ReadOnly"]) == (True, False)
    password = configs["ssl.key.password"]
    assert (password["IsSensitive"], password["Value"], password["ConfigType"]) == (True, None, 9)


async def test_alter_configs_replaces_a_topics_configs_and_checks_them_as_kafka(
    client: KafkaClient, server: ServerThread
):
    assert (await create(client, "ac", {"retention.ms": "1000", "cleanup.policy": "compact"}))[
        "ErrorCode"
    ] == 0
    cluster = server.server.controller.cluster
    for version in range(3):
        results = await alter(
            client,
            (TOPIC, "ac", {"min.insync.replicas": "2"}),
            (TOPIC, "ac-missing", {"retention.ms": "5"}),
            (TOPIC, "ac-missing2", {"retention.ms": "x"}),
            (TOPIC, "", {"retention.ms": "5"}),
            version=version,
        )
        assert outcome(results) == [
            (0, None),
            (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ac-missing' does not exist."),
            (
                ErrorCode.INVALID_CONFIG,
                "Invalid value x for configuration retention.ms: Not a number of type LONG",
            ),
            (ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."),
        ]
        assert server.call(lambda: dict(cluster.topics["ac"].configs)) == {"min.insync.replicas": "2"}
    results = await alter(
        client,
        (TOPIC, "ac", {"foo.bar": "1"}),
        (TOPIC, "ac", {"retention.ms": "1"}),
    )
    assert outcome(results) == [(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")] * 2
    assert outcome(await alter(client, (TOPIC, "ac", {"foo.bar": "1"}))) == [
        (ErrorCode.INVALID_CONFIG, "Unknown topic config name: foo.bar")
    ]
    assert outcome(await alter(client, (TOPIC, "ac", {"retention.ms": None}))) == [
        (ErrorCode.INVALID_REQUEST, "Null value not supported for : retention.ms")
    ]
    assert outcome(await alter(client, (TOPIC, "ac", {}), validate_only=True)) == [(0, None)]
    assert server.call(lambda: dict(cluster.topics["ac"].configs)) == {"min.insync.replicas": "2"}
    assert server.call(cluster.topic_config, "ac", "min.insync.replicas") == 2


async def test_incremental_alter_configs_sets_deletes_appends_and_subtracts(
    client: KafkaClient, server: ServerThread
):
    assert (await create(client, "iac", {"retention.ms": "1000"}))["ErrorCode"] == 0
    cluster = server.server.controller.cluster
    SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
    results = await incremental(
        client,
        (
            TOPIC,
            "iac",
            [
                ("cleanup.policy", APPEND, "compact"),
                ("retention.ms", DELETE, None),
                ("segment.ms", SET, "60000"),
            ],
        ),
    )
    assert outcome(results) == [(0, None)]
    assert server.call(lambda: dict(cluster.topics["iac"].configs)) == {
        "cleanup.policy": "delete,compact",
        "segment.ms": "60000",
    }
    assert outcome(
        await incremental(client, (TOPIC, "iac", [("cleanup.policy", SUBTRACT, "delete")]), version=0)
    ) == [(0, None)]
    assert server.call(lambda: cluster.topics["iac"].configs["cleanup.policy"]) == "compact"
    assert outcome(
        await incremental(
            client,
            (TOPIC, "iac", [("retention.ms", APPEND, "5")]),
            (TOPIC, "iac-2", [("retention.ms", SET, "5"), ("retention.ms", SET, "6")]),
            (TOPIC, "iac-3", [("segment.ms", SET, None)]),
            (TOPIC, "iac-4", [("cleanup.policy", APPEND, "purge")]),
        )
    ) == [
        (ErrorCode.INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST."),
        (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"),
        (ErrorCode.INVALID_REQUEST, "Null value not supported for : segment.ms"),
        (
            ErrorCode.INVALID_CONFIG,
            "Invalid value purge for configuration cleanup.policy: String must be one of: compact, delete",
        ),
    ]
    # An operation Kafka does not know fails the whole request, every resource (Kafka 4's answer).
    assert (
        outcome(
            await incremental(
                client,
                (TOPIC, "iac", [("segment.ms", SET, "70000")]),
                (TOPIC, "iac-5", [("retention.ms", 7, "5")]),
                (BROKER, "0", [("log.retention.ms", SET, "5")]),
            )
        )
        == [(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * 3
    )
    assert outcome(
        await incremental(client, (TOPIC, "iac", [("segment.ms", DELETE, None)]), validate_only=True)
    ) == [(0, None)]
    assert server.call(lambda: dict(cluster.topics["iac"].configs)) == {
        "cleanup.policy": "compact",
        "segment.ms": "60000",
    }


async def test_broker_configs_take_kafkas_dynamic_keys_only(client: KafkaClient, server: ServerThread):
    cluster = server.server.controller.cluster
    SET, DELETE, APPEND = 0, 1, 2
    results = await incremental(
        client,
        (BROKER, "", [("log.retention.ms", SET, "1800000")]),
        (BROKER, "1", [("min.insync.replicas", SET, "2")]),
        (BROKER, "0", [("listeners", SET, "PLAINTEXT://:1")]),
        (BROKER, "0", [("log.retention.ms", SET, "soon")]),
    )
    assert outcome(results) == [
        (0, None),
        (0, None),
        (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
        (ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."),
    ]
    assert outcome(
        await incremental(
            client,
            (BROKER, "0", [("listeners", SET, "PLAINTEXT://:1"), ("no.such.key", SET, "1")]),
            (BROKER, "2", [("log.retention.ms", SET, "soon")]),
            (BROKER, "7", [("log.retention.ms", SET, "1")]),
            (BROKER, "x", [("log.retention.ms", SET, "1")]),
            (BROKER, "", [("log.retention.ms", APPEND, "1")]),
        )
    ) == [
        (ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [listeners]"),
        (
            ErrorCode.INVALID_REQUEST,
            "Invalid value soon for configuration log.retention.ms: Not a number of type LONG",
        ),
        (ErrorCode.BROKER_ID_NOT_REGISTERED, "No node with id 7 found."),
        (ErrorCode.INVALID_REQUEST, "Node id must be an integer, but it is: x"),
        (ErrorCode.INVALID_CONFIG, "Config value append is not allowed for config key: log.retention.ms"),
    ]
    assert server.call(cluster.broker_configs, None) == {"log.retention.ms": "1800000"}
    assert server.call(cluster.broker_configs, 1) == {"min.insync.replicas": "2"}
    assert (await create(client, "bc", {}))["ErrorCode"] == 0
    [topic] = await describe(client, (TOPIC, "bc", ["retention.ms"]), synonyms=True)
    assert [(c["Value"], c["ConfigSource"]) for c in topic["Configs"]] == [
        (str(30 * 60_000), SOURCE_DYNAMIC_DEFAULT)
    ]
    async with await KafkaClient.connect(server.brokers[1], request_timeout=10) as on_1:
        [on_broker] = await describe(on_1, (TOPIC, "bc", ["min.insync.replicas"]))
        [broker] = await describe(on_1, (BROKER, "1", ["min.insync.replicas"]))
    assert [(c["Value"], c["ConfigSource"]) for c in on_broker["Configs"]] == [("2", SOURCE_DYNAMIC_BROKER)]
    assert [(c["Value"], c["ConfigSource"]) for c in broker["Configs"]] == [("2", SOURCE_DYNAMIC_BROKER)]
    [default] = await describe(client, (BROKER, "", None), synonyms=True)
    assert [
        (c["Name"], c["Value"], c["ConfigSource"], [s["Source"] for s in c["Synonyms"]])
        for c in default["Configs"]
    ] == [("log.retention.ms", "1800000", SOURCE_DYNAMIC_DEFAULT, [SOURCE_DYNAMIC_DEFAULT])]
    # AlterConfigs replaces: the cluster default loses log.retention.ms.
    assert outcome(await alter(client, (BROKER, "", {"unclean.leader.election.enable": "true"}))) == [
        (0, None)
    ]
    assert server.call(cluster.broker_configs, None) == {"unclean.leader.election.enable": "true"}
    assert outcome(
        await incremental(
            client,
            (BROKER, "", [("unclean.leader.election.enable", DELETE, None)]),
            (BROKER, "1", [("min.insync.replicas", DELETE, None)]),
        )
    ) == [(0, None), (0, None)]
    assert server.call(cluster.broker_configs, None) == {} and server.call(cluster.broker_configs, 1) == {}


async def test_describing_a_thousand_topics_is_answered_whole(client: KafkaClient, server: ServerThread):
    """33,000 entries: resolved in turns of the event loop, encoded off it."""
    cluster = server.server.controller.cluster

    def add() -> None:
        for i in range(1000):
            cluster.add_topic(f"many-{i}", [[0]], {"retention.ms": str(i)} if i % 2 else {})

    server.call(add)
    results = await describe(client, *[(TOPIC, f"many-{i}", None) for i in range(1000)])
    assert [r["ResourceName"] for r in results] == [f"many-{i}" for i in range(1000)]
    assert all(r["ErrorCode"] == 0 and len(r["Configs"]) == 37 for r in results)
    retention = [next(c for c in r["Configs"] if c["Name"] == "retention.ms") for r in results]
    assert [(c["Value"], c["ConfigSource"]) for c in retention[:2]] == [
        (str(48 * 3_600_000), SOURCE_STATIC),
        ("1", SOURCE_TOPIC),
    ]
    server.call(lambda: [cluster.delete_topic(f"many-{i}") for i in range(1000)])


async def test_messages_that_quote_a_32700_character_value_are_answered(client: KafkaClient):
    """Kafka's messages quote the value or name; past a string field's 32,767 bytes they are cut to fit."""
    long = "9" * 32_700 + "x"
    result = await create(client, "cfg-long", {"retention.ms": long})
    assert result["ErrorCode"] == ErrorCode.INVALID_CONFIG
    assert result["ErrorMessage"].startswith("Invalid value 999") and len(result["ErrorMessage"]) <= 32_767
    [answer] = await incremental(client, (TOPIC, "cfg-long", [("x" * 32_700, 0, "1")]))
    assert answer["ErrorCode"] == ErrorCode.INVALID_CONFIG
    assert answer["ErrorMessage"].startswith("Unknown topic config name: xxx")


async def test_broker_configs_refuse_only_kafkas_static_keys(client: KafkaClient, server: ServerThread):
    """As Kafka's DynamicBrokerConfig: a key Kafka does not know is kept, Kafka's static keys are refused,
    then bare TLS keys, then values of the wrong type, then per-broker keys at the cluster default."""
    cluster = server.server.controller.cluster
    SET = 0
    assert outcome(
        await incremental(
            client,
            (BROKER, "0", [("cleanup.policy", SET, "compact"), ("num.io.threads", SET, "16")]),
            (BROKER, "", [("follower.replication.throttled.rate", SET, "1000000")]),
        )
    ) == [(0, None), (0, None)]
    assert outcome(await alter(client, (BROKER, "1", {"my.own.key": "x", "metric.reporters": ""}))) == [
        (0, None)
    ]
    assert server.call(cluster.broker_configs, 0) == {"cleanup.policy": "compact", "num.io.threads": "16"}
    assert server.call(cluster.broker_configs, None) == {"follower.replication.throttled.rate": "1000000"}
    assert server.call(cluster.broker_configs, 1) == {"my.own.key": "x", "metric.reporters": ""}
    tls = "listener.name.ssl.ssl.keystore.location"
    assert outcome(
        await incremental(
            client,
            (BROKER, "0", [("log.retention.minutes", SET, "5"), ("broker.id", SET, "3")]),
            (BROKER, "1", [("ssl.keystore.location", SET, "/k.jks")]),
            (BROKER, "2", [("num.io.threads", SET, "many")]),
            (BROKER, "", [(tls, SET, "/k.jks")]),
        )
    ) == [
        (
            ErrorCode.INVALID_REQUEST,
            "Cannot update these configs dynamically: [broker.id, log.retention.minutes]",
        ),
        (
            ErrorCode.INVALID_REQUEST,
            "These security configs can be dynamically updated only per-listener using the listener prefix: "
            "[ssl.keystore.location]",
        ),
        (
            ErrorCode.INVALID_REQUEST,
            "Invalid value many for configuration num.io.threads: Not a number of type INT",
        ),
        (
            ErrorCode.INVALID_REQUEST,
            f"Cannot update these configs at default cluster level, broker id must be specified: [{tls}]",
        ),
    ]
    assert outcome(await incremental(client, (BROKER, "2", [(tls, SET, "/k.jks")]))) == [(0, None)]
    assert server.call(cluster.broker_configs, 2) == {tls: "/k.jks"}
    assert (
        outcome(
            await alter(client, (BROKER, "0", {}), (BROKER, "1", {}), (BROKER, "2", {}), (BROKER, "", {}))
        )
        == [(0, None)] * 4
    )


async def test_a_broker_listener_alters_only_its_own_broker_and_the_cluster_default(server: ServerThread):
    cluster = server.server.controller.cluster
    async with await KafkaClient.connect(server.brokers[1], request_timeout=10) as on_1:
        results = await incremental(
            on_1,
            (BROKER, "2", [("log.retention.ms", 0, "5")]),
            (BROKER, "1", [("log.retention.ms", 0, "6")]),
            (BROKER, "", [("log.retention.ms", 0, "7")]),
        )
    assert outcome(results) == [
        (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2"),
        (0, None),
        (0, None),
    ]
    assert server.call(cluster.broker_configs, 1) == {"log.retention.ms": "6"}
    assert server.call(cluster.broker_configs, 2) == {}
    async with await KafkaClient.connect(server.bootstrap, request_timeout=10) as client:
        cleared = await alter(client, (BROKER, "1", {}), (BROKER, "", {}))
    assert outcome(cleared) == [(0, None), (0, None)]
    assert server.call(cluster.broker_configs, 1) == {} and server.call(cluster.broker_configs, None) == {}


async def test_cleanup_policy_may_be_emptied_but_not_appended_nothing(client: KafkaClient):
    # As Kafka 4.4 answers (the differential tests asked it): SET "" and a SUBTRACT to nothing are taken,
    # an APPEND of nothing is refused, an APPEND of "," adds nothing.
    assert (await create(client, "cp", {}))["ErrorCode"] == 0
    SET, SUBTRACT, APPEND = 0, 3, 2
    changes = [("", SET), ("delete", SUBTRACT), ("", APPEND), (",", APPEND)]
    answers = [
        outcome(await incremental(client, (TOPIC, "cp", [("cleanup.policy", op, value)]), validate_only=True))
        for value, op in changes
    ]
    assert answers == [
        [(0, None)],
        [(0, None)],
        [(ErrorCode.INVALID_CONFIG, "Configuration 'cleanup.policy' values must not be empty.")],
        [(0, None)],
    ]


async def test_a_broker_refuses_a_broker_change_itself_before_it_forwards_the_rest(client: KafkaClient):
    # As Kafka 4.4 answers (the differential benchmark found it): an operation the controller does not know
    # fails every forwarded resource, but a broker resource the broker's own checks refuse is not forwarded.
    assert (await create(client, "fw", {}))["ErrorCode"] == 0
    bad_topic = (TOPIC, "fw", [("retention.ms", 0, "abc"), ("segment.ms", 7, "9")])
    not_a_number = "Invalid value x for configuration min.insync.replicas: Not a number of type INT"
    for broker in ("", "0"):
        results = await incremental(
            client, bad_topic, (BROKER, broker, [("min.insync.replicas", 0, "x")]), validate_only=True
        )
        assert outcome(results) == [
            (ErrorCode.UNKNOWN_SERVER_ERROR, None),
            (ErrorCode.INVALID_REQUEST, not_a_number),
        ]
    results = await incremental(
        client, bad_topic, (BROKER, "", [("min.insync.replicas", 0, "2")]), validate_only=True
    )
    assert outcome(results) == [(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * 2


async def test_with_eligible_leader_replicas_min_insync_replicas_is_the_clusters_as_kafka_41():
    """KIP-966 on (the default): the controller writes the cluster-level min.insync.replicas at start; a
    broker's own value is refused, so is removing the cluster's (explicitly or by AlterConfigs replacing
    the cluster's configs); changing the cluster's value is allowed and topics follow it."""
    SET, DELETE = 0, 1
    with ServerThread.start(
        brokers=[(0, None), (1, None), (2, None)],
        seed=5,
        properties={"simulator.clock": "virtual", "min.insync.replicas": "2"},
    ) as server:
        cluster = server.server.controller.cluster
        assert server.call(cluster.broker_configs, None) == {"min.insync.replicas": "2"}
        async with await KafkaClient.connect(server.bootstrap, request_timeout=10) as client:
            [default] = await describe(client, (BROKER, "", None), synonyms=True)
            assert [(c["Name"], c["Value"], c["ConfigSource"]) for c in default["Configs"]] == [
                ("min.insync.replicas", "2", SOURCE_DYNAMIC_DEFAULT)
            ]
            [broker] = await describe(client, (BROKER, "0", ["min.insync.replicas"]), synonyms=True)
            [entry] = broker["Configs"]
            assert (entry["Value"], entry["ConfigSource"]) == ("2", SOURCE_DYNAMIC_DEFAULT)
            assert [s["Source"] for s in entry["Synonyms"]] == [
                SOURCE_DYNAMIC_DEFAULT,
                SOURCE_STATIC,
                SOURCE_DEFAULT,
            ]
            broker_level = "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
            removal = "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
            assert outcome(await incremental(client, (BROKER, "1", [("min.insync.replicas", SET, "1")]))) == [
                (ErrorCode.INVALID_CONFIG, broker_level)
            ]
            # Kafka's controller writes a record of every key named for a broker, changed or not: removing a
            # value the broker does not have, or setting the cluster's value on it, is refused too.
            assert outcome(
                await incremental(client, (BROKER, "0", [("min.insync.replicas", DELETE, None)]))
            ) == [(ErrorCode.INVALID_CONFIG, broker_level)]
            assert outcome(await alter(client, (BROKER, "0", {"min.insync.replicas": "2"}))) == [
                (ErrorCode.INVALID_CONFIG, broker_level)
            ]
            assert outcome(
                await incremental(client, (BROKER, "", [("min.insync.replicas", DELETE, None)]))
            ) == [(ErrorCode.INVALID_CONFIG, removal)]
            assert outcome(await alter(client, (BROKER, "", {"log.retention.ms": "5"}))) == [
                (ErrorCode.INVALID_CONFIG, removal)
            ]
            assert server.call(cluster.broker_configs, None) == {"min.insync.replicas": "2"}
            assert server.call(cluster.broker_configs, 1) == {}
            # Other broker-level keys and the cluster's value itself may change.
            assert outcome(
                await incremental(
                    client,
                    (BROKER, "1", [("log.retention.ms", SET, "6")]),
                    (BROKER, "", [("min.insync.replicas", SET, "1")]),
                )
            ) == [(0, None), (0, None)]
            assert (await create(client, "elr-min-isr", {}))["ErrorCode"] == 0
            [topic] = await describe(client, (TOPIC, "elr-min-isr", ["min.insync.replicas"]))
            assert [(c["Value"], c["ConfigSource"]) for c in topic["Configs"]] == [
                ("1", SOURCE_DYNAMIC_DEFAULT)
            ]
            assert server.call(cluster.topic_config, "elr-min-isr", "min.insync.replicas") == 1
