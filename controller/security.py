"""TLS and SASL on the listeners, with Kafka's names and behaviour.

The bootstrap listener's security protocol (``listeners``, ``listener.security.protocol.map``) is every
broker listener's too:

- ``SSL`` and ``SASL_SSL``: TLS from a PEM keystore (``ssl.keystore.location``, or the PEM text of
  ``ssl.keystore.certificate.chain`` and ``ssl.keystore.key``; ``ssl.key.password`` for an encrypted
  key). Client certificates (``ssl.client.auth``) are checked against the PEM truststore
  (``ssl.truststore.location`` or ``ssl.truststore.certificates``); as in Kafka, a ``SASL_SSL``
  listener asks for them only when ``listener.name.<name>.ssl.client.auth`` says so.
- ``SASL_PLAINTEXT`` and ``SASL_SSL``: SASL with ``PLAIN``, ``SCRAM-SHA-256`` and ``SCRAM-SHA-512``
  (``sasl.enabled.mechanisms``) for the users of ``simulator.sasl.users``. The SCRAM credentials are
  salted once at startup (a random salt per user and mechanism, ``simulator.sasl.scram.iterations``).

The SASL exchange follows Kafka's ``SaslServerAuthenticator``. Until a connection has authenticated,
a frame larger than ``sasl.server.max.receive.size`` closes it before its body is read
(:meth:`SaslSession.frame_limit`), as Kafka refuses such a receive, so that clients that have not
authenticated cannot hold the server's request bytes; and its session (:meth:`SaslSession.guard`, which wraps the connection's ``answer`` callable) sees every
frame before the dispatch does: ApiVersions (once) and SaslHandshake are answered; after a version 0 handshake the frames are raw SASL tokens (answered with raw tokens),
after a version 1 handshake they must be SaslAuthenticate requests; anything else closes the connection.
A mechanism that is not enabled is answered with UNSUPPORTED_SASL_MECHANISM and the enabled list, a
failed authentication with SASL_AUTHENTICATION_FAILED and Kafka's message; both answers come after
``connection.failed.authentication.delay.ms``, as Kafka delays them, and the server closes the connection
:data:`CLOSE_AFTER` seconds later (after a version 0 handshake a failure is not answered: the connection
closes after the delay). Kafka checks the nonce of SCRAM's final message exactly (Kafka 4); with
``simulator.sasl.scram.nonce.check=suffix`` it may repeat the client's nonce first, as librdkafka before
2.6.1 sends it and Kafka 3.8.1 to 3.9 accept it. A failure is logged at warning with the peer, the
mechanism, the user and the reason, never with a password or a SCRAM proof. The handlers of SaslHandshake and SaslAuthenticate
(:mod:`controller.handlers.sasl_handshake`, :mod:`controller.handlers.sasl_authenticate`) do the
exchange through the request context's session (``RequestContext.sasl``), and answer ILLEGAL_SASL_STATE on a
connection that has no exchange to do (a listener without SASL, or one already authenticated).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import os
import re
import secrets
import socket
import ssl
import struct
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from controller.answers import Answer, Close, Closing, Later
from controller.config import (
    SASL_MAX_RECEIVE_SIZE,
    SASL_USERS,
    SSL_CLIENT_AUTH,
    SSL_KEY_PASSWORD,
    SSL_KEYSTORE_CHAIN,
    SSL_KEYSTORE_KEY,
    SSL_KEYSTORE_LOCATION,
    SSL_KEYSTORE_PASSWORD,
    SSL_TRUSTSTORE_CERTIFICATES,
    SSL_TRUSTSTORE_LOCATION,
    SSL_TRUSTSTORE_PASSWORD,
    ConfigError,
    ServerConfig,
)
from controller.logsafe import shown
from protocol.codes import ApiKey, ErrorCode

log = logging.getLogger(__name__)

__all__ = [
    "AuthenticationFailed",
    "PlainServer",
    "SaslSession",
    "ScramCredential",
    "ScramServer",
    "Security",
    "salted_credential",
    "scram_credential",
]

_KEY_VERSION = struct.Struct(">hh")
_SIZE = struct.Struct(">i")

#: Seconds between a failed authentication's answer and closing the connection: clients that get the
#: answer together with the end of the connection may drop it (kafka-python does).
CLOSE_AFTER = 0.05

#: The hash behind each SCRAM mechanism.
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


# ------------------------------------------------------------------------------------ mechanisms


class AuthenticationFailed(Exception):
    """A SASL exchange that failed. ``message`` is what the client is told (Kafka's words), ``detail``
    what the log says besides; neither ever holds a password or a proof."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail or message


def _invalid_credentials(mechanism: str, detail: str) -> AuthenticationFailed:
    """What Kafka tells a client when a mechanism fails without a message meant for it (a SaslException):
    one sentence that says nothing of the user."""
    return AuthenticationFailed(
        f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}",
        detail,
    )


