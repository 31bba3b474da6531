"""Heartbeat (12): a member keeps its session; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext
from protocol.codes import ApiKey

API_KEY = ApiKey.HEARTBEAT
VERSIONS = (0, 4)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    service = ctx.controller.groups
    error = service.check(request["GroupId"], ctx.listener_broker)
    if not error:
        error = service.coordinator.heartbeat(
            request["GroupId"], request["GenerationId"], request["MemberId"], request.get("GroupInstanceId")
        )
    return _answer(error, version)


def _answer(error: int, version: int) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": error} if version >= 1 else {"ErrorCode": error}


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return _answer(code, version)
