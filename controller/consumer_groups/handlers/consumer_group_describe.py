"""ConsumerGroupDescribe (69, KIP-848): consumer groups with their epochs, assignor and members (each
one's subscription, assignment and target assignment; from v1 whether it speaks the classic or the
consumer protocol). A group id that is not a consumer group gets GROUP_ID_NOT_FOUND ("Group g is not a
consumer group." for a classic group), as from Kafka; an empty id INVALID_GROUP_ID.

With an authorizer, as Kafka's ``handleConsumerGroupDescribe``: a group the client may not DESCRIBE is
GROUP_AUTHORIZATION_FAILED; a group whose members' assignments or target assignments hold a topic the
client may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED without its members; authorized operations are
computed when asked."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.acls.groups import authorize
from controller.groups.wire import fit
from controller.handlers import NO_OPERATIONS, RequestContext
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE
VERSIONS = (0, 1)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    service = ctx.controller.consumer_groups
    service.groups.follow_all()
    cluster = ctx.controller.cluster
    names = {t.topic_id: name for name, t in cluster.topics.items()}

    def assignment(parts: Any) -> dict[str, Any]:
        return {
            "TopicPartitions": [
                {"TopicId": topic_id, "TopicName": names[topic_id], "Partitions": sorted(ps)}
                for topic_id, ps in sorted(parts.items(), key=lambda i: names.get(i[0], ""))
                if topic_id in names
            ]
        }

    described = []
    for group_id in request["GroupIds"]:
        entry: dict[str, Any] = {
            "GroupId": group_id,
            "ErrorCode": ErrorCode.NONE,
            "ErrorMessage": None,
            "GroupState": "",
            "GroupEpoch": 0,
            "AssignmentEpoch": 0,
            "AssignorName": "",
            "Members": [],
            "AuthorizedOperations": NO_OPERATIONS,
        }
        described.append(entry)
        if ctx.authorizer is not None and not ctx.allowed(Operation.DESCRIBE, ResourceType.GROUP, group_id):
            entry["ErrorCode"] = ErrorCode.GROUP_AUTHORIZATION_FAILED
            continue
        if not group_id:
            entry["ErrorCode"] = ErrorCode.INVALID_GROUP_ID
            continue
        error = service.check(group_id, ctx.listener_broker)
        if error:
            entry["ErrorCode"] = error
            continue
        group = service.coordinator.groups.get(group_id)
        if group is None:
            entry["ErrorCode"] = ErrorCode.GROUP_ID_NOT_FOUND
            if group_id in service.groups.coordinator.groups:
                entry["ErrorMessage"] = f"Group {group_id} is not a consumer group."
            else:
                entry["ErrorMessage"] = f"Group {group_id} not found."
            continue
        entry.update(
            GroupState=group.state.value,
            GroupEpoch=group.group_epoch,
            AssignmentEpoch=group.assignment_epoch,
            AssignorName=group.preferred_assignor() or service.coordinator.settings.assignors[0],
            Members=[
                {
                    "MemberId": m.member_id,
                    "InstanceId": m.instance_id,
                    "RackId": m.subscription.rack_id,
                    "MemberEpoch": m.member_epoch,
                    "ClientId": m.subscription.client_id,
                    "ClientHost": m.subscription.client_host,
                    "SubscribedTopicNames": list(m.subscription.topic_names),
                    "SubscribedTopicRegex": m.subscription.topic_regex,
                    "Assignment": assignment(m.assigned),
                    "TargetAssignment": assignment(group.target.get(m.member_id, {})),
                    "MemberType": 0 if m.uses_classic_protocol else 1,
                }
                for m in group.members.values()
            ],
        )
    if ctx.authorizer is not None:
        authorize(
            ctx,
            described,
            request.get("IncludeAuthorizedOperations", False),
            ("Assignment", "TargetAssignment"),
        )
    elif request.get("IncludeAuthorizedOperations", False):  # every group operation, as Kafka answers then
        for entry in described:
            if entry["ErrorCode"] == ErrorCode.NONE:
                entry["AuthorizedOperations"] = ctx.operations(ResourceType.GROUP, entry["GroupId"])
    data = {"ThrottleTimeMs": 0, "Groups": described}
    return fit(ctx.controller.schemas.response(API_KEY).spec, data, version)


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "Groups": [
            {
                "GroupId": g,
                "ErrorCode": code,
                "ErrorMessage": message,
                "GroupState": "",
                "GroupEpoch": 0,
                "AssignmentEpoch": 0,
                "AssignorName": "",
                "Members": [],
                "AuthorizedOperations": NO_OPERATIONS,
            }
            for g in request["GroupIds"]
        ],
    }
