"""DescribeGroups (15): a group's state, protocol and members; members' metadata and assignments only
while it is Stable (as Kafka). An unknown group is described as Dead, without an error before v6 and
GROUP_ID_NOT_FOUND from v6 (KIP-1043); a coordinator error leaves the state empty.

As Kafka's ``handleDescribeGroupsRequest``: a group the client may not DESCRIBE is answered
GROUP_AUTHORIZATION_FAILED; the authorized operations of a group described without error are computed
when asked (v3+), every group operation without an authorizer."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.groups.classic import GroupState
from controller.groups.wire import fit
from controller.handlers import NO_OPERATIONS, RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DESCRIBE_GROUPS
VERSIONS = (0, 6)

#: From this version an unknown group is GROUP_ID_NOT_FOUND (KIP-1043).
_NOT_FOUND = 6


_DESCRIBE, _GROUP = Operation.DESCRIBE, ResourceType.GROUP


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    operations = version >= 3 and request.get("IncludeAuthorizedOperations", False)
    groups = []
    for group_id in request["Groups"]:
        if not ctx.allowed(_DESCRIBE, _GROUP, group_id):
            groups.append(_refused(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        entry = _describe(ctx, group_id, version)
        if operations and entry["ErrorCode"] == ErrorCode.NONE:
            entry["AuthorizedOperations"] = ctx.operations(_GROUP, group_id)
        groups.append(entry)
    data = {"ThrottleTimeMs": 0, "Groups": groups}
    return fit(ctx.controller.schemas.response(API_KEY).spec, data, version)


def _refused(group_id: str, code: int) -> dict[str, Any]:
    return {
        "ErrorCode": code,
        "GroupId": group_id,
        "GroupState": "",
        "ProtocolType": "",
        "ProtocolData": "",
        "Members": [],
        "AuthorizedOperations": NO_OPERATIONS,
    }


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
    groups = [_refused(g, code) for g in request["Groups"]]
    answer: dict[str, Any] = {"Groups": groups}
    if version >= 1:
        answer["ThrottleTimeMs"] = 0
    return answer
