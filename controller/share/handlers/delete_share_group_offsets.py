"""DeleteShareGroupOffsets (92) v0: removes the share-partition state of whole topics from an empty share
group (NON_EMPTY_GROUP otherwise; GROUP_ID_NOT_FOUND for an unknown group), as Kafka does: an unknown topic
is UNKNOWN_TOPIC_OR_PARTITION; a topic the group has no state for is removed without an error. With an
authorizer, as Kafka: a client that may not DELETE the group is GROUP_AUTHORIZATION_FAILED; a topic it may
not READ is TOPIC_AUTHORIZATION_FAILED, its state kept."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.acls.groups import GROUP_REFUSED
from controller.handlers import RequestContext
from controller.share.handlers.alter_share_group_offsets import TOPIC_REFUSED, UNKNOWN_PARTITION
from protocol import ZERO_UUID
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DELETE_SHARE_GROUP_OFFSETS
VERSIONS = (0, 0)


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    share = ctx.controller.share
    cluster = ctx.controller.cluster
    group_id = request["GroupId"]
    denied: set[str] = set()
    if ctx.authorizer is not None:
        if not ctx.allowed(Operation.DELETE, ResourceType.GROUP, group_id):
            return error_response(request, version, ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_REFUSED)
        names = {t["TopicName"] for t in request["Topics"]}
        denied = names - ctx.allowed_names(Operation.READ, ResourceType.TOPIC, names)
    error = share.check_group(group_id, ctx.listener_broker)
    if error:
        return error_response(request, version, error, None)
    group = share.groups.groups.get(group_id)
    if group is None:
        return error_response(request, version, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if group.members:
        return error_response(
            request,
            version,
            ErrorCode.NON_EMPTY_GROUP,
            "The group is not empty: its offsets cannot be deleted.",
        )
    responses = []
    for t in request["Topics"]:
        topic = cluster.topics.get(t["TopicName"])
        if t["TopicName"] in denied:
            code, message = ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_REFUSED
        elif topic is None:
            code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_PARTITION
        else:
            code, message = await share.delete_state(group_id, t["TopicName"]), None
        responses.append(
            {
                "TopicName": t["TopicName"],
                "TopicId": topic.topic_id if topic is not None else ZERO_UUID,
                "ErrorCode": code,
                "ErrorMessage": message,
            }
        )
    return {"ThrottleTimeMs": 0, "ErrorCode": ErrorCode.NONE, "ErrorMessage": None, "Responses": responses}


def error_response(request: dict[str, Any], version: int, code: int, message: str | None) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": code, "ErrorMessage": message, "Responses": []}