class PlainServer:
    """The server side of SASL/PLAIN (RFC 4616), as Kafka's ``PlainSaslServer`` answers."""

    mechanism = "PLAIN"

    def __init__(self, passwords: Mapping[str, str]) -> None:
        self._passwords = passwords
        self.complete = False
        self.user: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        # [authzid] NUL authcid NUL passwd; Kafka reads the first three parts and ignores the rest.
        parts = token.decode("utf-8", "replace").split("\0", 3)[:3]
        authzid, user, password = (parts + ["", ""])[:3]
        self.user = user or None
        if not user:
            raise _invalid_credentials(self.mechanism, "Authentication failed: username not specified")
        if not password:
            raise _invalid_credentials(self.mechanism, "Authentication failed: password not specified")
        expected = self._passwords.get(user)
        # Compared in constant time, and a comparison is made for unknown users too.
        matches = hmac.compare_digest(password.encode("utf-8"), (expected or "\0").encode("utf-8"))
        if expected is None or not matches:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        self.complete = True
        return b""


@dataclass(frozen=True)
class ScramCredential:
    """What a server keeps of a SCRAM password (RFC 5802): never the password itself."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def initial_scram_credentials(
    users: Iterable[tuple[str, str | None, str]], iterations: int
) -> dict[str, dict[str, ScramCredential]]:
    """Mechanism name -> user -> credential, from ``simulator.sasl.users``' (user, mechanism or None for
    every one, password) entries, each salted once with a random salt."""
    by_mechanism: dict[str, dict[str, ScramCredential]] = {name: {} for name in SCRAM_HASHES}
    general = {user: password for user, mechanism, password in users if mechanism is None}
    specific = {(user, mechanism): password for user, mechanism, password in users if mechanism}
    for mechanism, credentials in by_mechanism.items():
        for user in dict.fromkeys([*general, *(u for u, m in specific if m == mechanism)]):
            password = specific.get((user, mechanism), general.get(user))
            if password is not None:
                credentials[user] = scram_credential(mechanism, password, os.urandom(16), iterations)
    return by_mechanism


def scram_credential(mechanism: str, password: str, salt: bytes, iterations: int) -> ScramCredential:
    """SaltedPassword = Hi(password, salt, i), then :func:`salted_credential`."""
    salted = hashlib.pbkdf2_hmac(SCRAM_HASHES[mechanism], password.encode("utf-8"), salt, iterations)
    return salted_credential(mechanism, salted, salt, iterations)


def salted_credential(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    """StoredKey = H(HMAC(SaltedPassword, "Client Key")); ServerKey = HMAC(SaltedPassword, "Server Key")."""
    digest = SCRAM_HASHES[mechanism]
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    return ScramCredential(
        salt,
        iterations,
        hashlib.new(digest, client_key).digest(),
        hmac.new(salted, b"Server Key", digest).digest(),
    )


_ATTRIBUTE = re.compile(r"([a-zA-Z])=(.*)", re.S)


def _attributes(message: str, kind: str, mechanism: str) -> list[tuple[str, str]]:
    pairs = []
    for part in message.split(","):
        match = _ATTRIBUTE.fullmatch(part)
        if match is None:
            raise _invalid_credentials(mechanism, f"Invalid SCRAM {kind} message format")
        pairs.append((match.group(1), match.group(2)))
    return pairs


class ScramServer:
    """The server side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), as Kafka's
    ``ScramSaslServer`` answers: client-first -> server-first (nonce, salt, iterations), client-final
    (proof) -> server-final (the server's signature)."""

    def __init__(
        self,
        mechanism: str,
        credentials: Mapping[str, ScramCredential],
        nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24),
        nonce_check: str = "exact",
    ) -> None:
        self.mechanism = mechanism
        self._suffix_nonce = nonce_check == "suffix"
        self._digest = SCRAM_HASHES[mechanism]
        self._credentials = credentials
        self._nonce = nonce
        self.complete = False
        self.user: str | None = None
        self._step = 0
        self._first_bare = ""
        self._server_first = ""
        self._client_nonce = ""
        self._combined_nonce = ""
        self._credential: ScramCredential | None = None

    def evaluate(self, token: bytes) -> bytes:
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise _invalid_credentials(self.mechanism, "SCRAM message is not UTF-8") from None
        if self._step == 0:
            return self._client_first(message)
        if self._step == 1:
            return self._client_final(message)
        raise _invalid_credentials(self.mechanism, "Unexpected SCRAM message after the exchange ended")

    def _client_first(self, message: str) -> bytes:
        # gs2-header "n,[a=authzid]," (no channel binding, as Kafka), then n=saslname,r=nonce[,ext...]
        gs2, sep, bare = message.partition(",")
        authzid_part, sep2, bare = bare.partition(",")
        if gs2 != "n" or not sep or not sep2 or (authzid_part and not authzid_part.startswith("a=")):
            raise _invalid_credentials(self.mechanism, "Invalid SCRAM client first message format")
        pairs = _attributes(bare, "client first", self.mechanism)
        if len(pairs) < 2 or pairs[0][0] != "n" or pairs[1][0] != "r" or not pairs[1][1]:
            raise _invalid_credentials(self.mechanism, "Invalid SCRAM client first message format")
        user = pairs[0][1].replace("=2C", ",").replace("=3D", "=")
        self.user = user or None
        credential = self._credentials.get(user)
        if credential is None:
            raise _invalid_credentials(self.mechanism, "Authentication failed: Invalid user credentials")
        authzid = authzid_part[2:].replace("=2C", ",").replace("=3D", "=")
        if authzid and authzid != user:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        self._credential = credential
        self._first_bare = bare
        self._client_nonce = pairs[1][1]
        self._combined_nonce = self._client_nonce + self._nonce()
        salt = base64.b64encode(credential.salt).decode("ascii")
        self._server_first = f"r={self._combined_nonce},s={salt},i={credential.iterations}"
        self._step = 1
        return self._server_first.encode("utf-8")

    def _client_final(self, message: str) -> bytes:
        without_proof, sep, proof_text = message.rpartition(",p=")
        pairs = _attributes(without_proof, "client final", self.mechanism) if sep else []
        if len(pairs) < 2 or pairs[0][0] != "c" or pairs[1][0] != "r":
            raise _invalid_credentials(self.mechanism, "Invalid SCRAM client final message format")
        nonce = pairs[1][1]
        if nonce != self._combined_nonce and not (
            self._suffix_nonce and nonce.endswith(self._combined_nonce)
        ):
            hint = ""
            if nonce == self._client_nonce + self._combined_nonce:
                hint = (
                    " (the client repeats its nonce, as librdkafka before 2.6.1 does; "
                    "simulator.sasl.scram.nonce.check=suffix accepts that, as Kafka 3.8.1 to 3.9 do)"
                )
            raise _invalid_credentials(
                self.mechanism, "Invalid client nonce in the final client message." + hint
            )
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except ValueError:
            raise _invalid_credentials(self.mechanism, "Invalid SCRAM client final message format") from None
        credential = self._credential
        assert credential is not None
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        signature = hmac.new(credential.stored_key, auth_message, self._digest).digest()
        if len(proof) != len(signature):
            raise _invalid_credentials(self.mechanism, "Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._digest, client_key).digest(), credential.stored_key):
            raise _invalid_credentials(self.mechanism, "Invalid client credentials")
        server_signature = hmac.new(credential.server_key, auth_message, self._digest).digest()
        self._step = 2
        self._credential = None
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)


