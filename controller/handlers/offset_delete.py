"""OffsetDelete (47): committed offsets removed, except for topics a non-empty consumer group subscribes to
(GROUP_SUBSCRIBED_TO_TOPIC); a non-empty group of another protocol type is refused (NON_EMPTY_GROUP).

As Kafka's ``KafkaApis.handleOffsetDeleteRequest``, a partition the cluster does not have is answered
UNKNOWN_TOPIC_OR_PARTITION and never reaches the group coordinator; an error of the group's (not found,
not its coordinator) is the whole answer's. With an authorizer: a group the client may not DELETE is
GROUP_AUTHORIZATION_FAILED (the whole answer), a topic it may not READ TOPIC_AUTHORIZATION_FAILED for its
partitions."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from controller.handlers._partitions import partition_of
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.OFFSET_DELETE
VERSIONS = (0, 0)


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    denied: set[str] = set()
    if ctx.authorizer is not None:
        if not ctx.allowed(Operation.DELETE, ResourceType.GROUP, request["GroupId"]):
            return error_response(request, version, ErrorCode.GROUP_AUTHORIZATION_FAILED, "")
        names = [t["Name"] for t in request["Topics"]]
        allowed = ctx.allowed_names(Operation.READ, ResourceType.TOPIC, names)
        denied = {name for name in names if name not in allowed}
    service = ctx.controller.groups
    topics = ctx.controller.cluster.topics
    asked = [
        (t["Name"], p["PartitionIndex"])
        for t in request["Topics"]
        if t["Name"] not in denied
        for p in t["Partitions"]
    ]
    known = [
        (name, index)
        for name, index in asked
        if (topic := topics.get(name)) is not None and partition_of(topic, index) is not None
    ]
    error = service.check(request["GroupId"], ctx.listener_broker)
    codes: list[ErrorCode] = []
    if not error:
        error, codes = service.coordinator.delete_offsets(request["GroupId"], known)
    if error:
        return {"ErrorCode": error, "ThrottleTimeMs": 0, "Topics": []}
    given = dict(zip(known, codes, strict=True))
    return {
        "ErrorCode": ErrorCode.NONE,
        "ThrottleTimeMs": 0,
        "Topics": [
            {
                "Name": t["Name"],
                "Partitions": [
                    {
                        "PartitionIndex": p["PartitionIndex"],
                        "ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED
                        if t["Name"] in denied
                        else given.get(
                            (t["Name"], p["PartitionIndex"]), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        ),
                    }
                    for p in t["Partitions"]
                ],
            }
            for t in request["Topics"]
        ],
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {"ErrorCode": code, "ThrottleTimeMs": 0, "Topics": []}
