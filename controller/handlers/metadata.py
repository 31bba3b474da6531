"""Metadata (3): brokers, controller and topics as clients see them, from the broker's metadata image.

Kafka's rules (see :mod:`controller.image`): the unfenced brokers are listed with their own listener and
rack; a partition shows its leader, leader epoch, replicas, ISR and offline replicas (those on fenced or
unregistered brokers); a partition without a leader answers LEADER_NOT_AVAILABLE; v0 alone leaves
unavailable brokers out of the replica and ISR lists and answers REPLICA_NOT_AVAILABLE then. A broker
isolated from the controller answers from the image it had when it was cut off. Unknown topics answer
UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID when asked for by id, v10+), unless
``auto.create.topics.enable=true`` and the client allows it: then the topic is created with the
server's defaults through the configured placer.
"""

from __future__ import annotations

import uuid
from typing import Any

from controller.handlers import NO_OPERATIONS, RequestContext
from controller.image import MetadataImage, PartitionImage, TopicImage
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
_REPLICA_NOT_AVAILABLE = error_by_name("REPLICA_NOT_AVAILABLE").code
_INVALID_REQUEST = error_by_name("INVALID_REQUEST").code


async def handle(ctx: RequestContext, request: dict[str, Any], version: int) -> dict[str, Any]:
    controller = ctx.controller
    image = ctx.image if ctx.image is not None else controller.image()
    wanted = request.get("Topics")
    if wanted is None or (version == 0 and not wanted):
        topics = [_topic_entry(topic, image, version) for topic in image.topics.values()]
    else:
        allow_auto = request.get("AllowAutoTopicCreation", True) if version >= 4 else True
        topics = await _named_topics(
            ctx, image, wanted, allow_auto and controller.config.auto_create_topics, version
        )
        if ctx.image is None:
            image = controller.image()  # topics created on the way are listed with today's brokers
    if version >= 8:
        # Fields that are not ignorable go only into the versions that have them (the codec insists).
        for topic in topics:
            topic["TopicAuthorizedOperations"] = NO_OPERATIONS
    response = {
        "ThrottleTimeMs": 0,
        "Brokers": broker_entries(ctx, image),
        "ClusterId": controller.config.cluster_id,
        "ControllerId": image.controller_id,
        "Topics": topics,
        "ErrorCode": 0,
    }
    if 8 <= version <= 10:
        response["ClusterAuthorizedOperations"] = NO_OPERATIONS
    return response


def broker_entries(ctx: RequestContext, image: MetadataImage) -> list[dict[str, Any]]:
    """The unfenced brokers with their advertised listeners."""
    endpoints = ctx.endpoints
    entries = []
    for broker in image.brokers:
        if broker.fenced or broker.id not in endpoints:
            continue
        host, port = endpoints[broker.id]
        entries.append({"NodeId": broker.id, "Host": host, "Port": port, "Rack": broker.rack})
    return entries


async def _named_topics(
    ctx: RequestContext, image: MetadataImage, wanted: list[dict[str, Any]], auto_create: bool, version: int
) -> list[dict[str, Any]]:
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
            if version < 12:  # v10 and v11 carry ids but look topics up by name only; Name cannot be null
                entries.append(_error_entry("", topic_id, _INVALID_REQUEST))
                continue
            by_id = image.topics_by_id.get(topic_id)
            entries.append(
                _topic_entry(by_id, image, version)
                if by_id is not None
                else _error_entry(None, topic_id, _UNKNOWN_TOPIC_ID)
            )
            continue
        topic = image.topics.get(name)
        if topic is None and auto_create and ctx.image is None:
            topic_or_error = await _auto_create(ctx, name)
            if isinstance(topic_or_error, int):
                entries.append(_error_entry(name, ZERO_UUID, topic_or_error))
                continue
            topic = topic_or_error
        if topic is None:
            entries.append(_error_entry(name, ZERO_UUID, _UNKNOWN_TOPIC))
        else:
            entries.append(_topic_entry(topic, image, version))
    return entries


async def _auto_create(ctx: RequestContext, name: str) -> TopicImage | int:
    """Creates ``name`` with the server's defaults; its image, or the error code of the failure."""
    if topic_name_problem(name) is not None:
        return _INVALID_TOPIC
    [result] = await ctx.controller.topic_admin.create_topics([NewTopic(name)])
    if result.error is not None:
        return error_by_name(result.error).code
    return ctx.controller.image().topics[name]


def _error_entry(name: str | None, topic_id: uuid.UUID, code: int) -> dict[str, Any]:
    return {
        "ErrorCode": code,
        "Name": name,
        "TopicId": topic_id,
        "IsInternal": False,
        "Partitions": [],
    }


def _topic_entry(topic: TopicImage, image: MetadataImage, version: int) -> dict[str, Any]:
    alive = image.alive if version == 0 else None
    return {
        "ErrorCode": 0,
        "Name": topic.name,
        "TopicId": topic.topic_id,
        "IsInternal": False,
        "Partitions": [_partition_entry(p, alive) for p in topic.partitions],
    }


def _partition_entry(p: PartitionImage, alive: frozenset[int] | None) -> dict[str, Any]:
    replicas, isr, error = list(p.replicas), list(p.isr), 0
    if p.leader < 0:
        error = _LEADER_NOT_AVAILABLE
    elif alive is not None:  # v0: unavailable brokers are left out, and said so
        replicas = [r for r in replicas if r in alive]
        isr = [r for r in isr if r in alive]
        if len(replicas) < len(p.replicas) or len(isr) < len(p.isr):
            error = _REPLICA_NOT_AVAILABLE
    return {
        "ErrorCode": error,
        "PartitionIndex": p.index,
        "LeaderId": p.leader,
        "LeaderEpoch": p.leader_epoch,
        "ReplicaNodes": replicas,
        "IsrNodes": isr,
        "OfflineReplicas": list(p.offline),
    }