Mechanism = PlainServer | ScramServer


# ------------------------------------------------------------------------------------ the exchange


class State(Enum):
    HANDSHAKE = "waiting for SaslHandshake"
    AUTHENTICATE = "authenticating"
    COMPLETE = "authenticated"
    FAILED = "failed"


class SaslSession:
    """One connection's SASL exchange on a ``SASL_*`` listener: see the module docstring."""

    def __init__(self, security: Security, peer: str = "") -> None:
        self.security = security
        self.peer = peer
        self.state = State.HANDSHAKE
        self._versions_answered = False
        #: After a version 0 handshake, tokens arrive as raw frames.
        self.raw = False
        self.mechanism: str | None = None
        self._server: Mechanism | None = None
        #: The authenticated user.
        self.user: str | None = None
        #: Set by a handler whose answer must be followed by closing the connection: (reason, detail).
        self._failure: tuple[str, str] | None = None

    @property
    def authenticated(self) -> bool:
        return self.state is State.COMPLETE

    # ---- what the handlers call

    @property
    def expects_handshake(self) -> bool:
        return self.state is State.HANDSHAKE

    @property
    def expects_token(self) -> bool:
        return self.state is State.AUTHENTICATE

    def handshake(self, mechanism: str, version: int) -> dict[str, Any]:
        """The SaslHandshake answer: the enabled mechanisms, with UNSUPPORTED_SASL_MECHANISM (and the
        connection closed after the answer) when ``mechanism`` is not one of them."""
        enabled = list(self.security.mechanisms)
        if mechanism not in enabled:
            self._failed(
                "unsupported SASL mechanism",
                f"{shown(mechanism, 50)} is not enabled (sasl.enabled.mechanisms={','.join(enabled)})",
            )
            return {"ErrorCode": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Mechanisms": enabled}
        self.mechanism = mechanism
        self._server = self.security.mechanism_server(mechanism)
        self.raw = version == 0
        self.state = State.AUTHENTICATE
        return {"ErrorCode": 0, "Mechanisms": enabled}

    def authenticate(self, token: bytes) -> dict[str, Any]:
        """The SaslAuthenticate answer to one client token."""
        try:
            answer = self._evaluate(token)
        except AuthenticationFailed as failed:
            return {
                "ErrorCode": ErrorCode.SASL_AUTHENTICATION_FAILED,
                "ErrorMessage": failed.message,
                "AuthBytes": b"",
                "SessionLifetimeMs": 0,
            }
        return {"ErrorCode": 0, "ErrorMessage": None, "AuthBytes": answer, "SessionLifetimeMs": 0}

    def _evaluate(self, token: bytes) -> bytes:
        server = self._server
        assert server is not None and self.mechanism is not None
        try:
            answer = server.evaluate(token)
        except AuthenticationFailed as failed:
            who = f"user {shown(server.user, 100)}" if server.user else "no user"
            self._failed("authentication failed", f"{self.mechanism}, {who}: {failed.detail}")
            raise
        if server.complete:
            self.state = State.COMPLETE
            self.user = server.user
            self._server = None
            self.security.stats[f"authenticated:{self.mechanism}"] += 1
            log.info("%s authenticated as %s with %s", self.peer, shown(self.user, 100), self.mechanism)
        return answer

    def _failed(self, reason: str, detail: str) -> None:
        """Logged and counted now (the client may close first); the connection closes after the answer."""
        self._failure = (reason, detail)
        self.state = State.FAILED
        self.security.stats[reason] += 1
        log.warning("%s from %s: %s", reason, self.peer, detail)

    # ---- every frame, until the connection has authenticated

    def frame_limit(self, after: Callable[[], tuple[int, str]]) -> Callable[[], tuple[int, str]]:
        """The connection's largest frame: ``sasl.server.max.receive.size`` until it has authenticated,
        then ``after``'s."""
        before = (self.security.max_receive, SASL_MAX_RECEIVE_SIZE)

        def limit() -> tuple[int, str]:
            return after() if self.state is State.COMPLETE else before

        return limit

    def guard(
        self, answer: Callable[[bytes], Answer], supports: Callable[[int, int], bool]
    ) -> Callable[[bytes], Answer]:
        """``answer`` for a connection on a SASL listener: the frames go through the exchange until it has
        authenticated, then straight to ``answer``. ``supports(api_key, version)`` says which versions the
        server answers (an ApiVersions request of an unsupported version does not use up the one allowed)."""

        def guarded(frame: bytes) -> Answer:
            if self.state is State.COMPLETE:
                return answer(frame)
            if frame.__class__ is not bytes:  # a big frame, read in place (controller.connection)
                frame = bytes(frame)
            return self._answer(frame, answer, supports)

        return guarded

    def _answer(
        self, frame: bytes, answer: Callable[[bytes], Answer], supports: Callable[[int, int], bool]
    ) -> Answer:
        """The answer to one frame before authentication (raises Close, as Kafka closes)."""
        if self.state is State.AUTHENTICATE and self.raw:
            try:
                token = self._evaluate(frame)
            except AuthenticationFailed:
                # After a version 0 handshake, Kafka closes without an answer.
                return self._answer_failure(None)
            return _SIZE.pack(len(token)) + token
        if len(frame) < _KEY_VERSION.size:
            raise Close("malformed request header", f"{len(frame)} byte(s)")
        api_key, version = _KEY_VERSION.unpack_from(frame)
        if self.state is State.HANDSHAKE:
            if api_key == ApiKey.API_VERSIONS and not self._versions_answered:
                self._versions_answered = supports(api_key, version)
                return answer(frame)
            if api_key != ApiKey.SASL_HANDSHAKE:
                name = (
                    "a second ApiVersions request" if api_key == ApiKey.API_VERSIONS else f"apiKey {api_key}"
                )
                raise Close(
                    "request before SASL authentication",
                    f"{name} during the SASL handshake (is the client's security protocol "
                    f"{self.security.protocol}?)",
                )
        elif self.state is State.AUTHENTICATE and api_key != ApiKey.SASL_AUTHENTICATE:
            raise Close("request before SASL authentication", f"apiKey {api_key} during SASL authentication")
        elif self.state is State.FAILED:
            raise Close("authentication failed", "a request after the failed authentication")
        answered = answer(frame)
        if self._failure is None:
            return answered
        return self._answer_failure(answered)

    def _answer_failure(self, answer: Answer | None) -> Later:
        def unexpected(exc: Exception) -> Answer:
            raise Close("authentication failed", f"{type(exc).__name__}: {exc}")

        return Later(self._fail(answer), _as_is, unexpected)

    async def _fail(self, answer: Answer | None) -> Closing:
        """Kafka answers a failed authentication after ``connection.failed.authentication.delay.ms`` and
        closes the connection; here it closes :data:`CLOSE_AFTER` seconds after the answer is sent."""
        self.state = State.FAILED
        reason, detail = self._failure or ("authentication failed", "")
        if isinstance(answer, Later):
            answer = await answer.run()
        await asyncio.sleep(self.security.failed_delay)
        close = Close(reason, detail)  # logged already
        if answer is None:
            return Closing(None, close)
        frame = answer.frame if isinstance(answer, Closing) else answer
        return Closing(frame, close, CLOSE_AFTER)


def _as_is(value: Closing) -> Closing:
    return value


# ------------------------------------------------------------------------------------ TLS


_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)


