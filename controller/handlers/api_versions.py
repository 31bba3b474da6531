"""ApiVersions (18): the handshake. Advertises exactly the API keys and versions the server's handlers
answer: the answer is built here from the handlers the server registered (:mod:`controller.handlers`),
so a new handler module is advertised with nothing else to change.

A request of a version the server does not know is answered too, as Kafka does: in v0, with
UNSUPPORTED_VERSION and ApiVersions' own range, so that the client retries with a version it finds there.

The answer depends on the request alone: not on the cluster, the connection's listener or its security
state (during a SASL handshake :mod:`controller.security` lets one ApiVersions request through to this
handler, and it gets the same answer as after authentication, as from Kafka). So the dispatch keeps the
answers it gave (``ANSWER_DEPENDS_ON``) and a request it has seen before costs its header alone.
"""

from __future__ import annotations

import re
from typing import Any

from controller.handlers import AnswerDependsOn, RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.API_VERSIONS
VERSIONS = (0, 4)
ANSWER_DEPENDS_ON = AnswerDependsOn.REQUEST

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    """The handshake: the API keys and versions served, or INVALID_REQUEST for a malformed client name."""
    if version >= 3:
        for field in ("ClientSoftwareName", "ClientSoftwareVersion"):
            value = request.get(field) or ""
            if not _SOFTWARE.fullmatch(value):
                return {"ErrorCode": ErrorCode.INVALID_REQUEST, "ApiKeys": [], "ThrottleTimeMs": 0}
    keys = [
        {"ApiKey": key, "MinVersion": handler.min_version, "MaxVersion": handler.max_version}
        for key, handler in ctx.handlers.items()
    ]
    return {"ErrorCode": ErrorCode.NONE, "ApiKeys": keys, "ThrottleTimeMs": 0}


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
