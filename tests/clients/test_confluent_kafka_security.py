"""confluent-kafka's AdminClient (librdkafka) administers topics over TLS and SASL, and reports a wrong password."""

from __future__ import annotations

import gc
import logging

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from tests.clients.conftest import (
    SECURED,
    WRONG,
    WRONG_PASSWORD,
    WireLog,
    assert_authenticated,
    assert_failure_logged,
)

CLIENT = "confluent-kafka (TLS, SASL)"
TIMEOUT = 10.0


def admin_for(server, settings, errors: list[KafkaError] | None = None) -> AdminClient:
    config = {
        "bootstrap.servers": server.bootstrap,
        "client.id": "placement-sim-tests",
        "socket.timeout.ms": 5000,
        "socket.connection.setup.timeout.ms": 5000,
        **settings.librdkafka(),
    }
    if errors is not None:
        config["error_cb"] = errors.append
    return AdminClient(config, logger=logging.getLogger("librdkafka"))


@pytest.mark.parametrize(("protocol", "mechanism", "client_auth"), SECURED)
def test_administers_topics(placement_sim_factory, wire_log: WireLog, protocol, mechanism, client_auth):
    server = placement_sim_factory(security=protocol, mechanism=mechanism or "PLAIN", client_auth=client_auth)
    admin = admin_for(server, server.client_settings)
    try:
        created = admin.create_topics([NewTopic("ck-secured", 3, 2)], request_timeout=TIMEOUT)
        assert created["ck-secured"].result(TIMEOUT) is None
        metadata = admin.list_topics(timeout=TIMEOUT)
        assert len(metadata.topics["ck-secured"].partitions) == 3
        assert {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()} == server.brokers
        deleted = admin.delete_topics(["ck-secured"], request_timeout=TIMEOUT)
        assert deleted["ck-secured"].result(TIMEOUT) is None
        assert "ck-secured" not in admin.list_topics(timeout=TIMEOUT).topics
    finally:
        del admin
        gc.collect()  # librdkafka stops when the handle is destroyed, before the server does
    assert_authenticated(server, mechanism)
    wire_log.assert_clean(server)


@pytest.mark.parametrize(("protocol", "mechanism", "message"), WRONG_PASSWORD)
def test_a_wrong_password_fails_with_kafkas_message(
    placement_sim_factory, caplog, protocol, mechanism, message
):
    server = placement_sim_factory(security=protocol, mechanism=mechanism)
    errors: list[KafkaError] = []
    admin = admin_for(server, server.client_settings.as_user("alice", WRONG), errors)
    try:
        with caplog.at_level(logging.INFO), pytest.raises(KafkaException) as raised:
            admin.list_topics(timeout=3)
        admin.poll(1)  # serves the error callback
    finally:
        del admin
        gc.collect()
    failure = raised.value.args[0]
    assert (failure.code(), failure.str()) == (
        KafkaError._TRANSPORT,
        "Failed to get metadata: Local: Broker transport failure",
    )
    authentication = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert authentication, [e.str() for e in errors]
    assert f"SASL authentication error: {message} (after " in authentication[0].str()
    assert_failure_logged(caplog.records, mechanism)
