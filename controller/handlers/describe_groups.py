"""DescribeGroups (15): a group's state, protocol and members; members' metadata and assignments only
while it is Stable (as Kafka). An unknown group is described as Dead, without an error before v6 and
GROUP_ID_NOT_FOUND from v6 (KIP-1043); a coordinator error leaves the state empty."""

from __future__ import annotations

from typing import Any

from controller.groups.classic import GroupState
from controller.groups.wire import fit
from controller.handlers import NO_OPERATIONS, RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DESCRIBE_GROUPS
VERSIONS = (0, 6)

#: From this version an unknown group is GROUP_ID_NOT_FOUND (KIP-1043).
_NOT_FOUND = 6


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    data = {
        "ThrottleTimeMs": 0,
        "Groups": [_describe(ctx, group_id, version) for group_id in request["Groups"]],
    }
    return fit(ctx.controller.schemas.response(API_KEY).spec, data, version)


def _describe(ctx: RequestContext, group_id: str, version: int) -> dict[str, Any]:
    service = ctx.controller.groups
    entry: dict[str, Any] = {
        "ErrorCode": ErrorCode.NONE,
        "GroupId": group_id,
        "GroupState": GroupState.DEAD.value,
        "ProtocolType": "",
        "ProtocolData": "",
        "Members": [],
        "AuthorizedOperations": NO_OPERATIONS,
    }
    error = service.check(group_id, ctx.listener_broker)
    if error:
        entry["ErrorCode"], entry["GroupState"] = error, ""
        return entry
    group = service.coordinator.groups.get(group_id)
    if group is None:
        if version >= _NOT_FOUND:
            entry["ErrorCode"] = ErrorCode.GROUP_ID_NOT_FOUND
            entry["ErrorMessage"] = f"Group {group_id} not found."
        return entry
    stable = group.is_in(GroupState.STABLE)
    entry.update(
        GroupState=group.state.value,
        ProtocolType=group.protocol_type or "",
        ProtocolData=(group.protocol_name or "") if stable else "",
        Members=[
            {
                "MemberId": m.member_id,
                "GroupInstanceId": m.instance_id,
                "ClientId": m.client_id,
                "ClientHost": m.client_host,
                "MemberMetadata": m.metadata(group.protocol_name) if stable else b"",
                "MemberAssignment": m.assignment if stable else b"",
            }
            for m in group.members.values()
        ],
    )
    return entry


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    groups = [
        {
            "ErrorCode": code,
            "GroupId": g,
            "GroupState": "",
            "ProtocolType": "",
            "ProtocolData": "",
            "Members": [],
        }
        for g in request["Groups"]
    ]
    answer: dict[str, Any] = {"Groups": groups}
    if version >= 1:
        answer["ThrottleTimeMs"] = 0
    return answer
