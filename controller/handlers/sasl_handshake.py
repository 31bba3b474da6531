"""SaslHandshake (17): the client names its SASL mechanism (:mod:`controller.security` runs the exchange).

On a ``SASL_*`` listener, before authentication, the connection's session answers it: the enabled
mechanisms, or UNSUPPORTED_SASL_MECHANISM with them (and the connection is closed). Anywhere else (a
listener without SASL, a connection already authenticated) it is ILLEGAL_SASL_STATE, as Kafka answers.
"""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SASL_HANDSHAKE
VERSIONS = (0, 1)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    if ctx.sasl is not None and ctx.sasl.expects_handshake:
        return ctx.sasl.handshake(request["Mechanism"], version)
    return {"ErrorCode": ErrorCode.ILLEGAL_SASL_STATE, "Mechanisms": []}


def error_response(request: dict[str, Any], version: int, error_code: int, message: str) -> dict[str, Any]:
    return {"ErrorCode": error_code, "Mechanisms": []}
