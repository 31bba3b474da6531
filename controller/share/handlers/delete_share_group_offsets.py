"""DeleteShareGroupOffsets (92) v0: removes the share-partition state of whole topics from an empty share
group (NON_EMPTY_GROUP otherwise; GROUP_ID_NOT_FOUND for an unknown group), as Kafka does: an unknown topic
is UNKNOWN_TOPIC_OR_PARTITION; a topic the group has no state for is removed without an error."""

from __future__ import annotations

from typing import Any

from controller.handlers import RequestContext
from controller.share.handlers.alter_share_group_offsets import UNKNOWN_PARTITION
from protocol import ZERO_UUID
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DELETE_SHARE_GROUP_OFFSETS
VERSIONS = (0, 0)


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    share = ctx.controller.share
    cluster = ctx.controller.cluster
    group_id = request["GroupId"]
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
        if topic is None:
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
