"""ApiVersions (18): the handshake. Advertises exactly the API keys and versions the server's handlers
answer: the answer is built here from the handlers the server registered (:mod:`controller.handlers`),
so a new handler module is advertised with nothing else to change.

A request of a version the server does not know is answered too, as Kafka does: in v0, with
UNSUPPORTED_VERSION and ApiVersions' own range, so that the client retries with a version it finds there.

The answer depends on the request alone (not on the cluster or the connection's listener), except on a
SASL listener: the control APIs (keys 1000 and up) are offered there only to an authenticated user of
``simulator.control.users``, the only one they are served to (before authentication, and to any other
user, they are not offered; Kafka offers every API it serves). So the dispatch keeps the answers it gave
(``ANSWER_DEPENDS_ON``) except on SASL listeners, and a request it has seen before costs its header
alone.

apiKey 68 is two APIs: the simulator's own CreateReplicaPlacement (KIP-879), and ConsumerGroupHeartbeat
(KIP-848), which Apache Kafka 3.7+ gives the key and Kafka's clients send when a consumer sets
``group.protocol=consumer``. Which one a connection speaks is told here, once, from its ApiVersions
request (:func:`connection_key_space`; the dispatch keeps it for the connection): a client that names
itself a library that sends ConsumerGroupHeartbeat in ApiVersions v3+ (``ClientSoftwareName``
``apache-kafka-java``, ``librdkafka``, ``confluent-kafka-*`` (librdkafka's wrappers: Python, Go, .NET,
JavaScript) or ``kgo`` (franz-go, which turns to the new protocol by itself when a broker offers it))
speaks Kafka's key space: apiKey 68 is ConsumerGroupHeartbeat on that connection, offered in its answer at
that API's versions. Every other client (the project's own, kcat, kafka-python, aiokafka, kafkajs,
clients that send ApiVersions v0-v2) keeps CreateReplicaPlacement. ``simulator.apikey.68`` forces one for
every connection: ``CreateReplicaPlacement`` (a client of Kafka's key space is then not offered apiKey 68
at all, as by a Kafka broker without the new protocol, and refuses ``group.protocol=consumer`` itself) or
``ConsumerGroupHeartbeat``.

From v3 the answer carries the features (KIP-584), as a Kafka 4.x KRaft broker's does, for the one feature
whose level changes what clients send: ``transaction.version``, supported 0-2 and finalized at 2 (a new
Kafka 4.x cluster's level, KIP-890 part 2), which the Java producer reads to send EndTxn v5 and Produce
v12 without AddPartitionsToTxn. The simulator's features never change, so their epoch is 0.
"""

from __future__ import annotations

import re
from typing import Any

from controller.handlers import AnswerDependsOn, RequestContext
from controller.handlers._control import CONTROL_KEYS
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.API_VERSIONS
VERSIONS = (0, 4)
ANSWER_DEPENDS_ON = AnswerDependsOn.REQUEST

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
#: Clients that would read apiKey 68 as ConsumerGroupHeartbeat (see the module docstring).
_KIP_848_CLIENTS = re.compile(r"apache-kafka-java|librdkafka|confluent-kafka(?:-.*)?|kgo")
#: The features advertised (see the module docstring): name -> (lowest supported, highest supported,
#: finalized level).
FEATURES: dict[str, tuple[int, int, int]] = {"transaction.version": (0, 2, 2)}
FINALIZED_FEATURES_EPOCH = 0
#: The key space of Kafka's API on a key that is two APIs (protocol.registry).
KAFKA = "kafka"


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    """The handshake: the API keys and versions served, or INVALID_REQUEST for a malformed client name."""
    if version >= 3:
        for field in ("ClientSoftwareName", "ClientSoftwareVersion"):
            value = request.get(field) or ""
            if not _SOFTWARE.fullmatch(value):
                return {"ErrorCode": ErrorCode.INVALID_REQUEST, "ApiKeys": [], "ThrottleTimeMs": 0}
    config = ctx.controller.config
    space = connection_key_space(config, request, version)
    handlers = ctx.handlers.in_space(space)
    # Forced to the project's key space, a client of Kafka's is not offered the key it would misread.
    hidden = ApiKey.CREATE_REPLICA_PLACEMENT if space is None and heartbeats_on_68(request, version) else None
    controls = _controls_served(ctx)
    keys = [
        {"ApiKey": key, "MinVersion": handler.min_version, "MaxVersion": handler.max_version}
        for key, handler in handlers.items()
        if key != hidden and (controls or key < CONTROL_KEYS)
    ]
    response: dict[str, Any] = {"ErrorCode": ErrorCode.NONE, "ApiKeys": keys, "ThrottleTimeMs": 0}
    if version >= 3:
        response["SupportedFeatures"] = [
            {"Name": name, "MinVersion": low, "MaxVersion": high} for name, (low, high, _) in FEATURES.items()
        ]
        response["FinalizedFeaturesEpoch"] = FINALIZED_FEATURES_EPOCH
        response["FinalizedFeatures"] = [
            {"Name": name, "MaxVersionLevel": level, "MinVersionLevel": level}
            for name, (_, _, level) in FEATURES.items()
        ]
    return response


def _controls_served(ctx: RequestContext) -> bool:
    """Whether this connection is offered the control APIs (keys 1000 and up): on a SASL listener only once
    authenticated as a user of ``simulator.control.users``, who alone is served them
    (:mod:`controller.handlers._control`); elsewhere whenever the server serves them (its handlers)."""
    if ctx.sasl is None:
        return True
    return ctx.principal is not None and ctx.principal in (ctx.controller.config.control_users or ())


def heartbeats_on_68(request: dict[str, Any], version: int) -> bool:
    """Whether the client names itself a library that sends ConsumerGroupHeartbeat on apiKey 68."""
    return version >= 3 and bool(_KIP_848_CLIENTS.fullmatch(request.get("ClientSoftwareName") or ""))


def connection_key_space(config: Any, request: dict[str, Any], version: int) -> str | None:
    """The key space a connection speaks from its ApiVersions request on (see the module docstring):
    ``kafka`` for a client of a KIP-848 library (or every client, ``simulator.apikey.68`` set to
    ``ConsumerGroupHeartbeat``), else None (the project's own)."""
    mode = getattr(config, "api_key_68", "auto")
    if mode == "ConsumerGroupHeartbeat":
        return KAFKA
    if mode == "CreateReplicaPlacement":
        return None
    return KAFKA if heartbeats_on_68(request, version) else None


def unsupported(version: int) -> tuple[dict[str, Any], int]:
    """Kafka's answer to an ApiVersions request of a version it does not know: v0, only ApiVersions' range."""
    low, high = VERSIONS
    response = {
        "ErrorCode": ErrorCode.UNSUPPORTED_VERSION,
        "ApiKeys": [{"ApiKey": API_KEY, "MinVersion": low, "MaxVersion": high}],
    }
    return response, 0


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {"ErrorCode": code, "ApiKeys": [], "ThrottleTimeMs": 0}
