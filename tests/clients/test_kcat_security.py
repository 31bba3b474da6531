"""``kcat -L`` (librdkafka) lists brokers and topics over TLS and SASL, and reports a wrong password.

Debian's kcat is built on librdkafka 2.0, which repeats its own nonce in SCRAM's final message (fixed
in librdkafka 2.6.1). Kafka 4 refuses that, and so does the simulator by default; with
``simulator.sasl.scram.nonce.check=suffix`` it accepts it, as Kafka 3.8.1 to 3.9 do.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from tests.clients.conftest import (
    OWN_CLIENT_ID,
    SECURED,
    WRONG,
    WRONG_PASSWORD,
    WireLog,
    assert_authenticated,
    assert_failure_logged,
)

CLIENT = "kcat (TLS, SASL)"
OLD_LIBRDKAFKA_SCRAM = {"simulator.sasl.scram.nonce.check": "suffix"}


@pytest.fixture(scope="module")
def kcat() -> str:
    path = shutil.which("kcat")
    assert path is not None, "kcat is not installed: `make system-deps` installs the Debian package"
    return path


def run_kcat(kcat: str, server, settings, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [kcat, "-L", "-b", server.bootstrap, "-m", "5", *settings.kcat(), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize(("protocol", "mechanism", "client_auth"), SECURED)
def test_lists_brokers_and_topics(
    placement_sim_factory, kcat, wire_log: WireLog, protocol, mechanism, client_auth
):
    server = placement_sim_factory(
        security=protocol,
        mechanism=mechanism or "PLAIN",
        client_auth=client_auth,
        properties=OLD_LIBRDKAFKA_SCRAM,
    )
    admin = KafkaAdminClient(  # kcat cannot create topics: kafka-python does, with the same settings
        bootstrap_servers=server.bootstrap,
        client_id=OWN_CLIENT_ID,
        request_timeout_ms=10000,
        **server.client_settings.kafka_python(),
    )
    try:
        admin.create_topics([NewTopic("kc-secured", 3, 2)])
    finally:
        admin.close()
    done = run_kcat(kcat, server, server.client_settings, "-J")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert {b["id"]: b["name"] for b in listing["brokers"]} == server.brokers
    [topic] = [t for t in listing["topics"] if t["topic"] == "kc-secured"]
    assert len(topic["partitions"]) == 3
    assert_authenticated(server, mechanism)
    wire_log.assert_clean(server)


def test_scram_of_librdkafka_before_2_6_1_is_refused_as_kafka_4_refuses_it(
    placement_sim_factory, kcat, caplog
):
    server = placement_sim_factory(security="SASL_PLAINTEXT", mechanism="SCRAM-SHA-512")
    with caplog.at_level(logging.WARNING, logger="controller.security"):
        done = run_kcat(kcat, server, server.client_settings)
    assert done.returncode == 1
    assert (
        "SASL authentication error: Authentication failed during authentication due to invalid credentials with "
        "SASL mechanism SCRAM-SHA-512" in done.stderr
    )
    assert "Invalid client nonce in the final client message. (the client repeats its nonce" in caplog.text


@pytest.mark.parametrize(("protocol", "mechanism", "message"), WRONG_PASSWORD)
def test_a_wrong_password_fails_with_kafkas_message(
    placement_sim_factory, kcat, caplog, protocol, mechanism, message
):
    server = placement_sim_factory(security=protocol, mechanism=mechanism, properties=OLD_LIBRDKAFKA_SCRAM)
    with caplog.at_level(logging.INFO):
        done = run_kcat(kcat, server, server.client_settings.as_user("alice", WRONG))
    assert done.returncode == 1
    assert f"SASL authentication error: {message} (after " in done.stderr
    assert "% ERROR: Failed to acquire metadata: Local: Broker transport failure" in done.stderr
    assert_failure_logged(caplog.records, mechanism)
