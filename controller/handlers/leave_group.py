"""LeaveGroup (13): members leave (one by member id before v3; many, by member or instance id, from v3). A
client that may not READ the group is answered GROUP_AUTHORIZATION_FAILED (an authorizer's)."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.LEAVE_GROUP
VERSIONS = (0, 5)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    if not ctx.allowed(Operation.READ, ResourceType.GROUP, request["GroupId"]):
        return error_response(request, version, ErrorCode.GROUP_AUTHORIZATION_FAILED, "")
    service = ctx.controller.groups
    if version >= 3:
        members = [(m["MemberId"], m.get("GroupInstanceId")) for m in request["Members"]]
    else:
        members = [(request["MemberId"], None)]
    error = service.check(request["GroupId"], ctx.listener_broker)
    results: list[int] = []
    if not error:
        error, results = service.coordinator.leave(request["GroupId"], members)
        if version < 3 and not error:
            error = results[0]
    answer: dict[str, Any] = {"ErrorCode": error}
    if version >= 1:
        answer["ThrottleTimeMs"] = 0
    if version >= 3:
        answer["Members"] = [
            {"MemberId": m, "GroupInstanceId": i, "ErrorCode": code}
            for (m, i), code in zip(members, results, strict=False)
        ]
    return answer


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    answer: dict[str, Any] = {"ErrorCode": code}
    if version >= 1:
        answer["ThrottleTimeMs"] = 0
    if version >= 3:
        answer["Members"] = []
    return answer
