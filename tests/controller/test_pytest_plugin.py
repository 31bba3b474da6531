"""The pytest plugin as a user's test suite sees it (run through pytester in a fresh pytest)."""

from __future__ import annotations

pytest_plugins = ["pytester"]

#: The user's suite: every fixture, and every argument of ``placement_sim_factory``, shown to take effect
#: in what a client of the server sees.
USER_SUITE = """
import asyncio
import socket

import pytest

from controller.defaults import DEFAULT_BROKERS
from controller.placement import ClusterView, PlacementSpec, load_placer
from controller.placement.api import UsableBroker
from protocol.client import KafkaClient

RACKS = [(0, "a"), (1, "b"), (2, "c"), (3, "a"), (4, "b"), (5, "c", True)]
RACKS_VIEW = ClusterView(tuple(UsableBroker(b[0], b[1], len(b) > 2 and b[2]) for b in RACKS))


def ask(server, name, body, version=None):
    async def go():
        async with await KafkaClient.connect(server.bootstrap, request_timeout=10) as client:
            return await client.send(name, body, version=version)

    return asyncio.run(go())


def place(server, partitions, replicas):
    async def go():
        async with await KafkaClient.connect(server.bootstrap, request_timeout=10) as client:
            return await client.create_replica_placement(partitions, replicas)

    return asyncio.run(go())


def in_process(placer, seed, partitions, replicas, view):
    configured = load_placer(placer, {"simulator.seed": str(seed)})
    return [list(r) for r in configured.place(PlacementSpec(0, partitions, replicas), view)]


@pytest.mark.asyncio
async def test_async_fixture_is_the_default_cluster_with_striped_and_seed_0(placement_sim):
    assert placement_sim.bootstrap.startswith("127.0.0.1:")
    replicas = await placement_sim.client.create_replica_placement(6, 3)
    assert replicas == in_process("striped", 0, 6, 3, ClusterView(DEFAULT_BROKERS))
    assert replicas != in_process("striped", 1, 6, 3, ClusterView(DEFAULT_BROKERS))


def test_sync_server_is_the_default_cluster(placement_sim_server):
    assert placement_sim_server.stats["connections"] == 0
    described = ask(placement_sim_server, "DescribeClusterRequest", {})
    brokers = [(b["BrokerId"], b["Rack"]) for b in described["Brokers"]]
    assert brokers == [(i, f"rack-{i % 3 + 1}") for i in range(6)]


def test_placer_and_seed_take_effect(placement_sim_factory):
    for seed in (7, 8):
        server = placement_sim_factory(placer="legacy", brokers=RACKS, seed=seed)
        expected = in_process("legacy", seed, 9, 3, RACKS_VIEW)
        assert expected != in_process("striped", seed, 9, 3, RACKS_VIEW)  # the default placer differs
        assert place(server, 9, 3) == expected
    assert in_process("legacy", 7, 9, 3, RACKS_VIEW) != in_process("legacy", 8, 9, 3, RACKS_VIEW)


def test_placer_properties_and_brokers_give_kafkas_classic_layout(placement_sim_factory):
    server = placement_sim_factory(
        placer="legacy",
        brokers=[(i, None) for i in range(5)],
        properties={"simulator.placer.legacy.fixed.start.index": "0"},
    )
    # Kafka's AdminUtils example (5 brokers, no racks, 10 partitions x 3, fixedStartIndex 0): leader p % 5,
    # followers right after it, shifted one further from partition 5 on.
    assert place(server, 10, 3) == [
        [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1],
        [0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2],
    ]


def test_brokers_show_in_describe_cluster_and_metadata_exactly(placement_sim_factory):
    server = placement_sim_factory(brokers=[(12, "r1", True), (3, "r1"), (9, None), (7, "r2")])
    described = ask(server, "DescribeClusterRequest", {"IncludeFencedBrokers": True}, version=2)
    assert sorted((b["BrokerId"], b["Rack"], b["IsFenced"]) for b in described["Brokers"]) == [
        (3, "r1", False), (7, "r2", False), (9, None, False), (12, "r1", True),
    ]
    assert {b["BrokerId"]: f"{b['Host']}:{b['Port']}" for b in described["Brokers"]} == server.brokers
    metadata = ask(server, "MetadataRequest", {"Topics": []})
    assert sorted((b["NodeId"], b["Rack"]) for b in metadata["Brokers"]) == [(3, "r1"), (7, "r2"), (9, None)]
    assert (metadata["ControllerId"], described["ControllerId"]) == (3, 3)


def test_properties_set_what_minus_one_means_in_create_topics(placement_sim_factory):
    minus_one = {"Name": "defaults", "NumPartitions": -1, "ReplicationFactor": -1}
    request = {"Topics": [{**minus_one, "Assignments": [], "Configs": []}], "timeoutMs": 5000}
    defaults = {"num.partitions": "5", "default.replication.factor": "2"}
    for properties, partitions, replicas in ((None, 1, 1), (defaults, 5, 2)):
        server = placement_sim_factory(properties=properties)
        [created] = ask(server, "CreateTopicsRequest", request)["Topics"]
        answer = (created["ErrorCode"], created["NumPartitions"], created["ReplicationFactor"])
        assert answer == (0, partitions, replicas)
        [topic] = ask(server, "MetadataRequest", {"Topics": [{"Name": "defaults"}]})["Topics"]
        assert [len(p["ReplicaNodes"]) for p in topic["Partitions"]] == [replicas] * partitions


def test_property_values_may_be_numbers_and_booleans(placement_sim_factory):
    properties = {"broker.session.timeout.ms": 1500, "auto.create.topics.enable": True, "num.partitions": 3}
    server = placement_sim_factory(properties=properties)
    assert server.config.session_timeout_ms == 1500
    wanted = {"Topics": [{"Name": "created-on-read"}], "AllowAutoTopicCreation": True}
    [topic] = ask(server, "MetadataRequest", wanted, version=9)["Topics"]
    assert (topic["ErrorCode"], len(topic["Partitions"])) == (0, 3)


STARTED = []


def test_a_factory_server_answers_during_its_test(placement_sim_factory):
    server = placement_sim_factory()
    STARTED.extend([server.bootstrap, *server.brokers.values()])
    with socket.create_connection(("127.0.0.1", int(server.port)), timeout=5):
        pass


def test_and_is_stopped_after_it():
    assert len(STARTED) == 7
    for address in STARTED:
        host, port = address.rsplit(":", 1)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, int(port)), timeout=5).close()
"""