def _pem_text(key: str, text: str) -> str:
    """PEM text as a property gives it (on one line or several) laid out as PEM."""
    blocks = _PEM_BLOCK.findall(text)
    if not blocks:
        raise ConfigError(f"{key}: not PEM text (no -----BEGIN ...----- block)", key)
    out = []
    for label, body in blocks:
        # Header lines (Proc-Type, DEK-Info) of traditional encrypted keys stay as they are.
        lines = [line.strip() for line in body.strip().splitlines() if line.strip()]
        headers = [line for line in lines if ":" in line]
        data = "".join(line for line in lines if ":" not in line).replace(" ", "")
        wrapped = [data[i : i + 64] for i in range(0, len(data), 64)]
        out.append("\n".join([f"-----BEGIN {label}-----", *headers, *([""] if headers else []), *wrapped,
                              f"-----END {label}-----"]))  # fmt: skip
    return "\n".join(out) + "\n"


def _read(key: str, location: str) -> str:
    try:
        return Path(location).read_text(encoding="ascii")
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {location}: {exc.strerror or exc}", key) from exc
    except UnicodeDecodeError:
        raise ConfigError(f"{key}: {location} is not a PEM file", key) from None


def _encrypted(pem: str) -> bool:
    return "ENCRYPTED PRIVATE KEY" in pem or "Proc-Type: 4,ENCRYPTED" in pem


