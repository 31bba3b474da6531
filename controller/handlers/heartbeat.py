"""Heartbeat (12): a member keeps its session; REBALANCE_IN_PROGRESS tells it to rejoin.

While a new coordinator loads the group, a heartbeat is answered NONE without being handled, as Kafka's
``GroupCoordinatorService.heartbeat`` does ("the group is still loading, so blindly respond"): the
loaded group restarts every member's session anyway, and a client that reads COORDINATOR_LOAD_IN_PROGRESS
on a heartbeat may give up (aiokafka 0.14's heartbeat task raises it to the application as an
unexpected error). A client that may not READ the group is answered GROUP_AUTHORIZATION_FAILED (an
authorizer's).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from protocol.registry import Schemas

API_KEY = ApiKey.HEARTBEAT
VERSIONS = (0, 4)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> bytes:
    group_id = request["GroupId"]
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, group_id):
        return _encoded(ctx.controller.schemas, version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    service = ctx.controller.groups
    error = service.check(group_id, ctx.listener_broker)
    if error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        error = ErrorCode.NONE
    elif not error:
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
