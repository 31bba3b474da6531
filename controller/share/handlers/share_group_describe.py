"""ShareGroupDescribe (77) v1: share groups' epochs, members and assignments. A group this broker does
not coordinate is NOT_COORDINATOR; an unknown one (or one of another type) GROUP_ID_NOT_FOUND, as Kafka
answers. With an authorizer, as Kafka's ``handleShareGroupDescribe``: a group the client may not DESCRIBE is
GROUP_AUTHORIZATION_FAILED, one whose members' assignments hold a topic it may not DESCRIBE
TOPIC_AUTHORIZATION_FAILED without its members; authorized operations are computed when asked."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.acls.groups import authorize
from controller.handlers import NO_OPERATIONS, RequestContext
from controller.share.groups import ASSIGNOR
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SHARE_GROUP_DESCRIBE
VERSIONS = (1, 1)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    share = ctx.controller.share
    cluster = ctx.controller.cluster
    groups = []
    for group_id in request["GroupIds"]:
        entry: dict[str, Any] = _empty(group_id)
        groups.append(entry)
        if ctx.authorizer is not None and not ctx.allowed(Operation.DESCRIBE, ResourceType.GROUP, group_id):
            entry["ErrorCode"] = ErrorCode.GROUP_AUTHORIZATION_FAILED
            continue
        error = share.check_group(group_id, ctx.listener_broker) if group_id else ErrorCode.INVALID_GROUP_ID
        group = share.groups.groups.get(group_id) if not error else None
        if error:
            entry["ErrorCode"] = error
        elif group is None:
            entry.update(ErrorCode=ErrorCode.GROUP_ID_NOT_FOUND, ErrorMessage=f"Group {group_id} not found.")
        else:
            entry.update(
                GroupState=group.state,
                GroupEpoch=group.epoch,
                AssignmentEpoch=group.assignment_epoch,
                AssignorName=ASSIGNOR,
                Members=[
                    {
                        "MemberId": m.member_id,
                        "RackId": m.rack,
                        "MemberEpoch": m.epoch,
                        "ClientId": m.client_id,
                        "ClientHost": m.client_host,
                        "SubscribedTopicNames": list(m.subscribed),
                        "Assignment": {
                            "TopicPartitions": [
                                {"TopicId": tid, "TopicName": t.name, "Partitions": list(ps)}
                                for tid, ps in m.assignment.items()
                                if (t := cluster.topic_by_id(tid)) is not None
                            ]
                        },
                    }
                    for m in group.members.values()
                ],
            )
    if ctx.authorizer is not None:
        authorize(ctx, groups, request.get("IncludeAuthorizedOperations", False), ("Assignment",))
    elif request.get("IncludeAuthorizedOperations", False):  # every group operation, as Kafka answers then
        for entry in groups:
            if entry["ErrorCode"] == ErrorCode.NONE:
                entry["AuthorizedOperations"] = ctx.operations(ResourceType.GROUP, entry["GroupId"])
    return {"ThrottleTimeMs": 0, "Groups": groups}


def _empty(group_id: str) -> dict[str, Any]:
    return {
        "ErrorCode": ErrorCode.NONE,
        "ErrorMessage": None,
        "GroupId": group_id,
        "GroupState": "",
        "GroupEpoch": 0,
        "AssignmentEpoch": 0,
        "AssignorName": "",
        "Members": [],
        "AuthorizedOperations": NO_OPERATIONS,
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "Groups": [{**_empty(g), "ErrorCode": code, "ErrorMessage": message} for g in request["GroupIds"]],
    }
