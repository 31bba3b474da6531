"""kafka-python administers topics over TLS and SASL, and reports a wrong password."""

from __future__ import annotations

import logging

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaTimeoutError

from tests.clients.conftest import (
    SECURED,
    WRONG,
    WRONG_PASSWORD,
    WireLog,
    assert_authenticated,
    assert_failure_logged,
)

CLIENT = "kafka-python (TLS, SASL)"


@pytest.mark.parametrize(("protocol", "mechanism", "client_auth"), SECURED)
def test_administers_topics(placement_sim_factory, wire_log: WireLog, protocol, mechanism, client_auth):
    server = placement_sim_factory(security=protocol, mechanism=mechanism or "PLAIN", client_auth=client_auth)
    admin = KafkaAdminClient(
        bootstrap_servers=server.bootstrap,
        client_id="placement-sim-tests",
        request_timeout_ms=10000,
        bootstrap_timeout_ms=10000,
        **server.client_settings.kafka_python(),
    )
    try:
        admin.create_topics([NewTopic("kp-secured", 3, 2)])
        assert "kp-secured" in admin.list_topics()
        [topic] = admin.describe_topics(["kp-secured"])
        assert (topic["error_code"], len(topic["partitions"])) == (0, 3)
        admin.delete_topics(["kp-secured"])
        assert "kp-secured" not in admin.list_topics()
    finally:
        admin.close()
    assert_authenticated(server, mechanism)
    wire_log.assert_clean(server)


@pytest.mark.parametrize(("protocol", "mechanism", "message"), WRONG_PASSWORD)
def test_a_wrong_password_fails_with_kafkas_message(
    placement_sim_factory, caplog, protocol, mechanism, message
):
    server = placement_sim_factory(security=protocol, mechanism=mechanism)
    settings = server.client_settings.as_user("alice", WRONG)
    with caplog.at_level(logging.INFO), pytest.raises(KafkaTimeoutError, match="Unable to bootstrap from"):
        KafkaAdminClient(
            bootstrap_servers=server.bootstrap,
            request_timeout_ms=5000,
            bootstrap_timeout_ms=1500,
            **settings.kafka_python(),
        )
    # Each attempt failed with the server's error: kafka-python logs it, then gives up bootstrapping.
    assert (
        f"[Error 58] SaslAuthenticationFailedError: SaslAuthenticationFailedError: {message}" in caplog.text
    )
    assert "socket disconnected" not in caplog.text
    assert_failure_logged(caplog.records, mechanism)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_raw_tokens_after_a_version_0_handshake(placement_sim_factory, wire_log: WireLog, mechanism):
    """Told the broker is Kafka 0.10.1, kafka-python sends SaslHandshake v0 and then raw SASL tokens. (Its
    CreateTopics would be v0, which Kafka 4 no longer serves (KIP-896), nor do the brokers: the topic is
    made beforehand and listed over Metadata.)"""
    server = placement_sim_factory(security="SASL_PLAINTEXT", mechanism=mechanism)
    server.create_topic("kp-raw", partitions=2, replication_factor=1)
    admin = KafkaAdminClient(
        bootstrap_servers=server.bootstrap,
        api_version=(0, 10, 1),
        request_timeout_ms=10000,
        bootstrap_timeout_ms=10000,
        **server.client_settings.kafka_python(),
    )
    try:
        assert "kp-raw" in admin.list_topics()
    finally:
        admin.close()
    assert_authenticated(server, mechanism)
    stats = server.stats
    assert (
        stats["requests:17"] >= 2 and stats["requests:36"] == 0
    )  # the tokens were not SaslAuthenticate requests
    wire_log.assert_clean(server)