def test_fixtures_and_factory_arguments_take_effect_in_any_test_suite(pytester):
    pytester.makepyfile(USER_SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "asyncio_mode=strict")
    result.assert_outcomes(passed=9)


def test_the_async_fixture_needs_no_pytest_asyncio_configuration(pytester):
    # No asyncio_mode, no marker: pytest-asyncio's defaults (strict mode).
    pytester.makepyfile(
        """
        async def test_async_fixture_without_a_marker(placement_sim):
            replicas = await placement_sim.client.create_replica_placement(4, 2)
            assert [len(r) for r in replicas] == [2, 2, 2, 2]
        """
    )
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_sync_fixture_has_a_blocking_client(pytester):
    pytester.makepyfile(
        """
        def test_blocking_client(placement_sim_sync):
            client = placement_sim_sync.client
            replicas = client.create_replica_placement(3, 3, topic="orders")
            assert [len(set(r)) for r in replicas] == [3, 3, 3]
            metadata = client.send("MetadataRequest", {"Topics": None})
            assert sorted(b["NodeId"] for b in metadata["Brokers"]) == [0, 1, 2, 3, 4, 5]
            assert placement_sim_sync.stats["requests:68"] == 1
        """
    )
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:asyncio")
    result.assert_outcomes(passed=1)


def test_without_pytest_asyncio_the_async_fixture_says_what_is_missing(pytester):
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.usefixtures("placement_sim")
        def test_needs_the_async_fixture():
            pass
        """
    )
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:asyncio", "-W", "default")
    result.assert_outcomes(errors=1)  # failed in setup, before the test body
    result.stdout.fnmatch_lines(["*needs pytest-asyncio: pip install pytest-asyncio*"])


SECURED_SUITE = """
import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaTimeoutError


def test_a_sasl_ssl_server_and_its_client_settings(placement_sim_factory, placement_sim_certificates):
    server = placement_sim_factory(security="SASL_SSL", mechanism="SCRAM-SHA-512", users={"svc": "svc-secret"})
    settings = server.client_settings
    assert (settings.security_protocol, settings.mechanism, settings.username, settings.password) == (
        "SASL_SSL", "SCRAM-SHA-512", "svc", "svc-secret")
    assert settings.ca_file == str(placement_sim_certificates.ca_file)
    assert settings.librdkafka()["ssl.ca.location"] == settings.ca_file
    assert settings.kcat()[:2] == ["-X", "security.protocol=SASL_SSL"]
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000, **settings.kafka_python())
    admin.create_topics([NewTopic("orders", 3, 2)])
    assert "orders" in admin.list_topics()
    admin.close()
    assert server.stats["authenticated:SCRAM-SHA-512"] >= 1


def test_a_plaintext_client_gets_nowhere(placement_sim_factory):
    server = placement_sim_factory(security="SSL")
    with pytest.raises(KafkaTimeoutError):
        KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=2000, bootstrap_timeout_ms=1000)
    assert server.stats["closed:TLS handshake failed"] >= 1


def test_without_security_the_settings_are_plaintext(placement_sim_server):
    assert placement_sim_server.client_settings.kafka_python() == {"security_protocol": "PLAINTEXT"}
"""


def test_secured_servers_in_any_test_suite(pytester):
    pytester.makepyfile(SECURED_SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
