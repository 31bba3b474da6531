"""DeleteGroups (42): empty groups are deleted with their offsets; NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND; a
group the client may not DELETE is GROUP_AUTHORIZATION_FAILED (an authorizer's)."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DELETE_GROUPS
VERSIONS = (0, 2)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    service = ctx.controller.groups
    results = []
    for group_id in request["GroupsNames"]:
        if not ctx.allowed(Operation.DELETE, ResourceType.GROUP, group_id):
            results.append({"GroupId": group_id, "ErrorCode": ErrorCode.GROUP_AUTHORIZATION_FAILED})
            continue
        error = service.check(group_id, ctx.listener_broker)
        if not error:
            error = service.coordinator.delete_group(group_id)
        results.append({"GroupId": group_id, "ErrorCode": error})
    return {"ThrottleTimeMs": 0, "Results": results}


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "Results": [{"GroupId": g, "ErrorCode": code} for g in request["GroupsNames"]],
    }
