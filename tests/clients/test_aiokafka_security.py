"""aiokafka administers topics over TLS and SASL, and reports a wrong password."""

from __future__ import annotations

import logging

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError

from tests.clients.conftest import (
    SECURED,
    WRONG,
    WRONG_PASSWORD,
    WireLog,
    assert_authenticated,
    assert_failure_logged,
)

CLIENT = "aiokafka (TLS, SASL)"


@pytest.mark.parametrize(("protocol", "mechanism", "client_auth"), SECURED)
async def test_administers_topics(placement_sim_factory, wire_log: WireLog, protocol, mechanism, client_auth):
    server = placement_sim_factory(security=protocol, mechanism=mechanism or "PLAIN", client_auth=client_auth)
    admin = AIOKafkaAdminClient(
        bootstrap_servers=server.bootstrap, request_timeout_ms=10000, **server.client_settings.aiokafka()
    )
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic("ak-secured", 3, 2)])
        assert [(topic, code) for topic, code, _ in response.topic_errors] == [("ak-secured", 0)]
        assert "ak-secured" in await admin.list_topics()
        [described] = await admin.describe_topics(["ak-secured"])
        assert (described["error_code"], len(described["partitions"])) == (0, 3)
        deleted = await admin.delete_topics(["ak-secured"])
        assert [(topic, code) for topic, code in deleted.topic_error_codes] == [("ak-secured", 0)]
        assert "ak-secured" not in await admin.list_topics()
    finally:
        await admin.close()
    assert_authenticated(server, mechanism)
    wire_log.assert_clean(server)


@pytest.mark.parametrize(("protocol", "mechanism", "message"), WRONG_PASSWORD)
async def test_a_wrong_password_fails_with_kafkas_message(
    placement_sim_factory, caplog, protocol, mechanism, message
):
    server = placement_sim_factory(security=protocol, mechanism=mechanism)
    settings = server.client_settings.as_user("alice", WRONG)
    admin = AIOKafkaAdminClient(
        bootstrap_servers=server.bootstrap, request_timeout_ms=5000, **settings.aiokafka()
    )
    try:
        with (
            caplog.at_level(logging.INFO),
            pytest.raises(KafkaConnectionError, match="Unable to bootstrap from"),
        ):
            await admin.start()
    finally:
        await admin.close()
    assert f"[Error 58] SaslAuthenticationFailed: {message}" in caplog.text
    assert_failure_logged(caplog.records, mechanism)
