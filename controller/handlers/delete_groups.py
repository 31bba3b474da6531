"""DeleteGroups (42): empty groups are deleted with their offsets; NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND; a
group the client may not DELETE is GROUP_AUTHORIZATION_FAILED (an authorizer's). An empty share group goes
with its share-partitions' state (:mod:`controller.share`), answered once the share coordinator has written
its removal."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DELETE_GROUPS
VERSIONS = (0, 3)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any] | Awaitable[Any]:
    service = ctx.controller.groups
    share = ctx.controller.built("share")
    results = []
    shared: list[tuple[dict[str, Any], str]] = []
    for group_id in request["GroupsNames"]:
        if not ctx.allowed(Operation.DELETE, ResourceType.GROUP, group_id):
            results.append({"GroupId": group_id, "ErrorCode": ErrorCode.GROUP_AUTHORIZATION_FAILED})
            continue
        error = service.check(group_id, ctx.listener_broker)
        result = {"GroupId": group_id, "ErrorCode": error}
        if not error:
            if share is not None and share.is_share_group(group_id):
                shared.append((result, group_id))
            else:
                result["ErrorCode"] = service.coordinator.delete_group(group_id)
        results.append(result)
    answer = {"ThrottleTimeMs": 0, "Results": results}
    if not shared:
        return answer

    async def later() -> dict[str, Any]:
        for result, group_id in shared:
            result["ErrorCode"] = await share.delete_group(group_id)
        return answer

    return later()


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "Results": [{"GroupId": g, "ErrorCode": code} for g in request["GroupsNames"]],
    }
