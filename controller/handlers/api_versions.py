"""ApiVersions (18): the handshake. Advertises exactly the API keys and versions the server answers.

A request of a version the server does not know is answered too, as Kafka does: in v0, with
UNSUPPORTED_VERSION and ApiVersions' own range, so that the client retries with a version it finds there.

The answer depends on the request alone: not on the cluster, the connection's listener or its security
state (during a SASL handshake :mod:`controller.security` lets one ApiVersions request through to this
handler, and it gets the same answer as after authentication, as from Kafka). So the server keeps the
answers it gave (``ANSWER_DEPENDS_ON``) and a request it has seen before costs its header alone.
"""

from __future__ import annotations

import re
from typing import Any

from controller.handlers import RequestContext
from protocol.errors import error_by_name

API_KEY = 18
VERSIONS = (0, 4)
ANSWER_DEPENDS_ON = "request"

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any] | bytes:
    """The handshake: the API keys and versions served, or INVALID_REQUEST for a malformed client name."""
    if version >= 3:
        for field in ("ClientSoftwareName", "ClientSoftwareVersion"):
            value = request.get(field) or ""
            if not _SOFTWARE.fullmatch(value):
                return {
                    "ErrorCode": error_by_name("INVALID_REQUEST").code,
                    "ApiKeys": [],
                    "ThrottleTimeMs": 0,
                }
    return ctx.controller.api_versions_body(version)


def unsupported(ctx: RequestContext, version: int) -> tuple[dict[str, Any], int]:
    """Kafka's answer to an ApiVersions request of a version it does not know: v0, only ApiVersions' range."""
    low, high = VERSIONS
    response = {
        "ErrorCode": error_by_name("UNSUPPORTED_VERSION").code,
        "ApiKeys": [{"ApiKey": API_KEY, "MinVersion": low, "MaxVersion": high}],
    }
    return response, 0


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {"ErrorCode": code, "ApiKeys": [], "ThrottleTimeMs": 0}