def _load_keystore(context: ssl.SSLContext, config: ServerConfig) -> None:
    location = config.ssl_keystore_location
    chain, key = config.ssl_keystore_chain, config.ssl_keystore_key
    password = config.ssl_key_password or ""
    if config.ssl_keystore_password:
        raise ConfigError(
            f"{SSL_KEYSTORE_PASSWORD}: SSL key store password cannot be specified with PEM format, only key "
            f"password may be specified ({SSL_KEY_PASSWORD})",
            SSL_KEYSTORE_PASSWORD,
        )
    if location and (chain or key):
        raise ConfigError(
            f"{SSL_KEYSTORE_LOCATION}: cannot be given with {SSL_KEYSTORE_CHAIN} and {SSL_KEYSTORE_KEY}",
            SSL_KEYSTORE_LOCATION,
        )
    if location:
        pem, where, name = _read(SSL_KEYSTORE_LOCATION, location), location, SSL_KEYSTORE_LOCATION
    elif chain and key:
        pem = _pem_text(SSL_KEYSTORE_KEY, key) + _pem_text(SSL_KEYSTORE_CHAIN, chain)
        where, name = "the PEM text", SSL_KEYSTORE_KEY
    elif chain or key:
        missing = SSL_KEYSTORE_KEY if chain else SSL_KEYSTORE_CHAIN
        raise ConfigError(
            f"{missing}: needed with {SSL_KEYSTORE_CHAIN if chain else SSL_KEYSTORE_KEY}", missing
        )
    else:
        raise ConfigError(
            f"{SSL_KEYSTORE_LOCATION}: listener {config.listener.name} ({config.listener.security_protocol}) "
            f"needs a keystore: a PEM file with the private key and the certificate chain, or "
            f"{SSL_KEYSTORE_CHAIN} and {SSL_KEYSTORE_KEY}",
            SSL_KEYSTORE_LOCATION,
        )
    if "PRIVATE KEY" not in pem or "CERTIFICATE" not in pem:
        raise ConfigError(f"{name}: {where} needs a private key and a certificate chain in PEM", name)
    if _encrypted(pem) and not password:
        raise ConfigError(f"{SSL_KEY_PASSWORD}: the private key in {where} is encrypted", SSL_KEY_PASSWORD)
    # ssl reads files only: the PEM goes through a private temporary file, removed at once.
    import tempfile  # only for listeners given PEM text: not paid at every start

    handle, path = tempfile.mkstemp(prefix="placement-sim-", suffix=".pem")
    try:
        with os.fdopen(handle, "w", encoding="ascii") as out:
            out.write(pem)
        # A callable, so that OpenSSL never prompts on a terminal for a password.
        context.load_cert_chain(path, password=lambda: password.encode("utf-8"))
    except ssl.SSLError as exc:
        if _encrypted(pem):
            raise ConfigError(
                f"{SSL_KEY_PASSWORD}: cannot decrypt the private key in {where} ({exc.reason or exc})",
                SSL_KEY_PASSWORD,
            ) from None
        raise ConfigError(
            f"{name}: cannot use the key and certificate chain in {where} ({exc.reason or exc})", name
        ) from None
    finally:
        os.unlink(path)


