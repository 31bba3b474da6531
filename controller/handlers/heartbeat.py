"""Heartbeat (12): a member keeps its session; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from controller.handlers import RequestContext
from protocol.codes import ApiKey

if TYPE_CHECKING:
    from protocol.registry import Schemas

API_KEY = ApiKey.HEARTBEAT
VERSIONS = (0, 4)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> bytes:
    service = ctx.controller.groups
    group_id = request["GroupId"]
    error = service.check(group_id, ctx.listener_broker)
    if not error:
        error = service.coordinator.heartbeat(
            group_id, request["GenerationId"], request["MemberId"], request.get("GroupInstanceId")
        )
    return _encoded(ctx.controller.schemas, version, error)


@functools.lru_cache(maxsize=64)
def _encoded(schemas: Schemas, version: int, error: int) -> bytes:
    """An answer encoded: there are a few (a version and an error code), each encoded once."""
    return schemas.response(API_KEY).encode(_answer(error, version), version)


def _answer(error: int, version: int) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": error} if version >= 1 else {"ErrorCode": error}


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return _answer(code, version)
