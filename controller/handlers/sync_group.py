"""SyncGroup (14): the leader hands out the assignment; every member is answered with its own once the
leader's arrives. A client that may not READ the group is answered GROUP_AUTHORIZATION_FAILED (an
authorizer's)."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.answers import Parked, parked
from controller.groups.classic import SyncResult
from controller.groups.wire import fit
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SYNC_GROUP
VERSIONS = (0, 5)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any] | Parked:
    """The answer now when the coordinator gives it at once (an error, the assignment of a group already
    synced), else Parked: the answer waits for the leader's assignment (its frame stops counting against
    queued.max.request.bytes meanwhile)."""
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request["GroupId"]):
        return _answer(ctx, SyncResult(ErrorCode.GROUP_AUTHORIZATION_FAILED), version)
    service = ctx.controller.groups
    error = service.check(request["GroupId"], ctx.listener_broker)
    if error:
        return _answer(ctx, SyncResult(error), version)
    return parked(
        lambda respond: service.coordinator.sync(
            request["GroupId"],
            request["GenerationId"],
            request["MemberId"],
            request.get("GroupInstanceId"),
            request.get("ProtocolType"),
            request.get("ProtocolName"),
            [(a["MemberId"], a["Assignment"]) for a in request["Assignments"]],
            respond,
        ),
        lambda result: _answer(ctx, result, version),
    )


def _answer(ctx: RequestContext, result: SyncResult, version: int) -> dict[str, Any]:
    data = {
        "ThrottleTimeMs": 0,
        "ErrorCode": result.error,
        "ProtocolType": result.protocol_type,
        "ProtocolName": result.protocol_name,
        "Assignment": result.assignment,
    }
    return fit(ctx.controller.schemas.response(API_KEY).spec, data, version)


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    answer: dict[str, Any] = {"ErrorCode": code, "Assignment": b""}
    if version >= 1:
        answer["ThrottleTimeMs"] = 0
    return answer
