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

apiKey 68 is two APIs: the simulator serves CreateReplicaPlacement (KIP-879) there, Apache Kafka 3.7+ uses
it for ConsumerGroupHeartbeat (KIP-848), which the Java client and librdkafka send when a consumer sets
``group.protocol=consumer``. This is the one place the two are told apart: a client that names itself a
Kafka consumer library in ApiVersions v3+ (``ClientSoftwareName`` ``apache-kafka-java``, ``librdkafka`` or
``confluent-kafka-*``, none of which implements CreateReplicaPlacement) is not offered apiKey 68, as a
Kafka broker without the new protocol does not offer it: the client refuses the new protocol itself ("The
cluster does not support the new CONSUMER group protocol", librdkafka: "ConsumerGroupHeartbeatRequest not
supported by broker") and never sends a heartbeat to be read as a placement request.
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
_KIP_848_CLIENTS = re.compile(r"apache-kafka-java|librdkafka|confluent-kafka(?:-.*)?")


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    """The handshake: the API keys and versions served, or INVALID_REQUEST for a malformed client name."""
    if version >= 3:
        for field in ("ClientSoftwareName", "ClientSoftwareVersion"):
            value = request.get(field) or ""
            if not _SOFTWARE.fullmatch(value):
                return {"ErrorCode": ErrorCode.INVALID_REQUEST, "ApiKeys": [], "ThrottleTimeMs": 0}
    hidden = ApiKey.CREATE_REPLICA_PLACEMENT if heartbeats_on_68(request, version) else None
    controls = _controls_served(ctx)
    keys = [
        {"ApiKey": key, "MinVersion": handler.min_version, "MaxVersion": handler.max_version}
        for key, handler in ctx.handlers.items()
        if key != hidden and (controls or key < CONTROL_KEYS)
    ]
    return {"ErrorCode": ErrorCode.NONE, "ApiKeys": keys, "ThrottleTimeMs": 0}


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