def _client_auth(config: ServerConfig) -> str:
    """``ssl.client.auth`` as Kafka applies it: on SSL listeners; on SASL_SSL only with the listener prefix."""
    prefixed = f"listener.name.{config.listener.name.lower()}.{SSL_CLIENT_AUTH}"
    raw = config.properties.get(prefixed)
    if raw is not None and raw.strip():
        value = raw.strip()
        if value not in ("none", "requested", "required"):
            raise ConfigError(f"{prefixed}: {value!r} is not one of none, requested, required", prefixed)
        return value
    return config.ssl_client_auth if config.listener.security_protocol == "SSL" else "none"


def server_context(config: ServerConfig) -> ssl.SSLContext:
    """The listeners' TLS context: TLS 1.2 and 1.3 (Kafka's ``ssl.enabled.protocols``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_keystore(context, config)
    client_auth = _client_auth(config)
    context.verify_mode = {
        "none": ssl.CERT_NONE,
        "requested": ssl.CERT_OPTIONAL,
        "required": ssl.CERT_REQUIRED,
    }[client_auth]
    if config.ssl_truststore_password:
        raise ConfigError(
            f"{SSL_TRUSTSTORE_PASSWORD}: SSL trust store password cannot be specified for PEM format",
            SSL_TRUSTSTORE_PASSWORD,
        )
    location, certificates = config.ssl_truststore_location, config.ssl_truststore_certificates
    if location and certificates:
        raise ConfigError(
            f"{SSL_TRUSTSTORE_LOCATION}: cannot be given with {SSL_TRUSTSTORE_CERTIFICATES}",
            SSL_TRUSTSTORE_LOCATION,
        )
    if client_auth != "none":
        try:
            if location:
                context.load_verify_locations(cadata=_read(SSL_TRUSTSTORE_LOCATION, location))
            elif certificates:
                context.load_verify_locations(cadata=_pem_text(SSL_TRUSTSTORE_CERTIFICATES, certificates))
            else:  # as Kafka falls back to the JVM's trust store
                context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        except ssl.SSLError as exc:
            key = SSL_TRUSTSTORE_LOCATION if location else SSL_TRUSTSTORE_CERTIFICATES
            raise ConfigError(f"{key}: cannot read the CA certificates ({exc.reason or exc})", key) from None
    return context


# ------------------------------------------------------------------------------------ the listeners' security


class Security:
    """What the server's listeners need for their security protocol: a TLS context (``SSL``,
    ``SASL_SSL``), and the users' credentials (``SASL_*``). Built once, before anything starts; a key
    that cannot be used is a :class:`ConfigError` naming it."""

    def __init__(self, config: ServerConfig) -> None:
        self.protocol = config.listener.security_protocol
        self.failed_delay = config.failed_auth_delay_ms / 1000
        #: ``simulator.ssl.handshake.timeout.ms``: a connection's handshake holds a slot of its address.
        self.handshake_timeout = config.ssl_handshake_timeout_ms / 1000
        #: ``sasl.server.max.receive.size``: the largest frame before authentication.
        self.max_receive = config.sasl_max_receive_size
        self.mechanisms: tuple[str, ...] = tuple(config.sasl_mechanisms)
        self.scram_nonce_check = config.scram_nonce_check
        #: Counters of authentications and failed TLS handshakes: the server's (:meth:`attach`).
        self.stats: Counter[str] = Counter()
        self.ssl: ssl.SSLContext | None = None
        self.sasl = self.protocol.startswith("SASL_")
        self._passwords: dict[str, str] = {}
        self._users = config.sasl_users or ()
        self._iterations = config.scram_iterations
        #: Where SCRAM credentials are read at each authentication (:meth:`use_credentials`): the
        #: controller's metadata once the server is assembled (controller.acls.scram).
        self._credentials: Callable[[], Any] | None = None
        self._own: dict[str, dict[str, ScramCredential]] | None = None
        if self.protocol in ("SSL", "SASL_SSL"):
            self.ssl = server_context(config)
        if self.sasl:
            if not self._users:
                raise ConfigError(
                    f"{SASL_USERS}: listener {config.listener.name} ({self.protocol}) needs users "
                    f"(user:password,...)",
                    SASL_USERS,
                )
            if "PLAIN" in self.mechanisms:
                self._passwords = {
                    user: password
                    for user, mechanism, password in self._users
                    if mechanism in (None, "PLAIN")
                }

    def use_credentials(self, credentials: Callable[[], Any]) -> None:
        """Reads SCRAM credentials from ``credentials()`` (a :class:`controller.acls.scram.ScramCredentials`,
        built at the first SCRAM authentication): the cluster's metadata, which AlterUserScramCredentials
        changes. Without it, the users of ``simulator.sasl.users`` are salted once, here."""
        self._credentials = credentials

    def _scram(self, mechanism: str) -> Mapping[str, ScramCredential]:
        if self._credentials is None:  # no cluster metadata: the configured users, salted once
            if self._own is None:
                self._own = initial_scram_credentials(self._users, self._iterations)
            return self._own[mechanism]
        return self._credentials().for_mechanism(mechanism)  # type: ignore[no-any-return]

    def attach(self, stats: Counter[str]) -> Security:
        """Counts into the server's counters from now on."""
        self.stats = stats
        return self

    def session(self, peer: str = "") -> SaslSession | None:
        """A new connection's SASL exchange: None unless the listener is ``SASL_*``."""
        return SaslSession(self, peer) if self.sasl else None

    def mechanism_server(self, mechanism: str) -> Mechanism:
        if mechanism == "PLAIN":
            return PlainServer(self._passwords)
        return ScramServer(mechanism, self._scram(mechanism), nonce_check=self.scram_nonce_check)

    def accept(
        self, loop: asyncio.AbstractEventLoop, factory: Callable[[], asyncio.Protocol], sock: socket.socket
    ) -> Awaitable[Any]:
        """Sets up an accepted socket as a connection: after the TLS handshake on ``SSL`` and ``SASL_SSL``
        listeners (a failed one is logged and counted as ``closed:TLS handshake failed``)."""
        if self.ssl is None:
            return loop.connect_accepted_socket(factory, sock)
        return self._accept_tls(loop, factory, sock)

    async def _accept_tls(
        self, loop: asyncio.AbstractEventLoop, factory: Callable[[], asyncio.Protocol], sock: socket.socket
    ) -> Any:
        try:
            host, port = sock.getpeername()[:2]
            peer = f"{host}:{port}"
        except OSError:
            peer = "?"
        try:
            return await loop.connect_accepted_socket(
                factory, sock, ssl=self.ssl, ssl_handshake_timeout=self.handshake_timeout
            )
        except (TimeoutError, OSError) as exc:  # ssl.SSLError is an OSError
            reason = getattr(exc, "reason", None) or type(exc).__name__
            # Logged before it is counted: whoever sees the count finds the line logged.
            log.warning("closing connection from %s: TLS handshake failed (%s)", peer, shown(reason))
            self.stats["closed:TLS handshake failed"] += 1
            sock.close()
            return None
