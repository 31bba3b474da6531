"""For tests of a secured simulator: a throw-away certificate authority, and the settings each Kafka client
needs to connect (kafka-python, aiokafka, confluent-kafka and kcat).

:func:`make_certificates` needs the ``cryptography`` package (``pip install 'placement-sim[security]'``);
the server itself reads PEM files with the standard ``ssl`` module only.

>>> certs = make_certificates(tmp_path)                      # CA, server keystore, client certificate
>>> props = secured_properties("SASL_SSL", certs, users={"alice": "alice-secret"})
>>> settings = ClientSettings("SASL_SSL", ca_file=str(certs.ca_file), mechanism="SCRAM-SHA-512",
...                           username="alice", password="alice-secret")
>>> KafkaAdminClient(bootstrap_servers=server.bootstrap, **settings.kafka_python())
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from controller.config import (
    LISTENERS,
    SASL_USERS,
    SECURITY_PROTOCOLS,
    SSL_CLIENT_AUTH,
    SSL_KEY_PASSWORD,
    SSL_KEYSTORE_LOCATION,
    SSL_TRUSTSTORE_LOCATION,
)

__all__ = ["DEFAULT_USERS", "Certificates", "ClientSettings", "make_certificates", "secured_properties"]

#: The users a SASL server gets when a test names none.
DEFAULT_USERS: Mapping[str, str] = {"alice": "alice-secret"}

#: The names and addresses the server certificate is valid for (clients check it).
SERVER_HOSTS = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class Certificates:
    """PEM files in ``directory``: a CA, a server keystore it signed, and a client certificate it signed."""

    directory: Path
    #: The CA's certificate: the clients' trust store, and the server's for client certificates.
    ca_file: Path
    #: The server's private key and certificate chain in one file (``ssl.keystore.location``).
    server_keystore: Path
    #: The password of the server's private key (``ssl.key.password``), or None when it is not encrypted.
    server_key_password: str | None
    #: A client certificate and its private key, for ``ssl.client.auth``.
    client_cert: Path
    client_key: Path


def make_certificates(
    directory: str | Path,
    hosts: Iterable[str] = SERVER_HOSTS,
    key_password: str | None = None,
    days: int = 2,
) -> Certificates:
    """A new CA and the certificates it signs, written to ``directory`` (EC P-256 keys, PKCS#8, as
    Kafka's PEM keystores take them); ``key_password`` encrypts the server's key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=days)

    def name(common: str) -> x509.Name:
        return x509.Name(
            [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "placement-sim tests"),
             x509.NameAttribute(NameOID.COMMON_NAME, common)]
        )  # fmt: skip

    def key_pem(key: ec.EllipticCurvePrivateKey, password: str | None = None) -> bytes:
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode())
            if password
            else serialization.NoEncryption()
        )
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(name("placement-sim test CA"))
        .issuer_name(name("placement-sim test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    def issue(common: str, usage: Any, alt_names: list[x509.GeneralName]) -> tuple[Any, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(common))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
            )
        )
        if alt_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        return key, builder.sign(ca_key, hashes.SHA256())

    alt: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt.append(x509.DNSName(host))
    server_key, server_cert = issue("placement-sim", ExtendedKeyUsageOID.SERVER_AUTH, alt)
    client_key, client_cert = issue("placement-sim test client", ExtendedKeyUsageOID.CLIENT_AUTH, [])

    def pem(cert: Any) -> bytes:
        return bytes(cert.public_bytes(serialization.Encoding.PEM))

    certs = Certificates(
        folder,
        folder / "ca.pem",
        folder / "server-keystore.pem",
        key_password,
        folder / "client.pem",
        folder / "client-key.pem",
    )
    certs.ca_file.write_bytes(pem(ca_cert))
    # Kafka's PEM keystore: the private key, then the certificate chain.
    certs.server_keystore.write_bytes(key_pem(server_key, key_password) + pem(server_cert) + pem(ca_cert))
    certs.client_cert.write_bytes(pem(client_cert) + pem(ca_cert))
    certs.client_key.write_bytes(key_pem(client_key))
    for private in (certs.server_keystore, certs.client_key):
        private.chmod(0o600)
    return certs


