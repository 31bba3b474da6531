"""controller.security without a network: the SASL mechanisms' server side, and the set-up's errors."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ssl

import pytest
from kafka.net.sasl.scram import ScramClient

from controller.config import ConfigError, ServerConfig
from controller.security import (
    AuthenticationFailed,
    PlainServer,
    ScramServer,
    Security,
    scram_credential,
)
from controller.security_testing import make_certificates, secured_properties

GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


# ------------------------------------------------------------------------------------ PLAIN


def test_plain_accepts_the_right_password():
    server = PlainServer({"alice": "alice-secret"})
    assert server.evaluate(b"\0alice\0alice-secret") == b""
    assert (server.complete, server.user) == (True, "alice")
    assert PlainServer({"alice": "alice-secret"}).evaluate(b"alice\0alice\0alice-secret") == b""


@pytest.mark.parametrize(
    ("token", "message", "detail"),
    [
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password", None),
        (b"\0mallory\0alice-secret", "Authentication failed: Invalid username or password", None),
        (
            b"bob\0alice\0alice-secret",
            "Authentication failed: Client requested an authorization id that is different from username",
            None,
        ),
        (b"\0alice\0", GENERIC.format("PLAIN"), "Authentication failed: password not specified"),
        (b"alice-secret", GENERIC.format("PLAIN"), "Authentication failed: username not specified"),
        (b"\0\0alice-secret", GENERIC.format("PLAIN"), "Authentication failed: username not specified"),
    ],
)
def test_plain_failures_say_what_kafka_says(token, message, detail):
    server = PlainServer({"alice": "alice-secret"})
    with pytest.raises(AuthenticationFailed) as info:
        server.evaluate(token)
    assert (info.value.message, info.value.detail) == (message, detail or message)
    assert "alice-secret" not in info.value.detail and not server.complete


# ------------------------------------------------------------------------------------ SCRAM


def test_scram_sha_256_answers_rfc_7677s_example():
    """RFC 7677 section 3: user "user", password "pencil"; every message byte for byte."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = scram_credential("SCRAM-SHA-256", "pencil", salt, 4096)
    server = ScramServer(
        "SCRAM-SHA-256", {"user": credential}, nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert (server.complete, server.user) == (True, "user")


def test_a_scram_credential_keeps_no_password():
    credential = scram_credential("SCRAM-SHA-512", "alice-secret", b"salt" * 4, 4096)
    salted = hashlib.pbkdf2_hmac("sha512", b"alice-secret", b"salt" * 4, 4096)
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    assert credential.stored_key == hashlib.sha512(client_key).digest()
    assert credential.server_key == hmac.new(salted, b"Server Key", "sha512").digest()
    assert b"alice-secret" not in repr(credential).encode()


def scram_exchange(
    mechanism: str, password: str, nonce_check: str = "exact"
) -> tuple[ScramServer, ScramClient]:
    """kafka-python's SCRAM client (an independent implementation) against the server, up to the proof."""
    credential = scram_credential(mechanism, "alice-secret", b"0123456789abcdef", 4096)
    server = ScramServer(mechanism, {"alice": credential}, nonce_check=nonce_check)
    client = ScramClient("alice", password, mechanism)
    client.process_server_first_message(server.evaluate(client.first_message()))
    return server, client


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_authenticates_kafka_pythons_client(mechanism):
    server, client = scram_exchange(mechanism, "alice-secret")
    client.process_server_final_message(server.evaluate(client.final_message()))  # checks our signature
    assert (server.complete, server.user) == (True, "alice")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_wrong_scram_password_fails_with_kafkas_generic_message(mechanism):
    server, client = scram_exchange(mechanism, "wrong")
    with pytest.raises(AuthenticationFailed) as info:
        server.evaluate(client.final_message())
    assert (info.value.message, info.value.detail) == (
        GENERIC.format(mechanism),
        "Invalid client credentials",
    )
    assert not server.complete


def test_an_unknown_scram_user_fails_at_the_first_message():
    server = ScramServer("SCRAM-SHA-512", {})
    with pytest.raises(AuthenticationFailed) as info:
        server.evaluate(b"n,,n=mallory,r=abc")
    assert info.value.message == GENERIC.format("SCRAM-SHA-512")
    assert info.value.detail == "Authentication failed: Invalid user credentials"


@pytest.mark.parametrize(
    "first",
    [
        b"y,,n=alice,r=abc",
        b"p=tls-unique,,n=alice,r=abc",
        b"n,,r=abc,n=alice",
        b"n,,n=alice",
        b"n=alice,r=abc",
    ],
)
def test_a_malformed_client_first_message_or_channel_binding_is_refused(first):
    server = ScramServer("SCRAM-SHA-256", {"alice": scram_credential("SCRAM-SHA-256", "x", b"s" * 16, 4096)})
    with pytest.raises(AuthenticationFailed, match="invalid credentials") as info:
        server.evaluate(first)
    assert info.value.detail == "Invalid SCRAM client first message format"


def test_the_final_nonce_must_be_the_servers_unless_the_suffix_check_is_chosen():
    """librdkafka before 2.6.1 sends r=<client nonce><client nonce><server nonce>."""
    for check, accepted in (("exact", False), ("suffix", True)):
        server, client = scram_exchange("SCRAM-SHA-512", "alice-secret", check)
        client_nonce = client.nonce[: len(client.nonce) - 32].decode()
        client.nonce = client_nonce.encode() + client.nonce
        client.auth_message = client.auth_message.replace(
            b",c=biws,r=", b",c=biws,r=" + client_nonce.encode()
        )
        client.client_signature = client.hmac(client.stored_key, client.auth_message)
        client.client_proof = bytes(
            a ^ b for a, b in zip(client.client_key, client.client_signature, strict=True)
        )
        if accepted:
            assert server.evaluate(client.final_message()).startswith(b"v=")
        else:
            with pytest.raises(AuthenticationFailed) as info:
                server.evaluate(client.final_message())
            assert info.value.detail.startswith(
                "Invalid client nonce in the final client message. (the client repeats its nonce"
            )


# ------------------------------------------------------------------------------------ set-up errors


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def encrypted(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("encrypted"), key_password="key-secret")


def security(props: dict[str, str]) -> Security:
    return Security(ServerConfig.from_properties(props))


def config_error(props: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        security(props)
    return info.value


def test_each_protocol_sets_up_what_it_needs(certs):
    plain = security({"listeners": "PLAINTEXT://127.0.0.1:0"})
    assert (plain.ssl, plain.session()) == (None, None)
    tls = security(secured_properties("SSL", certs))
    assert (
        isinstance(tls.ssl, ssl.SSLContext) and tls.ssl.verify_mode == ssl.CERT_NONE and tls.session() is None
    )
    both = security(secured_properties("SASL_SSL", certs))
    assert both.ssl is not None and both.session() is not None
    assert both.mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def test_client_auth_applies_to_ssl_and_to_sasl_ssl_only_with_the_listener_prefix(certs):
    props = {**secured_properties("SSL", certs), "ssl.truststore.location": str(certs.ca_file)}
    assert security({**props, "ssl.client.auth": "required"}).ssl.verify_mode == ssl.CERT_REQUIRED
    assert security({**props, "ssl.client.auth": "requested"}).ssl.verify_mode == ssl.CERT_OPTIONAL
    sasl = {**secured_properties("SASL_SSL", certs), "ssl.truststore.location": str(certs.ca_file)}
    assert security({**sasl, "ssl.client.auth": "required"}).ssl.verify_mode == ssl.CERT_NONE
    prefixed = {**sasl, "listener.name.sasl_ssl.ssl.client.auth": "required"}
    assert security(prefixed).ssl.verify_mode == ssl.CERT_REQUIRED


def test_an_encrypted_key_needs_its_password(encrypted):
    props = secured_properties("SSL", encrypted)
    assert props["ssl.key.password"] == "key-secret"
    assert security(props).ssl is not None
    del props["ssl.key.password"]
    error = config_error(props)
    assert (error.key, str(error)) == (
        "ssl.key.password",
        f"ssl.key.password: the private key in {encrypted.server_keystore} is encrypted",
    )
    error = config_error({**props, "ssl.key.password": "wrong"})
    assert error.key == "ssl.key.password" and str(error).startswith(
        "ssl.key.password: cannot decrypt the private key"
    )
    assert "wrong" not in str(error).removeprefix("ssl.key.password")


def test_the_keystore_as_pem_text(certs):
    pem = certs.server_keystore.read_text()
    key = pem[: pem.index("-----END PRIVATE KEY-----") + len("-----END PRIVATE KEY-----")]
    chain = pem[len(key) :]
    props = {
        "listeners": "SSL://127.0.0.1:0",
        "ssl.keystore.key": key,
        "ssl.keystore.certificate.chain": chain,
    }
    assert security(props).ssl is not None
    one_line = {k: v.replace("\n", " ") if k.startswith("ssl.") else v for k, v in props.items()}
    assert security(one_line).ssl is not None  # as a properties file may give it, on one line


@pytest.mark.parametrize(
    ("props", "key", "message"),
    [
        (
            {"listeners": "SSL://127.0.0.1:0"},
            "ssl.keystore.location",
            "ssl.keystore.location: listener SSL (SSL) needs a keystore: a PEM file with the private key and the "
            "certificate chain, or ssl.keystore.certificate.chain and ssl.keystore.key",
        ),
        (
            {"listeners": "SASL_SSL://127.0.0.1:0", "ssl.keystore.location": "/no/such/keystore.pem"},
            "ssl.keystore.location",
            "ssl.keystore.location: cannot read /no/such/keystore.pem: No such file or directory",
        ),
        (
            {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "JKS"},
            "ssl.keystore.type",
            "ssl.keystore.type: 'JKS' stores are not read; the simulator reads PEM files (PEM)",
        ),
        (
            {
                "listeners": "SSL://127.0.0.1:0",
                "ssl.keystore.password": "x",
                "ssl.keystore.location": "k.pem",
            },
            "ssl.keystore.password",
            "ssl.keystore.password: SSL key store password cannot be specified with PEM format, only key "
            "password may be specified (ssl.key.password)",
        ),
        (
            {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.key": "-----BEGIN PRIVATE KEY-----"},
            "ssl.keystore.certificate.chain",
            "ssl.keystore.certificate.chain: needed with ssl.keystore.key",
        ),
        (
            {"listeners": "SASL_PLAINTEXT://127.0.0.1:0"},
            "simulator.sasl.users",
            "simulator.sasl.users: listener SASL_PLAINTEXT (SASL_PLAINTEXT) needs users (user:password,...)",
        ),
        (
            {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN,GSSAPI"},
            "sasl.enabled.mechanisms",
            "sasl.enabled.mechanisms: 'GSSAPI' is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512",
        ),
        (
            {"simulator.sasl.users": "alice:alice-secret,bob"},
            "simulator.sasl.users",
            "simulator.sasl.users: user 'bob' is not user:password (or user:MECHANISM:password)",
        ),
        (
            {"simulator.sasl.users": "alice:alice-secret,alice:other-secret"},
            "simulator.sasl.users",
            "simulator.sasl.users: user 'alice' appears twice",
        ),
        (
            {"simulator.sasl.scram.iterations": "1000"},
            "simulator.sasl.scram.iterations",
            "simulator.sasl.scram.iterations: 1000 is below the minimum 4096",
        ),
    ],
)
def test_set_up_errors_name_the_key_and_never_show_a_password(props, key, message):
    error = config_error(props)
    assert (error.key, str(error)) == (key, message)
    assert "secret" not in str(error)


def test_scram_credentials_are_salted_at_startup():
    props = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "simulator.sasl.users": "alice:alice-secret"}
    first, second = security(props), security(props)
    one = first.mechanism_server("SCRAM-SHA-256")._credentials["alice"]  # type: ignore[union-attr]
    two = second.mechanism_server("SCRAM-SHA-256")._credentials["alice"]  # type: ignore[union-attr]
    assert one.salt != two.salt and one.iterations == two.iterations == 4096
