"""The SASL exchange and TLS on the wire, byte by byte, as Kafka's broker behaves."""

from __future__ import annotations

import logging
import socket
import ssl
import struct
import time

import pytest
from kafka.net.sasl.scram import ScramClient

from controller.embedded import ServerThread
from protocol import load_schemas
from tests.support.rawwire import closed_by_server, raw_connect, read_response, request_frame

SCHEMAS = load_schemas()
PLAIN_FAILED = "Authentication failed: Invalid username or password"


def ask(sock: socket.socket, api_key: int, version: int, data: dict, correlation: int = 1) -> dict | None:
    """Sends one request; its decoded answer, or None when the server closed the connection instead."""
    sock.sendall(request_frame(api_key, version, data, correlation))
    frame = read_response(sock)
    if frame is None:
        return None
    (got,) = struct.unpack_from(">i", frame)
    assert got == correlation
    flexible = SCHEMAS.response(api_key).is_flexible(version) and api_key != 18
    return SCHEMAS.response(api_key).decode(frame[5 if flexible else 4 :], version)


def authenticate(sock: socket.socket, token: bytes, version: int = 2) -> dict | None:
    return ask(sock, 36, version, {"AuthBytes": token}, correlation=3)


@pytest.fixture
def sasl_server(placement_sim_factory) -> ServerThread:
    return placement_sim_factory(
        security="SASL_PLAINTEXT",
        users={"alice": "alice-secret", "bob": "bob-secret"},
        properties={"connection.failed.authentication.delay.ms": "0"},
    )


