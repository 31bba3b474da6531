"""SaslAuthenticate (36): one SASL token, after a version 1 SaslHandshake (:mod:`controller.security`).

During the exchange the connection's session answers it: the server's token, or SASL_AUTHENTICATION_FAILED
with Kafka's message (and the connection is closed). Anywhere else it is ILLEGAL_SASL_STATE with
Kafka's message.
"""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SASL_AUTHENTICATE
VERSIONS = (0, 2)

AFTER_AUTHENTICATION = "SaslAuthenticate request received after successful authentication"


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    if ctx.sasl is not None and ctx.sasl.expects_token:
        return ctx.sasl.authenticate(request["AuthBytes"])
    return error_response(request, version, ErrorCode.ILLEGAL_SASL_STATE, AFTER_AUTHENTICATION)


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return {"ErrorCode": error_code, "ErrorMessage": message, "AuthBytes": b"", "SessionLifetimeMs": 0}
