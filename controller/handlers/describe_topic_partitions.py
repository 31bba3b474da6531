"""DescribeTopicPartitions (75, KIP-966): topics and their partitions a page at a time, with the eligible
leader replicas and the last known ELR, as Kafka's ``DescribeTopicPartitionsRequestHandler`` and
``KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse`` answer (the Java admin client's
``describeTopics`` asks with it).

Topics are answered in name order from the cursor's topic (every topic when the request names none), at
most ``ResponsePartitionLimit`` partitions in all (and at most ``max.request.partition.size.limit``,
Kafka's 2000); where the page ends, NextCursor names the first topic and partition left out. A named
topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (one whose name is not a valid topic name
INVALID_TOPIC_EXCEPTION); a cursor whose topic is not among those named, or whose partition is negative,
is INVALID_REQUEST. A partition without a leader has LeaderId -1 and no error. Each topic carries its
authorized operations (every operation of a topic without an authorizer, as Kafka answers); with an
authorizer, a topic the client may not DESCRIBE is left out of an answer for every topic, and answered
TOPIC_AUTHORIZATION_FAILED when named. A broker cut off from the controller answers from its last image.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controller.acls.codes import Operation, ResourceType
from controller.handlers import Cap, RequestContext
from controller.image import PartitionImage, TopicImage
from controller.topic_names import is_internal, topic_name_problem
from protocol import ZERO_UUID
from protocol.caps import CapPath
from protocol.codes import ApiKey, ErrorCode

if TYPE_CHECKING:
    from controller.config import ServerConfig

API_KEY = ApiKey.DESCRIBE_TOPIC_PARTITIONS
VERSIONS = (0, 0)

#: Kafka's ``max.request.partition.size.limit`` default: the most partitions one answer holds.
MAX_PARTITIONS = 2000


def decode_caps(config: ServerConfig) -> Mapping[CapPath, Cap]:
    """No cluster holds more topics than the cluster's partition limit."""
    limit = config.placement_limits().max_partitions
    return {("Topics",): Cap(limit.value, ErrorCode.INVALID_REQUEST, limit.setting)}


def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    image = ctx.image if ctx.image is not None else ctx.controller.image()
    cursor = request.get("Cursor")
    start_topic = cursor["TopicName"] if cursor is not None else ""
    every = not request["Topics"]
    if every:
        names = sorted(name for name in image.topics if name >= start_topic)
    else:
        names = sorted({t["Name"] for t in request["Topics"] if t["Name"] >= start_topic})
        if cursor is not None and cursor["TopicName"] not in names:
            message = (
                f"DescribeTopicPartitionsRequest topic list should contain the cursor topic: {start_topic}"
            )
            return error_response(request, version, ErrorCode.INVALID_REQUEST, message)
    if cursor is not None and cursor["PartitionIndex"] < 0:
        message = f"DescribeTopicPartitionsRequest cursor partition must be valid: {cursor}"
        return error_response(request, version, ErrorCode.INVALID_REQUEST, message)
    refused: list[dict[str, Any]] = []
    if ctx.authorizer is not None:
        allowed = ctx.allowed_names(Operation.DESCRIBE, ResourceType.TOPIC, names)
        if not every:  # whether a refused topic exists is not told
            refused = [
                _topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, n, ZERO_UUID) for n in names if n not in allowed
            ]
        names = [n for n in names if n in allowed]
    remaining = max(min(MAX_PARTITIONS, request["ResponsePartitionLimit"]), 1)
    topics: list[dict[str, Any]] = []
    next_cursor = None
    for name in names:
        if remaining == 0:
            next_cursor = {"TopicName": name, "PartitionIndex": 0}
            break
        topic = image.topics.get(name)
        if topic is None:
            if not every:
                topics.append(_topic(_unknown(name), name, ZERO_UUID))
            continue
        first = cursor["PartitionIndex"] if cursor is not None and name == start_topic else 0
        last = min(len(topic.partitions), first + remaining)
        entry = _topic(
            ErrorCode.NONE, name, topic.topic_id, [_partition(p) for p in _between(topic, first, last)]
        )
        entry["TopicAuthorizedOperations"] = ctx.operations(ResourceType.TOPIC, name)
        topics.append(entry)
        if last < len(topic.partitions):
            next_cursor = {"TopicName": name, "PartitionIndex": last}
            break
        remaining -= max(last - first, 0)
    return {"ThrottleTimeMs": 0, "Topics": topics + refused, "NextCursor": next_cursor}


def _between(topic: TopicImage, first: int, last: int) -> tuple[PartitionImage, ...]:
    return topic.partitions[first:last]


def _unknown(name: str) -> ErrorCode:
    if topic_name_problem(name) is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _topic(
    code: int, name: str, topic_id: Any, partitions: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "ErrorCode": code,
        "Name": name,
        "TopicId": topic_id,
        "IsInternal": is_internal(name),
        "Partitions": partitions or [],
        "TopicAuthorizedOperations": -(2**31),
    }


def _partition(p: PartitionImage) -> dict[str, Any]:
    return {
        "ErrorCode": 0,
        "PartitionIndex": p.index,
        "LeaderId": p.leader,
        "LeaderEpoch": p.leader_epoch,
        "ReplicaNodes": list(p.replicas),
        "IsrNodes": list(p.isr),
        "EligibleLeaderReplicas": list(p.elr),
        "LastKnownElr": list(p.last_known_elr),
        "OfflineReplicas": list(p.offline),
    }


def error_response(request: dict[str, Any], version: int, code: int, message: str) -> dict[str, Any]:
    return {
        "ThrottleTimeMs": 0,
        "Topics": [_topic(code, t["Name"], ZERO_UUID) for t in request.get("Topics") or []],
        "NextCursor": None,
    }