def test_only_api_versions_and_the_handshake_come_before_authentication(sasl_server):
    with raw_connect(sasl_server.bootstrap) as sock:
        answer = ask(sock, 18, 3, {"ClientSoftwareName": "raw", "ClientSoftwareVersion": "1"})
        keys = {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in answer["ApiKeys"]}
        assert (keys[17], keys[36]) == ((0, 1), (0, 2))
        assert ask(sock, 3, 12, {"Topics": None}) is None  # Metadata: closed, unanswered
    with raw_connect(sasl_server.bootstrap) as sock:
        assert ask(sock, 36, 2, {"AuthBytes": b"\0alice\0alice-secret"}) is None  # no handshake yet
    with raw_connect(sasl_server.bootstrap) as sock:
        assert ask(sock, 18, 3, {"ClientSoftwareName": "raw", "ClientSoftwareVersion": "1"}) is not None
        assert ask(sock, 18, 3, {"ClientSoftwareName": "raw", "ClientSoftwareVersion": "1"}) is None
    with raw_connect(sasl_server.bootstrap) as sock:
        assert ask(sock, 17, 1, {"Mechanism": "PLAIN"}) == {"ErrorCode": 0, "Mechanisms": [
            "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}  # fmt: skip
        assert ask(sock, 3, 12, {"Topics": None}) is None  # a request in place of SaslAuthenticate
    stats = sasl_server.stats
    assert stats["closed:request before SASL authentication"] == 4
    assert stats["requests:3"] == 0


def test_plain_with_sasl_authenticate_then_every_request(sasl_server):
    with raw_connect(sasl_server.bootstrap) as sock:
        assert ask(sock, 17, 1, {"Mechanism": "PLAIN"})["ErrorCode"] == 0
        assert authenticate(sock, b"\0bob\0bob-secret") == {
            "ErrorCode": 0,
            "ErrorMessage": None,
            "AuthBytes": b"",
            "SessionLifetimeMs": 0,
        }
        assert [b["NodeId"] for b in ask(sock, 3, 12, {"Topics": None})["Brokers"]] == [0, 1, 2, 3, 4, 5]
        # Authenticated: another handshake or token is ILLEGAL_SASL_STATE, and the connection stays.
        assert ask(sock, 17, 1, {"Mechanism": "PLAIN"}) == {"ErrorCode": 34, "Mechanisms": []}
        assert authenticate(sock, b"\0bob\0bob-secret")["ErrorMessage"] == (
            "SaslAuthenticate request received after successful authentication"
        )
        assert ask(sock, 3, 12, {"Topics": None}) is not None
    assert sasl_server.stats["authenticated:PLAIN"] == 1


def test_api_versions_answers_alike_before_and_after_authentication(sasl_server):
    """The answer depends on the version alone (it is encoded once per version and kept)."""
    request = {"ClientSoftwareName": "raw", "ClientSoftwareVersion": "1"}
    for version in range(5):
        with raw_connect(sasl_server.bootstrap) as sock:
            sock.sendall(request_frame(18, version, request, 5))
            before = read_response(sock)
            assert ask(sock, 17, 1, {"Mechanism": "PLAIN"})["ErrorCode"] == 0
            assert authenticate(sock, b"\0bob\0bob-secret")["ErrorCode"] == 0
            sock.sendall(request_frame(18, version, request, 5))
            assert read_response(sock) == before is not None


def test_a_wrong_password_is_answered_then_the_connection_closes(sasl_server, caplog):
    with caplog.at_level(logging.DEBUG), raw_connect(sasl_server.bootstrap) as sock:
        assert ask(sock, 17, 1, {"Mechanism": "PLAIN"})["ErrorCode"] == 0
        assert authenticate(sock, b"\0alice\0bob-secret", version=1) == {
            "ErrorCode": 58,
            "ErrorMessage": PLAIN_FAILED,
            "AuthBytes": b"",
            "SessionLifetimeMs": 0,
        }
        assert closed_by_server(sock)
    [line] = [r.getMessage() for r in caplog.records if r.name == "controller.security"]
    assert line.endswith(f": PLAIN, user alice: {PLAIN_FAILED}")
    assert "bob-secret" not in caplog.text
    assert sasl_server.stats["authentication failed"] == 1


def test_an_unknown_mechanism_gets_the_enabled_list_then_the_connection_closes(placement_sim_factory):
    server = placement_sim_factory(
        security="SASL_PLAINTEXT", properties={"sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    )
    with raw_connect(server.bootstrap) as sock:
        assert ask(sock, 17, 1, {"Mechanism": "PLAIN"}) == {"ErrorCode": 33, "Mechanisms": ["SCRAM-SHA-512"]}
        assert closed_by_server(sock)
    assert server.stats["unsupported SASL mechanism"] == 1


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_with_sasl_authenticate_and_no_secret_in_the_log(sasl_server, caplog, mechanism):
    with raw_connect(sasl_server.bootstrap) as sock:
        assert ask(sock, 17, 1, {"Mechanism": mechanism})["ErrorCode"] == 0
        client = ScramClient("alice", "alice-secret", mechanism)
        first = authenticate(sock, client.first_message())
        client.process_server_first_message(first["AuthBytes"])
        assert first["AuthBytes"].split(b",")[1:] == [
            b"s=" + first["AuthBytes"].split(b",s=")[1].split(b",")[0],
            b"i=4096",
        ]
        final = authenticate(sock, client.final_message())
        client.process_server_final_message(final["AuthBytes"])  # the server's signature checks out
        assert final["ErrorCode"] == 0
    with caplog.at_level(logging.DEBUG), raw_connect(sasl_server.bootstrap) as sock:
        assert ask(sock, 17, 1, {"Mechanism": mechanism})["ErrorCode"] == 0
        client = ScramClient("alice", "not-alices-secret", mechanism)
        client.process_server_first_message(authenticate(sock, client.first_message())["AuthBytes"])
        failed = authenticate(sock, client.final_message())
        assert (failed["ErrorCode"], failed["ErrorMessage"]) == (
            58,
            f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}",
        )
        assert closed_by_server(sock)
    proof = client.final_message().split(b",p=")[1].decode()
    assert f"{mechanism}, user alice: Invalid client credentials" in caplog.text
    for secret in ("not-alices-secret", "alice-secret", proof):
        assert secret not in caplog.text


def test_raw_tokens_after_a_version_0_handshake(sasl_server):
    with raw_connect(sasl_server.bootstrap) as sock:
        assert ask(sock, 17, 0, {"Mechanism": "PLAIN"})["ErrorCode"] == 0
        token = b"\0alice\0alice-secret"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert read_response(sock) == b""  # an empty token, size-prefixed, no header
        assert ask(sock, 3, 12, {"Topics": None}) is not None
    with raw_connect(sasl_server.bootstrap) as sock:
        assert ask(sock, 17, 0, {"Mechanism": "PLAIN"})["ErrorCode"] == 0
        token = b"\0alice\0wrong"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert closed_by_server(sock)  # no answer after a version 0 handshake, as Kafka
    assert sasl_server.stats["closed:authentication failed"] == 1


def test_the_failure_is_answered_after_kafkas_delay(placement_sim_factory):
    server = placement_sim_factory(
        security="SASL_PLAINTEXT", properties={"connection.failed.authentication.delay.ms": "300"}
    )
    with raw_connect(server.bootstrap) as sock:
        assert ask(sock, 17, 1, {"Mechanism": "PLAIN"})["ErrorCode"] == 0
        started = time.monotonic()
        assert authenticate(sock, b"\0alice\0wrong")["ErrorCode"] == 58
        assert 0.3 <= time.monotonic() - started < 5
        assert closed_by_server(sock)


def test_sasl_requests_on_a_listener_without_sasl_are_illegal_sasl_state(placement_sim_server):
    with raw_connect(placement_sim_server.bootstrap) as sock:
        assert ask(sock, 17, 1, {"Mechanism": "PLAIN"}) == {"ErrorCode": 34, "Mechanisms": []}
        assert authenticate(sock, b"\0alice\0alice-secret", version=0) == {
            "ErrorCode": 34,
            "ErrorMessage": "SaslAuthenticate request received after successful authentication",
            "AuthBytes": b"",
        }
        assert ask(sock, 3, 12, {"Topics": None}) is not None


def test_tls_on_every_listener_and_a_plaintext_client_refused(
    placement_sim_factory, placement_sim_certificates, caplog
):
    server = placement_sim_factory(security="SSL")
    context = ssl.create_default_context(cafile=str(placement_sim_certificates.ca_file))
    for address in (server.bootstrap, server.brokers[4]):
        host, port = address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname=host) as sock:
                assert ask(sock, 3, 12, {"Topics": None}) is not None
                assert sock.version() in ("TLSv1.2", "TLSv1.3")
    with caplog.at_level(logging.WARNING), raw_connect(server.bootstrap) as sock:
        sock.sendall(request_frame(3, 12, {"Topics": None}))
        assert closed_by_server(sock)
        server.wait_until(lambda: server.stats["closed:TLS handshake failed"] == 1, timeout=10)
    assert "TLS handshake failed" in caplog.text


def test_client_certificates_when_required(placement_sim_factory, placement_sim_certificates):
    certs = placement_sim_certificates
    server = placement_sim_factory(security="SSL", client_auth="required")
    host, port = server.bootstrap.rsplit(":", 1)
    without = ssl.create_default_context(cafile=str(certs.ca_file))
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        try:  # TLS 1.3 reports the refusal at the first read: an alert, or the end of the connection
            with without.wrap_socket(raw, server_hostname=host) as sock:
                answered = ask(sock, 3, 12, {"Topics": None})
        except (ssl.SSLError, ConnectionError):
            answered = None
    assert answered is None
    server.wait_until(lambda: server.stats["closed:TLS handshake failed"] == 1, timeout=10)
    with_cert = ssl.create_default_context(cafile=str(certs.ca_file))
    with_cert.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with with_cert.wrap_socket(raw, server_hostname=host) as sock:
            assert ask(sock, 3, 12, {"Topics": None}) is not None


def _from(address: str, bootstrap: str, timeout: float = 10) -> socket.socket:
    """A TCP connection to ``bootstrap`` from the loopback address ``address`` (another client host)."""
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=timeout, source_address=(address, 0))
    return sock


def test_half_open_tls_handshakes_count_against_their_address_from_accept(
    placement_sim_factory, placement_sim_certificates
):
    """Silent sockets that never start their TLS handshake hold at most max.connections.per.ip slots: the
    ones past it are closed at once, so a client from another address still gets in (max.connections is
    not filled by one address's half-open handshakes)."""
    server = placement_sim_factory(
        security="SSL", properties={"max.connections": "6", "max.connections.per.ip": "3"}
    )
    silent = [_from("127.0.0.2", server.bootstrap) for _ in range(6)]

    def refused_at_once(sock: socket.socket) -> bool:
        sock.settimeout(0.5)
        try:
            return closed_by_server(sock)
        except TimeoutError:
            return False  # held open: its handshake may still come

    try:
        refused = [s for s in silent if refused_at_once(s)]
        assert len(refused) == 3
        assert server.stats["closed:too many connections from one address"] == 3
        context = ssl.create_default_context(cafile=str(placement_sim_certificates.ca_file))
        host = server.bootstrap.rsplit(":", 1)[0]
        started = time.monotonic()
        with context.wrap_socket(_from("127.0.0.3", server.bootstrap), server_hostname=host) as good:
            assert ask(good, 3, 12, {"Topics": None}) is not None
        assert time.monotonic() - started < 5
    finally:
        for sock in silent:
            sock.close()