def secured_properties(
    protocol: str,
    certificates: Certificates | None = None,
    users: Mapping[str, str] | None = None,
    client_auth: str = "none",
    host: str = "127.0.0.1",
) -> dict[str, str]:
    """Server properties for a listener of ``protocol`` on ``host``, ephemeral port: the keystore of
    ``certificates`` for SSL and SASL_SSL, ``users`` for SASL, and client certificates checked against
    the CA when ``client_auth`` is ``requested`` or ``required``."""
    if protocol not in SECURITY_PROTOCOLS:
        raise ValueError(f"security protocol {protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}")
    props = {LISTENERS: f"{protocol}://{host}:0"}
    if protocol.endswith("SSL"):
        if certificates is None:
            raise ValueError(f"{protocol} needs certificates (make_certificates)")
        props[SSL_KEYSTORE_LOCATION] = str(certificates.server_keystore)
        if certificates.server_key_password:
            props[SSL_KEY_PASSWORD] = certificates.server_key_password
        if client_auth != "none":
            props[SSL_TRUSTSTORE_LOCATION] = str(certificates.ca_file)
            # Kafka applies ssl.client.auth to a SASL_SSL listener only with the listener's prefix.
            key = SSL_CLIENT_AUTH if protocol == "SSL" else f"listener.name.sasl_ssl.{SSL_CLIENT_AUTH}"
            props[key] = client_auth
    elif client_auth != "none":
        raise ValueError(f"client certificates need TLS, not {protocol}")
    if protocol.startswith("SASL_"):
        chosen = DEFAULT_USERS if users is None else users
        if any(":" in user or "," in user + password for user, password in chosen.items()):
            raise ValueError("a user name cannot hold ':' or ',', a password cannot hold ','")
        props[SASL_USERS] = ",".join(f"{user}:{password}" for user, password in chosen.items())
    return props


@dataclass(frozen=True)
class ClientSettings:
    """How a client connects to a server of ``security_protocol``, in each client's own terms."""

    security_protocol: str = "PLAINTEXT"
    #: The CA certificate that signed the server's (SSL, SASL_SSL).
    ca_file: str | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    #: A client certificate and its key (``ssl.client.auth``).
    cert_file: str | None = None
    key_file: str | None = None

    @property
    def tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    def as_user(self, username: str, password: str, mechanism: str | None = None) -> ClientSettings:
        """The same settings for another user (or a wrong password), and optionally another mechanism."""
        return replace(self, username=username, password=password, mechanism=mechanism or self.mechanism)

    def kafka_python(self) -> dict[str, Any]:
        """Keyword arguments of kafka-python's clients (KafkaAdminClient, KafkaProducer, ...)."""
        kwargs: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.tls:
            kwargs.update(ssl_cafile=self.ca_file, ssl_check_hostname=True)
            if self.cert_file:
                kwargs.update(ssl_certfile=self.cert_file, ssl_keyfile=self.key_file)
        if self.sasl:
            kwargs.update(
                sasl_mechanism=self.mechanism,
                sasl_plain_username=self.username,
                sasl_plain_password=self.password,
            )
        return kwargs

    def ssl_context(self) -> ssl.SSLContext:
        """A client TLS context that trusts the CA (and presents the client certificate, if any)."""
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.cert_file:
            context.load_cert_chain(self.cert_file, self.key_file)
        return context

    def aiokafka(self) -> dict[str, Any]:
        """Keyword arguments of aiokafka's clients (AIOKafkaAdminClient, AIOKafkaProducer, ...)."""
        kwargs: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.tls:
            kwargs["ssl_context"] = self.ssl_context()
        if self.sasl:
            kwargs.update(
                sasl_mechanism=self.mechanism,
                sasl_plain_username=self.username,
                sasl_plain_password=self.password,
            )
        return kwargs

    def librdkafka(self) -> dict[str, str]:
        """librdkafka properties: confluent-kafka's configuration dict, kcat's ``-X`` options."""
        props = {"security.protocol": self.security_protocol}
        if self.tls:
            if self.ca_file:
                props["ssl.ca.location"] = self.ca_file
            if self.cert_file:
                props["ssl.certificate.location"] = self.cert_file
                props["ssl.key.location"] = self.key_file or ""
        if self.sasl:
            props.update(
                {"sasl.mechanism": self.mechanism or "", "sasl.username": self.username or "",
                 "sasl.password": self.password or ""}
            )  # fmt: skip
        return props

    def kcat(self) -> list[str]:
        """kcat's command-line options: ``-X key=value`` for each librdkafka property."""
        return [arg for key, value in self.librdkafka().items() for arg in ("-X", f"{key}={value}")]
