"""Metadata (3): brokers, controller and topics as clients see them.

Every unfenced broker is listed with its own listener and rack (Kafka lists no fenced broker); a
partition's leader is its first replica on an unfenced broker, its ISR the replicas on unfenced brokers
and its offline replicas the rest. Unknown topics answer UNKNOWN_TOPIC_OR_PARTITION (or UNKNOWN_TOPIC_ID
when asked for by id), unless ``auto.create.topics.enable=true`` and the client allows it: then the topic
is created with the server's defaults through the configured placer.
"""

from __future__ import annotations

import uuid
from typing import Any

from controller.cluster import Topic
from controller.handlers import NO_OPERATIONS, RequestContext
from controller.topic_admin import NewTopic
from controller.topic_names import topic_name_problem
from protocol import ZERO_UUID
from protocol.errors import error_by_name

API_KEY = 3
VERSIONS = (0, 13)


_UNKNOWN_TOPIC = error_by_name("UNKNOWN_TOPIC_OR_PARTITION").code
_UNKNOWN_TOPIC_ID = error_by_name("UNKNOWN_TOPIC_ID").code
_INVALID_TOPIC = error_by_name("INVALID_TOPIC_EXCEPTION").code
_LEADER_NOT_AVAILABLE = error_by_name("LEADER_NOT_AVAILABLE").code


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    controller = ctx.controller
    cluster = controller.cluster
    wanted = request.get("Topics")
    if wanted is None or (version == 0 and not wanted):
        topics = [_topic_entry(topic) for topic in cluster.topics.values()]
    else:
        allow_auto = request.get("AllowAutoTopicCreation", True) if version >= 4 else True
        topics = await _named_topics(ctx, wanted, allow_auto and controller.config.auto_create_topics)
    if version >= 8:
        # Fields that are not ignorable go only into the versions that have them (the codec insists).
        for topic in topics:
            topic["TopicAuthorizedOperations"] = NO_OPERATIONS
    response = {
        "ThrottleTimeMs": 0,
        "Brokers": broker_entries(ctx),
        "ClusterId": controller.config.cluster_id,
        "ControllerId": cluster.controller_id,
        "Topics": topics,
        "ErrorCode": 0,
    }
    if 8 <= version <= 10:
        response["ClusterAuthorizedOperations"] = NO_OPERATIONS
    return response


def broker_entries(ctx: RequestContext) -> list[dict[str, Any]]:
    """The unfenced brokers with their advertised listeners."""
    endpoints = ctx.endpoints
    entries = []
    for broker in ctx.controller.cluster.brokers:
        if broker.fenced or broker.id not in endpoints:
            continue
        host, port = endpoints[broker.id]
        entries.append({"NodeId": broker.id, "Host": host, "Port": port, "Rack": broker.rack})
    return entries


async def _named_topics(
    ctx: RequestContext, wanted: list[dict[str, Any]], auto_create: bool
) -> list[dict[str, Any]]:
    cluster = ctx.controller.cluster
    entries: list[dict[str, Any]] = []
    seen: set[str | uuid.UUID] = set()
    for item in wanted:
        name: str | None = item.get("Name")
        topic_id: uuid.UUID = item.get("TopicId") or ZERO_UUID
        key: str | uuid.UUID = name if name is not None else topic_id
        if key in seen:
            continue
        seen.add(key)
        if name is None:
            by_id = cluster.topic_by_id(topic_id)
            entries.append(
                _topic_entry(by_id) if by_id is not None else _error_entry(None, topic_id, _UNKNOWN_TOPIC_ID)
            )
            continue
        topic = cluster.topics.get(name)
        if topic is None and auto_create:
            topic_or_error = await _auto_create(ctx, name)
            if isinstance(topic_or_error, int):
                entries.append(_error_entry(name, ZERO_UUID, topic_or_error))
                continue
            topic = topic_or_error
        if topic is None:
            entries.append(_error_entry(name, ZERO_UUID, _UNKNOWN_TOPIC))
        else:
            entries.append(_topic_entry(topic))
    return entries


async def _auto_create(ctx: RequestContext, name: str) -> Topic | int:
    """Creates ``name`` with the server's defaults; the topic, or the error code of the failure."""
    if topic_name_problem(name) is not None:
        return _INVALID_TOPIC
    [result] = await ctx.controller.topic_admin.create_topics([NewTopic(name)])
    if result.error is not None:
        return error_by_name(result.error).code
    return ctx.controller.cluster.topics[name]


def _error_entry(name: str | None, topic_id: uuid.UUID, code: int) -> dict[str, Any]:
    return {
        "ErrorCode": code,
        "Name": name,
        "TopicId": topic_id,
        "IsInternal": False,
        "Partitions": [],
    }


def _topic_entry(topic: Topic) -> dict[str, Any]:
    return {
        "ErrorCode": 0,
        "Name": topic.name,
        "TopicId": topic.topic_id,
        "IsInternal": False,
        "Partitions": [
            {
                "ErrorCode": 0 if p.leader >= 0 else _LEADER_NOT_AVAILABLE,
                "PartitionIndex": p.index,
                "LeaderId": p.leader,
                "LeaderEpoch": p.leader_epoch,
                "ReplicaNodes": p.replicas,
                "IsrNodes": p.isr,
                "OfflineReplicas": p.offline,
            }
            for p in topic.partitions
        ],
    }
