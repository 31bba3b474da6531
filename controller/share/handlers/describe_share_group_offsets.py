"""DescribeShareGroupOffsets (90) v0-1: each share-partition's start offset (and, v1, its lag: records
below the read bound not yet accepted or archived) as the share coordinator holds it. As Kafka answers: a
group with no state (unknown, or never fetched) has no topics; a topic or partition with none is
StartOffset -1 and Lag -1 without an error; a group this broker does not coordinate is NOT_COORDINATOR.
With an authorizer, as Kafka: a group the client may not DESCRIBE is GROUP_AUTHORIZATION_FAILED; a named
topic it may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED on each partition, and such topics are left out
of an answer for all topics."""

from __future__ import annotations

from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import RequestContext
from protocol import ZERO_UUID
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS
VERSIONS = (0, 1)

#: Kafka's message of TOPIC_AUTHORIZATION_FAILED.
TOPIC_REFUSED = "Topic authorization failed."


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    share = ctx.controller.share
    cluster = ctx.controller.cluster
    groups = []
    for g in request["Groups"]:
        group_id = g["GroupId"]
        entry: dict[str, Any] = {
            "GroupId": group_id,
            "Topics": [],
            "ErrorCode": ErrorCode.NONE,
            "ErrorMessage": None,
        }
        groups.append(entry)
        if ctx.authorizer is not None and not ctx.allowed(Operation.DESCRIBE, ResourceType.GROUP, group_id):
            entry["ErrorCode"] = ErrorCode.GROUP_AUTHORIZATION_FAILED
            continue
        error = share.check_group(group_id, ctx.listener_broker)
        if error:
            entry["ErrorCode"] = error
            continue
        offsets = share.start_offsets(group_id)
        if g["Topics"] is None:
            wanted: dict[str, list[int]] = {}
            for topic, index in sorted(offsets):
                wanted.setdefault(topic, []).append(index)
        else:
            wanted = {t["TopicName"]: list(t["Partitions"]) for t in g["Topics"]}
        allowed = (
            ctx.allowed_names(Operation.DESCRIBE, ResourceType.TOPIC, wanted)
            if ctx.authorizer is not None
            else wanted
        )
        for name, indexes in wanted.items():
            topic = cluster.topics.get(name)
            if name not in allowed:
                if g["Topics"] is not None:
                    entry["Topics"].append(_refused(name, indexes))
                continue
            partitions = []
            for index in indexes:
                start, epoch, lag = offsets.get((name, index), (-1, 0, -1))
                partitions.append(
                    {
                        "PartitionIndex": index,
                        "StartOffset": start,
                        "LeaderEpoch": epoch,
                        "Lag": lag,
                        "ErrorCode": ErrorCode.NONE,
                        "ErrorMessage": None,
                    }
                )
            entry["Topics"].append(
                {
                    "TopicName": name,
                    "TopicId": topic.topic_id if topic is not None else ZERO_UUID,
                    "Partitions": partitions,
                }
            )
    return {"ThrottleTimeMs": 0, "Groups": groups}


def _refused(name: str, indexes: list[int]) -> dict[str, Any]:
    return {
        "TopicName": name,
        "TopicId": ZERO_UUID,
        "Partitions": [
            {
                "PartitionIndex": index,
                "StartOffset": -1,
                "LeaderEpoch": 0,
                "Lag": -1,
                "ErrorCode": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                "ErrorMessage": TOPIC_REFUSED,
            }
            for index in indexes
        ],
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "Groups": [
            {"GroupId": g["GroupId"], "Topics": [], "ErrorCode": code, "ErrorMessage": message}
            for g in request["Groups"]
        ],
    }
