"""ShareAcknowledge (79) v1-2: a share group member acknowledges records it acquired, without fetching
(KIP-932). The share session must exist and the epoch be its next one, or -1 to close it after the
acknowledgements (0 is INVALID_SHARE_SESSION_EPOCH: a session is opened by ShareFetch only). Each
partition's answer is its acknowledgement's error (:func:`controller.share.handlers.share_fetch.acknowledge`).
With an authorizer, as Kafka: a client that may not READ the group is GROUP_AUTHORIZATION_FAILED before
anything else, a partition of a topic it may not READ TOPIC_AUTHORIZATION_FAILED (not acknowledged).
"""

from __future__ import annotations

import uuid
from typing import Any

from controller.acls.codes import Operation, ResourceType
from controller.acls.groups import GROUP_REFUSED
from controller.handlers import RequestContext
from controller.handlers._partitions import current_leader, node_endpoints, partition_of
from controller.share.handlers.share_fetch import acknowledge, denied_topics
from protocol.codes import ApiKey, ErrorCode

API_KEY = ApiKey.SHARE_ACKNOWLEDGE
VERSIONS = (1, 2)


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    share = ctx.controller.share
    cluster = ctx.controller.cluster
    group, member, epoch = (
        request.get("GroupId") or "",
        request.get("MemberId") or "",
        request["ShareSessionEpoch"],
    )
    if ctx.authorizer is not None and not ctx.allowed(Operation.READ, ResourceType.GROUP, group):
        return _top(ErrorCode.GROUP_AUTHORIZATION_FAILED, GROUP_REFUSED, version)
    if not group or not member:
        return _top(ErrorCode.INVALID_REQUEST, "GroupId and MemberId are required.", version)
    if epoch == 0:
        return _top(
            ErrorCode.INVALID_SHARE_SESSION_EPOCH,
            "Acknowledge requests cannot open a share session.",
            version,
        )
    error, message, _ = share.session(ctx.listener_broker, group, member, epoch, [], [])
    if error:
        return _top(error, message, version)
    leaders: set[int] = set()
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    denied = (
        denied_topics(ctx, [t["TopicId"] for t in request["Topics"]]) if ctx.authorizer is not None else ()
    )
    for t in request["Topics"]:
        for p in t["Partitions"]:
            if t["TopicId"] in denied:
                code, text = ErrorCode.TOPIC_AUTHORIZATION_FAILED, None
            else:
                code, text = await acknowledge(
                    ctx,
                    group,
                    member,
                    t["TopicId"],
                    p["PartitionIndex"],
                    p["AcknowledgementBatches"],
                    version,
                    leaders,
                )
            topic = cluster.topic_by_id(t["TopicId"])
            state = partition_of(topic, p["PartitionIndex"]) if topic is not None else None
            topics.setdefault(t["TopicId"], []).append(
                {
                    "PartitionIndex": p["PartitionIndex"],
                    "ErrorCode": code,
                    "ErrorMessage": text,
                    "CurrentLeader": current_leader(state),
                }
            )
    if epoch == -1:
        share.close_session(ctx.listener_broker, group, member)
    answer = _top(ErrorCode.NONE, None, version)
    answer["Responses"] = [{"TopicId": tid, "Partitions": parts} for tid, parts in topics.items()]
    answer["NodeEndpoints"] = node_endpoints(ctx, leaders) if leaders else []
    if version >= 2:
        answer["AcquisitionLockTimeoutMs"] = cluster.group_config(group, "share.record.lock.duration.ms")
    return answer


def _top(code: int, message: str | None, version: int) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": code,
        "ErrorMessage": message,
        "AcquisitionLockTimeoutMs": 0,
        "Responses": [],
        "NodeEndpoints": [],
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return _top(code, message, version)
